"""Readers and writers in real processes at once: MCP stdio sessions of `sleuth serve` and
`sleuth search` command lines query while `sleuth index` rewrites, adds and deletes files. No
call may fail, every answer must be well-formed, and a file that is being re-indexed must still
be found (a search for it once came back empty while its new version was half written). A second
writer waits for the first, at most SLEUTH_WRITE_LOCK_TIMEOUT_S, and then says who holds the index."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from sleuth.locks import WriteLock as _WriteLock
from tests.integration.conftest import SHARED_DATA, SLEUTH, run_cli

LEXICAL = {"SLEUTH_MODEL": "none"}
SESSIONS = 4
CLI_READERS = 1
WRITER_ROUNDS = 2


def target_text(version: int) -> str:
    return f"# Quokka target\n\nThe quokkatarget page, rewritten by the writer, version {version}.\n"


def churn_pages(dest: Path, n: int) -> list[Path]:
    """``n`` real tldr pages under ``dest``."""
    with tarfile.open(SHARED_DATA / "md-tldr" / "markdown.tar.gz") as tar:
        members = []
        for m in tar:
            if m.isfile() and m.name.startswith("pages/common/"):
                members.append(m)
                if len(members) == n:
                    break
        tar.extractall(dest, members=members, filter="data")
    return sorted(dest.rglob("*.md"))


def check_envelope(payload: dict[str, Any]) -> None:
    assert set(payload) == {"success", "result_count", "items", "timestamp"}, payload
    assert payload["success"] is True and payload["result_count"] == len(payload["items"])
    for rank, item in enumerate(payload["items"], start=1):
        assert item["rank"] == rank and item["markdown_item_id"] == item["item"]["item_id"]
        assert item["block_ids"] and item["item"]["path"]


def churn_round(pages: list[Path], round_: int) -> None:
    """The writer's changes to the churn pages in round ``round_``: some grow a line, some go."""
    for i, page in enumerate(pages):
        if not page.exists():
            continue
        if i % WRITER_ROUNDS == round_ - 1:
            page.write_text(page.read_text(encoding="utf-8") + f"\n- round {round_}\n", encoding="utf-8")
        elif i % 17 == round_:
            page.unlink(missing_ok=True)


def check_answer(project: str, query: str, payload: dict[str, Any]) -> None:
    """A reader's search_project answer: a valid envelope, the target first for its word."""
    check_envelope(payload)
    if query == "quokkatarget":
        assert payload["items"][0]["item"]["path"] == "target.md", payload
        assert "quokkatarget" in payload["items"][0]["item"]["snippet"]
    elif project == "hugo":
        assert payload["result_count"] > 0


def test_readers_and_a_writer_in_parallel(hugo_sample: Path, tmp_path: Path) -> None:
    stable = tmp_path / "stable"
    shutil.copytree(hugo_sample, stable)
    (stable / "target.md").write_text(target_text(0), encoding="utf-8")
    churn = tmp_path / "churn"
    pages = churn_pages(churn, 60)
    index = tmp_path / "idx"
    run_cli("index", str(stable), "--project", "hugo", "--index", str(index), env=LEXICAL)
    run_cli("index", str(churn), "--project", "churn", "--index", str(index), env=LEXICAL)

    done = threading.Event()
    errors: list[str] = []
    answers = {"mcp": 0, "cli": 0}

    def writer() -> None:
        try:
            for round_ in range(1, WRITER_ROUNDS + 1):
                (stable / "target.md").write_text(target_text(round_), encoding="utf-8")
                run_cli("index", str(stable), "--project", "hugo", "--index", str(index), env=LEXICAL)
                churn_round(pages, round_)
                run_cli("index", str(churn), "--project", "churn", "--index", str(index), env=LEXICAL)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(f"writer: {exc}")
        finally:
            done.set()

    def cli_reader() -> None:
        while not done.is_set():
            proc = subprocess.run([*SLEUTH, "search", "quokkatarget", "--project", "hugo", "--index", str(index),
                                   "--format", "json"], capture_output=True, text=True, timeout=120,
                                  env={**os.environ, **LEXICAL})
            if proc.returncode != 0:
                errors.append(f"cli: exit {proc.returncode}: {proc.stderr}")
                continue
            resp = json.loads(proc.stdout)
            if [h["path"] for h in resp["hits"]][:1] != ["target.md"]:
                errors.append(f"cli: target.md not found: {resp}")
            answers["cli"] += 1
            time.sleep(1.0)  # each run is a new process: starting one costs about a second of CPU

    async def session(n: int) -> None:
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "sleuth.cli", "serve", "--index", str(index)],
                                       env={**os.environ, **LEXICAL})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            calls = [("hugo", "quokkatarget"), ("hugo", "render hook"), ("churn", "list files in a directory")]
            i = n
            while not done.is_set():
                project, query = calls[i % len(calls)]
                i += 1
                result = await client.call_tool("search_project", {"project_id": project, "query": query,
                                                                   "limit": 5})
                if result.is_error:
                    errors.append(f"mcp {n}: {result.content[0].text}")
                    continue
                try:
                    check_answer(project, query, json.loads(result.content[0].text))
                except AssertionError as exc:
                    errors.append(f"mcp {n}: {exc}")
                answers["mcp"] += 1
                await anyio.sleep(0.02)  # busy, not flat out: the writer shares 2 cores with them

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for n in range(SESSIONS):
                tg.start_soon(session, n)
            for _ in range(CLI_READERS):
                tg.start_soon(anyio.to_thread.run_sync, cli_reader)
            await anyio.sleep(1.0)  # the sessions are up before the writer starts
            await anyio.to_thread.run_sync(writer)

    anyio.run(main)
    assert errors == []
    assert answers["mcp"] >= SESSIONS and answers["cli"] >= 1, answers


def test_second_writer_waits_with_a_bound_then_reports(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(root), "--index", str(index), env=LEXICAL)
    holder = _WriteLock(index / "write.lock", 0)
    assert holder.acquire(blocking=False)  # a first writer holds the index
    try:
        proc = run_cli("index", str(root), "--index", str(index), check=False,
                       env={**LEXICAL, "SLEUTH_WRITE_LOCK_TIMEOUT_S": "0.5"})
        assert proc.returncode == 5
        assert f"error: process {os.getpid()}" in proc.stderr and "is writing to the index" in proc.stderr
        assert "waited 0.5 s" in proc.stderr and "SLEUTH_WRITE_LOCK_TIMEOUT_S" in proc.stderr
        # a writer with time to wait gets the index once the first one is done
        release = threading.Timer(1.0, holder.release)
        release.start()
        proc = run_cli("index", str(root), "--index", str(index), env={**LEXICAL, "SLEUTH_WRITE_LOCK_TIMEOUT_S": "600"})
        assert "1 unchanged" in proc.stdout
        release.join()
    finally:
        holder.release()
