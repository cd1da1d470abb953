"""Catalog format 6's vectors: stored once as 8-bit codes with a step per block of dimensions and a
scale, the vector lane's file the same rows; a format-4 catalog (float32 vectors) is migrated on its
first writable open and ranks exactly as the format-6 catalog of the same vectors, a format-5 one
(one step per vector) keeps its codes and decodes to the same vectors, read-only either is read as
it is; a lost lane file is rebuilt from the catalog with the same bytes and the same results."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.store import vector_codes
from sleuth.store.catalog import SCHEMA_VERSION, Catalog
from sleuth.store.vector_cache import stem_for
from sleuth.store.vectors import float32_blobs_to_codes
from sleuth.types import SearchRequest
from tests.store.old_formats import as_format_4, as_format_5, format_5_blobs, format_5_decoded

NOTES = {
    "keys.md": "# Signing keys\n\nRotate the signing keys every ninety days; revoke the old key after the switch.\n",
    "cats.md": "# Cats\n\nCats sleep most of the day in warm places.\n\n## Kittens\n\nKittens play with string.\n",
    "deploy.md": "# Deploy\n\nShip the container to production with the pipeline.\n",
    "tea.md": "# Tea\n\nBrew green tea at eighty degrees for two minutes.\n",
    "bikes.md": "# Bicycles\n\nOil the chain of your bicycle every month.\n",
}
QUERIES = ["feline naps", "brewing green tea", "key rotation", "release to production", "bicycle upkeep"]


def test_codes_keep_the_norm_and_stay_within_half_a_block_step():
    rng = np.random.default_rng(7)
    v = rng.standard_normal((200, 384)).astype(np.float32)
    v[:, :64] *= 3.0  # one block of larger components: its step is larger than the others'
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    v[0] = 0.0  # a zero vector stays zero
    rows = vector_codes.encode(v)
    assert rows.dtype.itemsize == 384 + 2 * 6 + 4 == vector_codes.blob_bytes(384) == 400
    assert int(np.abs(rows["codes"]).max()) == vector_codes.CODE_MAX
    back = vector_codes.decode(rows)
    assert back.dtype == np.float32 and back.shape == v.shape and not back[0].any()
    np.testing.assert_allclose(np.linalg.norm(back[1:], axis=1), 1.0, atol=1e-6)
    blocks = np.abs(v[1:].astype(np.float64)).reshape(199, 6, 64).max(axis=2)
    peak = blocks.max(axis=1, keepdims=True)
    ratios = rows["ratios"][1:].astype(np.float64)
    assert (ratios >= blocks / peak).all() and (ratios <= blocks / peak * (1 + 2**-10)).all()
    assert (ratios[:, 0] == 1.0).all() and (ratios[:, 1:] < 0.7).all()
    step = ratios * peak / vector_codes.CODE_MAX  # each block's step
    # Half a step of rounding, plus what the norm-keeping scale (scale = factor * peak / 127) moves a code.
    factor = rows["scale"][1:, None] / (peak / vector_codes.CODE_MAX)
    assert (np.abs(factor - 1) < 0.01).all()
    bound = step * (0.5 + vector_codes.CODE_MAX * np.abs(factor - 1)) + 1e-7
    assert (np.abs(back[1:] - v[1:]).reshape(199, 6, 64).max(axis=2) <= bound).all()
    # Closer than one step per vector (format 5) on the same vectors.
    old = np.stack([format_5_decoded(b) for b in format_5_blobs(v[1:])])
    assert np.abs(back[1:] - v[1:]).mean() < 0.7 * np.abs(old - v[1:]).mean()
    blobs = vector_codes.encode_blobs(v)
    assert [len(b) for b in blobs] == [400] * 200
    assert vector_codes.from_blobs(blobs, 384).tobytes() == rows.tobytes()
    with pytest.raises(ValueError, match="not 400 bytes"):
        vector_codes.from_blobs([b"\0" * 388], 384)
    assert [vector_codes.dim_of_blob(vector_codes.blob_bytes(d)) for d in (1, 8, 63, 64, 65, 384, 768)] == \
        [1, 8, 63, 64, 65, 384, 768]
    with pytest.raises(ValueError, match="no stored vector is 401 bytes"):
        vector_codes.dim_of_blob(401)  # 384 dimensions take 400, 385 take 403
    with pytest.raises(ValueError, match="not finite"):
        vector_codes.encode(np.full((1, 4), np.inf, dtype=np.float32))


def test_a_format_5_row_decodes_to_the_same_vector_in_format_6():
    rng = np.random.default_rng(8)
    v = rng.standard_normal((50, 384)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    old = format_5_blobs(v)
    new = vector_codes.from_format_5(old)
    assert [len(b) for b in new] == [400] * 50
    np.testing.assert_array_equal(vector_codes.decode(vector_codes.from_blobs(new, 384)),
                                  np.stack([format_5_decoded(b) for b in old]))


def _unembedded(tmp_path: Path) -> Path:
    """An index of NOTES without vectors (keyword lanes only)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    folder = tmp_path / "base"
    with Engine(folder, Config(model="none")) as e:
        e.index([notes], project="notes")
    return folder


def _model_vectors(folder: Path) -> tuple[str, dict[str, np.ndarray]]:
    """``(model, {embed_hash: float32 vector})`` of every block of the index, embedded once."""
    with Engine(folder) as e:
        emb = e.embedder()
        assert emb is not None
        pending = e.catalog.blocks_without_vectors(emb.name, 10_000)
        vectors = emb.embed([text for _, text in pending])
        return emb.name, {h: v for (h, _), v in zip(pending, vectors, strict=True)}


def _results(folder: Path) -> list[list[tuple[str, float, str]]]:
    with Engine(folder) as e:
        out = []
        for query in QUERIES:
            resp = e.search(SearchRequest(query=query, lanes=["vector"], limit=10))
            out.append([(h.path, h.score, h.best_block_id) for h in resp.hits])
        return out


def _copy(folder: Path, to: Path) -> Path:
    shutil.copytree(folder, to)
    return to


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, np.ndarray]]:
    """``(unembedded index, model, its blocks' float32 vectors)``, made once for the module."""
    tmp = tmp_path_factory.mktemp("vector-format")
    base = _unembedded(tmp)
    model, vectors = _model_vectors(base)
    return base, model, vectors


def _format_6(base: Path, to: Path, model: str, vectors: dict[str, np.ndarray]) -> Path:
    folder = _copy(base, to)
    cat = Catalog(folder / "catalog.sqlite3")
    try:
        cat.store_vectors(model, [(h, v.tobytes()) for h, v in vectors.items()])
    finally:
        cat.close()
    return folder


def _format_4(base: Path, to: Path, model: str, vectors: dict[str, np.ndarray]) -> Path:
    folder = _copy(base, to)
    as_format_4(folder / "catalog.sqlite3", {(model, h): v for h, v in vectors.items()})
    return folder


def _meta(folder: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(folder / "catalog.sqlite3")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_a_new_catalog_stores_codes_once_in_a_table_without_rowid(indexes, tmp_path):
    base, model, vectors = indexes
    folder = _format_6(base, tmp_path / "v6", model, vectors)
    assert SCHEMA_VERSION == 6
    sql = _meta(folder, "SELECT sql FROM sqlite_master WHERE name='vectors'")[0][0]
    assert "WITHOUT ROWID" in sql
    assert _meta(folder, "SELECT name FROM sqlite_master WHERE name LIKE 'sqlite_autoindex_vectors%'") == []
    stored = dict(_meta(folder, "SELECT embed_hash, vector FROM vectors"))
    hashes = list(vectors)
    assert stored == dict(zip(hashes, vector_codes.encode_blobs(np.stack([vectors[h] for h in hashes])), strict=True))
    assert all(len(b) == 400 for b in stored.values())


def test_the_lane_file_holds_the_catalog_rows_and_a_lost_one_is_rebuilt_the_same(indexes, tmp_path):
    base, model, vectors = indexes
    folder = _format_6(base, tmp_path / "v6", model, vectors)
    before = _results(folder)
    assert [r[0][0] for r in before] == ["cats.md", "tea.md", "keys.md", "deploy.md", "bikes.md"]
    files = sorted(folder.glob("vectors.*.q8"))
    assert len(files) == 1 and not list(folder.glob("vectors.*.f32"))
    saved = files[0].read_bytes()
    rows = {h: b for h, b in _meta(folder, "SELECT embed_hash, vector FROM vectors")}
    assert sorted(saved[i : i + 400] for i in range(0, len(saved), 400)) == sorted(rows.values())
    for path in folder.glob("vectors.*"):  # the lane's files are lost
        path.unlink()
    assert _results(folder) == before
    rebuilt = sorted(folder.glob("vectors.*.q8"))
    assert len(rebuilt) == 1 and rebuilt[0].read_bytes() == saved


def test_a_format_4_catalog_is_migrated_and_ranks_as_format_6(indexes, tmp_path):
    base, model, vectors = indexes
    expected = _results(_format_6(base, tmp_path / "v6", model, vectors))
    old = _format_4(base, tmp_path / "v4", model, vectors)
    (old / f"{stem_for(model)}.0badc0de.f32").write_bytes(b"\0" * 1536)  # a format-4 lane file: swept
    assert _meta(old, "SELECT value FROM meta WHERE key='schema_version'") == [("4",)]
    assert _results(old) == expected
    assert _meta(old, "SELECT value FROM meta WHERE key='schema_version'") == [("6",)]
    stored = dict(_meta(old, "SELECT embed_hash, vector FROM vectors"))
    assert stored == {h: vector_codes.encode_blobs(v[None, :])[0] for h, v in vectors.items()}
    assert "WITHOUT ROWID" in _meta(old, "SELECT sql FROM sqlite_master WHERE name='vectors'")[0][0]
    assert not list(old.glob("vectors.*.f32")) and len(list(old.glob("vectors.*.q8"))) == 1


def test_vectors_imported_from_a_format_4_catalog_are_encoded(indexes, tmp_path):
    base, model, vectors = indexes
    old = _format_4(base, tmp_path / "v4", model, vectors)
    fresh = _copy(base, tmp_path / "new")
    cat = Catalog(fresh / "catalog.sqlite3")
    try:
        assert cat.import_vectors(old / "catalog.sqlite3") == len(vectors)
        assert cat.import_vectors(old / "catalog.sqlite3") == 0  # already there
        assert cat.vector_dim(model) == 384
    finally:
        cat.close()
    stored = dict(_meta(fresh, "SELECT embed_hash, vector FROM vectors"))
    assert stored == dict(zip(vectors, float32_blobs_to_codes([v.tobytes() for v in vectors.values()]), strict=True))


def _format_5(base: Path, to: Path, model: str, vectors: dict[str, np.ndarray]) -> Path:
    folder = _copy(base, to)
    as_format_5(folder / "catalog.sqlite3", {(model, h): v for h, v in vectors.items()})
    return folder


def test_vectors_imported_from_a_format_5_catalog_keep_their_codes(indexes, tmp_path):
    base, model, vectors = indexes
    old = _format_5(base, tmp_path / "v5", model, vectors)
    before = dict(_meta(old, "SELECT embed_hash, vector FROM vectors"))
    fresh = _copy(base, tmp_path / "new")
    cat = Catalog(fresh / "catalog.sqlite3")
    try:
        assert cat.import_vectors(old / "catalog.sqlite3") == len(vectors)
        assert cat.vector_dim(model) == 384
    finally:
        cat.close()
    stored = dict(_meta(fresh, "SELECT embed_hash, vector FROM vectors"))
    assert stored == dict(zip(before, vector_codes.from_format_5(list(before.values())), strict=True))


def test_a_format_5_catalog_is_migrated_keeping_its_codes(indexes, tmp_path):
    base, model, vectors = indexes
    old = _format_5(base, tmp_path / "v5", model, vectors)
    before = dict(_meta(old, "SELECT embed_hash, vector FROM vectors"))
    assert {len(b) for b in before.values()} == {388}
    (old / f"{stem_for(model)}.0badc0de.q8").write_bytes(b"\0" * 388)  # a format-5 lane file: swept
    got = _results(old)
    assert _meta(old, "SELECT value FROM meta WHERE key='schema_version'") == [("6",)]
    stored = dict(_meta(old, "SELECT embed_hash, vector FROM vectors"))
    assert stored == dict(zip(before, vector_codes.from_format_5(list(before.values())), strict=True))
    for h, blob in stored.items():  # each vector decodes as format 5 decoded it
        np.testing.assert_array_equal(vector_codes.decode(vector_codes.from_blobs([blob], 384))[0],
                                      format_5_decoded(before[h]))
    assert [r[0][0] for r in got] == ["cats.md", "tea.md", "keys.md", "deploy.md", "bikes.md"]
    assert not (old / f"{stem_for(model)}.0badc0de.q8").exists() and len(list(old.glob("vectors.*.q8"))) == 1


@pytest.mark.parametrize("version", [4, 5])
def test_an_older_catalog_that_cannot_be_written_ranks_as_it_will_once_migrated(indexes, tmp_path, version):
    base, model, vectors = indexes
    make = _format_4 if version == 4 else _format_5
    expected = _results(make(base, tmp_path / "migrated", model, vectors))
    make(base, tmp_path / "rw" / "idx", model, vectors)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a read-only bind mount needs root and mount(8); CI runs as root")
    view = tmp_path / "ro"
    view.mkdir()
    subprocess.run(["mount", "--bind", str(tmp_path / "rw"), str(view)], check=True, timeout=60)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True, timeout=60)
        assert _results(view / "idx") == expected
        cat = Catalog(view / "idx" / "catalog.sqlite3")
        try:
            assert cat.read_only is not None and cat.vector_format == version and cat.vector_dim(model) == 384
            assert cat.old_format == (version == 4)
        finally:
            cat.close()
    finally:
        if subprocess.run(["umount", str(view)], capture_output=True, timeout=60).returncode != 0:
            subprocess.run(["umount", "-l", str(view)], capture_output=True, timeout=60)
    assert _meta(tmp_path / "rw" / "idx", "SELECT value FROM meta WHERE key='schema_version'") == [(str(version),)]
