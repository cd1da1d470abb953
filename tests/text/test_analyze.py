from __future__ import annotations

import sys

import pytest

from sleuth.text import analyze, fold, parse_query, surface_tokens, tokenize, unique
from sleuth.text.analyze import joined_pattern, joined_prefixes, joined_witness


def test_fold_strips_accents_and_lowercases():
    assert fold("Café Crème") == "cafe creme"
    assert fold("ÅNGSTRÖM") == "angstrom"


def test_accent_folding_terms():
    assert analyze("Café Crème") == ["cafe", "creme"]


def test_lowercasing():
    assert analyze("DATABASE") == analyze("database") == ["databas"]


def test_punctuation_removed():
    assert analyze("Hello, World! (really?)") == ["hello", "world", "realli"]


def test_stop_words_dropped():
    assert analyze("the cat and the hat") == ["cat", "hat"]
    assert analyze("the of and is it") == []


@pytest.mark.parametrize("text,term", [("C", "c"), ("R", "r"), ("go", "go"), ("Go", "go")])
def test_important_short_terms_kept(text, term):
    assert analyze(text) == [term]


def test_other_single_letters_dropped():
    assert analyze("x q z") == []


def test_snake_case_whole_and_parts():
    assert analyze("snake_case_name") == ["snake_case_name", "snake", "case", "name"]


def test_camel_case_with_acronym():
    # an identifier by its case only: the whole as the word it lowercases to (stemmed), then its parts
    assert analyze("getHTTPResponse") == ["gethttprespons", "get", "http", "respons"]


def test_dotted_name():
    terms = analyze("sleuth.engine.Engine")
    assert terms[0] == "sleuth.engine.engine"
    assert set(terms[1:]) == {"sleuth", "engin"}


def test_file_path():
    assert analyze("src/sleuth/cli.py") == ["src/sleuth/cli.py", "src", "sleuth", "cli", "py"]


def test_ticket_id():
    assert analyze("ABC-123") == ["abc-123", "abc", "123"]


def test_version_number_whole():
    terms = analyze("release 1.2.3")
    assert "1.2.3" in terms
    assert terms[0] == "releas"


def test_cjk_bigrams():
    assert analyze("東京都") == ["東京", "京都"]


def test_cjk_single_character_unigram():
    assert analyze("猫") == ["猫"]


def test_cjk_mixed_with_latin():
    terms = analyze("Tokyo 東京都 city")
    assert terms == ["tokyo", "東京", "京都", "citi"]


@pytest.mark.parametrize("word,stem", [("running", "run"), ("runs", "run"), ("connection", "connect"),
                                       ("connected", "connect")])
def test_snowball_stemming(word, stem):
    assert analyze(word) == [stem]


def test_repeats_kept_in_analyze():
    assert analyze("cat cat dog") == ["cat", "cat", "dog"]


def test_token_spans_point_at_source_chunk():
    text = "Call getHTTPResponse from src/sleuth/cli.py, then Café 東京都!"
    tokens = tokenize(text)
    assert tokens, "expected tokens"
    by_term = {t.term: text[t.start:t.end] for t in tokens}
    assert by_term["call"] == "Call"
    assert by_term["gethttprespons"] == "getHTTPResponse"
    assert by_term["http"] == "getHTTPResponse"
    assert by_term["src/sleuth/cli.py"] == "src/sleuth/cli.py"
    assert by_term["cli"] == "src/sleuth/cli.py"
    assert by_term["cafe"] == "Café"
    assert by_term["東京"] == "東京都"
    # tokens come out in text order, and each span's text analyses to a list containing the term
    assert [t.start for t in tokens] == sorted(t.start for t in tokens)
    for t in tokens:
        assert t.term in analyze(text[t.start:t.end])


def test_tokenize_terms_equal_analyze():
    text = "The quick_brown fox jumps over getHTTPResponse 1.2.3 東京都 Café."
    assert [t.term for t in tokenize(text)] == analyze(text)


def test_token_spans_with_emoji_prefix():
    text = "😀😀 naïve résumé"
    tokens = tokenize(text)
    assert [(t.term, text[t.start:t.end]) for t in tokens] == [("naiv", "naïve"), ("resum", "résumé")]


def test_surface_tokens_unstemmed_with_stop_words():
    assert surface_tokens("The Running, of Cats") == ["the", "running", "of", "cats"]


@pytest.mark.parametrize(("words", "token", "matches"), [
    (("files", "directories"), "files/directories", True),
    (("src", "cli", "py"), "src/cli.py", True),
    (("snake", "case", "name"), "snake_case_name", True),
    (("get", "user", "name"), "getusername", True),
    (("version", "1", "2"), "version1.2", True),
    (("1", "2"), "12", False),  # two digits are never joined by nothing
    (("files", "directories"), "files//directories", False),  # chunks join by single connectors
    (("files", "directories"), "files/directories.md", False),  # the whole token, not a part of it
    (("engine", "s"), "engine's", False),  # an apostrophe makes a possessive, not a join
])
def test_joined_pattern(words: tuple[str, ...], token: str, matches: bool) -> None:
    assert (joined_pattern(words).fullmatch(token) is not None) is matches


def test_joined_prefixes_begin_every_joined_token() -> None:
    assert joined_prefixes("os", "getenv") == ["os.getenv", "os/getenv", "os\\getenv", "os-getenv", "os:getenv",
                                               "os@getenv", "os#getenv", "os+getenv", "os_getenv", "osgetenv"]
    assert "12" not in joined_prefixes("1", "2")
    assert joined_prefixes("东", "京") == []


def test_joined_witness_tells_humps_from_a_word() -> None:
    words = ("get", "user", "name")
    match = joined_pattern(words).fullmatch("getusername")
    assert match is not None
    # what the bm25 field holds where getUserName is written (an identifier: whole, then its parts)
    assert joined_witness(match, words) == tuple(analyze("getUserName")) == ("getusernam", "get", "user", "name")
    assert analyze("getusername") == ["getusernam"]  # a word written whole: its stem alone
    match = joined_pattern(("src", "cli", "py")).fullmatch("src/cli.py")
    assert match is not None and joined_witness(match, ("src", "cli", "py")) is None  # joiners say it all
    match = joined_pattern(("v", "2")).fullmatch("v2")
    assert match is not None and joined_witness(match, ("v", "2")) is None  # a letter/digit boundary


def test_unique_keeps_first_order():
    assert unique(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]


@pytest.mark.parametrize(
    "text",
    [
        "Café Crème brûlée",
        "getHTTPResponse snake_case_value sleuth.cli src/app/main.py ABC-123 1.2.3",
        "東京都 大阪",
        "running quickly toward C and R with go",
        "Indexing BM25 rankings effectively",
    ],
)
def test_index_and_query_analysis_identical(text):
    terms = analyze(text)
    assert len(terms) == len(set(terms)), "test text must not repeat terms"
    assert list(parse_query(text).terms) == terms


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sleuth.text.analyze import find_terms  # noqa: E402

_WORDS = ["Running", "runs", "cry", "cries", "os.Getenv", "getHTTPResponse", "snake_case", "a.b", "x-y-z",
          "Taxonomies", "taxonomy", "the", "v1.2.3", "ABC-123", "..", "-", " ", "\n", ".", "__", "foo_", "_bar",
          "→", "├──", "Café", "東京都", "getUser", "abc123def", "nonresponse", "Response", "HTTPServer2x", "x",
          "CANCER", "Cells", "cancerCells", "C", "go", "P53", "engine's", "TREATMENTS",
          "α-cell", "naïve", "东京cells", "µm", "Привет", "привет-мир", "ΩMega", "Ωmega", "éclair", "ﬁle",
          "Straße", "İstanbul", "Ⅻcells", "ǅemal", "x²cells"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=40), st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4))
def test_find_terms_equals_filtered_tokenize(words: list[str], query_words: list[str]) -> None:
    text = "".join(w if i % 2 else w + " " for i, w in enumerate(words))
    wanted = frozenset(t.term for w in query_words for t in tokenize(w))
    assert find_terms(text, wanted) == [t for t in tokenize(text) if t.term in wanted]


# block_fields fills its piece caches in bulk (sleuth.text.analyze._add_pieces: plain words with one
# stemWords call, ASCII chunks without the chunk caches, the rest through them); its fields must be
# those of block_terms and surface_tokens, which go through the chunk caches alone.
_PIECE_WORDS = [*_WORDS, "cells,", "(The", "DNA)", "2013.", "(TNF-alpha)", "p<0.05", "'quoted'", "don't", "it’s",
                "src/cli.py:12", "_", "A", "I", "(n=3352", "16p13.3-13.2.", "ABc", "aB", "x" * 70, "a-" + "b" * 70,
                "IL-6/STAT3,", "Ser118", "–", "(", ")", "well-known", "co-op.", "#tag", "@user", "C++", "R&D"]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_PIECE_WORDS), max_size=40), st.lists(st.sampled_from(_PIECE_WORDS), max_size=4),
       st.booleans())
def test_block_fields_equal_block_terms_and_surface_tokens(words: list[str], title_words: list[str],
                                                          fresh: bool) -> None:
    module = sys.modules["sleuth.text.analyze"]  # (sleuth.text.analyze, the attribute, is the function)
    if fresh:
        module._PIECE_BODY.clear()
        module._PIECE_EXACT.clear()
    text = "".join(w if i % 3 else w + " " for i, w in enumerate(words))
    title_terms = analyze(" ".join(title_words))
    assert module.block_fields(text, title_terms) == (module.block_terms(text, title_terms),
                                                      " ".join(surface_tokens(text)))
    assert module.joined_terms(text) == " ".join(analyze(text))
    assert module.title_terms_of(text) == analyze(text)


def test_block_fields_caches_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    module = sys.modules["sleuth.text.analyze"]
    monkeypatch.setattr(module, "CHUNK_CACHE_ENTRIES", 8)
    module._PIECE_BODY.clear()
    module._PIECE_EXACT.clear()
    texts = [" ".join(f"word{i}x{j} Cells, (TNF-alpha) naïve" for j in range(5)) for i in range(6)]
    for text in texts:
        assert module.block_fields(text, ()) == (module.block_terms(text, ()), " ".join(surface_tokens(text)))
        assert len(module._PIECE_BODY) == len(module._PIECE_EXACT) <= max(8, len(set(text.split())))
