"""A page past the last result says so (a new user's trial: `sleuth search deploy --offset 40` of a
query with 14 results said "no document matches the query in the searched projects")."""

from __future__ import annotations

from pathlib import Path

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.types import SearchRequest


def test_a_page_past_the_last_result_says_so(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(3):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nHow to deploy site {i}.\n", encoding="utf-8")
    (notes / "other.md").write_text("# Other\n\nNothing here.\n", encoding="utf-8")
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        engine.index([notes], project="notes")
        assert engine.search(SearchRequest(query="deploy", limit=2, offset=2)).result_count == 1
        for offset in (3, 40):
            resp = engine.search(SearchRequest(query="deploy", limit=10, offset=offset))
            assert resp.result_count == 0
            assert resp.notice == (f"this page is past the last result: the query has 3 result(s), and the page"
                                   f" starts after {offset}")
        resp = engine.search(SearchRequest(query="zebra", limit=10, offset=3))
        assert resp.result_count == 0 and resp.notice is not None and "past the last result" not in resp.notice
