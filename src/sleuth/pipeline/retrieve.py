"""Step 2 of a search: every retrieval lane runs every variant of every question, in parallel, under
the deadline.

Each lane is one task over all the plan's variants (the vector lane embeds them in one batch first).
Without a deadline one lane runs on a pool thread -- the vector lane when asked for (it embeds on
one core; running the others in parallel too would take cycles from the embedding, the longest part
of a search), else the tfidf lane (numpy, mostly outside the GIL) -- and the others one after the
other in the calling thread, which then hands their lists to ``while_waiting`` (the results step
reads their best documents' rows meanwhile). With a deadline every lane runs on the pool and the
calling thread waits for them until a little before the deadline: a lane still running then is
*degraded* -- left out of the fusion, named in the answer, and left to settle on its thread (its
state stays visible to ``query_status``). Cancelling the request stops the lanes at their next
check.

Each lane has its own threads (:class:`LanePools`, :data:`LANE_THREADS` per lane): a lane that hangs
(a stalled disk, a Milvus server that stops answering, an injected delay) holds only its own
threads, so the other lanes of every search keep answering and the hung one is degraded at the
deadline, instead of every lane of every later search queueing behind it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sleuth.errors import QueryError, RequestCancelled
from sleuth.lanes import registry
from sleuth.lanes.base import Lane, LaneQuery, LaneSkipped
from sleuth.pipeline.plan import Plan
from sleuth.pipeline.requests import RequestState
from sleuth.types import RankedList

T = TypeVar("T")

#: Part of the deadline kept for expansion, fusion and results after retrieval (at most
#: ``FINISH_RESERVE_MAX_S`` seconds).
FINISH_RESERVE_FRACTION = 0.2
FINISH_RESERVE_MAX_S = 0.25
#: How often the waiting thread looks at its lanes and at the request's cancel flag, in seconds.
POLL_INTERVAL_S = 0.02
#: How often an injected lane delay looks whether the searcher was closed, in seconds.
DELAY_POLL_S = 0.1
#: Why a lane did not run: it has nothing to look for in any variant (the exact lane without a
#: quoted phrase or a code identifier).
NOTHING_TO_MATCH = {"exact": "nothing to match verbatim: the exact lane matches quoted phrases and code identifiers"}
#: Fault injection for tests and drills: ``lane=ms,lane=ms`` delays those lanes (a lane name or a
#: family such as ``bm25``, which delays every lane of the family).
LANE_DELAY_ENV = "SLEUTH_FAULT_LANE_DELAY_MS"
#: Threads each lane's tasks run on, per searcher (one pool per lane, threads made on demand).
LANE_THREADS = 8

#: (question index, variant index) → that variant's list from one lane.
LaneLists = dict[tuple[int, int], RankedList]


def lane_delays_from_env(value: str | None) -> dict[str, float]:
    """Parse ``SLEUTH_FAULT_LANE_DELAY_MS`` (``graph=2500,vector=100``) into seconds per lane or family.

    Raises:
        QueryError: a malformed entry or a name that is neither a lane nor a family.
    """
    known = {*registry.lane_names(), *registry.families()}
    delays: dict[str, float] = {}
    for item in (value or "").split(","):
        if not item.strip():
            continue
        lane, _, ms = item.partition("=")
        if lane.strip() not in known or not ms.strip().isdigit():
            raise QueryError(f"{LANE_DELAY_ENV}: expected lane=milliseconds with lane in "
                             f"{', '.join(sorted(known))}, got {item!r}")
        delays[lane.strip()] = int(ms) / 1000
    return delays


class LanePools:
    """One thread pool per lane name (at most :data:`LANE_THREADS` threads each, made on demand),
    so a lane whose tasks hang never takes the threads of another lane."""

    def __init__(self) -> None:
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, lane: str, fn: Callable[..., T], *args: Any) -> Future[T]:
        """``fn(*args)`` on ``lane``'s threads.

        Raises:
            RuntimeError: the pools were shut down (as ``ThreadPoolExecutor.submit``).
        """
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new lane tasks after shutdown")
            pool = self._pools.get(lane)
            if pool is None:
                pool = self._pools[lane] = ThreadPoolExecutor(max_workers=LANE_THREADS,
                                                              thread_name_prefix=f"sleuth-lane-{lane}")
        return pool.submit(fn, *args)

    def shutdown(self) -> None:
        """Take no more tasks; queued tasks are cancelled, running ones end on their own."""
        with self._lock:
            self._closed = True
            pools = list(self._pools.values())
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)


@dataclass
class Retrieval:
    """What the retrieval lanes answered: lists by lane, and the lanes that did not answer."""

    answers: dict[str, LaneLists] = field(default_factory=dict)
    degraded: list[str] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def lists(self, question: int) -> list[tuple[int, RankedList]]:
        """``(variant index, list)`` of every lane's answer to one question, lanes in plan order."""
        return [(vi, ranked) for lists in self.answers.values() for (qi, vi), ranked in lists.items()
                if qi == question]


class _Skipped(LaneSkipped):
    """The lane has nothing to look for in the query (decided before it runs)."""


class _Unavailable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Retriever:
    """Runs a plan's retrieval lanes (see the module docstring).

    Args:
        lanes: the built lanes by name.
        pool: the lanes' threads.
        delays_s: fault injection, seconds each lane (or family) waits before running.
        closed: set when the searcher closes; injected delays end then.
    """

    def __init__(self, lanes: Mapping[str, Any], pool: LanePools, delays_s: Mapping[str, float],
                 closed: threading.Event) -> None:
        self.lanes, self.pool, self.delays_s, self.closed = lanes, pool, dict(delays_s), closed

    def _delay(self, state: RequestState | None, lane: str) -> None:
        """The injected delay of ``lane``: ends early on a cancel (raising) or when the searcher closes."""
        seconds = self.delays_s.get(lane, self.delays_s.get(registry.family_of(lane), 0.0))
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0 and not self.closed.is_set():
            if state is None:
                self.closed.wait(min(left, DELAY_POLL_S))
            elif state.cancel_event.wait(min(left, DELAY_POLL_S)):
                state.check()

    def _task(self, name: str, plan: Plan, state: RequestState | None) -> LaneLists:
        """Lane ``name`` over every variant. Raises _Unavailable / _Skipped / RequestCancelled."""
        if state is not None:
            state.lanes[name] = "running"
        self._delay(state, name)
        lane: Lane = self.lanes[name]
        reason = lane.unavailable()
        if reason:
            raise _Unavailable(reason)
        todo = [(qi, vi, v.parsed) for qi, q in enumerate(plan.questions) for vi, v in enumerate(q.variants)
                if lane.applies(v.parsed)]
        if not todo:
            raise _Skipped(NOTHING_TO_MATCH.get(name, "nothing to look for in the query"))
        embed = getattr(lane, "embed_queries", None)
        if callable(embed):
            embed([parsed.text for _, _, parsed in todo])
        out: LaneLists = {}
        for qi, vi, parsed in todo:
            if state is not None:
                state.check()
            out[(qi, vi)] = lane.search(LaneQuery(parsed, plan.depth, plan.projects, plan.doc_ids, plan.doc_filter))
        return out

    def _record(self, result: Retrieval, name: str, future: Future[LaneLists], state: RequestState | None) -> None:
        exc = future.exception()
        status = "done"
        if isinstance(exc, RequestCancelled):
            raise exc
        if isinstance(exc, _Unavailable):
            result.unavailable[name], status = exc.reason, "unavailable"
        elif isinstance(exc, LaneSkipped):  # _Skipped, or the lane's own (a query it cannot answer)
            result.skipped[name], status = exc.reason, "skipped"
        elif exc is not None:
            result.failed[name], status = f"{type(exc).__name__}: {exc}", "failed"
        else:
            result.answers[name] = future.result()
        if state is not None:
            state.lanes[name] = status

    def run(self, plan: Plan, state: RequestState | None = None,
            while_waiting: Callable[[list[RankedList]], None] | None = None) -> Retrieval:
        """Every retrieval lane's answer (see the module docstring); answers keep ``plan.lanes`` order.

        Raises:
            RequestCancelled: the request was cancelled meanwhile.
        """
        result = Retrieval()
        lanes = list(plan.lanes)
        if not lanes:
            return result
        if plan.deadline_s is None and state is None:
            self._run_beside(plan, lanes, result, while_waiting)
        else:
            self._run_with_deadline(plan, lanes, result, state)
        result.answers = {n: result.answers[n] for n in lanes if n in result.answers}
        return result

    def _run_beside(self, plan: Plan, lanes: list[str], result: Retrieval,
                    while_waiting: Callable[[list[RankedList]], None] | None) -> None:
        beside = "vector" if "vector" in lanes else "tfidf" if "tfidf" in lanes else None
        futures: dict[str, Future[LaneLists]] = {}
        if beside is not None and len(lanes) > 1:
            futures[beside] = self.pool.submit(beside, self._task, beside, plan, None)
        for name in lanes:
            if name in futures:
                continue
            done: Future[LaneLists] = Future()
            try:
                done.set_result(self._task(name, plan, None))
            except Exception as exc:  # noqa: BLE001 - recorded as the lane's failure
                done.set_exception(exc)
            self._record(result, name, done, None)
        if beside in futures:
            future = futures[beside]
            if while_waiting is not None and beside == "vector" and not future.done():
                early = [ranked for lists in result.answers.values() for ranked in lists.values()]
                if early:
                    while_waiting(early)
            wait([future])
            self._record(result, beside, future, None)

    def _run_with_deadline(self, plan: Plan, lanes: list[str], result: Retrieval, state: RequestState | None) -> None:
        started = time.monotonic()
        futures = {self.pool.submit(name, self._task, name, plan, state): name for name in lanes}
        for future, name in futures.items():
            _settle(state, name, future)
        pending = set(futures)
        deadline = None
        if plan.deadline_s is not None:
            deadline = started + plan.deadline_s - min(FINISH_RESERVE_MAX_S, plan.deadline_s * FINISH_RESERVE_FRACTION)
        while pending:
            remaining = POLL_INTERVAL_S if deadline is None else min(POLL_INTERVAL_S, deadline - time.monotonic())
            if remaining <= 0:
                break
            done, pending = wait(pending, timeout=remaining, return_when=FIRST_COMPLETED)
            for future in done:
                self._record(result, futures[future], future, state)
            if state is not None:
                state.check()
        result.degraded = sorted(futures[f] for f in pending)
        if state is not None:
            for future in pending:
                state.lanes[futures[future]] = "settling"
                if future.done():  # it ended between the last look and now: the callback saw "running"
                    state.lanes[futures[future]] = "settled"


def _settle(state: RequestState | None, name: str, future: Future[Any]) -> None:
    """Record how a lane ended once it settles, also after the answer went out."""
    if state is None:
        return

    def done(fut: Future[Any]) -> None:
        exc = fut.exception()
        if isinstance(exc, RequestCancelled):
            state.lanes[name] = "cancelled"
        elif state.lanes.get(name) == "settling":
            state.lanes[name] = "failed" if exc and not isinstance(exc, _Unavailable | LaneSkipped) else "settled"

    future.add_done_callback(done)
