"""The engine: indexing (sources → blocks → catalog → lanes) and search (lanes → fusion → hits).

``Engine`` is the one object the CLI, the MCP server, the evaluation and the tests call. It owns
an index folder holding the SQLite catalog (the source of truth) and the derived lane indexes.
Reads are safe from many threads and processes; writes take the folder's write lock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sleuth.config import INDEX_DIR_NAME, Config, find_index_dir, load_config
from sleuth.embed import Embedder, ModelUnavailable, configured_model, load_embedder
from sleuth.errors import ConfigError, DocumentNotFound, IndexBusy, IndexNotFound, ProjectNotFound, QueryError
from sleuth.fusion import FusedDocument, rrf
from sleuth.lanes.base import LaneQuery
from sleuth.lanes.graph import GraphDocument, LinkGraph
from sleuth.lanes.lexical import BM25Lane, ExactLane, IndexLane
from sleuth.lanes.postings import Postings
from sleuth.lanes.tfidf import TfidfLane, TfidfModel
from sleuth.lanes.vector import VectorLane, VectorMatrix
from sleuth.locks import lock_exclusive
from sleuth.store import vector_cache
from sleuth.store.catalog import Catalog, DocumentRow, FileState, HitBlock, IndexedBlock
from sleuth.store.lane_cache import load_arrays, load_saved, save_arrays
from sleuth.summaries import Snippet, make_snippet
from sleuth.text import analyze, parse_query

if TYPE_CHECKING:
    from sleuth.ingest.guard import Outcome, ParseJob

    #: A file to index: ``(rel_path, mtime_ns, size_bytes, job, in_archive)`` (see ``Engine._candidates``).
    _Candidate = tuple[str, int, int, ParseJob, bool]

from sleuth.types import (
    Block,
    BlockDraft,
    DocumentContent,
    Hit,
    IndexReport,
    LaneContribution,
    ParsedDocument,
    ProjectInfo,
    RankedList,
    SearchRequest,
    SearchResponse,
    SkippedFile,
)

#: Documents written to the catalog (and committed to the lanes) per transaction while indexing.
FLUSH_DOCUMENTS = 500
#: How long ``index`` waits for another writer to release the index, in seconds (overridden by
#: the environment variable ``SLEUTH_WRITE_LOCK_TIMEOUT_S``).
WRITE_LOCK_TIMEOUT_S = 30.0
WRITE_LOCK_TIMEOUT_ENV = "SLEUTH_WRITE_LOCK_TIMEOUT_S"
#: At most this many blocks are considered when a quoted phrase restricts the tfidf lane.
PHRASE_FILTER_MAX_BLOCKS = 100_000
#: Blocks embedded (and their vectors committed) per batch while indexing.
EMBED_COMMIT_BLOCKS = 256
#: The format of the saved tfidf model (its cache key starts with it).
TFIDF_CACHE_FORMAT = "tfidf-3"
#: The tfidf model is saved again when an update changed at least this many blocks (or 1% of them).
TFIDF_SAVE_MIN_CHANGED_BLOCKS = 1_000
#: The lanes answered from the tantivy postings (which an indexing run commits at its end).
POSTINGS_LANES = frozenset({"bm25", "index", "exact"})
#: Documents fused beyond the requested limit, to replace any deleted since the lanes answered.
FUSED_SPARE_DOCUMENTS = 20
#: Query vectors kept in memory (an LRU of query text → vector).
QUERY_VECTOR_CACHE_SIZE = 1024

_PROJECT_ID_RE = re.compile(r"[^a-z0-9._-]+")


def now_rfc3339() -> str:
    """The current UTC time as RFC 3339 with milliseconds, e.g. ``2026-09-03T10:00:00.000Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _ns_to_rfc3339(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def project_id_for(name: str) -> str:
    """A project id from a name: lowercased, runs of other characters replaced by ``-``.

    Raises:
        QueryError: nothing usable is left of ``name``.
    """
    pid = _PROJECT_ID_RE.sub("-", name.strip().lower()).strip("-.")
    if not pid:
        raise QueryError(f"invalid project name {name!r}: use letters, digits, '.', '_' or '-'")
    return pid


def _hash(*parts: str) -> str:
    h = hashlib.sha1()
    for p in parts:
        h.update(p.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def content_hash_of(text: str) -> str:
    """The content hash a document's decoded text is stored under (change detection)."""
    return _hash(text)


def doc_id_for(project_id: str, root_label: str, rel_path: str) -> str:
    """Stable document id: 16 hex digits of SHA-1 over (project, root folder name, relative path)."""
    return _hash(project_id, root_label, rel_path)[:16]


def write_lock_timeout_s() -> float:
    """``$SLEUTH_WRITE_LOCK_TIMEOUT_S`` when set (seconds, >= 0), else ``WRITE_LOCK_TIMEOUT_S``.

    Raises:
        ConfigError: the variable is not a number >= 0.
    """
    raw = os.environ.get(WRITE_LOCK_TIMEOUT_ENV, "").strip()
    if not raw:
        return WRITE_LOCK_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ConfigError(f"{WRITE_LOCK_TIMEOUT_ENV} must be a number of seconds >= 0, got {raw!r}")
    return value


def _no_vectors_reason(model: str) -> str:
    return f"no block has a vector from {model} yet: run `sleuth index` to embed them"


def doc_of_block(block_id: str) -> str:
    """The document id embedded in a block id (``<doc_id>:<suffix>``)."""
    return block_id.split(":", 1)[0]


def block_terms(text: str, title_terms: Sequence[str]) -> str:
    """The terms a block is indexed under: its text's, with its document title's in front unless
    the text already starts with them (so every block of a document carries its title)."""
    terms = analyze(text)
    if title_terms and terms[: len(title_terms)] != list(title_terms):
        terms = [*title_terms, *terms]
    return " ".join(terms)


def make_blocks(project_id: str, doc_id: str, title: str, parsed: ParsedDocument) -> list[tuple[Block, str]]:
    """Assign ids to a parsed document's blocks and compute their index terms.

    Block ids are ``<doc_id>:<12 hex of SHA-1(heading path, text, repeat number)>``, so they
    survive edits elsewhere in the document. A document with no block (front matter only) gets
    one block holding its whole text, so it can still be found.
    """
    title_terms = analyze(title)
    drafts = list(parsed.blocks)
    if not drafts:
        # Front matter only, or an empty file: one block of the whole text, so the document can
        # still be found (by its title, path and tags in the index lane, and its text if any).
        text = parsed.text.rstrip()
        drafts = [BlockDraft(text, (), 1, text.count("\n") + 1, 0, len(text))]
    out: list[tuple[Block, str]] = []
    seen: dict[str, int] = {}
    for ordinal, draft in enumerate(drafts):
        content_hash = _hash(draft.text)[:16]
        heading = " > ".join(draft.heading_path)
        n = seen.get(heading + "\0" + draft.text, 0)
        seen[heading + "\0" + draft.text] = n + 1
        block_id = f"{doc_id}:{_hash(heading, draft.text, str(n))[:12]}"
        block = Block(
            block_id=block_id, doc_id=doc_id, project_id=project_id, ordinal=ordinal, text=draft.text,
            heading_path=draft.heading_path, start_line=draft.start_line, end_line=draft.end_line,
            start_char=draft.start_char, end_char=draft.end_char, content_hash=content_hash,
        )
        out.append((block, block_terms(draft.text, title_terms)))
    return out


@dataclass(frozen=True)
class Record:
    """A document given as text rather than a file (used by ``eval`` and later by records)."""

    rel_path: str
    text: str
    title: str = ""
    kind: str = "text"


@dataclass
class _RootRun:
    """The state of one indexing pass over a root: what the catalog knew, what was seen, what
    waits to be written (``batch``, ``touched``, ``verified``), what was skipped and what was
    indexed with a warning (``problems``)."""

    pid: str
    root_key: str
    root_label: str
    known: dict[tuple[str, str], FileState]
    report: IndexReport
    now: str
    progress: Callable[[str], None] | None
    confine: list[Path]  # every root of the project: nothing outside them is read
    seen: set[str] = field(default_factory=set)
    batch: list[tuple[DocumentRow, list[tuple[Block, str]]]] = field(default_factory=list)
    touched: list[tuple[str, int, int]] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)
    skips: list[tuple[str, str]] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)


class _WriteLock:
    """An exclusive ``flock`` on ``<index>/write.lock``, waited for at most ``timeout_s``."""

    def __init__(self, path: Path, timeout_s: float) -> None:
        self.path, self.timeout_s = path, timeout_s
        self._fd: int | None = None

    def acquire(self, blocking: bool = True) -> bool:
        fd = lock_exclusive(self.path, self.timeout_s if blocking else 0)
        if fd is None:
            return False
        self._fd = fd
        with contextlib.suppress(OSError):  # who holds it, for the message of a writer that waits
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"process {os.getpid()} ({' '.join(sys.argv[:3])[:200]})".encode(), 0)
        return True

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def holder(self) -> str:
        """Who took the lock last (``process PID (command)``), or ``""``."""
        try:
            return self.path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return ""

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        if not self.acquire():
            holder = self.holder() or "another process"
            raise IndexBusy(
                f"{holder} is writing to the index {self.path.parent}; waited {self.timeout_s:g} s for it: try again"
                f" when it has finished (or wait longer: ${WRITE_LOCK_TIMEOUT_ENV}=seconds)"
            )
        try:
            yield
        finally:
            self.release()


class _SearchRows:
    """The hit rows one search has read (found or not), so that a second look at the same block
    ids during that search reads nothing."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._blocks: dict[str, HitBlock | None] = {}

    def blocks(self, block_ids: Sequence[str]) -> dict[str, HitBlock]:
        """Like :meth:`Catalog.hit_blocks`."""
        todo = [b for b in block_ids if b not in self._blocks]
        if todo:
            found = self.catalog.hit_blocks(todo)
            self._blocks.update((b, found.get(b)) for b in todo)
        return {b: block for b in block_ids if (block := self._blocks[b]) is not None}


class Engine:
    """An index folder opened for indexing and search.

    Args:
        index_dir: the folder (created when missing) holding ``catalog.sqlite3`` and ``postings/``.
        config: ranking settings; default: :func:`sleuth.config.load_config` of ``index_dir``.
    """

    def __init__(self, index_dir: str | Path, config: Config | None = None) -> None:
        self.index_dir = Path(index_dir).expanduser().resolve()
        self.index_dir.mkdir(parents=True, exist_ok=True)
        self.config = config or load_config(self.index_dir)
        self.catalog = Catalog(self.index_dir / "catalog.sqlite3")
        self.postings = Postings(self.index_dir / "postings")
        self._write_lock = _WriteLock(self.index_dir / "write.lock", write_lock_timeout_s())
        self._tfidf: tuple[int, TfidfModel] | None = None
        self._lane_cache_lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._embedder_error: str | None = None
        self._embedder_lock = threading.Lock()
        self._vectors: vector_cache.VectorState | None = None
        self._graph: tuple[int, LinkGraph] | None = None
        self._query_vectors: dict[str, np.ndarray] = {}
        self._query_vectors_lock = threading.Lock()  # sessions of a broker embed queries concurrently
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="sleuth-lane")
        self.lanes = {
            "bm25": BM25Lane(self.postings),
            "tfidf": TfidfLane(self._tfidf_model, self._phrase_blocks),
            "index": IndexLane(self.postings),
            "exact": ExactLane(self.postings),
            "vector": VectorLane(self._vector_matrix, self._embed_query, self._phrase_blocks),
        }
        self._catch_up(blocking=False)

    @classmethod
    def open(cls, index: str | Path | None = None, config: Config | None = None) -> Engine:
        """Open an existing index: ``index``, ``$SLEUTH_INDEX``, or the nearest ``.sleuth/`` upwards.

        Raises:
            IndexNotFound: none given and none found, or the folder holds no catalog.
        """
        found = find_index_dir(index)
        if found is None:
            raise IndexNotFound(
                f"no index found: pass --index DIR, set SLEUTH_INDEX, or run `sleuth index PATH` first"
                f" (looked for {INDEX_DIR_NAME}/ in {Path.cwd()} and its parents)"
            )
        if not (found / "catalog.sqlite3").is_file():
            raise IndexNotFound(f"{found} is not a sleuth index (no catalog.sqlite3); run `sleuth index` first")
        return cls(found, config)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.catalog.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ================================================================== lanes' state

    def _catch_up(self, blocking: bool) -> None:
        """Replay catalog changes the postings have not seen (after a crash or another writer)."""
        if self.postings.generation() == self.catalog.generation():
            return
        if not self._write_lock.acquire(blocking=blocking):
            return  # another process is writing; it brings the postings up to date itself
        try:
            self.postings.catch_up(self.catalog)
        finally:
            self._write_lock.release()

    def _tfidf_model(self) -> TfidfModel:
        gen = self.catalog.generation()
        with self._lane_cache_lock:
            if self._tfidf is None or self._tfidf[0] != gen:
                path = self.index_dir / "tfidf.cache.npz"
                saved = load_arrays(path, f"{TFIDF_CACHE_FORMAT} generation {gen}", mapped=True)
                if saved is not None:
                    self._tfidf = (gen, TfidfModel.from_arrays(saved))
                else:
                    self._tfidf = self._tfidf_updated(path, self._tfidf or self._saved_tfidf(path))
            return self._tfidf[1]

    def _tfidf_updated(self, path: Path, base: tuple[int, TfidfModel] | None) -> tuple[int, TfidfModel]:
        """The tfidf model of the catalog's generation, saved at ``path``: ``base`` (a model of an
        older generation) updated with the documents written or deleted since, else built from
        every block. A watcher's small change thus costs a few rows, not a rebuild."""
        with self.catalog.read():  # one snapshot: the blocks are those of the generation in the key
            gen = self.catalog.generation()
            if base is not None and base[0] < gen:
                written, deleted = self.catalog.changes_since(base[0])
                rows = self.catalog.block_terms(written)
                model = base[1].updated({*written, *deleted}, rows)
                changed = len(rows) + len(deleted)
            else:
                model = TfidfModel((ib.block.block_id, ib.block.project_id, ib.terms)
                                   for ib in self.catalog.indexed_blocks(0))
                changed = len(model)
        # Saved after a build or a large change; after a small one, a new process loads the last
        # saved model and applies the few changes since, which is cheaper than writing it each time.
        if changed >= max(TFIDF_SAVE_MIN_CHANGED_BLOCKS, len(model) // 100) or not path.exists():
            save_arrays(path, f"{TFIDF_CACHE_FORMAT} generation {gen}", **model.to_arrays())
        return gen, model

    @staticmethod
    def _saved_tfidf(path: Path) -> tuple[int, TfidfModel] | None:
        """The model saved at ``path`` whatever its generation (None when absent or of another format)."""
        saved = load_saved(path, mapped=True)
        if saved is None or not saved[0].startswith(f"{TFIDF_CACHE_FORMAT} generation "):
            return None
        try:
            return int(saved[0].rsplit(" ", 1)[1]), TfidfModel.from_arrays(saved[1])
        except (KeyError, ValueError):
            return None

    # ================================================================== embeddings

    def embedder(self) -> Embedder | None:
        """The configured embedding model, loaded once; None when unavailable (reason in
        :attr:`vector_unavailable`)."""
        with self._embedder_lock:
            if self._embedder is None and self._embedder_error is None:
                try:
                    self._embedder = load_embedder(self.config.model, self.config.model_int8)
                    if self._embedder is None:
                        self._embedder_error = "no embedding model configured (model = 'none')"
                except ModelUnavailable as exc:
                    self._embedder_error = str(exc)
            return self._embedder

    @property
    def model_unavailable(self) -> str | None:
        """Why there is no embedding model (none configured, or it cannot load), else None. Loads
        the model on first use, not the vector matrix."""
        return self._embedder_error if self.embedder() is None else None

    @property
    def vector_unavailable(self) -> str | None:
        """Why the vector lane cannot run, or None when it can (cheap: no scan of the blocks).

        The first call loads the model; the vector matrix loads at the same time, on another
        thread (each takes 0.1-0.25 s at 200k blocks, the largest part of a cold hybrid search).
        """
        if self._embedder is None and self._embedder_error is None and self._vectors is None:
            threading.Thread(target=self._preload_vectors, name="sleuth-vector-preload", daemon=True).start()
        embedder = self.embedder()
        if embedder is None:
            return self._embedder_error
        if len(self._vector_matrix()) == 0 and self.catalog.has_blocks():
            return _no_vectors_reason(embedder.name)
        return None

    def warm_lanes(self) -> None:
        """Build (and save beside the catalog) the tfidf matrix, the vector matrix and, above the
        exact-search size, the HNSW index, so that the first query of a new process does not."""
        self._tfidf_model()
        if self.embedder() is not None:
            self._vector_matrix()

    def _embed_query(self, text: str) -> np.ndarray:
        vector = self._query_vectors.get(text)
        if vector is None:
            embedder = self.embedder()
            assert embedder is not None  # the vector lane runs only with a model
            vector = embedder.embed([text])[0]
            self._remember_query_vector(text, vector)
        return vector

    def _remember_query_vector(self, text: str, vector: np.ndarray) -> None:
        """Cache a query vector, evicting the oldest beyond ``QUERY_VECTOR_CACHE_SIZE`` (thread-safe)."""
        with self._query_vectors_lock:
            while len(self._query_vectors) >= QUERY_VECTOR_CACHE_SIZE:
                self._query_vectors.pop(next(iter(self._query_vectors)))
            self._query_vectors[text] = vector

    def embed_pending(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed every block that has no vector for the configured model; returns how many.

        Vectors are cached by the block's embedding text, so unchanged blocks are never embedded
        again. ``progress(done, total)`` is called after each batch. Without a model, does nothing.
        """
        embedder = self.embedder()
        if embedder is None:
            return 0
        have, total = self.catalog.vector_counts(embedder.name)
        todo_estimate = total - have
        done = 0
        while True:
            pending = self.catalog.blocks_without_vectors(embedder.name, EMBED_COMMIT_BLOCKS)
            if not pending:
                return done
            vectors = embedder.embed([text for _, text in pending])
            items = [(h, v.tobytes()) for (h, _), v in zip(pending, vectors, strict=True)]
            self.catalog.store_vectors(embedder.name, items)
            done += len(pending)
            if progress:
                progress(done, max(todo_estimate, done))

    def _vector_model(self) -> tuple[str, int]:
        """``(name, dimensions)`` of the configured model's vectors (``("", 0)`` without a model),
        without loading the model when the catalog already holds vectors of it."""
        if self._embedder is None and self._embedder_error is None:
            with contextlib.suppress(ModelUnavailable):
                files = configured_model(self.config.model, self.config.model_int8)
                dim = self.catalog.vector_dim(files.name) if files else None
                if files and dim:
                    return files.name, dim
        embedder = self.embedder()
        return (embedder.name, embedder.dim) if embedder else ("", 0)

    def _preload_vectors(self) -> None:
        # Errors are left for the search path, which reports them.
        with contextlib.suppress(Exception):
            self._vector_matrix()

    def _vector_matrix(self) -> VectorMatrix:
        model, dim = self._vector_model()
        key = (self.catalog.generation(), self.catalog.get_meta(f"vectors:{model}"))
        with self._lane_cache_lock:
            if self._vectors is None or self._vectors.key != key or self._vectors.model != model:
                # Loaded from the lane files, then updated incrementally (HNSW add/remove, no rebuild).
                self._vectors = vector_cache.current(self.catalog, self.index_dir, model, dim, self._vectors,
                                                     self._lane_files_writable())
            return self._vectors.matrix

    @contextlib.contextmanager
    def _lane_files_writable(self) -> Iterator[bool]:
        """Yields whether this process may write lane files now: it holds the index's write lock
        (taken here without waiting when it did not already)."""
        if self._write_lock._fd is not None:  # noqa: SLF001 - indexing in this engine holds it
            yield True
            return
        try:
            got = self._write_lock.acquire(blocking=False)
        except OSError:  # a read-only index folder
            got = False
        try:
            yield got
        finally:
            if got:
                self._write_lock.release()

    def embed_queries(self, texts: Sequence[str]) -> None:
        """Embed the query texts not embedded yet in one batch (the vector lane then finds them
        cached). Does nothing without a model."""
        embedder = self.embedder()
        todo = list(dict.fromkeys(t for t in texts if t not in self._query_vectors))
        if embedder is None or not todo:
            return
        for text, vector in zip(todo, embedder.embed(todo), strict=True):
            self._remember_query_vector(text, vector)

    def link_graph(self) -> LinkGraph:
        """The link graph of the whole index (documents, entities, relations), cached per generation."""
        gen = self.catalog.generation()
        with self._lane_cache_lock:
            if self._graph is None or self._graph[0] != gen:
                from sleuth.ingest.links import LinkResolver

                rows = list(self.catalog.graph_rows())
                titles: dict[str, dict[str, str]] = {}
                for _doc_id, project_id, rel_path, title, _links, _entities in rows:
                    titles.setdefault(project_id, {})[rel_path] = title
                resolvers = {p: LinkResolver(list(t), t) for p, t in titles.items()}

                def resolve(project_id: str, target: str, from_rel_path: str) -> str | None:
                    return resolvers[project_id].resolve(target, from_rel_path)

                documents = (GraphDocument(d, p, r, t, tuple(tuple(x) for x in links), tuple(ents))  # type: ignore[misc]
                             for d, p, r, t, links, ents in rows)
                self._graph = (gen, LinkGraph(documents, resolve))
            return self._graph[1]

    def run_lane(self, name: str, q: LaneQuery) -> RankedList | str:
        """Lane ``name``'s answer, or why it cannot run (only the vector lane can be unavailable)."""
        if name == "vector":
            reason = self.vector_unavailable
            if reason:
                return reason
        return self.lanes[name].search(q)

    def _phrase_blocks(self, q: LaneQuery) -> set[str]:
        phrases = [self.postings.phrase(p) for p in q.parsed.phrases]
        return set(self.postings.search(phrases[0], PHRASE_FILTER_MAX_BLOCKS, q.projects, phrases[1:]).block_ids)

    # ================================================================== indexing

    def index(
        self,
        roots: Sequence[str | Path],
        project: str | None = None,
        progress: Callable[[str], None] | None = None,
        embed_progress: Callable[[int, int], None] | None = None,
    ) -> IndexReport:
        """Index (or re-index incrementally) files under ``roots`` into ``project``.

        Only changed files are re-read; files gone from the roots are removed. Every skipped or
        failing file is reported with its reason, and none aborts the run.

        Args:
            roots: folders (or single files) to walk.
            project: project name; default: the first root's folder name.
            progress: called with each indexed file's path (for a progress display).
            embed_progress: called with (blocks embedded, blocks to embed) after each batch.
        Raises:
            FileNotFoundError / NotADirectoryError: a root does not exist.
            IndexBusy: another process held the write lock for ``WRITE_LOCK_TIMEOUT_S``.
        """
        from sleuth.ingest.names import index_name, is_valid_text
        from sleuth.ingest.pool import prestart

        prestart()  # a parse worker starts while the index is opened and the roots walked
        started = time.perf_counter()
        paths = [Path(r).expanduser().resolve() for r in roots]
        for p in paths:
            if not p.exists():
                raise FileNotFoundError(f"root does not exist: {p}")
            if not is_valid_text(str(p)):
                raise ConfigError(f"the root {index_name(str(p))} has a name that is not valid UTF-8: index a folder"
                                  " above it (names below a root may be anything) or rename it")
        name = project or paths[0].name or "default"
        pid = project_id_for(name)
        now = now_rfc3339()
        report = IndexReport(project=pid, roots=[str(p) for p in paths], scanned=0, added=0, updated=0,
                             unchanged=0, removed=0, skipped=[], problems=[], blocks=0, took_s=0.0)
        with self._write_lock.held():
            self.postings.catch_up(self.catalog)
            self.catalog.upsert_project(pid, name, [str(p) for p in paths], now)
            with self.postings.bulk():
                for root in paths:
                    self._index_root(pid, root, report, now, progress)
            self.catalog.mark_indexed(pid, now)
            report.embedded = self.embed_pending(embed_progress)
            self.warm_lanes()
        report.took_s = round(time.perf_counter() - started, 3)
        return report

    def update_paths(self, project: str, root: str | Path, rel_paths: Iterable[str],
                     embed_progress: Callable[[int, int], None] | None = None) -> IndexReport:
        """Re-index only ``rel_paths`` (files or folders, relative to ``root``) of one of ``project``'s roots.

        What a file watcher calls: each path is looked at as a whole-root ``index`` would (same
        ignore rules, change detection and per-file handling); documents at or under a path that
        no longer exists (a deleted or renamed file, a deleted folder) are removed. ``""`` stands
        for the whole root; a root that no longer exists loses all its documents.

        Args:
            project: a project id (see ``sleuth projects``).
            root: one of the project's roots, as listed by ``sleuth projects``.
            rel_paths: ``/``-separated paths relative to ``root``.
        Raises:
            ProjectNotFound: no such project, or ``root`` is not one of its roots.
            IndexBusy: another process held the write lock for ``WRITE_LOCK_TIMEOUT_S``.
        """
        from sleuth.ingest.walk import normalize_rel_paths

        started = time.perf_counter()
        root_path = Path(root).expanduser().resolve()
        root_key = str(root_path)
        rels = normalize_rel_paths(rel_paths)
        report = IndexReport(project=project, roots=[root_key], scanned=0, added=0, updated=0, unchanged=0,
                             removed=0, skipped=[], problems=[], blocks=0, took_s=0.0)
        if not rels:
            return report
        if root_key not in self.catalog.roots().get(project, []):
            raise ProjectNotFound(f"{root_key} is not a root of project {project!r} (see `sleuth projects`)")
        now = now_rfc3339()
        with self._write_lock.held():
            self.postings.catch_up(self.catalog)
            if rels == [""] or not root_path.is_dir():
                self._index_root(project, root_path, report, now, None)
            else:
                run = self._root_run(project, root_path, report, now, None, rels)
                self._index_items(run, self._candidates(root_path, run.confine, rels))
                gone = [state.doc_id for (_, rel), state in run.known.items() if rel not in run.seen]
                self._finish_root(run, gone)
                self.catalog.replace_skips(project, root_key, rels, run.skips, now)
            self.catalog.mark_indexed(project, now)
            report.embedded = self.embed_pending(embed_progress)
            self.warm_lanes()
        report.took_s = round(time.perf_counter() - started, 3)
        return report

    def _root_run(self, pid: str, root: Path, report: IndexReport, now: str,
                  progress: Callable[[str], None] | None, rel_paths: Sequence[str] | None = None) -> _RootRun:
        """A pass over ``root`` (over ``rel_paths`` under it only, when given)."""
        root_key = str(root)
        root_label = root.name if root.is_dir() or not root.exists() else root.parent.name
        known = self.catalog.file_states(pid, [root_key], rel_paths)
        confine = [Path(r) for r in self.catalog.roots().get(pid, [root_key])]
        return _RootRun(pid, root_key, root_label, known, report, now, progress, confine)

    def _index_root(self, pid: str, root: Path, report: IndexReport, now: str,
                    progress: Callable[[str], None] | None) -> None:
        """Index every file under ``root``; documents of files gone from it are removed (all of
        them when ``root`` itself is gone)."""
        run = self._root_run(pid, root, report, now, progress)
        if root.exists():
            self._index_items(run, self._candidates(root, run.confine))
        gone = [state.doc_id for (_, rel), state in run.known.items() if rel not in run.seen]
        self._finish_root(run, gone)
        self.catalog.record_skips(pid, run.root_key, run.skips, now)

    def _index_items(self, run: _RootRun, items: Iterable[_Candidate | SkippedFile]) -> None:
        """Index a root's candidates in order; what needs parsing is parsed by worker processes
        under the per-file time and memory bounds (sleuth.ingest.guard), beside this loop."""
        from sleuth.ingest.pool import parse_in_order

        for item, outcome in parse_in_order((item, self._parse_job(run, item)) for item in items):
            self._index_file(run, item, outcome)

    @staticmethod
    def _parse_job(run: _RootRun, item: _Candidate | SkippedFile) -> ParseJob | None:
        """The job that reads and parses ``item``, or None when it needs no reading (skipped, not
        indexed, or unchanged since the catalog's record of it)."""
        from sleuth.ingest import kind_for_path

        if isinstance(item, SkippedFile) or kind_for_path(item[0]) is None:
            return None
        rel, mtime_ns, size_bytes, job, _in_archive = item
        state = run.known.get((run.root_key, rel))
        if state and state.mtime_ns == mtime_ns and state.size_bytes == size_bytes:
            return None
        return dataclasses.replace(job, known_hash=state.content_hash) if state else job

    def _index_file(self, run: _RootRun, item: _Candidate | SkippedFile, outcome: Outcome | None) -> None:
        """One candidate of a root, with the outcome of its parse job (see :meth:`_parse_job`): skipped
        with a reason, unchanged, or parsed into the next batch (written when the batch is full)."""
        from sleuth.ingest import kind_for_path
        from sleuth.ingest.guard import Failed

        report = run.report
        report.scanned += 1
        if isinstance(item, SkippedFile):
            run.skips.append((item.path, item.reason))
            return
        rel, mtime_ns, size_bytes, _job, in_archive = item
        kind = kind_for_path(rel)
        if kind is None:
            run.skips.append((rel, "unsupported format"))
            return
        run.seen.add(rel)
        state = run.known.get((run.root_key, rel))
        if outcome is None:  # unchanged: same time and size as indexed
            report.unchanged += 1
            if in_archive:  # the archive was read again: its members are as current as it is
                run.verified.append(state.doc_id)  # type: ignore[union-attr]
            return
        if isinstance(outcome, Failed):
            run.skips.append((rel, outcome.reason))
            return
        content_hash = outcome.content_hash
        if state and state.content_hash == content_hash:
            run.touched.append((state.doc_id, mtime_ns, size_bytes))
            report.unchanged += 1
            return
        parsed: ParsedDocument = outcome.document
        doc = self._document_row(run.pid, run.root_key, run.root_label, rel, parsed, content_hash,
                                 mtime_ns, size_bytes, run.now)
        for problem in parsed.problems:  # after _document_row, which may add one
            report.problems.append({"path": rel, "problem": problem})
            run.problems.append((rel, problem))
        run.batch.append((doc, make_blocks(run.pid, doc.doc_id, doc.title, parsed)))
        if state:
            report.updated += 1
        else:
            report.added += 1
        if run.progress:
            run.progress(rel)
        if len(run.batch) >= FLUSH_DOCUMENTS:
            report.blocks += self._flush(run.batch, run.now)
            run.batch = []

    def _finish_root(self, run: _RootRun, gone: Sequence[str]) -> None:
        """Write what is left of a root's run and remove the documents ``gone``."""
        report = run.report
        report.blocks += self._flush(run.batch, run.now)
        run.batch = []
        self.catalog.touch_documents(run.touched)
        self.catalog.mark_verified(run.verified, run.now)
        if gone:
            gen = self.catalog.delete_documents(gone)
            self.postings.apply([], gone, [], gen)
            report.removed += len(gone)
        self.catalog.record_problems(run.pid, run.root_key, run.problems, run.now)
        report.skipped.extend({"path": p, "reason": r} for p, r in run.skips)

    def _candidates(self, root: Path, confine: Sequence[Path], rel_paths: Sequence[str] | None = None,
                    ) -> Iterator[_Candidate | SkippedFile]:
        """Files under ``root`` (only ``rel_paths`` under it when given) as ``(rel_path, mtime_ns,
        size_bytes, job, in_archive)`` (``job``: the ParseJob that reads it), archives expanded to
        their members (``archive.tar.gz/inner/path.md``), or SkippedFile with a reason. The index
        folder, when inside ``root``, is left out; nothing outside ``confine`` (the project's roots) is read."""
        from sleuth.ingest import walk_roots
        from sleuth.ingest.archive import ArchiveError, is_archive, iter_archive
        from sleuth.ingest.confine import Roots
        from sleuth.ingest.guard import ParseJob
        from sleuth.ingest.walk import max_bytes_for, walk_paths

        excludes: list[str] = []
        if root.is_dir() and self.index_dir.is_relative_to(root) and self.index_dir != root:
            excludes.append(f"/{self.index_dir.relative_to(root).as_posix()}/")
        items = (walk_roots([root], excludes, confine) if rel_paths is None
                 else walk_paths(root, rel_paths, excludes, confine))
        real_roots = Roots(confine)
        for item in items:
            if isinstance(item, SkippedFile):
                yield item
            elif is_archive(item.rel_path):
                try:
                    for member in iter_archive(item.path, item.identity, real_roots):
                        if isinstance(member, SkippedFile):
                            yield SkippedFile(f"{item.rel_path}/{member.path}", member.reason)
                        else:
                            rel = f"{item.rel_path}/{member.name}"
                            yield rel, member.mtime_ns, len(member.data), ParseJob(rel, data=member.data), True
                except ArchiveError as exc:
                    yield SkippedFile(item.rel_path, str(exc))
            else:
                job = ParseJob(item.rel_path, str(item.path), identity=item.identity, roots=real_roots.real,
                               max_bytes=max_bytes_for(item.rel_path))
                yield item.rel_path, item.mtime_ns, item.size_bytes, job, False

    @staticmethod
    def _document_row(pid: str, root_key: str, root_label: str, rel: str, parsed: ParsedDocument,
                      content_hash: str, mtime_ns: int, size_bytes: int, now: str) -> DocumentRow:
        """The catalog row of a parsed file, with its role, kind label, source family, recorded
        time (a bad front-matter date is added to ``parsed.problems``), links and entities."""
        from sleuth.ingest.roles import infer_role, kind_label, recorded_time, source_family

        recorded_ns, date_problem = recorded_time(parsed.front_matter, mtime_ns)
        if date_problem:
            parsed.problems.append(date_problem)
        return DocumentRow(
            doc_id=doc_id_for(pid, root_label, rel), project_id=pid, root=root_key, rel_path=rel,
            title=parsed.title or Path(rel).name, tags=list(parsed.tags), kind=parsed.kind,
            front_matter=dict(parsed.front_matter), mtime_ns=mtime_ns, size_bytes=size_bytes,
            content_hash=content_hash, revision=content_hash[:12], text=parsed.text, generation=0,
            indexed_at=now, role=infer_role(rel, parsed.kind, parsed.front_matter),
            label=kind_label(rel, parsed.kind, parsed.front_matter), family=source_family(parsed.kind),
            recorded_ns=recorded_ns, links=tuple((k.target, k.relation, k.label) for k in parsed.links),
            entities=tuple(parsed.entities),
        )

    def _flush(self, batch: list[tuple[DocumentRow, list[tuple[Block, str]]]], now: str) -> int:
        """Write a batch to the catalog, then to the postings (catalog first: see DESIGN)."""
        if not batch:
            return 0
        gen = self.catalog.write_documents(batch, now)
        blocks = [
            IndexedBlock(block, terms, doc.title, doc.tags, doc.rel_path)
            for doc, pairs in batch
            for block, terms in pairs
        ]
        self.postings.apply(blocks, [], [doc.doc_id for doc, _ in batch], gen)
        return len(blocks)

    def index_records(self, project: str, records: Iterable[Record]) -> IndexReport:
        """Index documents given as text (replacing same-path records of ``project``).

        Used by ``sleuth eval`` for BEIR corpora: each record is parsed as its ``kind`` says
        (``text`` or ``markdown``) with ``rel_path`` as its path. A record whose title and text
        are unchanged is left alone, so re-indexing the same corpus changes nothing.
        """
        from sleuth.ingest import parse_document

        started = time.perf_counter()
        pid = project_id_for(project)
        now = now_rfc3339()
        report = IndexReport(project=pid, roots=[], scanned=0, added=0, updated=0, unchanged=0,
                             removed=0, skipped=[], problems=[], blocks=0, took_s=0.0)
        with self._write_lock.held():
            self.postings.catch_up(self.catalog)
            self.catalog.upsert_project(pid, project, [], now)
            with self.postings.bulk():
                known = self.catalog.file_states(pid, [""])
                batch: list[tuple[DocumentRow, list[tuple[Block, str]]]] = []
                for rec in records:
                    report.scanned += 1
                    state = known.get(("", rec.rel_path))
                    if state is not None and state.content_hash == _hash(rec.title, rec.text):
                        report.unchanged += 1
                        continue
                    suffix = ".md" if rec.kind == "markdown" else ".txt"
                    parsed = parse_document(rec.rel_path + suffix, rec.text)
                    if rec.title:
                        parsed.title = rec.title
                    data_hash = _hash(rec.title, rec.text)
                    doc = self._document_row(pid, "", "", rec.rel_path, parsed, data_hash, 0, len(rec.text), now)
                    batch.append((doc, make_blocks(pid, doc.doc_id, doc.title, parsed)))
                    if state is None:
                        report.added += 1
                    else:
                        report.updated += 1
                    if len(batch) >= FLUSH_DOCUMENTS:
                        report.blocks += self._flush(batch, now)
                        batch = []
                report.blocks += self._flush(batch, now)
            self.catalog.mark_indexed(pid, now)
            report.embedded = self.embed_pending()
            self.warm_lanes()
        report.took_s = round(time.perf_counter() - started, 3)
        return report

    # ================================================================== reading

    def project_ids(self) -> list[str]:
        return sorted(self.catalog.roots())  # no document counts: this runs on every search

    def projects(self) -> list[ProjectInfo]:
        """Every project of the index with its roots and counts."""
        return [ProjectInfo(**p) for p in self.catalog.projects()]  # type: ignore[arg-type]

    def _check_projects(self, projects: Sequence[str] | None) -> tuple[str, ...] | None:
        if projects is None:
            return None
        known = set(self.project_ids())
        missing = [p for p in projects if p not in known]
        if missing:
            raise ProjectNotFound(f"project not found: {', '.join(missing)} (see `sleuth projects`)")
        return tuple(dict.fromkeys(projects))

    def search(self, request: SearchRequest | str, **kwargs: object) -> SearchResponse:
        """Run a search: every configured lane in parallel, fused by weighted RRF, grouped to documents.

        Args:
            request: a SearchRequest, or a query string with SearchRequest fields as keywords.
        Raises:
            QueryError: the query is too long or a parameter is invalid.
            ProjectNotFound: a requested project does not exist.
            ConfigError: an unknown lane was requested.
        """
        started = time.perf_counter()
        req = request if isinstance(request, SearchRequest) else SearchRequest(query=request, **kwargs)  # type: ignore[arg-type]
        parsed = parse_query(req.query)
        cfg = self.config.with_lanes(req.lanes)
        projects = self._check_projects(req.projects)
        if parsed.is_empty:
            return SearchResponse(
                query=req.query, terms=[], result_count=0, hits=[], lanes=[],
                took_ms=round((time.perf_counter() - started) * 1000, 3),
                notice="the query has no searchable terms (only stop words, punctuation or blanks)",
            )
        self._catch_up(blocking=False)
        depth = max(cfg.lane_depth_min_blocks, req.limit * cfg.lane_depth_blocks_per_result)
        lane_query = LaneQuery(parsed, depth, projects)
        rows = _SearchRows(self.catalog)
        snippet_terms = set(parsed.terms) | {t for p in parsed.phrases for t in analyze(" ".join(p))}
        snippets: dict[str, Snippet] = {}

        def snippet_of(block: HitBlock) -> Snippet:
            if block.block_id not in snippets:
                snippets[block.block_id] = make_snippet(block.text, snippet_terms)
            return snippets[block.block_id]

        def prefetch(early: list[RankedList]) -> None:
            # While the vector lane runs: the rows and snippets of the lexical lanes' best documents,
            # most of which the fused ranking keeps (the rest are read after it).
            fused = rrf(early, doc_of_block, cfg.lane_weights, cfg.rrf_k, limit=req.limit)
            for _d, block in self._existing(fused, req.limit, rows):
                if req.snippets:
                    snippet_of(block)

        answers = self._run_lanes(cfg.lanes, lane_query, prefetch)
        unavailable = {name: a for name, a in answers.items() if isinstance(a, str)}
        lists = [a for a in answers.values() if not isinstance(a, str)]
        run_lanes = [name for name in cfg.lanes if name not in unavailable]
        # Some fused documents may have been deleted since the lanes answered (see _existing): a few
        # more than the limit are fused, so that deleted ones leave no hole.
        fused = rrf(lists, doc_of_block, cfg.lane_weights, cfg.rrf_k, limit=req.limit + FUSED_SPARE_DOCUMENTS)
        hits: list[Hit] = []
        for d, block in self._existing(fused, req.limit, rows):
            snip = snippet_of(block) if req.snippets else None
            # Built from the catalog's and the fusion's own typed values: no validation needed.
            hits.append(Hit.model_construct(
                rank=len(hits) + 1, doc_id=d.doc_id, project=block.project_id, path=block.rel_path,
                title=block.title, kind=block.kind, tags=block.tags, score=d.score, sources=d.sources,
                block_ids=d.block_ids, best_block_id=d.best_block_id, heading_path=list(block.heading_path),
                lines=(block.start_line, block.end_line), snippet=snip.text if snip else "",
                highlights=snip.highlights if snip else [],
                explain=[LaneContribution.model_construct(lane=t.lane, rank=t.rank, weight=t.weight,
                                          contribution=t.contribution, lane_score=t.lane_score)
                         for t in d.trace] if req.explain else None,
            ))
        notice = None
        if not hits and cfg.lanes == ("exact",) and not parsed.phrases and not parsed.identifiers:
            notice = "the exact lane matches only quoted phrases and identifiers (snake_case, a.b, camelCase)"
        elif set(cfg.lanes) & POSTINGS_LANES and self.postings.generation() < self.catalog.generation():
            notice = ("an indexing run is in progress: the bm25, index and exact lanes see its documents"
                      " only when it ends (the tfidf and vector lanes see them already)")
        if "vector" in run_lanes and self._vectors is not None and self._vectors.pending_docs:
            missing = (f"{len(self._vectors.pending_docs)} document(s) have no vector yet, so the vector lane"
                       " does not see them (`sleuth index` embeds them)")
            notice = missing if notice is None else f"{notice}; {missing}"
        return SearchResponse(
            query=req.query, terms=list(parsed.terms), phrases=[" ".join(p) for p in parsed.phrases],
            result_count=len(hits), hits=hits, lanes=run_lanes,
            took_ms=round((time.perf_counter() - started) * 1000, 3), notice=notice, unavailable_lanes=unavailable,
        )

    def _run_lanes(self, lanes: Sequence[str], q: LaneQuery,
                   while_waiting: Callable[[list[RankedList]], None] | None = None) -> dict[str, RankedList | str]:
        """Every lane's answer (see :meth:`run_lane`), by lane name, in ``lanes`` order.

        One lane runs in the pool beside the others, which run one after the other in this thread:
        the vector lane when asked for (it embeds the query on one core; running the other lanes in
        parallel as well would take cycles from the embedding, the longest part of the search), else
        the tfidf lane (numpy sums, mostly outside the GIL, beside tantivy's searches, also outside
        it). Lexical fusion at 200k blocks: 3.0 ms with every lane on a thread of its own, 2.7 ms so.
        If the vector lane is still running when the others are done, ``while_waiting`` gets their lists.
        """
        beside = "vector" if "vector" in lanes else "tfidf" if "tfidf" in lanes else None
        if beside is None or len(lanes) == 1:
            return {name: self.run_lane(name, q) for name in lanes}
        future = self._pool.submit(self.run_lane, beside, q)
        answers = {name: self.run_lane(name, q) for name in lanes if name != beside}
        if beside == "vector" and while_waiting is not None and not future.done():
            early = [a for a in answers.values() if not isinstance(a, str)]
            if early:
                while_waiting(early)
        answers[beside] = future.result()
        return {name: answers[name] for name in lanes}

    def _existing(self, fused: list[FusedDocument], limit: int,
                  rows: _SearchRows | None = None) -> list[tuple[FusedDocument, HitBlock]]:
        """The first ``limit`` fused documents that exist now, each with its best block that exists now.

        The lanes may answer from a slightly older state than the catalog: the postings commit after
        the catalog (see ``_flush``), and a lane cache may have been built just before a write. A
        document deleted since is dropped (the next one takes its place); a document rewritten since
        keeps its place, with its matched blocks that still exist, else its current first block. It
        is never dropped only because its block ids changed (that made a search for a file being
        re-indexed come back empty).
        """
        rows = rows or _SearchRows(self.catalog)
        out: list[tuple[FusedDocument, HitBlock]] = []
        for start in range(0, len(fused), max(limit, 1)):
            part = fused[start : start + limit]
            blocks = rows.blocks([b for d in part for b in d.block_ids])
            for d in part:
                alive = [b for b in d.block_ids if b in blocks]
                if not alive:  # rewritten (or deleted) between the lanes' answer and now
                    current = self.catalog.first_hit_block(d.doc_id)
                    if current is None:
                        continue  # deleted: the next document takes its place
                    blocks[current.block_id] = current
                    alive = [current.block_id]
                if alive != d.block_ids:
                    best = d.best_block_id if d.best_block_id in alive else alive[0]
                    d = dataclasses.replace(d, block_ids=alive, best_block_id=best)
                out.append((d, blocks[d.best_block_id]))
                if len(out) == limit:
                    return out
        return out

    def _vector_status(self) -> dict[str, object]:
        embedder = self.embedder()
        if embedder is None:
            return {"available": False, "reason": self._embedder_error}
        have, total = self.catalog.vector_counts(embedder.name)
        # From the counts: status need not load (or build) the vector matrix to say this.
        reason = _no_vectors_reason(embedder.name) if total and not have else None
        return {"available": reason is None, "reason": reason, "model": embedder.name,
                "dimensions": embedder.dim, "blocks_with_vectors": have, "blocks": total}

    def get(self, doc_id: str, projects: Sequence[str] | None = None) -> DocumentContent:
        """The whole stored document ``doc_id`` (restricted to ``projects`` when given).

        Raises:
            DocumentNotFound: no such document (or not in ``projects``).
        """
        doc = self.catalog.document(doc_id.strip())
        if doc is None or (projects is not None and doc.project_id not in projects) or not self.confined(doc):
            raise DocumentNotFound(f"document not found: {doc_id!r}")
        return DocumentContent(
            doc_id=doc.doc_id, project=doc.project_id, path=doc.rel_path, root=doc.root, title=doc.title,
            kind=doc.kind, tags=doc.tags, front_matter=doc.front_matter,
            mtime=_ns_to_rfc3339(doc.mtime_ns), revision=doc.revision, content_hash=doc.content_hash,
            text=doc.text,
            blocks=[
                {"block_id": b.block_id, "heading_path": list(b.heading_path), "lines": [b.start_line, b.end_line],
                 "chars": [b.start_char, b.end_char]}
                for b in self.catalog.blocks_of(doc.doc_id)
            ],
        )

    def confined(self, doc: DocumentRow) -> bool:
        """Whether the file of ``doc`` does not lead outside its project's roots now (an index made
        before symlinks were judged may hold such a document; it is never returned). See
        :func:`sleuth.ingest.confine.confined_path`."""
        from sleuth.ingest.confine import Roots, confined_path

        return confined_path(doc.root, doc.rel_path, Roots(self.catalog.roots().get(doc.project_id, [])))

    def status(self, files: bool = False) -> dict[str, object]:
        """Index health: counts, lane generations, projects, skipped files with reasons, and
        per-root coverage (indexed / skipped / failed, last indexed).

        Args:
            files: also list every file (``files``): indexed ones with their last-indexed time
                and freshness (one ``stat`` each), skipped and failed ones with their reason.
        """
        from sleuth.freshness import coverage_summary, file_coverage, skip_state

        counts = self.catalog.counts()
        projects = self.projects()
        skipped = self.catalog.skipped()
        out: dict[str, object] = {
            "index_dir": str(self.index_dir),
            **counts,
            "generation": self.catalog.generation(),
            "postings_generation": self.postings.generation(),
            "lanes": list(self.config.lanes),
            "vector_lane": self._vector_status(),
            "projects": [p.model_dump() for p in projects],
            "skipped_files": [{**s, "state": skip_state(s["reason"])} for s in skipped],
            "problems": self.catalog.problems(),
            "coverage": coverage_summary([(p.project_id, r) for p in projects for r in p.roots],
                                         self.catalog.indexed_counts(), skipped),
        }
        if files:
            out["files"] = file_coverage(self.catalog.indexed_files(), skipped)
        return out

