"""``recorded_at`` of a file whose modification time is the epoch (0) or whose date is before 1970.

A trial found ``recorded_at: null`` for a file with mtime 0, which reproducible builds, the Nix
store and extracted archives leave: 0 was read as "no recorded time". A file's document always
records a time (its date, else its mtime), so every surface shows it: ``sleuth get --format json``,
MCP ``get_notebook`` and ``project_memory_search``. A record given as text without a date has none.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from click.testing import CliRunner

from sleuth.cli import cli
from sleuth.config import Config
from sleuth.engine import Engine, Record
from sleuth.ingest.roles import recorded_at_text
from sleuth.mcp.memory_tools import MemoryTools
from sleuth.mcp.project_tools import ProjectTools

ENV = {"SLEUTH_MODEL": "none", "SLEUTH_BROKER": "0"}


def _index(tmp_path: Path) -> Path:
    """An index of ``epoch.md`` (mtime 0), ``moon.md`` (dated 1969-07-20) and a record without a date."""
    root = tmp_path / "notes"
    root.mkdir()
    (root / "epoch.md").write_text("# Epoch\n\nA reproducible page about quokkas.\n", encoding="utf-8")
    os.utime(root / "epoch.md", ns=(0, 0))
    (root / "moon.md").write_text("---\ndate: 1969-07-20\n---\n# Moon\n\nQuokkas on the moon.\n", encoding="utf-8")
    idx = tmp_path / "idx"
    with Engine(idx, Config(model="none")) as engine:
        engine.index([root], project="notes")
        engine.index_records("records", [Record("rec.md", "# Rec\n\nQuokkas as a record.\n", "Rec")])
    return idx


def test_recorded_at_text() -> None:
    assert recorded_at_text(0, from_file=True) == "1970-01-01T00:00:00Z"
    assert recorded_at_text(0, from_file=False) is None
    assert recorded_at_text(-14_256_000 * 10**9, from_file=True) == "1969-07-20T00:00:00Z"
    assert recorded_at_text(-14_256_000 * 10**9, from_file=False) == "1969-07-20T00:00:00Z"
    assert recorded_at_text(1_551_398_400 * 10**9 + 999_999_999, from_file=True) == "2019-03-01T00:00:00Z"
    assert recorded_at_text(-(2**63), from_file=True) == "1677-09-21T00:12:43Z"
    assert recorded_at_text(2**63 - 1, from_file=True) == "2262-04-11T23:47:16Z"


def test_a_file_of_mtime_0_records_the_epoch_on_every_surface(tmp_path: Path) -> None:
    idx = _index(tmp_path)
    runner = CliRunner()
    got = {}
    for path in ("epoch.md", "moon.md", "rec.md"):
        out = runner.invoke(cli, ["get", path, "--index", str(idx), "--format", "json"], env=ENV)
        assert out.exit_code == 0, out.output
        got[path] = json.loads(out.output)["recorded_at"]
    assert got == {"epoch.md": "1970-01-01T00:00:00Z", "moon.md": "1969-07-20T00:00:00Z", "rec.md": None}

    with Engine(idx, Config(model="none")) as engine:
        notebook = asyncio.run(ProjectTools(engine).get_notebook(project_id="notes", item_id="epoch.md"))
        assert notebook["item"]["recorded_at"] == "1970-01-01T00:00:00Z"
        tools = MemoryTools(engine)
        results = {}
        for project in ("notes", "records"):
            answer = asyncio.run(tools.project_memory_search(query="quokkas", project_id=project))
            results.update({r["path"]: r["recorded_at"]
                            for r in answer.structured_content["results"]})  # type: ignore[index]
    assert results == {"epoch.md": "1970-01-01T00:00:00Z", "moon.md": "1969-07-20T00:00:00Z", "rec.md": None}
