"""The lane registry: a lane added by this test module alone -- one class and one ``register_lane``
call, no other module edited -- is validated, built, run and fused by every surface that takes lanes:
the configuration, the Python API, the CLI (in this process), ``project_memory_search``'s families
and the status report."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from sleuth.config import Config, validate_lanes
from sleuth.engine import Engine
from sleuth.errors import ConfigError
from sleuth.lanes import registry
from sleuth.lanes.base import LaneBase, LaneContext, LaneQuery
from sleuth.types import RankedList, SearchRequest


class TitleStartLane(LaneBase):
    """A toy lane: the first block of every document whose title starts with a query term."""

    name = "title_start"

    def __init__(self, context: LaneContext) -> None:
        self.catalog = context.catalog

    def search(self, q: LaneQuery) -> RankedList:
        starts = tuple(t.lower() for t in q.parsed.text.split())
        hits = []
        for doc in sorted(self.catalog.documents_for_projects(list(q.projects or self.catalog.roots())),
                          key=lambda d: d.rel_path):
            first = self.catalog.first_hit_block(doc.doc_id)
            if first is not None and doc.title.lower().startswith(starts):
                hits.append(first.block_id)
        return RankedList(self.name, tuple(hits[: q.k]), tuple(1.0 for _ in hits[: q.k]))


@pytest.fixture
def toy_lane() -> Iterator[None]:
    registry.register_lane(registry.LaneSpec("title_start", "titles", 3.0, False, TitleStartLane,
                                             summary="titles starting with a query word"))
    try:
        yield
    finally:
        registry.unregister_lane("title_start")


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "zebra.md").write_text("# Zebra crossings\n\nStripes on the road.\n", encoding="utf-8")
    (root / "stripes.md").write_text("# Road markings\n\nZebra stripes, zebra paint, zebra lines.\n",
                                     encoding="utf-8")
    return root


def test_a_lane_registered_here_runs_on_every_surface(toy_lane: None, notes: Path, tmp_path: Path) -> None:
    assert validate_lanes(["bm25", "title_start"]) == ("bm25", "title_start")
    # names are matched ignoring case (a new user typed --lanes BM25), each kept once
    assert validate_lanes(["BM25", " Title_Start", "bm25", "RM3"]) == ("bm25", "title_start", "rm3")
    with pytest.raises(ConfigError, match="unknown lane"):
        validate_lanes(["BM26"])
    assert "title_start" not in Config().lanes  # off by default, as registered
    assert "titles" in registry.families()
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        engine.index([notes], project="notes")
        alone = engine.search(SearchRequest(query="zebra", lanes=["title_start"]))
        assert [h.path for h in alone.hits] == ["zebra.md"] and alone.hits[0].sources == ["title_start"]
        lexical = engine.search(SearchRequest(query="zebra", lanes=["bm25"]))
        assert [h.path for h in lexical.hits] == ["stripes.md", "zebra.md"]
        fused = engine.search(SearchRequest(query="zebra", lanes=["bm25", "title_start"], explain=True))
        assert [h.path for h in fused.hits] == ["zebra.md", "stripes.md"]  # weight 3 lifts its document
        assert {c.lane for c in fused.hits[0].explain or []} == {"bm25", "title_start"}
        assert engine.lane_status()["title_start"].available

        from sleuth.memory.arguments import parse_memory_request
        from sleuth.memory.search import MemorySearch

        memory = MemorySearch(engine).search(parse_memory_request(
            {"query": "zebra", "project_id": "notes", "filters": {"retrieval_lanes": ["titles"]}}))
        assert [(r["path"], r["lanes"]) for r in memory["results"]] == [("zebra.md", ["titles"])]

        from sleuth.mcp.memory_tools import search_input_schema

        enum = search_input_schema()["properties"]["filters"]["properties"]["retrieval_lanes"]["items"]["enum"]
        assert enum == ["exact", "bm25", "vector", "graph", "titles"]

    from sleuth.cli import cli

    out = CliRunner().invoke(cli, ["search", "zebra", "--index", str(tmp_path / "idx"), "--lanes", "title_start"])
    assert out.exit_code == 0, out.output
    assert "zebra.md" in out.output and "stripes.md" not in out.output
    help_text = CliRunner().invoke(cli, ["search", "--help"]).output
    assert "title_start" in help_text.replace("\n", " ").replace("  ", " ")


def test_the_built_in_lanes_and_their_families() -> None:
    assert registry.lane_names() == ("bm25", "tfidf", "index", "rm3", "exact", "vector", "graph")
    assert registry.default_lanes() == ("bm25", "index", "rm3", "vector")
    assert registry.lanes_of_family("bm25") == ("bm25", "tfidf", "index", "rm3")
    # seed 004's families: the default lanes of a family, every lane of a family without one
    assert registry.lanes_for_families(["exact", "bm25", "graph"], registry.default_lanes()) == (
        "bm25", "index", "rm3", "exact", "graph")
    assert registry.lanes_matching(*registry.LEXICAL_MATCHES) == {"bm25", "tfidf", "index", "rm3", "exact"}
    assert registry.match_group("exact") == registry.match_group("tfidf") == "lexical"
    with pytest.raises(ValueError, match="a lane name is letters"):
        registry.register_lane(registry.LaneSpec("bad name", "x", 1.0, False, TitleStartLane))


def test_lanes_matching_follows_registration() -> None:
    """``lanes_matching`` remembers its answers (every search asks it for every fused document) and
    forgets them when a lane is added or removed: a meaning lane registered later is semantic at once."""
    assert registry.lanes_matching("meaning") == {"vector"}
    registry.register_lane(registry.LaneSpec("toy_meaning", "vector", 1.0, False, TitleStartLane, matches="meaning"))
    try:
        assert registry.lanes_matching("meaning") == {"vector", "toy_meaning"}
        assert "toy_meaning" not in registry.lanes_matching(*registry.LEXICAL_MATCHES)
    finally:
        registry.unregister_lane("toy_meaning")
    assert registry.lanes_matching("meaning") == {"vector"}
