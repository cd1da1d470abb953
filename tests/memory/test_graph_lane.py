"""The link graph and its expansion: exact activations, filters, entities, supersession."""

from __future__ import annotations

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


def test_dead_file_links_are_not_entities() -> None:
    docs = [GraphDocument("A", "p", "a.md", "A", (("gone.md", "link", ""), ("old/b", "supersedes", ""),
                                                  ("Kafka", "wikilink", "")))]
    graph = LinkGraph(docs, lambda project, target, source: None)
    assert [n.name for n in graph.entities.values()] == ["Kafka"]
