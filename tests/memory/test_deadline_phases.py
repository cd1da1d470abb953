"""project_memory_search's ``response_deadline_ms`` holds after retrieval too: a deadline that passes
during fusion or while summaries are built returns the answer so far, marked partial (meta.partial,
meta.cut_short), instead of finishing every phase. The slow phase is simulated by spending the
request's whole deadline inside it (its start moved an hour back): no wall-clock wait, no timing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import sleuth.pipeline as pipeline
from sleuth.engine import Engine
from sleuth.memory.arguments import parse_memory_request
from sleuth.memory.search import MemorySearch
from sleuth.pipeline.requests import COMPLETED, DEGRADED, RequestRegistry

#: A deadline no retrieval of this tiny index comes near, even with both cores busy.
ROOMY_DEADLINE_MS = 120_000
TOPICS = ("lighthouse keeper", "harbour pilot", "tide table")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("docs")
    for topic in TOPICS:
        for i in range(4):
            (root / f"{topic.replace(' ', '_')}_{i}.md").write_text(
                f"# {topic} note {i}\n\nThe {topic} wrote entry {i} about the {topic} and the coast.\n",
                encoding="utf-8")
    eng = Engine(tmp_path_factory.mktemp("idx") / "idx")
    eng.index([root], project="demo", embed=False)
    yield eng
    eng.close()


def spend_deadline_after_first(registry: RequestRegistry, request_id: str,
                               step: Callable[..., Any]) -> Callable[..., Any]:
    """``step`` whose first call, once done, uses up request ``request_id``'s deadline (as a slow
    step would); the calls are counted in the wrapper's ``calls``."""
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        out = step(*args, **kwargs)
        wrapped.calls += 1  # type: ignore[attr-defined]
        if wrapped.calls == 1:  # type: ignore[attr-defined]
            registry.get(request_id).started -= 3600.0
        return out
    wrapped.calls = 0  # type: ignore[attr-defined]
    return wrapped


def test_deadline_passing_in_fusion_ranks_the_rest_from_their_primary_query(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = RequestRegistry()
    fuse = spend_deadline_after_first(registry, "late-fusion", pipeline.fuse_question)
    monkeypatch.setattr(pipeline, "fuse_question", fuse)
    req = parse_memory_request({
        "queries": [{"id": f"q{i}", "query": topic, "query_variants": [f"{topic}s", f"the {topic}"]}
                    for i, topic in enumerate(TOPICS)],
        "project_id": "demo", "response_deadline_ms": ROOMY_DEADLINE_MS, "request_id": "late-fusion"})
    out = MemorySearch(engine, registry).search(req)
    meta = out["meta"]
    assert meta["partial"] is True
    assert meta["cut_short"]["fusion"] == ("2 of 3 question(s) ranked from their primary query's lanes alone,"
                                           " without variants, graph expansion or rerank: q1, q2")
    assert fuse.calls == 3  # type: ignore[attr-defined]  # each question fused once
    # every question still answers, from its own words
    for group, topic in zip(out["groups"], TOPICS, strict=True):
        assert group["result_count"] == 4
        assert all(r["title"].startswith(topic) and r["summary"] == [] for r in group["results"])
    # the summaries were built after the deadline too: none has passages
    assert meta["cut_short"]["summaries"] == ("12 result(s) returned without passages or snippets"
                                              " (the deadline passed before they were read)")
    assert registry.get("late-fusion").state == DEGRADED


def test_deadline_passing_in_summaries_returns_the_rest_without_passages(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = RequestRegistry()
    hit = spend_deadline_after_first(registry, "late-summaries", pipeline.document_hit)
    monkeypatch.setattr(pipeline, "document_hit", hit)
    req = parse_memory_request({"query": "lighthouse keeper", "project_id": "demo",
                                "response_deadline_ms": ROOMY_DEADLINE_MS, "request_id": "late-summaries"})
    out = MemorySearch(engine, registry).search(req)
    meta = out["meta"]
    assert meta["partial"] is True
    assert meta["cut_short"] == {"summaries": "3 result(s) returned without passages or snippets"
                                              " (the deadline passed before they were read)"}
    results = out["results"]
    assert len(results) == 4 and all(r["title"].startswith("lighthouse keeper") for r in results)
    assert "lighthouse" in results[0]["summary"][0]["text"].lower()
    assert [r["summary"] for r in results[1:]] == [[], [], []]


def test_a_search_within_its_deadline_is_not_partial(engine: Engine) -> None:
    registry = RequestRegistry()
    req = parse_memory_request({"query": "harbour pilot", "project_id": "demo",
                                "response_deadline_ms": ROOMY_DEADLINE_MS, "request_id": "in-time"})
    out = MemorySearch(engine, registry).search(req)
    assert "partial" not in out["meta"] and "cut_short" not in out["meta"]
    assert len(out["results"]) == 4 and all(r["summary"] for r in out["results"])
    assert registry.get("in-time").state == COMPLETED


def test_the_pipeline_says_what_the_deadline_cut_short(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = RequestRegistry()
    state = registry.start("engine-late", "tide table", ROOMY_DEADLINE_MS)
    monkeypatch.setattr(pipeline, "document_hit", spend_deadline_after_first(registry, "engine-late",
                                                                             pipeline.document_hit))
    resp = engine.search("tide table", state, deadline_ms=ROOMY_DEADLINE_MS, request_id="engine-late")
    assert [bool(h.passages) for h in resp.hits] == [True, False, False, False]
    assert list(resp.cut_short) == ["summaries"]
    assert resp.notice is not None and (f"the deadline of {ROOMY_DEADLINE_MS} ms cut the summaries short: 3 result(s)"
                                        in resp.notice)
