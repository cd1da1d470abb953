"""The ``graph`` lane: expansion over the link graph from the evidence other lanes retrieved.

:class:`LinkGraph` and its expansion are pure; :class:`GraphLane` builds it from the catalog.

Nodes are documents and *entities* (link targets that are not indexed files, and entities declared
in front matter); entities are the results of source family ``graph``. Edges come from markdown
links, ``[[wikilinks]]`` and front-matter relations (``related``, ``supersedes``, ``depends_on``,
...), built at indexing time and resolved here against the documents of the same project.

Expansion (one hop, spreading activation as in Crestani 1997, "Application of spreading activation
techniques in information retrieval"): every seed document ``s`` with fused score ``w(s)`` passes
``w(s) · EDGE_WEIGHT[relation]`` to each neighbour, in both directions of a link; documents that
share an entity with a seed receive ``w(s) · SHARED_ENTITY_WEIGHT``. The lane ranks nodes by the
activation they receive (a seed linked from another seed is ranked too, which is how the lane
reinforces connected evidence). Nodes outside the request's filters are never returned.
"""

from __future__ import annotations

import hashlib
import threading
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sleuth.lanes.base import LaneStatus
from sleuth.text import analyze
from sleuth.types import RankedList

if TYPE_CHECKING:
    from sleuth.lanes.base import LaneContext

#: Activation passed along an edge of each relation (others: ``DEFAULT_EDGE_WEIGHT``).
EDGE_WEIGHT: dict[str, float] = {"link": 1.0, "wikilink": 1.0, "supersedes": 1.0, "superseded_by": 1.0,
                                 "depends_on": 0.8, "related": 0.8, "entity": 0.6}
DEFAULT_EDGE_WEIGHT = 0.7
#: Activation passed between two documents through an entity they both mention.
SHARED_ENTITY_WEIGHT = 0.3
#: Activation multiplier of an entity whose name holds a query term.
ENTITY_NAME_MATCH_BOOST = 2.0
#: Entities mentioned by more documents than this are too general to connect anything.
ENTITY_MAX_DOCUMENTS = 50
#: Relations meaning "the source document replaces the target" and "the target replaces the source".
SUPERSEDES_RELATIONS = ("supersedes", "replaces")
SUPERSEDED_BY_RELATIONS = ("superseded_by", "replaced_by")


@dataclass(frozen=True)
class GraphDocument:
    """A document's graph data: its links ``(target, relation, label)`` and declared entities."""

    doc_id: str
    project_id: str
    rel_path: str
    title: str
    links: tuple[tuple[str, str, str], ...] = ()
    entities: tuple[str, ...] = ()


@dataclass
class EntityNode:
    """A graph node that is not a file: a link target without a document, or a declared entity."""

    node_id: str
    project_id: str
    name: str
    mentioned_by: list[str] = field(default_factory=list)


def entity_node_id(project_id: str, name: str) -> str:
    """The node id of entity ``name`` in a project: ``entity-`` + 16 hex of SHA-1 of the folded name."""
    digest = hashlib.sha1(f"{project_id}\0{name.strip().casefold()}".encode()).hexdigest()[:16]
    return f"entity-{digest}"


#: Link targets with these suffixes name files; unresolved, they are dead links, not entities.
FILE_SUFFIXES = frozenset({"md", "markdown", "mdx", "txt", "rst", "pdf", "ipynb", "py", "html", "htm", "json",
                           "yaml", "yml", "toml", "csv", "ts", "js", "go", "rs", "java", "c", "h", "cpp"})


def looks_like_file(target: str) -> bool:
    """True for a link target that names a file path (``a/b``, ``x.md``) rather than a concept."""
    name = target.rstrip("/")
    return "/" in name or name.rpartition(".")[2].lower() in FILE_SUFFIXES and "." in name


def is_entity_node(node_id: str) -> bool:
    return node_id.startswith("entity-")


Resolver = Callable[[str, str, str], "str | None"]
"""(project_id, target, from_rel_path) → the rel_path of the linked document, or None."""


class LinkGraph:
    """The link graph of an index (documents and entities, undirected weighted adjacency).

    Args:
        documents: every document with its links and entities.
        resolve: maps a link target to a document path of the same project (None: an entity).
    """

    def __init__(self, documents: Iterable[GraphDocument], resolve: Resolver) -> None:
        docs = list(documents)
        by_path = {(d.project_id, d.rel_path): d.doc_id for d in docs}
        self.project_of: dict[str, str] = {d.doc_id: d.project_id for d in docs}
        self.entities: dict[str, EntityNode] = {}
        self.neighbours: dict[str, dict[str, float]] = defaultdict(dict)
        #: doc_id → doc_ids that replace it (from ``supersedes`` on the newer or ``superseded_by`` on the older).
        self.superseded_by: dict[str, set[str]] = defaultdict(set)
        for d in docs:
            for target, relation, _label in d.links:
                path = resolve(d.project_id, target, d.rel_path)
                other = by_path.get((d.project_id, path)) if path is not None else None
                if other is None:
                    if looks_like_file(target):
                        continue  # a dead link to a file (deleted, renamed, forgotten): not an entity
                    node = self._entity(d.project_id, target, d.doc_id)
                    self._connect(d.doc_id, node, EDGE_WEIGHT.get(relation, DEFAULT_EDGE_WEIGHT))
                    continue
                if other == d.doc_id:
                    continue
                self._connect(d.doc_id, other, EDGE_WEIGHT.get(relation, DEFAULT_EDGE_WEIGHT))
                if relation in SUPERSEDES_RELATIONS:
                    self.superseded_by[other].add(d.doc_id)
                elif relation in SUPERSEDED_BY_RELATIONS:
                    self.superseded_by[d.doc_id].add(other)
            for name in d.entities:
                node = self._entity(d.project_id, name, d.doc_id)
                self._connect(d.doc_id, node, EDGE_WEIGHT["entity"])

    def _entity(self, project_id: str, name: str, doc_id: str) -> str:
        node_id = entity_node_id(project_id, name)
        node = self.entities.setdefault(node_id, EntityNode(node_id, project_id, name.strip()))
        if doc_id not in node.mentioned_by:
            node.mentioned_by.append(doc_id)
        return node_id

    def _connect(self, a: str, b: str, weight: float) -> None:
        self.neighbours[a][b] = max(weight, self.neighbours[a].get(b, 0.0))
        self.neighbours[b][a] = max(weight, self.neighbours[b].get(a, 0.0))

    def expand(self, seeds: Sequence[tuple[str, float]], k: int, allowed_docs: Collection[str] | None,
               projects: Collection[str] | None, entities_allowed: bool = True,
               query_terms: Collection[str] = ()) -> RankedList:
        """Rank nodes by the activation they receive from ``seeds`` (``(doc_id, score)``, best first).

        Args:
            k: at most this many nodes are returned.
            allowed_docs: documents that may be returned (None: any); entities are filtered by
                ``projects`` and ``entities_allowed`` instead.
            projects: project ids whose nodes may be returned (None: any).
            query_terms: analysed query terms; an entity whose name holds one gets its activation
                multiplied by ``ENTITY_NAME_MATCH_BOOST`` (the entity the query names comes first).
        Returns:
            A RankedList named ``graph`` of node ids (document ids as ``<doc_id>:`` so that fusion
            groups them to their document; entity ids as they are), scores = activation.
        """
        activation: dict[str, float] = defaultdict(float)
        for seed, weight in seeds:
            for node, edge in self.neighbours.get(seed, {}).items():
                activation[node] += weight * edge
                entity = self.entities.get(node)
                if entity is None or len(entity.mentioned_by) > ENTITY_MAX_DOCUMENTS:
                    continue
                for other in entity.mentioned_by:
                    if other != seed:
                        activation[other] += weight * SHARED_ENTITY_WEIGHT
        ranked: list[tuple[str, float]] = []
        for node, score in activation.items():
            entity = self.entities.get(node)
            if entity is not None:
                if not entities_allowed:
                    continue
                if projects is not None and entity.project_id not in projects:
                    continue
                if query_terms and not set(analyze(entity.name)).isdisjoint(query_terms):
                    score *= ENTITY_NAME_MATCH_BOOST
                ranked.append((node, score))
            elif (allowed_docs is None or node in allowed_docs) and (
                    projects is None or self.project_of.get(node) in projects):
                ranked.append((f"{node}:", score))
        ranked.sort(key=lambda item: (-item[1], item[0]))
        ranked = ranked[:k]
        return RankedList("graph", tuple(n for n, _ in ranked), tuple(s for _, s in ranked))

    def entity_summary(self, node_id: str, titles: Mapping[str, str]) -> str:
        """A one-line description of an entity node: its name and the documents that mention it."""
        node = self.entities[node_id]
        names = [titles.get(d, d) for d in node.mentioned_by[:8]]
        more = len(node.mentioned_by) - len(names)
        tail = f" and {more} more" if more > 0 else ""
        return f"{node.name}: mentioned by {', '.join(names)}{tail}"


class GraphLane:
    """The ``graph`` lane (stage ``expand``): owns the :class:`LinkGraph` of the catalog's current
    generation (built from the catalog's link rows when the generation changes) and expands over it.

    Args:
        context: the open index (:class:`sleuth.lanes.base.LaneContext`).
    """

    name = "graph"

    def __init__(self, context: LaneContext) -> None:
        self.context = context
        self._graph: tuple[int, LinkGraph] | None = None
        self._lock = threading.Lock()

    def graph(self) -> LinkGraph:
        """The link graph of the whole index (documents, entities, relations), cached per generation."""
        catalog = self.context.catalog
        gen = catalog.generation()
        with self._lock:
            if self._graph is None or self._graph[0] != gen:
                from sleuth.ingest.links import LinkResolver

                # Every document when some document links (link targets resolve against every
                # path), else only those declaring entities (see Catalog.graph_rows).
                rows = list(catalog.graph_rows())
                titles: dict[str, dict[str, str]] = {}
                for _doc_id, project_id, rel_path, title, _links, _entities in rows:
                    titles.setdefault(project_id, {})[rel_path] = title
                # A project's lookup tables (O(paths)) are built at its first link only: a project
                # without links needs none (1,000,000 unlinked documents: 93 s of a first query).
                resolvers: dict[str, LinkResolver] = {}

                def resolve(project_id: str, target: str, from_rel_path: str) -> str | None:
                    resolver = resolvers.get(project_id)
                    if resolver is None:
                        paths = titles[project_id]
                        resolver = resolvers[project_id] = LinkResolver(list(paths), paths)
                    return resolver.resolve(target, from_rel_path)

                documents = (GraphDocument(d, p, r, t, tuple((a, b, c) for a, b, c in links), tuple(ents))
                             for d, p, r, t, links, ents in rows)
                self._graph = (gen, LinkGraph(documents, resolve))
            return self._graph[1]

    def expand(self, seeds: Sequence[tuple[str, float]], k: int, allowed_docs: Collection[str] | None,
               projects: Collection[str] | None, entities_allowed: bool = True,
               query_terms: Collection[str] = ()) -> RankedList:
        """See :meth:`LinkGraph.expand`."""
        return self.graph().expand(seeds, k, allowed_docs, projects, entities_allowed, query_terms)

    def unavailable(self) -> str | None:
        return None

    def warm(self) -> None:
        self.graph()

    def status(self) -> LaneStatus:
        graph = self.graph()
        return LaneStatus(True, details={"linked_documents": len(graph.neighbours) - len(graph.entities),
                                         "entities": len(graph.entities)})
