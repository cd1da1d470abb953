"""The ``vector`` lane: cosine similarity of sentence embeddings (exact or approximate search).

Block vectors are unit length, so cosine = dot product. Up to ``VECTOR_EXACT_MAX_BLOCKS`` blocks the
lane multiplies the whole matrix by the query (exact); above it, an HNSW index (Malkov & Yashunin
2018, via usearch) gives the candidates. Filters (projects, required phrases) apply before the
top-k cut: the exact path masks scores, the approximate path widens its search until enough
filtered candidates are found or the whole index was searched.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from sleuth.lanes.base import LaneQuery, doc_mask
from sleuth.types import RankedList

#: Blocks less similar to the query than this (cosine) are not returned: every block has a nearest
#: neighbour, and without a floor a query for a word found nowhere would still "match" the
#: least-unrelated blocks. all-MiniLM-L6-v2 scores unrelated texts around 0 to 0.2.
VECTOR_MIN_SIMILARITY = 0.3
#: Up to this many blocks the vector lane searches exactly (a matrix-vector product).
VECTOR_EXACT_MAX_BLOCKS = 50_000
#: HNSW settings (usearch): graph degree and search breadth; recall is measured in docs/BENCH.md.
HNSW_CONNECTIVITY = 16
HNSW_EXPANSION_ADD = 128
HNSW_EXPANSION_SEARCH = 128


class VectorMatrix:
    """The vectors of every block with one (catalog generation, model).

    Args:
        block_ids: shape (n,); project_ids: shape (n,); vectors: float32 (n, dim), unit rows.
        exact_max_blocks: above this size an HNSW index is built for search.
    """

    def __init__(self, block_ids: list[str], project_ids: list[str], vectors: np.ndarray,
                 exact_max_blocks: int = VECTOR_EXACT_MAX_BLOCKS, ann_path: Path | None = None,
                 ann_key: str = "") -> None:
        self.block_ids = np.asarray(block_ids, dtype=object)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.project_names = sorted(set(project_ids))
        index = {p: i for i, p in enumerate(self.project_names)}
        self.project_of_block = np.asarray([index[p] for p in project_ids], dtype=np.int32)
        self.derived: dict[str, np.ndarray] = {}
        self.ann = None
        if len(block_ids) > exact_max_blocks:
            self.ann = self._load_ann(ann_path, ann_key) or self._build_ann(ann_path, ann_key)

    def _load_ann(self, path: Path | None, key: str) -> object | None:
        """The HNSW index saved at ``path`` for ``key`` (memory-mapped), or None."""
        from usearch.index import Index

        if path is None or not path.is_file():
            return None
        try:
            if path.with_suffix(".key").read_text() != key:
                return None
            index = Index.restore(str(path), view=True)
        except (OSError, ValueError, RuntimeError):
            return None
        if index is None or len(index) != len(self):
            return None
        index.expansion_search = HNSW_EXPANSION_SEARCH
        return index

    def _build_ann(self, path: Path | None, key: str) -> object:
        """Build the HNSW index over every row (keys = row numbers) and save it when ``path`` is given."""
        from usearch.index import Index

        index = Index(ndim=self.vectors.shape[1], metric="cos", dtype="f32",
                      connectivity=HNSW_CONNECTIVITY, expansion_add=HNSW_EXPANSION_ADD,
                      expansion_search=HNSW_EXPANSION_SEARCH)
        index.add(np.arange(len(self), dtype=np.uint64), self.vectors, threads=2)
        if path is not None:
            try:
                tmp = path.with_suffix(".tmp")
                index.save(str(tmp))
                tmp.replace(path)
                path.with_suffix(".key").write_text(key)
            except OSError:
                pass  # a read-only index folder: the index lives in memory only
        return index

    def __len__(self) -> int:
        return len(self.block_ids)

    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` rows by cosine with ``query`` among rows where ``allowed`` (bool mask) is true.

        Returns ``(rows, scores)``, best first; ties broken by block id.
        """
        # A filter narrow enough is searched exactly over its rows: exact, and faster than widening
        # an approximate search until enough allowed rows turn up.
        narrow = allowed is not None and int(np.count_nonzero(allowed)) <= VECTOR_EXACT_MAX_BLOCKS
        if self.ann is not None and not narrow:
            wanted = k if allowed is None else k * 4
            while True:
                matches = self.ann.search(query, min(wanted, len(self)))
                rows = np.asarray(matches.keys, dtype=np.int64)
                scores = 1.0 - np.asarray(matches.distances, dtype=np.float32)
                if allowed is not None:
                    keep = allowed[rows]
                    rows, scores = rows[keep], scores[keep]
                if len(rows) >= k or wanted >= len(self):
                    break
                wanted *= 4
            order = np.lexsort((self.block_ids[rows], -scores))[:k]
            return rows[order], scores[order]
        if allowed is None:
            candidates, scores = np.arange(len(self)), self.vectors @ query
        else:
            candidates = np.flatnonzero(allowed)
            scores = self.vectors[candidates] @ query
        if len(candidates) > k:
            top = np.argpartition(-scores, k - 1)[:k]
            candidates, scores = candidates[top], scores[top]
        order = np.lexsort((self.block_ids[candidates], -scores))
        return candidates[order], scores[order]


class VectorLane:
    """Ranks blocks by embedding similarity to the query.

    Args:
        matrix: returns the current VectorMatrix (rebuilt by the engine as the index changes).
        min_similarity: blocks with a lower cosine are left out (see ``VECTOR_MIN_SIMILARITY``).
        embed_query: text -> unit vector of shape (dim,).
        phrase_filter: the parsed query's phrases -> block ids containing all of them.
    """

    name = "vector"

    def __init__(self, matrix: Callable[[], VectorMatrix], embed_query: Callable[[str], np.ndarray],
                 phrase_filter: Callable[[LaneQuery], set[str]] | None = None,
                 min_similarity: float = VECTOR_MIN_SIMILARITY) -> None:
        self.min_similarity = min_similarity
        self._matrix = matrix
        self._embed_query = embed_query
        self._phrase_filter = phrase_filter

    def search(self, q: LaneQuery) -> RankedList:
        m = self._matrix()
        if len(m) == 0 or not q.parsed.text:
            return RankedList(self.name, (), ())
        allowed = None
        if q.projects is not None:
            wanted = [m.project_names.index(p) for p in q.projects if p in m.project_names]
            allowed = np.isin(m.project_of_block, wanted)
        if q.parsed.phrases and self._phrase_filter is not None:
            in_phrase = np.isin(m.block_ids, list(self._phrase_filter(q)))
            allowed = in_phrase if allowed is None else allowed & in_phrase
        if q.doc_ids is not None:
            in_docs = doc_mask(m.block_ids, q.doc_ids, m.derived)
            allowed = in_docs if allowed is None else allowed & in_docs
        if allowed is not None and not allowed.any():
            return RankedList(self.name, (), ())
        rows, scores = m.search(self._embed_query(q.parsed.text), q.k, allowed)
        keep = scores >= self.min_similarity
        rows, scores = rows[keep], scores[keep]
        return RankedList(self.name, tuple(m.block_ids[rows]), tuple(float(s) for s in scores))
