"""Answers that used to be lost, with real processes: an index folder deleted under a running broker
(every tool says so, the broker exits), a record committed just before the broker was killed (the
retry with the same request_id answers as the first write would have, and there is one record),
and the scratch files a kill -9 leaves (swept when the index is next opened).

Kills are injected where they must land (``SLEUTH_FAULT_KILL_AT``, see ``sleuth.faults``), not
timed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from sleuth.broker.client import _lock_free, stop_brokers
from sleuth.broker.paths import BrokerPaths, broker_dir
from sleuth.store.scratch import writer_pid
from tests.integration.conftest import SLEUTH, run_cli
from tests.integration.mcp_session import serve_env
from tests.integration.test_broker import WAIT_S, broker_env_for, brokers, ok, session, wait_for

LEXICAL = {"SLEUTH_MODEL": "none"}  # what is lost here is answers, not vectors

NOTES = {
    "walrus.md": "---\ntitle: Walrus migration\n---\n# Walrus migration\n\nThe walrus herd moves north in spring.\n",
    "ledger.md": "---\ntitle: Ledger design\n---\n# Ledger design\n\nDouble-entry ledger with idempotent writes.\n",
}


@pytest.fixture
def notes_index(tmp_path: Path) -> Path:
    (tmp_path / "notes").mkdir()
    for name, text in NOTES.items():
        (tmp_path / "notes" / name).write_text(text, encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(tmp_path / "notes"), "--project", "notes", "--index", str(index), env=LEXICAL)
    return index


@pytest.fixture
def broker_folder() -> Iterator[str]:
    folder = tempfile.mkdtemp(prefix="sbl-", dir="/tmp")
    yield folder
    stop_brokers(None, {**os.environ, "SLEUTH_BROKER_DIR": folder})
    shutil.rmtree(folder, ignore_errors=True)


def gone_error(result: Any, index: Path) -> str:
    assert result.is_error
    error = result.structured_content["error"]
    assert error["code"] == "INDEX_GONE"
    assert result.content[0].text == error["message"]
    return error["message"]


GONE_CALLS = [
    ("project_memory_search", {"project_id": "notes", "query": "walrus"}),
    ("search_project", {"project_id": "notes", "query": "walrus"}),
    ("get_projects", {}),
    ("project_memory_doctor", {}),
    ("project_memory_record", {"project_id": "notes", "kind": "note", "title": "Lost", "body": "Where to?"}),
]


def test_an_index_deleted_under_a_running_broker_is_a_tool_error_and_the_broker_exits(
        notes_index: Path, broker_folder: str) -> None:
    env = broker_env_for(broker_folder, **LEXICAL)
    said = (f"the index folder {notes_index} was deleted or moved while the server was running: run `sleuth index`"
            " and restart the session")

    async def main() -> tuple[dict[str, Any], list[Any]]:
        async with session(notes_index, env) as s:
            found = ok(await s.call_tool("search_project", {"project_id": "notes", "query": "walrus"}))
            assert found["items"][0]["item"]["title"] == "Walrus migration"
            (status,) = brokers(notes_index, env)
            shutil.rmtree(notes_index)
            return status, [await s.call_tool(name, args) for name, args in GONE_CALLS]

    status, results = anyio.run(main)
    assert [gone_error(r, notes_index) for r in results] == [said] * len(GONE_CALLS)
    assert not notes_index.exists()  # the write made nothing anew
    paths = BrokerPaths(broker_dir(env), status["key"])
    wait_for(lambda: _lock_free(paths.run_lock), "the broker of the deleted index to exit")
    assert "stopped: the index was deleted or replaced" in paths.log.read_text()


def test_an_index_deleted_under_an_in_process_server_is_a_tool_error(notes_index: Path) -> None:
    calls = [("search_project", {"project_id": "notes", "query": "walrus"}), *GONE_CALLS]

    async def main() -> list[Any]:
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=sys.executable, args=["-m", "sleuth.cli", "serve", "--no-broker",
                                                                     "--index", str(notes_index)],
                                       env=serve_env(LEXICAL))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            first = await s.call_tool(*calls[0])
            shutil.rmtree(notes_index)
            return [first] + [await s.call_tool(name, args) for name, args in calls[1:]]

    first, *results = anyio.run(main)
    assert not first.is_error
    assert {gone_error(r, notes_index) for r in results} == {
        f"the index folder {notes_index} was deleted or moved while the server was running: run `sleuth index`"
        " and restart the session"}


def memory_files(index: Path) -> list[str]:
    return sorted(p.relative_to(index / "memory").as_posix() for p in (index / "memory").rglob("*.md"))


def record_rows(index: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(f"{(index / 'catalog.sqlite3').as_uri()}?mode=ro", uri=True)
    try:
        return con.execute("SELECT doc_id, rel_path FROM documents WHERE root LIKE ? ORDER BY rel_path",
                           (f"%{os.sep}memory{os.sep}%",)).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("kill_at", ["record-committed", "record-written"])
def test_a_record_whose_answer_was_lost_is_written_once_when_retried_with_its_request_id(
        notes_index: Path, broker_folder: str, kill_at: str) -> None:
    """The broker is killed (SIGKILL) right after the record committed ("record-committed"), or
    after its file was written but before it was indexed ("record-written"); the client sees a
    failure and retries with the same request_id from a new session (a new broker)."""
    record = {"project_id": "notes", "kind": "decision", "title": "Adopt the walrus ledger",
              "body": "We keep one ledger per herd.", "tags": ["ledger"], "request_id": "rec-7f3a"}
    doomed = broker_env_for(broker_folder, SLEUTH_FAULT_KILL_AT=kill_at, **LEXICAL)
    env = broker_env_for(broker_folder, **LEXICAL)

    async def first_try() -> BaseException | Any:
        try:
            async with session(notes_index, doomed) as s:
                return await s.call_tool("project_memory_record", record)
        except Exception as exc:  # noqa: BLE001 - the connection is cut: that is the point
            return exc

    lost = anyio.run(first_try)
    assert isinstance(lost, BaseException) or lost.is_error, lost  # the client never got a receipt
    killed = BrokerPaths.for_index(notes_index.resolve(), doomed)
    wait_for(lambda: _lock_free(killed.run_lock), "the killed broker to be gone")
    assert len(memory_files(notes_index)) == 1  # the record's file was written before the kill
    committed = record_rows(notes_index)
    assert len(committed) == (1 if kill_at == "record-committed" else 0)

    async def retry() -> tuple[dict[str, Any], dict[str, Any], Any, Any, dict[str, Any]]:
        async with session(notes_index, env) as s:
            again = ok(await s.call_tool("project_memory_record", record))["record"]
            twice = ok(await s.call_tool("project_memory_record", record))["record"]
            other = await s.call_tool("project_memory_record", {**record, "body": "Something else."})
            fresh = await s.call_tool("project_memory_record", {**record, "request_id": "rec-other"})
            found = ok(await s.call_tool("project_memory_search", {"project_id": "notes", "query": "walrus ledger herd",
                                                                 "filters": {"kinds": ["decision"]}}))
            return again, twice, other, fresh, found

    again, twice, other, fresh, found = anyio.run(retry)
    rows = record_rows(notes_index)
    assert len(rows) == 2 and len(memory_files(notes_index)) == 2  # the retried one, and the fresh one
    first_id = {rel: doc_id for doc_id, rel in rows}[again["path"]]
    assert committed in ([], [(first_id, again["path"])])
    assert again == twice and again["record_id"] == first_id
    assert (again["created"], again["replayed"], again["kind"]) == (True, True, "decision")
    assert again["project_id"] == "notes"
    assert again["path"].startswith("decisions/") and again["path"].endswith(".md")
    assert other.is_error and other.structured_content["error"]["code"] == "INVALID_ARGUMENT"
    assert "request_id 'rec-7f3a' was already used for another write" in other.structured_content["error"]["message"]
    assert not fresh.is_error and fresh.structured_content["record"]["replayed"] is False
    assert fresh.structured_content["record"]["record_id"] != first_id
    ids = [r["record_id"] for r in found["results"] if r["title"] == "Adopt the walrus ledger"]
    assert sorted(ids) == sorted([first_id, fresh.structured_content["record"]["record_id"]])
    assert not list(notes_index.glob("*.tmp")) and not list((notes_index / "memory").rglob("*.tmp"))


def test_scratch_files_left_by_a_kill_are_swept_when_the_index_is_opened(tmp_path: Path) -> None:
    """A real `sleuth index` killed (SIGKILL) right after it wrote the vector rows' scratch file,
    plus scratch files of every other kind left by a process that no longer runs: the next command
    that opens the index removes those, and only those (a live writer's and a recent nameless one
    stay)."""
    (tmp_path / "notes").mkdir()
    for name, text in NOTES.items():
        (tmp_path / "notes" / name).write_text(text, encoding="utf-8")
    index = tmp_path / "idx"
    env = {k: v for k, v in os.environ.items() if k != "SLEUTH_MODEL"}  # the default model: vectors on
    killed = subprocess.Popen([*SLEUTH, "index", str(tmp_path / "notes"), "--project", "notes", "--index", str(index)],
                              env={**env, "SLEUTH_FAULT_KILL_AT": "scratch:vectors."}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    _, err = killed.communicate(timeout=WAIT_S * 3)
    assert killed.returncode == -signal.SIGKILL, err
    (left,) = index.glob("vectors.*.tmp")  # the vector rows' scratch file, named after its writer
    assert left.name.startswith("vectors.") and writer_pid(left.name) == killed.pid

    dead_pid = subprocess.Popen(["true"])  # a pid that no longer runs
    dead_pid.wait()
    live = subprocess.Popen(["sleep", str(int(WAIT_S))])
    record_folder = index / "memory" / "notes" / "notes"
    record_folder.mkdir(parents=True)
    gone = dead_pid.pid
    swept = [index / f"tfidf.cache.npz.{gone}.0a1b2c3d.tmp", index / f"postings.generation.{gone}.ff.tmp",
             record_folder / f"2026-01-01-a-note.md.{gone}.1234abcd.tmp", index / "postings" / ".tmpAbC123",
             index / "vectors.0badc0de.old.tmp"]
    kept = [index / f"tfidf.cache.npz.{live.pid}.0a1b2c3d.tmp", index / "vectors.0badc0de.recent.tmp"]
    for path in [*swept, *kept]:
        path.write_bytes(b"half-written")
    hours_ago = time.time() - 2 * 3600
    for path in swept[3:]:  # names without a pid: stale by age only
        os.utime(path, (hours_ago, hours_ago))
    try:
        status = run_cli("status", "--index", str(index), "--format", "json", env=env)
        assert json.loads(status.stdout)["documents"] == 2
        assert not left.exists() and [p for p in swept if p.exists()] == []
        assert all(p.exists() for p in kept)
    finally:
        live.kill()
        live.wait()
    # The killed run resumes: the vector state is saved, and nothing is left half-written.
    run_cli("index", str(tmp_path / "notes"), "--project", "notes", "--index", str(index), env=env)
    assert list(index.glob("vectors.*.state.npz")) and list(index.glob("vectors.*.q8"))
    run_cli("status", "--index", str(index), env=env)  # the live writer is gone now: its file goes too
    assert sorted(p.name for p in index.glob("*.tmp")) == ["vectors.0badc0de.recent.tmp"]
