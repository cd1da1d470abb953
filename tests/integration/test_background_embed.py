"""Keyword search at once, embedding in a background worker: real `sleuth` processes, a worker held
at a known point by fault injection (no guessed delays), killed with SIGKILL and resumed."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from sleuth.background import (
    EMBED_STATE_FILE,
    HOLD_AFTER_ENV,
    HOLD_BEFORE_LOCK_ENV,
    HOLD_LOADING_ENV,
    INDEX_WAIT_ENV,
    read_state,
)
from sleuth.indexer import EMBED_COMMIT_BLOCKS
from tests.integration.conftest import SLEUTH, run_cli, signalled

#: Documents of one block each: more than one embedding batch.
DOCS = EMBED_COMMIT_BLOCKS + 44
#: A generous safety net for the worker to reach its hold point (it loads the model first).
HOLD_WAIT_S = 240.0


def corpus(root: Path) -> Path:
    """``DOCS`` notes of one paragraph each, every one different (no vector is shared)."""
    animals = ["owl", "bat", "fox", "eel", "elk", "yak", "emu", "ant"]
    root.mkdir(parents=True)
    for i in range(DOCS):
        animal = animals[i % len(animals)]
        (root / f"note-{i:03d}.md").write_text(
            f"Field note {i}: the {animal} was seen near marker {i * 7} at dusk, hunting quietly.\n", encoding="utf-8")
    return root


def vectors_in(index: Path) -> int:
    with sqlite3.connect(index / "catalog.sqlite3") as conn:
        return int(conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])


def status(index: Path) -> dict[str, Any]:
    return json.loads(run_cli("status", "--index", str(index), "--format", "json").stdout)


def held_worker_state(index: Path) -> dict[str, Any]:
    """The worker's state once it has committed its first batch and holds there."""
    deadline = time.monotonic() + HOLD_WAIT_S
    while time.monotonic() < deadline:
        try:
            state = json.loads((index / EMBED_STATE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            state = {}
        if state.get("embedded", 0) >= EMBED_COMMIT_BLOCKS:
            return state
        time.sleep(0.1)
    raise AssertionError(f"the worker did not reach its hold point; its log: {(index / 'embed.log').read_text()}")


def loading_state(index: Path) -> None:
    """Until the embedding process says it loads the model (held there by ``HOLD_LOADING_ENV``)."""
    deadline = time.monotonic() + HOLD_WAIT_S
    while (read_state(index) or {}).get("state") != "loading":  # the process's own start-up first
        assert time.monotonic() < deadline, read_state(index)
        time.sleep(0.05)


def interrupted(args: list[str], env: dict[str, str], ready: Any) -> tuple[int, str, str]:
    """``sleuth ARGS`` (``env``: added to this process's) stopped by SIGINT once ``ready()`` returned:
    its status, stdout and stderr."""
    return signalled([*SLEUTH, *args], {**os.environ, **env}, lambda _proc: ready())


def test_keyword_search_at_once_embedding_in_the_background_resumes_after_kill_9(tmp_path: Path) -> None:
    notes, index = corpus(tmp_path / "notes"), tmp_path / "idx"
    proc = run_cli("index", str(notes), "--project", "notes", "--index", str(index), "--format", "json",
                   "--no-wait", env={HOLD_AFTER_ENV: str(EMBED_COMMIT_BLOCKS)})
    report = json.loads(proc.stdout)
    assert (report["added"], report["blocks"], report["embedded"]) == (DOCS, DOCS, 0)
    assert report["embedding"]["state"] == "background" and report["embedding"]["pending_blocks"] == DOCS
    worker = report["embedding"]["pid"]
    try:
        # The keyword lanes answer before any vector exists.
        hits = json.loads(run_cli("search", "marker 707", "--lanes", "bm25", "--index", str(index),
                                  "--format", "json").stdout)["hits"]
        assert hits[0]["path"] == "note-101.md"

        state = held_worker_state(index)  # one batch committed, the worker held by the fault
        assert (state["pid"], state["state"], state["embedded"]) == (worker, "running", EMBED_COMMIT_BLOCKS)
        st = status(index)["vector_lane"]
        assert (st["blocks_with_vectors"], st["blocks"]) == (EMBED_COMMIT_BLOCKS, DOCS)
        assert st["embedding"]["state"] == "running" and st["embedding"]["pid"] == worker
        assert (st["embedding"]["embedded"], st["embedding"]["total"]) == (EMBED_COMMIT_BLOCKS, DOCS)
        assert st["embedding"]["rate_blocks_per_s"] > 0 and st["embedding"]["eta_s"] > 0
        text = run_cli("status", "--index", str(index)).stdout
        assert f"embedding in progress (process {worker}): {EMBED_COMMIT_BLOCKS} of {DOCS} blocks (85 %) embedded" \
            in text

        # The vector lane answers with the vectors it has, and the response says embedding goes on.
        resp = json.loads(run_cli("search", "an owl hunting at dusk", "--index", str(index), "--format",
                                  "json").stdout)
        assert "vector" in resp["lanes"] and "vector" not in resp["unavailable_lanes"]
        assert resp["notice"] == (f"the vector lane does not see {DOCS - EMBED_COMMIT_BLOCKS} document(s) yet:"
                                  " embedding is in progress")
        assert any("vector" in h["sources"] for h in resp["hits"])

        # Embedding under way needs no attention.
        doctor = run_cli("doctor", "--index", str(index), "--format", "json")
        assert doctor.returncode == 0 and json.loads(doctor.stdout)["lanes"]["vector"]["details"]["embedding"] == \
            "running"

        # Only one process embeds an index: a second worker leaves the work to the first.
        second = run_cli("embed", "--worker", "--index", str(index))
        assert second.returncode == 0 and vectors_in(index) == EMBED_COMMIT_BLOCKS
    finally:
        os.kill(worker, signal.SIGKILL)
    wait_gone(worker)

    st = status(index)["vector_lane"]["embedding"]
    died = f"the embedding process {worker} ended before it finished (killed, or it crashed)"
    assert st == {"state": "stopped", "embedded": EMBED_COMMIT_BLOCKS, "total": DOCS, "error": died}
    assert ("embedding stopped: 256 of 300 blocks (85 %) embedded and no process is embedding the rest; the last "
            f"run failed: {died}: run `sleuth embed` to resume") in run_cli("status", "--index", str(index)).stdout
    doctor = run_cli("doctor", "--index", str(index), check=False)  # blocks wait, nobody embeds them
    assert doctor.returncode == 1 and (f"({EMBED_COMMIT_BLOCKS} of {DOCS} blocks embedded: it does not see the "
                                       "others, and no process is embedding them: run `sleuth embed` to resume)"
                                       ) in doctor.stdout

    # The next run embeds only what the killed worker had not committed.
    resumed = json.loads(run_cli("embed", "--index", str(index), "--format", "json").stdout)
    assert (resumed["embedded"], resumed["blocks_with_vectors"], resumed["blocks"]) == \
        (DOCS - EMBED_COMMIT_BLOCKS, DOCS, DOCS)
    assert status(index)["vector_lane"]["embedding"] == {"state": "done", "embedded": DOCS, "total": DOCS}
    assert run_cli("doctor", "--index", str(index)).returncode == 0
    resp = json.loads(run_cli("search", "an owl hunting at dusk", "--index", str(index), "--format", "json").stdout)
    assert resp["notice"] is None


def wait_gone(pid: int) -> None:
    """Until process ``pid`` has ended (a safety net of a minute: SIGKILL is immediate)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":  # ended, not yet reaped by its new parent
                return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} still runs")


def test_status_and_doctor_right_after_index_count_the_worker_still_starting(tmp_path: Path) -> None:
    """A new user's trial (stop 32): `sleuth status` straight after `sleuth index` said "embedding
    stopped ... no process is embedding the rest" (doctor exited 1) while the worker index had just
    started was still loading, or named the previous worker. The worker here is held before it
    takes the embed lock, where a loading worker is."""
    notes, index = corpus(tmp_path / "notes"), tmp_path / "idx"
    proc = run_cli("index", str(notes), "--project", "notes", "--index", str(index), "--format", "json",
                   "--no-wait", env={HOLD_BEFORE_LOCK_ENV: "1"})
    worker = json.loads(proc.stdout)["embedding"]["pid"]
    try:
        assert status(index)["vector_lane"]["embedding"] == {"state": "running", "embedded": 0, "total": DOCS,
                                                             "pid": worker, "starting": True}
        assert f"  embedding starting (process {worker}): loading the model; 0 of {DOCS} blocks (0 %) embedded so far" \
            in run_cli("status", "--index", str(index)).stdout.splitlines()
        doctor = run_cli("doctor", "--index", str(index), "--format", "json", check=False)
        assert doctor.returncode == 0
        assert json.loads(doctor.stdout)["lanes"]["vector"]["details"]["embedding"] == "running"
        # a second run leaves its blocks to the worker starting, as to one embedding
        (notes / "extra.md").write_text("An extra note about a heron.\n", encoding="utf-8")
        again = json.loads(run_cli("index", str(notes), "--project", "notes", "--index", str(index), "--format",
                                   "json", "--no-wait").stdout)
        assert again["embedding"] == {"state": "background", "pending_blocks": DOCS + 1, "started": False,
                                      "pid": worker}
    finally:
        os.kill(worker, signal.SIGKILL)
    wait_gone(worker)
    # a worker gone before it wrote its own state counts no more
    assert status(index)["vector_lane"]["embedding"] == {
        "state": "stopped", "embedded": 0, "total": DOCS + 1,
        "error": f"the embedding process {worker} ended before it finished (killed, or it crashed)"}
    assert run_cli("doctor", "--index", str(index), check=False).returncode == 1


def test_status_says_the_worker_loads_the_model(tmp_path: Path) -> None:
    """A new user's trial: while the worker loaded the model (28 s the first time) `sleuth status`
    said "0 of N blocks embedded" and nothing of the load. The worker here is held once it has the
    embed lock and said it loads the model; killed there, it is said to have ended."""
    notes, index = corpus(tmp_path / "notes"), tmp_path / "idx"
    proc = run_cli("index", str(notes), "--project", "notes", "--index", str(index), "--format", "json",
                   "--no-wait", env={HOLD_LOADING_ENV: "1"})
    worker = json.loads(proc.stdout)["embedding"]["pid"]
    try:
        loading_state(index)
        assert status(index)["vector_lane"]["embedding"] == {"state": "running", "embedded": 0, "total": DOCS,
                                                             "pid": worker, "starting": True}
        assert f"  embedding starting (process {worker}): loading the model; 0 of {DOCS} blocks (0 %) embedded so far" \
            in run_cli("status", "--index", str(index)).stdout.splitlines()
    finally:
        os.kill(worker, signal.SIGKILL)
    wait_gone(worker)
    assert status(index)["vector_lane"]["embedding"]["error"].startswith(
        f"the embedding process {worker} ended before it finished (killed, or it crashed)")


def test_ctrl_c_while_the_model_loads_is_said_so(tmp_path: Path) -> None:
    """Ctrl-C of `sleuth embed` while it loads the model: status says the last run was interrupted,
    not that its process was killed or crashed (the state said "loading")."""
    from sleuth.engine import Engine

    notes, index = corpus(tmp_path / "notes"), tmp_path / "idx"
    with Engine(index) as engine:
        engine.index([notes], project="notes", embed=False)
    code, _, err = interrupted(["embed", "--index", str(index)], {HOLD_LOADING_ENV: "1"},
                               lambda: loading_state(index))
    assert code == 130, err
    assert status(index)["vector_lane"]["embedding"] == {
        "state": "stopped", "embedded": 0, "total": DOCS, "error": "interrupted (Ctrl-C)"}


def test_index_returns_and_embed_waits_for_the_worker(tmp_path: Path) -> None:
    notes, index = corpus(tmp_path / "notes"), tmp_path / "idx"
    out = run_cli("index", str(notes), "--project", "notes", "--index", str(index), "--no-wait",
                  env={INDEX_WAIT_ENV: "1"}).stdout  # --no-wait beats the environment
    assert f"keyword search is ready; embedding {DOCS} block(s) in the background (process " in out
    # `sleuth embed` waits for the worker, then embeds whatever is left: nothing is embedded twice.
    waited = json.loads(run_cli("embed", "--index", str(index), "--format", "json").stdout)
    assert (waited["blocks_with_vectors"], waited["blocks"]) == (DOCS, DOCS)
    assert vectors_in(index) == DOCS
    assert status(index)["vector_lane"]["embedding"]["state"] == "done"
    # Nothing changed: nothing to embed, no worker started.
    again = json.loads(run_cli("index", str(notes), "--project", "notes", "--index", str(index), "--format", "json",
                               "--no-wait").stdout)
    assert again["unchanged"] == DOCS and "embedding" not in again


def test_index_wait_embeds_before_it_returns_with_progress_lines_on_stderr(tmp_path: Path) -> None:
    notes, index = corpus(tmp_path / "notes"), tmp_path / "idx"
    proc = subprocess.run([*SLEUTH, "index", str(notes), "--project", "notes", "--index", str(index), "--wait"],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "SLEUTH_PROGRESS_INTERVAL_S": "0", INDEX_WAIT_ENV: "0"})
    assert proc.returncode == 0, proc.stderr
    assert f"{DOCS} blocks written, {DOCS} embedded, 0 skipped" in proc.stdout
    assert "sleuth index:" not in proc.stdout  # progress goes to stderr only
    lines = proc.stderr.splitlines()
    assert all(line.startswith("sleuth index: ") for line in lines)
    phases = [line.split(": ", 1)[1].split(" | ") for line in lines]
    assert [p.split(" ")[0] for p in phases[-1]] == ["scan", "parse", "postings", "embedding"]
    assert phases[-1][0].startswith(f"scan {DOCS}/{DOCS} files") and phases[-1][0].endswith(" s")
    assert phases[-1][3].startswith(f"embedding {DOCS}/{DOCS} blocks, ") and ", done in " in phases[-1][3]
    # Interval 0: a line at every change, so the parse is seen part-way with its total known.
    assert any(p[1].startswith("parse ") and f"/{DOCS} files" in p[1] and "ETA" in p[1]
               for p in phases if len(p) > 1 and not p[1].startswith(f"parse {DOCS}/"))
    assert vectors_in(index) == DOCS


def test_sleuth_embed_says_what_the_worker_it_waited_for_embedded(tmp_path: Path) -> None:
    """A new user's trial: `make demo-wait` waited 4 min 30 s for the worker, then printed
    "embedded 0 block(s)" (only what `sleuth embed` itself embedded). The worker here is this test
    holding the embed lock and embedding, as a worker does."""
    from sleuth.background import embed_lock
    from sleuth.engine import Engine

    notes, index = tmp_path / "notes", tmp_path / "idx"
    notes.mkdir()
    for i in range(5):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nThe {i}th note about tides.\n", encoding="utf-8")
    with Engine(index) as engine:
        engine.index([notes], project="notes", embed=False)
        with embed_lock(index, 0) as held:
            assert held
            proc = subprocess.Popen([*SLEUTH, "embed", "--index", str(index)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            assert proc.stderr is not None
            assert proc.stderr.readline().startswith("waiting for the embedding worker")
            assert engine.embed_pending() == 5
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "embedded 0 block(s) here and the background worker 5 while this waited" in out
    assert out.rstrip().endswith("; 5 of 5 blocks have a vector")
    # Its progress line says the same (it said "embedding 5/5 blocks, done in 0 s"), the wait's
    # length as precise as it is short.
    last = err.splitlines()[-1]
    assert re.fullmatch(r"sleuth embed: embedding 5/5 blocks, 5 embedded by another process while this one "
                        r"waited (under 0\.1 s|\d\.\d s|\d+ s|\d+ min \d\d s)", last), last
    assert re.fullmatch(r"embedded 0 block\(s\) here and the background worker 5 while this waited "
                        r"(under 0\.1 s|\d\.\d s|\d+ s|\d+ min \d\d s); 5 of 5 blocks have a vector", out.strip()), out
    # Nothing left: `sleuth embed` says so, and no "done in 0 s".
    again = run_cli("embed", "--index", str(index))
    assert again.stderr.splitlines() == ["sleuth embed: embedding 5/5 blocks, already embedded"]
    assert again.stdout == "embedded 0 block(s) here; 5 of 5 blocks have a vector\n"


def test_sleuth_embed_shows_the_workers_progress_while_it_waits_and_ctrl_c_stops_the_wait(tmp_path: Path) -> None:
    """A new user's trial: `sleuth embed` (`make demo-wait`) printed nothing for minutes while it
    waited, though `sleuth status` showed the worker's count, rate and ETA. The worker is held by
    fault injection after its first batch; `sleuth embed` shows the worker's figures, those of
    `sleuth status`, until Ctrl-C stops it."""
    from sleuth.progress import format_duration

    notes, index = corpus(tmp_path / "notes"), tmp_path / "idx"
    worker = json.loads(run_cli("index", str(notes), "--project", "notes", "--index", str(index), "--format", "json",
                                "--no-wait", env={HOLD_AFTER_ENV: str(EMBED_COMMIT_BLOCKS)}).stdout)["embedding"]["pid"]
    proc = None
    try:
        rate = held_worker_state(index)["rate_blocks_per_s"]
        st = status(index)["vector_lane"]["embedding"]
        assert (st["embedded"], st["total"], st["rate_blocks_per_s"]) == (EMBED_COMMIT_BLOCKS, DOCS, rate)
        # SIGINT as a terminal has it (a suite run in the background ignores it, and so would this process)
        proc = subprocess.Popen([*SLEUTH, "embed", "--index", str(index)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "SLEUTH_PROGRESS_INTERVAL_S": "0"},
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert proc.stderr is not None
        assert proc.stderr.readline() == "waiting for the embedding worker to finish (its progress follows)\n"
        assert proc.stderr.readline() == (f"sleuth embed: embedding {EMBED_COMMIT_BLOCKS}/{DOCS} blocks by process "
                                          f"{worker}, {rate:,.1f} blocks/s, ETA {format_duration(st['eta_s'])}\n")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        assert (proc.returncode, out) == (130, "")
        # The worker it waited for goes on: not "run `sleuth embed` again to go on".
        assert err.rstrip().splitlines()[-1] == ("sleuth embed: interrupted; the background worker goes on embedding:"
                                                 " `sleuth status` shows how far, `sleuth embed` waits for it again")
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        os.kill(worker, signal.SIGKILL)
    wait_gone(worker)
    assert vectors_in(index) == EMBED_COMMIT_BLOCKS


def test_sleuth_index_leaves_new_blocks_to_the_worker_already_running(tmp_path: Path) -> None:
    """A new user's trial: `sleuth index` run again while the first run's worker embedded named a
    new worker process that only waited 10 s for the lock and left, while the first one embedded.
    The running worker here is this test holding the embed lock; then it embeds, as a worker does."""
    from sleuth.background import embed_lock
    from sleuth.engine import Engine

    notes, index = tmp_path / "notes", tmp_path / "idx"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nThe first note.\n", encoding="utf-8")
    with Engine(index) as engine:
        engine.index([notes], project="notes", embed=False)
    (notes / "b.md").write_text("# B\n\nThe second note.\n", encoding="utf-8")
    with embed_lock(index, 0) as held:
        assert held
        background = {INDEX_WAIT_ENV: "0"}
        report = json.loads(run_cli("index", str(notes), "--index", str(index), "--format", "json",
                                    env=background).stdout)
        text = run_cli("index", str(notes), "--index", str(index), env=background).stdout  # same pending
        with Engine(index) as engine:
            assert engine.embed_pending() == 2  # the worker takes the blocks of both runs
    assert report["embedding"] == {"state": "background", "pending_blocks": 2, "started": False, "pid": None}
    assert ("the embedding worker already running has 2 block(s) of the index left to embed, this run's among"
            " them") in text
    assert not (index / "embed.log").exists()  # no worker process was started


def test_a_record_written_after_the_worker_was_killed_starts_a_new_one_and_returns(tmp_path: Path) -> None:
    """A new user's trial: a project_memory_record written after the background worker died with
    blocks left embedded all of them inside the write (minutes). The worker here is killed with
    SIGKILL at its hold point; the record goes through a real MCP session of `sleuth serve`."""
    from tests.integration.mcp_session import session

    notes, index = corpus(tmp_path / "notes"), tmp_path / "idx"
    proc = run_cli("index", str(notes), "--project", "notes", "--index", str(index), "--format", "json",
                   "--no-wait", env={HOLD_AFTER_ENV: str(EMBED_COMMIT_BLOCKS)})
    killed = json.loads(proc.stdout)["embedding"]["pid"]
    try:
        held_worker_state(index)
    finally:
        os.kill(killed, signal.SIGKILL)
    wait_gone(killed)
    assert status(index)["vector_lane"]["embedding"] == {
        "state": "stopped", "embedded": EMBED_COMMIT_BLOCKS, "total": DOCS,
        "error": f"the embedding process {killed} ended before it finished (killed, or it crashed)"}

    (result,) = session(["--index", str(index)], [("project_memory_record", {
        "project_id": "notes", "kind": "note", "title": "Owl survey",
        "body": "Owls nest near marker 707."})])["results"]
    assert not result.is_error, result.content[0].text
    assert result.structured_content["record"]["created"] is True

    # The server started a new worker, which embeds what the killed one left and the record: the
    # write embedded none of them (the worker found them all waiting).
    deadline = time.monotonic() + HOLD_WAIT_S
    state: dict[str, Any] = {}
    while time.monotonic() < deadline and state.get("state") != "done":
        time.sleep(0.1)
        with contextlib.suppress(OSError, ValueError):
            state = json.loads((index / EMBED_STATE_FILE).read_text(encoding="utf-8"))
    assert state.get("state") == "done", (index / "embed.log").read_text()
    wait_gone(state["pid"])
    blocks = status(index)["vector_lane"]["blocks"]
    assert state["pid"] != killed and blocks > DOCS
    assert (state["to_embed"], state["embedded"]) == (blocks - EMBED_COMMIT_BLOCKS, blocks - EMBED_COMMIT_BLOCKS)
    assert status(index)["vector_lane"]["embedding"] == {"state": "done", "embedded": blocks, "total": blocks}
    assert vectors_in(index) == blocks


def test_ctrl_c_of_a_foreground_embedding_is_reported_as_such(tmp_path: Path) -> None:
    """`sleuth index --wait` stopped by Ctrl-C mid-embedding: `sleuth status` said the process was
    killed or crashed (a new user's finding); it says it was interrupted. Held by fault injection
    after its first batch."""
    notes, index = corpus(tmp_path / "notes"), tmp_path / "idx"
    code, out, err = interrupted(["index", str(notes), "--project", "notes", "--index", str(index), "--wait"],
                                 {HOLD_AFTER_ENV: str(EMBED_COMMIT_BLOCKS)}, lambda: held_worker_state(index))
    assert code == 130, err
    assert status(index)["vector_lane"]["embedding"] == {
        "state": "stopped", "embedded": EMBED_COMMIT_BLOCKS, "total": DOCS, "error": "interrupted (Ctrl-C)"}
    assert "; the last run failed: interrupted (Ctrl-C): run `sleuth embed` to resume" in run_cli(
        "status", "--index", str(index)).stdout


def test_embedding_stops_when_its_index_is_deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new user's trial: `make demo` again deletes the demo index under the previous demo's worker,
    which went on embedding into the deleted catalog for a minute at full speed, beside the new
    index's worker. The embedding checks after each committed batch that its index is the one it
    opened. Here the folder is moved away once the first batch is committed (of two)."""
    import shutil

    from sleuth.background import embed_now
    from sleuth.engine import Engine
    from sleuth.errors import StorageError

    notes, index, moved = corpus(tmp_path / "notes"), tmp_path / "idx", tmp_path / "idx-deleted"
    with Engine(index) as engine:
        engine.index([notes], project="notes", embed=False)
        real = engine.indexer.embed_pending

        def embed_pending(progress: Any = None) -> int:
            def after_a_batch(done: int, todo: int) -> None:
                if not moved.exists():
                    shutil.move(index, moved)
                progress(done, todo)
            return real(after_a_batch)

        monkeypatch.setattr(engine.indexer, "embed_pending", embed_pending)
        with pytest.raises(StorageError, match=f"^the index folder {index} was deleted or replaced while embedding:"
                                               " stopped$"):
            embed_now(engine)
    assert vectors_in(moved) == EMBED_COMMIT_BLOCKS  # the first batch, not the second


def test_modules_in_the_index_folder_never_run(tmp_path: Path) -> None:
    """The worker runs in the index folder, and `python -m` put that folder first on the import path:
    a `click.py` there (an index folder may come with a cloned repository) ran in the worker as soon
    as `sleuth index` started it -- code execution from a file. Started with -P and PYTHONPATH's empty
    entry (the working folder) made the caller's folder, it never does."""
    notes, index = corpus(tmp_path / "notes"), tmp_path / "idx"
    run_cli("index", str(notes), "--project", "notes", "--index", str(index), env={"SLEUTH_MODEL": "none"})
    marker = tmp_path / "ran"
    for module in ("click", "numpy", "sleuth"):
        (index / f"{module}.py").write_text(f"open({str(marker)!r}, 'a').write({module!r})\n", encoding="utf-8")
    (notes / "extra.md").write_text("An extra note about a heron.\n", encoding="utf-8")
    worker = json.loads(run_cli("index", str(notes), "--project", "notes", "--index", str(index), "--format", "json",
                                "--no-wait", env={"PYTHONPATH": os.pathsep + os.environ.get("PYTHONPATH", "")},
                                cwd=tmp_path).stdout)["embedding"]["pid"]
    wait_gone(worker)
    assert not marker.exists()
    assert vectors_in(index) == DOCS + 1
