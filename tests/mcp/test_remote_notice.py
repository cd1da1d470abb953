"""What a remote caller limited to some projects reads in project_memory_search's meta.notice: the
notes of its own search (words no document holds, documents the vector lane does not see), not
the index's state as a whole (another writer's run, postings not written and why), and no server
path (an attack round's finding, once the notice carried every note)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.mcp.access import CURRENT_CALLER, Caller
from sleuth.mcp.memory_tools import MemoryTools
from sleuth.memory.search import scoped_notice
from sleuth.store.folder import WRITE_LOCK_FILE


def meta(engine: Engine, per_caller: bool) -> dict[str, Any]:
    token = CURRENT_CALLER.set(Caller("bob", frozenset({"beta"}), frozenset({"read"})))
    try:
        result = asyncio.run(MemoryTools(engine, per_caller=per_caller).project_memory_search(
            query="walrus glorbnak", project_id="beta"))
    finally:
        CURRENT_CALLER.reset(token)
    assert not result.is_error, result
    return result.structured_content["meta"]  # type: ignore[index,no-any-return]


def test_a_remote_caller_reads_the_notes_of_its_own_search_only(tmp_path: Path) -> None:
    for project in ("alpha", "beta"):
        (tmp_path / project).mkdir()
        (tmp_path / project / "a.md").write_text(f"# Walrus\n\nThe walrus of {project}.\n")
    index = tmp_path / "idx"
    with Engine(index, Config(model="none")) as engine:
        for project in ("alpha", "beta"):
            engine.index([tmp_path / project], project=project)
        word = "no indexed document holds the word(s) 'glorbnak'; the results match the other words"
        assert meta(engine, True)["notice"] == meta(engine, False)["notice"] == word
        # Another writer committed to the catalog and could not write the postings.
        (index / WRITE_LOCK_FILE).unlink()
        (index / WRITE_LOCK_FILE).mkdir()
        with sqlite3.connect(index / "catalog.sqlite3") as conn:
            conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")
        local = meta(engine, False)["notice"]  # words are not looked up in postings behind the catalog
        assert local.startswith("the bm25, index, rm3 and exact lanes answer from the index as it was before the "
                                "last indexing run(s), whose postings could not be written: ")
        assert f"remove it ({index / WRITE_LOCK_FILE})" in local
        assert "notice" not in meta(engine, True)
        (index / WRITE_LOCK_FILE).rmdir()


def test_scoped_notice() -> None:
    assert scoped_notice("a; b; c", ["b"]) == "a; c"
    assert scoped_notice("a; b", ["a"]) == "b"
    assert scoped_notice("a", ["a"]) is None
    assert scoped_notice(None, ["a"]) is None
    assert scoped_notice("x; y", []) == "x; y"
