"""Writes and remote callers while Milvus is down (attack of stop 29 on 69c75c9, which opens
searching and serving without a reachable Milvus). A ``milvus-lite server`` of the test's own,
stopped and started again; a remote (HTTP) caller as :class:`sleuth.mcp.access.Caller`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.lanes import milvus as milvus_lanes
from sleuth.mcp.access import CURRENT_CALLER, Caller
from sleuth.mcp.memory_tools import MemoryTools
from sleuth.scaleout import MILVUS_SHOWN
from tests.scale.test_milvus_lanes import index_all, write_projects
from tests.scale.test_milvus_resync import Server, server

__all__ = ["server"]  # the fixture


def _record(engine: Engine, title: str) -> dict[str, Any]:
    """project_memory_record of ``title`` into project beta, as a remote caller allowed to write it."""
    token = CURRENT_CALLER.set(Caller("bob", frozenset({"beta"}), frozenset({"read", "write"})))
    try:
        out = asyncio.run(MemoryTools(engine, per_caller=True).project_memory_record(
            kind="decision", title=title, body=f"{title}: every write waits for a quorum of replicas.",
            project_id="beta")).structured_content
    finally:
        CURRENT_CALLER.reset(token)
    assert isinstance(out, dict)
    return out


def test_a_record_written_while_milvus_is_down_is_kept_and_synced_when_it_is_back(
        tmp_path: Path, server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack of stop 29: a remote project_memory_record while Milvus was down wrote the record
    (its file, the catalog) and then answered an error, "cannot reach Milvus at
    http://127.0.0.1:PORT ... Fail connecting to server on 127.0.0.1:PORT": the caller read where
    Milvus is, and a retry would record it twice. Serving now returns the receipt (the catalog
    holds the write, Milvus catches up at its next sync, without a restart); an error a remote
    caller reads names no location (an engine not opened for serving still fails the write)."""
    write_projects(tmp_path / "src")
    cfg = Config(milvus_uri=server.uri, milvus_collection="down", model="none")
    with Engine(tmp_path / "idx", cfg) as e:
        index_all(e, tmp_path / "src")
    port = str(server.port)
    server.stop()
    monkeypatch.setattr(milvus_lanes, "MILVUS_RETRY_INTERVAL_S", 0.0)  # tried again at once when back
    with Engine(tmp_path / "idx", cfg, serving=True) as engine:
        out = _record(engine, "Quorum writes")
        assert "error" not in out and out["record"]["project_id"] == "beta", out
        assert port not in json.dumps(out)
        record_id = out["record"]["record_id"]
        assert engine.catalog.document(record_id) is not None
        down = engine.search("quorum replicas", lanes=["bm25"])
        assert list(down.failed_lanes) == ["bm25"] and not down.hits
        server.start()  # the same port and data
        back = engine.search("quorum replicas", lanes=["bm25"])
        assert not back.failed_lanes and [h.doc_id for h in back.hits] == [record_id]
    server.stop()
    with Engine(tmp_path / "idx", cfg, milvus_optional=True) as engine:  # not serving: the write fails
        failed = _record(engine, "Quorum reads")
    message = failed["error"]["message"]
    assert message.startswith(f"cannot reach Milvus at {MILVUS_SHOWN}: ") and port not in message, message
