"""The link graph and its expansion: exact activations, filters, entities, supersession."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleuth.lanes.graph import EDGE_WEIGHT, SHARED_ENTITY_WEIGHT, GraphDocument, LinkGraph, entity_node_id


def resolve(project: str, target: str, from_path: str) -> str | None:
    return {"b": "b.md", "c": "c.md", "a": "a.md"}.get(target)


@pytest.fixture
def graph() -> LinkGraph:
    docs = [
        GraphDocument("A", "p", "a.md", "A", (("b", "link", ""), ("Kafka", "wikilink", "")), ("Kafka",)),
        GraphDocument("B", "p", "b.md", "B", (("c", "supersedes", ""),)),
        GraphDocument("C", "p", "c.md", "C"),
        GraphDocument("D", "p", "d.md", "D", (), ("kafka",)),
        GraphDocument("E", "q", "e.md", "E", (("a", "link", ""),)),  # another project: "a" is not its file
    ]
    return LinkGraph(docs, resolve)


def test_expansion_scores(graph: LinkGraph) -> None:
    kafka = entity_node_id("p", "Kafka")
    ranked = graph.expand([("A", 1.0)], 10, None, None)
    scores = dict(zip(ranked.block_ids, ranked.scores, strict=True))
    assert scores == pytest.approx({"B:": EDGE_WEIGHT["link"], kafka: EDGE_WEIGHT["wikilink"],
                                    "D:": SHARED_ENTITY_WEIGHT})
    assert ranked.block_ids[0] in ("B:", kafka)


def test_filters_apply_before_top_k(graph: LinkGraph) -> None:
    ranked = graph.expand([("A", 1.0)], 10, allowed_docs={"D"}, projects=None, entities_allowed=False)
    assert ranked.block_ids == ("D:",)
    assert graph.expand([("A", 1.0)], 10, None, projects={"q"}).block_ids == ()


def test_supersession_and_entities(graph: LinkGraph) -> None:
    assert graph.superseded_by == {"C": {"B"}}
    node = graph.entities[entity_node_id("p", "kafka")]
    assert node.name == "Kafka" and node.mentioned_by == ["A", "D"]
    assert graph.entity_summary(node.node_id, {"A": "Alpha", "D": "Delta"}) == "Kafka: mentioned by Alpha, Delta"
    # E's link to "a" resolves in project q's namespace, where no a.md exists: an entity of q.
    assert entity_node_id("q", "a") in graph.entities


def test_a_superseded_record_hands_its_place_to_its_replacements_in_chains() -> None:
    from sleuth.fusion import FusedDocument
    from sleuth.pipeline.fuse import order_superseded

    def order(ids: list[str], superseded_by: dict[str, set[str]]) -> list[str]:
        return [d.doc_id for d in order_superseded([FusedDocument(i) for i in ids], superseded_by)]

    chain = {"v1": {"v2"}, "v2": {"v3"}}
    assert order(["v1", "v3", "v2", "x"], chain) == ["v3", "v2", "v1", "x"]
    assert order(["v1", "v2", "v3"], chain) == ["v3", "v2", "v1"]
    assert order(["x", "v3", "v1"], chain) == ["x", "v3", "v1"]  # v2 absent: v1 keeps its place
    # The replacement takes the place of the record it replaces, which follows it (b keeps its rank).
    assert order(["a", "b", "c"], {"a": {"c"}}) == ["c", "a", "b"]
    assert order(["a", "b", "c", "d"], {"a": {"d", "c"}}) == ["c", "d", "a", "b"]
    cycle = {"a": {"b"}, "b": {"a"}}
    assert sorted(order(["a", "b"], cycle)) == ["a", "b"]  # a cycle terminates


def test_a_replacement_moved_up_takes_the_score_of_what_it_replaces_and_says_so() -> None:
    """A new user's trial: ADR 0002 (superseding 0001) showed at #1 with score 0.0000 and every lane
    +0.000, above 0001 at 2.3920, with nothing saying why. Moved above a record it supersedes, a
    replacement's score is raised to that record's, and a ``supersedes`` trace entry holds the raise
    (the contributions still sum to the score); nothing else changes."""
    from sleuth.fusion import FusedDocument, LaneTrace
    from sleuth.pipeline.fuse import order_superseded

    def doc(doc_id: str, score: float) -> FusedDocument:
        return FusedDocument(doc_id, score, [f"{doc_id}:1"], f"{doc_id}:1", [LaneTrace("bm25", 1, 1.0, score, 9.0)])

    ranked = [doc("x", 3.0), doc("v1", 2.5), doc("y", 1.0), doc("v3", 0.5), doc("v2", 0.0)]
    before = [(d.doc_id, d.score, list(d.trace)) for d in ranked]
    out = order_superseded(ranked, {"v1": {"v2"}, "v2": {"v3"}})
    assert [(d.doc_id, d.score) for d in out] == [("x", 3.0), ("v3", 2.5), ("v2", 2.5), ("v1", 2.5), ("y", 1.0)]
    assert [(d.doc_id, d.moved_above, d.trace[1:], d.sources) for d in out] == [
        ("x", [], [], ["bm25"]),
        ("v3", ["v2"], [LaneTrace("supersedes", 2, 1.0, 2.0, 2.5)], ["bm25"]),
        ("v2", ["v1"], [LaneTrace("supersedes", 2, 1.0, 2.5, 2.5)], ["bm25"]),
        ("v1", [], [], ["bm25"]),
        ("y", [], [], ["bm25"]),
    ]
    assert all(sum(t.contribution for t in d.trace) == d.score for d in out)
    assert [(d.doc_id, d.score, list(d.trace)) for d in ranked] == before  # the input is not changed
    # A replacement that scored higher already is moved with its score (an entry of +0.0).
    moved = order_superseded([doc("old", 1.0), doc("other", 0.9), doc("new", 1.2)], {"old": {"new"}})
    assert [(d.doc_id, d.score, d.trace[1:]) for d in moved] == [
        ("new", 1.2, [LaneTrace("supersedes", 1, 1.0, 0.0, 1.0)]), ("old", 1.0, []), ("other", 0.9, [])]


def test_dead_file_links_are_not_entities() -> None:
    docs = [GraphDocument("A", "p", "a.md", "A", (("gone.md", "link", ""), ("old/b", "supersedes", ""),
                                                  ("Kafka", "wikilink", "")))]
    graph = LinkGraph(docs, lambda project, target, source: None)
    assert [n.name for n in graph.entities.values()] == ["Kafka"]


def _reference_graph(index: Path) -> LinkGraph:
    """The link graph as built before the shortcuts: every document (read here with SQL), every
    project's resolver."""
    import sqlite3

    from sleuth.ingest.links import LinkResolver

    con = sqlite3.connect(f"file:{index / 'catalog.sqlite3'}?mode=ro", uri=True)
    links: dict[str, list[tuple[str, str, str]]] = {}
    for doc, target, relation, label in con.execute("SELECT doc_id, target, relation, label FROM links"):
        links.setdefault(doc, []).append((target, relation, label))
    ents: dict[str, list[str]] = {}
    for doc, entity in con.execute("SELECT doc_id, entity FROM entities"):
        ents.setdefault(doc, []).append(entity)
    rows = [(d, p, r, t, links.get(d, []), ents.get(d, []))
            for d, p, r, t in con.execute("SELECT doc_id, project_id, rel_path, title FROM documents")]
    con.close()
    titles: dict[str, dict[str, str]] = {}
    for _doc, project, rel, title, _links, _ents in rows:
        titles.setdefault(project, {})[rel] = title
    resolvers = {p: LinkResolver(list(t), t) for p, t in titles.items()}
    docs = [GraphDocument(d, p, r, t, tuple(links), tuple(ents)) for d, p, r, t, links, ents in rows]
    return LinkGraph(docs, lambda project, target, source: resolvers[project].resolve(target, source))


def _shape(graph: LinkGraph) -> tuple:
    return ({k: dict(v) for k, v in graph.neighbours.items() if v},
            {k: (n.project_id, n.name, list(n.mentioned_by)) for k, n in graph.entities.items()},
            {k: set(v) for k, v in graph.superseded_by.items() if v})


@pytest.mark.parametrize("linked", [True, False])
def test_the_lane_builds_the_same_graph_and_only_the_resolvers_links_need(tmp_path, monkeypatch, linked) -> None:
    """A project without links gets no resolver (its tables cost O(paths)), and an index where nothing
    links reads only the documents that declare entities; the graph is the one built from every document."""
    import sleuth.ingest.links as links_module
    from sleuth.engine import Engine

    files = {"q/d.md": "---\nentities: [Kafka]\n---\n# D\n\nStreams.\n",
             "q/e.md": "---\nentities: [kafka, Zed]\n---\n# E\n\nMore streams.\n",
             "q/f.md": "# F\n\nNothing declared.\n"}
    if linked:
        files.update({"p/a.md": "---\nentities: [Kafka]\nsupersedes: c.md\n---\n# A\n\n"
                                "See [b](b.md) and [[Nowhere]].\n",
                      "p/b.md": "# B\n\nPlain.\n", "p/c.md": "# C\n\nOld.\n"})
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    built: list[int] = []

    class Counting(links_module.LinkResolver):
        def __init__(self, known_paths, titles) -> None:
            built.append(len(known_paths))
            super().__init__(known_paths, titles)

    with Engine(tmp_path / "idx") as e:
        for project in ("p", "q") if linked else ("q",):
            e.index([tmp_path / project], project=project)
    with Engine(tmp_path / "idx") as e:  # a new reader: its graph is built on first use, here
        monkeypatch.setattr(links_module, "LinkResolver", Counting)
        graph = e.lanes["graph"].graph()
        assert built == ([3] if linked else [])  # project p's three paths only
        monkeypatch.undo()
        assert _shape(graph) == _shape(_reference_graph(tmp_path / "idx"))
        kafka_q = entity_node_id("q", "Kafka")
        assert set(graph.entities[kafka_q].mentioned_by) == {e.catalog.documents_at("d.md")[0][0],
                                                            e.catalog.documents_at("e.md")[0][0]}
        if linked:
            (a,), (b,), (c,) = (e.catalog.documents_at(f"{n}.md") for n in "abc")
            assert graph.superseded_by == {c[0]: {a[0]}}
            assert graph.neighbours[a[0]][b[0]] == EDGE_WEIGHT["link"]
            assert entity_node_id("p", "Nowhere") in graph.entities
        else:
            assert graph.superseded_by == {}
            assert sorted(r[2] for r in e.catalog.graph_rows()) == ["d.md", "e.md"]  # f.md declares nothing
