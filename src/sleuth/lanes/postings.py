"""The postings of the lexical lanes, kept in tantivy (a Rust full-text engine).

One tantivy index per sleuth index holds one tantivy document per block. sleuth tokenizes text
itself (``sleuth.text``) and hands tantivy whitespace-joined terms, analysed with tantivy's
built-in ``whitespace`` tokenizer; no custom analyzer needs registering in the processes that open
the index, and user text never reaches tantivy's query parser: queries are built from terms.

Fields: ``block_id`` (stored), ``doc_id`` and ``project`` (raw, for deletes and filters), ``body``
(analysed terms with positions: the bm25 lane), ``exact`` (surface tokens with positions: the
exact lane), ``title``, ``heading``, ``tags``, ``path`` (analysed terms: the index lane).

The index records the catalog generation it reflects in ``generation.txt`` beside it, written
after each tantivy commit; on open, :meth:`Postings.catch_up` replays newer catalog changes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Collection, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import tantivy

from sleuth.errors import IndexReadOnly, storage_error
from sleuth.store import scratch
from sleuth.store.catalog import Catalog, IndexedBlock
from sleuth.store.scratch import replacing
from sleuth.text import analyze, surface_tokens
from sleuth.text.analyze import joined_pattern, joined_prefixes, joined_terms, joined_witness

#: Memory budget of the tantivy writer, in bytes (tantivy's minimum is 15 MB per thread).
WRITER_HEAP_BYTES = 128 * 1024 * 1024
#: tantivy writer threads (the machine has 2 cores).
WRITER_THREADS = 1
#: Blocks added between two tantivy commits while catching up.
CATCH_UP_BATCH_BLOCKS = 20_000
#: Memory budget of the one writer an indexing run keeps open (see :meth:`Postings.bulk`), in
#: bytes: tantivy starts a new segment each time it is used up.
BULK_WRITER_HEAP_BYTES = 512 * 1024 * 1024
#: An indexing run commits its postings every this many blocks (and at its end). Each commit starts
#: a segment (200k blocks, bm25 p50: 1.77 ms in one segment, 2.09 ms committing every 100k).
BULK_COMMIT_BLOCKS = 1_000_000
#: ... or once this many document deletes are staged: tantivy keeps each staged delete (a term
#: query, about 1.2 KB with its scoring cache) until the next commit, so 1,000,000 rewritten
#: documents held 1.2 GB; committed every 100,000, at most about 120 MB.
BULK_COMMIT_DELETES = 100_000

TEXT_FIELDS = ("body", "exact", "title", "heading", "tags", "path")


def _schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("block_id", stored=True, tokenizer_name="raw")
    # The block id as two numbers, read from fast (columnar) fields instead of stored documents.
    sb.add_unsigned_field("doc_key", fast=True)
    sb.add_unsigned_field("block_key", fast=True)
    sb.add_text_field("doc_id", stored=False, tokenizer_name="raw")
    sb.add_text_field("project", stored=False, tokenizer_name="raw")
    sb.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="position")
    sb.add_text_field("exact", stored=False, tokenizer_name="whitespace", index_option="position")
    for name in ("title", "heading", "tags", "path"):
        sb.add_text_field(name, stored=False, tokenizer_name="whitespace", index_option="freq")
    return sb.build()


class Hits(NamedTuple):
    """Tantivy's top blocks: their ids (``<doc_id>:<suffix>``) and scores, best first."""

    block_ids: list[str]
    scores: list[float]


#: What tantivy says when its indexing thread died (of an I/O error, most likely).
_WRITER_KILLED = "index writer was killed"


class _WriterFailed(Exception):
    """A tantivy writer died; ``cause`` is the error its indexing thread ended with."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


@dataclass
class _BulkRun:
    """The writer of an indexing run and what it staged since its last commit."""

    writer: tantivy.IndexWriter
    added: int = 0
    deletes: int = 0
    generation: int | None = None


class Postings:
    """A tantivy index of blocks. Reads are thread-safe; writes need the index's write lock.

    Args:
        path: folder of the tantivy index; created (or rebuilt when unreadable) as needed.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.schema = _schema()
        self._lock = threading.Lock()
        self._generation_file = path.parent / f"{path.name}.generation"
        self._generation_stamp: tuple[int, int, int] | None = None
        self._generation_value = 0
        #: A folder of links to the postings' files, when the index folder cannot be written (see
        #: :meth:`_open_read_only`); None otherwise.
        self.read_only_view: Path | None = None
        #: Why the postings were opened read-only, else None.
        self.read_only: str | None = None
        fresh = True
        try:
            fresh = not (path / "meta.json").is_file()
            path.mkdir(parents=True, exist_ok=True)
            self.index = tantivy.Index(self.schema, path=str(path), reuse=True)
            if fresh:
                self._set_generation(0)  # a new or deleted index holds nothing yet: refill it
            self._searcher = self.index.searcher()
        except (ValueError, OSError) as exc:
            problem = storage_error(exc, path.parent, "the postings")
            if problem is None:
                self._reset()  # unreadable: rebuilt from the catalog
                self._searcher = self.index.searcher()
            elif isinstance(problem, IndexReadOnly) and not fresh:
                self._open_read_only()
                self.read_only = str(problem)
            else:
                raise problem from exc  # never thrown away for want of space
        self._searcher_generation = -1
        self._bulk: _BulkRun | None = None
        #: The last searches given a ``memo_key`` (see :meth:`search`), least recent first.
        self._memo: OrderedDict[Hashable, tuple[tantivy.Searcher, int, Hits]] = OrderedDict()
        self._memo_lock = threading.Lock()
        #: Joined spellings of the last quoted phrases (see :meth:`_joined_spellings`), by searcher.
        self._spellings_memo: OrderedDict[tuple[str, ...], tuple[tantivy.Searcher, list[_Spelling]]] = OrderedDict()

    def _open_read_only(self) -> None:
        """Open the postings of a folder that cannot be written, for reading.

        tantivy takes a lock file beside the index even to read it, which a read-only folder does
        not allow; so the index is opened through a private folder (in the temporary folder)
        holding links to its files and a lock file of its own. Removed by :meth:`close`.
        """
        temp = Path(tempfile.gettempdir())
        scratch.sweep(temp, ["sleuth-postings.*" + scratch.SCRATCH_SUFFIX])  # views of killed processes
        self.read_only_view = Path(tempfile.mkdtemp(prefix=f"sleuth-postings.{os.getpid()}.",
                                                    suffix=scratch.SCRATCH_SUFFIX, dir=temp))
        try:
            self._link_view()
            self.index = tantivy.Index(self.schema, path=str(self.read_only_view), reuse=True)
            self._searcher = self.index.searcher()
        except BaseException:
            self.close()
            raise

    def _link_view(self) -> None:
        """Link every file of the postings not linked yet into the read-only view (tantivy's lock
        files excepted: the view has its own)."""
        assert self.read_only_view is not None
        for entry in self.path.iterdir():
            link = self.read_only_view / entry.name
            if entry.is_file() and not entry.name.startswith(".tantivy-") and not link.is_symlink():
                link.symlink_to(entry)

    def close(self) -> None:
        """Remove the read-only view, if any (the postings cannot be searched after)."""
        if self.read_only_view is not None:
            shutil.rmtree(self.read_only_view, ignore_errors=True)
            self.read_only_view = None

    def _reset(self) -> None:
        """Throw away an unreadable index; the catalog will refill it (generation 0)."""
        shutil.rmtree(self.path, ignore_errors=True)
        self.path.mkdir(parents=True)
        self.index = tantivy.Index(self.schema, path=str(self.path), reuse=False)
        self._set_generation(0)

    # ------------------------------------------------------------------ generations

    def generation(self) -> int:
        """The catalog generation these postings reflect (0 when unknown).

        The file is re-read only when its stat changes (it is replaced atomically on each commit),
        so this costs one ``stat`` per call on the query path.
        """
        try:
            st = self._generation_file.stat()
            stamp = (st.st_mtime_ns, st.st_ino, st.st_size)
            if stamp != self._generation_stamp:
                self._generation_value = int(self._generation_file.read_text().strip() or 0)
                self._generation_stamp = stamp
            return self._generation_value
        except (OSError, ValueError):
            self._generation_stamp = None
            return 0

    def _set_generation(self, generation: int) -> None:
        with replacing(self._generation_file) as tmp:
            tmp.write_text(str(generation))

    # ------------------------------------------------------------------ writing

    def _document(self, ib: IndexedBlock, title_terms: str, path_terms: str, tag_terms: str) -> tantivy.Document:
        b = ib.block
        heading = " ".join(analyze_heading(b.heading_path))
        doc_key, block_key = block_id_keys(b.block_id)
        doc = tantivy.Document(
            block_id=b.block_id,
            doc_id=b.doc_id,
            project=b.project_id,
            body=ib.terms,
            exact=ib.exact if ib.exact is not None else " ".join(surface_tokens(b.text)),
            title=title_terms,
            heading=heading,
            tags=tag_terms,
            path=path_terms,
        )
        doc.add_unsigned("doc_key", doc_key)
        doc.add_unsigned("block_key", block_key)
        return doc

    def apply(self, catalog_blocks: Iterable[IndexedBlock], deleted_doc_ids: Iterable[str],
              rewritten_doc_ids: Iterable[str], generation: int) -> None:
        """Delete ``deleted_doc_ids`` and ``rewritten_doc_ids``, add blocks, commit, record ``generation``.

        Inside :meth:`bulk`, the changes go to the run's writer and are committed with the run's next
        commit instead.
        """
        if self._bulk is not None:
            gone = {*deleted_doc_ids, *rewritten_doc_ids}
            self._bulk.added += self._write(self._bulk.writer, catalog_blocks, gone, ())
            self._bulk.deletes += len(gone)
            self._bulk.generation = generation
            if self._bulk.added >= BULK_COMMIT_BLOCKS or self._bulk.deletes >= BULK_COMMIT_DELETES:
                self._bulk_commit()
            return
        with self._writing():
            writer = self.index.writer(heap_size=WRITER_HEAP_BYTES, num_threads=WRITER_THREADS)
            try:
                self._write(writer, catalog_blocks, deleted_doc_ids, rewritten_doc_ids, CATCH_UP_BATCH_BLOCKS)
                writer.commit()
                writer.wait_merging_threads()
            except BaseException as exc:
                self._roll_back(writer, exc)
                raise
            self._set_generation(generation)
        self.reload()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Translate the failures of a write (a full disk, a read-only folder: see
        :func:`sleuth.errors.storage_error`), including the cause behind a dead tantivy writer."""
        try:
            yield
        except _WriterFailed as failed:
            problem = storage_error(failed.cause, self.path.parent, "the postings")
            raise (problem or failed.cause) from failed.cause
        except (ValueError, OSError) as exc:
            problem = storage_error(exc, self.path.parent, "the postings")
            if problem is None:
                raise
            raise problem from exc

    @staticmethod
    def _roll_back(writer: tantivy.IndexWriter, exc: BaseException) -> None:
        """Roll ``writer`` back after ``exc``. When ``exc`` only says that tantivy's indexing thread
        died ("An index writer was killed"), raise _WriterFailed with what killed it: a commit of
        the dead writer joins that thread and returns its error, committing nothing."""
        cause: BaseException | None = None
        if isinstance(exc, ValueError) and _WRITER_KILLED in str(exc):
            try:
                writer.commit()
            except ValueError as why:
                cause = why
        with contextlib.suppress(ValueError):
            writer.rollback()
        if cause is not None:
            raise _WriterFailed(cause) from exc

    def _write(self, writer: tantivy.IndexWriter, catalog_blocks: Iterable[IndexedBlock],
               deleted_doc_ids: Iterable[str], rewritten_doc_ids: Iterable[str], commit_every: int = 0) -> int:
        """Stage deletions and additions in ``writer`` (committing every ``commit_every`` blocks
        when it is not 0); returns how many blocks were added."""
        for doc_id in {*deleted_doc_ids, *rewritten_doc_ids}:
            writer.delete_documents_by_term("doc_id", doc_id)
        added = 0
        cache: dict[str, tuple[str, str, str]] = {}
        for ib in catalog_blocks:
            fields = cache.get(ib.block.doc_id)
            if fields is None:
                fields = (  # " ".join(analyze(...)) of each
                    joined_terms(ib.title),
                    joined_terms(ib.rel_path.replace("/", " / ")),
                    joined_terms(" ; ".join(ib.tags)),
                )
                cache = {ib.block.doc_id: fields}
            writer.add_document(self._document(ib, *fields))
            added += 1
            if commit_every and added % commit_every == 0:
                writer.commit()
        return added

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        """Keep one writer open for a whole indexing run (write lock held by the caller).

        Every :meth:`apply` inside goes to it; the postings are committed (and their generation
        recorded) every ``BULK_COMMIT_BLOCKS`` blocks and when the run ends. A run thus leaves a few
        large segments instead of one small segment per batch merged in the background: 200k
        blocks gave 1 segment instead of 9, and a bm25 search p50 1.8 ms instead of 2.3 ms. Until
        a commit the catalog is ahead of the postings, which a crash or an error leaves to
        :meth:`catch_up`, as after any interrupted write.
        """
        if self._bulk is not None:  # already in a run
            yield
            return
        with self._writing():
            self._bulk = _BulkRun(self.index.writer(heap_size=BULK_WRITER_HEAP_BYTES, num_threads=WRITER_THREADS))
            try:
                yield
                self._bulk_commit()
                self._bulk.writer.wait_merging_threads()
            except BaseException as exc:
                self._roll_back(self._bulk.writer, exc)
                raise
            finally:
                self._bulk = None

    def _bulk_commit(self) -> None:
        run = self._bulk
        assert run is not None
        if run.generation is None:
            return
        run.writer.commit()
        self._set_generation(run.generation)
        run.added, run.deletes, run.generation = 0, 0, None
        self.reload()

    def catch_up(self, catalog: Catalog) -> bool:
        """Bring the postings up to the catalog's generation; True when anything was replayed."""
        with catalog.read():  # one snapshot: the changes up to ``target``, whatever commits meanwhile
            target = catalog.generation()
            current = self.generation()
            if current > target:
                # Postings newer than the catalog: the catalog was replaced; start over from it.
                self._reset()
                current = 0
            if current == target:
                return False
            written, deleted = catalog.changes_since(current)
            self.apply(catalog.indexed_blocks(current), deleted, written, target)
        return True

    # ------------------------------------------------------------------ reading

    def reload(self) -> None:
        """Pick up commits made by this or another process."""
        with self._lock:
            # The generation is read before reloading: a commit landing in between then leaves the
            # searcher newer than the recorded generation (reloaded again next time), never older
            # (which kept a reader on a stale searcher until the next write).
            generation = self.generation()
            if self.read_only_view is not None:  # segments committed since (through another mount)
                with contextlib.suppress(OSError):
                    self._link_view()
            self.index.reload()
            self._searcher = self.index.searcher()
            self._searcher_generation = generation

    def searcher(self) -> tantivy.Searcher:
        if self._searcher_generation != self.generation():
            self.reload()
        return self._searcher

    def absent_terms(self, terms: Sequence[str], projects: Sequence[str] | None = None,
                     known_held: Collection[str] = ()) -> list[str]:
        """The ``terms`` (index terms, as :func:`sleuth.text.parse_query` makes them) that no block
        of the postings holds in any field a word lane searches (body, title, heading, tags, path),
        in the order given. One term-dictionary lookup per term and field (the body first; the
        other fields only for a term the body lacks), no posting list is read. A term of deleted
        blocks not yet merged away still counts as held (never a term wrongly called absent).

        ``projects`` (None: every project): only blocks of these count, so that the answer tells
        nothing of the words of other projects (a caller limited to some projects must not learn
        whether a word occurs elsewhere). A term the dictionary holds is then looked up in those
        projects' blocks (one search per such term, which reads every block of the projects holding
        it), unless it is in ``known_held``: terms the caller knows those projects hold (the query
        terms found in the blocks a search read, :meth:`sleuth.pipeline.results.Rows.matched_terms`)."""
        searcher = self.searcher()
        absent = {t for t in terms if all(searcher.doc_freq(f, t) == 0 for f in WORD_FIELDS)}
        if projects is not None:
            scope = tantivy.Query.const_score_query(tantivy.Query.boolean_query(
                [(tantivy.Occur.Should, self.term("project", p)) for p in projects]), 0.0)
            for t in dict.fromkeys(terms):
                if t in absent or t in known_held:
                    continue
                held = tantivy.Query.boolean_query([(tantivy.Occur.Should, self.term(f, t)) for f in WORD_FIELDS])
                query = tantivy.Query.boolean_query([(tantivy.Occur.Must, tantivy.Query.const_score_query(held, 0.0)),
                                                     (tantivy.Occur.Must, scope)])
                if not searcher.search(query, 1, count=False).hits:
                    absent.add(t)
        return [t for t in terms if t in absent]

    def forget_searches(self) -> None:
        """Empty the memo of :meth:`search` (benchmarks: each timed search then reads the postings,
        as a search for a new query does; within one search the rm3 lane still reads the bm25
        lane's answer from it)."""
        with self._memo_lock:
            self._memo.clear()

    def blocks_among(self, block_ids: Sequence[str]) -> tantivy.Query:
        """The blocks ``block_ids``, as a filter: one term query each in the block id field (a
        term-set query walks the whole term dictionary of the field: 3.7 ms for 200 blocks among
        1,000,000, against 0.7 ms for 200 term queries)."""
        clauses = [(tantivy.Occur.Should, self.term("block_id", b)) for b in block_ids]
        return clauses[0][1] if len(clauses) == 1 else tantivy.Query.boolean_query(clauses)

    def term(self, field: str, term: str) -> tantivy.Query:
        return tantivy.Query.term_query(self.schema, field, term)

    def any_of(self, field: str, terms: Sequence[str], boost: float = 1.0,
               qtf: Sequence[float] | None = None) -> tantivy.Query | None:
        """Blocks whose ``field`` holds at least one of ``terms``, scored by BM25 summed over the
        matching terms, each term's part multiplied by its ``qtf`` (query term frequency, aligned
        with ``terms``; None = 1 each), then the whole by ``boost``."""
        if not terms:
            return None
        weights = qtf if qtf is not None else [1] * len(terms)
        clauses = [(tantivy.Occur.Should, self.term(field, t) if w == 1 else
                    tantivy.Query.boost_query(self.term(field, t), float(w)))
                   for t, w in zip(terms, weights, strict=True)]
        q = clauses[0][1] if len(clauses) == 1 else tantivy.Query.boolean_query(clauses)
        return tantivy.Query.boost_query(q, boost) if boost != 1.0 else q

    def phrase(self, tokens: Sequence[str]) -> tantivy.Query:
        """Blocks whose ``exact`` field holds ``tokens`` (a quoted phrase's surface tokens)
        consecutively, or with consecutive tokens written joined into one chunk, as a path or an
        identifier writes words: ``("files", "directories")`` is also found in ``files/directories``,
        ``("src", "cli", "py")`` in ``src/cli.py``, ``("get", "user", "name")`` in ``getUserName``
        (the spellings of :func:`sleuth.text.analyze.joined_pattern`). A phrase of one token (an
        identifier quoted as written, ``"files/directories"``) matches that token only.

        The exact field keeps such a chunk whole (one surface token), so the joined spellings are
        looked up in its term dictionary (:meth:`_joined_spellings`) and each one found is a phrase
        of its own, beside the phrase as written; a phrase no block writes joined is the one phrase
        query it always was (same blocks, same scores). Each spelling is scored by BM25 as a phrase,
        and a block matching several gets their sum."""
        tokens = tuple(tokens)
        written = self._consecutive("exact", tokens)
        if len(tokens) == 1:
            return written
        spellings = self._joined_spellings(tokens)
        if not spellings:
            return written
        clauses = [(tantivy.Occur.Should, written)]
        for terms, witnesses in spellings:
            query = self._consecutive("exact", terms)
            if witnesses:
                query = tantivy.Query.boolean_query([(tantivy.Occur.Must, query)] + [
                    (tantivy.Occur.Must, tantivy.Query.const_score_query(self._consecutive("body", w), 0.0))
                    for w in witnesses])
            clauses.append((tantivy.Occur.Should, query))
        return tantivy.Query.boolean_query(clauses)

    def _consecutive(self, field: str, terms: Sequence[str]) -> tantivy.Query:
        """Blocks whose ``field`` holds ``terms`` (one or more) consecutively: a term query for one."""
        if len(terms) == 1:
            return self.term(field, terms[0])
        return tantivy.Query.phrase_query(self.schema, field, list(terms))

    def _joined_spellings(self, tokens: tuple[str, ...]) -> list[_Spelling]:
        """The ways the postings write ``tokens`` with some consecutive tokens joined into one surface
        token, each as ``(exact-field tokens, witnesses)``: ``witnesses`` are the runs of bm25-field
        terms that tell a chunk with camelCase humps from a word written whole
        (:func:`sleuth.text.analyze.joined_witness`), each of which the block must hold too.

        The joined surface tokens are found in the exact field's term dictionary: for each two
        consecutive tokens, the terms beginning with them joined (:func:`joined_prefixes`: eleven
        prefix lookups), kept when they spell a run of the phrase (:func:`joined_pattern`). At most
        ``PHRASE_SPELLINGS_MAX`` spellings, fewest joined surface tokens first; none for a phrase of
        more than ``PHRASE_JOIN_MAX_TOKENS`` tokens (searched as written only). Remembered for the
        current searcher (every lane of a search asks)."""
        if len(tokens) > PHRASE_JOIN_MAX_TOKENS:
            return []
        searcher = self.searcher()
        with self._memo_lock:
            entry = self._spellings_memo.get(tokens)
        if entry is not None and entry[0] is searcher:
            return entry[1]
        # runs[i]: (j, surface token, witness) for each surface token writing tokens[i..j] joined
        runs: list[list[tuple[int, str, tuple[str, ...] | None]]] = [[] for _ in tokens]
        pairs: dict[tuple[str, str], list[str]] = {}  # a pair repeated in the phrase is looked up once
        for i in range(len(tokens) - 1):
            pair = (tokens[i], tokens[i + 1])
            if pair not in pairs:
                found: set[str] = set()
                for prefix in joined_prefixes(*pair):
                    found.update(term for term, _ in searcher.terms_with_prefix("exact", prefix))
                pairs[pair] = sorted(found)
            for term in pairs[pair]:
                for j in range(i + 1, len(tokens)):
                    words = tokens[i : j + 1]
                    if len(term) < sum(map(len, words)):
                        break
                    match = joined_pattern(words).fullmatch(term)
                    if match is not None:
                        witness = joined_witness(match, words)
                        # A camelCase chunk is told from the word written whole by its parts' terms
                        # after its whole's; without any ("inTo", "canNot": stop words) it cannot be,
                        # and the joined spelling is not searched ("in to" does not find "into").
                        if witness is None or len(witness) > 1:
                            runs[i].append((j, term, witness))
                        break
        spellings = _spell(tokens, runs) if any(runs) else []
        with self._memo_lock:
            self._spellings_memo[tokens] = (searcher, spellings)
            while len(self._spellings_memo) > SEARCH_MEMO_ENTRIES:
                self._spellings_memo.popitem(last=False)
        return spellings

    def search(self, scoring: tantivy.Query, k: int, projects: Sequence[str] | None,
               required: Sequence[tantivy.Query] = (), doc_ids: Collection[str] | None = None,
               memo_key: Hashable | None = None) -> Hits:
        """Top ``k`` blocks by ``scoring``, restricted (before the top-k cut) to ``projects``, to
        the documents ``doc_ids`` (None = any) and to blocks matching every ``required`` query
        (which add nothing to the score).

        ``memo_key``: a value naming ``scoring`` and ``required`` exactly (e.g. the field, terms
        and weights they were built from). The answers of the last ``SEARCH_MEMO_ENTRIES`` such
        searches are kept, by key, projects and documents, for as long as the searcher is current;
        an equal search for at most as many blocks is answered from them (the first ``k`` of a
        longer top list are the top ``k``: tantivy breaks score ties by block address either way).
        The rm3 lane's first round is so read from the bm25 lane's answer to the same query.
        """
        if doc_ids is not None and not doc_ids:
            return Hits([], [])
        if memo_key is None:
            return self._search(scoring, k, projects, required, doc_ids, self.searcher())
        searcher = self.searcher()
        key = (memo_key, None if projects is None else tuple(projects),
               None if doc_ids is None else frozenset(doc_ids))
        with self._memo_lock:
            entry = self._memo.get(key)
            if entry is not None and entry[0] is searcher and (entry[1] >= k or len(entry[2].block_ids) < entry[1]):
                self._memo.move_to_end(key)
                return Hits(entry[2].block_ids[:k], entry[2].scores[:k])
        hits = self._search(scoring, k, projects, required, doc_ids, searcher)
        with self._memo_lock:
            self._memo[key] = (searcher, k, hits)
            self._memo.move_to_end(key)
            while len(self._memo) > SEARCH_MEMO_ENTRIES:
                self._memo.popitem(last=False)
        return hits

    def _search(self, scoring: tantivy.Query, k: int, projects: Sequence[str] | None,
                required: Sequence[tantivy.Query], doc_ids: Collection[str] | None,
                searcher: tantivy.Searcher) -> Hits:
        clauses = [(tantivy.Occur.Must, scoring)]
        if doc_ids is not None:
            allowed = tantivy.Query.term_set_query(self.schema, "doc_id", sorted(doc_ids))
            clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(allowed, 0.0)))
        if projects is not None:
            proj = [(tantivy.Occur.Should, self.term("project", p)) for p in projects]
            clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(
                tantivy.Query.boolean_query(proj), 0.0)))
        for q in required:
            clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(q, 0.0)))
        query = scoring if len(clauses) == 1 else tantivy.Query.boolean_query(clauses)
        hits = searcher.search(query, k, count=False).hits
        addrs = [addr for _, addr in hits]
        doc_keys = searcher.fast_field_values("doc_key", addrs)
        block_keys = searcher.fast_field_values("block_key", addrs)
        # The block id from its two numbers ("%" formatting: a third of an f-string's cost per hit).
        return Hits(list(map(BLOCK_ID_FORMAT.__mod__, zip(doc_keys, block_keys, strict=True))),
                    [float(score) for score, _ in hits])


#: A joined spelling of a quoted phrase (see :meth:`Postings._joined_spellings`): its exact-field
#: tokens, and the runs of bm25-field terms a block holding it must hold too.
_Spelling = tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]

#: Longest quoted phrase, in surface tokens, whose joined spellings are looked for (a longer one is
#: searched as written): each two consecutive tokens cost eleven prefix walks of the exact field's
#: term dictionary, and a phrase near ``QUERY_MAX_CHARS`` (1,300 tokens) took 22 s at 1,000,000
#: blocks before this bound.
PHRASE_JOIN_MAX_TOKENS = 16

#: Most joined spellings of one quoted phrase searched (:meth:`Postings.phrase`); a phrase whose
#: words the postings write joined in more ways (many runs of it, each joined several ways) is
#: searched as written and in the first ones, fewest joined surface tokens first.
PHRASE_SPELLINGS_MAX = 64


def _spell(tokens: tuple[str, ...], runs: list[list[tuple[int, str, tuple[str, ...] | None]]]) -> list[_Spelling]:
    """Every way to write ``tokens`` with at least one run of them joined (``runs[i]``: the surface
    tokens writing ``tokens[i..j]``, with their witnesses), fewest joins first, at most
    ``PHRASE_SPELLINGS_MAX``."""
    out: list[tuple[int, tuple[str, ...], tuple[tuple[str, ...], ...]]] = []

    def walk(i: int, terms: tuple[str, ...], witnesses: tuple[tuple[str, ...], ...], joins: int) -> None:
        if len(out) >= PHRASE_SPELLINGS_MAX * 4:  # enough to choose the first ones from
            return
        if i == len(tokens):
            if joins:
                out.append((joins, terms, witnesses))
            return
        walk(i + 1, (*terms, tokens[i]), witnesses, joins)
        for j, term, witness in runs[i]:
            walk(j + 1, (*terms, term), witnesses if witness is None else (*witnesses, witness), joins + 1)

    walk(0, (), (), 0)
    out.sort(key=lambda spelling: spelling[0])
    return [(terms, witnesses) for _, terms, witnesses in out[:PHRASE_SPELLINGS_MAX]]


#: The fields a word lane searches, in the order :meth:`Postings.absent_terms` looks a term up.
WORD_FIELDS = ("body", "title", "heading", "tags", "path")

#: How many searches :meth:`Postings.search` remembers (by their ``memo_key``).
SEARCH_MEMO_ENTRIES = 32

#: A block id from its document and block numbers (the inverse of :func:`block_id_keys`).
BLOCK_ID_FORMAT = "%016x:%012x"


def block_id_keys(block_id: str) -> tuple[int, int]:
    """The two integers a block id ``<16 hex>:<12 hex>`` is made of (see ``engine.make_blocks``)."""
    doc_hex, _, block_hex = block_id.partition(":")
    return int(doc_hex, 16), int(block_hex, 16)


def analyze_heading(heading_path: Sequence[str]) -> list[str]:
    """Index-lane terms of a heading path (every heading above the block)."""
    return analyze(" ; ".join(heading_path))
