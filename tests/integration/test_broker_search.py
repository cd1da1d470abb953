"""`sleuth search` answered by the index's running broker (issue 16 item 6), with real processes:
the same JSON and text with and without a broker, the broker's own count of the searches it
answered, errors worded as in-process, and the in-process search when no broker listens (none
running, a stale socket file, the broker turned off) -- never a broker started for one search."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sleuth.broker.client import list_brokers, stop_brokers
from sleuth.broker.paths import BrokerPaths
from tests.integration.conftest import SLEUTH, run_cli
from tests.integration.mcp_session import serve_env

#: A generous safety net for the broker to start (the machine is shared), in seconds.
WAIT_S = 180.0

NOTES = {
    "walrus.md": "---\ntitle: Walrus migration\ntags: [animals]\n---\n# Walrus migration\n\n"
                 "The walrus herd moves north in spring.\n\n## Feeding\n\nThe walrus eats clams on the sea floor.\n",
    "ledger.md": "# Ledger design\n\nDouble-entry ledger with idempotent writes; the walrus audit trail.\n",
    "plans/roadmap.md": "---\ndate: 2025-06-01\n---\n# Roadmap\n\nShip the walrus tracker next quarter.\n",
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Project notes, and project twin with two roots holding the same path (root-qualified paths)."""
    root = tmp_path_factory.mktemp("broker-search")
    for rel, text in NOTES.items():
        (root / "notes" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "notes" / rel).write_text(text, encoding="utf-8")
    for lang in ("en", "ja"):
        (root / "twin" / lang).mkdir(parents=True)
        (root / "twin" / lang / "guide.md").write_text(f"# Guide\n\nThe walrus guide ({lang}).\n", encoding="utf-8")
    idx = root / "idx"
    run_cli("index", str(root / "notes"), "--project", "notes", "--index", str(idx))
    run_cli("index", str(root / "twin" / "en"), str(root / "twin" / "ja"), "--project", "twin", "--index", str(idx))
    return idx


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    """The broker turned on, in a fresh private folder; brokers stopped afterwards."""
    folder = tempfile.mkdtemp(prefix="sbs-", dir="/tmp")
    environment = serve_env({"SLEUTH_BROKER": "1", "SLEUTH_BROKER_DIR": folder, "SLEUTH_BROKER_IDLE_S": "600"})
    yield environment
    stop_brokers(None, environment)
    shutil.rmtree(folder, ignore_errors=True)


def sleuth(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SLEUTH, *args], capture_output=True, text=True, env=env, timeout=WAIT_S)


def search_json(env: dict[str, str], index: Path, *args: str) -> dict[str, Any]:
    proc = sleuth(env, "search", *args, "--index", str(index), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    out.pop("took_ms")  # the one field that is a measurement
    return out  # type: ignore[no-any-return]


def search_text(env: dict[str, str], index: Path, *args: str) -> str:
    proc = sleuth(env, "search", *args, "--index", str(index))
    assert proc.returncode == 0, proc.stderr
    return "\n".join(line.rsplit(" in ", 1)[0] if line.endswith(" ms") else line for line in proc.stdout.splitlines())


@pytest.fixture
def broker(index: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """`sleuth broker run` for the index, serving (the same process a `sleuth serve` session starts)."""
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([*SLEUTH, "broker", "run", "--index", str(index)], stdout=subprocess.DEVNULL,
                            stderr=log, text=True, env=env)
    deadline = time.monotonic() + WAIT_S
    while not [b for b in list_brokers(index.resolve(), env) if b.get("state") == "serving" and b.get("warm") is True]:
        if proc.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            raise AssertionError(f"the broker did not start: {log.read()}")
        time.sleep(0.05)
    yield proc
    stop_brokers(None, env)
    proc.wait(timeout=WAIT_S)
    log.close()


def searches_answered(index: Path, env: dict[str, str]) -> int:
    (status,) = list_brokers(index.resolve(), env)
    return int(status["searches_total"])


QUERIES: list[tuple[str, ...]] = [
    ("walrus",),
    ("walrus migration", "--explain", "--limit", "2", "--offset", "1"),
    ("walrus", "--project", "twin"),
    ("walrus", "--tag", "animals", "--since", "2020-01-01"),
    ("walrus", "--lanes", "bm25,tfidf"),
]


def test_the_broker_answers_sleuth_search_with_the_same_output(index: Path, env: dict[str, str]) -> None:
    alone_json = [search_json(env, index, *q) for q in QUERIES]
    alone_text = [search_text(env, index, *q) for q in QUERIES]
    alone_error = sleuth(env, "search", "walrus", "--project", "nope", "--index", str(index))
    assert list_brokers(index.resolve(), env) == []  # no broker started for a search
    assert alone_json[0]["hits"] and alone_error.returncode != 0

    proc = subprocess.Popen([*SLEUTH, "broker", "run", "--index", str(index)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        deadline = time.monotonic() + WAIT_S
        while not [b for b in list_brokers(index.resolve(), env) if b.get("state") == "serving"]:
            assert proc.poll() is None and time.monotonic() < deadline, "the broker did not start"
            time.sleep(0.05)
        assert searches_answered(index, env) == 0
        for at, q in enumerate(QUERIES):
            assert search_json(env, index, *q) == alone_json[at], q
            assert search_text(env, index, *q) == alone_text[at], q
        assert searches_answered(index, env) == 2 * len(QUERIES)  # every one of them answered by the broker
        brokered_error = sleuth(env, "search", "walrus", "--project", "nope", "--index", str(index))
        assert (brokered_error.returncode, brokered_error.stderr, brokered_error.stdout) == (
            alone_error.returncode, alone_error.stderr, alone_error.stdout)
        assert searches_answered(index, env) == 2 * len(QUERIES) + 1
        # $SLEUTH_BROKER=0 searches in the process, as before.
        off = {**env, "SLEUTH_BROKER": "0"}
        assert search_json(off, index, *QUERIES[0]) == alone_json[0]
        assert searches_answered(index, env) == 2 * len(QUERIES) + 1
    finally:
        stop_brokers(None, env)
        proc.wait(timeout=WAIT_S)


def test_without_a_listening_broker_the_search_runs_in_process(index: Path, env: dict[str, str]) -> None:
    expected = search_json({**env, "SLEUTH_BROKER": "0"}, index, "walrus")
    # A socket file left by a killed broker: nothing listens on it.
    paths = BrokerPaths.for_index(index.resolve(), env)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(os.fspath(paths.socket))
    stale.close()
    assert paths.socket.exists()
    assert search_json(env, index, "walrus") == expected
    assert list_brokers(index.resolve(), env) == []


def test_a_search_is_never_sent_to_the_broker_of_other_settings(index: Path, env: dict[str, str],
                                                               broker: subprocess.Popen[str]) -> None:
    before = searches_answered(index, env)
    other = {**env, "SLEUTH_LANES": "bm25"}  # another broker key: not this broker's answers
    proc = sleuth(other, "search", "walrus", "--index", str(index), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["lanes"] == ["bm25"]
    assert searches_answered(index, env) == before
    assert search_json(env, index, "walrus")["hits"]
    assert searches_answered(index, env) == before + 1


def test_after_an_edit_of_config_toml_a_search_is_not_sent_to_the_broker_that_read_the_old_one(
        index: Path, env: dict[str, str], broker: subprocess.Popen[str]) -> None:
    before = searches_answered(index, env)
    assert search_json(env, index, "walrus")["lanes"] != ["bm25"]
    assert searches_answered(index, env) == before + 1
    (index / "config.toml").write_text('lanes = ["bm25"]\n', encoding="utf-8")
    try:
        assert search_json(env, index, "walrus")["lanes"] == ["bm25"]  # in its own process, with the new file
        assert searches_answered(index, env) == before + 1
    finally:
        (index / "config.toml").unlink()



#: Runs `sleuth ARGS` as the `sleuth` command does (sleuth.launcher) and, as the process ends (the
#: read-only commands end with os._exit), writes to stderr the heavy modules it had imported.
_REPORTING_SLEUTH = """
import os, sys
heavy = ("numpy", "onnxruntime", "tokenizers", "tantivy", "usearch", "mcp", "sleuth.engine", "sleuth.config")
real_exit = os._exit
def reporting_exit(code):
    print("imported:", ",".join(m for m in heavy if m in sys.modules), file=sys.stderr, flush=True)
    real_exit(code)
os._exit = reporting_exit
sys.argv = ["sleuth", *sys.argv[1:]]
from sleuth.launcher import main
main()
"""


@pytest.mark.parametrize("extra", [(), ("--lanes", "bm25,vector", "--format", "json")])
def test_a_search_the_broker_answers_imports_neither_the_engine_nor_numpy(
        index: Path, env: dict[str, str], broker: subprocess.Popen[str], extra: tuple[str, ...]) -> None:
    before = searches_answered(index, env)
    proc = subprocess.run([sys.executable, "-c", _REPORTING_SLEUTH, "search", "walrus", "--index", str(index),
                           *extra], capture_output=True, text=True, env=env, timeout=WAIT_S)
    assert proc.returncode == 0, proc.stderr
    assert "walrus.md" in proc.stdout
    assert searches_answered(index, env) == before + 1  # the broker answered it
    assert proc.stderr.splitlines()[-1] == "imported: "
