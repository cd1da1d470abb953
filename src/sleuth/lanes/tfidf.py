"""The ``tfidf`` lane: cosine similarity of sublinear TF-IDF vectors (Salton & Buckley 1988;
Manning, Raghavan & Schütze 2008, §6.4 "lnc.ltc" style with smoothed idf).

Block weight of term t: ``(1 + ln tf) * idf(t)``, rows L2-normalised; ``idf(t) = ln((1 + N) /
(1 + df)) + 1``. The query vector weighs each distinct term by ``(1 + ln qtf) * idf`` (qtf: how
often the query says it). Score = cosine in [0, 1].

The matrix lives in memory (CSC arrays, blocks × vocabulary; scoring needs numpy only, scipy is
imported to build or update a model) and is built from the catalog's stored
block terms; when the catalog generation changes, :class:`TfidfLane` updates it with the blocks of
the documents written or deleted since. The model is pure; the lane loads and saves it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from sleuth.lanes.base import LaneBase, LaneContext, LaneQuery, doc_mask
from sleuth.text import ParsedQuery
from sleuth.types import RankedList

#: The file the lane's model is saved in, beside the catalog, and the format its key starts with.
TFIDF_CACHE_FILE = "tfidf.cache.npz"
TFIDF_CACHE_FORMAT = "tfidf-3"
#: The model is saved again when an update changed at least this many blocks (or 1% of them).
TFIDF_SAVE_MIN_CHANGED_BLOCKS = 1_000

#: Query terms weigh ``(1 + ln qtf) * idf`` (True) or ``qtf * idf`` (False); docs/EVAL.md.
QUERY_TF_SUBLINEAR = True
#: Terms whose vocabulary column a loaded model remembers (then it forgets them all and starts over).
COLUMN_MEMO_MAX_TERMS = 100_000


class TfidfModel:
    """Sublinear TF-IDF vectors of a set of blocks.

    Stored as the blocks' log term frequencies ``1 + ln tf`` (``matrix``, CSC, blocks × vocabulary),
    the terms' ``idf`` and the blocks' vector norms, so that a model can be :meth:`updated` with
    the blocks of a few changed documents without re-reading the others (idf and norms are
    recomputed over the whole matrix, which takes vector operations only).

    Args:
        rows: ``(block_id, project_id, terms)`` per block; ``terms`` is whitespace-joined.
    """

    #: A loaded model's vocabulary (set by :meth:`from_arrays` only): the terms as sorted UTF-8
    #: bytes, and each one's column.
    vocab_sorted: np.ndarray
    vocab_columns: np.ndarray

    def __init__(self, rows: Iterable[tuple[str, str, str]]) -> None:
        vocab: dict[str, int] = {}
        log_tf, block_ids, projects = self._rows(rows, vocab)
        self._vocab: dict[str, int] | None = vocab
        self._set(log_tf, block_ids, projects)

    @property
    def vocab(self) -> dict[str, int]:
        """Term → column. A model loaded with :meth:`from_arrays` builds this only when asked
        (updates need it; scoring looks terms up in the sorted vocabulary instead)."""
        if self._vocab is None:
            terms = np.empty(len(self.vocab_columns), dtype=object)
            terms[self.vocab_columns] = np.char.decode(self.vocab_sorted, "utf-8")
            self._vocab = {term: i for i, term in enumerate(terms.tolist())}
        return self._vocab

    def _columns(self, terms: Iterable[str]) -> list[int]:
        """The sorted columns of the ``terms`` found in the vocabulary."""
        return sorted({c for c in self._term_columns(list(terms)) if c >= 0})

    def _term_columns(self, terms: list[str]) -> list[int]:
        """Each term's column (-1: not in the vocabulary), aligned with ``terms``."""
        if self._vocab is not None:
            return [self._vocab.get(t, -1) for t in terms]
        new = list({t for t in terms if t not in self._column_of})
        if new:
            if len(self._column_of) > COLUMN_MEMO_MAX_TERMS:
                self._column_of = {}
            self._column_of.update(zip(new, self._search_vocab(new), strict=True))
        return [self._column_of[t] for t in terms]

    def _search_vocab(self, terms: list[str]) -> list[int]:
        """Each term's column, found by binary search in the sorted vocabulary (-1: absent)."""
        width = self.vocab_sorted.dtype.itemsize
        keys = [t.encode("utf-8") for t in terms]
        if not len(self.vocab_sorted):
            return [-1] * len(terms)
        wanted = np.asarray([k if len(k) <= width else b"" for k in keys], dtype=self.vocab_sorted.dtype)
        at = np.minimum(np.searchsorted(self.vocab_sorted, wanted), len(self.vocab_sorted) - 1)
        found = (self.vocab_sorted[at] == wanted) & np.asarray([0 < len(k) <= width for k in keys])
        return [int(self.vocab_columns[i]) if hit else -1 for i, hit in zip(at, found, strict=True)]

    @staticmethod
    def _rows(rows: Iterable[tuple[str, str, str]], vocab: dict[str, int]) -> tuple[object, list[str], list[str]]:
        """Tokenise ``rows`` against ``vocab`` (extended in place): ``(log-tf CSR, block ids, projects)``."""
        import scipy.sparse as sp  # imported here: a search that never builds a model stays fast to start

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
        tf = sp.csr_matrix(
            (np.asarray(data, dtype=np.float32), np.asarray(indices, dtype=np.int32), np.asarray(indptr)),
            shape=(len(block_ids), len(vocab)),
        )
        tf.data = (1.0 + np.log(tf.data)).astype(np.float32)
        return tf, block_ids, projects

    def _store(self, csc: object) -> None:
        """Keep a CSC matrix as its plain arrays (``data``, ``indices``, ``indptr``, ``shape``)."""
        self.data, self.indices, self.indptr = csc.data, csc.indices, csc.indptr  # type: ignore[attr-defined]
        self.shape: tuple[int, int] = tuple(csc.shape)  # type: ignore[attr-defined,assignment]
        self._matrix: Any = csc

    @property
    def matrix(self) -> Any:
        """The log-tf matrix as scipy CSC, built from the arrays on first use (only updates need it:
        scoring uses the arrays, so a search process never imports scipy)."""
        if self._matrix is None:
            import scipy.sparse as sp

            self._matrix = sp.csc_matrix((self.data, self.indices, self.indptr), shape=self.shape)
        return self._matrix

    def _set(self, log_tf: object, block_ids: list[str] | np.ndarray, projects: list[str]) -> None:
        """Take ``log_tf`` (blocks × vocabulary) as the model: idf, norms and project index follow."""
        import scipy.sparse as sp

        self._store(sp.csc_matrix(log_tf, dtype=np.float32))
        n_blocks, n_terms = self.shape
        df = np.diff(self.indptr)
        self.idf = (np.log((1.0 + n_blocks) / (1.0 + df.astype(np.float32))) + 1.0).astype(np.float32)
        weighted = self.data.astype(np.float64) * np.repeat(self.idf, df)
        norms = np.sqrt(np.bincount(self.indices, weights=weighted * weighted, minlength=n_blocks))
        norms[norms == 0] = 1.0
        self.norms = norms.astype(np.float32)
        self.block_ids = np.asarray(block_ids, dtype=object)
        self.project_names = sorted(set(projects))
        index = {p: i for i, p in enumerate(self.project_names)}
        self.project_of_block = np.asarray([index[p] for p in projects], dtype=np.int32)
        self.derived: dict[str, np.ndarray] = {}
        self._init_scratch()

    def _init_scratch(self) -> None:
        self._column_of: dict[str, int] = {}  # terms looked up so far (-1: not in the vocabulary)
        self._thread_buffers = threading.local()

    def updated(self, removed_docs: Iterable[str], rows: Iterable[tuple[str, str, str]]) -> TfidfModel:
        """A new model without the blocks of ``removed_docs`` (document ids: the part of a block id
        before ``:``) and with ``rows`` added; scores as a model built from scratch on the same
        blocks (up to float rounding). Costs vector operations over the matrix, no re-tokenising."""
        import scipy.sparse as sp

        removed = set(removed_docs)
        keep = np.asarray([b.split(":", 1)[0] not in removed for b in self.block_ids], dtype=bool)
        vocab = dict(self.vocab)
        added, new_ids, new_projects = self._rows(rows, vocab)
        m = self.matrix
        n_kept, n_terms = int(keep.sum()), len(vocab)
        # The kept rows, renumbered, column by column (CSC order is kept).
        in_kept = keep[m.indices]
        row_number = np.cumsum(keep) - 1
        columns = np.repeat(np.arange(m.shape[1]), np.diff(m.indptr))[in_kept]
        indices = row_number[m.indices[in_kept]].astype(np.int32)
        data = m.data[in_kept]
        counts = np.bincount(columns, minlength=n_terms)
        # The added rows go after them: each entry at the end of its column's run.
        coo = sp.coo_matrix(added)
        order = np.lexsort((coo.row, coo.col))
        new_cols, new_rows, new_data = coo.col[order], coo.row[order] + n_kept, coo.data[order]
        ends = np.cumsum(counts)
        indices = np.insert(indices, ends[new_cols], new_rows.astype(np.int32))
        data = np.insert(data, ends[new_cols], new_data.astype(np.float32))
        counts += np.bincount(new_cols, minlength=n_terms)
        indptr = np.concatenate([[0], np.cumsum(counts)])
        matrix = sp.csc_matrix((data, indices, indptr), shape=(n_kept + len(new_ids), n_terms))
        model = TfidfModel.__new__(TfidfModel)
        model._vocab = vocab
        projects = [self.project_names[i] for i in self.project_of_block[keep]] + new_projects
        model._set(matrix, np.concatenate([self.block_ids[keep], np.asarray(new_ids, dtype=object)]), projects)
        return model

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The model as plain arrays (for :func:`sleuth.store.lane_cache.save_arrays`).

        The vocabulary is saved sorted (UTF-8 bytes, ``vocab_sorted``) with each term's column
        (``vocab_columns``), so that a loaded model finds a query's terms by binary search without
        building a dictionary of every term.
        """
        if self._vocab is None:
            vocab_sorted, vocab_columns = self.vocab_sorted, self.vocab_columns
        else:
            by_column = sorted(self._vocab, key=self._vocab.__getitem__)
            encoded = np.asarray([t.encode("utf-8") for t in by_column], dtype=bytes)
            if not len(encoded):
                encoded = np.zeros(0, dtype="S1")
            order = np.argsort(encoded, kind="stable")
            vocab_sorted, vocab_columns = encoded[order], order.astype(np.int32)
        return {
            "data": self.data, "indices": self.indices, "indptr": self.indptr,
            "shape": np.asarray(self.shape), "idf": self.idf, "norms": self.norms,
            "vocab_sorted": vocab_sorted, "vocab_columns": vocab_columns,
            "block_ids": np.asarray(self.block_ids, dtype=str),
            "project_names": np.asarray(self.project_names, dtype=str),
            "project_of_block": self.project_of_block,
        }

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> TfidfModel:
        """A model over arrays saved with :meth:`to_arrays`, used as they are (they may be read-only
        views of a memory-mapped file: nothing is copied or converted until an update)."""
        model = cls.__new__(cls)
        model.data, model.indices, model.indptr = a["data"], a["indices"], a["indptr"]
        model.shape = (int(a["shape"][0]), int(a["shape"][1]))
        model._matrix = None
        model.idf = a["idf"]
        model.norms = a["norms"]
        model._vocab = None
        model.vocab_sorted, model.vocab_columns = a["vocab_sorted"], a["vocab_columns"]
        model.block_ids = a["block_ids"]
        model.project_names = a["project_names"].tolist()
        model.project_of_block = a["project_of_block"]
        model.derived = {}
        model._init_scratch()
        return model

    def __len__(self) -> int:
        return len(self.block_ids)

    def scores(self, terms: Iterable[str], qtf: Sequence[float] | None = None) -> np.ndarray:
        """Cosine of every block with the query; shape ``(n_blocks,)``, 0 where nothing matches."""
        out = np.zeros(len(self), dtype=np.float32)
        rows, scores = self.matching(terms, qtf)
        out[rows] = scores
        return out

    def _buffers(self) -> tuple[np.ndarray, np.ndarray]:
        """This thread's score sums (float32, zero between queries) and row positions (int32), one
        entry per block: allocated once per thread, not per query."""
        buffers = getattr(self._thread_buffers, "arrays", None)
        if buffers is None:
            buffers = (np.zeros(len(self), dtype=np.float32), np.zeros(len(self), dtype=np.int32))
            self._thread_buffers.arrays = buffers
        return buffers

    def matching(self, terms: Iterable[str], qtf: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cosines)`` of the blocks sharing a term with the query (cosine > 0), by row.

        ``terms``: distinct query terms; ``qtf``: their query term frequencies (aligned; None = 1
        each). A query term weighs ``(1 + ln qtf) * idf`` (the "ltc" query side of lnc.ltc, Manning
        et al. 2008, §6.4.3, the same sublinear tf as the blocks' side).

        The same values as :meth:`scores` at those rows. Only the query terms' postings are read:
        the sums go to a reused per-thread buffer, and the rows they touched are found from the
        postings themselves (no pass over every block), then the buffer is zeroed there again.
        """
        terms = list(terms)
        counts = [1.0] * len(terms) if qtf is None else [float(n) for n in qtf]
        tf_of_column: dict[int, float] = {}
        for col, n in zip(self._term_columns(terms), counts, strict=True):
            if col >= 0:
                tf_of_column[col] = tf_of_column.get(col, 0.0) + n
        cols = sorted(tf_of_column)
        if not cols:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        weights = self.idf[cols]
        if any(tf_of_column[c] != 1.0 for c in cols):
            qtf_of_columns = np.asarray([tf_of_column[c] for c in cols], dtype=np.float32)
            weights = weights * (1.0 + np.log(qtf_of_columns) if QUERY_TF_SUBLINEAR else qtf_of_columns)
        weights = weights / np.linalg.norm(weights)
        query = weights * self.idf[cols]
        # The sparse product over the query's columns, column by column in float32: the same
        # operations in the same order as scipy's CSC matrix-vector product, without scipy.
        sums, position = self._buffers()
        postings = [self.indices[self.indptr[col] : self.indptr[col + 1]] for col in cols]
        try:
            for col, rows, weight in zip(cols, postings, query, strict=True):
                sums[rows] += self.data[self.indptr[col] : self.indptr[col + 1]] * weight
            if len(postings) == 1:
                rows = postings[0].astype(np.int64)  # a column's rows are sorted and distinct
            else:
                touched = np.concatenate(postings)
                order = np.arange(len(touched), dtype=np.int32)
                position[touched] = order  # a row in several postings keeps its last position
                rows = np.sort(touched[position[touched] == order]).astype(np.int64)
            found = sums[rows]
        finally:
            for rows_of_column in postings:
                sums[rows_of_column] = 0.0
        keep = found > 0
        if not keep.all():
            rows, found = rows[keep], found[keep]
        return rows, (found / self.norms[rows]).astype(np.float32)


class TfidfLane(LaneBase):
    """Ranks blocks by :class:`TfidfModel` cosine, with filters applied before the top-k cut.

    The lane owns its model: it loads the one saved beside the catalog (``tfidf.cache.npz``,
    memory-mapped), brings it up to the catalog's generation with the documents written or deleted
    since (a watcher's small change costs a few rows, not a rebuild), and saves it again after a
    build or a large change, when this process holds the write lock.

    Args:
        context: the open index (:class:`sleuth.lanes.base.LaneContext`).
    """

    name = "tfidf"

    def __init__(self, context: LaneContext) -> None:
        self.context = context
        self.path = context.index_dir / TFIDF_CACHE_FILE
        self._model: tuple[int, TfidfModel] | None = None
        self._lock = threading.Lock()

    def model(self) -> TfidfModel:
        """The model of the catalog's current generation (loaded, updated or built as needed)."""
        catalog = self.context.catalog
        gen = catalog.generation()
        with self._lock:
            if self._model is None or self._model[0] != gen:
                from sleuth.store.lane_cache import load_arrays

                saved = load_arrays(self.path, f"{TFIDF_CACHE_FORMAT} generation {gen}", mapped=True)
                if saved is not None:
                    self._model = (gen, TfidfModel.from_arrays(saved))
                else:
                    self._model = self._updated(self._model or self._saved())
            return self._model[1]

    def _updated(self, base: tuple[int, TfidfModel] | None) -> tuple[int, TfidfModel]:
        """The model of the catalog's generation: ``base`` (of an older generation) updated with the
        documents written or deleted since, else built from every block; saved when it changed a lot."""
        from sleuth.store.lane_cache import save_arrays

        catalog = self.context.catalog
        with catalog.read():  # one snapshot: the blocks are those of the generation in the key
            gen = catalog.generation()
            if base is not None and base[0] < gen:
                written, deleted = catalog.changes_since(base[0])
                rows = catalog.block_terms(written)
                model = base[1].updated({*written, *deleted}, rows)
                changed = len(rows) + len(deleted)
            else:
                model = TfidfModel((ib.block.block_id, ib.block.project_id, ib.terms)
                                   for ib in catalog.indexed_blocks(0))
                changed = len(model)
        # Saved after a build or a large change; after a small one, a new process loads the last
        # saved model and applies the few changes since, which is cheaper than writing it each time.
        if changed >= max(TFIDF_SAVE_MIN_CHANGED_BLOCKS, len(model) // 100) or not self.path.exists():
            with self.context.lane_files_writable() as allowed:
                if allowed:
                    save_arrays(self.path, f"{TFIDF_CACHE_FORMAT} generation {gen}", **model.to_arrays())
        return gen, model

    def _saved(self) -> tuple[int, TfidfModel] | None:
        """The model saved beside the catalog whatever its generation (None when absent or of another format)."""
        from sleuth.store.lane_cache import load_saved

        saved = load_saved(self.path, mapped=True)
        if saved is None or not saved[0].startswith(f"{TFIDF_CACHE_FORMAT} generation "):
            return None
        try:
            return int(saved[0].rsplit(" ", 1)[1]), TfidfModel.from_arrays(saved[1])
        except (KeyError, ValueError):
            return None

    def warm(self) -> None:
        self.model()

    def applies(self, parsed: ParsedQuery) -> bool:
        """Only a query with a word that is not a stop word has something to look up."""
        return bool(parsed.terms)

    def search(self, q: LaneQuery) -> RankedList:
        model = self.model()
        if not q.parsed.terms or len(model) == 0:
            return RankedList(self.name, (), ())
        pairs = q.parsed.weighted_terms()
        rows, scores = model.matching([t for t, _ in pairs], [n for _, n in pairs])
        filtered = q.projects is not None or q.doc_ids is not None or bool(q.parsed.phrases)
        if filtered:
            mask = np.ones(len(rows), dtype=bool)
            if q.projects is not None:
                wanted = [model.project_names.index(p) for p in q.projects if p in model.project_names]
                mask &= np.isin(model.project_of_block[rows], wanted)
            if q.parsed.phrases:
                allowed = self.context.phrase_blocks(q)
                mask &= np.isin(model.block_ids[rows], list(allowed))
            if q.doc_ids is not None:
                mask &= doc_mask(model.block_ids, q.doc_ids, model.derived)[rows]
            rows, scores = rows[mask], scores[mask]
        if len(rows) > q.k:
            top = np.argpartition(-scores, q.k - 1)[: q.k]
            rows, scores = rows[top], scores[top]
        order = np.lexsort((model.block_ids[rows], -scores))
        rows, scores = rows[order], scores[order]
        return RankedList(self.name, tuple(model.block_ids[rows].tolist()), tuple(scores.tolist()))
