"""``project_memory_search``: variants, lanes under a deadline, graph expansion, fusion, rerank,
and summaries fitted to a byte budget.

Flow of one request (seed 004):

1. The scope: ``project_id`` plus ``include_project_ids``, or every active project but the Inbox.
   Filters (kind, role, source family, recorded time) become a set of allowed documents that every
   lane applies before its top-k, so a narrow filter never comes back empty because other
   documents filled the candidate window.
2. Variants: the query, the caller's ``query_variants``, and -- added deterministically -- each
   identifier (``snake_case``, ``a.b``, ``camelCase``) and quoted phrase found in them.
3. Retrieval: the memory lanes ``exact``, ``bm25`` (sleuth's lexical lanes bm25 + tfidf + index)
   and ``vector`` run concurrently, each over every variant (query embeddings in one batch). A lane
   that misses the deadline is left out of the fusion and listed in ``meta.degraded_lanes``; it
   keeps running until it settles (visible in ``query_status``). No lane in time: QUERY_TIMEOUT.
4. Fusion: every variant's lists join one weighted RRF (k = 60); variants count
   ``VARIANT_WEIGHT`` of the primary query. The ``graph`` lane then expands from the fused top
   documents (see :mod:`sleuth.lanes.graph`) and its list joins a second, final fusion.
5. Rerank (once, by the primary query): with variants, the top ``RERANK_DEPTH`` documents are
   re-scored by RRF of the all-variant ranking and the primary query's own ranking; then a record
   superseded by a newer one in the results is moved below it.
6. Summaries: the best passages of each result, with highlights, fitted to the byte budget
   (:mod:`sleuth.memory.budget`); ``index_freshness`` is checked against the file system.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sleuth.errors import ProjectNotFound, QueryError
from sleuth.freshness import document_freshness
from sleuth.fusion import FusedDocument, rrf
from sleuth.lanes.base import LaneQuery
from sleuth.lanes.graph import is_entity_node
from sleuth.memory.budget import Candidate, Passage, default_budget_bytes, fit_to_budget
from sleuth.memory.request import MEMORY_LANES, MemoryRequest, Question
from sleuth.memory.requests import (
    CANCELLED,
    COMPLETED,
    DEGRADED,
    FAILED,
    TIMED_OUT,
    RequestCancelled,
    RequestRegistry,
    RequestState,
)
from sleuth.ranking import LEXICAL_LANES, base_lane, judge_semantic_only, lexical_state, semantic_notice
from sleuth.summaries import make_snippet
from sleuth.text import ParsedQuery, analyze, parse_query
from sleuth.types import RankedList

if TYPE_CHECKING:
    from sleuth.engine import Engine
    from sleuth.store.catalog import DocumentRow

#: The kind label of graph entities (nodes that are not files), for ``filters.kinds``.
ENTITY_KIND = "entity"
#: The project that holds records filed without a project; ``all_projects`` leaves it out.
INBOX_PROJECT_ID = "inbox"
#: sleuth lanes run for each memory lane (the lexical family answers as ``bm25``).
ENGINE_LANES: dict[str, tuple[str, ...]] = {"exact": ("exact",), "bm25": ("bm25", "tfidf", "index"),
                                            "vector": ("vector",)}
#: Add the identifiers and quoted phrases of the query as variants (seed 004).
AUTO_VARIANTS = True
#: The memory lane each sleuth lane answers for.
MEMORY_LANE_OF: dict[str, str] = {engine: memory for memory, lanes in ENGINE_LANES.items() for engine in lanes}
#: RRF weight of a variant's lists relative to the primary query's.
VARIANT_WEIGHT = 0.5
#: RRF weight of the graph lane, and how many fused documents seed its expansion.
GRAPH_LANE_WEIGHT = 1.0
GRAPH_SEED_DOCUMENTS = 10
#: Blocks each lane returns per variant: at least this many, or this many per requested result.
LANE_DEPTH_MIN_BLOCKS = 100
LANE_DEPTH_BLOCKS_PER_RESULT = 10
#: Reranking by the primary query (see ``MemorySearch._rerank``): on or off, and how many fused
#: documents it reorders.
PRIMARY_RERANK = True
RERANK_DEPTH = 30
#: Passages offered per result before the budget decides (best blocks first), and their size.
PASSAGES_PER_RESULT = 3
PASSAGE_MAX_CHARS = 900
#: Part of the deadline kept for the graph lane, fusion and summaries after retrieval (at most
#: ``FINISH_RESERVE_MAX_S`` seconds).
FINISH_RESERVE_FRACTION = 0.2
FINISH_RESERVE_MAX_S = 0.25
#: What the exact lane answers when no variant holds a quoted phrase or a code identifier.
NOT_APPLICABLE = "not applicable"
EXACT_NOTHING_TO_MATCH = "nothing to match verbatim: the exact lane matches quoted phrases and code identifiers"
#: How often the request thread looks at its lanes and its cancel flag, in seconds.
POLL_INTERVAL_S = 0.02
#: Fault injection for tests and drills: ``lane=ms,lane=ms`` delays those memory lanes.
LANE_DELAY_ENV = "SLEUTH_FAULT_LANE_DELAY_MS"

_QUOTED = re.compile(r'"([^"]+)"')


def lane_delays_from_env(value: str | None) -> dict[str, float]:
    """Parse ``SLEUTH_FAULT_LANE_DELAY_MS`` (``graph=2500,vector=100``) into seconds per lane.

    Raises:
        QueryError: a malformed entry or an unknown lane.
    """
    delays: dict[str, float] = {}
    for item in (value or "").split(","):
        if not item.strip():
            continue
        lane, _, ms = item.partition("=")
        if lane.strip() not in MEMORY_LANES or not ms.strip().isdigit():
            raise QueryError(f"{LANE_DELAY_ENV}: expected lane=milliseconds with lane in {MEMORY_LANES}, got {item!r}")
        delays[lane.strip()] = int(ms) / 1000
    return delays


def is_code_identifier(token: str) -> bool:
    """True for a token that reads as a code identifier: ``snake_case``, ``a.b`` / ``a::b`` with
    parts of two or more characters, ``call()``, or camelCase with a lower-upper-lower hump
    (``openCatalog``, ``HttpClient``) -- not prose tokens such as ``mRNAs``, ``i.e`` or ``iPSC``."""
    return bool("_" in token.strip("_") or re.fullmatch(r"\w{2,}(?:(?:\.|::)\w{2,})+", token)
                or token.endswith("()") or re.search(r"[a-z][A-Z][a-z]", token))


def auto_variants(texts: Sequence[str]) -> list[str]:
    """The code identifiers (:func:`is_code_identifier`) and quoted phrases found in ``texts``, as
    extra variants, in order of appearance (an identifier in its surface form; a phrase with its
    quotes, so it stays required)."""
    out: list[str] = []
    for text in texts:
        for phrase in _QUOTED.findall(text):
            if phrase.strip() and len(phrase.split()) > 1:
                out.append(f'"{phrase.strip()}"')
        identifiers = set(parse_query(text).identifiers)
        for token in re.findall(r"[\w.$:/()-]+", text):
            token = token.strip(".:/-")
            bare = token.removesuffix("()")
            if bare and bare.lower() in identifiers and is_code_identifier(token):
                out.append(bare)
    return list(dict.fromkeys(out))


def exact_query(parsed: ParsedQuery) -> ParsedQuery | None:
    """What the memory ``exact`` lane searches for: the query's quoted phrases and its code
    identifiers only, or None when it has neither (a prose query has nothing to match verbatim)."""
    surfaces = {t.lower().removesuffix("()") for t in re.findall(r"[\w.$:/()-]+", parsed.text)
                if is_code_identifier(t.strip(".:/-"))}
    strong = tuple(i for i in parsed.identifiers if i in surfaces)
    if not strong and not parsed.phrases:
        return None
    return replace(parsed, identifiers=strong)


def freshness(doc: DocumentRow) -> str:
    """``current`` or ``stale``: is ``doc``'s file as it was indexed? (see
    :func:`sleuth.freshness.document_freshness`)."""
    return document_freshness(doc.root, doc.rel_path, doc.mtime_ns, doc.size_bytes, doc.content_hash,
                              doc.indexed_at)


def order_superseded(ranked: list[FusedDocument], superseded_by: Mapping[str, set[str]]) -> list[FusedDocument]:
    """``ranked`` with every document moved below each of its replacements (``superseded_by``:
    doc_id → ids of the documents replacing it) that is also in the list, chains included;
    otherwise the order is kept. Cycles cannot make it loop: at most ``len(ranked)`` passes."""
    ranked = list(ranked)
    for _ in range(len(ranked)):
        moved = False
        position = {d.doc_id: i for i, d in enumerate(ranked)}
        for i, d in enumerate(ranked):
            later = [position[n] for n in superseded_by.get(d.doc_id, ()) if position.get(n, -1) > i]
            if later:
                ranked.insert(max(later), ranked.pop(i))  # after the pop, max(later) is just below it
                moved = True
                break
        if not moved:
            break
    return ranked


def _rfc3339(ns: int) -> str | None:
    if ns <= 0:
        return None
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Variants:
    question: Question
    texts: list[str]
    parsed: list[ParsedQuery] = field(default_factory=list)


def _lane_of(list_name: str) -> str:
    """The memory lane of a fused list (``bm25#1``, ``tfidf#0``, ``graph`` → ``bm25``, ``bm25``, ``graph``)."""
    engine_lane = list_name.partition("#")[0]
    return MEMORY_LANE_OF.get(engine_lane, engine_lane)


class MemorySearch:
    """Answers ``project_memory_search`` requests over one engine.

    Args:
        engine: the open index.
        registry: running requests (shared with ``query_status`` / ``query_cancel``).
        allowed_projects: the projects a caller may search (None: all); others count as unknown.
        lane_delays_s: fault injection: seconds each memory lane waits before running (default:
            from ``SLEUTH_FAULT_LANE_DELAY_MS``).
    """

    def __init__(self, engine: Engine, registry: RequestRegistry | None = None,
                 lane_delays_s: Mapping[str, float] | None = None, allowed_projects: set[str] | None = None) -> None:
        self.engine = engine
        self.allowed_projects = allowed_projects
        self.registry = registry or RequestRegistry()
        self.lane_delays_s = dict(lane_delays_s if lane_delays_s is not None
                                  else lane_delays_from_env(os.environ.get(LANE_DELAY_ENV)))
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="sleuth-memory")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ scope

    def scope(self, req: MemoryRequest) -> tuple[str, ...]:
        """The project ids searched. Raises ProjectNotFound naming unknown ids."""
        projects = {str(p["project_id"]): p for p in self.engine.catalog.projects()
                    if self.allowed_projects is None or p["project_id"] in self.allowed_projects}
        if req.all_projects:
            return tuple(sorted(p for p, info in projects.items()
                                if p != INBOX_PROJECT_ID and int(info.get("documents", 0) or 0) > 0))
        wanted = [p for p in (req.project_id, *req.include_project_ids) if p]
        missing = [p for p in wanted if p not in projects]
        if missing:
            raise ProjectNotFound(f"project not found: {', '.join(missing)} (see get_projects or `sleuth projects`)")
        return tuple(wanted)

    # ------------------------------------------------------------------ the request

    def search(self, req: MemoryRequest) -> dict[str, Any]:
        """Answer one request; returns the JSON-ready payload (``results`` or ``groups``, ``meta``,
        ``elapsed_ms``), or an ``error`` payload for a timeout or a cancellation.

        Raises:
            QueryError: the request_id is already running, or no question has searchable terms.
            ProjectNotFound: a requested project does not exist.
        """
        summary = " | ".join(q.query for q in req.questions)
        state = self.registry.start(req.request_id, summary, req.deadline_ms)
        try:
            payload = self._search(req, state)
        except RequestCancelled as exc:
            self.registry.finish(state, CANCELLED)
            return {"error": {"code": "QUERY_CANCELLED", "message": str(exc), "request_id": state.request_id,
                              "cancel_reason": exc.reason, "phase": exc.phase},
                    "meta": {"request_id": state.request_id,
                             "lanes": [lane for lane, st in state.lanes.items() if st == "done"],
                             "lane_states": dict(state.lanes)},
                    "elapsed_ms": state.elapsed_ms()}
        except _Timeout as exc:
            self.registry.finish(state, TIMED_OUT)
            return {"error": {"code": "QUERY_TIMEOUT", "request_id": state.request_id, "phase": exc.phase,
                              "message": f"no retrieval lane answered within {req.deadline_ms} ms"},
                    "meta": {"request_id": state.request_id, "degraded_lanes": exc.lanes,
                             "lanes": [lane for lane, st in state.lanes.items() if st == "done"],
                             "lane_states": dict(state.lanes)},
                    "elapsed_ms": state.elapsed_ms()}
        except BaseException as exc:
            self.registry.finish(state, FAILED, str(exc))
            raise
        degraded = payload["meta"]["degraded_lanes"]
        self.registry.finish(state, DEGRADED if degraded else COMPLETED)
        payload["elapsed_ms"] = state.elapsed_ms()
        return payload

    def _search(self, req: MemoryRequest, state: RequestState) -> dict[str, Any]:
        state.set_phase("scope")
        projects = self.scope(req)
        f = req.filters
        families = tuple(x for x in f.source_families if x != "graph")
        doc_kinds = tuple(k for k in f.kinds if k != ENTITY_KIND)
        # Only graph nodes asked for (by family or kind): the lanes still retrieve, unfiltered by
        # family and kind, the evidence the graph expands from; only entities are answered.
        graph_only = (bool(f.source_families) and not families) or (bool(f.kinds) and not doc_kinds)
        timed = f.recorded_after_ns is not None or f.recorded_before_ns is not None
        allowed: frozenset[str] | None = None
        if graph_only and (f.roles or timed):
            allowed = frozenset(self.engine.catalog.filter_documents(
                projects, (), f.roles, (), f.recorded_after_ns, f.recorded_before_ns))
        elif not graph_only and (doc_kinds or f.roles or families or timed):
            allowed = frozenset(self.engine.catalog.filter_documents(
                projects, doc_kinds, f.roles, families, f.recorded_after_ns, f.recorded_before_ns))
        entities_allowed = ((not f.source_families or "graph" in f.source_families)
                            and (not f.kinds or ENTITY_KIND in f.kinds) and (not f.roles or "other" in f.roles)
                            and f.recorded_after_ns is None and f.recorded_before_ns is None)
        if f.kinds:
            known = {*self.engine.catalog.kind_labels(), ENTITY_KIND}
            unknown = [k for k in f.kinds if k not in known]
            if unknown:
                raise QueryError(f"filters.kinds: no document has kind {', '.join(map(repr, unknown))}; "
                                 f"kinds in this index: {', '.join(sorted(known))}")
        questions = [self._variants(q) for q in req.questions]
        self.engine._catch_up(blocking=False)  # noqa: SLF001 - the engine's own catch-up, as its search does
        lanes = [lane for lane in MEMORY_LANES if lane in f.lanes]
        retrieval_lanes = [lane for lane in lanes if lane != "graph"]
        for lane in lanes:
            state.lanes[lane] = "pending"
        depth = max(LANE_DEPTH_MIN_BLOCKS, max(q.question.limit for q in questions) * LANE_DEPTH_BLOCKS_PER_RESULT)

        state.set_phase("retrieval")
        answers, degraded, unavailable, failed, skipped = self._retrieve(
            state, retrieval_lanes, questions, depth, projects, allowed)
        if retrieval_lanes and not answers and degraded:
            raise _Timeout("retrieval", degraded)

        state.set_phase("fusion")
        weights = dict(self.engine.config.lane_weights)
        fused_per_question: list[list[FusedDocument]] = []
        list_weights: dict[str, float] = {}
        question_lists: list[list[RankedList]] = []
        for qi in range(len(questions)):
            lists: list[RankedList] = []
            for lane_answers in answers.values():
                for (q_index, vi), ranked_lists in lane_answers.items():
                    if q_index != qi:
                        continue
                    for ranked in ranked_lists:
                        name = f"{ranked.lane}#{vi}"
                        list_weights[name] = weights.get(ranked.lane, 1.0) * (1.0 if vi == 0 else VARIANT_WEIGHT)
                        lists.append(RankedList(name, ranked.block_ids, ranked.scores))
            question_lists.append(lists)
            fused_per_question.append(rrf(lists, _doc_of_node, list_weights, self.engine.config.rrf_k))

        if "graph" in lanes:
            state.set_phase("graph")
            query_terms = [frozenset(t for p in v.parsed for t in p.terms) for v in questions]
            graph_lists = self._graph(state, fused_per_question, query_terms, depth, projects,
                                      frozenset() if graph_only else allowed, entities_allowed, degraded, failed)
            if graph_lists is not None:
                list_weights["graph"] = GRAPH_LANE_WEIGHT
                fused_per_question = [
                    rrf([*lists, graph_list], _doc_of_node, list_weights, self.engine.config.rrf_k)
                    for lists, graph_list in zip(question_lists, graph_lists, strict=True)
                ]

        if graph_only:
            fused_per_question = [[d for d in fused if is_entity_node(d.doc_id)] for fused in fused_per_question]
        all_lists = [r for lists in question_lists for r in lists]
        word_ran, lexical_found = lexical_state(all_lists)
        drop_weak = any(base_lane(r.lane) in LEXICAL_LANES for r in all_lists) and not lexical_found
        fused_per_question = [judge_semantic_only(fused, drop_weak) for fused in fused_per_question]
        if degraded and not any(fused_per_question):
            # Nothing answered in time: an empty success would read as "nothing to find".
            raise _Timeout("retrieval" if set(degraded) - {"graph"} else "graph", sorted(degraded))
        state.set_phase("rerank")
        graph = self.engine.link_graph() if self.engine.catalog.has_blocks() else None
        ranked_per_question = []
        for v, fused, lists in zip(questions, fused_per_question, question_lists, strict=True):
            primary = None
            if len(v.parsed) > 1:  # variants: the primary query's own fusion reranks the head once
                own = [r for r in lists if r.lane.endswith("#0")]
                primary = rrf(own, _doc_of_node, list_weights, self.engine.config.rrf_k)
            ranked_per_question.append(self._rerank(fused, primary, graph))

        state.set_phase("summaries")
        groups, families, meta_extra = self._answer(req, questions, ranked_per_question, graph)
        meta = {
            "request_id": state.request_id,
            "projects": list(projects),
            "lanes": [lane for lane in lanes if lane not in degraded and lane not in unavailable
                      and lane not in failed and lane not in skipped],
            "degraded_lanes": sorted(degraded),
            "unavailable_lanes": unavailable,
            "skipped_lanes": skipped,
            "failed_lanes": failed,
            "variants": {v.question.id or "query": v.texts for v in questions} if req.grouped
            else list(questions[0].texts),
            "filters_applied": f.narrows_documents or f.lanes != MEMORY_LANES,
            "source_families": sorted(families),
            **meta_extra,
        }
        semantic = semantic_notice(word_ran, lexical_found, sum(len(g) for g in groups), 0)
        if semantic:
            meta["notice"] = semantic
        elif not any(groups):
            meta["notice"] = self._why_empty(lanes, {**unavailable, **skipped}, allowed, graph_only)
        out: dict[str, Any] = {"meta": meta}
        if req.grouped:
            out["groups"] = [{"id": v.question.id, "query": v.question.query, "result_count": len(g), "results": g}
                             for v, g in zip(questions, groups, strict=True)]
        else:
            out["query"] = questions[0].question.query
            out["result_count"] = len(groups[0])
            out["results"] = groups[0]
        return out

    # ------------------------------------------------------------------ steps

    @staticmethod
    def _why_empty(lanes: Sequence[str], not_run: Mapping[str, str], allowed: frozenset[str] | None,
                   graph_only: bool) -> str:
        """Why an answer is empty, in one sentence for the caller."""
        if list(lanes) == ["graph"]:
            return ("the graph lane expands from what the other lanes retrieve; with retrieval_lanes [graph] "
                    "alone there is nothing to expand from")
        ran = [lane for lane in lanes if lane not in not_run and lane != "graph"]
        if not ran and "exact" in not_run:
            return not_run["exact"]
        if allowed is not None and not allowed and not graph_only:
            return "no document matches the filters"
        if graph_only:
            return "no graph entity is linked from the documents that match the query"
        return "no document matches the query in the searched projects"

    @staticmethod
    def _variants(q: Question) -> _Variants:
        extra = auto_variants([q.query, *q.variants]) if AUTO_VARIANTS else []
        texts = list(dict.fromkeys([q.query, *q.variants, *extra]))
        v = _Variants(q, [], [])
        for text in texts:
            parsed = parse_query(text)
            if not parsed.is_empty:
                v.texts.append(text)
                v.parsed.append(parsed)
        if not v.parsed:
            where = f"query {q.id!r}" if q.id else "the query"
            raise QueryError(f"{where} has no searchable terms (only stop words, punctuation or blanks): {q.query!r}")
        return v

    def _delay(self, state: RequestState, lane: str) -> None:
        delay = self.lane_delays_s.get(lane, 0.0)
        if delay > 0 and state.cancel_event.wait(delay):
            state.check()

    def _lane_task(self, state: RequestState, lane: str, questions: list[_Variants], depth: int,
                   projects: tuple[str, ...], allowed: frozenset[str] | None
                   ) -> dict[tuple[int, int], list[RankedList]] | str:
        state.lanes[lane] = "running"
        self._delay(state, lane)
        if lane == "vector":
            reason = self.engine.vector_unavailable
            if reason:
                return reason
            self.engine.embed_queries([text for v in questions for text in v.texts])
        if lane == "exact" and not any(exact_query(p) for v in questions for p in v.parsed):
            return NOT_APPLICABLE
        out: dict[tuple[int, int], list[RankedList]] = {}
        for qi, v in enumerate(questions):
            for vi, parsed in enumerate(v.parsed):
                state.check()
                if lane == "exact":
                    exact = exact_query(parsed)
                    if exact is None:
                        continue
                    parsed = exact
                q = LaneQuery(parsed, depth, projects, allowed)
                lists = []
                for engine_lane in ENGINE_LANES[lane]:
                    if engine_lane not in self.engine.lanes:
                        continue
                    answer = self.engine.run_lane(engine_lane, q)
                    if isinstance(answer, str):
                        return answer
                    lists.append(answer)
                out[(qi, vi)] = lists
        return out

    def _settle(self, state: RequestState, lane: str, future: Future[Any]) -> None:
        """Record how a lane ended (after the answer went out, its state says so)."""
        def done(fut: Future[Any]) -> None:
            exc = fut.exception()
            if isinstance(exc, RequestCancelled):
                state.lanes[lane] = "cancelled"
            elif state.lanes.get(lane) in ("settling", "running", "pending"):
                state.lanes[lane] = "failed" if exc else ("settled" if state.lanes.get(lane) == "settling" else "done")
        future.add_done_callback(done)

    def _retrieve(self, state: RequestState, lanes: list[str], questions: list[_Variants], depth: int,
                  projects: tuple[str, ...], allowed: frozenset[str] | None
                  ) -> tuple[dict[str, dict[tuple[int, int], list[RankedList]]], list[str], dict[str, str],
                             dict[str, str], dict[str, str]]:
        futures: dict[Future[Any], str] = {}
        for lane in lanes:
            fut = self._pool.submit(self._lane_task, state, lane, questions, depth, projects, allowed)
            futures[fut] = lane
            self._settle(state, lane, fut)
        answers: dict[str, dict[tuple[int, int], list[RankedList]]] = {}
        unavailable: dict[str, str] = {}
        failed: dict[str, str] = {}
        skipped: dict[str, str] = {}
        pending = set(futures)
        # Stop waiting a little before the deadline, so that the graph lane, fusion and summaries
        # still fit in it.
        reserve_s = min(FINISH_RESERVE_MAX_S, state.deadline_ms / 1000 * FINISH_RESERVE_FRACTION)
        while pending:
            remaining = state.remaining_s() - reserve_s
            if remaining <= 0:
                break
            done, pending = wait(pending, timeout=min(POLL_INTERVAL_S, remaining), return_when=FIRST_COMPLETED)
            for fut in done:
                lane = futures[fut]
                exc = fut.exception()
                if isinstance(exc, RequestCancelled):
                    continue
                if exc is not None:
                    failed[lane] = f"{type(exc).__name__}: {exc}"
                    state.lanes[lane] = "failed"
                    continue
                result = fut.result()
                if result is NOT_APPLICABLE:
                    skipped[lane] = EXACT_NOTHING_TO_MATCH
                    state.lanes[lane] = "skipped"
                elif isinstance(result, str):
                    unavailable[lane] = result
                    state.lanes[lane] = "unavailable"
                else:
                    answers[lane] = result
                    state.lanes[lane] = "done"
            state.check()
        degraded = sorted(futures[f] for f in pending)
        for lane in degraded:
            state.lanes[lane] = "settling"
        return answers, degraded, unavailable, failed, skipped

    def _graph(self, state: RequestState, fused_per_question: list[list[FusedDocument]],
               query_terms: list[frozenset[str]], depth: int, projects: tuple[str, ...],
               allowed: frozenset[str] | None, entities_allowed: bool, degraded: list[str],
               failed: dict[str, str]) -> list[RankedList] | None:
        """The graph lane's list per question, or None when it missed the deadline (then degraded)."""
        def task() -> list[RankedList]:
            state.lanes["graph"] = "running"
            self._delay(state, "graph")
            graph = self.engine.link_graph()
            lists = []
            for fused, terms in zip(fused_per_question, query_terms, strict=True):
                top = fused[:GRAPH_SEED_DOCUMENTS]
                best = top[0].score if top else 1.0
                seeds = [(d.doc_id, d.score / best) for d in top if not is_entity_node(d.doc_id)]
                lists.append(graph.expand(seeds, depth, allowed, projects, entities_allowed, terms))
            return lists

        fut = self._pool.submit(task)
        self._settle(state, "graph", fut)
        while True:
            remaining = state.remaining_s()
            if remaining <= 0:
                state.lanes["graph"] = "settling"
                degraded.append("graph")
                return None
            done, _ = wait([fut], timeout=min(POLL_INTERVAL_S, remaining))
            state.check()
            if done:
                break
        exc = fut.exception()
        if exc is not None:
            if isinstance(exc, RequestCancelled):
                raise exc
            failed["graph"] = f"{type(exc).__name__}: {exc}"
            state.lanes["graph"] = "failed"
            return None
        state.lanes["graph"] = "done"
        return fut.result()

    def _rerank(self, fused: list[FusedDocument], primary: list[FusedDocument] | None,
                graph: Any) -> list[FusedDocument]:
        """Rerank the head of ``fused`` once by the primary query, then order superseded records
        below the records that replace them.

        With variants, the top ``RERANK_DEPTH`` documents are re-scored by RRF (k = 60) over two
        rankings: the fusion of every variant (``fused``) and the primary query's own fusion
        (``primary``); a document the primary query did not retrieve gets only the first part.
        Without variants the two are the same ranking and the order is kept.
        """
        ranked = list(fused)
        if PRIMARY_RERANK and primary is not None and ranked:
            k = self.engine.config.rrf_k
            primary_rank = {d.doc_id: i for i, d in enumerate(primary, start=1)}
            head = ranked[:RERANK_DEPTH]
            scored = sorted(
                ((1 / (k + i) + (1 / (k + primary_rank[d.doc_id]) if d.doc_id in primary_rank else 0.0), -i, d)
                 for i, d in enumerate(head, start=1)),
                key=lambda x: (-x[0], -x[1]))
            ranked = [d for _, _, d in scored] + ranked[RERANK_DEPTH:]
        if graph is None or not graph.superseded_by:
            return ranked
        return order_superseded(ranked, graph.superseded_by)

    def _answer(self, req: MemoryRequest, questions: list[_Variants], ranked: list[list[FusedDocument]],
                graph: Any) -> tuple[list[list[dict[str, Any]]], set[str], dict[str, Any]]:
        heads = [r[: v.question.limit] for v, r in zip(questions, ranked, strict=True)]
        doc_ids = list(dict.fromkeys(d.doc_id for head in heads for d in head if not is_entity_node(d.doc_id)))
        docs = self.engine.catalog.documents(doc_ids)
        block_ids = list(dict.fromkeys(b for head in heads for d in head for b in d.block_ids[:PASSAGES_PER_RESULT]
                                       if not b.endswith(":") and not is_entity_node(b)))
        blocks = self.engine.catalog.blocks(block_ids)
        first_blocks = self.engine.catalog.first_blocks(
            [d.doc_id for head in heads for d in head
             if d.doc_id in docs and not any(b in blocks for b in d.block_ids)])
        extents = self.engine.catalog.body_extents(list(docs))
        mentioning = [m for head in heads for d in head if is_entity_node(d.doc_id) and graph is not None
                      and d.doc_id in graph.entities for m in graph.entities[d.doc_id].mentioned_by[:8]]
        titles = {d.doc_id: d.title for d in self.engine.catalog.documents(
            list(dict.fromkeys(m for m in mentioning if m not in docs))).values()}
        titles.update({d.doc_id: d.title for d in docs.values()})
        fresh: dict[str, str] = {}
        groups: list[list[Candidate]] = []
        families: set[str] = set()
        for v, head in zip(questions, heads, strict=True):
            terms = {t for p in v.parsed[:1] for t in p.terms} | {t for p in v.parsed for ph in p.phrases
                                                                   for t in analyze(" ".join(ph))}
            candidates: list[Candidate] = []
            for d in head:
                if is_entity_node(d.doc_id):
                    if graph is None or d.doc_id not in graph.entities:
                        continue
                    candidates.append(self._entity_candidate(d, graph, titles, len(candidates) + 1))
                    families.add("graph")
                    continue
                doc = docs.get(d.doc_id)
                if doc is None:
                    continue  # deleted between the lanes' answer and now
                if doc.doc_id not in fresh:
                    fresh[doc.doc_id] = freshness(doc)
                passages = []
                for b in [blocks[b] for b in d.block_ids[:PASSAGES_PER_RESULT] if b in blocks] or (
                        [first_blocks[d.doc_id]] if d.doc_id in first_blocks else []):
                    snip = make_snippet(b.text, terms, PASSAGE_MAX_CHARS)
                    passages.append(Passage(snip.text, b.start_char + snip.start, b.start_char + snip.end,
                                            tuple(snip.highlights), tuple(b.heading_path)))
                families.add(doc.family)
                length, body_start, body_end = extents.get(doc.doc_id, (doc.size_bytes, 0, 0))
                fields = self._fields(d, doc, fresh[doc.doc_id], graph, len(candidates) + 1)
                fields["source_length"] = length
                candidates.append(Candidate(fields, passages, body_end - body_start))
            groups.append(candidates)
        unique = len({c.fields["record_id"] for g in groups for c in g})
        budget = req.budget_bytes or default_budget_bytes(unique, len(questions), len(families))
        rendered, report = fit_to_budget(groups, budget)
        meta = {"response_budget_bytes": budget, "result_bytes": report.result_bytes,
                "budget_chosen_by": "caller" if req.budget_bytes else "adaptive",
                "summary_passages_per_result": report.passages_per_result,
                "summary_passage_max_chars": report.passage_max_chars,
                "omitted_results": report.omitted_results}
        return rendered, families, meta

    @staticmethod
    def _fields(d: FusedDocument, doc: DocumentRow, fresh: str, graph: Any, rank: int) -> dict[str, Any]:
        lanes = list(dict.fromkeys(_lane_of(t.lane) for t in d.trace))
        fields: dict[str, Any] = {
            "rank": rank,
            "record_id": doc.doc_id,
            "revision_id": doc.revision,
            "body_handle": f"body:{doc.doc_id}@{doc.revision}",
            "project_id": doc.project_id,
            "title": doc.title,
            "path": doc.rel_path,
            "kind": doc.label,
            "role": doc.role,
            "source_family": doc.family,
            "recorded_at": _rfc3339(doc.recorded_ns),
            "score": round(d.score, 6),
            "lanes": lanes,
            "source_span": {"start": 0, "end": 0},
            "source_length": 0,
            "index_freshness": fresh,
        }
        if d.semantic_only:
            fields["semantic_only"] = True
        newer = sorted(graph.superseded_by.get(doc.doc_id, ())) if graph is not None else []
        if newer:
            fields["superseded_by"] = newer
        return fields

    @staticmethod
    def _entity_candidate(d: FusedDocument, graph: Any, titles: Mapping[str, str], rank: int) -> Candidate:
        node = graph.entities[d.doc_id]
        text = graph.entity_summary(d.doc_id, titles)
        fields = {
            "rank": rank, "record_id": f"entity:{node.name}", "revision_id": "", "body_handle": f"entity:{d.doc_id}",
            "project_id": node.project_id, "title": node.name, "path": "", "kind": "entity", "role": "other",
            "source_family": "graph", "recorded_at": None, "score": round(d.score, 6), "lanes": ["graph"],
            "source_span": {"start": 0, "end": len(text)}, "source_length": len(text), "index_freshness": "current",
            "mentioned_by": node.mentioned_by[:20],
        }
        return Candidate(fields, [Passage(text, 0, len(text), ())], len(text))


def _doc_of_node(node_id: str) -> str:
    """The fusion key of a lane item: a block's document id, or an entity node's id."""
    return node_id.partition(":")[0]


class _Timeout(Exception):
    def __init__(self, phase: str, lanes: list[str]) -> None:
        super().__init__(phase)
        self.phase, self.lanes = phase, lanes
