"""Ctrl-C stops `sleuth index` and `sleuth embed` with a word on what stays, exit status 130 (click
said only "Aborted!", a new user's trial found). Real processes; the run is held on a file by fault
injection, so the signal lands while it works (no guessed delay).

The foreground servers (`sleuth watch`, `sleuth ui`, `sleuth serve --http`) are stopped by Ctrl-C or
SIGTERM as their normal way out: one line "sleuth <command>: stopped" on stderr and exit status 0
(a new user's trial: watch let watchfiles log "KeyboardInterrupt caught, stopping watch", ui and
serve --http ended with click's "Aborted!" and status 1 on Ctrl-C, and ui was killed by SIGTERM).
Each is signalled once it answers (the watch: once it says it watches)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx2
import pytest

from tests.integration.conftest import SLEUTH, run_cli, signalled

#: A generous safety net for a server to start answering (the machine is shared), in seconds.
START_WAIT_S = 180.0


def _interrupted(command: list[str], env: dict[str, str], ready: Callable[[str], bool],
                 skip_lines: bool = False, sig: int = signal.SIGINT, on_stdout: bool = False,
                 answers: Callable[[str], str | None] | None = None) -> tuple[int, str, str]:
    """Run ``command``, send it ``sig`` once a line of its stderr (``on_stdout``: stdout) is ``ready``
    (the first line must be, unless ``skip_lines``) and, with ``answers`` (the URL to try from that
    line), once that URL answers; (exit status, stdout, stderr: both whole but for the lines read
    from one of them before). A safety net of two minutes for it to stop (its hold would last ten)."""
    def when_ready(proc: subprocess.Popen[str]) -> None:
        watched = proc.stdout if on_stdout else proc.stderr
        assert watched is not None
        line = watched.readline()
        while skip_lines and line and not ready(line):
            line = watched.readline()
        assert ready(line), line
        url = answers(line) if answers is not None else None
        deadline = time.monotonic() + START_WAIT_S
        while url is not None:
            try:
                httpx2.get(url, timeout=5)
                break
            except httpx2.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, f"{url} never answered"
                time.sleep(0.2)

    return signalled(command, env, when_ready, sig)


def test_ctrl_c_during_sleuth_index_says_what_stays_and_exits_130(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nwombats\n", encoding="utf-8")
    (root / "b.md").write_text("# Beta\n\nnumbats\n", encoding="utf-8")
    env = {**os.environ, "SLEUTH_MODEL": "none", "SLEUTH_FAULT_SLOW_FILE": "b.md=600000",
           "SLEUTH_FILE_BUDGET_S": "900", "SLEUTH_PROGRESS_INTERVAL_S": "0"}
    # a progress line: the run is under way (the held file would keep it 600 s)
    code, out, err = _interrupted([*SLEUTH, "index", str(root), "--index", str(tmp_path / "idx")], env,
                                  lambda line: line.startswith("sleuth index:"))
    assert (code, out) == (130, "")
    assert err.rstrip().splitlines()[-1] == ("sleuth index: interrupted; what it wrote stays indexed (and the vectors "
                                             "it made): run the same command again to go on")


def test_ctrl_c_while_sleuth_index_waits_for_the_lock_says_it_wrote_nothing(tmp_path: Path) -> None:
    """Attack round of stop 39: Ctrl-C while another process held the write lock said "what it wrote
    stays indexed", and the wait itself was silent. Now the wait is said once, naming the holder, and
    the interrupt says nothing was written (nor was anything: the new page is not found)."""
    from sleuth.locks import WriteLock
    from sleuth.store.folder import WRITE_LOCK_FILE

    index = _notes_index(tmp_path)
    (tmp_path / "notes" / "b.md").write_text("# Beta\n\nnumbats\n", encoding="utf-8")
    other = WriteLock(index / WRITE_LOCK_FILE, 0)
    assert other.acquire()
    try:
        env = {**os.environ, "SLEUTH_MODEL": "none", "SLEUTH_WRITE_LOCK_TIMEOUT_S": "600"}
        code, out, err = _interrupted([*SLEUTH, "index", str(tmp_path / "notes"), "--index", str(index)], env,
                                      lambda line: line.startswith("sleuth index: waiting for"), skip_lines=True)
    finally:
        other.release()
    assert (code, out) == (130, "")
    assert err.rstrip().splitlines()[-1] == ("sleuth index: interrupted before it wrote anything: run the same "
                                             "command again to index")
    found = run_cli("search", "numbats", "--index", str(index), "--format", "json", env={"SLEUTH_MODEL": "none"})
    assert json.loads(found.stdout)["hits"] == []


@pytest.mark.parametrize("command", [["index", "notes"], ["projects", "remove", "notes"]], ids=["index", "remove"])
def test_a_writing_command_says_once_whom_it_waits_for(tmp_path: Path, command: list[str]) -> None:
    """The line a waiting run writes: the holder as the lock file names it, and the bound (`sleuth
    projects remove` waited silently too)."""
    from sleuth.locks import WriteLock
    from sleuth.store.folder import WRITE_LOCK_FILE

    index = _notes_index(tmp_path)
    args = [str(tmp_path / a) if a == "notes" and command[0] == "index" else a for a in command]
    other = WriteLock(index / WRITE_LOCK_FILE, 0)
    assert other.acquire()
    try:
        proc = subprocess.run([*SLEUTH, *args, "--index", str(index)],
                              env={**os.environ, "SLEUTH_MODEL": "none", "SLEUTH_WRITE_LOCK_TIMEOUT_S": "0.5"},
                              capture_output=True, text=True, timeout=120)
    finally:
        other.release()
    assert proc.returncode != 0 and "is writing to the index" in proc.stderr
    waits = [line for line in proc.stderr.splitlines() if "waiting for" in line]
    assert waits == [f"sleuth {' '.join(command[:-1])}: waiting for process {os.getpid()} "
                     f"({' '.join(sys.argv[:3])[:200]}) to finish writing to the index (at most 0.5 s; Ctrl-C stops)"]


def test_a_waiting_line_that_cannot_be_written_does_not_end_the_wait(tmp_path: Path) -> None:
    """Attack round of stop 40: with stderr full (``2>/dev/full``) the waiting line's write error was
    taken for the lock file's ("no space left on device while writing the lock file"): exit 1 at once.
    The wait goes on now and ends as a busy index does (exit status 5)."""
    from sleuth.locks import WriteLock
    from sleuth.store.folder import WRITE_LOCK_FILE

    index = _notes_index(tmp_path)
    other = WriteLock(index / WRITE_LOCK_FILE, 0)
    assert other.acquire()
    try:
        with open("/dev/full", "w") as full:
            proc = subprocess.run([*SLEUTH, "index", str(tmp_path / "notes"), "--index", str(index)], stderr=full,
                                  stdout=subprocess.PIPE, text=True, timeout=120,
                                  env={**os.environ, "SLEUTH_MODEL": "none", "SLEUTH_WRITE_LOCK_TIMEOUT_S": "0.5"})
    finally:
        other.release()
    assert (proc.returncode, proc.stdout) == (5, "")


def test_a_symbolic_link_loop_is_refused_in_one_line(tmp_path: Path) -> None:
    """Attack round of stop 40: ``sleuth index notes loop`` (``loop -> loop``) ended in a traceback."""
    index = _notes_index(tmp_path)
    (tmp_path / "loop").symlink_to("loop")
    for args in ([str(tmp_path / "notes"), str(tmp_path / "loop"), "--index", str(index)], [str(tmp_path / "loop")]):
        proc = subprocess.run([*SLEUTH, "index", *args], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "SLEUTH_MODEL": "none"})
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            2, "", f"error: {tmp_path / 'loop'} is a loop of symbolic links: sleuth cannot index it\n")


def test_ctrl_c_during_sleuth_embed_says_the_vectors_stay_and_exits_130(tmp_path: Path) -> None:
    from sleuth.background import HOLD_AFTER_ENV
    from sleuth.engine import Engine

    root, index = tmp_path / "notes", tmp_path / "idx"
    root.mkdir()
    for i in range(3):
        (root / f"n{i}.md").write_text(f"# Note {i}\n\nThe owl {i} hunts at dusk.\n", encoding="utf-8")
    with Engine(index) as engine:
        engine.index([root], project="notes", embed=False)
    env = {**os.environ, HOLD_AFTER_ENV: "1", "SLEUTH_PROGRESS_INTERVAL_S": "0"}
    # the first committed batch's count: it holds there until the process is stopped
    code, out, err = _interrupted([*SLEUTH, "embed", "--index", str(index)], env, lambda line: "embedding" in line,
                                  skip_lines=True)
    assert (code, out) == (130, "")
    assert err.rstrip().splitlines()[-1] == ("sleuth embed: interrupted; the vectors made so far are kept: run "
                                             "`sleuth embed` again to go on")


def _notes_index(tmp_path: Path) -> Path:
    """An index of one small project, "notes" (keyword lanes only)."""
    root, index = tmp_path / "notes", tmp_path / "idx"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nwombats\n", encoding="utf-8")
    run_cli("index", str(root), "--project", "notes", "--index", str(index), env={"SLEUTH_MODEL": "none"})
    return index


STOPPING = pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])


@STOPPING
def test_a_signal_stops_sleuth_watch_with_one_line_and_status_0(tmp_path: Path, sig: int) -> None:
    index = _notes_index(tmp_path)
    env = {**os.environ, "SLEUTH_MODEL": "none"}
    code, out, err = _interrupted([*SLEUTH, "watch", "--index", str(index)], env,
                                  lambda line: line == "watching 1 root(s) of 1 project(s): notes\n", sig=sig)
    assert (code, out, err) == (0, "", "sleuth watch: stopped\n")


@STOPPING
def test_a_signal_stops_sleuth_ui_with_one_line_and_status_0(tmp_path: Path, sig: int) -> None:
    index = _notes_index(tmp_path)
    env = {**os.environ, "SLEUTH_MODEL": "none"}
    code, out, err = _interrupted([*SLEUTH, "ui", "--port", "0", "--index", str(index)], env,
                                  lambda line: line.startswith("sleuth ui: serving http://127.0.0.1:"), sig=sig,
                                  on_stdout=True, answers=lambda line: line.split()[3])
    assert (code, out, err) == (0, "", "sleuth ui: stopped\n")


@STOPPING
def test_a_signal_stops_sleuth_serve_http_with_one_line_and_status_0(tmp_path: Path, sig: int) -> None:
    from tests.integration.http_server import free_port

    index = _notes_index(tmp_path)
    run_cli("users", "add", "alice", "--project", "notes", "--index", str(index))
    port = free_port()
    env = {**os.environ, "SLEUTH_MODEL": "none"}
    metadata = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
    code, out, err = _interrupted([*SLEUTH, "serve", "--http", f"127.0.0.1:{port}", "--index", str(index)], env,
                                  lambda line: f" sleuth.http INFO serving MCP at http://127.0.0.1:{port}/mcp " in line,
                                  sig=sig, answers=lambda _line: metadata)
    # the rest of its log: the search page's address (unless it came in one read with the line waited
    # for: communicate() reads the pipe itself, past the line buffer readline() filled), then the one line
    lines = err.splitlines()
    assert code == 0 and out == ""
    assert len(lines) <= 2 and all(line.endswith(f" sleuth.http INFO the search page: http://127.0.0.1:{port}/ui/ "
                                                 "(asks for a token once)") for line in lines[:-1]), err
    assert lines[-1] == "sleuth serve: stopped"
