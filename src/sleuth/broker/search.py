"""``sleuth search`` answered by the index's running broker, when there is one.

A broker holds the index open with its lanes built and the embedding model loaded, so a search it
runs skips the process's cold start (imports, opening the catalog and the postings, memory-mapping
the lane files, creating the model's session). ``sleuth search`` asks it first
(:func:`search_via_broker`) and searches in its own process when no broker of the same index and
settings listens -- found, like a session finds it, by :class:`~sleuth.broker.paths.BrokerPaths`
(the index, the sleuth install and the ``SLEUTH_*`` settings that change answers), never started for
one search. Both ways run the same :meth:`Engine.search` on the same :class:`SearchRequest` and
print the same output.

Wire (one more op of the broker's header line, protocol :data:`PROTOCOL_VERSION`):
``{"op": "search", "protocol": 1, "request": SearchRequest JSON}`` → at once
``{"ok": true, "accepted": true}``, then, when the search is done,
``{"ok": true, "response": SearchResponse JSON, "multi_root": [project ids with several roots]}``
or ``{"ok": false, "error": message, "error_type": "ProjectNotFound", "exit_code": N}``. A broker
that does not know the op (an older one) answers ``ok: false`` at once: the search runs in-process.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sleuth import errors
from sleuth.broker.client import PROTOCOL_VERSION, broker_enabled, connect, send_line
from sleuth.broker.paths import BrokerPaths, BrokerUnavailable

if TYPE_CHECKING:
    from sleuth.engine import Engine
    from sleuth.types import SearchRequest, SearchResponse

log = logging.getLogger("sleuth.broker")

#: The header's ``op`` of a search.
SEARCH_OP = "search"
#: How long ``sleuth search`` waits for a broker to acknowledge its request before searching in its
#: own process (a broker's event loop answers within milliseconds; a wedged one does not), in seconds.
BROKER_ACK_TIMEOUT_S = 10.0
#: How long it waits for the answer once acknowledged (a safety net: a search has its own
#: deadline), in seconds; past it the search runs in-process.
BROKER_ANSWER_TIMEOUT_S = 600.0
#: Longest answer line read, in bytes.
ANSWER_MAX_BYTES = 256 * 1024 * 1024
_CHUNK_BYTES = 64 * 1024


def _lines(sock: socket.socket) -> Any:
    """A reader of ``\\n``-terminated lines from ``sock``: ``next_line(timeout_s)``."""
    buffer = bytearray()

    def next_line(timeout_s: float) -> bytes:
        sock.settimeout(timeout_s)
        while b"\n" not in buffer:
            if len(buffer) > ANSWER_MAX_BYTES:
                raise ConnectionError(f"answer longer than {ANSWER_MAX_BYTES} bytes")
            chunk = sock.recv(_CHUNK_BYTES)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            buffer.extend(chunk)
        at = buffer.index(b"\n")
        line = bytes(buffer[:at])
        del buffer[:at + 1]
        return line

    return next_line


def _error_of(answer: Mapping[str, Any]) -> errors.SleuthError | None:
    """The SleuthError a refused search would have raised in-process, or None when its type is
    not one of sleuth's (the search then runs in-process, which raises what it raises)."""
    kind = getattr(errors, str(answer.get("error_type")), None)
    if isinstance(kind, type) and issubclass(kind, errors.SleuthError) and isinstance(answer.get("error"), str):
        return kind(answer["error"])
    return None


def search_via_broker(index_dir: Path, request: SearchRequest, env: Mapping[str, str] | None = None
                      ) -> tuple[SearchResponse, set[str]] | None:
    """``request`` answered by the running broker of ``index_dir`` (a resolved index folder):
    ``(response, projects with several roots)``, or None when no broker answers (none runs, the
    broker is off, an older broker, one that went away or did not acknowledge in time).

    Raises:
        SleuthError: the broker ran the search and it failed as it would have in-process (an
            unknown project, a bad query), with the same message.
    """
    from sleuth.types import SearchResponse

    env = os.environ if env is None else env
    if not broker_enabled(env):
        return None
    try:
        paths = BrokerPaths.for_index(index_dir, env, create=False)
        sock = connect(paths)
    except BrokerUnavailable:
        return None
    if sock is None:
        return None
    with sock:
        try:
            send_line(sock, {"op": SEARCH_OP, "protocol": PROTOCOL_VERSION,
                             "request": request.model_dump(mode="json")})
            next_line = _lines(sock)
            ack = json.loads(next_line(BROKER_ACK_TIMEOUT_S))
            if not (isinstance(ack, dict) and ack.get("ok") and ack.get("accepted")):
                return None
            answer = json.loads(next_line(BROKER_ANSWER_TIMEOUT_S))
        except (OSError, ValueError, RecursionError):  # gone, wedged or broken: search here instead
            return None
    if not isinstance(answer, dict):
        return None
    if not answer.get("ok"):
        error = _error_of(answer)
        if error is not None:
            raise error
        return None
    try:
        response = SearchResponse.model_validate(answer["response"])
    except (KeyError, ValueError):
        return None
    multi_root = answer.get("multi_root")
    return response, {p for p in multi_root if isinstance(p, str)} if isinstance(multi_root, list) else set()


def answer_search(engine: Engine, header: Mapping[str, Any]) -> dict[str, Any]:
    """The broker's side: the answer line to a search ``header`` (see the module docstring).
    Blocking (run it in a worker thread); never raises."""
    from pydantic import ValidationError

    from sleuth.types import SearchRequest

    try:
        if header.get("protocol") != PROTOCOL_VERSION:
            raise errors.QueryError(f"search protocol {header.get('protocol')!r}; this broker speaks "
                                    f"{PROTOCOL_VERSION}")
        try:
            request = SearchRequest.model_validate(header.get("request"))
        except ValidationError as exc:
            raise errors.QueryError(f"bad search request: {exc.errors()[0].get('msg', 'invalid')}") from None
        response = engine.search(request)
        multi_root = sorted(engine.multi_root_projects())
    except errors.SleuthError as exc:
        return {"ok": False, "error": str(exc), "error_type": type(exc).__name__, "exit_code": exc.exit_code}
    except Exception:  # a bug: logged; the CLI searches in its own process and reports what it finds
        log.exception("a search for sleuth search failed")
        return {"ok": False, "error": "internal error", "error_type": "internal"}
    return {"ok": True, "response": response.model_dump(mode="json"), "multi_root": multi_root}
