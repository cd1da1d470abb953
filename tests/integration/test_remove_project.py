"""`sleuth projects remove NAME`: a new user's trial found no way to drop a project from an index
but deleting the whole index folder. Real CLI processes, real catalog, postings and vectors."""

from __future__ import annotations

import json
from pathlib import Path

from sleuth.engine import Engine
from sleuth.types import SearchRequest
from tests.integration.conftest import run_cli


def _folder(root: Path, word: str, pages: int) -> Path:
    root.mkdir(parents=True)
    for i in range(pages):
        (root / f"{word}{i}.md").write_text(f"# {word.title()} {i}\n\nNotes on the {word}, page {i}.\n",
                                            encoding="utf-8")
    (root / "data.bin").write_bytes(b"\x00\x01binary")  # a skipped file, listed by status
    return root


def test_a_removed_project_leaves_every_lane_and_its_roots_can_be_indexed_again(tmp_path: Path) -> None:
    owls, bats, index = _folder(tmp_path / "owls", "owl", 3), _folder(tmp_path / "bats", "bat", 2), tmp_path / "idx"
    run_cli("index", str(owls), "--project", "birds", "--index", str(index), "--wait")
    run_cli("index", str(bats), "--project", "mammals", "--index", str(index), "--wait")

    # a name reads as `sleuth index --project` read it ("Birds" is the project birds)
    out = run_cli("projects", "remove", "Birds", "--index", str(index)).stdout
    assert out.strip() == "removed project 'birds': 3 document(s) left the index (no file was deleted)"
    assert all((owls / f"owl{i}.md").is_file() for i in range(3))
    listed = json.loads(run_cli("projects", "--index", str(index), "--format", "json").stdout)["projects"]
    assert [p["project_id"] for p in listed] == ["mammals"]
    status = json.loads(run_cli("status", "--index", str(index), "--format", "json").stdout)
    assert {c["project"] for c in status["coverage"]} == {"mammals"}
    with Engine(index) as engine:
        for lanes in (["bm25"], ["vector"], ["index"]):
            hits = engine.search(SearchRequest(query="owl notes", lanes=lanes, limit=10)).hits
            assert all(h.project == "mammals" for h in hits), lanes
        assert engine.search(SearchRequest(query="bat", lanes=["bm25"])).hits

    again = run_cli("projects", "remove", "birds", "--index", str(index), check=False)
    assert again.returncode == 4 and "project not found: 'birds'" in again.stderr
    run_cli("index", str(owls), "--index", str(index))  # no project has the root now: named after it
    names = [p["project_id"] for p in
             json.loads(run_cli("projects", "--index", str(index), "--format", "json").stdout)["projects"]]
    assert names == ["mammals", "owls"]
