"""Ctrl-C stops a long command even when its KeyboardInterrupt was lost in a finalizer (a new user's
trial, stop 32: 2 of 51 presses during a 38,404-file `sleuth index` were ignored)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sleuth.interrupts import check_interrupt, stop_on_interrupt, stopped_by_signals
from sleuth.progress import Progress


def _press_ctrl_c_and_lose_it() -> None:
    """SIGINT to this process, its KeyboardInterrupt swallowed as a finalizer swallows it."""
    try:
        os.kill(os.getpid(), signal.SIGINT)  # the handler runs at the next bytecode boundary
        for _ in range(1000):
            pass
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("SIGINT raised no KeyboardInterrupt")


@pytest.fixture(autouse=True)
def python_default_sigint() -> Iterator[None]:
    """Python's own SIGINT handler, as an interactive `sleuth index` has it (a test run started in the
    background, as CI's may be, ignores SIGINT)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_next_progress_count_raises_again_once_ctrl_c_was_pressed() -> None:
    progress = Progress()
    with stop_on_interrupt():
        progress.advance("scan")  # nothing pressed yet
        _press_ctrl_c_and_lose_it()
        with pytest.raises(KeyboardInterrupt):
            progress.advance("scan")
        with pytest.raises(KeyboardInterrupt):  # and at every count after, until the run ends
            progress.advance("parse")
    assert progress.phases["scan"].done == 1
    check_interrupt()  # the block is over: forgotten
    progress.advance("scan")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_outside_the_main_thread_or_under_another_handler_nothing_is_installed() -> None:
    seen: list[object] = []

    def other_thread() -> None:
        with stop_on_interrupt():
            seen.append(signal.getsignal(signal.SIGINT))

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert seen == [signal.default_int_handler]

    def own(_signum: int, _frame: object) -> None:
        seen.append("own")

    previous = signal.signal(signal.SIGINT, own)
    try:
        with stop_on_interrupt():
            assert signal.getsignal(signal.SIGINT) is own
        assert signal.getsignal(signal.SIGINT) is own
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_a_foreground_server_with_one_line_after_its_cleanup(
        sig: int, capsys: pytest.CaptureFixture[str]) -> None:
    stop, done = threading.Event(), []
    before = signal.getsignal(signal.SIGTERM)
    with stopped_by_signals("ui", stop):
        try:
            os.kill(os.getpid(), sig)  # the handler runs at the next bytecode boundary
            for _ in range(1000):
                pass
            raise AssertionError("the signal raised no KeyboardInterrupt")
        finally:
            done.append("closed")  # the server's own cleanup runs
    assert stop.is_set() and done == ["closed"]
    assert capsys.readouterr() == ("", "sleuth ui: stopped\n")
    assert signal.getsignal(signal.SIGTERM) is before and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    check_interrupt()  # forgotten once the block is over


def test_a_server_that_returns_without_a_signal_says_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with stopped_by_signals("serve"):
        pass  # e.g. it could not start, and said why
    assert capsys.readouterr() == ("", "")


def test_ctrl_c_before_a_commands_own_handling_ends_it_with_status_130_not_aborted() -> None:
    """A Ctrl-C while a command loads (before its own handler) printed click's "Aborted!" with
    status 1, or a traceback while Python imported the CLI (a new user's trial)."""
    import subprocess
    import sys

    import click
    from click.testing import CliRunner

    from sleuth.cli import INTERRUPTED_EXIT, cli

    def boom() -> None:
        raise KeyboardInterrupt

    cli.add_command(click.Command("boom-test", callback=boom))
    try:
        result = CliRunner().invoke(cli, ["boom-test"], prog_name="sleuth")
    finally:
        cli.commands.pop("boom-test")
    assert (result.exit_code, result.stderr) == (INTERRUPTED_EXIT, "sleuth: interrupted\n")

    # A real SIGINT inside the launcher, before click runs.
    script = ("import os, signal, sys\nimport sleuth.launcher as launcher\n"
              "def interrupted():\n    os.kill(os.getpid(), signal.SIGINT)\n    for _ in range(10**7):\n        pass\n"
              "launcher._main = interrupted\nsys.argv = ['sleuth', 'status']\nlauncher.main()\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "sleuth: interrupted\n", "")


def test_ctrl_c_while_the_search_model_loads_ends_the_search_at_once(tmp_path: Path) -> None:
    """Ctrl-C while `sleuth search`'s warm-up thread still imports and loads the model ends the
    process with status 130 (a KeyboardInterrupt there could deadlock the two threads' imports: an
    attack round saw 1 search in 26 hang); once the load is done it is a KeyboardInterrupt again."""
    import subprocess
    import sys

    from sleuth.config import Config
    from sleuth.engine import Engine

    Engine(tmp_path / "idx", Config(model="none")).close()
    script = (
        "import os, signal, sys, threading, time\n"
        "import sleuth.startup as startup\n"
        "hold = threading.Event()\n"
        "def held_load(future, index_dir, lanes):\n    hold.wait()\n    future.set_result(None)\n"
        "startup._load = held_load\n"
        f"assert startup.start_search_model_load(['walrus', '--index', {str(tmp_path / 'idx')!r}])\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "time.sleep(60)\n"
        "print('not interrupted')\n")
    env = {**os.environ, "SLEUTH_BROKER": "0"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "sleuth: interrupted\n", "")
    done = script.replace("os.kill(", "hold.set()\nwhile startup._pending is None or not startup._pending.done():\n"
                                      "    time.sleep(0.01)\nos.kill(")
    proc = subprocess.run([sys.executable, "-c", done], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == -signal.SIGINT and proc.stderr.rstrip().endswith("KeyboardInterrupt"), proc.stderr
