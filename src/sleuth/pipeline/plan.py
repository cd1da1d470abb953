"""Step 1 of a search: the plan. Pure.

From a :class:`~sleuth.types.SearchRequest` and the index's settings, the plan fixes everything the
later steps need: each question with its variants (the query, the caller's variants and, added
deterministically, the query's code identifiers and quoted phrases; variants count
``VARIANT_WEIGHT`` of the primary query in fusion), the retrieval and expansion lanes to run, the
scope (projects, and the documents the filters allow), the rank window (:func:`rank_window`: the
one rule deciding, for every surface, how many documents are ranked) and so how many blocks each lane
returns, and the deadline.
"""

from __future__ import annotations

from dataclasses import dataclass

from sleuth.errors import QueryError
from sleuth.lanes import registry
from sleuth.lanes.base import DocFilter
from sleuth.text import ParsedQuery, analyze, auto_variants, parse_query
from sleuth.types import SearchRequest

#: RRF weight of a variant's lists relative to the primary query's.
VARIANT_WEIGHT = 0.5
#: The kind label of graph entities (nodes that are not files), for ``filters.kinds``.
ENTITY_KIND = "entity"


@dataclass(frozen=True)
class Variant:
    """One wording of a question: its text, its analysis, and its weight in fusion."""

    text: str
    parsed: ParsedQuery
    weight: float


@dataclass(frozen=True)
class PlannedQuestion:
    """A question as the lanes will run it: variants (the primary query first), its result window
    (``offset`` + ``limit`` documents are fused), and the terms highlighted in its passages."""

    id: str
    query: str
    limit: int
    offset: int
    variants: tuple[Variant, ...]
    highlight_terms: frozenset[str]

    @property
    def window(self) -> int:
        """Documents the question needs from fusion: the skipped ones and the shown ones."""
        return self.offset + self.limit


@dataclass(frozen=True)
class Plan:
    """Everything a search does, fixed before it starts (see the module docstring).

    ``doc_ids`` are the only documents the filters allow (None: every document of ``projects``);
    ``graph_only``: only graph entities were asked for (the lanes then retrieve unfiltered evidence
    for the graph to expand from); ``entities``: entities may be results.
    """

    questions: tuple[PlannedQuestion, ...]
    lanes: tuple[str, ...]
    expansion_lanes: tuple[str, ...]
    projects: tuple[str, ...] | None
    doc_ids: frozenset[str] | None
    graph_only: bool
    entities: bool
    depth: int
    deadline_s: float | None
    #: Documents the ranking is computed for: the largest question's offset + limit, or the
    #: request's rank window, rounded up to a multiple of the window step (:func:`rank_window`;
    #: pages within it rank the same lists).
    window: int = 0
    #: The filters ``doc_ids`` was resolved from (None: ``doc_ids`` is None).
    doc_filter: DocFilter | None = None

    @property
    def all_lanes(self) -> tuple[str, ...]:
        return (*self.lanes, *self.expansion_lanes)

    def texts(self) -> list[str]:
        """Every variant text of every question (what the vector lane embeds, in one batch)."""
        return [v.text for q in self.questions for v in q.variants]


def plan_variants(query: str, variants: list[str], auto: bool, where: str = "the query") -> tuple[Variant, ...]:
    """The variants of one question: ``query``, the caller's ``variants`` and, when ``auto``, the
    identifiers and quoted phrases found in them, each text once; texts with nothing searchable are
    left out. The first one left (the query, unless it has nothing searchable) is the primary
    variant, of weight 1; the others weigh ``VARIANT_WEIGHT``.

    Raises:
        QueryError: no text has a searchable term.
    """
    texts = [query, *variants, *(auto_variants([query, *variants]) if auto else [])]
    out: list[Variant] = []
    for text in dict.fromkeys(t.strip() for t in texts):
        parsed = parse_query(text)
        if not parsed.is_empty:
            out.append(Variant(text, parsed, 1.0 if not out else VARIANT_WEIGHT))
    if not out:
        raise QueryError(f"{where} has no searchable terms (only stop words, punctuation or blanks): {query!r}")
    return tuple(out)


def _highlight_terms(variants: tuple[Variant, ...]) -> frozenset[str]:
    """The primary query's terms and every variant's phrase words (what passages highlight)."""
    primary = variants[0].parsed
    terms = set(primary.terms)
    for v in variants:
        for phrase in v.parsed.phrases:
            terms.update(analyze(" ".join(phrase)))
    return frozenset(terms)


def rank_window(asked: int, step_docs: int) -> int:
    """The documents a search ranks whose pages reach ``asked`` (offset + limit, or a larger
    ``SearchRequest.rank_window``; >= 1): ``asked`` rounded up to a multiple of ``step_docs`` (>= 1).

    The one rule every surface shares: each lane's depth follows the rank window, so the CLI, the
    Python API, MCP's tools and ``sleuth eval`` rank one query from the same lane lists at every
    limit and offset within a step (100 documents by default), and such pages neither repeat nor
    skip a result."""
    return -(-asked // step_docs) * step_docs


def build_plan(req: SearchRequest, lanes: tuple[str, ...], projects: tuple[str, ...] | None,
               doc_ids: frozenset[str] | None, window_step_docs: int, depth_blocks_per_result: int,
               offset: int = 0) -> Plan:
    """The plan of ``req``.

    Args:
        req: the request (checked by pydantic; its questions or its query).
        lanes: the lanes to run (registry names, already checked), retrieval and expansion together.
        projects: the checked project scope (None: every project).
        doc_ids: the documents the filters allow (None: no document filter).
        window_step_docs: the rank window (:func:`rank_window`) of the largest question's offset +
            limit, or of ``req.rank_window`` when given, is a multiple of this many documents (>= 1).
        depth_blocks_per_result: each lane returns this many blocks per document of the rank window.
        offset: results skipped before the first one shown, for every question.
    Raises:
        QueryError: a question has no searchable term; offset + limit exceeds ``req.rank_window``.
    """
    f = req.filters
    doc_kinds = [k for k in f.kinds if k != ENTITY_KIND]
    families = [x for x in f.families if x != "graph"]
    graph_only = (bool(f.families) and not families) or (bool(f.kinds) and not doc_kinds)
    entities = req.entities and ((not f.families or "graph" in f.families) and (not f.kinds or ENTITY_KIND in f.kinds)
                                 and (not f.roles or "other" in f.roles) and not f.paths and not f.tags
                                 and f.recorded_after_ns is None and f.recorded_before_ns is None)
    if req.questions:
        asked = [(q.id, q.query, q.limit, q.variants, f"query {q.id!r}" if q.id else "the query")
                 for q in req.questions]
    else:
        asked = [("", req.query, req.limit, req.variants, "the query")]
    questions = tuple(
        PlannedQuestion(qid, text.strip(), limit, offset, variants := plan_variants(text, list(extra),
                                                                                   req.auto_variants, where),
                        _highlight_terms(variants))
        for qid, text, limit, extra, where in asked
    )
    retrieval = tuple(n for n in lanes if (spec := registry.lane_spec(n)) is not None and spec.stage == "retrieve")
    expansion = tuple(n for n in lanes if (spec := registry.lane_spec(n)) is not None and spec.stage == "expand")
    window = max(q.window for q in questions)
    if req.rank_window is not None:
        if window > req.rank_window:
            raise QueryError(f"offset + limit ({window}) is larger than rank_window ({req.rank_window}); "
                             "page within the rank window or ask for a larger one")
        window = req.rank_window
    window = rank_window(window, window_step_docs)
    return Plan(
        questions=questions,
        lanes=retrieval,
        expansion_lanes=expansion,
        projects=projects,
        doc_ids=doc_ids,
        graph_only=graph_only,
        entities=entities,
        depth=window * depth_blocks_per_result,
        deadline_s=req.deadline_ms / 1000 if req.deadline_ms is not None else None,
        window=window,
    )
