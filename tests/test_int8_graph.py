"""The per-token int8 graph of sleuth.bert_graph on a small random BERT, against numpy."""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest

from sleuth.bert_graph import (
    PRODUCT_KINDS,
    SINGLE_TEXT_METADATA,
    BertConfig,
    build_bert_graph,
    quantize_weight_int8,
)
from sleuth.cpu_features import int8_support

CFG = BertConfig(hidden=16, heads=2, layers=2, intermediate=32, vocab=40, max_positions=24, type_vocab=2,
                 layer_norm_eps=1e-12)
#: Comparisons with numpy's exact int8 arithmetic hold only where onnxruntime's int8 products are
#: exact: with int8 dot-product instructions. x86 with AVX2 alone multiplies u8 x s8 pairs into int16
#: with saturation (vpmaddubsw), 3.2 apart from numpy on this random BERT; sleuth keeps fp32 there
#: by default and names a forced int8 model apart (tests/test_embed.py, test_the_fallback_path_and_its_name).
needs_exact_int8 = pytest.mark.skipif(
    not int8_support().fast,
    reason=f"onnxruntime's int8 products are inexact on this CPU ({int8_support().instructions})")
ALL_POINTS = frozenset(f"{n}.{kind}" for n in range(CFG.layers) for kind in PRODUCT_KINDS)


def _weights(seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    h, i = CFG.hidden, CFG.intermediate

    def t(*shape: int, scale: float = 0.3) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = {"embeddings.word_embeddings.weight": t(CFG.vocab, h), "embeddings.position_embeddings.weight": t(24, h),
         "embeddings.token_type_embeddings.weight": t(2, h), "embeddings.LayerNorm.weight": 1 + t(h),
         "embeddings.LayerNorm.bias": t(h)}
    for n in range(CFG.layers):
        p = f"encoder.layer.{n}."
        for part in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            w[p + part + ".weight"], w[p + part + ".bias"] = t(h, h), t(h)
        w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = t(i, h), t(i)
        w[p + "output.dense.weight"], w[p + "output.dense.bias"] = t(h, i), t(h)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + norm + ".weight"], w[p + norm + ".bias"] = 1 + t(h), t(h)
    w["encoder.layer.0.output.LayerNorm.weight"][3] = 25.0  # an outlier channel, as in MiniLM
    return w


def _reference(w: dict[str, np.ndarray], ids: np.ndarray, outliers: dict[str, np.ndarray] | None,
               int8: bool) -> np.ndarray:
    """BERT in numpy (one text): float32 products, or int8 ones with per-token scales."""
    outliers = outliers or {}

    def product(x: np.ndarray, weight_t: np.ndarray, point: str) -> np.ndarray:
        idx = outliers.get(point, np.zeros(0, dtype=np.int64))
        keep = np.ones(x.shape[1], dtype=np.float32)
        keep[idx] = 0
        main_x, main_w = x * keep, weight_t * keep[:, None]
        if int8:
            q, col = quantize_weight_int8(main_w)
            row = np.maximum(np.abs(main_x).max(axis=1, keepdims=True), 1e-12) / 127
            xq = np.clip(np.rint(main_x / row), -127, 127)
            main = (xq @ q.astype(np.float64)) * row * col
        else:
            main = main_x @ main_w
        return (main + x[:, idx] @ weight_t[idx]).astype(np.float32)

    def norm(x: np.ndarray, prefix: str) -> np.ndarray:
        mu, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
        return (x - mu) / np.sqrt(var + CFG.layer_norm_eps) * w[prefix + ".weight"] + w[prefix + ".bias"]

    def gelu(x: np.ndarray) -> np.ndarray:
        return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))

    s, h, heads = len(ids), CFG.hidden, CFG.heads
    d = h // heads
    pos = w["embeddings.position_embeddings.weight"][:s] + w["embeddings.token_type_embeddings.weight"][0]
    x = norm(w["embeddings.word_embeddings.weight"][ids] + pos, "embeddings.LayerNorm")
    for n in range(CFG.layers):
        p = f"encoder.layer.{n}."
        qkv_w = np.concatenate([w[p + f"attention.self.{m}.weight"].T for m in ("query", "key", "value")], axis=1)
        qkv_b = np.concatenate([w[p + f"attention.self.{m}.bias"] for m in ("query", "key", "value")])
        qkv = product(x, qkv_w, f"{n}.qkv") + qkv_b
        q, k, v = (qkv[:, j * h:(j + 1) * h].reshape(s, heads, d).transpose(1, 0, 2) for j in range(3))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        ctx = (probs / probs.sum(-1, keepdims=True) @ v).transpose(1, 0, 2).reshape(s, h)
        out = product(ctx, w[p + "attention.output.dense.weight"].T, f"{n}.attn_out")
        x = norm(x + out + w[p + "attention.output.dense.bias"], p + "attention.output.LayerNorm")
        inner = gelu(product(x, w[p + "intermediate.dense.weight"].T, f"{n}.ffn1") + w[p + "intermediate.dense.bias"])
        out = product(inner.astype(np.float32), w[p + "output.dense.weight"].T, f"{n}.ffn2")
        x = norm(x + out + w[p + "output.dense.bias"], p + "output.LayerNorm")
    return x.astype(np.float32)


def _run(model, ids: np.ndarray) -> np.ndarray:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    mask = np.ones((1, len(ids)), dtype=np.int64)
    return session.run(None, {"input_ids": ids[None].astype(np.int64), "attention_mask": mask})[0][0]


IDS = np.array([1, 5, 9, 33, 2, 17, 4, 38, 11, 2])
OUTLIERS = {"0.qkv": np.array([3]), "1.ffn1": np.array([3, 7]), "0.ffn2": np.array([0])}


def test_weights_are_int8_per_output_column() -> None:
    weight_t = _weights()["encoder.layer.0.intermediate.dense.weight"].T
    q, scale = quantize_weight_int8(weight_t)
    assert q.dtype == np.int8 and np.abs(q).max() == 127 and scale.shape == (weight_t.shape[1],)
    assert np.all(np.abs(q.astype(np.float32) * scale - weight_t) <= scale / 2 + 1e-7)


def test_the_unfused_layout_with_every_product_in_fp32_is_the_fused_graph() -> None:
    w = _weights()
    fused = _run(build_bert_graph(CFG, w, "fused"), IDS)
    two_d = _run(build_bert_graph(CFG, w, "fused", OUTLIERS, int8_per_token=True, fp32_points=ALL_POINTS), IDS)
    assert two_d.shape == fused.shape == (len(IDS), CFG.hidden)
    assert np.abs(two_d - fused).max() < 1e-5
    assert np.abs(fused - _reference(w, IDS, None, int8=False)).max() < 1e-4


@needs_exact_int8
@pytest.mark.parametrize("outliers", [None, OUTLIERS])
def test_per_token_int8_matches_numpy(outliers) -> None:
    w = _weights()
    ours = _run(build_bert_graph(CFG, w, "fused", outliers, int8_per_token=True), IDS)
    want = _reference(w, IDS, outliers, int8=True)
    fp32 = _reference(w, IDS, None, int8=False)
    # Equal up to float rounding (a rounding tie may land one int8 step apart): far closer to the
    # numpy int8 arithmetic than int8 is to float32.
    assert np.abs(ours - want).max() < 1e-3 < np.abs(want - fp32).max()


def test_outlier_channels_apart_bring_int8_closer_to_fp32() -> None:
    w = _weights()
    fp32 = _run(build_bert_graph(CFG, w, "fused"), IDS)
    plain = _run(build_bert_graph(CFG, w, "fused", None, int8_per_token=True), IDS)
    apart = _run(build_bert_graph(CFG, w, "fused", {"0.qkv": np.array([3]), "0.ffn1": np.array([3]),
                                                    "1.qkv": np.array([3]), "1.ffn1": np.array([3])},
                                  int8_per_token=True), IDS)
    assert np.abs(apart - fp32).mean() < np.abs(plain - fp32).mean()


def test_the_single_text_graph_with_every_product_in_fp32_is_the_fused_graph() -> None:
    """Add + Add + LayerNormalization, the QKV bias in the product and the attention without a mask:
    the same arithmetic as the fused float32 graph."""
    w = _weights()
    fused = _run(build_bert_graph(CFG, w, "fused"), IDS)
    single = _run(build_bert_graph(CFG, w, "fused", OUTLIERS, int8_per_token=True, fp32_points=ALL_POINTS,
                                   single_text=True), IDS)
    assert np.abs(single - fused).max() < 1e-5


@needs_exact_int8
@pytest.mark.parametrize("outliers", [None, OUTLIERS])
def test_the_single_text_int8_graph_matches_numpy(outliers) -> None:
    """The per-token graph's int8 codes and products; only the operators around them differ."""
    w = _weights()
    model = build_bert_graph(CFG, w, "fused", outliers, int8_per_token=True, single_text=True)
    assert {p.key: p.value for p in model.metadata_props} == dict([SINGLE_TEXT_METADATA])
    ops = [node.op_type for node in model.graph.node]
    assert "SkipLayerNormalization" not in ops and ops.count("LayerNormalization") == 1 + 2 * CFG.layers
    assert all(len(node.input) == 3 for node in model.graph.node if node.op_type == "MultiHeadAttention")
    per_token = build_bert_graph(CFG, w, "fused", outliers, int8_per_token=True)
    assert sorted(n.op_type for n in model.graph.node if n.op_type in ("QuantizeLinear", "MatMulIntegerToFloat")) \
        == sorted(n.op_type for n in per_token.graph.node if n.op_type in ("QuantizeLinear", "MatMulIntegerToFloat"))
    ours = _run(model, IDS)
    want = _reference(w, IDS, outliers, int8=True)
    fp32 = _reference(w, IDS, None, int8=False)
    assert np.abs(ours - want).max() < 1e-3 < np.abs(want - fp32).max()
    assert np.abs(ours - _run(per_token, IDS)).max() < 1e-3


def test_single_text_is_a_variant_of_the_per_token_int8_graph() -> None:
    with pytest.raises(ValueError, match="single_text"):
        build_bert_graph(CFG, _weights(), "fused", single_text=True)
    with pytest.raises(ValueError, match="single_text"):
        build_bert_graph(CFG, _weights(), "standard", int8_per_token=True, single_text=True)
