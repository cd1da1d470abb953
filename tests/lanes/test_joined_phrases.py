"""A quoted phrase matches its words written joined into one chunk (a new user's trial): a page
writing ``files/directories`` was not found by ``"files directories"``, because the exact field keeps
a path or identifier chunk whole (one surface token) while a user reads its words apart. Now the
phrase also matches the words joined by ``/ . _ -`` (and the other chunk connectors) or by camelCase
humps, looked up in the exact field's term dictionary (:meth:`sleuth.lanes.postings.Postings.phrase`);
an identifier quoted as written still matches only itself, and a word written whole (``getusername``,
``everyday``) is not a camelCase chunk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import tantivy

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.lanes.base import LaneQuery
from sleuth.text import parse_query
from sleuth.types import SearchRequest

PAGES = {
    "walker.md": "# Walker\n\nThe walker lists files/directories under the root and reads src/cli.py.\n",
    "config.md": "# Config\n\nSettings come from os.getenv and the snake_case_name table.\n",
    "camel.md": "# Camel\n\nCall getUserName before HTTPServer starts, in read-only mode.\n",
    "plain.md": "# Plain\n\nThe getusername helper runs everyday.\n",
    "spaced.md": "# Spaced\n\nIt lists files directories and then read only notes.\n",
    "versions.md": "# Versions\n\nVersion 1.2 ships; 12 fixes.\n",
}


def engine_over(root: Path, pages: dict[str, str]) -> Iterator[Engine]:
    """An engine (no model) over a folder ``root/notes`` of ``pages`` (name -> text), project "notes"."""
    src = root / "notes"
    src.mkdir()
    for name, text in pages.items():
        (src / name).write_text(text, encoding="utf-8")
    with Engine(root / "idx", Config(model="none")) as eng:
        eng.index([src], project="notes")
        yield eng


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    yield from engine_over(tmp_path_factory.mktemp("joined"), PAGES)


def found(engine: Engine, query: str) -> list[str]:
    """The pages a default search returns for ``query``, sorted."""
    return sorted(h.path for h in engine.search(SearchRequest(query=query)).hits)


@pytest.mark.parametrize(("query", "pages"), [
    ('"files directories"', ["spaced.md", "walker.md"]),  # failed before: ["spaced.md"]
    ('"lists files directories under"', ["walker.md"]),   # a joined run inside a longer phrase
    ('"src cli py"', ["walker.md"]),                      # two joiners in one chunk
    ('"os getenv"', ["config.md"]),
    ('"snake case name"', ["config.md"]),
    ('"get user name"', ["camel.md"]),                    # camelCase humps; not plain.md's getusername
    ('"http server starts"', ["camel.md"]),               # an acronym's hump
    ('"read only"', ["camel.md", "spaced.md"]),
    ('"version 1 2"', ["versions.md"]),                   # 1.2, not 12
    ('"1 2 ships"', ["versions.md"]),
])
def test_a_phrase_matches_its_words_written_joined(engine: Engine, query: str, pages: list[str]) -> None:
    assert found(engine, query) == pages


@pytest.mark.parametrize(("query", "pages"), [
    ('"files/directories"', ["walker.md"]),  # an identifier quoted as written: itself only
    ('"src/cli.py"', ["walker.md"]),
    ('"getusername"', ["camel.md", "plain.md"]),  # the exact field folds case: getUserName too
    ('"every day"', []),                     # "everyday" is one word, not a camelCase chunk
    ('"12 fixes"', ["versions.md"]),
    ('"1 2 fixes"', []),                     # two digits are never joined by nothing
    ('"directories files"', []),             # the words' order still counts
])
def test_what_a_phrase_still_does_not_match(engine: Engine, query: str, pages: list[str]) -> None:
    assert found(engine, query) == pages


def test_every_lane_requires_the_joined_phrase_alike(engine: Engine) -> None:
    parsed = parse_query('"files directories" walker lists')
    docs = {}
    for lane in ("bm25", "index", "rm3", "exact"):
        res = engine.lanes[lane].search(LaneQuery(parsed, 100, None))
        blocks = engine.catalog.blocks(list(res.block_ids))
        docs[lane] = sorted({engine.catalog.document(b.doc_id).rel_path for b in blocks.values()})
    assert docs == {"bm25": ["spaced.md", "walker.md"], "index": ["spaced.md", "walker.md"],
                    "rm3": ["spaced.md", "walker.md"], "exact": ["spaced.md", "walker.md"]}


def test_the_joined_words_are_highlighted(engine: Engine) -> None:
    resp = engine.search(SearchRequest(query='"files directories"'))
    hit = next(h for h in resp.hits if h.path == "walker.md")
    text = hit.snippet
    assert [text[s:e] for s, e in hit.highlights] == ["files/directories"]


def test_a_phrase_nobody_writes_joined_is_the_phrase_query_it_was(engine: Engine) -> None:
    postings = engine.postings
    searcher = postings.searcher()
    for tokens in (("lists", "files"), ("the", "walker", "lists")):
        plain = tantivy.Query.phrase_query(postings.schema, "exact", list(tokens))
        assert postings._joined_spellings(tokens) == []
        assert [(round(s, 6), a.doc) for s, a in searcher.search(postings.phrase(tokens), 10).hits] == \
            [(round(s, 6), a.doc) for s, a in searcher.search(plain, 10).hits]
    assert postings._joined_spellings(("files", "directories")) == [(("files/directories",), ())]
    assert postings._joined_spellings(("get", "user", "name")) == [
        (("getusername",), (("getusernam", "get", "user", "name"),))]


def test_new_blocks_are_seen_by_the_next_search(tmp_path: Path) -> None:
    src = tmp_path / "notes"
    src.mkdir()
    (src / "a.md").write_text("# A\n\nNothing joined here: files and directories.\n", encoding="utf-8")
    with Engine(tmp_path / "idx", Config(model="none")) as eng:
        eng.index([src], project="notes")
        assert found(eng, '"files directories"') == []
        (src / "b.md").write_text("# B\n\nSee files/directories.\n", encoding="utf-8")
        eng.index([src], project="notes")
        assert found(eng, '"files directories"') == ["b.md"]


def test_a_long_phrase_is_searched_as_written(engine: Engine) -> None:
    """Joined spellings are looked for in phrases of at most PHRASE_JOIN_MAX_TOKENS tokens: a longer
    one is the phrase as written (before, a phrase of 1,300 tokens with joined spellings in the index
    raised RecursionError in the spelling walk, and one near the query length limit took 22 s at
    1,000,000 blocks)."""
    from sleuth.lanes.postings import PHRASE_JOIN_MAX_TOKENS, _spell

    words = ["files", "directories"] * 700
    runs = [[(i + 1, "files/directories", None)] if i % 2 == 0 else [] for i in range(len(words))]
    with pytest.raises(RecursionError):  # what a phrase this long would have walked
        _spell(tuple(words), runs)
    assert engine.postings._joined_spellings(tuple(words)) == []
    long_read_only = ["read", "only"] * 300  # camel.md writes "read-only" once; 3,000 characters
    assert engine.postings._joined_spellings(tuple(long_read_only)) == []
    assert found(engine, '"' + " ".join(long_read_only) + '"') == []
    short = ["lists", "files", "directories"] * (PHRASE_JOIN_MAX_TOKENS // 3)
    assert len(short) <= PHRASE_JOIN_MAX_TOKENS
    assert engine.postings._joined_spellings(tuple(short)) != []


def test_a_phrase_of_stop_words_is_not_its_word_written_whole(tmp_path: Path) -> None:
    """Attack round (this stop): '"log in to" server' made every word lane fail ("words must not be
    empty"): the camelCase witness of "inTo" is empty (stop words), and an empty phrase query was
    built; and "can not" found "cannot" (its witness, the one term "cannot", is the word's own)."""
    pages = {"into.md": "# Into\n\nLog into the server.\n", "spaced.md": "# Spaced\n\nLog in to the server.\n",
             "cannot.md": "# Cannot\n\nYou cannot log in.\n"}
    for eng in engine_over(tmp_path, pages):
        resp = eng.search(SearchRequest(query='"log in to" server'))
        assert set(resp.unavailable_lanes) <= {"vector"} and sorted(h.path for h in resp.hits) == ["spaced.md"]
        assert found(eng, '"can not"') == []
        assert eng.postings._joined_spellings(("in", "to")) == []
