"""Is an indexed file still as it was indexed? One ``stat`` per answer, no reading.

Used to mark results whose file changed or vanished since it was indexed (``index_freshness:
"stale"``) when no watcher keeps the index current, and by ``sleuth status --files``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from sleuth.ingest.names import fs_name
from sleuth.ingest.walk import ARCHIVE_SUFFIXES

if TYPE_CHECKING:
    from sleuth.store.catalog import DocumentRow

Freshness = Literal["current", "stale"]


def _archive_split(rel_path: str) -> tuple[str, str] | None:
    """``("docs/a.tar.gz", "inner/x.md")`` for a member of an archive, else None."""
    parts = rel_path.split("/")
    for i, part in enumerate(parts[:-1]):
        if part.lower().endswith(ARCHIVE_SUFFIXES):
            return "/".join(parts[: i + 1]), "/".join(parts[i + 1 :])
    return None


def _rfc3339_ns(text: str) -> int | None:
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).timestamp() * 1e9)
    except ValueError:
        return None


def _file_stat(root: str, rel_path: str) -> tuple[os.stat_result, bool]:
    """``(stat, in an archive)`` of the file a document at ``root``/``rel_path`` was read from: for
    an archive member the archive file (True), for a root that is one file that file, else the
    file itself. Raises OSError (gone, unreadable)."""
    member = _archive_split(rel_path)
    if member is not None:
        st = os.stat(os.path.join(root, member[0]))
        if not stat.S_ISDIR(st.st_mode):
            return st, True
    try:
        return os.stat(os.path.join(root, rel_path)), False
    except NotADirectoryError:
        st = os.stat(root)  # a root that is one file: rel_path is its name
        if stat.S_ISDIR(st.st_mode):  # a folder of the path became a file: the document's file is gone
            raise
        return st, False


def freshness(root: str, rel_path: str, mtime_ns: int, size_bytes: int,
              indexed_at: str | None = None) -> Freshness:
    """``"current"`` when the file at ``root``/``rel_path`` has the indexed ``mtime_ns`` and
    ``size_bytes`` (as a document row stores them), else ``"stale"`` (changed, or gone).

    A member of an archive (``a.tar.gz/inner/x.md``) is checked through the archive file: stale
    when the archive is gone, or, given the row's ``indexed_at`` (RFC 3339), when the archive was
    modified after it (every index run that re-reads an archive refreshes its members'
    ``indexed_at``). A root that is a single file is the file itself. Documents with no file
    (records: an empty ``root``) are always current. One ``os.stat`` (two only for a file root or
    a folder whose name looks like an archive); never raises for a missing or unreadable file.
    """
    if not root:
        return "current"
    try:
        st, in_archive = _file_stat(root, fs_name(rel_path))  # the index form of a name that is not UTF-8 is escaped
    except OSError:
        return "stale"
    if in_archive:
        if indexed_at is None:
            return "current"
        since = _rfc3339_ns(indexed_at)
        # indexed_at has milliseconds and is taken before the archive is read: an archive
        # written within that millisecond was still read after it was written.
        return "stale" if since is None or st.st_mtime_ns > since + 999_999 else "current"
    return "current" if st.st_mtime_ns == mtime_ns and st.st_size == size_bytes else "stale"


def document_freshness(root: str, rel_path: str, mtime_ns: int, size_bytes: int, content_hash: str,
                       indexed_at: str | None = None) -> Freshness:
    """:func:`freshness`, except that a plain file with its indexed size but a new mtime (touched,
    or rewritten with the same length) is read and its content hash compared: a touched file
    stays ``current``. Reads at most that one file; never raises."""
    state = freshness(root, rel_path, mtime_ns, size_bytes, indexed_at)
    if state == "current" or not root or _archive_split(rel_path) is not None:
        return state
    path = os.path.join(root, fs_name(rel_path)) if os.path.isdir(root) else root
    try:
        if os.stat(path).st_size != size_bytes:
            return "stale"
        from sleuth.ingest.confine import Roots
        from sleuth.ingest.guard import Parsed, ParseJob
        from sleuth.ingest.pool import parse_in_order

        # Read as the indexer reads files: in a parse process, under the per-file bounds, never
        # through a symlink; the text is not parsed when its hash is the indexed one.
        job = ParseJob(rel_path, path, roots=Roots([root]).real, max_bytes=size_bytes, known_hash=content_hash)
        ((_, outcome),) = parse_in_order([(None, job)])
        return "current" if isinstance(outcome, Parsed) and outcome.document is None else "stale"
    except Exception:  # noqa: BLE001 - unreadable now: not what was indexed
        return "stale"


#: Skip reasons that mean a file could not be read or parsed (``failed``: including one over the
#: per-file time or memory bound, or whose parse process died), as opposed to files left out on
#: purpose (``skipped``: unsupported or binary formats, too large, symlinks, archive limits).
FAILED_REASON_PREFIXES = ("unreadable", "cannot parse", "parser failed", "cannot read archive", "broken symlink",
                          "took too long", "needs more memory", "the parse process died", "cannot read member")


def skip_state(reason: str) -> Literal["skipped", "failed"]:
    """Whether a file not indexed for ``reason`` failed (read or parse error) or was skipped by rule."""
    return "failed" if reason.startswith(FAILED_REASON_PREFIXES) else "skipped"


def failed_count(skips: Iterable[tuple[str, str]]) -> int:
    """How many of ``skips`` (path, reason) could not be read or parsed (:func:`skip_state`)."""
    return sum(1 for _, reason in skips if skip_state(reason) == "failed")


def coverage_summary(roots: list[tuple[str, str]], indexed: list[tuple[str, str, int, str]],
                     skipped: list[dict[str, str]],
                     outdated: Callable[[str, str], bool] = lambda project, root: False) -> list[dict[str, object]]:
    """Per project root: ``{project, root, indexed, skipped, failed, last_indexed, outdated}``.

    Args:
        roots: ``(project, root)`` of every project's roots (listed even when empty).
        indexed: ``(project, root, documents, last indexed_at)`` per root holding documents.
        skipped: the catalog's skipped-file rows (``project``, ``root``, ``reason``, ...).
        outdated: whether a root holding documents was parsed by an older parser (asked only for those).
    """
    table: dict[tuple[str, str], dict[str, object]] = {}

    def row(project: str, root: str) -> dict[str, object]:
        return table.setdefault((project, root), {"project": project, "root": root, "indexed": 0, "skipped": 0,
                                                  "failed": 0, "last_indexed": None, "outdated": False})

    for project, root in roots:
        row(project, root)
    for project, root, n, last in indexed:
        entry = row(project, root)
        entry["indexed"], entry["last_indexed"] = n, last
        if n:
            entry["outdated"] = outdated(project, root)
    for s in skipped:
        entry = row(s["project"], s["root"])
        entry[skip_state(s["reason"])] += 1  # type: ignore[operator]
    return [table[k] for k in sorted(table)]


def file_coverage(indexed: list[dict[str, object]], skipped: list[dict[str, str]]) -> list[dict[str, object]]:
    """Every file the index knows of, sorted by project, root and path: indexed files as
    ``{project, root, path, state: "indexed", indexed_at, freshness}`` (one ``stat`` each), the
    others as ``{project, root, path, state: "skipped" | "failed", reason, at}``."""
    out: list[dict[str, object]] = [
        {"project": f["project"], "root": f["root"], "path": f["path"], "state": "indexed",
         "indexed_at": f["indexed_at"],
         "freshness": freshness(str(f["root"]), str(f["path"]), int(f["mtime_ns"]),  # type: ignore[call-overload]
                                int(f["size_bytes"]), str(f["indexed_at"]))}  # type: ignore[call-overload]
        for f in indexed
    ]
    not_indexed: list[dict[str, object]] = [
        {"project": s["project"], "root": s["root"], "path": s["path"], "state": skip_state(s["reason"]),
         "reason": s["reason"], "at": s["at"]} for s in skipped]
    out += not_indexed
    return sorted(out, key=lambda f: (str(f["project"]), str(f["root"]), str(f["path"])))


def file_gone(root: str, rel_path: str) -> bool:
    """Whether the file of an indexed document is gone (for an archive member: the archive file),
    as opposed to changed: what a ``stale`` :func:`freshness` means, told apart for people. One
    ``os.stat``; a document with no file (empty ``root``) is never gone; never raises."""
    if not root:
        return False
    try:
        _file_stat(root, fs_name(rel_path))
    except OSError:
        return True
    return False


def stale_note(state: str | None, gone: bool) -> str:
    """The words that tell a reader a document is not as it was indexed (``""`` when ``state`` is
    not ``"stale"``): ``"stale: the file is gone since it was indexed"`` or ``"stale: the file
    changed since it was indexed"``."""
    if state != "stale":
        return ""
    return "stale: the file " + ("is gone" if gone else "changed") + " since it was indexed"


def row_freshness(doc: DocumentRow) -> Freshness:
    """``current`` or ``stale``: is the file of catalog row ``doc`` as it was indexed? (see
    :func:`document_freshness`)."""
    return document_freshness(doc.root, doc.rel_path, doc.mtime_ns, doc.size_bytes, doc.content_hash,
                              doc.indexed_at)
