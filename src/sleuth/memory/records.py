"""Records: decisions, plans, experiment records, results and notes written into project memory.

A record is a markdown file with front matter (``title``, ``kind``, ``role``, ``date``, ``tags``,
relations) in the project's memory folder, ``<index>/memory/<project_id>/<kind folder>/<slug>.md``.
The folder is one of the project's roots, so the record is indexed like any file -- at once on
write, and by every later ``sleuth index``. Its blocks are embedded at once too, unless a background
embedding worker is running on the index (``sleuth index`` started it), or other blocks wait for a
vector (a worker died with blocks left: a new one is started): the keyword lanes find the record at
once and the worker embeds its blocks with the others, so a write never waits for (nor repeats) the
embedding of a whole folder just indexed. Writing the same record again (same ``record_id``)
rewrites its file: the record keeps its id and gets a new ``revision_id``. ``forget`` deletes the
file and removes the record from every lane. Writes are serialised (one at a time per process,
and the index's write lock across processes), so a reader never sees half of one.

A write may carry a caller-chosen ``request_id`` (an idempotency key): the record's front matter
keeps it, and a new record's file name ends with a digest of it, so a retry of a write whose answer
was lost (the server was killed after it committed) finds the record written and answers with its
receipt (``replayed: true``) instead of writing it twice. The same ``request_id`` with other
content is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from sleuth.errors import DocumentNotFound, IndexWriteError, QueryError, index_gone, storage_errors
from sleuth.faults import kill_point
from sleuth.store.scratch import replacing, scratch_path

if TYPE_CHECKING:
    from sleuth.engine import Engine
    from sleuth.store.catalog import DocumentRow, FileState

#: Record kinds → (folder in the memory folder, role, kind label). The kind label is what search
#: results show as ``kind`` and ``filters.kinds`` matches (the same vocabulary as indexed files).
RECORD_KINDS: dict[str, tuple[str, str, str]] = {
    "decision": ("decisions", "report", "decision"),
    "plan": ("plans", "plan", "plan"),
    "experiment_record": ("experiments", "experiment_record", "experiment"),
    "result": ("results", "result", "result"),
    "note": ("notes", "other", "note"),
}
#: Control characters a record may not hold (all of C0 but tab, newline and carriage return).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: Bounds on what a record may hold: title in characters, body in characters, tags, a tag in characters,
#: and relations.
RECORD_TITLE_MAX_CHARS = 200
RECORD_BODY_MAX_CHARS = 200_000
RECORD_TAGS_MAX = 20
RECORD_TAG_MAX_CHARS = 100
RECORD_RELATIONS_MAX = 20
#: The folder (inside the index folder) holding every project's memory folder.
MEMORY_DIR_NAME = "memory"
#: Longest ``request_id``, in characters (as the search's ``request_id``).
REQUEST_ID_MAX_CHARS = 200
#: Hex digits of a request id's digest at the end of a new record's file name.
REQUEST_KEY_HEX = 12

_write_lock = threading.Lock()
logger = logging.getLogger(__name__)


def slugify(title: str, max_chars: int = 60) -> str:
    """A file-name slug of ``title``: ASCII-folded, lowercase, runs of other characters as ``-``."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")
    return slug[:max_chars].rstrip("-") or "record"


@dataclass(frozen=True)
class RecordReceipt:
    """What a write did: the record's id, new revision, file and whether it was created."""

    record_id: str
    revision_id: str
    project_id: str
    path: str
    file: str
    kind: str
    created: bool
    #: True when this answers a retry: the write with this ``request_id`` had been made already.
    replayed: bool = False

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def request_key(project_id: str, request_id: str) -> str:
    """The digest of a request id that ends the file name of the record it wrote."""
    return hashlib.sha1(f"{project_id}\0{request_id}".encode("utf-8", "surrogatepass")).hexdigest()[:REQUEST_KEY_HEX]


def render_record(title: str, body: str, front: dict[str, Any]) -> str:
    """A record file's text: its front matter, then its title as a heading, then its body."""
    text = "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n\n"
    return text + f"# {title}\n\n{body.strip()}\n"


def _front_matter(text: str) -> dict[str, Any]:
    """The front matter of a record file's text ({} when it has none or it is not a mapping)."""
    if not text.startswith("---\n") or "\n---\n" not in text[3:]:
        return {}
    try:
        front = yaml.safe_load(text[4 : text.index("\n---\n", 3) + 1])
    except yaml.YAMLError:
        return {}
    return front if isinstance(front, dict) else {}


class RecordStore:
    """Writes and forgets records of one engine's projects.

    Args:
        engine: the open index (records are indexed into it at once).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def memory_dir(self, project_id: str) -> Path:
        """The project's memory folder (not created)."""
        return self.engine.index_dir / MEMORY_DIR_NAME / project_id

    def _revised_record(self, project_id: str, record_id: str, root: Path, supersedes: Sequence[str]) -> DocumentRow:
        """The record ``record_id`` that a write revises. Raises DocumentNotFound or QueryError
        (another project's document, a file that is not a record, a supersession cycle)."""
        existing = self.engine.catalog.document(record_id)
        if existing is None:
            raise DocumentNotFound(f"record not found: {record_id!r}")
        if existing.project_id != project_id:
            raise QueryError(f"record {record_id} belongs to project {existing.project_id}, not {project_id}")
        if existing.root != str(root):
            raise QueryError(f"{record_id} is the file {existing.rel_path} under {existing.root}, not a "
                             "record: only records written with project_memory_record can be revised")
        self._check_no_cycle(record_id, supersedes)
        return existing

    def write(self, project_id: str, kind: str, title: str, body: str, tags: Sequence[str] = (),
              related: Sequence[str] = (), supersedes: Sequence[str] = (), record_id: str | None = None,
              create_project: bool = False, request_id: str | None = None) -> RecordReceipt:
        """Write (or rewrite, with ``record_id``) a record and index it at once.

        ``related`` and ``supersedes`` are record ids (any document of the project); they become
        front-matter relations, so the graph lane links them and a superseded record ranks below
        the record that replaces it. With ``request_id``, a write that was made already (its answer
        lost) is not made again: its receipt is returned, with ``replayed`` set (module docstring).

        Raises:
            QueryError: an unknown kind, an empty or too long title or body, too many tags or
                relations, a relation to an unknown record, ``record_id`` not a record of the
                project, or ``request_id`` already used for another write.
            ProjectNotFound: the project does not exist (and ``create_project`` is false).
            IndexBusy: another process held the index's write lock too long.
            StorageFull, IndexReadOnly, IndexGone: the record could not be written (nothing was).
        """
        title = _checked_title(kind, title, body, tags, related, supersedes, request_id)
        if project_id not in self.engine.project_ids() and not create_project:
            from sleuth.errors import ProjectNotFound, shown

            raise ProjectNotFound(f"project not found: {shown(project_id)} (see get_projects or `sleuth projects`)")
        folder, role, label = RECORD_KINDS[kind]
        root = self.memory_dir(project_id)
        with _write_lock:
            if self.engine.gone():  # before anything is written: a write would make the folder anew
                raise index_gone(self.engine.index_dir)
            existing = None if record_id is None else self._revised_record(project_id, record_id, root, supersedes)
            if record_id is not None and record_id in (*supersedes, *related):
                raise QueryError("a record cannot relate to or supersede itself")
            relation_paths = {name: self._paths(project_id, ids, name)
                              for name, ids in (("related", related), ("supersedes", supersedes))}

            def front_matter(date: str) -> dict[str, Any]:
                front: dict[str, Any] = {"title": title, "kind": label, "role": role, "date": date}
                if tags:
                    front["tags"] = [str(t) for t in tags]
                front.update({name: paths for name, paths in relation_paths.items() if paths})
                if request_id is not None:
                    front["request_id"] = request_id
                return front

            if request_id is not None:
                replayed = self._replayed(project_id, root, request_id, existing,
                                          lambda date: render_record(title, body, front_matter(date)))
                if replayed is not None:
                    return replayed
            now = datetime.now(UTC)
            key = request_key(project_id, request_id) if request_id is not None else None
            rel_path = existing.rel_path if existing else self._new_path(root, folder, now, title, key)
            text = render_record(title, body, front_matter(now.strftime("%Y-%m-%dT%H:%M:%SZ")))
            file = root / rel_path
            doc = self._write_and_index(project_id, root, file, text)
            kill_point("record-committed")
        return RecordReceipt(doc.doc_id, doc.revision, project_id, rel_path, str(file), label, existing is None)

    def _write_and_index(self, project_id: str, root: Path, file: Path, text: str) -> Any:
        """Put ``text`` in ``file`` and index the memory folder; returns the file's document.

        Like a transaction: when anything fails, the file is put back as it was (the previous
        version is kept as a hard link in the index folder meanwhile: putting it back needs no
        space) and the error raised (a full disk, a read-only folder: StorageFull, IndexReadOnly).
        """
        kept = None
        try:
            with storage_errors(self.engine.index_dir, "the record", retry="write it again"):
                file.parent.mkdir(parents=True, exist_ok=True)
                if file.exists():  # kept beside the catalog: not in the memory folder that is indexed
                    kept = scratch_path(self.engine.index_dir / file.name)
                    os.link(file, kept)
                with replacing(file) as tmp:
                    tmp.write_text(text, encoding="utf-8")
            kill_point("record-written")
            try:
                rel_path = file.relative_to(root).as_posix()
                self._index_memory(project_id, root, rel_path)
                return self._document_at(project_id, root, rel_path)
            except IndexWriteError as exc:
                raise type(exc)(f"the record was not written: {exc}") from exc
        except BaseException:
            # Never leave a file the index does not hold: put back what was there.
            with contextlib.suppress(OSError):
                if kept is None:
                    file.unlink(missing_ok=True)
                else:
                    os.replace(kept, file)
                    kept = None
            raise
        finally:
            if kept is not None:
                with contextlib.suppress(OSError):
                    kept.unlink()

    def _replayed(self, project_id: str, root: Path, request_id: str, existing: Any,
                  render: Any) -> RecordReceipt | None:
        """The receipt of the write ``request_id`` made already, or None when it made none.

        Its file is the revised record's (``existing``), else the new record whose name ends with
        the request's digest. A file written whose indexing a kill cut short is indexed now.
        ``render(date)`` is the text the request writes on ``date``: the file must hold exactly
        that (with its own date), else the request id was used for another write (QueryError).
        """
        if existing is not None:
            files = [root / existing.rel_path]
        else:
            files = sorted(root.glob(f"*/*-{request_key(project_id, request_id)}.md"))
        for file in files:
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            front = _front_matter(text)
            if front.get("request_id") != request_id:
                continue
            rel_path = file.relative_to(root).as_posix()
            if text != render(str(front.get("date", ""))):
                raise QueryError(f"request_id {request_id!r} was already used for another write ({rel_path}):"
                                 " give each new write its own request_id")
            state = self._file_state(project_id, root, rel_path)
            st = file.stat()
            if state is None or (state.mtime_ns, state.size_bytes) != (st.st_mtime_ns, st.st_size):
                self._index_memory(project_id, root, rel_path)  # killed before its indexing committed
            doc = self._document_at(project_id, root, rel_path)
            return RecordReceipt(doc.doc_id, doc.revision, project_id, rel_path, str(file), str(front.get("kind")),
                                 existing is None, replayed=True)
        return None

    def _index_memory(self, project_id: str, root: Path, rel_path: str | None = None) -> None:
        """Index the memory folder ``root`` of ``project_id``, then embed the record's own blocks
        (``rel_path``: the record written, None when one was forgotten), so that the vector lane
        finds it at once; never more than those.

        The embedding is left to a background worker instead when one holds the embed lock (it
        embeds the new blocks too, since it looks for pending blocks again after it lets the lock
        go; the lock is probed after the commit), and when more blocks wait than the record's own:
        a worker died (``kill -9``, a reboot) or was never started with a folder's blocks left,
        and embedding them here would hold the write for minutes. The lock tells: the kernel
        releases it when its holder ends, however it ends. A new worker is then started (as
        ``sleuth index`` starts one) and the write returns at once; the keyword lanes find the
        record meanwhile. Before, a record written after ``sleuth index`` of a large folder
        embedded every block of that folder inside the write: minutes."""
        from sleuth import background

        engine = self.engine
        engine.index([root], project=project_id, embed=False)
        if background.worker_running(engine.index_dir) or background.worker_started_here(engine.index_dir):
            return  # a worker embeds (or is about to: it takes the lock once it has started)
        pending = background.pending_blocks(engine)
        if not pending:
            return
        if pending > self._blocks_of(project_id, root, rel_path):
            try:
                pid = background.start_worker(engine.index_dir)
            except OSError as exc:  # the blocks stay pending: `sleuth status` says so, `sleuth embed` resumes
                logger.warning("the embedding worker could not start (%s): run `sleuth embed`", exc)
            else:
                logger.info("%d block(s) wait for a vector and no worker embeds them: started worker %d",
                            pending, pid)
            return
        with contextlib.ExitStack() as stack:
            try:
                held = stack.enter_context(background.embed_lock(  # a probe lets go at once; a worker does not
                    engine.index_dir, background.EMBED_PROBE_GRACE_S, background.EMBED_PROBE_POLL_S))
            except OSError as exc:  # e.g. a planted embed.lock that is not a file: the blocks stay pending
                logger.warning("the record's blocks are not embedded: %s", exc)
                return
            if not held:
                return  # a worker started meanwhile: it embeds them
            engine.embed_pending()
        if "vector" in engine.lanes:
            with engine.folder.write_lock.held_or_skip() as writable:
                if writable:
                    engine.lanes["vector"].warm()

    def _file_state(self, project_id: str, root: Path, rel_path: str) -> FileState | None:
        """The catalog's state of the file at ``rel_path`` under ``root`` (None: not indexed)."""
        return self.engine.catalog.file_states(project_id, [str(root)], [rel_path]).get((str(root), rel_path))

    def _blocks_of(self, project_id: str, root: Path, rel_path: str | None) -> int:
        """How many blocks the record at ``rel_path`` under ``root`` has (0 for None or none indexed)."""
        if rel_path is None:
            return 0
        state = self._file_state(project_id, root, rel_path)
        return 0 if state is None else len(self.engine.catalog.blocks_of(state.doc_id))

    def project_of(self, record_id: str) -> str:
        """The project of record ``record_id``. Raises DocumentNotFound."""
        doc = self.engine.catalog.document(record_id)
        if doc is None:
            raise DocumentNotFound(f"record not found: {record_id!r}")
        return doc.project_id

    def _check_no_cycle(self, record_id: str, supersedes: Sequence[str]) -> None:
        """Raise QueryError when a record ``record_id`` supersedes would (transitively) supersede it."""
        replaced_by = self.engine.link_graph().superseded_by
        seen, todo = set(), [record_id]
        while todo:  # every record that (transitively) replaces record_id
            for newer in replaced_by.get(todo.pop(), ()):
                if newer not in seen:
                    seen.add(newer)
                    todo.append(newer)
        cycle = [s for s in supersedes if s in seen]
        if cycle:
            raise QueryError(f"supersedes: {', '.join(cycle)} already supersede(s) {record_id}; "
                             "a record cannot supersede its own replacement")

    def forget(self, record_id: str, project_id: str | None = None) -> dict[str, Any]:
        """Delete record ``record_id`` (its file) and remove it from every lane.

        Raises:
            DocumentNotFound: no such document (in ``project_id`` when given).
            QueryError: the document is a file of an indexed folder, not a record (delete or
                ignore the file instead: sleuth never deletes files it did not write).
        """
        with _write_lock:
            if self.engine.gone():
                raise index_gone(self.engine.index_dir)
            doc = self.engine.catalog.document(record_id)
            if doc is None:
                raise DocumentNotFound(f"record not found: {record_id!r}")
            if project_id is not None and doc.project_id != project_id:
                raise QueryError(f"record {record_id} belongs to project {doc.project_id}, not {project_id}")
            root = self.memory_dir(doc.project_id)
            if doc.root != str(root):
                raise QueryError(f"{record_id} is the file {doc.rel_path} under {doc.root}, not a record: "
                                 "delete it or add it to .gitignore, then re-index")
            (root / doc.rel_path).unlink(missing_ok=True)
            self._index_memory(doc.project_id, root)
        return {"record_id": record_id, "project_id": doc.project_id, "path": doc.rel_path,
                "revision_id": doc.revision, "removed": True}

    def _paths(self, project_id: str, ids: Sequence[str], name: str) -> list[str]:
        docs = self.engine.catalog.documents(list(ids))
        missing = [i for i in ids if i not in docs or docs[i].project_id != project_id]
        if missing:
            raise QueryError(f"{name}: unknown record id(s) in project {project_id}: {', '.join(missing)}")
        return [docs[i].rel_path for i in ids]

    @staticmethod
    def _new_path(root: Path, folder: str, now: datetime, title: str, key: str | None = None) -> str:
        base = f"{folder}/{now.strftime('%Y-%m-%d')}-{slugify(title)}" + (f"-{key}" if key else "")
        candidate, n = f"{base}.md", 2
        while (root / candidate).exists():
            candidate, n = f"{base}-{n}.md", n + 1
        return candidate

    def _document_at(self, project_id: str, root: Path, rel_path: str) -> Any:
        states = self.engine.catalog.file_states(project_id, [str(root)])
        state = states.get((str(root), rel_path))
        doc = self.engine.catalog.document(state.doc_id) if state else None
        if doc is None:
            raise QueryError(f"the record {rel_path} was written but could not be indexed; see `sleuth status`")
        return doc


def _checked_title(kind: str, title: str, body: str, tags: Sequence[str], related: Sequence[str],
                   supersedes: Sequence[str], request_id: str | None) -> str:
    """The title of a record to write, stripped, once every argument is checked (the limits of
    this module). Raises QueryError naming the argument and its limit."""
    if request_id is not None and (not request_id.strip() or len(request_id) > REQUEST_ID_MAX_CHARS
                                   or _CONTROL.search(request_id)):
        raise QueryError(f"request_id must be 1 to {REQUEST_ID_MAX_CHARS} characters of text")
    if kind not in RECORD_KINDS:
        raise QueryError(f"kind must be one of {', '.join(RECORD_KINDS)}; got {kind!r}")
    title = title.strip()
    if not title or len(title) > RECORD_TITLE_MAX_CHARS or "\n" in title:
        raise QueryError(f"title must be one line of 1 to {RECORD_TITLE_MAX_CHARS} characters")
    if not body.strip() or len(body) > RECORD_BODY_MAX_CHARS:
        raise QueryError(f"body must hold 1 to {RECORD_BODY_MAX_CHARS} characters")
    for name, value in (("title", title), ("body", body), *(("tags", t) for t in tags)):
        if _CONTROL.search(value):
            raise QueryError(f"{name} holds a control character (e.g. NUL); records are text")
    if len(tags) > RECORD_TAGS_MAX or len(related) + len(supersedes) > RECORD_RELATIONS_MAX:
        raise QueryError(f"at most {RECORD_TAGS_MAX} tags and {RECORD_RELATIONS_MAX} relations per record")
    if any(len(t) > RECORD_TAG_MAX_CHARS for t in tags):
        raise QueryError(f"a tag holds at most {RECORD_TAG_MAX_CHARS} characters")
    return title
