"""Indexing warms the lanes a search runs by default: the tfidf lane (off by default) builds and
saves its model only when it is configured, or on its first search."""

from __future__ import annotations

from sleuth.config import Config
from sleuth.engine import Engine, Record
from sleuth.lanes.tfidf import TFIDF_CACHE_FILE
from sleuth.types import SearchRequest

RECORDS = [Record("a", "Alpha engines index blocks.", title="Alpha"),
           Record("b", "Beta catalogs keep the documents.", title="Beta")]


def test_default_lanes_do_not_build_the_tfidf_cache_but_a_tfidf_search_still_answers(tmp_path):
    with Engine(tmp_path / "idx", Config(model="none")) as e:
        e.index_records("p", RECORDS)
        assert not (tmp_path / "idx" / TFIDF_CACHE_FILE).exists()
        resp = e.search(SearchRequest(query="beta catalogs", lanes=["tfidf"], limit=5))
        assert [h.path for h in resp.hits] == ["b"]


def test_a_configured_tfidf_lane_is_built_and_saved_at_indexing(tmp_path):
    with Engine(tmp_path / "idx", Config(model="none", lanes=("bm25", "tfidf"))) as e:
        e.index_records("p", RECORDS)
    assert (tmp_path / "idx" / TFIDF_CACHE_FILE).is_file()
