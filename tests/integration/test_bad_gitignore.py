"""A ``.gitignore`` line that is not a valid pattern (attack session 34: ``\\``, ``a\\``, ``[z-a]``,
``[\\d-a]``, ``[[:foo:]]``) is left out as git leaves it out: ``sleuth index`` goes on and reports
it as a warning of that file (in its report and in ``sleuth status``), ``sleuth watch`` and the
broker's watcher go on. Before, the walk raised: ``sleuth index`` exited 1 with a traceback, ``sleuth
watch`` died, and the broker's watcher thread ended for good. Waits poll with a generous upper
bound; no timing is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from tests.integration.conftest import SLEUTH, run_cli
from tests.integration.test_watch import WAIT_S, wait_until, write

LEXICAL = {"SLEUTH_MODEL": "none"}
BAD_LINES = ["\\", "a\\", "[z-a]", "[\\d-a]", "[[:foo:]]"]


def found(engine: Engine, query: str) -> list[str]:
    return [h.path for h in engine.search(query).hits]


@pytest.mark.parametrize("line", BAD_LINES)
def test_index_leaves_out_the_line_and_warns(tmp_path: Path, line: str) -> None:
    root, index = tmp_path / "root", tmp_path / "idx"
    write(root, "a.md", "# A\n\nwombats\n")
    write(root, "sub/b.md", "# B\n\nnumbats\n")
    write(root, "sub/drafts.md", "# Drafts\n\nquokkas\n")
    write(root, "sub/.gitignore", f"drafts.md\n{line}\n")
    proc = run_cli("index", str(root), "--project", "p", "--index", str(index), env=LEXICAL)
    assert "Traceback" not in proc.stderr
    assert proc.stdout.startswith("indexed project 'p'")
    assert ", 2 added, " in proc.stdout  # drafts.md is still ignored: the file's other line applies
    warnings = [ln for ln in proc.stdout.splitlines() if ln.startswith("  warning ")]
    assert len(warnings) == 1 and warnings[0].startswith(
        f"  warning sub/.gitignore: line 2 ignored, not a valid pattern: {line!r} (")
    status = run_cli("status", "--index", str(index), env=LEXICAL).stdout.splitlines()
    at = status.index("  1 file(s) indexed with a warning")
    assert status[at + 1] == "    " + warnings[0].removeprefix("  warning ")

    write(root, "sub/.gitignore", "drafts.md\n")  # fixed: the warning goes
    proc = run_cli("index", str(root), "--project", "p", "--index", str(index), env=LEXICAL)
    assert "warning" not in proc.stdout
    assert "  0 file(s) indexed with a warning" in run_cli("status", "--index", str(index), env=LEXICAL).stdout


def test_a_gitignore_warning_lasts_as_long_as_its_line(tmp_path: Path) -> None:
    """The warning is recorded once however often the file is read, kept by runs that do not read
    it (a watch batch elsewhere), replaced when it is read again and dropped with the file."""
    root, index = tmp_path / "root", tmp_path / "idx"
    write(root, "a.md", "# A\n\nwombats\n")
    write(root, "other/c.md", "# C\n\nbilbies\n")
    write(root, "sub/b.md", "# B\n\nnumbats\n")
    write(root, "sub/deep/d.md", "# D\n\nkiwis\n")
    write(root, "sub/.gitignore", "[z-a]\n")
    bad = "line 1 ignored, not a valid pattern: '[z-a]' (bad character range z-a)"

    def problems(engine: Engine) -> list[tuple[str, str]]:
        return [(p["path"], p["problem"]) for p in engine.catalog.problems()]

    with Engine(index, Config(model="none")) as engine:
        report = engine.index([root], project="p")
        assert report.problems == [{"path": "sub/.gitignore", "problem": bad}]
        assert problems(engine) == [("sub/.gitignore", bad)]
        report = engine.update_paths("p", root, ["sub/b.md", "sub/deep/d.md"])  # read for each path
        assert report.problems == [{"path": "sub/.gitignore", "problem": bad}]
        assert problems(engine) == [("sub/.gitignore", bad)]
        engine.update_paths("p", root, ["other/c.md"])  # does not read it: kept
        assert problems(engine) == [("sub/.gitignore", bad)]
        write(root, "sub/.gitignore", "[z-a]\n\\\n")
        engine.update_paths("p", root, ["sub"])
        assert problems(engine) == [("sub/.gitignore", bad), (
            "sub/.gitignore", "line 2 ignored, not a valid pattern: '\\\\' (Escape character found with no next "
            "character to escape: '\\\\')")]
        (root / "sub/.gitignore").unlink()
        engine.update_paths("p", root, ["sub"])  # what a watch does for a deleted .gitignore
        assert problems(engine) == []
        write(root, "sub/.gitignore", "[z-a]\n")
        engine.index([root], project="p")
        assert problems(engine) == [("sub/.gitignore", bad)]
        write(root, "sub/.gitignore", "deep/\n")
        engine.index([root], project="p")
        assert problems(engine) == []
        assert found(engine, "kiwis") == []


def test_watch_goes_on_past_a_bad_gitignore_line(tmp_path: Path) -> None:
    root, index = tmp_path / "notes", tmp_path / "idx"
    write(root, "a.md", "# Alpha\n\nwombats\n")
    run_cli("index", str(root), "--project", "notes", "--index", str(index), env=LEXICAL)
    proc = subprocess.Popen([*SLEUTH, "watch", "--index", str(index), "--format", "json", "--debounce-ms", "50"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **LEXICAL})
    batches: list[dict] = []
    assert proc.stdout is not None and proc.stderr is not None
    stdout = proc.stdout
    reader = threading.Thread(target=lambda: batches.extend(json.loads(line) for line in stdout), daemon=True)
    reader.start()
    assert "watching 1 root(s) of 1 project(s): notes" in proc.stderr.readline()
    try:
        with Engine(index, Config(model="none")) as engine:
            write(root, "drafts/x.md", "# X\n\nbilbies\n")
            wait_until("a new file", lambda: found(engine, "bilbies") == ["drafts/x.md"])
            write(root, ".gitignore", "[[:foo:]]\ndrafts/\n")
            wait_until("the .gitignore's other line", lambda: found(engine, "bilbies") == [])
            write(root, "b.md", "# Beta\n\nnumbats\n")
            wait_until("a file after it", lambda: found(engine, "numbats") == ["b.md"])
        assert proc.poll() is None
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0
        reader.join(timeout=10)
    assert all(b["error"] is None for b in batches), batches
    warned = [p for b in batches for p in b["report"]["problems"]]
    assert warned and all(p == {"path": ".gitignore", "problem": "line 1 ignored, not a valid pattern: '[[:foo:]]' "
                                "(invalid character class range: [:foo:])"} for p in warned)


def test_an_unexpected_error_in_a_batch_is_that_batch_s_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """A bug met by one batch (injected: the first re-index after the first scan raises) is logged
    and is the error of its batch; the watch goes on with the next one."""
    from sleuth.watch import watch_index

    root = tmp_path / "notes"
    write(root, "a.md", "# Alpha\n\nwombats\n")
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        engine.index([root], project="notes")
        real, calls = engine.update_paths, []

        def faulty(*args, **kwargs):
            calls.append(args)
            if len(calls) == 2:
                raise RuntimeError("injected")
            return real(*args, **kwargs)

        monkeypatch.setattr(engine, "update_paths", faulty)
        stop, ready = threading.Event(), threading.Event()
        batches: list = []
        thread = threading.Thread(target=watch_index, args=(engine, ["notes"], stop),
                                  kwargs={"on_batch": batches.append, "ready": lambda roots: ready.set()})
        thread.start()
        try:
            assert ready.wait(WAIT_S)
            write(root, "b.md", "# Beta\n\nnumbats\n")
            wait_until("the failed batch", lambda: len(batches) >= 2)
            write(root, "c.md", "# Gamma\n\nquokkas\n")
            wait_until("a file after it", lambda: found(engine, "quokkas") == ["c.md"])
            assert thread.is_alive()
        finally:
            stop.set()
            thread.join(WAIT_S)
    assert batches[1].error == "unexpected error: RuntimeError: injected"
    assert [b.error for b in batches[2:]] == [None] * len(batches[2:])
    assert any(r.exc_info and "re-indexing" in r.getMessage() for r in caplog.records)


def test_the_broker_s_watcher_outlives_an_unexpected_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception out of the watch itself (injected: the first watch raises at once) no longer
    ends the thread ``sleuth-broker-watch``: it is logged, and the thread watches again."""
    import sleuth.watch
    from sleuth.broker import server

    root = tmp_path / "notes"
    write(root, "a.md", "# Alpha\n\nwombats\n")
    real, calls = sleuth.watch.watch_index, []

    def faulty(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise RuntimeError("injected")
        return real(*args, **kwargs)

    monkeypatch.setattr(sleuth.watch, "watch_index", faulty)
    monkeypatch.setattr(server, "WATCHER_RETRY_WAIT_S", 0.01)
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        engine.index([root], project="notes")
        stop, thread = server.start_watcher(engine)
        try:
            assert thread.name == "sleuth-broker-watch"
            wait_until("the second watch", lambda: len(calls) == 2)
            write(root, "b.md", "# Beta\n\nnumbats\n")
            wait_until("a new file", lambda: found(engine, "numbats") == ["b.md"])
            assert thread.is_alive()
        finally:
            stop.set()
            thread.join(WAIT_S)
        assert not thread.is_alive()


@pytest.mark.parametrize("name", ["i[z-a]", "i[x]", "i*"])
def test_an_index_folder_named_like_a_glob_inside_its_root_is_left_out(tmp_path: Path, name: str) -> None:
    """The index folder, when inside the root, is left out by an exclude made of its path, which was
    read as a glob: ``i[z-a]`` stopped ``sleuth index`` (re.error) and ``i[x]`` (which matches ``ix``)
    had the index's own files walked and reported as skipped. It is matched as written now."""
    root = tmp_path / "root"
    write(root, "a.md", "# A\n\nwombats\n")
    write(root, "ix/b.md", "# B\n\nnumbats\n")  # what i[x] matched; i* matches it too
    index = root / name
    for _ in range(2):  # the second run walks the index folder made by the first
        proc = run_cli("index", str(root), "--project", "p", "--index", str(index), "--format", "json", env=LEXICAL)
        report = json.loads(proc.stdout)
        assert (report["scanned"], report["skipped"], report["problems"]) == (2, [], [])
    with Engine(index, Config(model="none")) as engine:
        assert found(engine, "numbats") == ["ix/b.md"]
