"""The ``vector`` lane: cosine similarity of sentence embeddings (exact or approximate search).

Block vectors are unit length, so cosine = dot product. Up to ``VECTOR_EXACT_MAX_BLOCKS`` blocks the
lane multiplies the whole matrix by the query (exact); above it, an HNSW index (Malkov & Yashunin
2018, via usearch) gives the candidates. Filters (projects, required phrases) apply before the
top-k cut: the exact path masks scores, the approximate path widens its search until enough
filtered candidates are found or the whole index was searched.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sleuth.lanes.base import LaneBase, LaneContext, LaneQuery, LaneStatus, doc_mask
from sleuth.store.scratch import replacing
from sleuth.types import RankedList

if TYPE_CHECKING:
    from usearch.index import Index

    from sleuth.store.vector_cache import VectorState

#: Blocks less similar to the query than this (cosine) are not returned: every block has a nearest
#: neighbour, and without a floor a query for a word found nowhere would still "match" the
#: least-unrelated blocks. all-MiniLM-L6-v2 scores unrelated texts around 0 to 0.2.
VECTOR_MIN_SIMILARITY = 0.3
#: Up to this many blocks the vector lane searches exactly (a matrix-vector product).
VECTOR_EXACT_MAX_BLOCKS = 50_000
#: HNSW settings (usearch): graph degree, build breadth and search breadth. Measured on 60,371 real
#: MiniLM block vectors with 400 real queries (docs/BENCH.md, item 6): building with a breadth of 64
#: instead of 128 halves the build's CPU (0.32-0.40 against 0.63-0.81 ms a vector, two runs), and
#: searching with 256 instead of 128 more than makes up its recall@10 (0.986 against 0.976) for
#: about 0.5 ms more a query.
HNSW_CONNECTIVITY = 16
HNSW_EXPANSION_ADD = 64
HNSW_EXPANSION_SEARCH = 256
#: The HNSW index stores its vectors as int8 (usearch scales unit rows by 127): a quarter of the
#: memory of float32 and, measured on this machine (docs/SCALE.md), 2-3x faster to build, with
#: the same recall@10 once candidates are rescored exactly from the float32 matrix.
HNSW_DTYPE = "i8"
#: Vectors decoded to float32 and added to the HNSW index per step of a build (about 77 MB of
#: float32 at 384 dimensions), so a build never holds the whole float32 matrix.
HNSW_ADD_CHUNK_BLOCKS = 50_000
#: Candidates asked of the HNSW index per result wanted; they are rescored with the exact cosine.
HNSW_RESCORE_FACTOR = 2
#: Query vectors kept in memory (an LRU of query text → vector).
QUERY_VECTOR_CACHE_SIZE = 1024


def _usearch_index() -> type[Index]:
    """usearch's ``Index``, imported after onnxruntime (see :func:`sleuth.embed.import_onnxruntime`:
    the other order crashes the process)."""
    from sleuth.embed import import_onnxruntime

    import_onnxruntime()
    from usearch.index import Index

    return Index


def new_hnsw(dim: int) -> Index:
    """An empty HNSW index with the engine's settings."""
    Index = _usearch_index()  # the class
    return Index(ndim=dim, metric="cos", dtype=HNSW_DTYPE, connectivity=HNSW_CONNECTIVITY,
                 expansion_add=HNSW_EXPANSION_ADD, expansion_search=HNSW_EXPANSION_SEARCH)


class VectorMatrix:
    """The vectors of every block with one (catalog generation, model), by *slot*.

    A slot is a row of ``vectors`` and, above ``exact_max_blocks`` live rows, the key of that row in
    the HNSW index. :meth:`updated` removes and adds blocks without rebuilding: a removed block's
    slot turns dead (block id ``""``, project -1, left out of every search) and new blocks take new
    slots at the end; :meth:`updated` compacts (renumbers every slot, rebuilding the HNSW index)
    only when dead slots outnumber live ones.

    The vectors are given as float32 (``vectors``) or as stored rows (``stored``: codes and scale,
    :mod:`sleuth.store.vector_codes`, e.g. memory-mapped from the lane's file), decoded to float32
    when a search first needs them (an approximate search never does).

    Args:
        block_ids: shape (n,) (``""`` = dead slot); project_ids: shape (n,); vectors: float32
            (n, dim), unit rows; stored: shape (n,) records of ``vector_codes.row_dtype(dim)``.
        exact_max_blocks: above this many live blocks an HNSW index is used for search (default:
            ``VECTOR_EXACT_MAX_BLOCKS``).
        ann_path / ann_key: where the HNSW index is saved and the key it is saved for (reused when
            the key matches, else rebuilt and saved).
        ann: an HNSW index over exactly the live slots (keys = slot numbers), used as is.
        project_codes: ``(project_names, project_of_block)`` instead of ``project_ids`` (sorted
            names; each slot's index into them, -1 for dead slots).
    """

    def __init__(self, block_ids: Sequence[str] | np.ndarray, project_ids: Sequence[str] | np.ndarray,
                 vectors: np.ndarray | None = None, exact_max_blocks: int | None = None,
                 ann_path: Path | None = None, ann_key: str = "", ann: Index | None = None,
                 project_codes: tuple[list[str], np.ndarray] | None = None,
                 stored: np.ndarray | None = None) -> None:
        # A fixed-width unicode array is kept as is (cheap to load); anything else becomes objects.
        self.block_ids = block_ids if isinstance(block_ids, np.ndarray) and block_ids.dtype.kind == "U" else \
            np.asarray(block_ids, dtype=object)
        if vectors is None and stored is None:
            raise ValueError("a vector matrix needs vectors or stored rows")
        self.stored = stored
        self._vectors = None if vectors is None else vectors if vectors.dtype == np.float32 and \
            vectors.flags.c_contiguous else np.ascontiguousarray(vectors, dtype=np.float32)
        self.dim = int(self._vectors.shape[1]) if self._vectors is not None else \
            int(stored.dtype["codes"].shape[0])  # type: ignore[union-attr]
        if project_codes is not None:  # already coded: (sorted names, index per slot, -1 = dead)
            self.project_names, self.project_of_block = project_codes
        else:
            projects = np.asarray(project_ids, dtype=object)
            self.project_names = sorted({str(p) for p in set(projects.tolist())} - {""})
            index = {p: i for i, p in enumerate(self.project_names)}
            index[""] = -1
            self.project_of_block = np.fromiter((index[p] for p in projects.tolist()), dtype=np.int32,
                                                count=len(projects))
        dead = self.block_ids == ""
        self.alive: np.ndarray | None = ~dead if dead.any() else None
        self.live = int(len(self.block_ids) - int(dead.sum()))
        self.exact_max_blocks = VECTOR_EXACT_MAX_BLOCKS if exact_max_blocks is None else exact_max_blocks
        self.derived: dict[str, np.ndarray] = {}  # per-matrix caches (see lanes.base.doc_mask)
        self._ann_lock = threading.Lock()  # shared with the matrices :meth:`updated` derives
        self._slot_of: dict[str, int] | None = None
        self.ann = ann
        if self.ann is None and self.live > self.exact_max_blocks:
            self.ann = self._load_ann(ann_path, ann_key) or self._build_ann(ann_path, ann_key)
        elif self.live <= self.exact_max_blocks:
            self.ann = None

    @property
    def vectors(self) -> np.ndarray:
        """Float32 vectors by slot, shape (n, dim) (decoded from the stored rows on first use)."""
        if self._vectors is None:
            from sleuth.store.vector_codes import decode

            assert self.stored is not None
            self._vectors = decode(self.stored)
        return self._vectors

    def rows(self, slots: np.ndarray) -> np.ndarray:
        """Float32 vectors of ``slots`` (shape (k,) int), shape (k, dim): taken from the decoded
        matrix when it is in memory, else decoded from those stored rows only (the same values),
        so that an approximate search never decodes the whole matrix (1.5 GB at 1,000,000 blocks)."""
        if self._vectors is not None or self.stored is None:
            return self.vectors[slots]
        from sleuth.store.vector_codes import decode

        return decode(self.stored[slots])

    def _load_ann(self, path: Path | None, key: str) -> Index | None:
        """The HNSW index saved at ``path`` for ``key`` (memory-mapped), or None."""
        if path is None or not path.is_file():
            return None
        try:
            if path.with_suffix(".key").read_text() != key:
                return None
        except OSError:
            return None
        index = load_hnsw(path)
        return index if index is not None and len(index) == self.live else None

    def _build_ann(self, path: Path | None, key: str) -> Index:
        """Build the HNSW index over every live slot and save it when ``path`` is given."""
        index = new_hnsw(self.dim)
        slots = np.arange(len(self.block_ids), dtype=np.uint64)
        if self.alive is not None:
            slots = slots[self.alive]
        for i in range(0, len(slots), HNSW_ADD_CHUNK_BLOCKS):  # float32 of one chunk at a time
            part = slots[i : i + HNSW_ADD_CHUNK_BLOCKS]
            index.add(part, self.rows(part.astype(np.int64)), threads=2)
        if path is not None and save_hnsw(index, path):
            try:
                path.with_suffix(".key").write_text(key)
            except OSError:
                pass
        return index

    def __len__(self) -> int:
        """The number of live blocks."""
        return self.live

    def slot_of(self) -> dict[str, int]:
        """``{block_id: slot}`` of the live blocks (built once per matrix)."""
        if self._slot_of is None:
            ids = self.block_ids.tolist()
            self._slot_of = {b: i for i, b in enumerate(ids) if b}
        return self._slot_of

    def updated(self, removed: Iterable[str], block_ids: Sequence[str], project_ids: Sequence[str],
                vectors: np.ndarray | None = None, stored: np.ndarray | None = None) -> VectorMatrix:
        """A matrix without the blocks ``removed`` and with ``block_ids`` added (their projects and
        vectors, float32 or ``stored`` rows), updating the HNSW index in place instead of rebuilding
        it. A block both removed and added is replaced. This matrix stays searchable (it never
        returns the new slots). Stored rows are kept when this matrix and the added blocks have them."""
        from sleuth.store.vector_codes import decode

        slot_of = self.slot_of()
        dead = sorted({slot_of[b] for b in removed if b in slot_of})
        n_old, dim = len(self.block_ids), self.dim
        live_after = self.live - len(dead) + len(block_ids)
        new_ids = np.concatenate([self.block_ids, np.asarray(block_ids, dtype=object)]) if len(block_ids) \
            else self.block_ids.copy()
        new_ids[dead] = ""
        old_projects = np.asarray(self.project_names + [""], dtype=object)[self.project_of_block]
        new_projects = np.concatenate([old_projects, np.asarray(project_ids, dtype=object)])
        new_projects[dead] = ""
        add = (decode(stored) if vectors is None and stored is not None else
               np.asarray(vectors, dtype=np.float32)).reshape(len(block_ids), dim)
        new_stored = None
        if self.stored is not None and stored is not None:
            new_stored = np.concatenate([self.stored, stored]) if len(block_ids) else self.stored
        new_vectors = None  # kept when decoded already (or nothing else holds them)
        if self._vectors is not None or new_stored is None:
            new_vectors = np.concatenate([self.vectors, add]) if len(block_ids) else self.vectors
        n_dead = len(new_ids) - live_after
        if n_dead > live_after:  # compact: renumber the slots (and rebuild the HNSW index, if any)
            keep = new_ids != ""
            return VectorMatrix(new_ids[keep], new_projects[keep], None if new_vectors is None else new_vectors[keep],
                                self.exact_max_blocks, stored=None if new_stored is None else new_stored[keep])
        ann = self.ann
        if live_after > self.exact_max_blocks and ann is not None:
            with self._ann_lock:
                if getattr(ann, "_sleuth_view", False):
                    ann = ann.copy()  # a memory-mapped index is read-only (adding to it crashes)
                if dead:
                    ann.remove(np.asarray(dead, dtype=np.uint64))
                if len(block_ids):
                    ann.add(np.arange(n_old, n_old + len(block_ids), dtype=np.uint64), add, threads=2)
            matrix = VectorMatrix(new_ids, new_projects, new_vectors, self.exact_max_blocks, ann=ann, stored=new_stored)
            matrix._ann_lock = self._ann_lock
            return matrix
        return VectorMatrix(new_ids, new_projects, new_vectors, self.exact_max_blocks, stored=new_stored)

    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` rows by cosine with ``query`` among rows where ``allowed`` (bool mask) is true.

        Returns ``(rows, scores)``, best first; ties broken by block id. Dead slots never appear.
        """
        n = len(self.block_ids)
        # A filter narrow enough is searched exactly over its rows: exact, and faster than widening
        # an approximate search until enough allowed rows turn up. Removed slots are not in the HNSW
        # index: no need to widen for them.
        narrow = allowed is not None and int(np.count_nonzero(allowed)) <= self.exact_max_blocks
        if self.ann is not None and not narrow:
            wanted = k * HNSW_RESCORE_FACTOR * (1 if allowed is None else 4)
            while True:
                with self._ann_lock:
                    matches = self.ann.search(query, min(wanted, self.live), threads=1)
                rows = np.asarray(matches.keys, dtype=np.int64)
                keep = rows < n  # slots added by a newer matrix sharing this index
                if allowed is not None:
                    keep[keep] &= allowed[rows[keep]]
                rows = rows[keep]
                if len(rows) >= k or wanted >= self.live:
                    break
                wanted *= 4
            # The index only picks the candidates (its int8 distances are approximate): the scores
            # are the exact cosines, from the float32 rows.
            scores = np.asarray(self.rows(np.sort(rows)) @ query, dtype=np.float32)
            rows = np.sort(rows)
            order = np.lexsort((self.block_ids[rows], -scores))[:k]
            return rows[order], scores[order]
        if self.alive is not None:
            allowed = self.alive if allowed is None else allowed & self.alive
        if allowed is None:
            candidates, scores = np.arange(n), self.vectors @ query
        else:
            candidates = np.flatnonzero(allowed)
            if self._vectors is None and self.ann is not None:  # a narrow filter of a large matrix
                from sleuth.store.vector_codes import decode

                assert self.stored is not None
                scores = decode(self.stored[candidates]) @ query
            else:
                scores = self.vectors[candidates] @ query
        if len(candidates) > k:
            top = np.argpartition(-scores, k - 1)[:k]
            candidates, scores = candidates[top], scores[top]
        order = np.lexsort((self.block_ids[candidates], -scores))
        return candidates[order], scores[order]


def load_hnsw(path: Path) -> Index | None:
    """The HNSW index saved at ``path``, memory-mapped (read-only), or None when unreadable."""
    Index = _usearch_index()  # the class
    try:
        index = Index.restore(str(path), view=True)
    except (OSError, ValueError, RuntimeError):
        return None
    if index is None:
        return None
    index.expansion_search = HNSW_EXPANSION_SEARCH
    index._sleuth_view = True  # type: ignore[attr-defined]
    return index


def save_hnsw(index: Index, path: Path) -> bool:
    """Atomically save ``index`` at ``path``; False when the folder is not writable."""
    try:
        with replacing(path) as tmp:
            index.save(str(tmp))
        return True
    except (OSError, RuntimeError):
        return False


class VectorLane(LaneBase):
    """Ranks blocks by embedding similarity to the query.

    The lane owns the vector matrix of the configured model (:mod:`sleuth.store.vector_cache`:
    memory-mapped from the lane files, brought up to the catalog's generation incrementally, saved
    when this process holds the write lock) and a cache of query vectors. The model itself is shared
    with the indexer (:class:`sleuth.lanes.model.SharedModel`).

    Args:
        context: the open index.
        min_similarity: blocks with a lower cosine are left out (see ``VECTOR_MIN_SIMILARITY``).
    """

    name = "vector"

    def __init__(self, context: LaneContext, min_similarity: float = VECTOR_MIN_SIMILARITY) -> None:
        self.context = context
        self.min_similarity = min_similarity
        self.state: VectorState | None = None
        self._lock = threading.Lock()
        self._query_vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_lock = threading.Lock()  # sessions of a broker embed queries concurrently

    # ------------------------------------------------------------------ the matrix

    def matrix(self) -> VectorMatrix:
        """The vectors of the catalog's current generation (loaded, updated or built as needed)."""
        from sleuth.store import vector_cache

        catalog = self.context.catalog
        model, dim = self.context.model.identity(catalog.vector_dim)
        key = (catalog.generation(), catalog.get_meta(f"vectors:{model}"))
        with self._lock:
            if self.state is None or self.state.key != key or self.state.model != model or \
                    (len(self.state.matrix) and self.state.matrix.dim != dim):
                self.state = vector_cache.current(catalog, self.context.index_dir, model, dim, self.state,
                                                  self.context.lane_files_writable())
            return self.state.matrix

    def _preload(self) -> None:
        with contextlib.suppress(Exception):  # errors are left for the search path, which reports them
            self._decoded(self.matrix())

    @staticmethod
    def _decoded(m: VectorMatrix) -> VectorMatrix:
        """``m`` with its float32 vectors decoded when an exact search will need them."""
        if m.ann is None:
            _ = m.vectors
        return m

    def unavailable(self) -> str | None:
        """Why the lane cannot run (no model, or no block embedded yet), else None; cheap after the
        first call. The first call loads the model while the matrix loads on another thread (each
        takes 0.1-0.25 s at 200k blocks, the largest part of a cold hybrid search)."""
        model = self.context.model
        if not model.tried and self.state is None:
            threading.Thread(target=self._preload, name="sleuth-vector-preload", daemon=True).start()
        embedder = model.get()
        if embedder is None:
            return model.unavailable()
        if len(self.matrix()) == 0 and self.context.catalog.has_blocks():
            return no_vectors_reason(embedder.name, self.embedding_running())
        return None

    def embedding_running(self) -> bool:
        """Whether a process is embedding this index's blocks now (sleuth.background)."""
        from sleuth.background import worker_running

        return worker_running(self.context.index_dir)

    def pending_documents(self) -> int:
        """Documents with blocks that have no vector yet (the lane does not see them)."""
        return len(self.state.pending_docs) if self.state is not None else 0

    def pending_doc_ids(self) -> Collection[str]:
        """The ids of the documents :meth:`pending_documents` counts (not to be changed)."""
        return self.state.pending_docs if self.state is not None else ()

    def warm(self) -> None:
        if self.context.model.get() is not None:
            self._decoded(self.matrix())

    def status(self) -> LaneStatus:
        """Model, dimensions and embedded blocks, from the catalog's counts. Nothing is loaded: the
        model's name, dimensions and path are read from its files
        (:meth:`sleuth.lanes.model.SharedModel.described`); only when they do not tell, or the
        model was loaded already, the loaded model's (a model that cannot load is then reported)."""
        known = self.context.model.known(self.context.catalog.vector_dim)
        if known is None:
            return LaneStatus(False, self.context.model.unavailable())
        name, dim, path = known
        have, total = self.context.catalog.vector_counts(name, dim=dim)
        reason = no_vectors_reason(name, self.embedding_running()) if total and not have else None
        return LaneStatus(reason is None, reason, {"model": name, "path": path, "dimensions": dim,
                                                   "blocks_with_vectors": have, "blocks": total})

    # ------------------------------------------------------------------ queries

    def _remember(self, text: str, vector: np.ndarray) -> None:
        with self._query_lock:
            self._query_vectors[text] = vector
            while len(self._query_vectors) > QUERY_VECTOR_CACHE_SIZE:
                self._query_vectors.popitem(last=False)

    def embed_queries(self, texts: Sequence[str]) -> None:
        """Embed the query texts not embedded yet, in one batch (a search then finds them cached)."""
        embedder = self.context.model.get()
        with self._query_lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._query_vectors))
        if embedder is None or not todo:
            return
        for text, vector in zip(todo, embedder.embed(todo), strict=True):
            self._remember(text, vector)

    def query_vector(self, text: str) -> np.ndarray:
        """The unit vector of query ``text``, shape (dim,), from the cache or embedded now."""
        with self._query_lock:
            vector = self._query_vectors.get(text)
        if vector is None:
            embedder = self.context.model.get()
            if embedder is None:
                raise RuntimeError(self.context.model.unavailable() or "no embedding model")
            vector = embedder.embed([text])[0]
            self._remember(text, vector)
        return vector

    def forget_query_vectors(self) -> None:
        with self._query_lock:
            self._query_vectors.clear()

    def search(self, q: LaneQuery) -> RankedList:
        m = self.matrix()
        if len(m) == 0 or not q.parsed.text:
            return RankedList(self.name, (), ())
        vector = self.query_vector(q.parsed.text)
        if vector.shape[0] != m.dim:  # built before the model loaded, for dimensions it does not have
            with self._lock:
                self.state = None
            m = self.matrix()  # the model is loaded now: its own dimensions decide
            if len(m) == 0 or vector.shape[0] != m.dim:
                return RankedList(self.name, (), ())
        allowed = None
        if q.projects is not None:
            wanted = [m.project_names.index(p) for p in q.projects if p in m.project_names]
            allowed = np.isin(m.project_of_block, wanted)
        if q.parsed.phrases:
            in_phrase = np.isin(m.block_ids, list(self.context.phrase_blocks(q)))
            allowed = in_phrase if allowed is None else allowed & in_phrase
        if q.doc_ids is not None:
            in_docs = doc_mask(m.block_ids, q.doc_ids, m.derived)
            allowed = in_docs if allowed is None else allowed & in_docs
        if allowed is not None and not allowed.any():
            return RankedList(self.name, (), ())
        rows, scores = m.search(vector, q.k, allowed)
        keep = scores >= self.min_similarity
        rows, scores = rows[keep], scores[keep]
        return RankedList(self.name, tuple(m.block_ids[rows].tolist()), tuple(float(s) for s in scores))


def no_vectors_reason(model: str, running: bool = False) -> str:
    """Why the vector lane cannot answer when no block has a vector of ``model`` yet (``running``:
    a background worker is making them)."""
    if running:
        return f"embedding is in progress: no block has a vector from {model} yet (`sleuth status` shows how far)"
    return f"no block has a vector from {model} yet: run `sleuth embed` (or `sleuth index`) to embed them"
