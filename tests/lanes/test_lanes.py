from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

from sleuth.engine import Engine
from sleuth.lanes.base import LaneQuery
from sleuth.lanes.lexical import BM25Lane
from sleuth.lanes.tfidf import TfidfModel
from sleuth.text import parse_query

LANES = ("bm25", "tfidf", "index", "exact")


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def stored_terms(engine: Engine) -> dict[str, list[str]]:
    return {ib.block.block_id: ib.terms.split() for ib in engine.catalog.indexed_blocks(0)}


@pytest.fixture
def small_engine(tmp_path: Path):
    src = tmp_path / "notes"
    write(src, "fox.md", "# Foxes\n\nThe quick brown fox jumps over the lazy dog.\n")
    write(src, "reversed.md", "# Reversed\n\nA brown quick fox sleeps under the tree.\n")
    write(src, "cats.md", "# Cats\n\nCats sleep all day in the sun.\n")
    write(src, "code.py", "def get_user_name(user):\n    return user.name\n")
    write(
        src,
        "guide.md",
        "# Guide\n\n## Install\n\nRun pip install sleuth.\n\n## Usage\n\nCall get_user_name to read names.\n",
    )
    eng = Engine(tmp_path / "idx")
    eng.index([src], project="notes")
    yield eng
    eng.close()


def lane_query(text: str, k: int = 100, projects=None) -> LaneQuery:
    return LaneQuery(parse_query(text), k, projects)


def test_bm25_returns_only_blocks_with_a_query_term(small_engine):
    terms = stored_terms(small_engine)
    q = lane_query("fox")
    res = small_engine.lanes["bm25"].search(q)
    expected = {b for b, t in terms.items() if "fox" in t}
    assert len(expected) == 2
    assert set(res.block_ids) == expected
    assert len(res.block_ids) == len(res.scores)
    assert all(s > 0 for s in res.scores)
    assert list(res.scores) == sorted(res.scores, reverse=True)


def test_bm25_never_pads(small_engine):
    res = small_engine.lanes["bm25"].search(lane_query("zebra unicorn", k=50))
    assert res.block_ids == ()
    res = small_engine.lanes["bm25"].search(lane_query("sleep", k=50))
    terms = stored_terms(small_engine)
    assert set(res.block_ids) == {b for b, t in terms.items() if "sleep" in t}
    assert len(res.block_ids) == 2


@pytest.mark.parametrize("lane", LANES)
def test_lanes_never_return_non_matching_blocks(small_engine, lane):
    terms = stored_terms(small_engine)
    q = lane_query("cats sun")
    res = small_engine.lanes[lane].search(q)
    for b in res.block_ids:
        if lane != "index":  # index lane also matches titles/paths/headings
            assert {"cat", "sun"} & set(terms[b])
    assert len(res.block_ids) <= q.k
    assert len(res.block_ids) == len(set(res.block_ids))


def test_k_limits_lane_output(small_engine):
    res = small_engine.lanes["bm25"].search(lane_query("fox", k=1))
    assert len(res.block_ids) == 1


@pytest.mark.parametrize("lane", ["bm25", "tfidf", "index", "exact"])
def test_quoted_phrase_required(small_engine, lane):
    terms = stored_terms(small_engine)
    res = small_engine.lanes[lane].search(lane_query('"quick brown" fox'))
    blocks = small_engine.catalog.blocks(list(res.block_ids))
    assert len(res.block_ids) == 1
    assert "quick brown fox" in blocks[res.block_ids[0]].text
    assert all("brown quick" not in blocks[b].text for b in res.block_ids)
    assert terms  # sanity


def test_exact_lane_identifier(small_engine):
    res = small_engine.lanes["exact"].search(lane_query("get_user_name"))
    texts = [small_engine.catalog.blocks([b])[b].text for b in res.block_ids]
    assert len(texts) == 2
    assert all("get_user_name" in t for t in texts)


def test_exact_lane_nothing_without_phrase_or_identifier(small_engine):
    assert small_engine.lanes["exact"].search(lane_query("fox")).block_ids == ()


def test_index_lane_matches_title_field(small_engine):
    # "guide" appears only in the title / path of guide.md
    res = small_engine.lanes["index"].search(lane_query("guide"))
    docs = {small_engine.catalog.blocks([b])[b].doc_id for b in res.block_ids}
    paths = {small_engine.catalog.document(d).rel_path for d in docs}
    assert paths == {"guide.md"}


# --------------------------------------------------------------------------- project filter


@pytest.fixture
def big_small_engine(tmp_path: Path):
    big = tmp_path / "big"
    small = tmp_path / "small"
    for i in range(30):
        write(big, f"w{i:02d}.md", f"# Widget {i}\n\nwidget widget widget gadget widget {i}\n")
    write(small, "only.md", "# Lonely\n\n" + "filler text about many other things. " * 20 + "one widget here.\n")
    eng = Engine(tmp_path / "idx")
    eng.index([big], project="big")
    eng.index([small], project="small")
    yield eng
    eng.close()


@pytest.mark.parametrize("lane", ["bm25", "tfidf", "index"])
def test_project_filter_applied_before_top_k(big_small_engine, lane):
    eng = big_small_engine
    unfiltered = eng.lanes[lane].search(lane_query("widget", k=1))
    assert len(unfiltered.block_ids) == 1
    top = eng.catalog.blocks(list(unfiltered.block_ids))[unfiltered.block_ids[0]]
    assert top.project_id == "big"
    res = eng.lanes[lane].search(lane_query("widget", k=1, projects=("small",)))
    assert len(res.block_ids) == 1
    assert eng.catalog.blocks(list(res.block_ids))[res.block_ids[0]].project_id == "small"


def test_project_filter_exact_lane(big_small_engine):
    eng = big_small_engine
    res = eng.lanes["exact"].search(lane_query('"one widget"', k=1, projects=("small",)))
    assert len(res.block_ids) == 1
    res = eng.lanes["exact"].search(lane_query('"widget widget"', k=5, projects=("small",)))
    assert res.block_ids == ()


def test_project_filter_unknown_project_in_lane_returns_nothing(big_small_engine):
    res = big_small_engine.lanes["bm25"].search(lane_query("widget", k=10, projects=("nope",)))
    assert res.block_ids == ()


# --------------------------------------------------------------------------- tfidf


def test_tfidf_model_cosine_hand_computed():
    model = TfidfModel([("b1", "p", "apple apple pear"), ("b2", "p", "pear"), ("b3", "p", "kiwi")])
    n = 3
    idf = {t: math.log((1 + n) / (1 + df)) + 1 for t, df in {"apple": 1, "pear": 2, "kiwi": 1}.items()}
    w_apple = (1 + math.log(2)) * idf["apple"]
    w_pear = idf["pear"]
    norm = math.hypot(w_apple, w_pear)
    scores = model.scores(["apple"])
    assert math.isclose(float(scores[0]), w_apple / norm, rel_tol=1e-5)
    assert float(scores[1]) == 0.0 and float(scores[2]) == 0.0
    assert list(model.scores(["nothing"])) == [0.0, 0.0, 0.0]


# --------------------------------------------------------------------------- BM25 vs independent


K1, B = 1.2, 0.75


def independent_bm25(docs: dict[str, list[str]], query_terms: list[str]) -> dict[str, float]:
    n_docs = len(docs)
    avgdl = sum(len(t) for t in docs.values()) / n_docs
    df = Counter()
    for t in docs.values():
        df.update(set(t))
    scores: dict[str, float] = {}
    for block_id, terms in docs.items():
        tf = Counter(terms)
        s = 0.0
        for q in query_terms:
            if tf[q] == 0:
                continue
            idf = math.log(1 + (n_docs - df[q] + 0.5) / (df[q] + 0.5))
            s += idf * tf[q] * (K1 + 1) / (tf[q] + K1 * (1 - B + B * len(terms) / avgdl))
        if s > 0:
            scores[block_id] = s
    return scores


FILLER = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed eiusmod tempor incididunt labore "
          "dolore magna aliqua enim minim veniam quis nostrud exercitation ullamco laboris nisi aliquip").split()


@pytest.fixture
def bm25_corpus(tmp_path: Path):
    src = tmp_path / "corpus"
    for i in range(20):
        words = ["apple"] * (i % 4) + ["banana"] * (i % 3) + ["cherry"] * (1 if i % 5 == 0 else 0)
        words += [FILLER[(i + j) % len(FILLER)] for j in range(3 + 7 * i)]
        write(src, f"doc{i:02d}.txt", " ".join(words) + "\n")
    eng = Engine(tmp_path / "idx")
    eng.index([src], project="corpus")
    yield eng
    eng.close()


@pytest.mark.parametrize("query", ["apple", "apple banana", "banana cherry", "apple banana cherry"])
def test_bm25_matches_independent_bm25(bm25_corpus, query):
    eng = bm25_corpus
    docs = stored_terms(eng)
    assert len(docs) == 20  # one block per document
    lengths = [len(t) for t in docs.values()]
    assert len(set(lengths)) == 20
    parsed = parse_query(query)
    ours = independent_bm25(docs, list(parsed.terms))
    lane = eng.lanes["bm25"]
    assert isinstance(lane, BM25Lane)
    res = lane.search(LaneQuery(parsed, 100, None))
    theirs = dict(zip(res.block_ids, res.scores, strict=True))
    # the same matching set (no padding, nothing missed)
    assert set(theirs) == set(ours)
    # scores agree within tantivy's field-length quantisation
    for b, s in ours.items():
        assert math.isclose(theirs[b], s, rel_tol=0.05), (b, theirs[b], s)
    # top-10 rankings agree; a swap is tolerated only between near-ties (within 5%)
    our_rank = sorted(ours, key=lambda b: (-ours[b], b))[:10]
    their_rank = list(res.block_ids[:10])
    tenth = ours[our_rank[-1]]
    for b in set(our_rank) ^ set(their_rank):
        assert math.isclose(ours[b], tenth, rel_tol=0.05), f"{b} differs in top-10 membership"
    for i, a in enumerate(their_rank):
        for b in their_rank[i + 1:]:
            assert ours[a] * 1.05 >= ours[b], f"tantivy ranks {a} ({ours[a]:.4f}) above {b} ({ours[b]:.4f})"
    strict = [b for b in our_rank if all(
        not math.isclose(ours[b], ours[c], rel_tol=0.05) for c in ours if c != b)]
    assert [b for b in their_rank if b in strict] == strict


def wing_notes(tmp_path: Path, wing: str, lift: str, tunnel: str) -> tuple[Engine, dict[str, str], dict[str, str]]:
    """An engine over four notes (a.md ``# Wing``, b.md ``# Lift``, c.md ``# Tunnel`` with the texts given,
    d.md about cats), each block's document and each document's path."""
    src = tmp_path / "notes"
    for name, title, text in (("a.md", "Wing", wing), ("b.md", "Lift", lift), ("c.md", "Tunnel", tunnel),
                              ("d.md", "Cats", "Cats sleep all day in the sun.")):
        write(src, name, f"# {title}\n\n{text}\n")
    eng = Engine(tmp_path / "idx")
    eng.index([src], project="notes")
    doc = {b: b.partition(":")[0] for b in stored_terms(eng)}
    return eng, doc, {d: eng.catalog.documents([d])[d].rel_path for d in set(doc.values())}


def test_rm3_lane_finds_a_block_through_a_feedback_term(tmp_path):
    """The rm3 lane expands the query with the likeliest terms of the bm25 lane's best blocks: without
    ``query_word_required``, a block sharing no word with the query but one with the feedback blocks is
    found, below them; by default only blocks holding a word of the query are returned."""
    from sleuth.lanes.lexical import FeedbackLane

    eng, doc, path_of = wing_notes(tmp_path, "The airfoil wing lift grows with the angle of attack.",
                                   "Wing lift and airfoil drag in a wind tunnel.",
                                   "The wind tunnel measures airfoil drag.")
    try:
        q = lane_query("wing lift")
        bm25 = eng.lanes["bm25"].search(q)
        assert [path_of[doc[b]] for b in bm25.block_ids] == ["a.md", "b.md"]
        lane = FeedbackLane(eng.postings, eng.catalog, fb_blocks=2, fb_terms=5, original_weight=0.5,
                            query_word_required=False)
        res = lane.search(q)
        assert res.lane == "rm3"
        assert [path_of[doc[b]] for b in res.block_ids] == ["a.md", "b.md", "c.md"]
        assert list(res.scores) == sorted(res.scores, reverse=True) and all(s > 0 for s in res.scores)
        assert lane.search(lane_query("zebra")).block_ids == ()
        assert lane.search(lane_query("the")).block_ids == ()
        # a quoted phrase stays required in both rounds
        quoted = lane.search(lane_query('"wind tunnel" lift'))
        assert sorted(path_of[doc[b]] for b in quoted.block_ids) == ["b.md", "c.md"]
        # a word of the query required: the feedback terms reorder its matches, find no other block
        worded = FeedbackLane(eng.postings, eng.catalog, fb_blocks=2, fb_terms=5, original_weight=0.5)
        found = worded.search(q)
        assert [path_of[doc[b]] for b in found.block_ids] == ["a.md", "b.md"]
        # the same sums (the query's terms required, the expansion optional), added in another order
        assert list(found.scores) == pytest.approx(list(res.scores[:2]), rel=1e-6)
    finally:
        eng.close()


def test_rm3_lane_reranks_the_first_round_by_default(tmp_path, monkeypatch):
    """By default the rm3 lane scores again the bm25 lane's ``k`` best blocks (its first round, as
    deep as its answer) by the expanded query: a block the first round did not reach is not
    returned, though the expansion would have raised it (``rerank_first_round=False``)."""
    from sleuth.lanes import lexical
    from sleuth.lanes.lexical import FeedbackLane

    eng, doc, path_of = wing_notes(tmp_path,
                                   "The wing lift grows with the angle of attack at low speed and at high altitude.",
                                   "Wing lift of an airfoil in a tunnel.",
                                   "Airfoil tunnel lift: airfoil tunnel, airfoil tunnel.")
    try:

        def ranked(lane, k):
            return [path_of[doc[b]] for b in lane.search(lane_query("wing lift", k)).block_ids]

        assert ranked(eng.lanes["bm25"], 2) == ["b.md", "a.md"]
        settings = {"fb_blocks": 1, "fb_terms": 5, "original_weight": 0.1}
        reranking = FeedbackLane(eng.postings, eng.catalog, **settings)
        everywhere = FeedbackLane(eng.postings, eng.catalog, rerank_first_round=False, **settings)
        assert ranked(reranking, 2) == ["b.md", "a.md"]
        assert ranked(everywhere, 2) == ["b.md", "c.md"]
        # deep enough to hold it, the first round is reordered as the whole search orders it
        assert ranked(reranking, 3) == ranked(everywhere, 3) == ["b.md", "c.md", "a.md"]
        # a first round deeper than RM3_RERANK_MAX_BLOCKS is not reranked: the lane searches every block
        monkeypatch.setattr(lexical, "RM3_RERANK_MAX_BLOCKS", 1)
        assert ranked(reranking, 2) == ["b.md", "c.md"]
    finally:
        eng.close()
