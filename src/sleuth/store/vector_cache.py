"""The vector lane's matrix kept up to date incrementally and saved beside the catalog.

A :class:`VectorState` is a :class:`~sleuth.lanes.vector.VectorMatrix` plus what it reflects: the
catalog generation, the ``vectors:<model>`` counter, each slot's embedding key (``embed_hash``), and
the documents that still had blocks without a vector. When the catalog moves on, :func:`refresh`
reads only what changed since (documents written or deleted after the state's generation, and the
documents that were waiting for vectors), removes the blocks that are gone or whose vector changed
and adds the new ones (:meth:`VectorMatrix.updated`: the HNSW index is updated, not rebuilt).

On disk (``<stem>`` = ``vectors.<8 hex of the model name>``):
- ``<stem>.state.npz``: the key, slot arrays (block ids, projects, embed hashes), pending
  documents, and the names of the two files below;
- ``<stem>.<token>.q8``: the vectors by slot as the catalog stores them (codes, block steps and
  scale, :mod:`sleuth.store.vector_codes`: 400 bytes a row at 384 dimensions), memory-mapped when loaded, appended
  to when slots are added (decoded to float32 in memory when an exact search needs them). Rebuilt
  from the catalog it is the same bytes, so a lost file changes no ranking;
- ``<stem>.<token>.hnsw``: the HNSW index (above the exact-search size), memory-mapped when loaded.
Files are written under the index's write lock only (the caller says whether it holds it) and
replaced by new names, never rewritten in place, so a reader that mapped the old ones is unaffected.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sleuth.lanes.vector import VectorMatrix, load_hnsw, save_hnsw
from sleuth.store import vector_codes
from sleuth.store.catalog import Catalog
from sleuth.store.lane_cache import load_arrays, save_arrays
from sleuth.store.scratch import create, replacing

log = logging.getLogger(__name__)

#: Above this share of the live blocks changed at once, the matrix is rebuilt from the catalog.
FULL_REBUILD_SHARE = 0.5
#: Documents per ``IN (...)`` query when reading changed documents' blocks.
DOCS_PER_QUERY = 500
#: Block vectors read from the catalog per step of a full build (:func:`build`): its memory beyond
#: the result (at 400 bytes a stored row and about 500 of Python objects a row, about 45 MB).
BUILD_CHUNK_BLOCKS = 50_000
#: Documents named in the log line about skipped stored vectors (:func:`_report_skipped`).
SKIPPED_DOCS_NAMED = 5
#: The state file's format (4: the vectors file holds catalog format 6's stored rows, ``.q8``; 3 held
#: format 5's, 2 float32, ``.f32``: a state of another format is rebuilt from the catalog).
STATE_FORMAT = "vector-state 4"


@dataclass
class VectorState:
    """A vector matrix and what it reflects (see the module docstring)."""

    model: str
    generation: int
    counter: str | None
    matrix: VectorMatrix
    embed_hashes: np.ndarray  # per slot ("" for dead slots); as loaded: ASCII bytes (see hash_texts)
    pending_docs: set[str] = field(default_factory=set)
    vectors_file: str = ""  # file names (in the index folder) this state was loaded from / saved to
    ann_file: str = ""
    saved_rows: int = 0  # rows of ``vectors_file`` on disk
    saved_key: tuple[int, str | None] | None = None  # the key of the state on disk (None: not saved)
    skipped_docs: set[str] = field(default_factory=set)  # documents with a stored vector skipped (reported)

    @property
    def key(self) -> tuple[int, str | None]:
        return self.generation, self.counter

    def hash_texts(self) -> np.ndarray:
        """``embed_hashes`` as text (a loaded state keeps the saved bytes until an update needs them)."""
        return self.embed_hashes.astype(str) if self.embed_hashes.dtype.kind == "S" else self.embed_hashes


def stem_for(model: str) -> str:
    return f"vectors.{hashlib.sha1(model.encode()).hexdigest()[:8]}"


def _read_marks(catalog: Catalog, model: str) -> tuple[int, str | None]:
    return catalog.generation(), catalog.get_meta(f"vectors:{model}")


def build(catalog: Catalog, model: str, dim: int) -> VectorState:
    """Read every block vector of ``model`` from the catalog (one consistent snapshot).

    Memory is the result plus one chunk: the rows are read ``BUILD_CHUNK_BLOCKS`` at a time into
    one preallocated array of stored rows (no list of every blob, no join of them), and block ids,
    projects and embed hashes are kept as fixed-width arrays and project codes, not as a Python
    string per block (at 1,000,000 blocks: 400 MB of rows, 116 MB of ids, 40 MB of hashes).
    """
    catalog.bound_vector_rows()  # before the read transaction: it may rebuild the table
    with catalog.read():
        generation, counter = _read_marks(catalog, model)
        n = catalog.count_block_vectors(model)
        stored = np.empty(n, dtype=vector_codes.row_dtype(dim))
        ids: list[np.ndarray] = []
        hashes: list[np.ndarray] = []
        codes = np.empty(n, dtype=np.int32)
        project_index: dict[str, int] = {}
        rows = iter(catalog.block_vectors_with_keys(model, dim))
        filled = read = 0
        skipped: list[tuple[str, object]] = []  # (block, stored value) that cannot be read (readable_rows)
        while chunk := list(itertools.islice(rows, min(BUILD_CHUNK_BLOCKS, n - read))):
            read += len(chunk)
            block_ids, projects, embed_hashes, blobs = zip(*chunk, strict=True)
            del chunk
            good, readable = catalog.readable_rows(blobs, dim)
            if not readable.all():
                keep = readable.tolist()
                skipped += [(b, v) for b, v, ok in zip(block_ids, blobs, keep, strict=True) if not ok]
                block_ids, projects, embed_hashes = ([x for x, ok in zip(column, keep, strict=True) if ok]
                                                     for column in (block_ids, projects, embed_hashes))
            stored[filled : filled + len(good)] = good
            ids.append(np.asarray(block_ids, dtype=str))
            hashes.append(np.asarray(embed_hashes, dtype="S"))
            codes[filled : filled + len(good)] = [project_index.setdefault(p, len(project_index)) for p in projects]
            filled += len(good)
        pending = set(catalog.docs_without_vectors(model))
        skipped_docs = _report_skipped(catalog, model, dim, skipped, set())
    names = sorted(project_index)
    renumber = np.zeros(len(project_index), dtype=np.int32)
    for i, p in enumerate(names):
        renumber[project_index[p]] = i
    block_ids = np.concatenate(ids) if ids else np.zeros(0, dtype="U1")
    matrix = VectorMatrix(block_ids, [], project_codes=(names, renumber[codes[:filled]]), stored=stored[:filled])
    embed_hashes = np.concatenate(hashes) if hashes else np.zeros(0, dtype="S1")
    return VectorState(model, generation, counter, matrix, embed_hashes, pending | skipped_docs,
                       skipped_docs=skipped_docs)


def refresh(catalog: Catalog, state: VectorState, dim: int) -> VectorState:
    """``state`` brought up to the catalog's current generation and vectors, incrementally (or
    rebuilt, when the catalog was replaced or most blocks changed)."""
    changes = _changes(catalog, state, dim)
    if changes is None:
        return build(catalog, state.model, dim)
    generation, counter, touched, current, pending = changes
    if (generation, counter) == state.key:
        return state
    m = state.matrix
    slot_of = m.slot_of()
    old_hashes = state.hash_texts()
    had = [b for b in slot_of if b.partition(":")[0] in touched]
    removed = [b for b in had if b not in current or current[b][1] != old_hashes[slot_of[b]]]
    kept = set(had) - set(removed)
    added = [b for b in current if b not in kept]
    stored, readable = catalog.readable_rows([current[b][2] for b in added], dim)
    if not readable.all():  # stored vectors that cannot be read: skipped, their documents embedded again
        keep = readable.tolist()
        skipped = [(b, current[b][2]) for b, ok in zip(added, keep, strict=True) if not ok]
        added = [b for b, ok in zip(added, keep, strict=True) if ok]
        bad_docs = _report_skipped(catalog, state.model, dim, skipped, state.skipped_docs)
        pending = pending | bad_docs
    else:
        bad_docs = set()
    skipped_docs = (state.skipped_docs - touched) | bad_docs  # a touched document was read again
    matrix = m.updated(removed, added, [current[b][0] for b in added], stored=stored)
    if len(matrix.block_ids) == len(m.block_ids) + len(added):
        hashes = np.concatenate([old_hashes, np.asarray([current[b][1] for b in added], dtype=object)])
        hashes[[slot_of[b] for b in removed]] = ""
        saved_rows, vectors_file = state.saved_rows, state.vectors_file
    else:  # compacted: slots renumbered
        hashes = _hashes_after_compaction(old_hashes, {slot_of[b] for b in removed}, added, current)
        saved_rows, vectors_file = 0, ""
    return VectorState(state.model, generation, counter, matrix, hashes, pending, vectors_file=vectors_file,
                       ann_file=state.ann_file if matrix.ann is m.ann else "", saved_rows=saved_rows,
                       saved_key=state.saved_key, skipped_docs=skipped_docs)


def _report_skipped(catalog: Catalog, model: str, dim: int, skipped: Sequence[tuple[str, object]],
                    reported: set[str]) -> set[str]:
    """The documents of the ``(block_id, stored value)`` of ``skipped`` (stored vectors that could
    not be read, left out of the matrix); logs them (stderr, never stdout) unless every one is in
    ``reported`` already. Each of them (of the wrong size, not bytes, or of the right size with
    values that are not finite, written by no version of sleuth) is embedded again by the next
    embedding run (:meth:`~sleuth.store.vectors.VectorTable.blocks_without_vectors` with ``dim``)."""
    docs = {b.partition(":")[0] for b, _ in skipped}
    if docs - reported:
        width = catalog.vector_bytes(dim)
        sized = sum(isinstance(v, bytes | bytearray | memoryview) and len(v) == width for _, v in skipped)
        found = catalog.documents(sorted(docs)[:SKIPPED_DOCS_NAMED])
        named = ", ".join(sorted(f"{d.project_id}:{d.rel_path}" for d in found.values()))
        more = f" and {len(docs) - len(found)} more" if len(docs) > len(found) else ""
        log.warning("vector lane (%s): %d stored vector(s) are not %d-dimension vectors of this catalog and were"
                    " skipped (%d of another size or not bytes, %d not finite): the next `sleuth index` or"
                    " `sleuth embed` embeds their blocks again; the lane serves the other vectors. Documents: %s%s",
                    model, len(skipped), dim, len(skipped) - sized, sized, named, more)
    return docs


def _changes(catalog: Catalog, state: VectorState, dim: int) -> tuple[
        int, str | None, set[str], dict[str, tuple[str, str, bytes]], set[str]] | None:
    """What changed since ``state`` (one consistent snapshot): ``(generation, counter, touched
    documents, {block_id: (project, embed_hash, vector)} of their blocks with a vector, documents
    still waiting for vectors)``; None when a full rebuild is due."""
    catalog.bound_vector_rows()  # before the read transaction: it may rebuild the table
    with catalog.read():
        generation, counter = _read_marks(catalog, state.model)
        if (generation, counter) == state.key:
            return generation, counter, set(), {}, state.pending_docs
        if generation < state.generation:  # the catalog was replaced
            return None
        written, deleted = catalog.changes_since(state.generation)
        touched = set(written) | set(deleted) | state.pending_docs
        if len(touched) > 1000 and len(touched) > FULL_REBUILD_SHARE * len(state.matrix):
            return None
        current: dict[str, tuple[str, str, bytes]] = {}
        pending: set[str] = set()
        docs = sorted(touched)
        for i in range(0, len(docs), DOCS_PER_QUERY):
            for block_id, doc_id, project_id, embed_hash, blob in catalog.doc_block_vectors(
                    state.model, docs[i : i + DOCS_PER_QUERY], dim):
                if blob is None:
                    pending.add(doc_id)
                else:
                    current[block_id] = (project_id, embed_hash, blob)
    return generation, counter, touched, current, pending


def _hashes_after_compaction(old_hashes: np.ndarray, dead: set[int], added: Sequence[str],
                             current: dict[str, tuple[str, str, bytes]]) -> np.ndarray:
    """The embed hashes by slot after a compaction: the live old slots in order, then ``added``."""
    old = [h for i, h in enumerate(old_hashes.tolist()) if h and i not in dead]
    return np.asarray(old + [current[b][1] for b in added], dtype=object)


# ---------------------------------------------------------------------------------------- files


def load(folder: Path, model: str, dim: int) -> VectorState | None:
    """The state saved in ``folder`` for ``model`` (vectors and HNSW index memory-mapped), or None."""
    stem = stem_for(model)
    saved = load_arrays(folder / f"{stem}.state.npz", STATE_FORMAT, mapped=True)
    if saved is None:
        return None
    try:
        if str(saved["model"]) != model:
            return None
        block_ids = saved["block_ids"].astype(str)  # saved as ASCII bytes; kept fixed-width (no str objects)
        n = len(block_ids)
        vectors_file, ann_file = str(saved["vectors_file"]), str(saved["ann_file"])
        path = folder / vectors_file
        row = vector_codes.row_dtype(dim)
        if path.stat().st_size < n * row.itemsize:
            return None
        stored = np.memmap(path, dtype=row, mode="r", shape=(n,)) if n else np.zeros(0, dtype=row)
        ann = None
        if ann_file:
            ann = load_hnsw(folder / ann_file)
            if ann is None:
                return None
        codes = np.where(block_ids == "", -1, saved["project_of_block"]).astype(np.int32)
        matrix = VectorMatrix(block_ids, [], ann=ann, project_codes=(saved["project_names"].tolist(), codes),
                              stored=stored)
        counter = str(saved["counter"]) if bool(saved["has_counter"]) else None
        generation = int(saved["generation"])
        # Saved with another exact-search size: the HNSW index was built or dropped here; save again.
        as_saved = (matrix.ann is None) == (ann is None)
        hashes = saved["embed_hashes"]  # bytes, decoded when an update needs them (hash_texts)
        pending = set(saved["pending_docs"].astype(str).tolist())
        return VectorState(model, generation, counter, matrix, hashes, pending, vectors_file,
                           ann_file if as_saved else "", n, saved_key=(generation, counter) if as_saved else None)
    except (KeyError, ValueError, OSError, IndexError):
        return None


def save(folder: Path, state: VectorState) -> VectorState:
    """Write ``state`` (appending new vector rows, saving the HNSW index under a new name when it
    changed); the files it replaces are removed. Returns the state with its file names set; on a
    folder that cannot be written (read-only, full), the state unchanged and the saved one intact."""
    stem = stem_for(state.model)
    m = state.matrix
    n, row_bytes = len(m.block_ids), vector_codes.row_dtype(m.dim).itemsize
    stored = m.stored
    if stored is None:  # a matrix made from float32 vectors (not by this module): stored as the catalog would
        stored = vector_codes.encode(m.vectors)
    on_disk = _saved_key(folder / f"{stem}.state.npz")
    if on_disk is not None and (on_disk == state.key or on_disk[0] > state.generation):
        return state  # another process saved this state, or a newer one
    written: list[Path] = []  # new files of this save, removed again when it fails
    appended: tuple[Path, int] | None = None  # (file, size before) of an append, cut back when it fails
    try:
        vectors_file = state.vectors_file
        path = folder / vectors_file if vectors_file else None
        on_disk_rows = path.stat().st_size // row_bytes if path is not None and path.is_file() else -1
        if on_disk_rows != state.saved_rows or state.saved_rows > n:
            vectors_file = f"{stem}.{secrets.token_hex(4)}.q8"
            written.append(folder / vectors_file)
            _write_new(folder / vectors_file, stored)
        elif n > state.saved_rows:
            assert path is not None
            appended = (path, path.stat().st_size)
            with open(path, "ab") as fh:
                fh.write(np.ascontiguousarray(stored[state.saved_rows :]).tobytes())
                fh.flush()
                os.fsync(fh.fileno())
        ann_file = state.ann_file
        if m.ann is None:
            ann_file = ""
        elif not ann_file or getattr(m.ann, "_sleuth_view", False) is False:
            ann_file = f"{stem}.{secrets.token_hex(4)}.hnsw"
            written.append(folder / ann_file)
            if not save_hnsw(m.ann, folder / ann_file):
                raise OSError(f"cannot save {ann_file}")
        projects = np.asarray(m.project_names, dtype=str)
        if not save_arrays(folder / f"{stem}.state.npz", STATE_FORMAT, model=np.asarray(state.model),
                           generation=np.asarray(state.generation), counter=np.asarray(state.counter or ""),
                           has_counter=np.asarray(state.counter is not None),
                           block_ids=m.block_ids.astype("S"), embed_hashes=state.embed_hashes.astype("S"),
                           project_names=projects if len(projects) else np.zeros(0, dtype="U1"),
                           project_of_block=np.maximum(m.project_of_block, 0),
                           pending_docs=np.asarray(sorted(state.pending_docs), dtype="S"),
                           vectors_file=np.asarray(vectors_file), ann_file=np.asarray(ann_file)):
            raise OSError(f"cannot save {stem}.state.npz")
    except OSError:
        # Not saved (a full or read-only folder): the saved state stays as it was, with its files;
        # what this save wrote goes, so that a full disk gets its space back.
        for new in written:
            with contextlib.suppress(OSError):
                new.unlink()
        if appended is not None:
            with contextlib.suppress(OSError):
                os.truncate(appended[0], appended[1])
        return state
    # Files no saved state names any more (replaced ones, the format before incremental updates).
    # Processes that mapped them keep reading them; a process that read the old state file but
    # has not opened them yet finds them gone and rebuilds.
    stale = [*folder.glob(f"{stem}.*.q8"), *folder.glob(f"{stem}.*.f32"), *folder.glob(f"{stem}.*.hnsw"),
             *(folder / f"{stem}{suffix}" for suffix in (".cache.npz", ".hnsw", ".key"))]
    for path in stale:
        if path.name not in (vectors_file, ann_file):
            with contextlib.suppress(OSError):
                path.unlink()
    state.vectors_file, state.ann_file, state.saved_rows = vectors_file, ann_file, n
    state.saved_key = state.key
    return state


def _saved_key(path: Path) -> tuple[int, str | None] | None:
    try:
        with np.load(path, allow_pickle=False) as data:
            return int(data["generation"]), str(data["counter"]) if bool(data["has_counter"]) else None
    except (OSError, ValueError, KeyError, EOFError):
        return None


def _write_new(path: Path, stored: np.ndarray) -> None:
    with replacing(path) as tmp, create(tmp) as fh:
        fh.write(np.ascontiguousarray(stored).tobytes())
        fh.flush()
        os.fsync(fh.fileno())


def current(catalog: Catalog, folder: Path, model: str, dim: int, state: VectorState | None,
            may_write: contextlib.AbstractContextManager[bool]) -> VectorState:
    """The up-to-date state: ``state`` (or the saved one, or a new build) refreshed incrementally;
    saved when it differs from the saved one and ``may_write`` yields True (the index's write lock
    is held)."""
    if state is not None and state.model != model:
        state = None
    if state is None:
        state = load(folder, model, dim)
    state = build(catalog, model, dim) if state is None else refresh(catalog, state, dim)
    if state.saved_key != state.key:
        with may_write as allowed:
            if allowed:
                state = save(folder, state)
    return state
