"""A camelCase name typed in lowercase finds the page that writes it (a new user's trial: `sleuth
search pagerduty` found nothing on a page saying "PagerDuty", and said no word of the query occurs).
The whole of such a chunk was indexed lowercased but not stemmed (``pagerduty``) while the query's
plain word was stemmed (``pagerduti``); since parser version 3 an identifier that is one only by its
case is indexed as the word it lowercases to (sleuth.text.analyze._whole_terms). An index of an
older parser is analysed again by the next `sleuth index`, of a folder or of records."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from sleuth.config import Config
from sleuth.engine import Engine, Record
from sleuth.ingest import PARSER_VERSION
from sleuth.types import SearchRequest
from tests.lanes.test_joined_phrases import engine_over

PAGES = {
    "oncall.md": "# On-call\n\nSilence the alert in PagerDuty, then call ParseDuration.\n",
    "plain.md": "# Plain\n\nOur pagerduty rota is on the wiki.\n",
    "other.md": "# Other\n\nThe pager on the desk and a duration of ten minutes.\n",
}


def found(engine: Engine, query: str) -> list[str]:
    return [h.path for h in engine.search(SearchRequest(query=query, lanes=["bm25"])).hits]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    yield from engine_over(tmp_path_factory.mktemp("camel"), PAGES)


@pytest.mark.parametrize(("query", "pages"), [
    ("pagerduty", ["oncall.md", "plain.md"]),   # failed before: ["plain.md"]
    ("Pagerduty", ["oncall.md", "plain.md"]),   # failed before: ["plain.md"]
    ("parseduration", ["oncall.md"]),           # failed before: []
])
def test_a_camel_case_name_in_any_case(engine: Engine, query: str, pages: list[str]) -> None:
    assert sorted(found(engine, query)) == pages


def test_the_camel_case_name_finds_the_word_written_whole(engine: Engine) -> None:
    # typed as an identifier, its parts are searched too ("pager": other.md), after both spellings of it
    ranked = found(engine, "PagerDuty")
    assert sorted(ranked[:2]) == ["oncall.md", "plain.md"] and ranked[2:] == ["other.md"]  # failed before
    assert found(engine, "ParseDuration") == ["oncall.md", "other.md"]


def test_a_lowercase_query_word_is_highlighted_in_the_camel_case_name(engine: Engine) -> None:
    hit = next(h for h in engine.search(SearchRequest(query="pagerduty", lanes=["bm25"])).hits
               if h.path == "oncall.md")
    assert [hit.snippet[s:e] for s, e in hit.highlights] == ["PagerDuty"]


def _mark_old_parser(index: Path) -> None:
    """The catalog as parser version 2 left it: every root's marker at 2."""
    conn = sqlite3.connect(index / "catalog.sqlite3")
    with conn:
        assert conn.execute("UPDATE meta SET value='2' WHERE key LIKE 'parser_version%'").rowcount >= 1
    conn.close()


def _stored_version(index: Path) -> list[str]:
    conn = sqlite3.connect(index / "catalog.sqlite3")
    try:
        return [v for (v,) in conn.execute("SELECT value FROM meta WHERE key LIKE 'parser_version%'")]
    finally:
        conn.close()


def test_records_of_an_older_parser_are_parsed_again(tmp_path: Path) -> None:
    records = [Record(rel_path="a", text="Silence the alert in PagerDuty."), Record(rel_path="b", text="Nothing.")]
    index = tmp_path / "idx"
    with Engine(index, Config(model="none")) as eng:
        first = eng.index_records("p", records)
        assert (first.added, _stored_version(index)) == (2, [str(PARSER_VERSION)])
        assert eng.index_records("p", records).unchanged == 2
    _mark_old_parser(index)
    with Engine(index, Config(model="none")) as eng:
        partial = eng.index_records("p", records[:1])  # not every record: parsed again, version kept
        assert (partial.updated, partial.unchanged) == (1, 0)
        assert _stored_version(index) == ["2"]
        again = eng.index_records("p", records)  # every record: parsed again, version recorded
        assert (again.updated, again.unchanged) == (2, 0)
        assert _stored_version(index) == [str(PARSER_VERSION)]
        assert eng.index_records("p", records).unchanged == 2
        assert found(eng, "pagerduty") == ["a"]


def test_status_says_a_root_was_parsed_by_an_older_sleuth(tmp_path: Path) -> None:
    from sleuth.commands.health import render_status

    src = tmp_path / "notes"
    src.mkdir()
    (src / "a.md").write_text("# A\n\nPagerDuty\n", encoding="utf-8")
    index = tmp_path / "idx"
    with Engine(index, Config(model="none")) as eng:
        eng.index([src], project="notes")
        assert [c.outdated for c in eng.status().coverage] == [False]
    _mark_old_parser(index)
    with Engine(index, Config(model="none")) as eng:
        st = eng.status()
        assert [c.outdated for c in st.coverage] == [True]
        assert "parsed by an older sleuth: run `sleuth index` to parse it again" in render_status(st)
        eng.index([src], project="notes")
        assert [c.outdated for c in eng.status().coverage] == [False]
