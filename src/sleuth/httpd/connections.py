"""Connection-level bounds of ``sleuth serve --http`` (slowloris): uvicorn's h11 protocol, guarded.

uvicorn bounds neither the time a client takes to send a request's head nor its body, and counts
every open connection against ``limit_concurrency``: a few hundred connections that never finish
their request made every other client get 503. :func:`guarded_protocol` makes an h11 protocol
class (passed as uvicorn's ``http=``) that adds, per connection:

- **a head deadline**: a connection must send a whole request head within ``head_timeout_s`` of
  opening (or of its first byte after a keep-alive pause); else it gets **408** and is closed
  (a connection that sends nothing at all included);
- **a body deadline**: the whole body must arrive within ``body_timeout_s`` after the head (a body
  that trickles a byte at a time included); else **408** and closed;
- **a per-address cap on pending connections**: a connection is *pending* from the moment it opens
  (or starts another request, a pipelined one received with the one before included) until its
  request is complete; an address with
  ``pending_per_client_max`` pending connections gets **503** with ``Retry-After`` for the next one,
  which is closed at once, so one address's half-sent requests can take at most that many of the
  server's connections, and only until their deadline;
- **a bound on the request head**: a head (request line and headers, through the blank line)
  longer than ``head_max_bytes`` gets **400** and is closed. h11's own bound
  (``max_incomplete_event_size``) holds only while a head is still incomplete: a longer head that
  arrives in one read (asyncio reads up to 256 KiB at a time) passed it whole;
- **a request cut short**: a client that closes its side of the connection (a half-close) with
  part of a head or of a body sent gets **400** (uvicorn closed without a reply); one that does so
  after a whole request gets its answer, then the close (uvicorn closed at once, the answer lost);
- a connection refused here (400, 408, 503) whose client reads nothing, so that what the server sent
  cannot all leave, is cut ``head_timeout_s`` after the refusal (it no longer counts against
  uvicorn's ``limit_concurrency``: it must not stay open either).

Connections that completed their request (being answered, streaming, or idle for the keep-alive
time) are not pending: a proxy in front, whose clients all share its address, is held back only
while it is still sending requests, which a buffering proxy does at its own speed.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from sleuth.httpd.settings import HTTP_HEAD_MAX_BYTES

#: ``(status, reason, client address)`` of a refusal made here, for the audit log.
RefusalHook = Callable[[int, str, str], None]
#: The end of a request head as h11 finds it: a blank line (CRLF or bare LF line ends).
_HEAD_END = re.compile(rb"\n\r?\n")


def head_length(buffered: bytes, limit_bytes: int) -> int | None:
    """The length in bytes of the request head at the start of ``buffered`` (through its blank
    line), when it ends within ``limit_bytes`` (+2 for the blank line's end); else None when more
    than ``limit_bytes`` are buffered without a head's end (too long already); else -1 (the head is
    not complete yet, and not too long so far). Reads at most ``limit_bytes + 2`` bytes."""
    found = _HEAD_END.search(buffered, 0, limit_bytes + 2)
    if found is not None:
        return found.end()
    return None if len(buffered) > limit_bytes else -1


def raw_response(status: int, phrase: str, error: str, description: str,
                 extra: tuple[tuple[str, str], ...] = ()) -> bytes:
    """A complete HTTP/1.1 JSON error response that closes the connection, as bytes."""
    body = json.dumps({"error": error, "error_description": description}).encode("utf-8")
    head = [f"HTTP/1.1 {status} {phrase}", "content-type: application/json", f"content-length: {len(body)}",
            "connection: close", *(f"{k}: {v}" for k, v in extra)]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


class PendingCounts:
    """Pending connections per client address (one event loop: no locking needed)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, address: str) -> None:
        self.counts[address] = self.counts.get(address, 0) + 1

    def remove(self, address: str) -> None:
        left = self.counts.get(address, 0) - 1
        if left > 0:
            self.counts[address] = left
        else:
            self.counts.pop(address, None)

    def of(self, address: str) -> int:
        return self.counts.get(address, 0)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with head/body deadlines and the per-address pending cap (see the
    module docstring); :func:`guarded_protocol` makes a subclass with the bounds set."""

    head_timeout_s = 10.0
    body_timeout_s = 60.0
    pending_per_client_max = 32
    head_max_bytes = HTTP_HEAD_MAX_BYTES
    pending = PendingCounts()
    on_refusal: RefusalHook | None = None

    _deadline: asyncio.TimerHandle | None = None
    _phase = ""  # "head" or "body" while a deadline runs
    _pending_address: str | None = None

    def _address(self) -> str:
        return self.client[0] if self.client else "unknown"

    def _refuse(self, status: int, reason: str, response: bytes, new_request: bool = False) -> None:
        """Answer ``response`` (unless the client has part of an answer to its current request),
        close, count the refusal. ``new_request``: refused as it starts (the cycle, if any, is the
        request before it on this connection, answered: the response is written all the same)."""
        self._stop_pending()
        # Out of uvicorn's count now, not when the close is processed an iteration later: else a
        # burst of refused connections counts against ``limit_concurrency`` and the requests read
        # in the same iteration get uvicorn's own 503 (connection_lost discards again: harmless).
        self.connections.discard(self)
        started = not new_request and self.cycle is not None and self.cycle.response_started
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True  # the app's later sends go nowhere
            self.cycle.message_event.set()
        if not self.transport.is_closing():
            if not started:  # else the client has (part of) an answer: only close
                self.transport.write(response)
            self.transport.close()
            if self.transport.get_write_buffer_size():  # a client that reads nothing would keep it open,
                # out of uvicorn's count (above): cut after as long as a head may take
                self.loop.call_later(self.head_timeout_s, self.transport.abort)
        hook = type(self).on_refusal
        if hook is not None:
            hook(status, reason, self._address())

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request h11 cannot read (a malformed head, a bad chunk size, a body
        cut short), with the app perhaps already answering its head: refused as the other 400s
        here (the app's later sends go nowhere; it had the answer written and h11 refused it, with
        a traceback in the log), and counted."""
        reason = "malformed request"
        cycle = self.cycle  # the request before it on a kept-alive connection, when answered already
        self._refuse(400, reason, raw_response(
            400, "Bad Request", "malformed_request",
            f"{reason}: the server could not read it as HTTP/1.1 (its head, or its body's chunks or length)"),
            new_request=cycle is None or cycle.response_complete)

    def _start_pending(self) -> bool:
        """Count this connection as pending (False, after refusing it, when its address is full)."""
        address = self._address()
        if self.pending.of(address) >= self.pending_per_client_max:
            self._refuse(503, "too many pending connections from this address", raw_response(
                503, "Service Unavailable", "too_many_connections",
                f"more than {self.pending_per_client_max} unfinished requests from this address",
                (("retry-after", str(max(1, math.ceil(self.head_timeout_s)))),)), new_request=True)
            return False
        self.pending.add(address)
        self._pending_address = address
        self._arm("head", self.head_timeout_s)
        return True

    def _stop_pending(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline, self._phase = None, ""
        if self._pending_address is not None:
            self.pending.remove(self._pending_address)
            self._pending_address = None

    def _arm(self, phase: str, seconds: float) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._phase = phase
        self._deadline = self.loop.call_later(seconds, self._expired, phase)

    def _expired(self, phase: str) -> None:
        self._deadline, self._phase = None, ""
        reason = f"request {phase} not received in time"
        self._refuse(408, reason, raw_response(
            408, "Request Timeout", "request_timeout",
            f"{reason} (the server waits {self.head_timeout_s:g} s for a request head and "
            f"{self.body_timeout_s:g} s for its body)"))

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_pending()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_pending()
        super().connection_lost(exc)

    _peer_closed = False  # the client closed its side with a request in, being answered

    def eof_received(self) -> bool | None:  # pyright: ignore[reportIncompatibleMethodOverride]
        """The client closed its side (a half-close). A request it had begun (part of a head, or a
        body shorter than its length) can never be finished: it is answered 400 now, as nginx does
        (it got no reply at all). A whole request being answered keeps the connection open for its
        answer (True: asyncio's ``Protocol.eof_received`` contract), closed once it is written
        (:meth:`on_response_complete`): uvicorn closed it at once, and the answer was lost while the
        call went on (an MCP call that writes, done without its client learning of it). Otherwise
        as uvicorn does: closed."""
        if self.transport.is_closing():
            return None
        state = self.conn.their_state
        if self._pending_address is not None and (
                state is h11.SEND_BODY or (state is h11.IDLE and self.conn.trailing_data[0])):
            reason = "request cut short"
            self._refuse(400, reason, raw_response(
                400, "Bad Request", "request_incomplete",
                f"{reason}: the client closed its side of the connection before the whole request (its head,"
                " or its body's length or chunks) was sent"), new_request=state is h11.IDLE)
            return None  # asyncio closes the transport once the answer is written, as _refuse asked
        if self.cycle is not None and not self.cycle.response_complete:
            self._peer_closed = True
            return True
        return None

    def on_response_complete(self) -> None:
        """As uvicorn does (the next pipelined request, if any, starts); the connection is closed
        once no request is left to answer of a client that closed its side."""
        super().on_response_complete()
        if self._peer_closed and not self.transport.is_closing() and (
                self.cycle is None or self.cycle.response_complete):
            self.transport.close()

    def _head_too_long(self, data: bytes = b"") -> bool:
        """Whether the request head being received (h11's buffer, then ``data``) is longer than
        ``head_max_bytes``; if so it is refused with 400 (and True returned). Only while no request
        head has been parsed on the connection since its last request (h11 ``IDLE``)."""
        if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
            return False
        buffered = self.conn.trailing_data[0]
        if data:
            buffered = buffered[: self.head_max_bytes + 2] + data[: self.head_max_bytes + 2]
        length = head_length(buffered, self.head_max_bytes)
        if length is None or length > self.head_max_bytes:
            reason = "request head too large"
            self._refuse(400, reason, raw_response(
                400, "Bad Request", "request_head_too_large",
                f"{reason}: the server reads request heads (request line and headers) of at most "
                f"{self.head_max_bytes} bytes"), new_request=True)
            return True
        return False

    def data_received(self, data: bytes) -> None:
        if self._pending_address is None and self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            if not self._start_pending():  # the first byte of another request on a kept-alive connection
                return
        if self._head_too_long(data):
            return
        super().data_received(data)

    def shutdown(self) -> None:
        """The server is stopping: a connection still sending its request is closed at once (the
        app reading its body sees the client gone), others as uvicorn does."""
        if self._pending_address is None:
            super().shutdown()
            return
        self._stop_pending()
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self.transport.close()

    def handle_events(self) -> None:
        if (self._pending_address is None and self.conn.their_state is h11.IDLE and self.conn.trailing_data[0]
                and not self.transport.is_closing()):
            # a pipelined request, received with the one before it (no data_received of its own):
            # pending from now, else its head and body would have no deadline and no cap
            if not self._start_pending():
                return
        if self.conn.trailing_data[0] and self._head_too_long():  # a pipelined request's head, already read
            return
        super().handle_events()
        if self._pending_address is None or self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            if self._phase != "body":
                self._arm("body", self.body_timeout_s)
        elif state is not h11.IDLE:  # DONE, MUST_CLOSE, CLOSED, ERROR: the request is in
            self._stop_pending()


def guarded_protocol(head_timeout_s: float, body_timeout_s: float, pending_per_client_max: int,
                     on_refusal: RefusalHook | None = None,
                     head_max_bytes: int = HTTP_HEAD_MAX_BYTES) -> type[GuardedH11Protocol]:
    """A :class:`GuardedH11Protocol` class for uvicorn's ``Config(http=...)``, with its own counts.

    Args:
        head_timeout_s: seconds a connection has to send a whole request head.
        body_timeout_s: seconds a request has to send its whole body after the head.
        pending_per_client_max: pending connections one client address may hold (503 beyond).
        on_refusal: called with ``(status, reason, client address)`` for each 400, 408 and 503 sent here.
        head_max_bytes: the longest request head served, in bytes (400 beyond).
    """
    attributes = {"head_timeout_s": head_timeout_s, "body_timeout_s": body_timeout_s,
                  "head_max_bytes": head_max_bytes,
                  "pending_per_client_max": pending_per_client_max, "pending": PendingCounts(),
                  "on_refusal": staticmethod(on_refusal) if on_refusal is not None else None}
    return type("SleuthH11Protocol", (GuardedH11Protocol,), attributes)
