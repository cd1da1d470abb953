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
