"""search_guides ranking and answers (seed 001), on guides rebuilding the seed's worked examples."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth.guides import GuideEntry, clamp_limit, format_matches, plain, search_guides
from sleuth.guides.build import build_guides
from sleuth.guides.search import GuideIndex, tokenize
from tests.guides.fixture import BASE_URL, write_content


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> GuideIndex:
    content = write_content(tmp_path_factory.mktemp("blog") / "content" / "blog")
    return GuideIndex(build_guides(content, BASE_URL).guides)


def test_fractional_cto_answer_is_the_seeds(index: GuideIndex) -> None:
    matches = index.search("fractional cto", 2)
    assert format_matches("fractional cto", matches) == "\n".join([
        '2 guides matched "fractional cto".',
        "1. Fractional CTO for Mid-Market and PE Portcos",
        "https://pineapples.dev/blog/fractional-cto-services-mid-market-guide",
        "A fractional CTO is the same senior operator week to week. Architecture, vendor, hiring, board-ready "
        "tech. No full-time hire. Not a rotating bench.",
        "2. Fractional CTO Rates: What the Seat Returns",
        "https://pineapples.dev/blog/fractional-cto-roi-business-case-mid-market",
        "Fractional CTO rates depend on the seat, the days, and the scope. The return is the decision that gets "
        "made, and the spend that does not.",
    ])


def test_points_and_locale_tie_order(index: GuideIndex) -> None:
    top = index.search("fractional cto", 3)
    assert [(m.title, m.score) for m in top] == [
        ("Fractional CTO for Mid-Market and PE Portcos", 26),
        ("Fractional CTO Rates: What the Seat Returns", 26),
        ("estimate_fractional_cto_cost: What the Tool Returns", 18),  # underscore: no joined-query bonus
    ]
    # Code-point order would have put "Rates" first ("R" < "f"); locale order puts "for" first.
    assert sorted(m.title for m in top[:2])[0] == "Fractional CTO Rates: What the Seat Returns"


def test_vendor_tie(index: GuideIndex) -> None:
    top = index.search("vendor")
    assert [(m.title.split(":")[0], m.score) for m in top[:2]] == [
        ("Software Vendor Management for Non-Technical Executives", 17),
        ("Vendor Due Diligence for PE and Mid-Market Buyers", 17),
    ]
    assert len(top) == 3  # the third only has "vendor" in its excerpt


def test_unknown_looking_query_still_scores_its_tokens(index: GuideIndex) -> None:
    top = index.search("zzzz-not-a-guide", 10)
    assert (top[0].title, top[0].score) == ("search_guides: What the Tool Returns", 10)


@pytest.mark.parametrize(("query", "answer"), [("   ", 'No guides matched "".'), ("a", 'No guides matched "a".'),
                                               ("zzzz", 'No guides matched "zzzz".')])
def test_blank_and_one_letter_queries_match_nothing(index: GuideIndex, query: str, answer: str) -> None:
    assert format_matches(query, index.search(query)) == answer


@pytest.mark.parametrize(
    ("limit", "expected"),
    [(None, 5), ("", 5), (" ", 5), ("nope", 5), (0, 1), (0.9, 1), (-3, 1), (1.9, 1), ("8", 8), (100, 10),
     (True, 5), ([3], 5), ({"n": 3}, 5), (math.nan, 5), (math.inf, 5), ("Infinity", 5), (10**400, 5),
     (" 8\n", 8), ("0x8", 8), ("1e1", 10), ("-0.5", 1), ("8px", 5), ("1_0", 5), ("\ufeff7\ufeff", 7), (7.99, 7)],
)
def test_clamp_limit_as_the_seed(limit: object, expected: int) -> None:
    assert clamp_limit(limit) == expected


@pytest.mark.parametrize(("limit", "count"), [(None, 5), ("nope", 5), (0, 1), (1.9, 1), ("8", 8), (100, 10)])
def test_limit_clamp_shows_in_the_matches(index: GuideIndex, limit: object, count: int) -> None:
    assert len(index.search("pineapples", limit)) == count


def test_one_match_says_guide(index: GuideIndex) -> None:
    text = format_matches("due \u2014 diligence", index.search("due \u2014 diligence"))
    assert text.startswith('1 guide matched "due - diligence".\n1. Vendor Due Diligence')


def test_summary_is_one_line_and_falls_back_to_the_title() -> None:
    entries = [GuideEntry(title="Blank Excerpt Guide", excerpt=" \n ", tags=[], url="https://x.dev/a"),
               GuideEntry(title="Dashes", excerpt="one \u2014 two\u2013three\n\n four", tags=[], url="https://x.dev/b")]
    assert search_guides(entries, "blank")[0].summary == "Blank Excerpt Guide"
    assert search_guides(entries, "dashes")[0].summary == "one - two-three four"


def test_tokenizer() -> None:
    assert tokenize("zzzz-not-a-guide") == ["zzzz", "not", "guide"]
    assert tokenize("Fractional_CTO  cost!") == ["fractional", "cto", "cost"]
    assert tokenize("café Zürich x") == ["café", "zürich"]  # non-ASCII letters kept (the seed drops them)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_tokens_are_the_seeds(query: str) -> None:
    seed = [t for t in re.split(r"[^a-z0-9]+", query.lower()) if len(t) > 1]
    assert tokenize(query) == seed


def test_non_ascii_titles_match_composed_or_decomposed() -> None:
    entries = [GuideEntry(title="Cafe\u0301 menus", excerpt="x", tags=[], url="https://x.dev/c")]
    assert [m.score for m in search_guides(entries, "café")] == [13]


def test_plain() -> None:
    assert plain("  a\u2014b \u2013 c\n\td\u00a0 ") == "a - b - c d"
    assert plain("") == ""


def test_tags_match_by_substring(tmp_path: Path) -> None:
    entries = [GuideEntry(title="T", excerpt="E", tags=["search_guides"], url="https://x.dev/t")]
    assert search_guides(entries, "guide")[0].score == 3
