"""The postings' search memo and the rm3 lane beside the others (issue 16, item 6: hybrid at 1M blocks).

The rm3 lane's first round is the bm25 lane's query for fewer blocks: after the bm25 lane it is read
from the memo, not searched again; a commit, other projects or other documents are never served an
old answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sleuth.config import LANE_DEPTH_BLOCKS_PER_RESULT
from sleuth.engine import Engine
from sleuth.lanes import lexical
from sleuth.lanes.base import LaneQuery
from sleuth.lanes.postings import SEARCH_MEMO_ENTRIES, Postings
from sleuth.text import parse_query
from sleuth.types import RANK_WINDOW_STEP_DOCS, SearchRequest

TEXTS = {
    "a.md": "# Wing\n\nThe airfoil wing lift grows with the angle of attack.\n",
    "b.md": "# Lift\n\nWing lift and airfoil drag in a wind tunnel.\n",
    "c.md": "# Tunnel\n\nThe wind tunnel measures airfoil drag.\n",
    "d.md": "# Cats\n\nCats sleep all day in the sun, far from any wing.\n",
}


def write_notes(root: Path, texts: dict[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in texts.items():
        (root / rel).write_text(text, encoding="utf-8")


@pytest.fixture
def engine(tmp_path: Path):
    write_notes(tmp_path / "notes", TEXTS)
    eng = Engine(tmp_path / "idx")
    eng.index([tmp_path / "notes"], project="notes")
    yield eng
    eng.close()


@pytest.fixture
def searches(monkeypatch):
    """The tantivy searches made (the memo's misses), counted."""
    calls: list[int] = []
    real = Postings._search

    def counted(self, *args):
        calls.append(args[1])  # k
        return real(self, *args)

    monkeypatch.setattr(Postings, "_search", counted)
    return calls


def paths(eng: Engine, block_ids) -> list[str]:
    docs = eng.catalog.documents(list(dict.fromkeys(b.partition(":")[0] for b in block_ids)))
    return [docs[b.partition(":")[0]].rel_path for b in block_ids]


def test_rm3_first_round_is_read_from_the_bm25_answer(engine, searches):
    q = LaneQuery(parse_query("wing lift"), 100)
    bm25 = engine.lanes["bm25"].search(q)
    assert paths(engine, bm25.block_ids) == ["b.md", "a.md", "d.md"]
    assert searches == [100]
    rm3 = engine.lanes["rm3"].search(q)
    assert searches == [100, 100]  # its second round only
    # the same list as an rm3 lane that searched its first round itself
    engine.postings.forget_searches()
    again = engine.lanes["rm3"].search(q)
    assert searches == [100, 100, 100, 100]  # its first round as deep as its answer: it reranks it
    assert again == rm3
    assert sorted(paths(engine, rm3.block_ids)[:2]) == ["a.md", "b.md"]


def test_prefix_of_a_longer_answer_equals_a_shorter_search(engine, searches):
    postings = engine.postings
    query = postings.any_of("body", ["wing", "airfoil"])
    assert query is not None
    longer = postings.search(query, 50, None, memo_key="k")
    short = postings.search(query, 2, None, memo_key="k")
    assert len(searches) == 1
    assert short.block_ids == longer.block_ids[:2] == postings.search(query, 2, None).block_ids
    # a longer list than was searched is searched again (the memo held only the top 2)
    postings.forget_searches()
    postings.search(query, 2, None, memo_key="k2")
    assert len(postings.search(query, 50, None, memo_key="k2").block_ids) == 4
    assert searches == [50, 2, 2, 50]


def test_projects_and_documents_are_part_of_the_key(engine, searches):
    postings = engine.postings
    query = postings.any_of("body", ["wing"])
    assert query is not None
    everywhere = postings.search(query, 10, None, memo_key="k")
    assert postings.search(query, 10, ["elsewhere"], memo_key="k").block_ids == []
    one_doc = next(iter(everywhere.block_ids)).partition(":")[0]
    restricted = postings.search(query, 10, None, doc_ids={one_doc}, memo_key="k")
    assert {b.partition(":")[0] for b in restricted.block_ids} == {one_doc}
    assert len(searches) == 3
    assert postings.search(query, 10, ["notes"], memo_key="k").block_ids == everywhere.block_ids
    assert len(searches) == 4


def test_a_commit_is_never_answered_from_the_memo(engine, tmp_path, searches):
    q = LaneQuery(parse_query("wing lift"), 100)
    before = engine.lanes["bm25"].search(q)
    write_notes(tmp_path / "notes", {"e.md": "# Wing lift\n\nWing lift, wing lift: lift of a wing.\n"})
    engine.index([tmp_path / "notes"], project="notes")
    after = engine.lanes["bm25"].search(q)
    assert paths(engine, after.block_ids)[0] == "e.md" and after != before
    assert searches == [100, 100]


def test_memo_is_bounded(engine):
    postings = engine.postings
    query = postings.any_of("body", ["wing"])
    assert query is not None
    for i in range(SEARCH_MEMO_ENTRIES + 10):
        postings.search(query, 5, None, memo_key=("k", i))
    assert len(postings._memo) == SEARCH_MEMO_ENTRIES


def test_a_search_with_bm25_and_rm3_searches_rm3s_first_round_once(engine, searches, monkeypatch):
    req = SearchRequest(query="wing lift airfoil", lanes=["bm25", "index", "rm3"])
    depth = RANK_WINDOW_STEP_DOCS * LANE_DEPTH_BLOCKS_PER_RESULT  # each lane's blocks at limit 20: 200
    with_memo = engine.search(req)
    assert searches == [depth, depth, depth]  # bm25, index, rm3's second round
    engine.postings.forget_searches()
    monkeypatch.setattr(lexical.BM25Lane, "memo_key", lambda self, parsed: None)
    without = engine.search(req)
    assert searches[3:] == [depth, depth, depth, depth]
    assert with_memo.lanes == without.lanes == ["bm25", "index", "rm3"]
    assert [(h.doc_id, h.score) for h in with_memo.hits] == [(h.doc_id, h.score) for h in without.hits]


def test_bm25_memo_key_names_terms_qtf_and_phrases():
    key = lexical.bm25_memo_key
    assert key(parse_query("wing lift")) == key(parse_query("Wing, lift!"))
    assert key(parse_query("wing lift")) != key(parse_query("wing wing lift"))
    assert key(parse_query('wing "lift"')) != key(parse_query("wing lift"))
