"""``sleuth status`` and ``sleuth doctor`` in scale-out mode (attack session on issue 18: neither
said the catalog was in PostgreSQL nor that Milvus served the lanes, and the documents a sync left
out of Milvus were only logged once by the process that synced). Now both name the catalog's
backend and Milvus (URLs with their passwords redacted), the generation Milvus reflects, a sync
under way or stopped mid-way, and the documents left out (recorded in the catalog's meta
``milvus:left_out``, cleared once repaired or deleted). An unreachable Milvus is reported, the rest
of the report as before. Real PostgreSQL and milvus-lite servers, the real CLI."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from sleuth.commands.health import render_doctor, render_status
from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.mcp.access import CURRENT_CALLER, Caller
from sleuth.mcp.memory_tools import MemoryTools
from sleuth.memory.doctor import doctor
from sleuth.reports import LeftOutDocument
from sleuth.scaleout import (
    CATALOG_SHOWN,
    MILVUS_DOWN_REMOTE,
    MILVUS_SHOWN,
    hide_backends,
    hide_locations,
    left_out_documents,
)
from sleuth.store.pg import PgWriteLock, _application_name
from sleuth.store.urls import redact_url
from tests.scale.servers import MilvusLiteServer, free_port
from tests.scale.test_milvus_lanes import index_all, write_projects

SLEUTH = [sys.executable, "-m", "sleuth"]


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SLEUTH, *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=600)


def _json(*args: str, env: dict[str, str], code: int = 0) -> dict:  # type: ignore[type-arg]
    proc = _cli(*args, "--format", "json", env=env)
    assert proc.returncode == code, proc.stderr
    return json.loads(proc.stdout)


def test_status_and_doctor_name_postgresql_and_milvus_and_a_sync_stopped_mid_way(  # type: ignore[no-untyped-def]
        tmp_path: Path, catalog_url: str, milvus_server, monkeypatch: pytest.MonkeyPatch) -> None:
    url = catalog_url.replace("@", ":s3cret@", 1)  # trust authentication: the password is not checked
    shown = catalog_url.replace("@", ":***@", 1)
    monkeypatch.setenv("SLEUTH_CATALOG_URL", url)
    write_projects(tmp_path / "src")
    index = str(tmp_path / "scale")
    with Engine(index, Config(model="none", milvus_uri=milvus_server.uri, milvus_collection="health")) as e:
        index_all(e, tmp_path / "src")
        version = e.lanes["bm25"].shared.index.server_version
        gen = e.catalog.generation()
    env = {"SLEUTH_CATALOG_URL": url, "SLEUTH_MILVUS_URI": milvus_server.uri, "SLEUTH_MILVUS_COLLECTION": "health",
           "SLEUTH_MODEL": "none"}
    milvus = {"uri": milvus_server.uri, "collection": "health", "reachable": True, "server_version": version,
              "generation": gen, "catalog_generation": gen, "up_to_date": True, "left_out_count": 0,
              "left_out_more": False, "left_out": []}
    for command in ("status", "doctor"):
        report = _json(command, "--index", index, env=env)
        assert report["catalog"] == {"backend": "postgresql", "location": shown}
        assert report["milvus"] == milvus
    lines = [f"  catalog: postgresql {shown}", f"  milvus: {version} at {milvus_server.uri}, collections health_*",
             f"  milvus lanes at generation {gen} of {gen}: up to date"]
    status, checked = _cli("status", "--index", index, env=env), _cli("doctor", "--index", index, env=env)
    assert status.returncode == 0 and status.stdout.splitlines()[2:5] == lines
    assert checked.returncode == 0 and checked.stdout.splitlines()[:4] == [f"index {Path(index)}: ok", *lines]
    assert "s3cret" not in status.stdout + status.stderr + checked.stdout + checked.stderr

    # A sync killed after its first part: stopped mid-way, then running while another process holds the lock.
    (tmp_path / "src" / "beta" / "new.md").write_text("# New\n\nA new advisory lock holder.\n")
    proc = _cli("index", str(tmp_path / "src" / "beta"), "--project", "beta", "--index", index,
                env={**env, "SLEUTH_FAULT_KILL_AT": "milvus:lex-part:1."})
    assert proc.returncode == -9, proc.stderr
    with Engine(index, Config(model="none", milvus_uri=milvus_server.uri, milvus_collection="health")) as e:
        now = e.catalog.generation()
        progress = json.loads(e.catalog.get_meta("milvus:state") or "{}")["lex_sync"]
    assert now > gen and progress["target"] == now
    what = f"milvus sync to generation {now} ({'every row' if progress['rebuild'] else 'changes'})"
    stopped = {"state": "stopped", "target_generation": now, "rebuild": progress["rebuild"]}
    report = _json("doctor", "--index", index, env=env, code=1)  # Milvus behind: needs attention
    assert report["ok"] is False
    assert report["milvus"] == {**milvus, "catalog_generation": now, "up_to_date": False, "sync": stopped}
    status = _cli("status", "--index", index, env=env)
    assert status.returncode == 0 and status.stdout.splitlines()[4:6] == [
        f"  milvus lanes at generation {gen} of {now}: behind, the next search or `sleuth index` syncs them",
        f"  {what} stopped mid-way (no process holds the write lock): the next search or `sleuth index` finishes it"]
    lock = PgWriteLock(url, 60)
    assert lock.acquire()
    try:
        report = _json("status", "--index", index, env=env)
        holder = f"{_application_name()} on 127.0.0.1"
        assert report["milvus"]["sync"] == {"state": "running", "target_generation": now,
                                            "rebuild": progress["rebuild"], "holder": holder}
        status = _cli("status", "--index", index, env=env)
        assert status.stdout.splitlines()[5] == f"  {what} under way: {holder} holds the write lock"
    finally:
        lock.release()
    with Engine(index, Config(model="none", milvus_uri=milvus_server.uri, milvus_collection="health")) as e:
        assert e.search("advisory lock", lanes=["bm25"]).failed_lanes == {}  # the search finishes the sync
        report_now = e.status().model_dump()
    assert report_now["milvus"] == {**milvus, "generation": now, "catalog_generation": now}

    # A row Milvus cannot take, planted in the PostgreSQL catalog at a new generation: listed by doctor.
    import psycopg

    with psycopg.connect(catalog_url, autocommit=True) as conn:
        conn.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'generation'")
        conn.execute("UPDATE documents SET label = %s, generation = (SELECT value::bigint FROM meta"
                     " WHERE key = 'generation') WHERE rel_path = 'gen.md'", ("L" * 300,))
        (doc_id,) = conn.execute("SELECT doc_id FROM documents WHERE rel_path = 'gen.md'").fetchone()  # type: ignore[misc]
    with Engine(index, Config(model="none", milvus_uri=milvus_server.uri, milvus_collection="health")) as e:
        assert e.search("advisory lock", lanes=["bm25"]).failed_lanes == {}  # syncs first
    report = _json("doctor", "--index", index, env=env)
    assert report["ok"] is True and report["milvus"]["left_out_count"] == 1
    assert report["milvus"]["left_out"] == [{"record_id": doc_id, "project_id": "alpha",
                                             "root": str(tmp_path / "src" / "alpha"), "path": "gen.md",
                                             "reason": "field label: 300 bytes, at most 256"}]
    with psycopg.connect(catalog_url, autocommit=True) as conn:  # repaired: the next sync re-checks the record
        conn.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'generation'")
        conn.execute("UPDATE documents SET label = 'document', generation = (SELECT value::bigint FROM meta"
                     " WHERE key = 'generation') WHERE rel_path = 'gen.md'")
    with Engine(index, Config(model="none", milvus_uri=milvus_server.uri, milvus_collection="health")) as e:
        assert e.search("advisory lock", lanes=["bm25"]).failed_lanes == {}
    report = _json("doctor", "--index", index, env=env)
    assert (report["milvus"]["left_out_count"], report["milvus"]["left_out"]) == (0, [])


def test_an_unreachable_milvus_is_reported_with_the_rest(tmp_path: Path) -> None:
    write_projects(tmp_path / "src")
    index = str(tmp_path / "idx")
    with Engine(index, Config(model="none", milvus_uri=str(tmp_path / "lanes.db"))) as e:
        index_all(e, tmp_path / "src")
        gen, counts = e.catalog.generation(), e.catalog.counts()
    port = free_port()  # nothing listens there
    uri, shown = f"http://root:s3cret@127.0.0.1:{port}", f"http://root:***@127.0.0.1:{port}"
    env = {"SLEUTH_MILVUS_URI": uri, "SLEUTH_MODEL": "none"}
    status = _cli("status", "--index", index, env=env)
    assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
    lines = status.stdout.splitlines()
    assert lines[1] == (f"  {counts['documents']:,} documents, {counts['blocks']:,} blocks, 3 project(s), generation"
                        f" {gen} (postings at {gen})")
    assert lines[2] == f"  catalog: sqlite {Path(index) / 'catalog.sqlite3'}"
    assert lines[3].startswith(f"  milvus at {shown}, collections sleuth_*: cannot reach Milvus at {shown}: ")
    assert lines[4] == f"  milvus lanes at generation {gen} of {gen} (as the catalog records): up to date"
    assert lines[5] == "  lanes: bm25, index, rm3, vector (fusion zscore)"
    assert "  project alpha: 2 documents" in status.stdout
    report = _json("doctor", "--index", index, env=env, code=1)
    assert report["ok"] is False and report["milvus"]["reachable"] is False
    assert report["milvus"]["error"].startswith(f"cannot reach Milvus at {shown}: ")
    assert report["lanes"]["bm25"]["available"] is False
    assert report["lanes"]["bm25"]["reason"] == report["milvus"]["error"]
    assert {k: v for k, v in report["milvus"].items() if k != "error"} == {
        "uri": shown, "collection": "sleuth", "reachable": False, "server_version": None, "generation": gen,
        "catalog_generation": gen, "up_to_date": True, "left_out_count": 0, "left_out_more": False, "left_out": []}
    assert "s3cret" not in status.stdout + status.stderr + json.dumps(report)
    # attack session 29: a remote caller's doctor named the server in the lanes' reason
    remote = hide_backends(report)
    assert remote["lanes"]["bm25"]["reason"] == MILVUS_DOWN_REMOTE and remote["lanes"]["bm25"]["details"] == {}
    assert "127.0.0.1" not in json.dumps(remote) and str(port) not in json.dumps(remote["lanes"])


def _plant(catalog: Path, doc_id: str, label: str) -> None:
    """``label`` written into the document's row at a new generation, as a writer of the catalog would."""
    conn = sqlite3.connect(catalog, isolation_level=None)
    try:
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")
        conn.execute("UPDATE documents SET label=?, generation=(SELECT CAST(value AS INTEGER) FROM meta"
                     " WHERE key='generation') WHERE doc_id=?", (label, doc_id))
    finally:
        conn.close()


def _set_meta(catalog: Path, key: str, value: str | None) -> None:
    conn = sqlite3.connect(catalog, isolation_level=None)
    try:
        if value is None:
            conn.execute("DELETE FROM meta WHERE key=?", (key,))
        else:
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
    finally:
        conn.close()


@pytest.mark.parametrize("from_scratch", [False, True], ids=["incremental sync", "sync from scratch"])
def test_doctor_lists_a_document_left_out_of_milvus_until_it_is_repaired_or_deleted(
        tmp_path: Path, from_scratch: bool) -> None:
    write_projects(tmp_path / "src")
    config = Config(model="none", milvus_uri=str(tmp_path / "lanes.db"))
    catalog = tmp_path / "idx" / "catalog.sqlite3"
    with Engine(tmp_path / "idx", config) as e:
        index_all(e, tmp_path / "src")
        ids = dict(e.catalog.conn.execute("SELECT rel_path, doc_id FROM documents").fetchall())
        assert doctor(e).milvus.left_out_count == 0  # type: ignore[union-attr]
    assert e.catalog.path == catalog
    gen_md, fusion_md = str(ids["gen.md"]), str(ids["fusion.md"])
    _plant(catalog, gen_md, "L" * 300)
    _plant(catalog, fusion_md, "é" * 200)
    if from_scratch:  # every statistic counted again, every row sent again
        _set_meta(catalog, "milvus:stats", None)
        _set_meta(catalog, "milvus:state", None)
    with Engine(tmp_path / "idx", config) as e:
        assert e.search("advisory lock", lanes=["bm25"]).failed_lanes == {}  # the search syncs first
    left = [LeftOutDocument(record_id=gen_md, project_id="alpha", root=str(tmp_path / "src" / "alpha"),
                            path="gen.md", reason="field label: 300 bytes, at most 256"),
            LeftOutDocument(record_id=fusion_md, project_id="beta", root=str(tmp_path / "src" / "beta"),
                            path="fusion.md", reason="field label: 400 bytes, at most 256")]
    with Engine(tmp_path / "idx", config) as e:  # another process: the record is in the catalog
        report = doctor(e)
        assert report.ok  # reported as skipped files are, not counted
        assert report.milvus is not None and report.milvus.up_to_date
        assert (report.milvus.left_out_count, report.milvus.left_out_more, report.milvus.left_out) == (2, False, left)
        text = render_doctor(report).splitlines()
        assert text[4:7] == ["  2 document(s) left out of Milvus (a row a Milvus field cannot hold: a damaged or"
                             " hostile catalog):", "    alpha gen.md: field label: 300 bytes, at most 256",
                             "    beta fusion.md: field label: 400 bytes, at most 256"]
        assert doctor(e, "beta").milvus.left_out == left[1:]  # type: ignore[union-attr]
        assert doctor(e, visible={"gamma"}).milvus.left_out_count == 0  # type: ignore[union-attr]
        status = e.status()
        assert status.milvus is not None and status.milvus.left_out == left
        assert "    alpha gen.md: field label: 300 bytes, at most 256" in render_status(status).splitlines()
        assert left_out_documents(e, listed_max=1) == (2, False, left[:1])
        remote = hide_backends(doctor(e, visible={"beta"}).model_dump())  # a remote caller's project_memory_doctor
        assert remote["catalog"] == {"backend": "sqlite", "location": ""}
        assert remote["milvus"] == {"reachable": True, "up_to_date": True, "left_out_count": 1,
                                    "left_out_more": False, "left_out": [left[1].model_dump()]}
        # attack session 29: the lanes' part showed the server's version and location, and the
        # index-wide generation and row count (other projects' sizes), which the rest hides
        assert doctor(e).lanes["bm25"].details["uri"] == str(tmp_path / "lanes.db")  # the server's own view
        assert remote["lanes"]["bm25"] == {"available": True,
                                           "lanes": ["bm25", "tfidf", "index", "rm3"], "details": {}}
        assert "lanes.db" not in json.dumps(remote) and "milvus_lite" not in json.dumps(remote)
    # gen.md repaired in the catalog, fusion.md's file deleted and indexed again (the document goes)
    _plant(catalog, gen_md, "document")
    (tmp_path / "src" / "beta" / "fusion.md").unlink()
    with Engine(tmp_path / "idx", config) as e:
        e.index([tmp_path / "src" / "beta"], project="beta")  # syncs at the end
        report = doctor(e)
        assert report.milvus is not None and report.milvus.left_out_count == 0 and report.milvus.left_out == []
        assert all("left out of Milvus" not in line for line in render_doctor(report).splitlines())
        assert json.loads(e.catalog.get_meta("milvus:left_out") or "null") == {"docs": [], "more": False}
        hits = e.search("generation number of writes", lanes=["bm25"]).hits
        assert "gen.md" in [h.path for h in hits]  # back in Milvus


@pytest.mark.parametrize("planted", ["[" * 50_000, "not json", '{"docs": "x", "more": false}',
                                     '{"docs": [["a", "b", "c"]], "more": false}', '{"docs": [], "more": 1}',
                                     '{"docs": [["' + "d" * 1001 + '", "why"]], "more": false}',
                                     '{"docs": [["d", "' + "w" * 201 + '"]], "more": false}'],
                         ids=["nested", "not JSON", "docs as text", "a triple", "more as a number",
                              "an id of 1,001 characters", "a reason of 201 characters"])
def test_a_damaged_left_out_record_counts_as_none(tmp_path: Path, planted: str) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.md").write_text("# Locks\n\nOne writer holds the advisory lock.\n")
    with Engine(tmp_path / "idx", Config(model="none")) as e:
        e.index([tmp_path / "src"], project="p")
        e.catalog.set_meta("milvus:left_out", planted)
        assert left_out_documents(e) == (0, False, [])


def test_a_remote_search_does_not_learn_where_milvus_is_when_it_fails(tmp_path: Path,
                                                                     pg_server, catalog_url: str) -> None:  # type: ignore[no-untyped-def]
    """Attack session 29: with Milvus gone after the engine opened, a remote caller's
    project_memory_search listed the bm25 lane's error as pymilvus wrote it, "Fail connecting to
    server on 127.0.0.1:PORT", in ``failed_lanes`` and the notice; the catalog's location is
    hidden likewise. The server's own callers (stdio) still read it."""
    write_projects(tmp_path / "src")
    server = MilvusLiteServer().start()
    try:
        engine = Engine(tmp_path / "idx", Config(model="none", milvus_uri=server.uri))
        index_all(engine, tmp_path / "src")
    finally:
        server.stop()
    port = server.uri.rsplit(":", 1)[1]
    try:
        token = CURRENT_CALLER.set(Caller("bob", frozenset({"beta"}), frozenset({"read"})))
        try:
            remote = asyncio.run(MemoryTools(engine, per_caller=True).project_memory_search(
                query="advisory lock", project_id="beta")).structured_content["meta"]  # type: ignore[index]
        finally:
            CURRENT_CALLER.reset(token)
        local = asyncio.run(MemoryTools(engine).project_memory_search(
            query="advisory lock", project_id="beta")).structured_content["meta"]  # type: ignore[index]
    finally:
        engine.close()
    assert f"127.0.0.1:{port}" in local["failed_lanes"]["bm25"]
    assert remote["failed_lanes"]["bm25"] == local["failed_lanes"]["bm25"].replace(f"127.0.0.1:{port}", MILVUS_SHOWN)
    assert port not in json.dumps(remote) and "127.0.0.1" not in json.dumps(remote)
    pg = urlsplit(catalog_url)
    assert hide_locations([f"no catalog at {redact_url(catalog_url)} ({pg.hostname}:{pg.port})"], engine) == [
        f"no catalog at {CATALOG_SHOWN} ({CATALOG_SHOWN})"]


def test_a_milvus_gone_after_the_open_is_reported_by_doctor_and_its_tracebacks_are_not_logged(
        tmp_path: Path) -> None:
    """New-user trial of stop 31: with Milvus stopped under a running server, the remote
    project_memory_doctor failed ("MilvusException ... (details in the server's log)": a lane's
    status asked Milvus its row count), the report said Milvus was reachable (the version found at
    the open), the vector lane was "available" while every search failed in it, and pymilvus wrote
    a traceback to stderr for every call it retried."""
    write_projects(tmp_path / "src")
    server = MilvusLiteServer().start()
    try:
        engine = Engine(tmp_path / "idx", Config(milvus_uri=server.uri))
        index_all(engine, tmp_path / "src")
        up = doctor(engine)
        assert up.milvus is not None and up.milvus.reachable is True
        assert up.lanes["bm25"].available and up.lanes["vector"].available
    finally:
        server.stop()
    shown = redact_url(server.uri)
    handler = logging.getLogger("pymilvus").handlers[0]
    pymilvus_log = io.StringIO()
    old_stream = handler.setStream(pymilvus_log)
    try:
        down = doctor(engine)
        token = CURRENT_CALLER.set(Caller("bob", frozenset({"beta"}), frozenset({"read"})))
        try:
            remote = asyncio.run(MemoryTools(engine, per_caller=True).project_memory_doctor(project_id="beta"))
        finally:
            CURRENT_CALLER.reset(token)
    finally:
        handler.setStream(old_stream)
        engine.close()
    assert down.milvus is not None and down.milvus.reachable is False and down.milvus.server_version is None
    assert down.milvus.error is not None and down.milvus.error.startswith(f"cannot reach Milvus at {shown}: ")
    for family in ("bm25", "vector"):
        assert down.lanes[family].available is False
        assert (down.lanes[family].reason or "").startswith(f"cannot reach Milvus at {shown}: ")
    assert down.ok is False
    assert not remote.is_error, remote.content
    assert remote.structured_content is not None
    report = remote.structured_content["doctor"]
    assert report["ok"] is False and report["milvus"] == {"reachable": False, "up_to_date": True, "left_out_count": 0,
                                                       "left_out_more": False, "left_out": []}
    assert report["lanes"]["vector"]["reason"] == MILVUS_DOWN_REMOTE
    assert server.uri.rsplit(":", 1)[1] not in json.dumps(report)
    logged = pymilvus_log.getvalue()
    assert "Fail connecting to server" in logged and "Traceback" not in logged


def test_one_report_reaches_milvus_once(tmp_path: Path) -> None:
    """A doctor report asked Milvus its version five times (the three lexical lanes' statuses, the
    vector lane's and the Milvus report each pinged it) and the lexical collection's row count
    three times; a status report pinged it twice. Now each report asks each question once. Counted
    on the real pymilvus client the engine owns (milvus-lite in this process, the real model)."""
    write_projects(tmp_path / "src")
    config = Config(milvus_uri=str(tmp_path / "lanes.db"))  # the default model: the vector lane reports too
    with Engine(str(tmp_path / "idx"), config) as e:
        index_all(e, tmp_path / "src")
        e.embed_pending()
    with Engine(str(tmp_path / "idx"), config) as e:
        client = e.lanes["bm25"].shared.index.client
        calls: dict[str, int] = {}

        def counting(name: str, real: Callable[..., object]) -> Callable[..., object]:
            def counted(*args: object, **kwargs: object) -> object:
                calls[name] = calls.get(name, 0) + 1
                return real(*args, **kwargs)

            return counted

        for name in ("get_server_version", "has_collection", "get_collection_stats"):
            setattr(client, name, counting(name, getattr(client, name)))
        report = doctor(e)
        assert report.ok and report.milvus is not None and report.milvus.reachable
        assert report.lanes["vector"].available and report.lanes["bm25"].available
        assert calls == {"get_server_version": 1, "has_collection": 1, "get_collection_stats": 1}
        calls.clear()
        status = e.status()
        assert status.milvus is not None and status.milvus.reachable and status.vector_lane.available
        assert calls == {"get_server_version": 1}
        calls.clear()
        doctor(e)  # a new report asks again
        assert calls == {"get_server_version": 1, "has_collection": 1, "get_collection_stats": 1}
