from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth.summaries import SNIPPET_MAX_CHARS, Snippet, make_snippet
from sleuth.text import analyze


def check_invariants(text: str, terms: list[str], snip: Snippet, max_chars: int = SNIPPET_MAX_CHARS) -> None:
    assert len(snip.text) <= max_chars
    assert text[snip.start:snip.end] == snip.text
    wanted = set(terms)
    for s, e in snip.highlights:
        assert 0 <= s < e <= len(snip.text)
        word = snip.text[s:e]
        assert word.strip() == word and word, f"highlight {word!r} is not a word"
        assert wanted & set(analyze(word)), f"highlight {word!r} holds no query term {terms}"


def test_highlight_is_matched_word():
    text = "The engines were running while the engine room stayed quiet."
    terms = analyze("engine running")
    snip = make_snippet(text, terms)
    check_invariants(text, terms, snip)
    assert [snip.text[s:e] for s, e in snip.highlights] == ["engines", "running", "engine"]


def test_short_text_returned_whole():
    text = "A short note about the catalog and its generation counter."
    snip = make_snippet(text, analyze("catalog"))
    assert snip.text == text
    assert (snip.start, snip.end) == (0, len(text))
    assert [snip.text[s:e] for s, e in snip.highlights] == ["catalog"]


def test_short_text_without_match_returned_whole():
    text = "Nothing relevant in here."
    snip = make_snippet(text, analyze("zebra"))
    assert snip.text == text
    assert snip.highlights == []


def test_long_text_match_near_end_is_covered():
    text = "filler words here " * 60 + "the needle appears at the end of everything."
    assert len(text) > SNIPPET_MAX_CHARS
    terms = analyze("needle")
    snip = make_snippet(text, terms)
    check_invariants(text, terms, snip)
    needle_at = text.index("needle")
    assert snip.start <= needle_at and needle_at + len("needle") <= snip.end
    assert [snip.text[s:e] for s, e in snip.highlights] == ["needle"]


def test_long_text_match_in_middle_is_covered():
    text = "lorem ipsum " * 50 + "sleuth_catalog here " + "dolor sit " * 50
    terms = analyze("sleuth_catalog")
    snip = make_snippet(text, terms)
    check_invariants(text, terms, snip)
    assert "sleuth_catalog" in snip.text
    assert [snip.text[s:e] for s, e in snip.highlights] == ["sleuth_catalog"]


def test_long_text_without_match_limited():
    text = "word " * 200
    snip = make_snippet(text, analyze("absent"))
    assert len(snip.text) <= SNIPPET_MAX_CHARS
    assert snip.highlights == []


def test_window_prefers_more_distinct_terms():
    text = "alpha " + "filler " * 100 + "beta gamma delta"
    terms = analyze("beta gamma delta alpha")
    snip = make_snippet(text, terms)
    check_invariants(text, terms, snip)
    words = {snip.text[s:e] for s, e in snip.highlights}
    assert {"beta", "gamma", "delta"} <= words


def test_custom_max_chars():
    text = "one two three needle four five six seven eight nine ten " * 3
    terms = analyze("needle")
    snip = make_snippet(text, terms, max_chars=40)
    check_invariants(text, terms, snip, max_chars=40)
    assert "needle" in snip.text


def test_emoji_and_cjk_offsets():
    text = "😀 " * 200 + "東京都 に行く needle 😀😀 end"
    terms = analyze("needle 東京")
    snip = make_snippet(text, terms)
    check_invariants(text, terms, snip)
    words = [snip.text[s:e] for s, e in snip.highlights]
    assert words == ["東京都", "needle"]


def test_emoji_short_text_offsets():
    text = "🎉🎉 café 🎉 naïve résumé 東京都"
    terms = analyze("cafe resume 京都")
    snip = make_snippet(text, terms)
    assert snip.text == text
    assert [snip.text[s:e] for s, e in snip.highlights] == ["café", "résumé", "東京都"]
    # highlights index the str by code point: encode/decode round-trips with the same text
    for s, e in snip.highlights:
        assert snip.text[s:e].encode("utf-8").decode("utf-8") == snip.text[s:e]


WORDS = ["alpha", "beta", "gamma", "engine", "café", "東京都", "😀", "naïve", "run", "running",
         "the", "of", "getHTTPResponse", "snake_case", "x", "ABC-123", "\n"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(WORDS), min_size=0, max_size=200),
    st.lists(st.sampled_from(["alpha", "engine", "cafe", "東京", "run", "http", "snake_case", "abc"]),
             min_size=1, max_size=4),
    st.sampled_from([" ", "  ", ", "]),
)
def test_property_snippet_invariants(words, query_words, sep):
    text = sep.join(words)
    terms = analyze(" ".join(query_words))
    snip = make_snippet(text, terms)
    check_invariants(text, terms, snip)
    if len(text) <= SNIPPET_MAX_CHARS:
        assert snip.text == text.strip()
