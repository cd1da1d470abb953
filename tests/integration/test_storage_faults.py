"""A full disk and a read-only index folder, for real: a small tmpfs filled to the last byte (real
ENOSPC), a tmpfs of its own under ``postings/`` (tantivy's writes fail, SQLite's do not) and a
read-only bind mount (real EROFS). The real CLI and real MCP sessions (in-process and through the
broker): the failed write says what ran out and where, exits 8 (9 read-only), leaves the committed
state as it was, and every read keeps answering from it; once space is freed, `sleuth index` ends
as if nothing had happened.

Mounting needs root (or CAP_SYS_ADMIN): CI runs as root; elsewhere these tests skip, saying why.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import SHARED_DATA, run_cli
from tests.integration.mcp_session import serve_env, session

TLDR = SHARED_DATA / "md-tldr" / "markdown.tar.gz"
#: English tldr pages indexed first (the committed state the reads must keep answering from).
BASE_PAGES = ("tar", "grep", "ssh", "curl", "rsync", "find", "sed", "awk", "chmod", "chown")
#: How many more pages the run that meets the full disk tries to add.
MORE_PAGES = 300
LEXICAL = {"SLEUTH_MODEL": "none"}  # what fails here is storage, not the model: no embedding
TRACEBACK = "Traceback (most recent call last)"


def _mount(args: list[str], target: Path) -> None:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small file system needs root and mount(8); CI runs as root")
    proc = subprocess.run(["mount", *args, str(target)], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount here ({' '.join(args)}): {proc.stderr.strip()}")


def _umount(target: Path) -> None:
    if subprocess.run(["umount", str(target)], capture_output=True, timeout=60).returncode != 0:
        subprocess.run(["umount", "-l", str(target)], capture_output=True, timeout=60)  # still open: detach


@pytest.fixture
def mounts() -> Iterator[list[Path]]:
    """Mount points to unmount after the test (newest first)."""
    points: list[Path] = []
    yield points
    for point in reversed(points):
        _umount(point)


def tmpfs(folder: Path, size: str, mounts: list[Path]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    _mount(["-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs"], folder)
    mounts.append(folder)
    return folder


def fill(folder: Path) -> Path:
    """Write ``folder/filler`` until the file system is full (a real ENOSPC); returns the file."""
    filler = folder / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    with open(filler, "ab", buffering=0) as out:  # the last few bytes too
        try:
            while True:
                out.write(b"\0")
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    assert os.statvfs(folder).f_bfree == 0
    return filler


def tldr_pages(names: tuple[str, ...] | None, count: int, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """English tldr pages: those ``names``, or the first ``count`` pages not in ``skip``."""
    assert TLDR.is_file(), f"test data missing: {TLDR}"
    out: dict[str, str] = {}
    with tarfile.open(TLDR) as tar:
        for member in tar:
            name = member.name.removeprefix("./")
            if not (member.isfile() and name.startswith("pages/common/") and name.endswith(".md")):
                continue
            stem = name.rsplit("/", 1)[1][:-3]
            if (names is not None and stem in names) or (names is None and stem not in skip):
                handle = tar.extractfile(member)
                assert handle is not None
                out[f"{stem}.md"] = handle.read().decode("utf-8")
            if len(out) == (len(names) if names is not None else count):
                break
    return out


def write_corpus(folder: Path, pages: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def sleuth(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, check=False, env={**LEXICAL, **(env or {})})


def ok_json(*args: str) -> Any:
    proc = sleuth(*args, "--format", "json")
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def catalog_rows(index: Path, sql: str) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(f"{(index / 'catalog.sqlite3').as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def check_reads(index: Path, base: Path, gen: int) -> None:
    """Every read command answers from the committed state: the base pages, generation ``gen``."""
    status = ok_json("status", "--index", str(index))
    assert (status["documents"], status["generation"]) == (len(BASE_PAGES), gen)
    projects = ok_json("projects", "--index", str(index))["projects"]
    assert [(p["project_id"], p["documents"]) for p in projects] == [("base", len(BASE_PAGES))]
    found = ok_json("search", "transfer files to a remote host", "--index", str(index), "--limit", "3")
    assert found["hits"][0]["path"] == "rsync.md"
    doc = ok_json("get", found["hits"][0]["doc_id"], "--index", str(index))
    assert doc["text"] == (base / "rsync.md").read_text(encoding="utf-8")
    text = sleuth("status", "--index", str(index))
    assert text.returncode == 0 and f"index {index}" in text.stdout


def mcp_reads(index: Path, env: dict[str, str]) -> list[Any]:
    """A real MCP session's reads: a memory search, an item search, and an item."""
    out = session(["--index", str(index)], [
        ("project_memory_search", {"project_id": "base", "query": "transfer files to a remote host", "limit": 3}),
        ("search_project", {"project_id": "base", "query": "archive files tar"}),
        ("get_projects", {}),
    ], env={**LEXICAL, **env})
    memory, items, projects = out["results"]
    assert not memory.is_error and memory.structured_content["results"][0]["path"] == "rsync.md"
    assert not items.is_error and json.loads(items.content[0].text)["items"][0]["item"]["path"] == "tar.md"
    assert not projects.is_error
    return out["results"]


def test_a_full_disk_fails_the_run_with_the_reason_and_reads_answer_from_what_was_committed(
        tmp_path: Path, mounts: list[Path]) -> None:
    disk = tmpfs(tmp_path / "disk", "4m", mounts)
    base = write_corpus(tmp_path / "base", tldr_pages(BASE_PAGES, 0))
    more = write_corpus(tmp_path / "more", tldr_pages(None, MORE_PAGES, skip=BASE_PAGES))
    index = disk / "idx"
    assert sleuth("index", str(base), "--project", "base", "--index", str(index)).returncode == 0
    gen = ok_json("status", "--index", str(index))["generation"]
    filler = fill(disk)

    failed = sleuth("index", str(more), "--project", "more", "--index", str(index))
    assert failed.returncode == 8, failed.stderr
    assert TRACEBACK not in failed.stderr and failed.stdout == ""
    assert failed.stderr.strip() == (
        f"error: no space left on device while writing the catalog in {index}: free some space and run"
        " `sleuth index` again; the index still answers from its last committed state")
    # Rolled back: not even the project of the failed run was created.
    assert catalog_rows(index, "SELECT project_id FROM projects") == [("base",)]

    check_reads(index, base, gen)
    status = ok_json("status", "--index", str(index))
    assert status["read_only"].startswith(f"no space left on device while writing the catalog in {index}")
    mcp_reads(index, {})
    # A record cannot be written either: a tool error saying why, and no file left behind.
    out = session(["--index", str(index), "--tools", "memory"], [
        ("project_memory_record", {"project_id": "base", "kind": "note", "title": "Disk full", "body": "Lost?"})],
        env=LEXICAL)
    (record,) = out["results"]
    assert record.is_error and record.structured_content["error"]["code"] == "STORAGE_FULL"
    assert record.structured_content["error"]["message"].startswith("no space left on device while writing the")
    assert not list((index / "memory").rglob("*.md"))

    filler.unlink()  # space again: the same command completes, and the index is whole
    done = sleuth("index", str(more), "--project", "more", "--index", str(index))
    assert done.returncode == 0, done.stderr
    status = ok_json("status", "--index", str(index))
    assert status["documents"] == len(BASE_PAGES) + MORE_PAGES
    assert status["generation"] == status["postings_generation"] and status["read_only"] is None
    assert not list(index.glob("*.tmp"))


def test_postings_that_cannot_be_written_leave_the_lexical_lanes_on_the_last_commit(
        tmp_path: Path, mounts: list[Path]) -> None:
    """tantivy meets the full disk (its own small file system), the catalog does not: the run fails
    naming the postings, the catalog keeps what it committed, the lexical lanes answer from the
    postings as they were and say so, and the next run (space freed) catches up."""
    base = write_corpus(tmp_path / "base", tldr_pages(BASE_PAGES, 0))
    more = write_corpus(tmp_path / "more", tldr_pages(None, MORE_PAGES, skip=BASE_PAGES))
    index = tmp_path / "idx"
    postings = tmpfs(index / "postings", "1m", mounts)
    assert sleuth("index", str(base), "--project", "base", "--index", str(index)).returncode == 0
    committed = ok_json("status", "--index", str(index))["generation"]
    filler = fill(postings)

    failed = sleuth("index", str(more), "--project", "more", "--index", str(index))
    assert failed.returncode == 8 and TRACEBACK not in failed.stderr, failed.stderr
    assert re.fullmatch(rf"error: no space left on device while writing the postings in {re.escape(str(index))}:"
                        r" free some space and run `sleuth index` again; the index still answers from its last"
                        r" committed state\n", failed.stderr), failed.stderr

    status = ok_json("status", "--index", str(index))
    assert status["postings_generation"] == committed < status["generation"]
    assert status["postings_behind"].startswith("no space left on device")
    assert status["documents"] == len(BASE_PAGES) + MORE_PAGES  # the catalog's batches were committed
    text = sleuth("status", "--index", str(index)).stdout
    assert f"the bm25, index, rm3 and exact lanes answer from generation {committed}: no space left on device" in text
    # The lexical lanes still find the base pages; a new page is found by the tfidf lane alone, and
    # the answer says why.
    found = ok_json("search", "transfer files to a remote host", "--index", str(index), "--limit", "3")
    assert found["hits"][0]["path"] == "rsync.md" and "bm25" in found["hits"][0]["sources"]
    new_page = "abduco.md"  # one of the pages the failed run added
    assert (more / new_page).is_file()
    hit = ok_json("search", new_page[:-3], "--index", str(index), "--project", "more", "--limit", "1",
                  "--lanes", "bm25,tfidf,index")
    assert hit["hits"][0]["path"] == new_page and hit["hits"][0]["sources"] == ["tfidf"]
    assert "could not be written: no space left on device" in hit["notice"]
    results = session(["--index", str(index)], [
        ("search_project", {"project_id": "base", "query": "archive files tar"})], env=LEXICAL)["results"]
    assert json.loads(results[0].content[0].text)["items"][0]["item"]["path"] == "tar.md"

    filler.unlink()
    done = sleuth("index", str(more), "--project", "more", "--index", str(index))
    assert done.returncode == 0, done.stderr
    status = ok_json("status", "--index", str(index))
    assert status["generation"] == status["postings_generation"] and status["postings_behind"] is None
    hit = ok_json("search", new_page[:-3], "--index", str(index), "--project", "more", "--limit", "1")
    assert hit["hits"][0]["path"] == new_page and "bm25" in hit["hits"][0]["sources"]


def test_a_broker_keeps_answering_while_the_disk_is_full(tmp_path: Path, mounts: list[Path]) -> None:
    disk = tmpfs(tmp_path / "disk", "4m", mounts)
    base = write_corpus(tmp_path / "base", tldr_pages(BASE_PAGES, 0))
    index = disk / "idx"
    assert sleuth("index", str(base), "--project", "base", "--index", str(index)).returncode == 0
    fill(disk)
    folder = Path(tempfile.mkdtemp(prefix="sbf-", dir="/tmp"))  # a broker of its own (socket paths are short)
    env = {"SLEUTH_BROKER": "1", "SLEUTH_BROKER_DIR": str(folder), **LEXICAL}
    try:
        memory, _, _ = mcp_reads(index, env)
        assert memory.structured_content["results"][0]["title"] == "rsync"
        info = list(folder.glob("*.json"))
        assert len(info) == 1 and json.loads(info[0].read_text())["index"] == str(index)  # served by a broker
    finally:
        run_cli("broker", "stop", "--all", env=serve_env(env))
        shutil.rmtree(folder, ignore_errors=True)


def test_a_read_only_index_folder_answers_every_read_and_refuses_writes_with_the_reason(
        tmp_path: Path, mounts: list[Path]) -> None:
    base = write_corpus(tmp_path / "base", tldr_pages(BASE_PAGES, 0))
    writable = tmp_path / "rw"
    assert sleuth("index", str(base), "--project", "base", "--index", str(writable / "idx")).returncode == 0
    gen = ok_json("status", "--index", str(writable / "idx"))["generation"]
    view = tmp_path / "ro"
    view.mkdir()
    _mount(["--bind", str(writable)], view)
    mounts.append(view)
    _mount(["-o", "remount,bind,ro", str(writable)], view)
    index = view / "idx"
    with pytest.raises(OSError) as refused:
        (index / "probe").write_text("x")
    assert refused.value.errno == errno.EROFS

    check_reads(index, base, gen)
    assert ok_json("status", "--index", str(index))["read_only"].startswith(
        f"cannot write the catalog in {index} (read-only file system)")
    mcp_reads(index, {})
    failed = sleuth("index", str(base), "--project", "base", "--index", str(index))
    assert failed.returncode == 9 and TRACEBACK not in failed.stderr
    assert failed.stderr.startswith(f"error: cannot write the lock file write.lock in {index} (read-only file system)")
    write = ("project_memory_record", {"project_id": "base", "kind": "note", "title": "Read-only", "body": "No."})
    (record,) = session(["--index", str(index), "--tools", "memory"], [write], env=LEXICAL)["results"]
    assert record.is_error and record.structured_content["error"]["code"] == "INDEX_READ_ONLY", record.content
    assert record.structured_content["error"]["message"].startswith(
        f"cannot write the record in {index} (read-only file system)")
    folder = Path(tempfile.mkdtemp(prefix="sbr-", dir="/tmp"))  # and through a broker
    env = {"SLEUTH_BROKER": "1", "SLEUTH_BROKER_DIR": str(folder), **LEXICAL}
    try:
        mcp_reads(index, env)
        (record,) = session(["--index", str(index), "--tools", "memory"], [write], env=env)["results"]
        assert record.is_error and record.structured_content["error"]["code"] == "INDEX_READ_ONLY", record.content
        assert record.structured_content["error"]["message"].startswith(  # the broker's write gate says it first
            f"cannot write the lock file write.lock in {index} (read-only file system)")
        assert len(list(folder.glob("*.json"))) == 1  # served by a broker
    finally:
        run_cli("broker", "stop", "--all", env=serve_env(env))
        shutil.rmtree(folder, ignore_errors=True)
    # The sessions read the postings through private folders of links, removed when they ended.
    views = Path(tempfile.gettempdir()).glob("sleuth-postings.*.tmp")
    assert not [v for v in views if any(link.resolve().parent == index / "postings" for link in v.iterdir())]
