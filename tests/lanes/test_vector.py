"""The vector lane's search: exact and HNSW paths, filters before top-k."""

from __future__ import annotations

import numpy as np

from sleuth.lanes.vector import VectorMatrix


def unit_rows(n: int, dim: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_exact_search_orders_by_cosine() -> None:
    vectors = np.eye(4, dtype=np.float32)
    m = VectorMatrix(["a", "b", "c", "d"], ["p", "p", "q", "q"], vectors)
    query = np.asarray([0.1, 0.9, 0.3, 0.0], dtype=np.float32)
    rows, scores = m.search(query, 3, None)
    assert list(m.block_ids[rows]) == ["b", "c", "a"]
    assert np.allclose(scores, [0.9, 0.3, 0.1])
    allowed = m.project_of_block == m.project_names.index("q")
    rows, _ = m.search(query, 3, allowed)
    assert list(m.block_ids[rows]) == ["c", "d"]


def test_hnsw_recall_against_exact() -> None:
    vectors = unit_rows(5_000, 64, seed=1)
    ids = [f"b{i}" for i in range(5_000)]
    projects = ["big"] * 4_990 + ["small"] * 10
    exact = VectorMatrix(ids, projects, vectors, exact_max_blocks=10**9)
    approx = VectorMatrix(ids, projects, vectors, exact_max_blocks=100)
    assert exact.ann is None and approx.ann is not None
    queries = unit_rows(50, 64, seed=2)
    hits = 0
    for q in queries:
        truth = set(exact.search(q, 10, None)[0])
        hits += len(truth & set(approx.search(q, 10, None)[0]))
    assert hits / 500 >= 0.95
    # A filter to a tiny project still returns its blocks (the search widens until it finds them).
    allowed = approx.project_of_block == approx.project_names.index("small")
    rows, _ = approx.search(queries[0], 5, allowed)
    assert len(rows) == 5 and set(rows) <= set(range(4_990, 5_000))


def test_hnsw_built_in_chunks_from_stored_rows_never_decodes_the_whole_matrix(monkeypatch) -> None:
    from sleuth.lanes import vector as vector_module
    from sleuth.store import vector_codes

    monkeypatch.setattr(vector_module, "HNSW_ADD_CHUNK_BLOCKS", 300)  # 4 chunks, the last one short
    stored = vector_codes.encode(unit_rows(1_000, 32, seed=8))
    ids = [f"b{i:04d}" for i in range(1_000)]
    m = VectorMatrix(ids, ["p"] * 1_000, stored=stored, exact_max_blocks=100)
    assert m.ann is not None and len(m.ann) == 1_000
    decoded = vector_codes.decode(stored)
    exact = VectorMatrix(ids, ["p"] * 1_000, decoded, exact_max_blocks=10**9)
    hits = 0
    for q in unit_rows(20, 32, seed=9):
        rows, scores = m.search(q, 10, None)
        # The candidates are rescored with the exact cosine of their decoded rows (to float32
        # rounding: the product's summation order depends on how many candidates there are).
        np.testing.assert_allclose(scores, decoded[rows] @ q, rtol=0, atol=1e-6)
        hits += len(set(rows) & set(exact.search(q, 10, None)[0]))
    assert hits / 200 >= 0.95
    assert m._vectors is None  # neither the build nor the searches decoded the whole matrix


def test_hnsw_index_is_saved_and_reused(tmp_path) -> None:
    vectors = unit_rows(1_000, 32, seed=3)
    ids = [f"b{i}" for i in range(1_000)]
    path = tmp_path / "vectors.hnsw"
    first = VectorMatrix(ids, ["p"] * 1_000, vectors, exact_max_blocks=10, ann_path=path, ann_key="gen 1")
    assert path.is_file() and path.with_suffix(".key").read_text() == "gen 1"
    stamp = path.stat().st_mtime_ns
    again = VectorMatrix(ids, ["p"] * 1_000, vectors, exact_max_blocks=10, ann_path=path, ann_key="gen 1")
    assert path.stat().st_mtime_ns == stamp  # loaded, not rebuilt
    query = unit_rows(1, 32, seed=4)[0]
    assert list(first.search(query, 10, None)[0]) == list(again.search(query, 10, None)[0])
    VectorMatrix(ids, ["p"] * 1_000, vectors, exact_max_blocks=10, ann_path=path, ann_key="gen 2")
    assert path.with_suffix(".key").read_text() == "gen 2"  # a stale index is rebuilt


def _exact_top(vectors: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> list[str]:
    exact = VectorMatrix(ids, ["p"] * len(ids), vectors, exact_max_blocks=10**9)
    return list(exact.block_ids[exact.search(query, k, None)[0]])


def test_hnsw_updated_in_place_removed_blocks_never_return_added_ones_are_found(monkeypatch) -> None:
    vectors = unit_rows(2_000, 32, seed=5)
    ids = [f"b{i}" for i in range(2_000)]
    m = VectorMatrix(ids, ["p"] * 1_000 + ["q"] * 1_000, vectors, exact_max_blocks=100)
    ann = m.ann
    assert ann is not None
    builds = []
    monkeypatch.setattr(VectorMatrix, "_build_ann", lambda self, *a: builds.append(1))
    removed = [f"b{i}" for i in range(0, 2_000, 3)]
    new_vectors = unit_rows(300, 32, seed=6)
    new_ids = [f"n{i}" for i in range(300)]
    m2 = m.updated(removed, new_ids, ["r"] * 300, new_vectors)
    assert m2.ann is ann and builds == []  # the same HNSW index, updated (not rebuilt)
    assert len(m2) == 2_000 - len(removed) + 300 and m2.project_names == ["p", "q", "r"]
    gone = set(removed)
    for i, q in enumerate(unit_rows(40, 32, seed=7)):
        rows, scores = m2.search(q, 50, None)
        assert not gone & set(m2.block_ids[rows]) and "" not in set(m2.block_ids[rows])
        assert list(scores) == sorted(scores, reverse=True)
        rows, _ = m2.search(vectors[3 * i], 5, None)  # a removed block's own vector
        assert f"b{3 * i}" not in set(m2.block_ids[rows])
    for j in range(0, 300, 10):  # each added block is found by its own vector
        rows, scores = m2.search(new_vectors[j], 1, None)
        assert m2.block_ids[rows[0]] == f"n{j}" and abs(scores[0] - 1.0) < 1e-5
    only_r = m2.project_of_block == m2.project_names.index("r")
    rows, _ = m2.search(vectors[1], 10, only_r)
    assert len(rows) == 10 and set(m2.block_ids[rows]) <= set(new_ids)
    # The old matrix still answers (it shares the index and leaves out the slots added after it).
    rows, _ = m.search(new_vectors[0], 5, None)
    assert all(r < 2_000 for r in rows)
    # Replacing a block (removed and added under the same id) keeps one live copy, the new vector.
    m3 = m2.updated(["b1"], ["b1"], ["p"], new_vectors[:1])
    rows, _ = m3.search(new_vectors[0], 2, None)
    assert sorted(m3.block_ids[rows]) == ["b1", "n0"]
    assert list(m3.block_ids).count("b1") == 1


def test_updates_match_a_fresh_exact_search(monkeypatch) -> None:
    vectors = unit_rows(1_500, 24, seed=8)
    ids = [f"b{i}" for i in range(1_500)]
    m = VectorMatrix(ids, ["p"] * 1_500, vectors, exact_max_blocks=200)
    live_ids, live_vecs = list(ids), list(vectors)
    rng = np.random.default_rng(9)
    for step in range(5):
        drop = set(rng.choice(live_ids, 150, replace=False).tolist())
        add_vecs = unit_rows(100, 24, seed=100 + step)
        add_ids = [f"s{step}-{i}" for i in range(100)]
        m = m.updated(sorted(drop), add_ids, ["p"] * 100, add_vecs)
        keep = [i for i, b in enumerate(live_ids) if b not in drop]
        live_ids = [live_ids[i] for i in keep] + add_ids
        live_vecs = [live_vecs[i] for i in keep] + list(add_vecs)
    assert m.ann is not None and len(m) == len(live_ids)
    hits = 0
    for q in unit_rows(50, 24, seed=10):
        truth = set(_exact_top(np.asarray(live_vecs), live_ids, q, 10))
        got = set(m.block_ids[m.search(q, 10, None)[0]])
        assert got <= set(live_ids)
        hits += len(truth & got)
    assert hits / 500 >= 0.95


def test_mostly_removed_matrix_is_compacted_and_drops_hnsw_below_the_exact_size() -> None:
    vectors = unit_rows(600, 16, seed=11)
    ids = [f"b{i}" for i in range(600)]
    m = VectorMatrix(ids, ["p"] * 600, vectors, exact_max_blocks=300)
    assert m.ann is not None
    m2 = m.updated(ids[:250], [], [], np.zeros((0, 16), dtype=np.float32))
    assert m2.ann is not None and len(m2.block_ids) == 600 and len(m2) == 350
    m3 = m2.updated(ids[250:500], [], [], np.zeros((0, 16), dtype=np.float32))
    assert len(m3.block_ids) == 100 and len(m3) == 100 and m3.ann is None and m3.alive is None
    rows, _ = m3.search(vectors[550], 3, None)
    assert m3.block_ids[rows[0]] == "b550"
