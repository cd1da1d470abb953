"""Running search requests: their ids, phases, lanes, deadlines and cancellation.

A request registers under a caller-chosen ``request_id`` (or a generated one) while it runs, so
that ``query_status`` and ``query_cancel`` -- other calls, possibly from other sessions -- can see
and stop it. Lanes that miss the deadline keep running in their threads until they settle; their
state stays visible (``settling``) in the status. Finished requests are remembered (the last
``FINISHED_REQUESTS_KEPT``) so a status call after the answer still says how it ended.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from sleuth.errors import QueryError, RequestCancelled, RequestNotFound, not_found

#: Finished requests whose final status stays queryable.
FINISHED_REQUESTS_KEPT = 512

#: Request states, as reported by ``query_status``.
RUNNING, COMPLETED, DEGRADED, TIMED_OUT, CANCELLED, FAILED = (
    "running", "completed", "completed_degraded", "timed_out", "cancelled", "failed")


__all__ = ["CANCELLED", "COMPLETED", "DEGRADED", "FAILED", "RUNNING", "TIMED_OUT", "RequestCancelled",
           "RequestNotFound", "RequestRegistry", "RequestState"]


@dataclass
class RequestState:
    """One request's live state; lanes map lane name → ``pending|running|done|failed|degraded|settling``."""

    request_id: str
    summary: str
    deadline_ms: int
    started: float = field(default_factory=time.monotonic)
    started_at: float = field(default_factory=time.time)
    state: str = RUNNING
    phase: str = "accepted"
    lanes: dict[str, str] = field(default_factory=dict)
    cancel_event: threading.Event = field(default_factory=threading.Event)
    cancel_reason: str | None = None
    cancel_phase: str | None = None
    finished: float | None = None
    error: str | None = None

    def elapsed_ms(self) -> float:
        end = self.finished if self.finished is not None else time.monotonic()
        return round((end - self.started) * 1000, 1)

    def remaining_s(self) -> float:
        """Seconds left before the deadline (negative once past)."""
        return self.started + self.deadline_ms / 1000 - time.monotonic()

    def set_phase(self, phase: str) -> None:
        """Enter ``phase``; raises RequestCancelled if a cancel arrived before."""
        self.check()
        self.phase = phase

    def check(self) -> None:
        """Raise RequestCancelled when a cancel was requested."""
        if self.cancel_event.is_set():
            raise RequestCancelled(self.cancel_reason or "cancelled", self.cancel_phase or self.phase)

    def snapshot(self) -> dict[str, Any]:
        """The status as ``query_status`` reports it (JSON-ready)."""
        out: dict[str, Any] = {
            "request_id": self.request_id,
            "state": self.state,
            "phase": self.phase,
            "query": self.summary,
            "elapsed_ms": self.elapsed_ms(),
            "deadline_ms": self.deadline_ms,
            "lanes": dict(self.lanes),
        }
        if self.cancel_reason is not None:
            out["cancel_reason"] = self.cancel_reason
            out["cancel_phase"] = self.cancel_phase
        if self.error:
            out["error"] = self.error
        return out


#: The requests started for the current session (a list the session made; None: not tracked).
#: :meth:`RequestRegistry.start` adds each new request to it (context variables reach worker
#: threads), so a session that ends can cancel what it left running (:func:`cancel_all`).
SESSION_REQUESTS: ContextVar[list[RequestState] | None] = ContextVar("sleuth_session_requests", default=None)
#: Past this many tracked requests, a session's finished ones are dropped from its list.
SESSION_REQUESTS_PRUNE_AT = 64


def cancel_all(states: list[RequestState], reason: str) -> int:
    """Ask every still-running request of ``states`` to stop with ``reason``; returns how many were."""
    stopped = 0
    for state in list(states):
        if state.finished is None and not state.cancel_event.is_set():
            state.cancel_reason, state.cancel_phase = reason, state.phase
            state.cancel_event.set()
            stopped += 1
    return stopped


class RequestRegistry:
    """Thread-safe table of running and recently finished requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, RequestState] = {}
        self._finished: OrderedDict[str, RequestState] = OrderedDict()

    def start(self, request_id: str | None, summary: str, deadline_ms: int) -> RequestState:
        """Register a new request (``request_id`` None: a generated ``req-<hex>``).

        Raises:
            QueryError: a request with this id is still running.
        """
        rid = request_id or f"req-{uuid.uuid4().hex[:16]}"
        with self._lock:
            if rid in self._running:
                raise QueryError(f"request_id {rid!r} is already running; choose another id or cancel it first")
            self._finished.pop(rid, None)
            state = RequestState(rid, summary[:200], deadline_ms)
            self._running[rid] = state
        owned = SESSION_REQUESTS.get()
        if owned is not None:
            if len(owned) >= SESSION_REQUESTS_PRUNE_AT:
                owned[:] = [s for s in owned if s.finished is None]
            owned.append(state)
        return state

    def finish(self, state: RequestState, outcome: str, error: str | None = None) -> None:
        """Mark ``state`` finished with ``outcome`` (one of the state constants)."""
        with self._lock:
            state.state, state.error = outcome, error
            state.finished = time.monotonic()
            state.phase = "finished" if outcome in (COMPLETED, DEGRADED) else state.phase
            self._running.pop(state.request_id, None)
            self._finished[state.request_id] = state
            while len(self._finished) > FINISHED_REQUESTS_KEPT:
                self._finished.popitem(last=False)

    def get(self, request_id: str) -> RequestState:
        """The running or recently finished request ``request_id``.

        Raises:
            RequestNotFound: unknown id (never started here -- in this registry, which only sessions
                with the same project access share -- or forgotten).
        """
        with self._lock:
            state = self._running.get(request_id) or self._finished.get(request_id)
        if state is None:
            raise RequestNotFound(not_found("request", request_id))
        return state

    def cancel(self, request_id: str, reason: str) -> tuple[RequestState, bool]:
        """Ask request ``request_id`` to stop; returns (its state, whether it was still running).

        Raises:
            RequestNotFound: unknown id.
        """
        state = self.get(request_id)
        with self._lock:
            running = state.request_id in self._running and not state.cancel_event.is_set()
            if running:
                state.cancel_reason, state.cancel_phase = reason, state.phase
                state.cancel_event.set()
        return state, running

    def running(self) -> list[str]:
        with self._lock:
            return list(self._running)
