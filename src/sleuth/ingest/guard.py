"""Every file costs bounded time and memory: what a file may cost, and the one function that reads it.

A hostile or pathological file (a YAML alias bomb, a PDF or markdown page built to be slow) must
not stall or sink an index run, and no guard inside the indexing process can stop every kind: a
thread cannot be interrupted inside C code, and a memory limit set on the process would bind the
broker too. So every file is read, decoded and parsed (:func:`parse_job`) in a worker process
(:mod:`sleuth.ingest.parse_worker`), handed out and collected in order by
:func:`sleuth.ingest.pool.parse_in_order`. Each worker is

- limited to :data:`PARSE_MEMORY_MAX_BYTES` of address space (``RLIMIT_AS``): a file that needs
  more is skipped ("needs more memory than ...");
- given :data:`FILE_BUDGET_S` seconds of wall-clock time per file (``SIGALRM`` in the worker; the
  indexer kills a worker still on the same file :data:`BACKSTOP_GRACE_S` after that, e.g. stuck in
  C code, and starts another): the file is skipped with the reason "took too long";
- replaced when it dies (the file it was on is skipped with the reason).

This module holds what both sides share: the jobs and outcomes, the settings (each a constant with
a ``SLEUTH_*`` override), the fault hooks, and the wire format: jobs and answers cross the pipes as
pickles of builtin values only (tuples, strings, numbers), which the indexer unpickles with no
class allowed, so that even a worker subverted by a file could not run code in the indexer.

Fault injection (tests, never set in production): ``SLEUTH_FAULT_SLOW_FILE=<glob>=<ms>[;...]`` makes
the worker sleep ``ms`` milliseconds before parsing a file whose index path matches ``glob``
(fnmatch); ``SLEUTH_FAULT_STUCK_FILE=<glob>[;...]`` makes it hang on such a file with ``SIGALRM``
blocked, as code stuck in C would; ``SLEUTH_FAULT_HOG_FILE=<glob>[;...]`` makes it allocate memory
until its address-space limit stops it.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from dataclasses import dataclass
from typing import Any

from sleuth.errors import ConfigError

FILE_BUDGET_S = 60.0
"""Wall-clock seconds a worker may spend on one file (read, decode, parse) before it is skipped
("took too long"); ``$SLEUTH_FILE_BUDGET_S`` overrides it."""
FILE_BUDGET_ENV = "SLEUTH_FILE_BUDGET_S"
BACKSTOP_GRACE_S = 5.0
"""A worker still on the same file this many seconds after its budget ran out is killed."""
PARSE_MEMORY_MAX_BYTES = 2 * 1024 * 1024 * 1024
"""Address space (``RLIMIT_AS``) of one worker, in bytes; ``$SLEUTH_PARSE_MEMORY_MB`` overrides it."""
PARSE_MEMORY_ENV = "SLEUTH_PARSE_MEMORY_MB"
PARSE_WORKERS = 2
"""Worker processes per index run at most (fewer on a single core; a second one starts only when
the first cannot keep up); ``$SLEUTH_PARSE_WORKERS`` (1 to 16) overrides it."""
PARSE_WORKERS_ENV = "SLEUTH_PARSE_WORKERS"
RESULT_MAX_BYTES = 1024 * 1024 * 1024
"""A worker's answer for one file may hold at most this many bytes (else the file is skipped)."""
FAULT_SLOW_FILE_ENV = "SLEUTH_FAULT_SLOW_FILE"
FAULT_STUCK_FILE_ENV = "SLEUTH_FAULT_STUCK_FILE"
FAULT_HOG_FILE_ENV = "SLEUTH_FAULT_HOG_FILE"


def content_hash(text: str) -> str:
    """The content hash of a decoded text: SHA-1 over its UTF-8 bytes and a NUL, in hex (the same as
    ``sleuth.engine.content_hash_of``, which the catalog stores; a test pins them together)."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass") + b"\0").hexdigest()


# ============================================================================ jobs and outcomes


@dataclass(frozen=True)
class ParseJob:
    """One file to read and parse: ``rel_path`` (index form) decides the format; the bytes are
    ``data`` (an archive member) or the file ``path``, opened only if it is the regular file
    ``identity`` (``(st_dev, st_ino)``, see :func:`sleuth.ingest.confine.open_file`) inside
    ``roots`` (real paths) and at most ``max_bytes`` long. ``known_hash``: the content hash the
    catalog holds for it; when the text still has it, it is not parsed again."""

    rel_path: str
    path: str | None = None
    data: bytes | None = None
    identity: tuple[int, int] | None = None
    roots: tuple[str, ...] | None = None
    max_bytes: int = 0
    known_hash: str | None = None


@dataclass(frozen=True)
class Parsed:
    """A file read and parsed: its content hash, and its parsed document (None when the hash is the
    job's ``known_hash``: unchanged, not parsed)."""

    content_hash: str
    document: Any  # sleuth.types.ParsedDocument | None


@dataclass(frozen=True)
class Failed:
    """A file that could not be indexed, with the skip reason (made printable: a message may quote
    a name that is not UTF-8, which the catalog could not store)."""

    reason: str

    def __post_init__(self) -> None:
        from sleuth.ingest.names import printable

        object.__setattr__(self, "reason", printable(self.reason))


Outcome = Parsed | Failed


def parse_job(job: ParseJob) -> Outcome:
    """Read, decode and parse one file in this process (what a worker runs; no time or memory bound
    here). Reasons: ``unreadable: ...`` (I/O, confinement, decoding), ``cannot parse: ...``,
    ``parser failed: ...``, and the size limit."""
    from sleuth.ingest.confine import FileTooLarge, Roots, read_file
    from sleuth.ingest.decode import DecodeError, decode_bytes
    from sleuth.ingest.parsers import ParseError, parse_document

    try:
        if job.data is not None:  # an archive member: a PDF is known by its first bytes
            decoded = decode_bytes(job.data)
        else:
            assert job.path is not None
            # the descriptor's real path is checked against the roots even when the walker's
            # (st_dev, st_ino) matches: a folder swapped for a symlink fools both alike
            roots = Roots.from_real(job.roots) if job.roots is not None else None
            data = read_file(job.path, job.max_bytes, job.identity, roots)
            try:
                decoded = decode_bytes(data, os.path.basename(job.path))
            except DecodeError as exc:
                raise type(exc)(f"{job.path}: {exc}") from None
    except FileTooLarge as exc:
        return Failed(str(exc))
    except (DecodeError, OSError) as exc:
        return Failed(f"unreadable: {exc}")
    digest = content_hash(decoded.text)
    if digest == job.known_hash:
        return Parsed(digest, None)
    try:
        return Parsed(digest, parse_document(job.rel_path, decoded.text, title=decoded.title))
    except ParseError as exc:
        return Failed(f"cannot parse: {exc}")
    except MemoryError:
        raise  # the worker reports it, and starts afresh
    except Exception as exc:  # noqa: BLE001 - one bad file never aborts an index
        return Failed(f"parser failed: {type(exc).__name__}: {exc}")


def too_long(budget_s: float) -> Failed:
    return Failed(f"took too long: more than the {budget_s:g} s per-file time budget")


# ============================================================================ settings and faults


def _env_number(name: str, default: float, low: float, high: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        raise ConfigError(f"{name} must be a number from {low:g} to {high:g}, got {raw!r}")
    return value


def file_budget_s() -> float:
    """``$SLEUTH_FILE_BUDGET_S`` (0.1 to 86400 seconds) when set, else :data:`FILE_BUDGET_S`.
    Raises ConfigError for another value."""
    return _env_number(FILE_BUDGET_ENV, FILE_BUDGET_S, 0.1, 86_400)


def parse_memory_max_bytes() -> int:
    """``$SLEUTH_PARSE_MEMORY_MB`` (256 to 1048576 MiB) in bytes when set, else :data:`PARSE_MEMORY_MAX_BYTES`."""
    mb = _env_number(PARSE_MEMORY_ENV, PARSE_MEMORY_MAX_BYTES / 2**20, 256, 2**20)
    return int(mb * 2**20)


def parse_workers() -> int:
    """``$SLEUTH_PARSE_WORKERS`` (1 to 16) when set, else :data:`PARSE_WORKERS` (at most the cores)."""
    return int(_env_number(PARSE_WORKERS_ENV, min(PARSE_WORKERS, os.cpu_count() or 1), 1, 16))


@dataclass(frozen=True)
class Faults:
    """The fault hooks in force (read from the environment by the indexer, once per run, and sent
    with each job): ``slow``: ``(glob, ms)`` pairs; ``stuck``, ``hog``: globs."""

    slow: tuple[tuple[str, int], ...] = ()
    stuck: tuple[str, ...] = ()
    hog: tuple[str, ...] = ()

    @classmethod
    def from_env(cls) -> Faults:
        """Raises ConfigError for a malformed ``SLEUTH_FAULT_SLOW_FILE``."""
        slow: list[tuple[str, int]] = []
        for spec in filter(None, os.environ.get(FAULT_SLOW_FILE_ENV, "").split(";")):
            glob, _, ms = spec.rpartition("=")
            if not glob or not ms.strip().isdigit():
                raise ConfigError(f"{FAULT_SLOW_FILE_ENV} must be <glob>=<ms>[;...], got {spec!r}")
            slow.append((glob, int(ms)))

        def globs(name: str) -> tuple[str, ...]:
            return tuple(filter(None, os.environ.get(name, "").split(";")))

        return cls(tuple(slow), globs(FAULT_STUCK_FILE_ENV), globs(FAULT_HOG_FILE_ENV))

    def for_path(self, rel_path: str) -> tuple[int, str]:
        """``(delay in ms, fault)`` for a file: fault ``"stuck"``, ``"hog"`` or ``""``."""
        if not (self.slow or self.stuck or self.hog):
            return 0, ""
        delay = sum(ms for glob, ms in self.slow if fnmatch.fnmatchcase(rel_path, glob))
        if any(fnmatch.fnmatchcase(rel_path, glob) for glob in self.stuck):
            return delay, "stuck"
        if any(fnmatch.fnmatchcase(rel_path, glob) for glob in self.hog):
            return delay, "hog"
        return delay, ""


# ============================================================================ the wire


def job_to_wire(job: ParseJob) -> tuple[Any, ...]:
    return (job.rel_path, job.path, job.data, job.identity, job.roots, job.max_bytes, job.known_hash)


def job_from_wire(wire: tuple[Any, ...]) -> ParseJob:
    rel_path, path, data, identity, roots, max_bytes, known_hash = wire
    return ParseJob(rel_path, path, data, identity, roots, max_bytes, known_hash)


def outcome_to_wire(outcome: Outcome) -> tuple[Any, ...]:
    if isinstance(outcome, Failed):
        return ("failed", outcome.reason)
    doc = outcome.document
    if doc is None:
        return ("same", outcome.content_hash)
    text = doc.text
    # A block is its span of the text (the parsers' invariant); its own text only when it differs.
    blocks = [(None if text[b.start_char : b.end_char] == b.text else b.text, b.heading_path, b.start_line,
               b.end_line, b.start_char, b.end_char) for b in doc.blocks]
    links = [(k.target, k.relation, k.label) for k in doc.links]
    return ("parsed", outcome.content_hash, doc.kind, doc.title, text, blocks, doc.tags, doc.front_matter,
            doc.problems, links, doc.entities)


def outcome_from_wire(wire: tuple[Any, ...]) -> Outcome:
    from sleuth.doc_types import BlockDraft, Link, ParsedDocument

    tag = wire[0]
    if tag == "failed":
        return Failed(str(wire[1]))
    if tag == "same":
        return Parsed(str(wire[1]), None)
    if tag != "parsed":
        raise ValueError(f"unknown answer {tag!r}")
    _tag, digest, kind, title, text, blocks, tags, front_matter, problems, links, entities = wire
    drafts = [BlockDraft(text[sc:ec] if own is None else own, tuple(path), sl, el, sc, ec)
              for own, path, sl, el, sc, ec in blocks]
    document = ParsedDocument(kind=kind, title=title, text=text, blocks=drafts, tags=tags, front_matter=front_matter,
                              problems=problems, links=[Link(*k) for k in links], entities=entities)
    return Parsed(digest, document)


__all__ = [
    "BACKSTOP_GRACE_S",
    "FILE_BUDGET_ENV",
    "FILE_BUDGET_S",
    "PARSE_MEMORY_MAX_BYTES",
    "PARSE_WORKERS",
    "RESULT_MAX_BYTES",
    "Failed",
    "Faults",
    "Outcome",
    "ParseJob",
    "Parsed",
    "content_hash",
    "file_budget_s",
    "job_from_wire",
    "job_to_wire",
    "outcome_from_wire",
    "outcome_to_wire",
    "parse_job",
    "parse_memory_max_bytes",
    "parse_workers",
    "too_long",
]
