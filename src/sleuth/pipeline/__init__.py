"""The one search pipeline behind every surface (CLI, Python API, every MCP tool family).

``Searcher.search(request) -> SearchResponse`` runs, in order:

1. **plan** (:mod:`.plan`): questions and their variants, lanes, scope, filters → allowed documents;
2. **retrieve** (:mod:`.retrieve`): the retrieval lanes in parallel, under the deadline;
3. **fuse** and 4. **expand** and 5. **rerank** (:mod:`.fuse`): weighted RRF, graph expansion, the
   primary-query rerank and supersession order;
6. **results** (:mod:`.results`): existing documents in the page's window, passages, traces,
   details.

The surfaces only render the typed :class:`~sleuth.types.SearchResponse`; budgets fitting answers
to bytes (:mod:`.budget`) are a rendering step any surface may use.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import wait
from typing import TYPE_CHECKING, Any

from sleuth.errors import ProjectNotFound, QueryError, QueryTimeout, RequestCancelled, shown
from sleuth.fusion import fuse as fuse_lists
from sleuth.ingest.roles import FILTER_KINDS
from sleuth.lanes.base import DocFilter
from sleuth.lanes.graph import is_entity_node
from sleuth.pipeline.fuse import Expand, doc_of_node, fuse_question
from sleuth.pipeline.plan import ENTITY_KIND, Plan, PlannedQuestion, build_plan
from sleuth.pipeline.requests import RequestState
from sleuth.pipeline.results import Rows, add_details, document_hit, entity_hit, existing
from sleuth.pipeline.retrieve import LanePools, Retrieval, Retriever
from sleuth.ranking import absent_words_notice, lexical_state, semantic_notice
from sleuth.text import ParsedQuery, parse_query
from sleuth.types import INBOX_PROJECT_ID, Hit, QuestionAnswer, RankedList, SearchRequest, SearchResponse, inbox_note

if TYPE_CHECKING:
    from sleuth.config import Config
    from sleuth.lanes.graph import GraphLane, LinkGraph
    from sleuth.pipeline.corpus import Corpus

#: Why an answer holds nothing when the query has nothing to search for.
NO_SEARCHABLE_TERMS = "the query has no searchable terms (only stop words, punctuation or blanks)"
#: Lanes answered from the tantivy postings (which an indexing run commits at its end).
POSTINGS_LANES = frozenset({"bm25", "index", "rm3", "exact"})

__all__ = ["NO_SEARCHABLE_TERMS", "Searcher"]


class Searcher:
    """Runs searches over one open index (see the module docstring).

    Args:
        corpus: what the pipeline reads besides the lanes (the catalog, or texts in memory).
        lanes: the built lanes by name (retrieval and expansion lanes).
        config: the ranking settings (lanes run by default, their weights, the RRF constant).
        delays_s: fault injection: seconds each lane (or family) waits before running.
        catch_up: called before each search (the index's postings catch up with its catalog).
        postings_generation: the generation the postings reflect (None: no postings to wait for).
        postings_behind: why the postings could not catch up with the corpus, when they could not.
    """

    def __init__(self, corpus: Corpus, lanes: Mapping[str, Any], config: Config,
                 delays_s: Mapping[str, float] | None = None, catch_up: Callable[[], None] | None = None,
                 postings_generation: Callable[[], int] | None = None,
                 postings_behind: Callable[[], str | None] | None = None) -> None:
        self.catalog, self.lanes, self.config = corpus, lanes, config
        self._catch_up, self._postings_generation = catch_up, postings_generation
        self._postings_behind = postings_behind
        #: The last count of :meth:`_pending_documents`: (the waiting ids, (their number, projects), count).
        self._pending_memo: tuple[Any, tuple[int, tuple[str, ...]], int] | None = None
        self._closed = threading.Event()
        self._pool = LanePools()
        self.retriever = Retriever(lanes, self._pool, delays_s or {}, self._closed)

    def close(self) -> None:
        """Stop taking work; injected lane delays still waiting end now (so a server exits promptly)."""
        self._closed.set()
        self._pool.shutdown()

    # ------------------------------------------------------------------ 1. plan

    def check_projects(self, projects: Sequence[str] | None) -> tuple[str, ...] | None:
        """The checked project scope (None: every project).

        The Inbox (:data:`sleuth.types.INBOX_PROJECT_ID`) always exists, empty until a record is
        filed without a project (`--project inbox` said "project not found" until then, while the
        note of every other search says to name it).

        Raises:
            ProjectNotFound: a project that does not exist.
        """
        if projects is None:
            return None
        known = {*self.catalog.roots(), INBOX_PROJECT_ID}
        missing = [p for p in projects if p not in known]
        if missing:
            raise ProjectNotFound(f"project not found: {', '.join(map(shown, missing))} (see `sleuth projects`)")
        return tuple(dict.fromkeys(projects))

    def scope(self, req: SearchRequest) -> tuple[tuple[str, ...] | None, int]:
        """``(projects, inbox documents left out)``: the checked projects of ``req`` (None: every
        project); with none named and ``req.inbox`` False, every project but the Inbox
        (:data:`sleuth.types.INBOX_PROJECT_ID`), and how many documents it holds.

        Raises:
            ProjectNotFound: a project that does not exist.
        """
        projects = self.check_projects(req.projects)
        if projects is not None or req.inbox or INBOX_PROJECT_ID not in (known := self.catalog.roots()):
            return projects, 0
        inbox = len(self.catalog.filter_documents([INBOX_PROJECT_ID]))
        return tuple(sorted(p for p in known if p != INBOX_PROJECT_ID)), inbox

    def _allowed_documents(self, req: SearchRequest, projects: tuple[str, ...] | None) -> frozenset[str] | None:
        """The documents the filters allow (None: no filter beyond the projects).

        Raises:
            QueryError: a kind outside :data:`sleuth.ingest.roles.FILTER_KINDS`.
        """
        f = req.filters
        unknown = [k for k in f.kinds if k not in FILTER_KINDS]
        if unknown:
            raise QueryError(f"filters.kinds: unknown kind {', '.join(map(repr, unknown))}; kinds: "
                             f"{', '.join(FILTER_KINDS)}")
        doc_kinds = [k for k in f.kinds if k != ENTITY_KIND]
        families = [x for x in f.families if x != "graph"]
        graph_only = (bool(f.families) and not families) or (bool(f.kinds) and not doc_kinds)
        timed = f.recorded_after_ns is not None or f.recorded_before_ns is not None
        if graph_only:  # entities only: the lanes retrieve evidence unfiltered by kind and family
            doc_kinds, families = [], []
            if not (f.roles or timed or f.paths or f.tags):
                return None
        elif not (doc_kinds or f.roles or families or timed or f.paths or f.tags):
            return None
        return frozenset(self.catalog.filter_documents(projects, doc_kinds, f.roles, families,
                                                       f.recorded_after_ns, f.recorded_before_ns,
                                                       f.paths, f.tags))

    @staticmethod
    def doc_filter(req: SearchRequest) -> DocFilter | None:
        """The document filters of ``req`` as row fields, for a lane that filters by them itself (a
        Milvus expression); None when there are none beyond the projects, or when a path or tag
        filter is asked for (not row fields: such a lane then gets the list of documents)."""
        f = req.filters
        if f.paths or f.tags:
            return None
        doc_kinds = [k for k in f.kinds if k != ENTITY_KIND]
        families = [x for x in f.families if x != "graph"]
        graph_only = (bool(f.families) and not families) or (bool(f.kinds) and not doc_kinds)
        timed = f.recorded_after_ns is not None or f.recorded_before_ns is not None
        if graph_only:  # entities only: the lanes retrieve evidence unfiltered by kind and family
            doc_kinds, families = [], []
            if not (f.roles or timed):
                return None
        elif not (doc_kinds or f.roles or families or timed):
            return None
        return DocFilter(tuple(doc_kinds), tuple(f.roles), tuple(families), f.recorded_after_ns, f.recorded_before_ns)

    # ------------------------------------------------------------------ the search

    def search(self, req: SearchRequest, state: RequestState | None = None) -> SearchResponse:
        """Answer ``req`` (every step of the module docstring).

        Args:
            req: the request.
            state: the request's entry in a request registry, when it is followed (status,
                cancel); its deadline is ``req.deadline_ms``.
        Raises:
            QueryError: a bad request (a question of a grouped request without searchable terms).
            ProjectNotFound: a requested project does not exist.
            ConfigError: an unknown lane.
            QueryTimeout: no retrieval lane answered before the deadline.
            RequestCancelled: the request was cancelled.
        """
        started = time.perf_counter()
        if state is not None:
            state.set_phase("scope")
        lanes = self.config.with_lanes(req.lanes).lanes
        projects, inbox_left_out = self.scope(req)
        doc_ids = self._allowed_documents(req, projects)
        primary = parse_query(req.query) if not req.questions else None
        if primary is not None and primary.is_empty and not any(not parse_query(v).is_empty for v in req.variants):
            return SearchResponse(query=req.query, terms=[], result_count=0, hits=[], lanes=[],
                                  took_ms=round((time.perf_counter() - started) * 1000, 3), notice=NO_SEARCHABLE_TERMS,
                                  questions=[QuestionAnswer(query=req.query, hits=[])], request_id=req.request_id)
        lanes = _with_exact_for_stop_word_phrases(req, primary, lanes)
        plan = build_plan(req, tuple(n for n in lanes if n in self.lanes), projects, doc_ids,
                          self.config.rank_window_step_docs, self.config.lane_depth_blocks_per_result,
                          req.offset)
        if doc_ids is not None:
            plan = dataclasses.replace(plan, doc_filter=self.doc_filter(req))
        if self._catch_up is not None:
            self._catch_up()
        rows = Rows(self.catalog)
        if state is not None:
            for name in plan.all_lanes:
                state.lanes[name] = "pending"
            state.set_phase("retrieval")

        def while_waiting(early: list[RankedList]) -> None:
            # While the vector lane runs: the rows and snippets of the other lanes' best documents,
            # most of which the fused ranking keeps (the rest are read after it).
            q = plan.questions[0]
            fused = fuse_lists(early, doc_of_node, self.config.fusion, self.config.fusion_weights(),
                               self.config.rrf_k, limit=q.window)
            for _doc, block in existing(fused, q.window, rows):
                if block is not None and req.snippets:
                    rows.snippet(block, q.highlight_terms, req.passage_max_chars)

        retrieval = self.retriever.run(plan, state, while_waiting)
        if plan.lanes and not retrieval.answers and retrieval.degraded:
            raise QueryTimeout(f"no retrieval lane answered within {req.deadline_ms} ms", "retrieval",
                               retrieval.degraded)
        graph = self._graph()
        superseded_by = graph.superseded_by if graph is not None else {}
        if state is not None:
            state.set_phase("fusion")
        past_deadline = functools.partial(_past_deadline, state, plan.deadline_s)
        cut_short: dict[str, str] = {}
        fused_dropped = self._fuse_all(plan, retrieval, superseded_by, state, past_deadline, cut_short)
        ranked = [fused for fused, _ in fused_dropped]
        if plan.graph_only:
            ranked = [[d for d in fused if is_entity_node(d.doc_id)] for fused in ranked]
        if retrieval.degraded and not any(ranked):
            late = sorted(retrieval.degraded)
            raise QueryTimeout(f"no retrieval lane answered within {req.deadline_ms} ms",
                               "retrieval" if set(late) - set(plan.expansion_lanes) else "graph", late)
        if state is not None:
            state.set_phase("summaries")
        bare = [0]  # document hits built past the deadline, without passages
        answers = [QuestionAnswer.of_fields(id=q.id, query=q.query, variants=[v.text for v in q.variants],
                                            hits=self._hits(q, fused, rows, req, plan, graph, superseded_by,
                                                            past_deadline, bare))
                   for q, fused in zip(plan.questions, ranked, strict=True)]
        cut_short.update(_summaries_cut_short(bare[0]))
        first = plan.questions[0].variants[0].parsed
        ran = [n for n in plan.all_lanes if n not in retrieval.degraded and n not in retrieval.unavailable
               and n not in retrieval.failed and n not in retrieval.skipped]
        word_ran, lexical_found = lexical_state([r for _, r in retrieval.lists(0)])
        postings_lag = functools.cache(self._postings_lag)  # read at most once a search
        # a scoped search's terms already seen in blocks it read are not looked up in its projects again
        matched = rows.matched_terms() if plan.projects is not None else frozenset()
        # filters that leave no document: the notice says so (_why_empty), not that no word occurs
        nothing_allowed = plan.doc_ids is not None and not plan.doc_ids
        word_notice = None if nothing_allowed else (
            semantic_notice(word_ran, lexical_found, len(answers[0].hits), fused_dropped[0][1],
                            phrases=bool(first.phrases), filtered=plan.doc_ids is not None)
            or self._absent_words(first, word_ran and lexical_found, postings_lag, plan.projects, matched))
        index_notes: list[str] = []
        response = SearchResponse(
            query=req.query if not req.questions else answers[0].query, word_notice=word_notice,
            terms=list(first.terms), phrases=[" ".join(p) for p in first.phrases],
            result_count=len(answers[0].hits), hits=answers[0].hits, lanes=ran,
            took_ms=round((time.perf_counter() - started) * 1000, 3),
            notice=_with_cut_short(
                self._notice(plan, retrieval, answers, word_notice, postings_lag, inbox_left_out, started,
                             ranked_documents=len(ranked[0]) if ranked else 0, index_notes=index_notes),
                req.deadline_ms, cut_short),
            unavailable_lanes=retrieval.unavailable, degraded_lanes=sorted(retrieval.degraded),
            failed_lanes=retrieval.failed, skipped_lanes=retrieval.skipped, questions=answers,
            projects=list(plan.projects) if plan.projects is not None else [], request_id=req.request_id,
            inbox_left_out=inbox_left_out,
            cut_short=cut_short,
        )
        response.index_notes.extend(index_notes)
        return response

    # ------------------------------------------------------------------ 3-5. fuse, expand, rerank

    def _graph(self) -> LinkGraph | None:
        lane: GraphLane | None = self.lanes.get("graph")
        return lane.graph() if lane is not None and self.catalog.has_blocks() else None

    def _fuse(self, plan: Plan, qi: int, q: PlannedQuestion, retrieval: Retrieval,
              superseded_by: Mapping[str, set[str]], state: RequestState | None) -> tuple[list[Any], int]:
        terms = frozenset(t for v in q.variants for t in v.parsed.terms)
        allowed = frozenset() if plan.graph_only else plan.doc_ids
        expand: dict[str, Expand] = {}
        for name in plan.expansion_lanes:
            lane = self.lanes[name]

            def run(seeds: Sequence[tuple[str, float]], k: int, lane: Any = lane, name: str = name) -> RankedList:
                return self._expand(lane, name, seeds, k, allowed, plan, terms, retrieval, state)

            expand[name] = run
        return fuse_question(q, retrieval.lists(qi), self.config.fusion, self.config.fusion_weights(),
                             self.config.rrf_k, expand, plan.depth, superseded_by, plan.all_lanes, plan.window)

    def _fuse_all(self, plan: Plan, retrieval: Retrieval, superseded_by: Mapping[str, set[str]],
                  state: RequestState | None, past_deadline: Callable[[], bool],
                  cut_short: dict[str, str]) -> list[tuple[list[Any], int]]:
        """Every question's :meth:`_fuse`, in order, while ``past_deadline()`` is false; the questions
        after it get :meth:`_fuse_primary` (their retrieved lists still rank them, without the
        slow steps), named in ``cut_short["fusion"]``."""
        fused_dropped: list[tuple[list[Any], int]] = []
        late: list[str] = []
        for qi, q in enumerate(plan.questions):
            if past_deadline():
                late.append(q.id or q.query[:40])
                fused_dropped.append(self._fuse_primary(plan, qi, q, retrieval, superseded_by))
            else:
                fused_dropped.append(self._fuse(plan, qi, q, retrieval, superseded_by, state))
        if late:
            cut_short["fusion"] = (f"{len(late)} of {len(plan.questions)} question(s) ranked from their primary"
                                   f" query's lanes alone, without variants, graph expansion or rerank:"
                                   f" {', '.join(late[:10])}{', ...' if len(late) > 10 else ''}")
        return fused_dropped

    def _fuse_primary(self, plan: Plan, qi: int, q: PlannedQuestion, retrieval: Retrieval,
                      superseded_by: Mapping[str, set[str]]) -> tuple[list[Any], int]:
        """Question ``q``'s ranking once the deadline has passed: the fusion of its primary query's
        retrieved lists only (no variant, no expansion lane, no rerank), so that it costs one
        question's plain fusion; returns what :meth:`_fuse` returns."""
        primary = dataclasses.replace(q, variants=q.variants[:1])
        lists = [(vi, ranked) for vi, ranked in retrieval.lists(qi) if vi == 0]
        return fuse_question(primary, lists, self.config.fusion, self.config.fusion_weights(), self.config.rrf_k,
                             {}, plan.depth, superseded_by, plan.all_lanes, plan.window)

    def _expand(self, lane: Any, name: str, seeds: Sequence[tuple[str, float]], k: int, allowed: frozenset[str] | None,
                plan: Plan, terms: frozenset[str], retrieval: Retrieval, state: RequestState | None) -> RankedList:
        """An expansion lane's list; with a deadline it runs on the pool and is degraded (an empty
        list) when it does not answer in the time left."""
        def task() -> RankedList:
            if state is not None:
                state.lanes[name] = "running"
            self.retriever._delay(state, name)  # the same fault injection as retrieval
            return lane.expand(seeds, k, allowed, plan.projects, plan.entities, terms)

        empty = RankedList(name, (), ())
        if name in retrieval.degraded or name in retrieval.failed:
            return empty
        if state is None or plan.deadline_s is None:
            ranked = task()
            if state is not None:
                state.lanes[name] = "done"
            return ranked
        future = self._pool.submit(name, task)
        while True:
            remaining = state.remaining_s()
            if remaining <= 0:
                state.lanes[name] = "settling"
                retrieval.degraded.append(name)
                return empty
            done, _ = wait([future], timeout=min(0.02, remaining))
            state.check()
            if done:
                break
        exc = future.exception()
        if exc is not None:
            if isinstance(exc, RequestCancelled):
                raise exc
            retrieval.failed[name] = f"{type(exc).__name__}: {exc}"
            state.lanes[name] = "failed"
            return empty
        state.lanes[name] = "done"
        return future.result()

    # ------------------------------------------------------------------ 6. results

    def _hits(self, q: PlannedQuestion, fused: list[Any], rows: Rows, req: SearchRequest, plan: Plan,
              graph: LinkGraph | None, superseded_by: Mapping[str, set[str]],
              past_deadline: Callable[[], bool] = lambda: False, bare: list[int] | None = None) -> list[Hit]:
        """Question ``q``'s hits from its ranking ``fused``: the documents of its page that exist now,
        with passages and snippets (``req.snippets``) while ``past_deadline()`` is false; those built
        after it have none (reading and cutting passages is the slow part) and are counted in
        ``bare[0]``."""
        known = graph.entities if graph is not None and plan.entities else {}
        keep = {d.doc_id: False for d in fused if is_entity_node(d.doc_id) and d.doc_id not in known}
        window = existing(fused, q.window, rows, keep)[q.offset:]
        titles: dict[str, str] = {}
        if graph is not None and any(block is None for _, block in window):
            mentioning = [m for d, block in window if block is None for m in graph.entities[d.doc_id].mentioned_by[:8]]
            titles = {doc.doc_id: doc.title for doc in self.catalog.documents(list(dict.fromkeys(mentioning))).values()}
        hits: list[Hit] = []
        for d, block in window:
            rank = q.offset + len(hits) + 1
            if block is None:
                assert graph is not None
                hits.append(entity_hit(rank, d, graph, titles, req.explain))
            else:
                snippets = req.snippets
                if snippets and past_deadline():
                    snippets = False
                    if bare is not None:
                        bare[0] += 1
                hits.append(document_hit(rank, d, block, rows, q.highlight_terms, req.passages, req.passage_max_chars,
                                         snippets, req.explain, superseded_by))
        if req.details:
            add_details(hits, rows)
        return hits

    # ------------------------------------------------------------------ notices

    def _postings_lag(self) -> bool:
        """Whether the postings reflect an older generation than the catalog (an indexing run in
        progress, or postings that could not be written)."""
        return self._postings_generation is not None and self._postings_generation() < self.catalog.generation()

    def _absent_words(self, first: ParsedQuery, words_found: bool, postings_lag: Callable[[], bool],
                      projects: Sequence[str] | None = None, matched: frozenset[str] = frozenset()) -> str | None:
        """The notice naming the words of the query ``first`` that no indexed document (of
        ``projects``, when given: the searched ones, so that nothing is told of the others) holds, when
        a word lane found others (``words_found``) and the postings are not behind the catalog
        (``postings_lag()``: a term of the documents they do not hold yet would be called absent);
        else None. ``matched``: terms found in blocks this search read (:meth:`Rows.matched_terms`:
        held in the searched projects, not looked up again)."""
        if not words_found or postings_lag():
            return None
        return absent_words_notice(first.text, self._absent_terms(first.terms, projects, matched))

    def _absent_terms(self, terms: Sequence[str], projects: Sequence[str] | None = None,
                      matched: frozenset[str] = frozenset()) -> list[str]:
        """The ``terms`` no block of the postings holds (one term-dictionary lookup each), within
        ``projects`` when given (None: every project; see :meth:`Postings.absent_terms`; terms in
        ``matched`` are held there); none when no postings lane is loaded."""
        if not terms:
            return []
        postings = next((lane.postings for name in POSTINGS_LANES if (lane := self.lanes.get(name)) is not None
                         and hasattr(lane, "postings")), None)
        return postings.absent_terms(terms, projects, matched) if postings is not None else []

    def _notice(self, plan: Plan, retrieval: Retrieval, answers: list[QuestionAnswer],
                word_notice: str | None, postings_lag: Callable[[], bool], inbox_left_out: int = 0,
                started: float | None = None, ranked_documents: int = 0,
                index_notes: list[str] | None = None) -> str | None:
        """What the reader should know: why the answer is empty (a page past the last of the first
        question's ``ranked_documents`` results says so), the Inbox left out (its
        ``inbox_left_out`` documents), an indexing run in progress (``postings_lag()``), documents
        the vector lane does not see yet, a Milvus sync this search waited for (one that ended after
        ``started``, a ``time.perf_counter()``). The notes about the index as a whole (an indexing
        run, postings not written, a Milvus sync) are also appended to ``index_notes``."""
        index_notes = [] if index_notes is None else index_notes
        notes: list[str] = []
        if word_notice:
            notes.append(word_notice)
        elif not any(a.hits for a in answers):
            first = plan.questions[0]
            notes.append(f"this page is past the last result: the query has {ranked_documents:,} result(s),"
                         f" and the page starts after {first.offset:,}"
                         if first.offset and 0 < ranked_documents <= first.offset
                         else self._why_empty(plan, retrieval))
        if inbox_left_out:
            notes.append(inbox_note(inbox_left_out))
        vector = self.lanes.get("vector")
        nothing_allowed = plan.doc_ids is not None and not plan.doc_ids
        # Documents the vector lane does not see yet, counted among those the search could return: none
        # to count when the filters allow none (the vector lane would find nothing there either).
        pending = (self._pending_documents(vector, plan.projects, plan.doc_ids)
                   if "vector" in retrieval.answers and vector is not None and not nothing_allowed else 0)
        if set(plan.lanes) & POSTINGS_LANES and postings_lag():
            behind = self._postings_behind() if self._postings_behind is not None else None
            index_notes.append(f"the bm25, index, rm3 and exact lanes answer from the index as it was before the last"
                         f" indexing run(s), whose postings could not be written: {behind}" if behind else
                         "an indexing run is in progress: the bm25, index, rm3 and exact lanes see its documents"
                         " only when it ends (" + ("the tfidf lane sees them already" if pending else
                                                   "the tfidf and vector lanes see them already") + ")")
            notes.append(index_notes[-1])
        rewritten = [name for name in plan.lanes if name in retrieval.answers
                     and getattr(self.lanes.get(name), "rows_being_rewritten", lambda: False)()]
        if rewritten:
            index_notes.append(f"a Milvus sync is in progress (or was stopped mid-way): the {', '.join(rewritten)}"
                               f" lane{'s' if len(rewritten) > 1 else ''} answer from Milvus as the sync before it"
                               " left it, with the documents this one has reached already updated, until it ends"
                               " (the next `sleuth index` finishes it)")
            notes.append(index_notes[-1])
        synced = [took for name in plan.all_lanes if started is not None
                  and (took := getattr(self.lanes.get(name), "synced_since", lambda _s: None)(started)) is not None]
        if synced:
            index_notes.append(f"Milvus was brought up to the catalog before this search answered (a sync of"
                               f" {max(synced):.1f} s: Milvus had been emptied, replaced or left behind)")
            notes.append(index_notes[-1])
        if pending:
            running = getattr(vector, "embedding_running", lambda: False)()
            notes.append(f"the vector lane does not see {pending:,} document(s) yet: "
                         + ("embedding is in progress" if running else "`sleuth embed` embeds them"))
        return "; ".join(notes) or None

    def _pending_documents(self, vector: Any, projects: Sequence[str] | None,
                           doc_ids: frozenset[str] | None = None) -> int:
        """How many documents of ``projects`` (None: of every project) that the filters allow
        (``doc_ids``; None: no document filter) the vector lane does not see yet. A search limited
        to some projects counts theirs only: the count of the whole index would tell a caller
        limited to them how much other projects hold or are indexing. Reads the waiting documents'
        rows (no text) once per set of waiting documents and projects."""
        if doc_ids is not None:  # the filters' documents are of the searched projects already
            return len(doc_ids.intersection(vector.pending_doc_ids()))
        if projects is None or not vector.pending_documents():
            return int(vector.pending_documents())
        ids = vector.pending_doc_ids()
        memo = self._pending_memo  # holds the ids it counted, so their identity is not reused
        if memo is not None and memo[0] is ids and memo[1] == (len(ids), tuple(projects)):
            return memo[2]
        wanted = set(projects)
        count = sum(1 for doc in self.catalog.documents(sorted(ids)).values()
                    if getattr(doc, "project_id", None) in wanted)
        self._pending_memo = (ids, (len(ids), tuple(projects)), count)
        return count

    @staticmethod
    def _why_empty(plan: Plan, retrieval: Retrieval) -> str:
        """Why an answer is empty, in one sentence for the reader."""
        if not plan.lanes and plan.expansion_lanes:
            return ("the graph lane expands from what the other lanes retrieve; with the graph lane alone "
                    "there is nothing to expand from")
        not_run = {**retrieval.unavailable, **retrieval.skipped}
        ran = [n for n in plan.lanes if n not in not_run]
        if not ran and retrieval.skipped:
            return next(iter(retrieval.skipped.values()))
        if ran and all(n in retrieval.failed for n in ran):  # nothing answered: not "no document matches"
            return (f"the {', '.join(ran)} lane{'s' if len(ran) > 1 else ''} failed, so nothing was searched"
                    f" ({ran[0]}: {retrieval.failed[ran[0]]})")
        if plan.doc_ids is not None and not plan.doc_ids and not plan.graph_only:
            return "no document matches the filters"
        if plan.graph_only:
            return "no graph entity is linked from the documents that match the query"
        return "no document matches the query in the searched projects"


def _past_deadline(state: RequestState | None, deadline_s: float | None) -> bool:
    """Whether the followed request ``state`` with a deadline (``deadline_s``, None: none) is past it."""
    return state is not None and deadline_s is not None and state.remaining_s() <= 0


def _summaries_cut_short(bare: int) -> dict[str, str]:
    """``{"summaries": what was left out}`` when ``bare`` document hits were built without passages
    past the deadline; else empty."""
    if not bare:
        return {}
    return {"summaries": f"{bare} result(s) returned without passages or snippets"
                         " (the deadline passed before they were read)"}


def _with_cut_short(notice: str | None, deadline_ms: int | None, cut_short: Mapping[str, str]) -> str | None:
    """``notice`` followed by a sentence per phase the deadline (``deadline_ms``) cut short
    (``cut_short``: phase → what was left out); None when both are empty."""
    notes = [notice] if notice else []
    notes += [f"the deadline of {deadline_ms} ms cut the {phase} short: {what}" for phase, what in cut_short.items()]
    return "; ".join(notes) or None


def _with_exact_for_stop_word_phrases(req: SearchRequest, primary: ParsedQuery | None,
                                      lanes: tuple[str, ...]) -> tuple[str, ...]:
    """``lanes`` with the exact lane added when the caller chose none and the query is quoted
    phrases of stop words only: no word lane has anything to look up, and the vector lane's nearest
    blocks may all be under its similarity floor; the exact lane matches the phrases verbatim."""
    if (req.lanes is None and primary is not None and primary.phrases and not primary.terms
            and not any(parse_query(v).terms for v in req.variants) and "exact" not in lanes):
        return (*lanes, "exact")
    return lanes
