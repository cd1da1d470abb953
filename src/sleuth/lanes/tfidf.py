"""The ``tfidf`` lane: cosine similarity of sublinear TF-IDF vectors (Salton & Buckley 1988;
Manning, Raghavan & Schütze 2008, §6.4 "lnc.ltc" style with smoothed idf).

Block weight of term t: ``(1 + ln tf) * idf(t)``, rows L2-normalised; ``idf(t) = ln((1 + N) /
(1 + df)) + 1``. The query vector weighs each distinct term by its idf. Score = cosine in [0, 1].

The matrix lives in memory (compressed sparse columns, blocks × vocabulary, as plain numpy arrays:
scoring needs no scipy, so a search process never imports it) and is built from the catalog's
stored block terms; the engine rebuilds it when the catalog generation changes. Pure: no I/O here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from sleuth.lanes.base import LaneQuery
from sleuth.types import RankedList


class TfidfModel:
    """Sublinear TF-IDF vectors of a set of blocks.

    Args:
        rows: ``(block_id, project_id, terms)`` per block; ``terms`` is whitespace-joined.
    """

    def __init__(self, rows: Iterable[tuple[str, str, str]]) -> None:
        import scipy.sparse as sp  # imported here: a search that never builds a model stays fast to start

        vocab: dict[str, int] = {}
        block_ids: list[str] = []
        projects: list[str] = []
        indptr = [0]
        indices: list[int] = []
        data: list[float] = []
        for block_id, project_id, terms in rows:
            counts: dict[int, int] = {}
            for term in terms.split():
                col = vocab.setdefault(term, len(vocab))
                counts[col] = counts.get(col, 0) + 1
            block_ids.append(block_id)
            projects.append(project_id)
            indices.extend(counts)
            data.extend(counts.values())
            indptr.append(len(indices))
        n_blocks, n_terms = len(block_ids), len(vocab)
        tf = sp.csr_matrix(
            (np.asarray(data, dtype=np.float32), np.asarray(indices, dtype=np.int32), np.asarray(indptr)),
            shape=(n_blocks, n_terms),
        )
        df = np.bincount(tf.indices, minlength=n_terms).astype(np.float32)
        self.idf = (np.log((1.0 + n_blocks) / (1.0 + df)) + 1.0).astype(np.float32)
        tf.data = (1.0 + np.log(tf.data)) * self.idf[tf.indices]
        norms = np.sqrt(np.asarray(tf.multiply(tf).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        matrix = sp.csc_matrix(sp.diags(1.0 / norms) @ tf, dtype=np.float32)
        self.data, self.indices, self.indptr = matrix.data, matrix.indices, matrix.indptr
        self.vocab = vocab
        self.block_ids = np.asarray(block_ids, dtype=object)
        self.project_names = sorted(set(projects))
        index = {p: i for i, p in enumerate(self.project_names)}
        self.project_of_block = np.asarray([index[p] for p in projects], dtype=np.int32)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The model as plain arrays (for :func:`sleuth.store.lane_cache.save_arrays`)."""
        vocab = np.asarray(sorted(self.vocab, key=self.vocab.__getitem__), dtype=str)
        return {
            "data": self.data, "indices": self.indices, "indptr": self.indptr,
            "shape": np.asarray([len(self.block_ids), len(self.idf)]), "idf": self.idf, "vocab": vocab,
            "block_ids": self.block_ids.astype(str), "project_names": np.asarray(self.project_names, dtype=str),
            "project_of_block": self.project_of_block,
        }

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> TfidfModel:
        """Rebuild a model saved with :meth:`to_arrays`."""
        model = cls.__new__(cls)
        model.data, model.indices, model.indptr = a["data"], a["indices"], a["indptr"]
        model.idf = a["idf"]
        model.vocab = {term: i for i, term in enumerate(a["vocab"].tolist())}
        model.block_ids = a["block_ids"]  # fixed-width unicode: no str object per block to create
        model.project_names = a["project_names"].tolist()
        model.project_of_block = a["project_of_block"]
        return model

    def __len__(self) -> int:
        return len(self.block_ids)

    def scores(self, terms: Iterable[str]) -> np.ndarray:
        """Cosine of every block with the query; shape ``(n_blocks,)``, 0 where nothing matches.

        The sparse matrix-vector product over the query's columns, column by column in float32
        (the same operations, in the same order, as scipy's CSC product).
        """
        cols = sorted({self.vocab[t] for t in terms if t in self.vocab})
        out = np.zeros(len(self), dtype=np.float32)
        if not cols:
            return out
        weights = self.idf[cols]
        weights = weights / np.linalg.norm(weights)
        for col, weight in zip(cols, weights, strict=True):
            lo, hi = self.indptr[col], self.indptr[col + 1]
            out[self.indices[lo:hi]] += self.data[lo:hi] * weight
        return out


class TfidfLane:
    """Ranks blocks by :class:`TfidfModel` cosine, with filters applied before the top-k cut.

    Args:
        model: a callable returning the current model (the engine rebuilds it as the index changes).
        phrase_filter: given the parsed query's phrases, the set of block ids containing all of them.
    """

    name = "tfidf"

    def __init__(self, model: Callable[[], TfidfModel],
                 phrase_filter: Callable[[LaneQuery], set[str]] | None = None) -> None:
        self._model = model
        self._phrase_filter = phrase_filter

    def search(self, q: LaneQuery) -> RankedList:
        model = self._model()
        if not q.parsed.terms or len(model) == 0:
            return RankedList(self.name, (), ())
        scores = model.scores(q.parsed.terms)
        mask = scores > 0
        if q.projects is not None:
            wanted = [model.project_names.index(p) for p in q.projects if p in model.project_names]
            mask &= np.isin(model.project_of_block, wanted)
        if q.parsed.phrases and self._phrase_filter is not None:
            allowed = self._phrase_filter(q)
            mask &= np.isin(model.block_ids, list(allowed))
        candidates = np.flatnonzero(mask)
        if len(candidates) > q.k:
            top = np.argpartition(-scores[candidates], q.k - 1)[: q.k]
            candidates = candidates[top]
        order = candidates[np.lexsort((model.block_ids[candidates], -scores[candidates]))]
        return RankedList(self.name, tuple(model.block_ids[order].tolist()), tuple(float(s) for s in scores[order]))
