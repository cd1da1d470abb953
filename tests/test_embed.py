"""The embedding model, run with onnxruntime, against sentence-transformers (the reference)."""

from __future__ import annotations

import numpy as np
import pytest

from sleuth.embed import DEFAULT_MODEL, ModelUnavailable, load_embedder, packaged_minilm_dir, resolve_model

SENTENCES = [
    "A man is eating food.",
    "The quick brown fox jumps over the lazy dog near the river bank, again and again.",
    "Hybrid search fuses lexical and dense retrieval.",
    "",
    "東京は日本の首都です。",
]


@pytest.fixture(scope="module")
def embedder():
    return load_embedder(DEFAULT_MODEL)


def test_matches_sentence_transformers(embedder) -> None:
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(packaged_minilm_dir()), device="cpu").encode(
        SENTENCES, normalize_embeddings=True
    )
    ours = embedder.embed(SENTENCES)
    assert ours.shape == (5, 384) and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5


def test_batching_does_not_change_vectors(embedder) -> None:
    together = embedder.embed(SENTENCES)
    alone = np.vstack([embedder.embed([s]) for s in SENTENCES])
    assert np.abs(together - alone).max() < 1e-5
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_similar_sentences_are_closer(embedder) -> None:
    a, b, c = embedder.embed(["How do I rotate the signing keys?", "Procedure for key rotation", "Cats sleep a lot"])
    assert float(a @ b) > float(a @ c) + 0.2


def test_int8_model_is_close_to_fp32(embedder) -> None:
    int8 = load_embedder(DEFAULT_MODEL, quantized=True)
    assert int8.name == "all-MiniLM-L6-v2@int8-per-channel"
    cosines = np.sum(int8.embed(SENTENCES[:3]) * embedder.embed(SENTENCES[:3]), axis=1)
    assert cosines.min() > 0.98


def test_unknown_model_is_unavailable(tmp_path) -> None:
    with pytest.raises(ModelUnavailable, match="neither 'all-MiniLM-L6-v2' nor a folder"):
        resolve_model(str(tmp_path / "nope"))
    (tmp_path / "m").mkdir()
    with pytest.raises(ModelUnavailable, match="has no tokenizer.json"):
        resolve_model(str(tmp_path / "m"))
    assert load_embedder("none") is None


def test_onnx_folder_is_used_as_is(tmp_path) -> None:
    import shutil

    files = resolve_model(DEFAULT_MODEL)
    folder = tmp_path / "onnx-model"
    folder.mkdir()
    shutil.copy(files.onnx_path, folder / "model.onnx")
    shutil.copy(files.tokenizer_path, folder / "tokenizer.json")
    custom = load_embedder(str(folder))
    assert custom.name == "onnx-model" and custom.dim == 384


def test_batches_embedded_in_parallel_match_one_by_one(embedder) -> None:
    from sleuth.embed import EMBED_BATCH_TEXTS

    texts = [f"{s} ({i})" for i in range(EMBED_BATCH_TEXTS) for s in SENTENCES[:3]]  # three batches
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts[::7]])
    assert together.shape == (len(texts), 384)
    assert np.abs(together[::7] - alone).max() < 1e-5


def test_concurrent_first_use_of_the_int8_model_quantises_once(tmp_path, monkeypatch) -> None:
    """A cold search asks for the model from two threads at once; the int8 copy must come out whole."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    from sleuth.embed import MODEL_CACHE_ENV, model_cache_dir

    fp32 = resolve_model(DEFAULT_MODEL).onnx_path
    monkeypatch.setenv(MODEL_CACHE_ENV, str(tmp_path))
    copy = model_cache_dir() / fp32.relative_to(fp32.parents[1])
    copy.parent.mkdir(parents=True)
    shutil.copy(fp32, copy)
    with ThreadPoolExecutor(2) as pool:
        files = list(pool.map(lambda _: resolve_model(DEFAULT_MODEL, quantized=True), range(2)))
    assert files[0] == files[1] and files[0].onnx_path.parent == copy.parent
    assert sorted(p.name for p in copy.parent.iterdir()) == ["model.int8-per-channel.onnx", "model.onnx"]
    int8 = load_embedder(DEFAULT_MODEL, quantized=True)
    assert int8.embed(SENTENCES[:1]).shape == (1, 384)
