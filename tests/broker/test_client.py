"""The session side: header lines, the byte pipe, and falling back when no broker can be used."""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

from sleuth.broker.client import broker_enabled, pipe, read_line, serve_via_broker, session_header


def test_broker_switch() -> None:
    assert broker_enabled({}) and broker_enabled({"SLEUTH_BROKER": "1"})
    assert not any(broker_enabled({"SLEUTH_BROKER": v}) for v in ("0", "false", "No", "off"))


def test_header_makes_paths_absolute(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    header = session_header("memory", ("a",), "g.json", None, {"SLEUTH_GUIDES": "h.json", "SLEUTH_LANES": "bm25"})
    assert header == {"op": "session", "protocol": 1, "tools": "memory", "projects": ["a"],
                      "guides": str(tmp_path / "g.json"), "events": None,
                      "env": {"SLEUTH_GUIDES": str(tmp_path / "h.json")}}


def test_read_line_keeps_what_follows() -> None:
    a, b = socket.socketpair()
    with a, b:
        b.sendall(b'{"ok": true}\n{"jsonrpc"')
        line, rest = read_line(a, 5.0)
    assert json.loads(line) == {"ok": True} and rest == b'{"jsonrpc"'


def test_pipe_copies_both_ways_and_ends_when_the_broker_closes() -> None:
    broker, session = socket.socketpair()
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    received: list[bytes] = []

    def fake_broker() -> None:
        with broker:
            data = b""
            while not data.endswith(b"\n"):
                data += broker.recv(100)
            received.append(data)
            broker.sendall(b"answer\n")
            assert broker.recv(100) == b""  # the session closed its side after stdin's EOF

    t = threading.Thread(target=fake_broker)
    t.start()
    os.write(stdin_w, b"request\n")
    os.close(stdin_w)
    code = pipe(session, b"early ", stdin_fd=stdin_r, stdout_fd=stdout_w)
    t.join(10)
    os.close(stdout_w)
    with os.fdopen(stdout_r, "rb") as out:
        assert out.read() == b"early answer\n"
    os.close(stdin_r)
    assert code == 0 and received == [b"request\n"]


def test_no_index_means_serve_in_process(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SLEUTH_INDEX", raising=False)
    assert serve_via_broker(tmp_path / "nothing", None, (), None, None) is None
