"""The one list of lanes: name, RRF weight, family, default on or off, and how to build each.

Everything that needs to know the lanes reads them from here: the configuration (which lanes exist,
which run by default, their weights), the search pipeline (which lanes retrieve and which expand),
the MCP schemas (the ``retrieval_lanes`` families), ``sleuth status``/``doctor`` and the CLI help.
Adding a lane is one module with a class that follows :class:`sleuth.lanes.base.Lane` plus one
:func:`register_lane` call; nothing else changes.

Standard library only at import: a cold ``sleuth search`` reads the configuration before it loads
anything else (``sleuth.startup``), and a lane's module is imported only when an engine builds it.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from sleuth.lanes.base import Lane, LaneContext

#: What a lane does in the pipeline: ``retrieve`` blocks for the query, or ``expand`` from the
#: documents the retrieval lanes fused (the graph lane).
LaneStage = Literal["retrieve", "expand"]
#: What a lane matches by: the query's words (stems), its phrases and identifiers verbatim, its
#: meaning (embeddings), or links from what the others found. A document only ``meaning`` lanes
#: found holds no word of the query (:mod:`sleuth.ranking`).
LaneMatch = Literal["words", "verbatim", "meaning", "links"]
#: The matches that look at the query's words (what "lexical" means in ranking decisions).
LEXICAL_MATCHES = ("words", "verbatim")

#: The families of seed 004's ``retrieval_lanes`` filter (``bm25`` stands for every lexical lane).
FAMILIES: tuple[str, ...] = ("exact", "bm25", "vector", "graph")


@dataclass(frozen=True)
class LaneSpec:
    """One lane as the registry knows it.

    Attributes:
        name: the lane's name (``--lanes``, ``sources``, traces).
        family: the seed-004 retrieval lane it answers for (one of :data:`FAMILIES`, or a new one).
        weight: its weight in the weighted RRF (``score = Σ weight / (k + rank)``).
        default: run when no lanes are asked for.
        score_weight: its weight in the score-based fusions (z-score, convex; the default fusion);
            None: the same as ``weight``.
        matches: what it matches by (:data:`LaneMatch`).
        build: ``"module:Class"`` (imported when an engine first builds the lane) or a callable;
            called with a :class:`~sleuth.lanes.base.LaneContext`, returns the lane.
        stage: ``retrieve`` or ``expand`` (see :data:`LaneStage`).
        summary: one line for people (CLI help, ``sleuth status``).
    """

    name: str
    family: str
    weight: float
    default: bool
    build: str | Callable[[LaneContext], Lane]
    stage: LaneStage = "retrieve"
    summary: str = ""
    score_weight: float | None = None
    matches: LaneMatch = "words"

    def create(self, context: LaneContext) -> Lane:
        """A new lane of this spec over ``context``."""
        factory: Any = self.build
        if isinstance(factory, str):
            module, _, attr = factory.partition(":")
            factory = getattr(importlib.import_module(module), attr)
        return factory(context)


_LOCK = threading.Lock()
_SPECS: dict[str, LaneSpec] = {}
#: ``lanes_matching`` answers by their ``matches``, emptied whenever a lane is added or removed
#: (every search asks which lanes are semantic and which lexical, for every fused document).
_MATCHING: dict[tuple[str, ...], frozenset[str]] = {}


def register_lane(spec: LaneSpec) -> None:
    """Add ``spec`` to the registry (after the lanes already there), or replace the lane of that name.

    Raises:
        ValueError: an empty name, a name with characters other than letters, digits, ``_`` and
            ``-``, or a negative weight.
    """
    if not spec.name or not spec.name.replace("_", "").replace("-", "").isalnum() or not spec.name.isascii():
        raise ValueError(f"a lane name is letters, digits, '_' and '-'; got {spec.name!r}")
    if spec.weight < 0 or (spec.score_weight or 0) < 0:
        raise ValueError(f"lane {spec.name}: fusion weights must be >= 0, got {spec.weight} and {spec.score_weight}")
    with _LOCK:
        _SPECS[spec.name] = spec
        _MATCHING.clear()


def unregister_lane(name: str) -> None:
    """Remove lane ``name`` (no error when absent)."""
    with _LOCK:
        _SPECS.pop(name, None)
        _MATCHING.clear()


def lane_specs() -> tuple[LaneSpec, ...]:
    """Every registered lane, in registration order."""
    with _LOCK:
        return tuple(_SPECS.values())


def lane_spec(name: str) -> LaneSpec | None:
    """The lane ``name``, or None."""
    with _LOCK:
        return _SPECS.get(name)


def lane_names() -> tuple[str, ...]:
    return tuple(s.name for s in lane_specs())


def validate_lanes(lanes: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Check lane names against the registry, ignoring case (``BM25`` is ``bm25``); returns the
    registered names, each once, in order. Raises ConfigError naming the unknown ones (or none given).

    In this module, not :mod:`sleuth.config`, so that ``sleuth search --lanes`` answered by the broker
    checks its lanes without importing the settings (and with them the embedder and numpy)."""
    from sleuth.errors import ConfigError, shown_names, shown_value

    known = lane_names()
    not_names = [lane for lane in lanes if not isinstance(lane, str)]
    if not_names:
        raise ConfigError(f"a lane is named by a string, got {shown_value(not_names[0])};"
                          f" choose from {', '.join(known)}")
    by_folded = {name.casefold(): name for name in known}
    lanes = tuple(dict.fromkeys(by_folded.get(lane.strip().casefold(), lane.strip()) for lane in lanes
                                if lane.strip()))
    unknown = [lane for lane in lanes if lane not in known]
    if unknown or not lanes:
        # no terminal escapes, at most a few names of a long list
        raise ConfigError(f"unknown lane(s) {shown_names(unknown) or '(none given)'}; choose from {', '.join(known)}")
    return lanes


def default_lanes() -> tuple[str, ...]:
    """The lanes run when none are asked for, in registration order."""
    return tuple(s.name for s in lane_specs() if s.default)


def lane_weights() -> dict[str, float]:
    """Lane name → default RRF weight."""
    return {s.name: s.weight for s in lane_specs()}


def score_weights() -> dict[str, float]:
    """Lane name → default weight in the score-based fusions."""
    return {s.name: s.weight if s.score_weight is None else s.score_weight for s in lane_specs()}


def lanes_matching(*matches: str) -> frozenset[str]:
    """The registered lanes that match by one of ``matches`` (e.g. ``LEXICAL_MATCHES``)."""
    with _LOCK:
        found = _MATCHING.get(matches)
        if found is None:
            found = _MATCHING[matches] = frozenset(s.name for s in _SPECS.values() if s.matches in matches)
        return found


def match_group(lane: str) -> str:
    """``lexical`` for a lane matching words or verbatim, else what it matches by (``meaning``,
    ``links``): a lane that repeats another gives its fusion weight to its group."""
    spec = lane_spec(lane)
    matches = spec.matches if spec is not None else "words"
    return "lexical" if matches in LEXICAL_MATCHES else matches


def family_of(lane: str) -> str:
    """The family lane ``lane`` answers for (itself when it is not registered)."""
    spec = lane_spec(lane)
    return spec.family if spec is not None else lane


def families() -> tuple[str, ...]:
    """:data:`FAMILIES` plus any family a registered lane adds, in that order."""
    extra = [s.family for s in lane_specs() if s.family not in FAMILIES]
    return (*FAMILIES, *dict.fromkeys(extra))


def lanes_of_family(family: str, among: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The lanes of ``family`` (restricted to ``among`` when given), in registration order."""
    return tuple(s.name for s in lane_specs() if s.family == family and (among is None or s.name in among))


def lanes_for_families(wanted: tuple[str, ...] | list[str], default: tuple[str, ...]) -> tuple[str, ...]:
    """The lanes that answer for the families ``wanted``: the ``default`` lanes of those families, and
    every lane of a wanted family that has no default lane (the graph lane), in registration order."""
    covered = {family_of(n) for n in default}
    return tuple(s.name for s in lane_specs()
                 if s.family in wanted and (s.name in default or s.family not in covered))


def describe_lanes() -> str:
    """``name (summary)`` of every lane, comma separated, defaults marked: for help texts."""
    return ", ".join(f"{s.name}{'' if s.default else ' (off by default)'}" for s in lane_specs())


# The built-in lanes. RRF weights: the seed's bm25 / tfidf / index weights, and the exact, vector and
# graph lanes'. Score weights (the default z-score fusion) and the default lanes were chosen on
# SciFact, Cranfield, CISI and NPL (docs/EVAL.md): with z-score fusion the tfidf lane lowered three
# of four, and the exact lane lowered nDCG@10 on the judged sets; both run when asked for, and seed
# 004's tool asks for every family (the exact lane then runs on quoted phrases and identifiers).
# The rm3 lane (pseudo-relevance feedback, among the blocks holding a word of the query) is a default
# lane: with score weight 0.096 and the vector lane's at 0.5 (0.4 before) it was higher on all four
# sets, by 0.0007 to 0.0034 nDCG@10 against bm25 + index + vector at 0.4 (docs/EVAL.md, "Issue 14,
# third pass"); it adds two postings searches (the second among the bm25 lane's blocks only, since stop 35:
# docs/BENCH.md, "rm3 reranks the first round") and the analysis of ten blocks to every query (the warm
# hybrid at 200k blocks took 1.24-1.29x its time without rm3 in the same runs: about 10.4-10.8 ms
# against 8.4 ms quiet; docs/EVAL.md, fourth pass). Its RRF weight (a fifth of the bm25 lane's) is not tuned; seed
# 004's memory tool leaves it out (it lowered that tool on SciFact: sleuth.memory.search).
# The graph lane is off by default: its reinforcement of linked top documents moved a relevant Hugo
# page from first to fourth (tests/integration/test_cli.py); its score weight is not tuned (no judged
# set has links) and stays below every lexical lane's.
register_lane(LaneSpec("bm25", "bm25", 1.2, True, "sleuth.lanes.lexical:BM25Lane", score_weight=0.48,
                       summary="Okapi BM25 over block text"))
register_lane(LaneSpec("tfidf", "bm25", 0.8, False, "sleuth.lanes.tfidf:TfidfLane", score_weight=0.12,
                       summary="cosine of sublinear TF-IDF vectors"))
register_lane(LaneSpec("index", "bm25", 1.5, True, "sleuth.lanes.lexical:IndexLane", score_weight=0.12,
                       summary="fielded BM25 over titles, headings, tags, paths and text"))
register_lane(LaneSpec("rm3", "bm25", 0.24, True, "sleuth.lanes.lexical:FeedbackLane", score_weight=0.096,
                       summary="BM25 of the query expanded by pseudo-relevance feedback (RM3)"))
register_lane(LaneSpec("exact", "exact", 1.0, False, "sleuth.lanes.lexical:ExactLane", score_weight=0.2,
                       matches="verbatim",
                       summary="quoted phrases and code identifiers verbatim (runs only when the query has one)"))
register_lane(LaneSpec("vector", "vector", 2.0, True, "sleuth.lanes.vector:VectorLane", score_weight=0.5,
                       matches="meaning", summary="embedding similarity (all-MiniLM-L6-v2)"))
register_lane(LaneSpec("graph", "graph", 1.0, False, "sleuth.lanes.graph:GraphLane", stage="expand",
                       score_weight=0.1, matches="links",
                       summary="links, wikilinks, front-matter relations and entities of the documents found"))
