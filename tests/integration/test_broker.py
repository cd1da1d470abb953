"""The broker with real processes: `sleuth serve` sessions (thin pipes) sharing one broker per index,
writes while they read, cancelling across sessions, kill -9, idle exit, `sleuth broker status|stop`.

Every test here turns the broker on (tests/conftest.py turns it off for the rest of the suite) in
a private folder, and stops the brokers it started.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from sleuth.broker.client import _lock_free, list_brokers, start_broker, stop_brokers
from sleuth.broker.paths import BrokerPaths, broker_dir, broker_key
from tests.integration.conftest import SLEUTH, run_cli
from tests.integration.mcp_session import serve_env

#: Generous upper bound for anything these tests wait for (the machine is shared), in seconds.
WAIT_S = 180.0
#: Concurrent reading sessions in the many-sessions test, and what the writer adds meanwhile.
READERS = 8
WAVES = 5
WAVE_DOCS = 3

NOTES = {
    "walrus.md": "---\ntitle: Walrus migration\n---\n# Walrus migration\n\nThe walrus herd moves north in spring.\n",
    "ledger.md": "---\ntitle: Ledger design\n---\n# Ledger design\n\nDouble-entry ledger with idempotent writes.\n",
}


@pytest.fixture(scope="module")
def corpus(hugo_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index with project "hugo" (the real Hugo docs sample) and project "notes"; returns the index."""
    root = tmp_path_factory.mktemp("broker-corpus")
    shutil.copytree(hugo_sample, root / "hugo")
    (root / "notes").mkdir()
    for name, text in NOTES.items():
        (root / "notes" / name).write_text(text, encoding="utf-8")
    index = root / "idx"
    run_cli("index", str(root / "hugo"), "--project", "hugo", "--index", str(index))
    run_cli("index", str(root / "notes"), "--project", "notes", "--index", str(index))
    return index


def broker_env_for(folder: str, **extra: str) -> dict[str, str]:
    return serve_env({"SLEUTH_BROKER": "1", "SLEUTH_BROKER_DIR": folder, "SLEUTH_BROKER_IDLE_S": "600", **extra})


@pytest.fixture
def broker_env() -> Iterator[dict[str, str]]:
    """The environment of sessions using a broker in a fresh private folder; brokers stopped after."""
    folder = tempfile.mkdtemp(prefix="sbt-", dir="/tmp")
    env = broker_env_for(folder)
    yield env
    stop_brokers(None, env)
    shutil.rmtree(folder, ignore_errors=True)


@asynccontextmanager
async def session(index: Path, env: dict[str, str], *args: str, module: str = "sleuth",
                  errlog: Any = None) -> AsyncIterator[ClientSession]:
    """A real MCP client session with `python -m MODULE serve --index INDEX ARGS`, initialised."""
    params = StdioServerParameters(command=sys.executable, args=["-m", module, "serve", "--index", str(index), *args],
                                   env=env)
    async with stdio_client(params, errlog=errlog or sys.stderr) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


def ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return result.structured_content if result.structured_content is not None else json.loads(result.content[0].text)


def brokers(index: Path | None, env: dict[str, str]) -> list[dict[str, Any]]:
    """`sleuth broker status --format json` (of ``index``, or ``--all``) run as a command."""
    args = ["broker", "status", "--format", "json", *(["--index", str(index)] if index else ["--all"])]
    proc = subprocess.run([*SLEUTH, *args], capture_output=True, text=True, env=env, timeout=WAIT_S, check=True)
    return json.loads(proc.stdout)["brokers"]


def wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {WAIT_S:.0f} s waiting for {what}")
        time.sleep(0.05)


def test_sessions_share_one_broker_that_a_new_session_restarts_after_kill_9(
        corpus: Path, broker_env: dict[str, str]) -> None:
    async def two_sessions() -> dict[str, Any]:
        async with session(corpus, broker_env) as a:
            first = ok(await a.call_tool("project_memory_search",
                                         {"query": "environment variable", "project_id": "hugo"}))
            assert first["results"]
            (status,) = brokers(corpus, broker_env)
            assert status["sessions"] == 1
            # The click command line (`python -m sleuth.cli serve`) goes through the same broker.
            async with session(corpus, broker_env, module="sleuth.cli") as b:
                items = ok(await b.call_tool("search_project", {"project_id": "notes", "query": "walrus"}))
                assert [i["item"]["title"] for i in items["items"]][:1] == ["Walrus migration"]
                (again,) = brokers(corpus, broker_env)
                assert again["pid"] == status["pid"] and again["sessions"] == 2
            return status

    status = anyio.run(two_sessions)
    paths = BrokerPaths(broker_dir(broker_env), status["key"])
    assert oct(paths.socket.stat().st_mode & 0o777) == oct(0o600)
    assert oct(paths.folder.stat().st_mode & 0o777) == oct(0o700)

    os.kill(status["pid"], signal.SIGKILL)
    wait_for(lambda: _lock_free(paths.run_lock), "the killed broker's lock to be released")
    assert paths.socket.exists() and paths.info.exists()  # left behind by kill -9

    async def after_kill() -> None:
        async with session(corpus, broker_env) as c:
            found = ok(await c.call_tool("project_memory_search", {"query": "walrus herd", "project_id": "notes"}))
            assert found["results"][0]["title"] == "Walrus migration"

    anyio.run(after_kill)
    (restarted,) = brokers(corpus, broker_env)
    assert restarted["pid"] != status["pid"] and restarted["sessions_total"] == 1

    # A broker whose socket file was deleted cannot be reached: it exits and releases its lock, so
    # the next session starts a new one instead of waiting for it.
    paths.socket.unlink()
    wait_for(lambda: _lock_free(paths.run_lock), "the unreachable broker to exit")
    anyio.run(after_kill)
    (replaced,) = brokers(corpus, broker_env)
    assert replaced["pid"] != restarted["pid"]


def wave_text(wave: int, n: int) -> str:
    title = f"Zebrafinch wave {wave} note {n}"
    return f"---\ntitle: {title}\n---\n# {title}\n\nThe zebrafinch sang song {wave}.{n} by the river.\n"


def wave_problems(now: tuple[int, int], before: tuple[int, int], memory: list[str], stable: list[str]) -> list[str]:
    """What is wrong with one reader's view: ``now`` and ``before`` are (wave notes, records) seen.
    A wave is one `sleuth index` run: a reader sees all of it or none of it, and never less than it
    saw before; records only accumulate; the stable project's answer does not move."""
    (zebra, quokka), (seen_waves, seen_records) = now, before
    problems = []
    if zebra % WAVE_DOCS or zebra < seen_waves:
        problems.append(f"{zebra} wave notes after {seen_waves}: {memory}")
    if quokka < seen_records:
        problems.append(f"{quokka} records after {seen_records}")
    if not any("Getenv" in t for t in stable[:3]):
        problems.append(f"the Getenv page left the top 3: {stable}")
    return problems


def test_eight_sessions_query_in_parallel_while_a_writer_indexes_and_records(
        hugo_sample: Path, tmp_path: Path, broker_env: dict[str, str]) -> None:
    shutil.copytree(hugo_sample, tmp_path / "hugo")
    waves = tmp_path / "waves"
    waves.mkdir()
    for n in range(WAVE_DOCS):
        (waves / f"zf-0-{n}.md").write_text(wave_text(0, n), encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(tmp_path / "hugo"), "--project", "hugo", "--index", str(index))
    run_cli("index", str(waves), "--project", "waves", "--index", str(index))
    writer_done = anyio.Event()
    problems: list[str] = []
    answers: list[int] = []
    observed: set[tuple[int, int]] = set()
    finals: list[tuple[int, int]] = []
    big = {"limit": 50}

    def titles_of_memory(result: Any) -> list[str]:
        payload = ok(result)
        return [r["title"] for r in payload["results"]]

    def titles_of_items(result: Any) -> list[str]:
        payload = ok(result)
        assert payload["success"] and payload["result_count"] == len(payload["items"])
        return [i["item"]["title"] for i in payload["items"]]

    async def reader(k: int) -> None:
        seen_waves, seen_records = 0, 0
        async with session(index, broker_env) as s:
            while True:
                last_round = writer_done.is_set()
                try:
                    memory = titles_of_memory(await s.call_tool("project_memory_search", {
                        "query": "zebrafinch song", "project_id": "waves", "response_budget_bytes": 1_000_000, **big}))
                    items = titles_of_items(await s.call_tool("search_project", {
                        "project_id": "waves", "query": "quokka observation", **big}))
                    stable = titles_of_items(await s.call_tool("search_project", {
                        "project_id": "hugo", "query": "os.Getenv environment variable", "limit": 5}))
                except AssertionError as exc:
                    problems.append(f"reader {k}: error answer: {exc}")
                    return
                answers.append(3)  # three answers, all checked
                zebra = sum(t.startswith("Zebrafinch wave") for t in memory)
                quokka = sum(t.startswith("Quokka record") for t in items)
                problems.extend(f"reader {k}: {p}" for p in wave_problems(
                    (zebra, quokka), (seen_waves, seen_records), memory, stable))
                seen_waves, seen_records = zebra, quokka
                observed.add((zebra, quokka))
                if last_round:
                    finals.append((zebra, quokka))
                    return

    async def writer() -> None:
        try:
            async with session(index, broker_env) as w:
                for wave in range(1, WAVES + 1):
                    for n in range(WAVE_DOCS):
                        (waves / f"zf-{wave}-{n}.md").write_text(wave_text(wave, n), encoding="utf-8")
                    async with anyio.create_task_group() as tg:  # a `sleuth index` and a record at the same time
                        tg.start_soon(anyio.to_thread.run_sync, lambda: run_cli(
                            "index", str(waves), "--project", "waves", "--index", str(index)))
                        receipt = ok(await w.call_tool("project_memory_record", {
                            "kind": "note", "project_id": "waves", "title": f"Quokka record {wave}",
                            "body": f"A quokka observation, number {wave}."}))
                        assert receipt["record"]["created"]
        finally:
            writer_done.set()

    async def main() -> None:
        async with anyio.create_task_group() as tg:  # every session starts at once: one broker is started
            for k in range(READERS):
                tg.start_soon(reader, k)
            tg.start_soon(writer)

    anyio.run(main)
    assert problems == []
    assert finals == [(WAVE_DOCS * (WAVES + 1), WAVES)] * READERS
    (status,) = brokers(index, broker_env)
    assert status["sessions_total"] == READERS + 1 and status["gate"]["writes"] == WAVES
    assert len(answers) >= READERS * 2
    print(f"{sum(answers)} answers; states seen (wave notes, records): {sorted(observed)}")
    assert len({zebra for zebra, _ in observed}) > 2  # the readers did read while the writer wrote


def test_query_cancel_from_one_session_stops_a_request_of_another(corpus: Path) -> None:
    folder = tempfile.mkdtemp(prefix="sbt-", dir="/tmp")
    # A broker of its own (other settings); the delay only has to outlast the sessions' start on a
    # busy machine: the cancel ends the request at once.
    slow = broker_env_for(folder, SLEUTH_FAULT_LANE_DELAY_MS="vector=600000")
    outcome: dict[str, Any] = {}

    async def searcher() -> None:
        async with session(corpus, slow) as a:
            outcome["a"] = await a.call_tool("project_memory_search", {
                "query": "environment variable", "project_id": "hugo", "request_id": "slow-1"})

    async def canceller() -> None:
        async with session(corpus, slow) as b, session(corpus, slow, "--project", "notes") as other:
            with anyio.fail_after(WAIT_S):
                while True:
                    status = await b.call_tool("query_status", {"request_id": "slow-1"})
                    if not status.is_error and status.structured_content["query_status"]["state"] == "running":
                        break
                    await anyio.sleep(0.05)
            # A session with other project access does not see (or cancel) the request.
            hidden = await other.call_tool("query_cancel", {"request_id": "slow-1"})
            assert hidden.is_error and hidden.structured_content["error"]["code"] == "REQUEST_NOT_FOUND"
            cancelled = ok(await b.call_tool("query_cancel", {"request_id": "slow-1", "reason": "user moved on"}))
            assert cancelled["query_status"]["cancel_requested"] is True
            with anyio.fail_after(WAIT_S):
                while "a" not in outcome:
                    await anyio.sleep(0.05)
            final = ok(await b.call_tool("query_status", {"request_id": "slow-1"}))
            outcome["status"] = final["query_status"]

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(searcher)
            tg.start_soon(canceller)

    try:
        anyio.run(main)
    finally:
        stop_brokers(None, slow)
        shutil.rmtree(folder, ignore_errors=True)
    result = outcome["a"]
    assert result.is_error
    error = result.structured_content["error"]
    assert (error["code"], error["request_id"]) == ("QUERY_CANCELLED", "slow-1")
    assert error["cancel_reason"] == "user moved on"
    assert outcome["status"]["state"] == "cancelled"


def test_broker_status_says_why_no_broker_can_start(tmp_path: Path, broker_env: dict[str, str]) -> None:
    index = tmp_path / ".sleuth"
    index.mkdir()
    (index / "config.toml").write_text('fusion = "bogus"\n', encoding="utf-8")
    text = subprocess.run([*SLEUTH, "broker", "status", "--index", str(index)], capture_output=True, text=True,
                          env=broker_env, timeout=WAIT_S, check=True).stdout
    assert text.splitlines() == [
        f"no broker running for {index}",
        f"  and none can start: fusion must be one of rrf, convex, zscore, got 'bogus' (settings from"
        f" {index / 'config.toml'})"]


def test_broker_status_stop_and_idle_exit(corpus: Path, broker_env: dict[str, str]) -> None:
    async def one_search(env: dict[str, str]) -> None:
        async with session(corpus, env) as s:
            ok(await s.call_tool("search_project", {"project_id": "notes", "query": "ledger"}))

    anyio.run(one_search, broker_env)
    (status,) = brokers(corpus, broker_env)
    assert status["state"] == "serving" and status["index"] == str(corpus.resolve())
    assert status["sessions"] == 0 and status["idle_exit_s"] == 600
    text = subprocess.run([*SLEUTH, "broker", "status", "--index", str(corpus)], capture_output=True, text=True,
                          env=broker_env, timeout=WAIT_S, check=True).stdout
    assert f"broker {status['pid']} for {corpus.resolve()}: 0 session(s) (1 since start)" in text
    stop = subprocess.run([*SLEUTH, "broker", "stop", "--index", str(corpus)], capture_output=True, text=True,
                          env=broker_env, timeout=WAIT_S)
    assert stop.returncode == 0 and f"broker {status['pid']} for {corpus.resolve()}: stopped" in stop.stdout
    assert brokers(corpus, broker_env) == []
    again = subprocess.run([*SLEUTH, "broker", "stop", "--index", str(corpus)], capture_output=True, text=True,
                           env=broker_env, timeout=WAIT_S, check=True)
    assert again.stdout.startswith("no broker running")

    quick = {**broker_env, "SLEUTH_BROKER_IDLE_S": "1"}
    anyio.run(one_search, quick)
    wait_for(lambda: brokers(corpus, quick) == [], "the idle broker to exit")
    logs = [p.read_text() for p in Path(quick["SLEUTH_BROKER_DIR"]).glob("*.log")]
    assert any("stopped: idle for 1 s" in log for log in logs)


def test_a_refused_session_reports_one_line_and_an_unusable_broker_folder_falls_back(
        corpus: Path, tmp_path: Path, broker_env: dict[str, str]) -> None:
    bad = subprocess.run([*SLEUTH, "serve", "--index", str(corpus), "--project", "nope"], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, env=broker_env, timeout=WAIT_S)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip() == "error: unknown project(s) for --project: nope"
    # a name reads as `sleuth index --project` read it: " Notes" is the project notes (the session
    # starts and ends at the end of its input)
    named = subprocess.run([*SLEUTH, "serve", "--index", str(corpus), "--project", " Notes"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, env=broker_env, timeout=WAIT_S)
    assert (named.returncode, named.stdout) == (0, ""), named.stderr

    (tmp_path / "not-a-folder").write_text("x")
    env = {**broker_env, "SLEUTH_BROKER_DIR": str(tmp_path / "not-a-folder")}
    errlog = tmp_path / "stderr.txt"

    async def fallback() -> None:
        with errlog.open("w") as err:
            async with session(corpus, env, errlog=err) as s:
                ok(await s.call_tool("search_project", {"project_id": "notes", "query": "ledger"}))

    anyio.run(fallback)
    assert "is not a folder" in errlog.read_text() and "serving this session in its own process" in errlog.read_text()
    assert list_brokers(corpus, env) == []


def test_a_broker_whose_index_is_made_anew_stops_and_the_next_session_uses_the_new_index(
        tmp_path: Path, broker_env: dict[str, str]) -> None:
    lexical = {**broker_env, "SLEUTH_MODEL": "none"}  # what the index holds is not the point here
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# Alpha\n\nThe narwhal tusk.\n", encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(tmp_path / "notes"), "--project", "notes", "--index", str(index), env=lexical)

    async def search(query: str) -> list[str]:
        async with session(index, lexical) as s:
            items = ok(await s.call_tool("search_project", {"project_id": "notes", "query": query}))
            return [i["item"]["title"] for i in items["items"]]

    assert anyio.run(search, "narwhal") == ["Alpha"]
    (first,) = brokers(index, lexical)
    shutil.rmtree(index)
    (tmp_path / "notes" / "a.md").write_text("# Beta\n\nThe beluga song.\n", encoding="utf-8")
    run_cli("index", str(tmp_path / "notes"), "--project", "notes", "--index", str(index), env=lexical)
    wait_for(lambda: all(b["pid"] != first["pid"] for b in brokers(index, lexical)), "the old broker to stop")
    assert anyio.run(search, "beluga") == ["Beta"]


def test_a_broker_whose_config_was_edited_exits_once_its_sessions_end(
        tmp_path: Path, broker_env: dict[str, str]) -> None:
    """An edit of config.toml gives the next session a broker of the new settings; the old broker
    idled out its ten minutes (about 300 MB each: a new user's finding). It serves its sessions to
    their end, says so in `broker status`, then exits."""
    lexical = {**broker_env, "SLEUTH_MODEL": "none"}
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# Alpha\n\nThe narwhal tusk.\n", encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(tmp_path / "notes"), "--project", "notes", "--index", str(index), env=lexical)

    async def edit_during_a_session() -> None:
        async with session(index, lexical) as s:
            ok(await s.call_tool("search_project", {"project_id": "notes", "query": "narwhal"}))
            (index / "config.toml").write_text('lanes = ["bm25"]\n', encoding="utf-8")
            (old,) = brokers(index, lexical)
            assert (old["config_current"], old["sessions"]) == (False, 1)
            text = run_cli("broker", "status", "--index", str(index), env=lexical).stdout.splitlines()
            assert text[1] == ("  serving the settings of config.toml as it was when it started: it was edited since,"
                               " so new sessions get another broker, and this one exits once its sessions end")
            ok(await s.call_tool("search_project", {"project_id": "notes", "query": "narwhal"}))  # still served
            assert [b["pid"] for b in brokers(index, lexical)] == [old["pid"]]
        wait_for(lambda: brokers(index, lexical) == [], "the old broker to exit")
        log = "".join(p.read_text() for p in Path(lexical["SLEUTH_BROKER_DIR"]).glob("*.log"))
        assert f"broker {old['pid']} stopped: config.toml changed since it started" in log

    anyio.run(edit_during_a_session)

    async def search() -> None:
        async with session(index, lexical) as s:
            ok(await s.call_tool("search_project", {"project_id": "notes", "query": "narwhal"}))

    anyio.run(search)
    (new,) = brokers(index, lexical)
    assert new["config_current"] is True
    stop_brokers(index, lexical)
    # An edit between a session's choosing the broker's key and the broker's reading config.toml (an
    # attack round: that broker said it was current, and idled out 600 s under a key no session asks
    # for): a broker started under the key of the settings before the edit, as a session does.
    before_edit = broker_key(index.resolve(), lexical)
    (index / "config.toml").write_text('lanes = ["index"]\n', encoding="utf-8")
    paths = BrokerPaths(broker_dir(lexical), before_edit)
    start_broker(index.resolve(), paths, lexical)
    wait_for(lambda: paths.info.exists(), "the broker to start")
    wait_for(lambda: brokers(index, lexical) == [], "the broker of a key made before the edit to exit")
    log = paths.log.read_text()
    assert "stopped: config.toml changed since it started" in log


def test_modules_in_the_index_folder_never_run_in_the_broker(tmp_path: Path, broker_env: dict[str, str]) -> None:
    """The broker runs in the index folder, and `python -m` put that folder first on the import
    path: an `mcp.py` or `click.py` there (an index folder may come with a cloned repository) ran in
    the broker of the first session -- code execution from a file (found when an attack round's own
    `mcp.py` made every broker start another). Started with -P, it never does."""
    lexical = {**broker_env, "SLEUTH_MODEL": "none"}
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# Alpha\n\nThe narwhal tusk.\n", encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(tmp_path / "notes"), "--project", "notes", "--index", str(index), env=lexical)
    marker = tmp_path / "ran"
    for module in ("mcp", "click", "anyio"):
        (index / f"{module}.py").write_text(f"open({str(marker)!r}, 'a').write({module!r})\n", encoding="utf-8")

    async def search() -> None:
        async with session(index, lexical) as s:
            ok(await s.call_tool("search_project", {"project_id": "notes", "query": "narwhal"}))

    anyio.run(search)
    (broker,) = brokers(index, lexical)
    assert broker["state"] == "serving" and not marker.exists()


def test_broker_commands_have_help() -> None:
    for command in ("run", "status", "stop"):
        out = run_cli("broker", command, "--help").stdout
        assert f"sleuth broker {command}" in out and len(out.splitlines()) > 3


def test_broker_stop_without_an_index_stops_nothing_unless_told_all(tmp_path: Path) -> None:
    """`sleuth broker stop` where no index is found stopped every broker of the user, other
    projects' sessions included (a new user's finding); --all does that, by name."""
    env = {"SLEUTH_BROKER_DIR": str(tmp_path / "brokers")}
    proc = run_cli("broker", "stop", cwd=tmp_path, check=False, env=env)
    assert (proc.returncode, proc.stdout) == (3, "")
    assert proc.stderr == (f"error: no index found here (looked for .sleuth/ in {tmp_path} and its parents): pass "
                           "--index DIR for its broker, or --all to stop every broker of this user\n")
    assert run_cli("broker", "stop", "--all", cwd=tmp_path, env=env).stdout == "no broker running\n"


def test_a_watching_broker_keeps_the_index_current(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nThe otters build dams.\n", encoding="utf-8")
    index = tmp_path / "idx"
    subprocess.run([*SLEUTH, "index", str(root), "--project", "notes", "--index", str(index)], check=True,
                   capture_output=True, env=serve_env({}))
    folder = tempfile.mkdtemp(prefix="sbw-", dir="/tmp")
    env = broker_env_for(folder, SLEUTH_BROKER_WATCH="1")

    async def titles(s: ClientSession, query: str) -> list[str]:
        found = ok(await s.call_tool("project_memory_search", {"query": query, "project_id": "notes"}))
        return [r["title"] for r in found["results"]]

    async def main() -> None:
        async with session(index, env) as s:
            assert await titles(s, "otters") == ["Alpha"]
            (root / "b.md").write_text("# Beta\n\nThe beavers build lodges.\n", encoding="utf-8")
            (root / "a.md").unlink()
            deadline = time.monotonic() + WAIT_S
            while (await titles(s, "beavers lodges"), await titles(s, "otters")) != (["Beta"], []):
                assert time.monotonic() < deadline, "the watching broker never picked up the changes"
                await anyio.sleep(0.2)

    try:
        anyio.run(main)
    finally:
        stop_brokers(None, env)
        shutil.rmtree(folder, ignore_errors=True)
