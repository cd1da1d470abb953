"""The vector lane inside the engine: real model, vector cache, lexical-only fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.types import SearchRequest


def notes(root: Path) -> Path:
    root.mkdir()
    (root / "keys.md").write_text(
        "# Signing keys\n\nRotate the signing keys every ninety days; revoke the old key after the switch.\n",
        encoding="utf-8",
    )
    (root / "cats.md").write_text("# Cats\n\nCats sleep most of the day in warm places.\n", encoding="utf-8")
    (root / "deploy.md").write_text("# Deploy\n\nShip the container to production with the pipeline.\n",
                                    encoding="utf-8")
    return root


@pytest.fixture()
def engine(tmp_path: Path) -> Engine:
    e = Engine(tmp_path / "idx")
    report = e.index([notes(tmp_path / "notes")], project="notes")
    assert (report.added, report.embedded) == (3, 3)
    return e


def test_paraphrase_without_shared_terms_is_found_by_the_vector_lane(engine: Engine) -> None:
    resp = engine.search(SearchRequest(query="feline naps", lanes=["vector"], limit=1))
    assert [h.path for h in resp.hits] == ["cats.md"]
    assert engine.search(SearchRequest(query="feline naps", lanes=["bm25"])).hits == []
    hybrid = engine.search(SearchRequest(query="how often do we rotate cryptographic credentials", limit=3))
    assert hybrid.hits[0].path == "keys.md" and "vector" in hybrid.hits[0].sources
    assert hybrid.lanes == ["bm25", "index", "rm3", "vector"] and hybrid.unavailable_lanes == {}


def test_vectors_are_cached_by_content(engine: Engine, tmp_path: Path) -> None:
    again = engine.index([tmp_path / "notes"], project="notes")
    assert (again.unchanged, again.embedded) == (3, 0)
    (tmp_path / "notes" / "cats.md").write_text("# Cats\n\nCats chase mice at night.\n", encoding="utf-8")
    (tmp_path / "notes" / "copy.md").write_text((tmp_path / "notes" / "deploy.md").read_text(), encoding="utf-8")
    edited = engine.index([tmp_path / "notes"], project="notes")
    # The edited file is embedded again; the copy has the same title and text as deploy.md, so the
    # same embedding text, and its vector comes from the cache.
    assert (edited.updated, edited.added, edited.embedded) == (1, 1, 1)
    status = engine.status().model_dump()["vector_lane"]
    assert status["available"] and (status["blocks_with_vectors"], status["blocks"]) == (4, 4)


def test_without_a_model_the_vector_lane_is_reported_unavailable(tmp_path: Path) -> None:
    e = Engine(tmp_path / "idx", Config(model="none"))
    report = e.index([notes(tmp_path / "notes")], project="notes")
    assert report.embedded == 0
    resp = e.search("signing keys")
    assert resp.hits[0].path == "keys.md"
    assert resp.lanes == ["bm25", "index", "rm3"]
    assert resp.unavailable_lanes == {"vector": "no embedding model configured (model = 'none')"}
    assert e.status().model_dump()["vector_lane"] == {"available": False,
                                                      "reason": "no embedding model configured (model = 'none')"}


def test_lexical_only_index_opened_with_a_model_says_how_to_embed(tmp_path: Path) -> None:
    Engine(tmp_path / "idx", Config(model="none")).index([notes(tmp_path / "notes")], project="notes")
    e = Engine(tmp_path / "idx")
    resp = e.search("signing keys")
    model = e.embedder().name  # all-MiniLM-L6-v2, or its int8 model where the CPU has VNNI
    reason = f"no block has a vector from {model} yet: run `sleuth embed` (or `sleuth index`) to embed them"
    assert resp.unavailable_lanes == {"vector": reason}
    assert e.embed_pending() == 3
    assert e.search("signing keys").unavailable_lanes == {}


def test_a_search_says_which_documents_the_vector_lane_does_not_see_yet(engine: Engine, tmp_path: Path) -> None:
    assert engine.search("signing keys").notice is None
    (tmp_path / "notes" / "owls.md").write_text("# Owls\n\nOwls hunt at night.\n", encoding="utf-8")
    (tmp_path / "notes" / "bats.md").write_text("# Bats\n\nBats hunt at dusk.\n", encoding="utf-8")
    engine.index([tmp_path / "notes"], project="notes", embed=False)  # the keyword lanes first
    resp = engine.search("hunt at night")
    assert resp.notice == "the vector lane does not see 2 document(s) yet: `sleuth embed` embeds them"
    assert [h.path for h in resp.hits[:2]] == ["owls.md", "bats.md"]  # the lexical lanes do
    from sleuth.cli import render_text

    assert render_text(resp, explain=False).splitlines()[0] == f"({resp.notice})"
    assert engine.search(SearchRequest(query="hunt at night", lanes=["bm25"])).notice is None
    from sleuth.memory.arguments import parse_memory_request
    from sleuth.memory.search import MemorySearch

    memory = MemorySearch(engine)  # project_memory_search says it too
    try:
        found = memory.search(parse_memory_request({"query": "hunt at night", "project_id": "notes"}))
        assert [r["path"] for r in found["results"]][:2] == ["owls.md", "bats.md"]
        assert found["meta"]["notice"] == resp.notice
    finally:
        memory.close()
    assert engine.embed_pending() == 2
    assert engine.search("hunt at night").notice is None


def test_the_no_vector_notice_is_short_once_and_only_where_it_helps(engine: Engine, tmp_path: Path) -> None:
    """A trial: while documents waited for their vectors every search said "N document(s) have no
    vector yet, so the vector lane does not see them ..." (135 characters), also where it could not
    help: after "no document matches the filters" (the vector lane searches the same documents), for
    filters allowing only embedded documents (it counted the whole scope), and beside "an indexing
    run is in progress ... (the tfidf and vector lanes see them already)", which said the opposite.
    It is one short sentence, counting the documents the filters allow; `sleuth status` keeps the
    embedding's progress."""
    import os

    from sleuth.cli import render_text
    from sleuth.locks import lock_exclusive
    from sleuth.types import SearchFilters

    for name, text in (("owls.md", "# Owls\n\nOwls hunt at night.\n"), ("bats.md", "# Bats\n\nBats hunt at dusk.\n")):
        (tmp_path / "notes" / name).write_text(text, encoding="utf-8")
    engine.index([tmp_path / "notes"], project="notes", embed=False)

    def notice(**filters: object) -> str | None:
        req = SearchRequest(query="hunt at night", filters=SearchFilters.model_validate(filters))
        return engine.search(req).notice

    resp = engine.search("hunt at night")
    assert resp.notice == "the vector lane does not see 2 document(s) yet: `sleuth embed` embeds them"
    assert [line for line in render_text(resp, explain=False).splitlines() if "vector" in line] == [f"({resp.notice})"]
    assert notice(paths=["nothing/**"]) == "no document matches the filters"
    assert notice(paths=["keys.md", "owls.md"]) == (
        "the vector lane does not see 1 document(s) yet: `sleuth embed` embeds them")
    # every document the filters allow has its vector: the notice says only what it said before
    assert notice(paths=["keys.md", "cats.md"]) == "no word of the query occurs in the documents the filters allow"

    held = lock_exclusive(tmp_path / "idx" / "write.lock", 0)  # another process's indexing run
    try:
        engine.postings._set_generation(engine.catalog.generation() - 1)  # its postings not committed yet
        assert engine.search("hunt at night").notice == (
            "an indexing run is in progress: the bm25, index, rm3 and exact lanes see its documents only when it"
            " ends (the tfidf lane sees them already); the vector lane does not see 2 document(s) yet:"
            " `sleuth embed` embeds them")
    finally:
        os.close(held)
    assert engine.embed_pending() == 2
    assert engine.search("hunt at night").notice is None
    assert engine.status().model_dump()["vector_lane"]["blocks_with_vectors"] == 5


def test_index_records_leaves_unchanged_records_alone(tmp_path: Path) -> None:
    from sleuth.engine import Record

    e = Engine(tmp_path / "idx", Config(model="none"))
    records = [Record("d1", "Alpha text about walruses.", "Alpha"), Record("d2", "Beta text.", "Beta")]
    first = e.index_records("corpus", records)
    generation = e.catalog.generation()
    again = e.index_records("corpus", records)
    assert (first.added, again.added, again.unchanged, again.updated) == (2, 0, 2, 0)
    assert e.catalog.generation() == generation
    changed = e.index_records("corpus", [Record("d1", "Alpha text about seals.", "Alpha")])
    assert (changed.updated, changed.unchanged) == (1, 0)
    assert [h.path for h in e.search("seals").hits] == ["d1"] and e.search("walruses").hits == []


def test_hybrid_answer_is_the_same_when_rows_are_read_while_the_vector_lane_runs(engine: Engine) -> None:
    """The lexical lanes' best documents are read (rows, snippets) while the vector lane embeds the
    query; a slow embedding makes sure that happens, and the answer must not change."""
    import time

    queries = ["rotate the signing keys", "cats sleep in warm places", "ship the container", "keys cats deploy"]
    fast = [engine.search(SearchRequest(query=q, limit=2, explain=True)) for q in queries]
    embedder = engine.embedder()
    plain = embedder.embed
    read: list[str] = []
    rows = engine.catalog.hit_blocks

    def slow(texts: list[str]):
        time.sleep(0.3)
        return plain(texts)

    def hit_blocks(block_ids):
        read.extend(block_ids)
        return rows(block_ids)

    embedder.embed = slow  # type: ignore[method-assign]
    engine.catalog.hit_blocks = hit_blocks  # type: ignore[method-assign]
    engine.lanes["vector"].forget_query_vectors()
    for q, want in zip(queries, fast, strict=True):
        read.clear()
        got = engine.search(SearchRequest(query=q, limit=2, explain=True))
        assert got.model_dump(exclude={"took_ms"}) == want.model_dump(exclude={"took_ms"})
        assert read and len(read) == len(set(read))  # read early, and no block read twice


def test_a_new_engine_loads_saved_vectors_without_the_model(engine: Engine) -> None:
    engine.warm_lanes()
    again = Engine(engine.index_dir)
    assert len(again.lanes["vector"].matrix()) == 3
    assert not again.model.tried  # name and dimensions came from the catalog
    resp = again.search(SearchRequest(query="feline naps", lanes=["vector"], limit=1))
    assert [h.path for h in resp.hits] == ["cats.md"]


def test_semantic_only_matches_are_marked_or_dropped_on_every_surface(engine: Engine) -> None:
    """A result no lexical lane found is marked semantic-only; when no word of the query occurs in
    the project, weak ones (cosine < 0.5) are dropped and the search says so. Python API, CLI text
    and JSON, search_project and project_memory_search all show it."""
    import anyio

    from sleuth.cli import render_text
    from sleuth.mcp.project_tools import ProjectTools
    from sleuth.memory.arguments import parse_memory_request
    from sleuth.memory.search import MemorySearch

    strong = engine.search(SearchRequest(query="feline naps"))  # cats.md at cosine 0.61, no shared word
    assert strong.lanes == ["bm25", "index", "rm3", "vector"]  # rm3 ran too: it finds no block without a query word
    assert [(h.path, h.semantic_only) for h in strong.hits] == [("cats.md", True)]
    assert strong.notice and strong.notice.startswith("no word of the query occurs in the searched documents")
    assert strong.model_dump(mode="json")["hits"][0]["semantic_only"] is True
    assert "(semantic-only match: found by the vector lane alone)" in render_text(strong, explain=False)
    weak = engine.search(SearchRequest(query="change cryptographic credentials"))  # keys.md at cosine 0.37
    assert weak.hits == []
    assert weak.notice == ("no word of the query occurs in the searched documents; "
                           "1 weakly similar document(s) left out")
    assert engine.search(SearchRequest(query="change cryptographic credentials", lanes=["vector"])).hits
    lexical = engine.search(SearchRequest(query="warm felines"))  # "warm" is in cats.md, "felines" nowhere
    assert [(h.path, h.semantic_only) for h in lexical.hits] == [("cats.md", False)]
    assert lexical.notice == "no indexed document holds the word(s) 'felines'; the results match the other words"
    assert "rm3" in lexical.hits[0].sources

    tools = ProjectTools(engine)
    out = anyio.run(lambda: tools.search_project(project_id="notes", query="feline naps"))
    assert [(i["item"]["path"], i["item"]["semantic_only"]) for i in out["items"]] == [("cats.md", True)]
    assert set(out) == {"success", "result_count", "items", "timestamp"}  # the seed's envelope, no notice
    out = anyio.run(lambda: tools.search_project(project_id="notes", query="change cryptographic credentials"))
    assert out["items"] == [] and out["result_count"] == 0

    memory = MemorySearch(engine)
    try:
        found = memory.search(parse_memory_request({"query": "feline naps", "project_id": "notes"}))
        assert [(r["path"], r.get("semantic_only")) for r in found["results"]] == [("cats.md", True)]
        assert found["meta"]["notice"].startswith("no word of the query occurs")
        none = memory.search(parse_memory_request({"query": "change cryptographic credentials",
                                                   "project_id": "notes"}))
        assert none["results"] == [] and none["meta"]["notice"].startswith("no word of the query occurs")
        lexical_memory = memory.search(parse_memory_request({"query": "warm felines", "project_id": "notes"}))
        assert [r["path"] for r in lexical_memory["results"]][:1] == ["cats.md"]
        assert "semantic_only" not in lexical_memory["results"][0]
        assert lexical_memory["meta"]["notice"] == ("no indexed document holds the word(s) 'felines'; the results"
                                                    " match the other words")
    finally:
        memory.close()


def test_another_arithmetic_path_re_embeds_instead_of_mixing_vectors(tmp_path: Path) -> None:
    """fp32 and int8 vectors are recorded under their own model names: switching re-embeds every block."""
    fp32 = Engine(tmp_path / "idx", Config(model_int8=False))
    assert fp32.index([notes(tmp_path / "notes")], project="notes").embedded == 3
    assert fp32.status().model_dump()["vector_lane"]["model"] == "all-MiniLM-L6-v2"
    assert fp32.status().model_dump()["vector_lane"]["path"].startswith("fp32")
    fp32.close()
    int8 = Engine(tmp_path / "idx", Config(model_int8=True))
    status = int8.status().model_dump()["vector_lane"]
    assert status["model"] in ("all-MiniLM-L6-v2@int8-token-outliers2-unmasked",
                               "all-MiniLM-L6-v2@int8-token-outliers2-unmasked-saturating")
    assert (status["available"], status["blocks_with_vectors"]) == (False, 0)
    assert int8.embed_pending() == 3
    assert int8.catalog.vector_counts("all-MiniLM-L6-v2") == (3, 3)  # the fp32 vectors are kept, apart
    assert int8.search("signing keys").hits[0].path == "keys.md"


def test_project_memory_search_leaves_the_rm3_lane_out_of_the_default_lanes(tmp_path: Path) -> None:
    """With the registry's default lanes the tool's bm25 family is bm25 and index (rm3 lowered it on
    SciFact, docs/EVAL.md); lanes set in the configuration are used as they are."""
    from sleuth.memory.arguments import parse_memory_request
    from sleuth.memory.search import MemorySearch

    req = parse_memory_request({"query": "signing keys", "project_id": "notes"})
    custom = Config(model="none", lanes=("bm25", "rm3", "vector"))
    for cfg, want in ((Config(model="none"), ["bm25", "index", "exact", "vector", "graph"]),
                      (custom, ["bm25", "rm3", "exact", "vector", "graph"])):
        e = Engine(tmp_path / f"idx-{len(cfg.lanes)}", cfg)
        memory = MemorySearch(e)
        try:
            assert e.config.lanes == cfg.lanes and "rm3" in cfg.lanes
            assert memory.request(req, ("notes",), "r1").lanes == want
        finally:
            memory.close()
            e.close()


def test_a_quoted_phrase_search_never_labels_a_holder_of_the_phrase_semantic_only(tmp_path: Path) -> None:
    """The vector lane of a quoted-phrase query searches only blocks holding the phrase; a document
    past the word lanes' depth that it alone returns holds the phrase verbatim, and is not labelled
    a meaning-only match (it was, before)."""
    root = tmp_path / "notes"
    root.mkdir()
    words = "ship harbor cargo crane tide anchor dock rope sail storm weather cat dog garden recipe bread soup".split()
    for i in range(40):
        filler = " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(30))
        (root / f"n{i}.md").write_text(f"# Note {i}\n\n{filler} the blue lantern {filler}\n", encoding="utf-8")
    e = Engine(tmp_path / "idx", Config(rank_window_step_docs=1, lane_depth_blocks_per_result=1))
    e.index([root], project="notes")
    seen_vector_only = False
    for query in ['the "blue lantern" of a cat garden', '"blue lantern" storm at sea', 'bread "blue lantern"']:
        resp = e.search(SearchRequest(query=query, limit=10))
        assert resp.hits and not any(h.semantic_only for h in resp.hits), query
        seen_vector_only |= any(h.sources == ["vector"] for h in resp.hits)
    assert seen_vector_only  # the case was met: hits only the vector lane returned


def test_a_weak_meaning_match_that_is_left_out_expands_to_no_link_or_entity(tmp_path: Path) -> None:
    """New-user trial of stop 31: a query matching no word ("zanzibar quokka") returned a Hugo page's
    link target as an entity result: the graph lane expanded from the weak meaning matches that the
    search then left out, and what it found came back on its own."""
    from sleuth.memory.arguments import parse_memory_request
    from sleuth.memory.search import MemorySearch

    root = notes(tmp_path / "notes")
    with (root / "keys.md").open("a", encoding="utf-8") as fh:
        fh.write("\nSee the [key ceremony](ceremony) and [[Deploy]].\n")
    e = Engine(tmp_path / "idx")
    e.index([root], project="notes")
    lanes = ["bm25", "index", "rm3", "vector", "graph"]
    weak = e.search(SearchRequest(query="change cryptographic credentials", lanes=lanes))  # keys.md at 0.37
    assert weak.hits == []
    assert weak.notice == ("no word of the query occurs in the searched documents; "
                           "1 weakly similar document(s) left out")
    # a word match still expands to its links and entities
    found = e.search(SearchRequest(query="rotate signing keys", lanes=lanes))
    assert [h.path for h in found.hits][:1] == ["keys.md"]
    assert {h.title for h in found.hits if h.kind == "entity"} == {"ceremony"}
    memory = MemorySearch(e)
    try:
        none = memory.search(parse_memory_request({"query": "change cryptographic credentials", "project_id": "notes"}))
        assert none["results"] == [] and none["meta"]["notice"].startswith("no word of the query occurs")
    finally:
        memory.close()
        e.close()


def test_a_search_of_some_projects_counts_only_their_documents_without_a_vector(engine: Engine,
                                                                                 tmp_path: Path) -> None:
    """Attack session 32 (low): the notice counted the documents without a vector in the whole
    index, so a caller limited to one project (sleuth serve --project, an HTTP user) learnt how many
    documents another project was adding (which status and doctor hide from them). A search of some
    projects counts theirs only."""
    secret = tmp_path / "secret"
    secret.mkdir()
    for i in range(3):
        (secret / f"s{i}.md").write_text(f"# Secret {i}\n\nHidden plan number {i}.\n", encoding="utf-8")
    engine.index([secret], project="secret", embed=False)
    assert engine.search(SearchRequest(query="signing keys", projects=["notes"])).notice is None
    assert engine.search(SearchRequest(query="hidden plan", projects=["secret"])).notice == (
        "the vector lane does not see 3 document(s) yet: `sleuth embed` embeds them")
    (tmp_path / "notes" / "owls.md").write_text("# Owls\n\nOwls hunt at night.\n", encoding="utf-8")
    engine.index([tmp_path / "notes"], project="notes", embed=False)
    assert engine.search(SearchRequest(query="hunt at night", projects=["notes"])).notice == (
        "the vector lane does not see 1 document(s) yet: `sleuth embed` embeds them")
    assert engine.search("hunt at night").notice == (
        "the vector lane does not see 4 document(s) yet: `sleuth embed` embeds them")
