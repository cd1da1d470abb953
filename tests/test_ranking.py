from __future__ import annotations

import pytest

from sleuth.config import Config
from sleuth.errors import QueryError
from sleuth.fusion import FusedDocument, LaneTrace
from sleuth.pipeline.fuse import fuse_question
from sleuth.pipeline.plan import PlannedQuestion, Variant, build_plan
from sleuth.ranking import (
    SEMANTIC_ONLY_MIN_SIMILARITY,
    is_semantic_only,
    judge_semantic_only,
    lexical_state,
    semantic_notice,
)
from sleuth.text import parse_query
from sleuth.types import RankedList, SearchRequest


def doc(doc_id: str, *lanes: tuple[str, float]) -> FusedDocument:
    trace = [LaneTrace(lane, 1, 1.0, 1.0, score) for lane, score in lanes]
    return FusedDocument(doc_id, float(len(lanes)), [f"{doc_id}:a"], f"{doc_id}:a", trace)


def doc_of(block_id: str) -> str:
    return block_id.partition(":")[0]


def test_semantic_only_means_every_lane_is_semantic():
    assert is_semantic_only(doc("a", ("vector", 0.7)))
    assert is_semantic_only(doc("a", ("vector#0", 0.7), ("vector#1", 0.4)))  # memory variants
    assert not is_semantic_only(doc("a", ("vector", 0.7), ("bm25", 3.0)))
    assert not is_semantic_only(doc("a", ("graph", 1.0)))
    assert not is_semantic_only(doc("a"))


def test_judge_marks_and_drops_only_when_asked():
    fused = [doc("lex", ("bm25", 5.0), ("vector", 0.2)), doc("strong", ("vector", 0.62)),
             doc("weak", ("vector", 0.41)), doc("weak2", ("vector#0", 0.35), ("vector#1", 0.45))]
    kept = judge_semantic_only(fused, drop_weak=False)
    assert [d.doc_id for d in kept] == ["lex", "strong", "weak", "weak2"]
    assert [d.semantic_only for d in kept] == [False, True, True, True]
    dropped = judge_semantic_only(fused, drop_weak=True)
    assert [(d.doc_id, d.semantic_only) for d in dropped] == [("lex", False), ("strong", True)]
    at_threshold = doc("t", ("vector", SEMANTIC_ONLY_MIN_SIMILARITY))
    assert judge_semantic_only([at_threshold], drop_weak=True)[0].semantic_only
    assert fused[1].semantic_only is False  # the input is not changed


def test_notice():
    assert semantic_notice(lexical_ran=False, lexical_found=False, results=3, dropped=0) is None
    assert semantic_notice(True, True, 3, 0) is None
    assert "every result is a semantic-only match" in semantic_notice(True, False, 2, 1)
    assert semantic_notice(True, False, 0, 3) == (
        "no word of the query occurs in the searched documents; 3 weakly similar document(s) left out")
    assert semantic_notice(True, False, 0, 0) == "no word of the query occurs in the searched documents"


def test_lexical_state():
    assert lexical_state([RankedList("bm25", (), ()), RankedList("vector", ("d:a",), (0.5,))]) == (True, False)
    assert lexical_state([RankedList("exact#1", ("d:a",), (1.0,)), RankedList("bm25#0", (), ())]) == (True, True)
    assert lexical_state([RankedList("vector", ("d:a",), (0.5,))]) == (False, False)


def ranked(lists: list[RankedList], cfg: Config, limit: int = 10) -> tuple[list[FusedDocument], int]:
    """The pipeline's fusion step (sleuth.pipeline.fuse) of one plain question over ``lists``."""
    question = PlannedQuestion("", "q", limit, 0, (Variant("q", parse_query("q"), 1.0),), frozenset())
    return fuse_question(question, [(0, r) for r in lists], cfg.fusion, cfg.fusion_weights(), cfg.rrf_k, {}, 100,
                         {}, cfg.lanes)


def test_weak_noise_is_dropped_when_no_word_matched():
    vector = RankedList("vector", ("a:1", "b:1", "c:1", "d:1"), (0.55, 0.45, 0.40, 0.35))
    cfg = Config()  # the default lanes: bm25, index, rm3, vector
    assert cfg.lanes == ("bm25", "index", "rm3", "vector")
    empty = [RankedList(lane, (), ()) for lane in ("bm25", "index", "rm3")]
    fused, dropped = ranked([*empty, vector], cfg)
    assert [(d.doc_id, d.semantic_only) for d in fused] == [("a", True)] and dropped == 3
    assert semantic_notice(True, False, len(fused), dropped).startswith("no word of the query occurs")
    # a word matched: semantic-only documents are kept (and marked). The lone lexical match e is first:
    # the index and rm3 lanes repeat bm25's list, so bm25 carries the lexical 0.696 (z flat: 2 x 0.696)
    # against the vector lane's clear best a (z 2.70 x 0.5)
    lexical = [RankedList(lane, ("e:1",), (4.0,)) for lane in ("bm25", "index", "rm3")]
    fused, dropped = ranked([*lexical, vector], cfg)
    assert [(d.doc_id, d.semantic_only) for d in fused][:3] == [("e", False), ("a", True), ("b", True)]
    assert dropped == 0
    # vector lane alone: meaning matches were asked for; nothing dropped
    fused, dropped = ranked([vector], cfg)
    assert [d.doc_id for d in fused] == ["a", "b", "c", "d"] and dropped == 0


def test_a_repeating_lane_counts_once():
    bm25 = RankedList("bm25", ("a:1", "b:1"), (3.0, 1.0))
    index = RankedList("index", ("a:1", "b:1"), (3.0, 1.0))  # an untitled collection: the same ranking
    fused, _ = ranked([bm25, index], Config())
    a = {t.lane: t for t in fused[0].trace}
    assert a["index"].weight == 0 and a["index"].contribution == 0 and a["index"].rank == 1
    assert a["bm25"].weight == 0.48 + 0.12  # the index lane's weight goes to its family
    assert fused[0].repeats == {"index": "bm25"}  # what --explain names (not counted: it repeats bm25)
    assert sum(t.contribution for t in fused[0].trace) == fused[0].score


def test_the_notice_says_why_no_word_matched() -> None:
    assert semantic_notice(True, False, 0, 0, phrases=True) == (
        "no searched document holds the query's quoted phrase(s) as written")
    assert semantic_notice(True, False, 0, 0, filtered=True) == (
        "no word of the query occurs in the documents the filters allow")
    assert semantic_notice(True, False, 0, 0, phrases=True, filtered=True) == (
        "no document the filters allow holds the query's quoted phrase(s) as written")


def test_a_phrase_restricted_vector_hit_is_not_labelled_semantic_only():
    """With a quoted phrase the vector lane searches only the blocks holding it verbatim: a document
    it alone found holds the phrase as written, so it is no meaning-only match (nor dropped as noise)."""
    cfg = Config()
    question = PlannedQuestion("", '"blue lantern" cat', 10, 0,
                               (Variant('"blue lantern" cat', parse_query('"blue lantern" cat'), 1.0),), frozenset())
    lexical = [RankedList(lane, ("e:1",), (4.0,)) for lane in ("bm25", "index", "rm3")]
    vector = RankedList("vector", ("a:1", "e:1"), (0.62, 0.41))
    fused, _ = fuse_question(question, [(0, r) for r in [*lexical, vector]], cfg.fusion, cfg.fusion_weights(),
                             cfg.rrf_k, {}, 100, {}, cfg.lanes)
    assert {d.doc_id: d.semantic_only for d in fused} == {"e": False, "a": False}
    # lexical lanes found nothing (say, below their depth): the weak phrase holder is kept, unmarked
    empty = [RankedList(lane, (), ()) for lane in ("bm25", "index", "rm3")]
    weak = RankedList("vector", ("w:1",), (0.35,))
    fused, dropped = fuse_question(question, [(0, r) for r in [*empty, weak]], cfg.fusion, cfg.fusion_weights(),
                                   cfg.rrf_k, {}, 100, {}, cfg.lanes)
    assert [(d.doc_id, d.semantic_only) for d in fused] == [("w", False)] and dropped == 0
    # without a phrase the same lists are meaning-only matches
    fused, _ = ranked([*lexical, vector], cfg)
    assert {d.doc_id: d.semantic_only for d in fused} == {"e": False, "a": True}


def test_every_search_within_a_window_step_ranks_the_same_lane_lists() -> None:
    """The rank window every surface shares: offset + limit (or a larger rank_window) rounded up to
    100 documents, each lane returning 2 blocks per document of it (the defaults)."""
    config = Config()

    def window_depth(offset: int, limit: int, rank_window: int | None = None, step: int = config.rank_window_step_docs,
                     per_result: int = config.lane_depth_blocks_per_result) -> tuple[int, int]:
        req = SearchRequest(query="harbor crane", offset=offset, limit=limit, rank_window=rank_window)
        plan = build_plan(req, ("bm25",), None, None, step, per_result, offset)
        return plan.window, plan.depth

    # the CLI's page 1 and 2, MCP at 10 or 50, `sleuth eval` at 100, a rank window of 100: one plan
    for offset, limit, rank_window in [(0, 1, None), (0, 10, None), (10, 10, None), (0, 50, None), (0, 100, None),
                                       (90, 10, None), (0, 10, 100), (0, 10, 37)]:
        assert window_depth(offset, limit, rank_window) == (100, 200), (offset, limit, rank_window)
    for offset, limit, rank_window in [(0, 101, None), (100, 10, None), (150, 50, None), (0, 10, 150)]:
        assert window_depth(offset, limit, rank_window) == (200, 400), (offset, limit, rank_window)
    assert window_depth(0, 10_000) == (10_000, 20_000)
    assert window_depth(0, 10, step=1, per_result=1) == (10, 10)  # a step of 1: the window is offset + limit
    assert window_depth(5, 10, 40, step=1, per_result=3) == (40, 120)
    with pytest.raises(QueryError, match=r"offset \+ limit \(105\) is larger than rank_window \(100\)"):
        window_depth(95, 10, 100)
