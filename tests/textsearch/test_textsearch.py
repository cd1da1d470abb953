"""Stateless TF-IDF and fuzzy search (seed 003), on the seed's own usage examples."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth.errors import QueryError
from sleuth.textsearch import (
    DOCUMENTS_MAX_COUNT,
    check_query,
    check_texts,
    check_threshold,
    check_top_k,
    fuzzy_match,
    highlights,
    prefix,
    rank_texts,
    similarity,
)
from sleuth.textsearch.highlight import safe_cut

RATE_DOCS = ["Rate limiting protects APIs", "Authentication guide", "API rate limits"]
DEPLOY_DOCS = ["Production deployment steps", "Development setup guide", "Deployment best practices"]


def test_search_documents_seed_example() -> None:
    hits = rank_texts("rate limiting API", RATE_DOCS, 3)
    assert [h.model_dump() for h in hits] == [
        {"doc_id": "2", "score": 1.0, "snippet": "API rate limits", "highlights": ["API rate limits"]},
        # "APIs" (an identifier by its case only) is indexed as the word "apis": stem "api", as the query's
        # "API" (before parser version 3 its whole term "apis" did not match, and the text scored 0.3863)
        {"doc_id": "0", "score": 0.6816, "snippet": "Rate limiting protects APIs",
         "highlights": ["Rate limiting protects APIs"]},
    ]


def test_top_k_reaches_its_limit_over_as_many_documents() -> None:
    # top_k is bounded by TOP_K_MAX (10,000), not by the index search's own default bound
    docs = [f"walrus note {i}" for i in range(1500)] + ["an unrelated line"]
    hits = rank_texts("walrus", docs, 10_000)
    assert len(hits) == 1500 and {h.doc_id for h in hits} == {str(i) for i in range(1500)}


def test_search_index_query_seed_example() -> None:
    hits = rank_texts("deployment guide", DEPLOY_DOCS, 2)
    # "guide" is rarer than "deployment" (1 document against 2); the two deployment documents tie
    # at 0.2867 and keep their input order, and top_k 2 keeps the first.
    assert [(h.doc_id, h.score) for h in hits] == [("1", 0.4595), ("0", 0.2867)]
    assert [(h.doc_id, h.score) for h in rank_texts("deployment guide", DEPLOY_DOCS, 10)] == [
        ("1", 0.4595), ("0", 0.2867), ("2", 0.2867)]


@pytest.mark.parametrize("query", ["the of and", "?!", "zzyzx"])
def test_queries_without_matching_terms_find_nothing(query: str) -> None:
    assert rank_texts(query, RATE_DOCS, 5) == []


def test_no_documents() -> None:
    assert rank_texts("rate", [], 5) == []


def test_snippet_is_the_first_200_characters() -> None:
    text = "word " * 100 + "limits"
    (hit,) = rank_texts("limits", ["other", text], 5)
    assert hit.doc_id == "1" and hit.snippet == text[:200]
    assert hit.highlights == ["...word word word word word word limits"]


def test_highlights_windows_merge_and_cap() -> None:
    text = ("Alpha intro text goes here. " * 4 + "The rate is high. " + "filler words go on. " * 6
            + "Limits apply.\n\nThen more filler. " * 3 + "An API key ends it.")
    got = highlights(text, ["rate", "limit", "api"])
    assert got == [
        "...intro text goes here. The rate is high. filler words go on....",
        "...go on. filler words go on. Limits apply. Then more filler....",
        "...apply. Then more filler. An API key ends it.",
    ]
    assert highlights(text, ["rate", "limit", "api"], max_windows=1) == got[:1]
    assert highlights("rate limit", ["rate", "limit"]) == ["rate limit"]  # one window, no ellipses


def test_cuts_never_split_a_character_sequence() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # one emoji of five code points
    text = "a" * 198 + family + " tail"
    assert prefix(text) == "a" * 198
    accented = "e\u0301" * 150
    assert prefix(accented) == "e\u0301" * 100
    assert safe_cut(accented, 201, forward=True) == 202


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", " ", "e\u0301", "\U0001f469\u200d\U0001f467", "\U0001f469", "rate", "é",
                                 "\n"]), max_size=150).map("".join))
def test_highlights_and_snippets_are_whole_sequences(text: str) -> None:
    snippet = prefix(text)
    assert len(snippet) <= 200 and text.startswith(snippet)
    assert snippet == "" or len(snippet) == len(text) or not unicodedata.category(text[len(snippet)]).startswith("M")
    collapsed = " ".join(text.split())
    for h in highlights(text, ["rate"], context_chars=7):
        body = h.removeprefix("...").removesuffix("...")
        assert body and body in collapsed
        if h.startswith("..."):  # cut on the left: never before a mark or inside a joined sequence
            assert not unicodedata.category(body[0]).startswith("M") and body[0] != "\u200d"
            assert body[0] != "\U0001f467"  # only ever follows a joiner in these texts
        if h.endswith("..."):
            assert body[-1] != "\u200d"


def test_fuzzy_seed_examples() -> None:
    assert fuzzy_match("pythn", ["python", "java", "rust"]).model_dump() == {
        "best_match": "python", "matches": [{"candidate": "python", "score": 0.8333}]}
    assert fuzzy_match("contanerization", ["containerization", "configuration", "compilation"], 0.7).model_dump() == {
        "best_match": "containerization", "matches": [{"candidate": "containerization", "score": 0.9375}]}


def test_fuzzy_threshold_is_inclusive_and_ties_keep_input_order() -> None:
    got = fuzzy_match("contanerization", ["compilation", "configuration", "containerization"], 0.6)
    assert [(m.candidate, m.score) for m in got.matches] == [("containerization", 0.9375), ("configuration", 0.6)]
    tied = fuzzy_match("cat", ["bat", "cut", "CAT", "cart"], 0.5)
    assert [(m.candidate, m.score) for m in tied.matches] == [("CAT", 1.0), ("cart", 0.75), ("bat", 0.6667),
                                                              ("cut", 0.6667)]
    assert tied.best_match == "CAT"
    assert fuzzy_match("zzz", ["python"]).model_dump() == {"best_match": None, "matches": []}


def test_similarity() -> None:
    assert similarity("pythn", "python") == pytest.approx(5 / 6)
    assert similarity("Python", "pYTHON") == 1.0
    assert similarity("café", "cafe\u0301") == 1.0
    assert similarity("", "x") == similarity("x", "") == 0.0


@pytest.mark.parametrize(
    ("value", "message"),
    [(None, "query is required: a non-blank string"), ("  ", "query is required: a non-blank string"),
     (5, "query must be a string, got int"), (["q"], "query must be a string, got array"),
     ("x" * 4001, "query is 4001 characters long; the limit is 4000"),
     ("a\ud800", "query is not valid Unicode: it holds a lone surrogate code point")],
)
def test_check_query(value: object, message: str) -> None:
    with pytest.raises(QueryError, match=f"^{message}$".replace("(", r"\(")):
        check_query(value)


def test_check_query_keeps_the_original() -> None:
    assert check_query("  rate limits ") == "  rate limits "


@pytest.mark.parametrize(
    ("value", "message"),
    [(None, "documents is required: an array of strings"),
     ("text", "documents must be an array of strings, got string"),
     ({"a": 1}, "documents must be an array of strings, got object"),
     (["ok", 3], r"documents\[1\] must be a string, got int"),
     (["ok", None], r"documents\[1\] must be a string, got null"),
     (["a"] * 11, "too many documents: 11; the limit is 10 per call"),
     (["abcdef", "ghijk"], "documents hold 11 characters in all; the limit is 10 per call"),
     (["x\udc00"], r"documents\[0\] is not valid Unicode")],
)
def test_check_texts(value: object, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        check_texts(value, "documents", 10, 10)


def test_check_texts_accepts_empty_and_bounds() -> None:
    assert check_texts([], "documents", 10, 10) == []
    assert check_texts(["abcde", "fghij"], "documents", 2, 10) == ["abcde", "fghij"]


@pytest.mark.parametrize(("value", "expected"), [(None, 5), (3, 3), (3.0, 3), ("4", 4), (DOCUMENTS_MAX_COUNT, 10_000)])
def test_check_top_k(value: object, expected: int) -> None:
    assert check_top_k(value, 5) == expected


@pytest.mark.parametrize("value", [0, -1, 2.5, "five", True, [3], 10_001, float("nan"), float("inf")])
def test_check_top_k_rejects(value: object) -> None:
    with pytest.raises(QueryError, match=r"^top_k must be an integer from 1 to 10000; got "):
        check_top_k(value, 5)


@pytest.mark.parametrize(("value", "expected"), [(None, 0.6), (0, 0.0), (1, 1.0), (0.7, 0.7), ("0.5", 0.5)])
def test_check_threshold(value: object, expected: float) -> None:
    assert check_threshold(value, 0.6) == expected


@pytest.mark.parametrize("value", [-0.1, 1.5, "high", False, float("nan"), None.__class__])
def test_check_threshold_rejects(value: object) -> None:
    with pytest.raises(QueryError, match=r"^threshold must be a number from 0.0 to 1.0; got "):
        check_threshold(value, 0.6)
