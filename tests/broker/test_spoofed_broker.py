"""A broker socket served by another user (attack session 24): `sleuth search` asked whatever
listened on ``<broker folder>/<key>.sock`` without checking the folder (``create=False`` skipped
:func:`ensure_private_dir`) or the process behind the socket, so another local user who made
``<tmp>/sleuth-<uid>`` first (or any folder named by ``SLEUTH_BROKER_DIR``) received every query
and answered it with results of their choosing. Now the folder must be private to this user and
the peer must run as this user (``SO_PEERCRED``); otherwise the search runs in its own process.
A real listener in another process, running as ``nobody``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sleuth.broker.paths import BROKER_DIR_ENV, broker_key
from sleuth.config import Config
from sleuth.engine import Engine, Record

NOBODY = 65534
#: The spoofing listener: binds the socket (as root), becomes ``nobody``, listens, and for each
#: connection writes what it received to its log and answers with a fake search result.
LISTENER = r"""
import json, os, socket, sys
path, log = sys.argv[1], sys.argv[2]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.bind(path)
os.chmod(path, 0o777)
out = open(log, "ab", buffering=0)  # opened before the listener gives up root
os.setgid(65534); os.setuid(65534)
sock.listen(8)
sock.settimeout(300)
print("ready", flush=True)
while True:
    try:
        conn, _ = sock.accept()
    except OSError:
        break
    with conn:
        conn.settimeout(30)
        data = conn.recv(1 << 20)
        out.write(data)
        hit = {"query": "x", "terms": [], "lanes": [], "took_ms": 1.0, "result_count": 1, "hits": [
            {"doc_id": "spoofed", "path": "SPOOFED.md", "title": "spoofed", "snippet": "planted by another user",
             "score": 9.0, "rank": 1, "project": "p", "kind": "document", "sources": ["bm25"]}]}
        conn.sendall(b'{"ok": true, "accepted": true}\n')
        conn.sendall(json.dumps({"ok": True, "response": hit, "multi_root": []}).encode() + b"\n")
"""


@pytest.fixture
def index(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("a listener of another user needs root to become one; CI runs as root")
    with Engine(tmp_path / "idx", Config(model="none")) as e:
        e.index_records("p", [Record("r1", "the advisory lock is held by one writer")])
    return (tmp_path / "idx").resolve()


def _spoof(folder: Path, index: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], Path]:
    log = folder.parent / "listener.log"
    sock = folder / f"{broker_key(index, env)}.sock"
    proc = subprocess.Popen([sys.executable, "-c", LISTENER, str(sock), str(log)], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"  # listening now
    return proc, log


def _search(index: Path, env: dict[str, str]) -> tuple[dict, str]:  # type: ignore[type-arg]
    proc = subprocess.run([sys.executable, "-m", "sleuth", "search", "advisory lock", "--lanes", "bm25",
                           "--format", "json", "--index", str(index)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


@pytest.mark.parametrize("folder_owner", ["another user", "this user"])
def test_a_broker_socket_of_another_user_is_never_asked(tmp_path: Path, index: Path, folder_owner: str) -> None:
    folder = tmp_path / "brokers"
    folder.mkdir()
    if folder_owner == "another user":  # made first by them (e.g. <tmp>/sleuth-<uid>)
        os.chown(folder, NOBODY, NOBODY)
        folder.chmod(0o755)
    else:  # ours and private (0700), and a socket in it served by another user's process
        folder.chmod(0o700)
    env = {**os.environ, BROKER_DIR_ENV: str(folder), "SLEUTH_BROKER": "1"}
    listener, log = _spoof(folder, index, env)
    try:
        resp, _ = _search(index, env)
    finally:
        listener.kill()
        listener.wait()
    assert [h["path"] for h in resp["hits"]] == ["r1"]  # searched in its own process
    assert log.read_bytes() == b""  # the query never reached the other user


#: Holds ``flock`` on a broker's lock file (as ``nobody``), as a running broker does, until killed.
LOCK_HOLDER = r"""
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)
os.setgid(65534); os.setuid(65534)
fcntl.flock(fd, fcntl.LOCK_EX)
print("ready", flush=True)
sys.stdin.read()
"""


def test_sleuth_broker_stop_ignores_a_folder_of_another_user(tmp_path: Path, index: Path) -> None:
    """An info file planted in another user's broker folder named a process of this user; with its
    lock held and no socket answering, `sleuth broker stop` sent that process SIGTERM."""
    from sleuth.broker.client import list_brokers, stop_brokers

    folder = tmp_path / "brokers"
    folder.mkdir()
    os.chown(folder, NOBODY, NOBODY)
    folder.chmod(0o755)
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(folder / "0123456789abcdef.lock")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"ready\n"
        (folder / "0123456789abcdef.json").write_text(json.dumps({"index": str(index), "pid": victim.pid}))
        env = {BROKER_DIR_ENV: str(folder)}
        assert list_brokers(None, env) == []
        assert stop_brokers(None, env, timeout_s=1.0) == []
        assert victim.poll() is None  # not signalled
    finally:
        for proc in (victim, holder):
            proc.kill()
            proc.wait()
