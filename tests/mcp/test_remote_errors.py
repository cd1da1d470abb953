"""What a remote caller (``per_caller``: ``sleuth serve --http``) reads of an error: no server
path, no other process's command line. A real index, its real write lock held by another holder."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.errors import StorageError
from sleuth.locks import WriteLock
from sleuth.mcp.access import CURRENT_CALLER, Caller
from sleuth.mcp.memory_tools import MemoryTools
from sleuth.scaleout import INDEX_BUSY_SHOWN, remote_message
from sleuth.store.folder import WRITE_LOCK_FILE


def test_a_remote_writer_is_not_told_who_holds_the_write_lock_nor_where_the_index_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """project_memory_record while another writer holds the index's lock: the server's own caller
    reads the holder (its PID and command line, a folder it indexes) and the index folder; a
    remote one reads ``INDEX_BUSY_SHOWN`` (the holder's command line named another project's folder)."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.md").write_text("# Locks\n\nOne writer at a time.\n")
    monkeypatch.setenv("SLEUTH_WRITE_LOCK_TIMEOUT_S", "0")
    engine = Engine(tmp_path / "idx", Config(model="none"))
    engine.index([tmp_path / "src"], project="beta")
    monkeypatch.setattr("sys.argv", ["/srv/bin/sleuth", "index", "/srv/notes/secret-project"])
    holder = WriteLock(tmp_path / "idx" / WRITE_LOCK_FILE, 0)
    assert holder.acquire()
    token = CURRENT_CALLER.set(Caller("bob", frozenset({"beta"}), frozenset({"read", "write"})))
    try:
        def record(per_caller: bool) -> str:
            tools = MemoryTools(engine, per_caller=per_caller)
            result = asyncio.run(tools.project_memory_record(kind="note", title="t", body="b", project_id="beta"))
            assert result.is_error
            return result.structured_content["error"]["message"]  # type: ignore[index]

        local, remote = record(False), record(True)
    finally:
        CURRENT_CALLER.reset(token)
        holder.release()
    gone = StorageError(f"the index folder {tmp_path / 'idx'} was deleted or moved while it was open")
    shown = remote_message(gone, engine)
    engine.close()
    assert local.startswith(f"process {os.getpid()} (/srv/bin/sleuth index /srv/notes/secret-project)"
                            f" is writing to the index {tmp_path / 'idx'}; ")
    assert remote == INDEX_BUSY_SHOWN
    assert shown == "the index folder <index> was deleted or moved while it was open"


def test_a_remote_caller_is_not_told_where_a_projects_folder_is(tmp_path: Path) -> None:
    """project_memory_forget of an indexed file (not a record): the server's own caller reads the
    project's folder as it is; a remote one its name, as results label it."""
    root = tmp_path / "srv" / "notes"
    root.mkdir(parents=True)
    (root / "a.md").write_text("# Locks\n\nOne writer at a time.\n")
    engine = Engine(tmp_path / "idx", Config(model="none"))
    engine.index([root], project="beta")
    (doc_id,) = [h.doc_id for h in engine.search("writer", lanes=["bm25"]).hits]
    token = CURRENT_CALLER.set(Caller("bob", frozenset({"beta"}), frozenset({"read", "write"})))
    try:
        def forget(per_caller: bool) -> str:
            result = asyncio.run(MemoryTools(engine, per_caller=per_caller).project_memory_forget(record_id=doc_id))
            return result.structured_content["error"]["message"]  # type: ignore[index]

        local, remote = forget(False), forget(True)
    finally:
        CURRENT_CALLER.reset(token)
        engine.close()
    words = "not a record: delete it or add it to .gitignore, then re-index"
    assert local == f"{doc_id} is the file a.md under {root}, {words}"
    assert remote == f"{doc_id} is the file a.md under notes, {words}"


def test_another_projects_root_is_not_shortened_for_a_remote_caller(tmp_path: Path) -> None:
    """An attack round's finding: an error shortened every root of the index to its folder's name, so
    a caller of project alpha guessing paths learned which were project beta's roots. Only the
    caller's own projects' roots are shortened; another's stays as the caller wrote it."""
    from sleuth.errors import QueryError

    alpha, beta = tmp_path / "srv" / "alpha", tmp_path / "srv" / "beta"
    for root in (alpha, beta):
        root.mkdir(parents=True)
        (root / "a.md").write_text("# Note\n\nA note.\n")
    engine = Engine(tmp_path / "idx", Config(model="none"))
    try:
        engine.index([alpha], project="alpha")
        engine.index([beta], project="beta")
        for guessed in (beta, tmp_path / "srv" / "nowhere"):
            error = QueryError(f"got 'body:{guessed}/a.md'")
            assert remote_message(error, engine, frozenset({"alpha"})) == f"got 'body:{guessed}/a.md'"
        assert remote_message(QueryError(f"got 'body:{alpha}/a.md'"), engine, frozenset({"alpha"})) == \
            "got 'body:alpha/a.md'"
        assert remote_message(QueryError(f"got 'body:{beta}/a.md'"), engine) == "got 'body:beta/a.md'"
    finally:
        engine.close()


def test_a_remote_caller_is_not_told_where_a_skipped_file_is(tmp_path: Path) -> None:
    """Attack session 31: a file skipped as unreadable is reported with its absolute path inside
    the reason (``unreadable: /srv/notes/broken.pdf: corrupt PDF: ...``), and project_memory_doctor
    and the page's index view passed it on to remote callers: only strings that began with a root
    were rewritten. Now every mention is, as in an error's message."""
    from sleuth.ui.api import status_json

    root = tmp_path / "srv" / "notes"
    root.mkdir(parents=True)
    (root / "a.md").write_text("# Locks\n\nOne writer at a time.\n")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog")
    (root / "bad.md").write_bytes(b"\xef\xbb\xbf# bad \xff utf-8\n")
    engine = Engine(tmp_path / "idx", Config(model="none"))
    engine.index([root], project="beta")
    token = CURRENT_CALLER.set(Caller("bob", frozenset({"beta"}), frozenset({"read"})))
    try:
        def reasons(per_caller: bool) -> list[str]:
            result = asyncio.run(MemoryTools(engine, per_caller=per_caller).project_memory_doctor(project_id="beta"))
            return [f["reason"] for f in result.structured_content["doctor"]["skipped_files"]]  # type: ignore[index]

        local, remote = reasons(False), reasons(True)
        page = status_json(engine, allowed=["beta"], remote=True)
    finally:
        CURRENT_CALLER.reset(token)
        engine.close()
    assert local == [f"unreadable: {root}/bad.md: invalid utf-8 after byte-order mark: invalid start byte",
                     f"unreadable: {root}/broken.pdf: corrupt PDF: PdfStreamError: Stream has ended unexpectedly"]
    shown = ["unreadable: notes/bad.md: invalid utf-8 after byte-order mark: invalid start byte",
             "unreadable: notes/broken.pdf: corrupt PDF: PdfStreamError: Stream has ended unexpectedly"]
    assert remote == shown
    assert [f["reason"] for f in page["skipped_files"]] == shown
    assert str(tmp_path) not in repr(page)
