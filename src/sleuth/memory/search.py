"""``project_memory_search`` (seed 004) as a rendering of the one search pipeline.

1. The scope: ``project_id`` plus ``include_project_ids``, or every active project but the Inbox.
2. The checked arguments become a :class:`~sleuth.types.SearchRequest`: grouped ``queries`` become
   questions, ``filters`` the pipeline's filters, ``retrieval_lanes`` the lanes of those families,
   the deadline and the request id the request's.
3. :meth:`sleuth.engine.Engine.search` runs it (variants, lanes under the deadline, fusion, graph
   expansion, the primary-query rerank, supersession order, passages, freshness), followed in the
   request registry so that ``query_status`` / ``query_cancel`` reach it.
4. The answer is rendered as seed 004's results -- ``record_id``, ``revision_id``, ``body_handle``,
   summaries of the best passages with highlights fitted to the byte budget
   (:mod:`sleuth.pipeline.budget`) -- with ``meta`` naming lanes by their seed-004 family.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sleuth.errors import ProjectNotFound, QueryError, QueryTimeout, RequestCancelled, shown
from sleuth.ingest.roles import recorded_at_text
from sleuth.lanes import registry
from sleuth.memory.arguments import MemoryRequest
from sleuth.pipeline import NO_SEARCHABLE_TERMS
from sleuth.pipeline.budget import Candidate, Passage, default_budget_bytes, fit_to_budget
from sleuth.pipeline.requests import CANCELLED, COMPLETED, DEGRADED, FAILED, TIMED_OUT, RequestRegistry
from sleuth.types import INBOX_PROJECT_ID, Hit, Question, SearchFilters, SearchRequest, SearchResponse

if TYPE_CHECKING:
    from sleuth.engine import Engine
    from sleuth.mcp.access import Access

#: Passages offered per result before the budget decides (best blocks first), and their size.
PASSAGES_PER_RESULT = 3
PASSAGE_MAX_CHARS = 900
#: Default lanes the tool leaves out when no lanes are configured (``Config.lanes_set``). The
#: rm3 lane in its bm25 family lowered project_memory_search on SciFact (nDCG@10 0.7430 without it,
#: 0.7403 with it; Cranfield 0.4208 / 0.4224, CISI 0.4263 / 0.4272, NPL 0.5158 / 0.5158), and without it
#: the tool is higher on all four sets than before rm3 became a default lane (docs/EVAL.md, issue 14
#: fourth pass; ``bench/memory_eval.py``). Lanes set in ``config.toml`` or $SLEUTH_LANES are used as
#: they are, even when they are exactly the registry's defaults.
MEMORY_SKIPPED_DEFAULT_LANES = ("rm3",)


def families_of(lanes: Iterable[str]) -> list[str]:
    """The seed-004 families of ``lanes``, each once, in :func:`registry.families` order."""
    wanted = {registry.family_of(lane) for lane in lanes}
    return [f for f in registry.families() if f in wanted]


def result_fields(hit: Hit, qualified: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A hit as seed 004's result object, without its summary (the budget adds it). ``qualified``:
    projects with several roots, whose results also name their root (``root``: its label)."""
    if hit.family == "graph" and hit.kind == "entity":
        return {
            "rank": hit.rank, "record_id": f"entity:{hit.title}", "revision_id": "",
            "body_handle": f"entity:{hit.doc_id}",
            "project_id": hit.project, "title": hit.title, "path": "", "kind": "entity", "role": "other",
            "source_family": "graph", "recorded_at": None, "score": round(hit.score, 6), "lanes": ["graph"],
            "source_span": {"start": 0, "end": hit.source_length}, "source_length": hit.source_length,
            "index_freshness": "current", "mentioned_by": hit.mentioned_by,
        }
    fields: dict[str, Any] = {
        "rank": hit.rank, "record_id": hit.doc_id, "revision_id": hit.revision,
        "body_handle": f"body:{hit.doc_id}@{hit.revision}", "project_id": hit.project, "title": hit.title,
        "path": hit.path, **({"root": hit.root_label} if hit.project in qualified else {}),
        "location": hit.location, "kind": hit.kind, "role": hit.role, "source_family": hit.family,
        "recorded_at": recorded_at_text(hit.recorded_ns, from_file=bool(hit.root)), "score": round(hit.score, 6),
        "lanes": families_of(hit.sources),
        "source_span": {"start": 0, "end": 0}, "source_length": hit.source_length,
        "index_freshness": hit.freshness or "current",
    }
    if hit.semantic_only:
        fields["semantic_only"] = True
    if hit.superseded_by:
        fields["superseded_by"] = hit.superseded_by
    if hit.moved_above:  # it ranks above them because it supersedes them (its score raised to theirs)
        fields["moved_above"] = hit.moved_above
    return fields


def _candidate(hit: Hit, qualified: frozenset[str]) -> Candidate:
    passages = [Passage(p.text, p.start, p.end, tuple(p.highlights), tuple(p.heading_path)) for p in hit.passages]
    return Candidate(result_fields(hit, qualified), passages, hit.body_chars)


class MemorySearch:
    """Answers ``project_memory_search`` requests over one engine.

    Args:
        engine: the open index.
        registry: running requests (shared with ``query_status`` / ``query_cancel``).
        allowed_projects: the projects a caller may search (None: all); others count as unknown.
        access: the session's project access (:class:`sleuth.mcp.access.Access`), read at each
            request instead of ``allowed_projects`` (over HTTP it depends on the caller).
    """

    def __init__(self, engine: Engine, registry: RequestRegistry | None = None,
                 allowed_projects: set[str] | None = None, access: Access | None = None) -> None:
        self.engine = engine
        self._allowed_projects = None if allowed_projects is None else frozenset(allowed_projects)
        self.access = access
        self.registry = registry or RequestRegistry()

    @property
    def allowed_projects(self) -> frozenset[str] | None:
        """The projects the current caller may search (None: all)."""
        return self.access.allowed if self.access is not None else self._allowed_projects

    def close(self) -> None:
        """Nothing of its own to release: the engine's pipeline holds the threads."""

    def scope(self, req: MemoryRequest) -> tuple[str, ...]:
        """The project ids searched. Raises ProjectNotFound naming unknown ids."""
        allowed = self.allowed_projects
        projects = {str(p["project_id"]): p for p in self.engine.catalog.projects()
                    if allowed is None or p["project_id"] in allowed}
        if req.all_projects:
            return tuple(sorted(p for p, info in projects.items()
                                if p != INBOX_PROJECT_ID and int(str(info.get("documents", 0) or 0)) > 0))
        wanted = [p for p in (req.project_id, *req.include_project_ids) if p]
        missing = [p for p in wanted if p not in projects]
        if missing:
            raise ProjectNotFound(f"project not found: {', '.join(map(shown, missing))}"
                                  " (see get_projects or `sleuth projects`)")
        return tuple(wanted)

    def request(self, req: MemoryRequest, projects: tuple[str, ...], request_id: str) -> SearchRequest:
        """The pipeline's request for ``req`` over ``projects``."""
        f = req.filters
        defaults = self.engine.config.lanes
        if not self.engine.config.lanes_set and defaults == registry.default_lanes():
            defaults = tuple(n for n in defaults if n not in MEMORY_SKIPPED_DEFAULT_LANES)
        lanes = list(registry.lanes_for_families(f.lanes, defaults))
        questions = [Question(id=q.id, query=q.query, limit=q.limit, variants=list(q.variants)) for q in req.questions]
        return SearchRequest(
            query="" if req.grouped else questions[0].query,
            variants=[] if req.grouped else questions[0].variants,
            questions=questions if req.grouped else None,
            limit=questions[0].limit, projects=list(projects), lanes=lanes,
            filters=SearchFilters(kinds=list(f.kinds), roles=list(f.roles), families=list(f.source_families),
                                  recorded_after_ns=f.recorded_after_ns, recorded_before_ns=f.recorded_before_ns),
            deadline_ms=req.deadline_ms, passages=PASSAGES_PER_RESULT, passage_max_chars=PASSAGE_MAX_CHARS,
            details=True, request_id=request_id,
        )

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
            state.set_phase("scope")
            projects = self.scope(req)
            resp = self.engine.search(self.request(req, projects, state.request_id), state)
            if not req.grouped and resp.notice == NO_SEARCHABLE_TERMS and not resp.terms:
                raise QueryError(f"the query has no searchable terms (only stop words, punctuation or blanks): "
                                 f"{req.questions[0].query!r}")
        except RequestCancelled as exc:
            self.registry.finish(state, CANCELLED)
            return {"error": {"code": exc.code, "message": str(exc), "request_id": state.request_id,
                              "cancel_reason": exc.reason, "phase": exc.phase},
                    "meta": {"request_id": state.request_id,
                             "lanes": families_of(lane for lane, st in state.lanes.items() if st == "done"),
                             "lane_states": dict(state.lanes)},
                    "elapsed_ms": state.elapsed_ms()}
        except QueryTimeout as exc:
            self.registry.finish(state, TIMED_OUT)
            return {"error": {"code": exc.code, "request_id": state.request_id, "phase": exc.phase,
                              "message": str(exc)},
                    "meta": {"request_id": state.request_id, "degraded_lanes": sorted(families_of(exc.lanes)),
                             "lanes": families_of(lane for lane, st in state.lanes.items() if st == "done"),
                             "lane_states": dict(state.lanes)},
                    "elapsed_ms": state.elapsed_ms()}
        except BaseException as exc:
            self.registry.finish(state, FAILED, str(exc))
            raise
        qualified = frozenset(self.engine.multi_root_projects())
        # A remote caller limited to some projects is told of its own search, not of the index as a
        # whole (another user's indexing run, postings not written and why, a Milvus sync).
        remote = self.access is not None and self.access.per_caller
        payload = self.render(req, resp, qualified,
                              scoped_notice(resp.notice, resp.index_notes) if remote else resp.notice)
        self.registry.finish(state, DEGRADED if resp.degraded_lanes or resp.cut_short else COMPLETED)
        payload["elapsed_ms"] = state.elapsed_ms()
        return payload

    @staticmethod
    def render(req: MemoryRequest, resp: SearchResponse, qualified: frozenset[str] = frozenset(),
               notice: str | None = None) -> dict[str, Any]:
        """Seed 004's payload for ``resp``: results (or groups) fitted to the byte budget, and meta
        (``qualified``: projects with several roots, see :func:`result_fields`; ``notice``: the
        notes the caller is shown, ``resp.notice`` or a part of it)."""
        groups = [[_candidate(h, qualified) for h in answer.hits] for answer in resp.questions]
        families = {c.fields["source_family"] for g in groups for c in g}
        unique = len({c.fields["record_id"] for g in groups for c in g})
        budget = req.budget_bytes or default_budget_bytes(unique, len(groups), len(families))
        rendered, report = fit_to_budget(groups, budget)
        degraded = sorted(families_of(resp.degraded_lanes))
        meta: dict[str, Any] = {
            "request_id": resp.request_id,
            "projects": resp.projects,
            "lanes": [f for f in families_of(resp.lanes) if f not in degraded],
            "degraded_lanes": degraded,
            "unavailable_lanes": {registry.family_of(k): v for k, v in resp.unavailable_lanes.items()},
            "skipped_lanes": {registry.family_of(k): v for k, v in resp.skipped_lanes.items()},
            "failed_lanes": {registry.family_of(k): v for k, v in resp.failed_lanes.items()},
            "variants": {a.id or "query": a.variants for a in resp.questions} if req.grouped
            else list(resp.questions[0].variants),
            "filters_applied": req.filters.narrows_documents or req.filters.lanes != registry.families(),
            "source_families": sorted(families),
            "response_budget_bytes": budget, "result_bytes": report.result_bytes,
            "budget_chosen_by": "caller" if req.budget_bytes else "adaptive",
            "summary_passages_per_result": report.passages_per_result,
            "summary_passage_max_chars": report.passage_max_chars,
            "omitted_results": report.omitted_results,
        }
        if resp.cut_short:  # the deadline passed after retrieval: a partial answer, said so
            meta["partial"] = True
            meta["cut_short"] = dict(resp.cut_short)
        if notice:  # the notes, as the other surfaces give them: why the answer is empty, words no
            meta["notice"] = notice  # document holds, documents the vector lane does not see yet...
        out: dict[str, Any] = {"meta": meta}
        if req.grouped:
            out["groups"] = [{"id": a.id, "query": a.query, "result_count": len(g), "results": g}
                             for a, g in zip(resp.questions, rendered, strict=True)]
        else:
            out["query"] = resp.questions[0].query
            out["result_count"] = len(rendered[0])
            out["results"] = rendered[0]
        return out


def scoped_notice(notice: str | None, index_notes: Sequence[str]) -> str | None:
    """``notice`` (notes joined by ``"; "``) without the notes of ``index_notes``; None when nothing
    is left. Pure."""
    if notice is None:
        return None
    for note in index_notes:
        notice = notice.replace(f"; {note}", "").replace(f"{note}; ", "").replace(note, "")
    return notice or None

