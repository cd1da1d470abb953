from __future__ import annotations

import pytest

from sleuth.errors import QueryError
from sleuth.text import QUERY_MAX_CHARS, QUERY_MAX_TERMS, analyze, parse_query


def test_terms_deduplicated_in_query_order():
    pq = parse_query("cats dogs cats Dogs running run")
    assert pq.terms == ("cat", "dog", "run")


def test_quoted_phrase_extracted_as_surface_tokens():
    pq = parse_query('"The Quick, Brown" fox')
    assert pq.phrases == (("the", "quick", "brown"),)
    assert pq.terms == ("quick", "brown", "fox")
    assert not pq.is_empty


def test_curly_quotes_phrase():
    pq = parse_query("“running dogs” here")
    assert pq.phrases == (("running", "dogs"),)


def test_two_phrases_and_duplicate_phrase_once():
    pq = parse_query('"alpha beta" gamma "alpha beta" "delta epsilon"')
    assert pq.phrases == (("alpha", "beta"), ("delta", "epsilon"))


def test_unbalanced_quote_is_literal():
    pq = parse_query('"unbalanced fox')
    assert pq.phrases == ()
    assert pq.terms == ("unbalanc", "fox")


def test_colon_is_plain_text():
    pq = parse_query("title:engine")
    assert pq.phrases == ()
    assert pq.terms == ("title:engine", "titl", "engin")


def test_operators_are_plain_text():
    pq = parse_query("(alpha OR beta) AND NOT gamma* -delta")
    assert pq.phrases == ()
    # "or", "and", "not" are stop words; nothing is interpreted as an operator
    assert pq.terms == ("alpha", "beta", "gamma", "delta")


def test_a_colon_b_does_not_raise():
    pq = parse_query("a:b")
    assert pq.terms == ("a:b",)


def test_lone_operators_query_is_empty_not_error():
    pq = parse_query("( ) * - : OR NOT")
    assert pq.terms == ()
    assert pq.is_empty


@pytest.mark.parametrize("text", ["", "   ", "\t\n", "...!!!", "?? -- ** ()", "the of and"])
def test_empty_queries(text):
    assert parse_query(text).is_empty


def test_non_empty_query_is_not_empty():
    assert not parse_query("x engine").is_empty


def test_quoted_stop_words_phrase_not_empty():
    pq = parse_query('"to be or not to be"')
    assert pq.terms == ()
    assert pq.phrases == (("to", "be", "or", "not", "to", "be"),)
    assert not pq.is_empty


def test_ten_thousand_characters_raises_query_error():
    with pytest.raises(QueryError):
        parse_query("a" * 10_000)
    with pytest.raises(QueryError):
        parse_query("word " * 2_000)


def test_max_length_accepted():
    text = "engine" + "!" * (QUERY_MAX_CHARS - 6)
    assert len(text) == QUERY_MAX_CHARS
    assert parse_query(text).terms == ("engin",)
    with pytest.raises(QueryError):
        parse_query(text + "x")


def test_non_string_raises_query_error():
    with pytest.raises(QueryError):
        parse_query(None)  # type: ignore[arg-type]


def _distinct_words(n: int) -> list[str]:
    letters = "bcdfghjklmnpqrstvwxz"
    words = []
    i = 0
    while len(words) < n:
        a, b, c, d = i % 20, (i // 20) % 20, (i // 400) % 20, (i // 8000) % 20
        words.append("q" + letters[a] + letters[b] + letters[c] + letters[d])
        i += 1
    return words


def test_many_distinct_words_capped():
    words = _distinct_words(5_000)
    assert len(set(words)) == 5_000
    text = " ".join(words[:600])  # within QUERY_MAX_CHARS
    assert len(text) <= QUERY_MAX_CHARS
    pq = parse_query(text)
    assert len(pq.terms) == QUERY_MAX_TERMS
    assert list(pq.terms) == analyze(" ".join(words[:QUERY_MAX_TERMS]))


def test_five_thousand_distinct_words():
    text = " ".join(_distinct_words(5_000))
    if len(text) > QUERY_MAX_CHARS:
        with pytest.raises(QueryError):
            parse_query(text)
    else:  # pragma: no cover - depends on the limit
        assert len(parse_query(text).terms) <= QUERY_MAX_TERMS


def test_many_distinct_cjk_bigrams_capped():
    chars = [chr(0x4E00 + i) for i in range(3_000)]
    pq = parse_query("".join(chars))
    assert len(pq.terms) == QUERY_MAX_TERMS
    assert pq.terms[0] == chars[0] + chars[1]


def test_identifiers_collected():
    pq = parse_query("where is get_user_name in sleuth.engine or getUser")
    assert pq.identifiers == ("get_user_name", "sleuth.engine", "getuser")


def test_query_whitespace_stripped():
    assert parse_query("  engine  ").text == "engine"
