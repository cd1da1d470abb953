"""`sleuth serve` when the client closes stdin right after its requests (``printf '<request>\\n' |
sleuth serve``): MCP's stdio transport ends a session by closing the server's stdin, and the server
must answer what it read before it exits. Before, the answers were lost (the SDK cancelled the calls
in flight when its read stream ended, and the transport stopped its writer with them): the client
got nothing on stdout, through the broker and in-process alike. Real `sleuth serve` processes
through the fast path (`python -m sleuth`), with and without a broker."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sleuth.broker.client import stop_brokers
from tests.integration.conftest import run_cli
from tests.integration.mcp_session import serve_env

#: Generous safety net for one `sleuth serve` run (the machine is shared), in seconds: never a measure of speed.
SERVE_WAIT_S = 240.0

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "eof-test", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
SEARCH = {"jsonrpc": "2.0", "id": "s", "method": "tools/call",
          "params": {"name": "project_memory_search", "arguments": {"query": "walrus herd", "project_id": "notes"}}}


@pytest.fixture(scope="module")
def notes_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of one project "notes" with one note, no embedding model."""
    root = tmp_path_factory.mktemp("eof")
    (root / "notes").mkdir()
    (root / "notes" / "walrus.md").write_text(
        "---\ntitle: Walrus migration\n---\n# Walrus migration\n\nThe walrus herd moves north in spring.\n",
        encoding="utf-8")
    index = root / "idx"
    run_cli("index", str(root / "notes"), "--project", "notes", "--index", str(index), env={"SLEUTH_MODEL": "none"})
    return index


@pytest.fixture(params=["broker", "in-process"])
def env(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """The environment of `sleuth serve`: through a broker in a private folder (stopped after), or in-process."""
    folder = tempfile.mkdtemp(prefix="seof-", dir="/tmp")
    environment = serve_env({"SLEUTH_MODEL": "none", "SLEUTH_BROKER": "1" if request.param == "broker" else "0",
                             "SLEUTH_BROKER_DIR": folder, "SLEUTH_BROKER_IDLE_S": "600"})
    yield environment
    stop_brokers(None, environment)
    shutil.rmtree(folder, ignore_errors=True)


def serve(index: Path, env: dict[str, str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    """`python -m sleuth serve --index INDEX` with ``stdin`` as its whole input (EOF right after it)."""
    return subprocess.run([sys.executable, "-m", "sleuth", "serve", "--index", str(index)], input=stdin,
                          capture_output=True, env=env, timeout=SERVE_WAIT_S)


def lines(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def answers(stdout: bytes) -> dict[Any, dict[str, Any]]:
    """The JSON-RPC answers on ``stdout`` by id (every line must be one)."""
    out: dict[Any, dict[str, Any]] = {}
    for line in stdout.splitlines():
        message = json.loads(line)
        assert message["id"] not in out, f"two answers to {message['id']!r}"
        out[message["id"]] = message
    return out


def test_a_request_followed_by_eof_is_answered_before_the_server_exits(notes_index: Path, env: dict[str, str]) -> None:
    proc = serve(notes_index, env, lines(INITIALIZE))
    assert proc.returncode == 0, proc.stderr.decode()
    got = answers(proc.stdout)
    assert list(got) == [1]
    assert got[1]["result"]["serverInfo"]["name"] == "sleuth"


def test_every_request_read_before_eof_is_answered(notes_index: Path, env: dict[str, str]) -> None:
    proc = serve(notes_index, env, lines(INITIALIZE, INITIALIZED, LIST_TOOLS, SEARCH))
    assert proc.returncode == 0, proc.stderr.decode()
    got = answers(proc.stdout)
    assert sorted(got, key=str) == [1, 2, "s"]
    assert "project_memory_search" in [t["name"] for t in got[2]["result"]["tools"]]
    found = got["s"]["result"]
    if found.get("isError") and env["SLEUTH_BROKER"] == "1":
        # Through a broker, a search still running when the input ends is cancelled (the broker frees
        # the session's threads at once), and its answer says so: on a busy machine the search can
        # still be running then (a full run under two busy loops saw it). It is answered all the same.
        assert "the session that sent it ended" in json.dumps(found), found
    else:
        assert found.get("isError") is not True, found
        assert [r["title"] for r in found["structuredContent"]["results"]] == ["Walrus migration"]


def test_no_input_exits_at_once_with_nothing_on_stdout(notes_index: Path, env: dict[str, str]) -> None:
    proc = serve(notes_index, env, b"")
    assert (proc.returncode, proc.stdout) == (0, b"")
