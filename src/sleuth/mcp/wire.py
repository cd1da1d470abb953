"""MCP's stdio framing -- one JSON-RPC message per line each way -- for every sleuth server.

Both the in-process server (``sleuth serve --no-broker``, or without an index) and each broker
session use :func:`line_transport`, instead of the SDK's stdio transport, because of what the
latter does with hostile input:

- **A lone surrogate.** pydantic's strict JSON parser refuses ``"\\ud800"`` (an escape JSON's
  grammar allows, RFC 8259 section 8.2); the SDK hands the parse error to the session, which
  drops it, so the caller never gets an answer. Here a line the strict parser refuses is decoded
  again with the standard library's parser (which keeps lone surrogates; as in the strict parser,
  ``NaN`` and ``Infinity`` read as floats, and integers over :data:`INT_MAX_DIGITS` digits read as
  infinite), so the call reaches its tool, whose argument checks (:mod:`sleuth.mcp.limits`) answer with a tool
  error naming the argument.
- **A message nested too deep to decode** (thousands of ``[``) is answered like an oversized one:
  a ``tools/call`` with a tool error stating the nesting limit.
- **A line that is not a JSON-RPC message** gets a JSON-RPC error (parse error -32700 with a null
  id, or invalid request -32600 with its id) instead of silence; notifications never get answers.
- **A line over** :data:`MESSAGE_MAX_BYTES` is skipped to its end, without being held in memory,
  and answered -- a ``tools/call`` with a tool error stating the limit, anything else with -32600
  -- instead of ending the session.
- **An answer that is not valid UTF-8** (a lone surrogate in a result) is sent with each such
  character replaced by U+FFFD instead of ending the session.
- **Work off the event loop:** lines over :data:`INLINE_DECODE_MAX_BYTES` are decoded, and every
  answer encoded, in worker threads (at most :data:`CODEC_THREADS` at once), so one message of many
  megabytes does not hold the loop that answers every other session.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from anyio.lowlevel import RunVar
from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream, create_context_streams
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

T = TypeVar("T")

#: Longest JSON-RPC message accepted, in bytes (the text tools take up to 5,000,000 characters,
#: which is up to 20 MB of UTF-8, or 30 MB as JSON escapes).
MESSAGE_MAX_BYTES = 64 * 1024 * 1024
#: Lines up to this size are decoded on the event loop; longer ones in a worker thread, in bytes.
INLINE_DECODE_MAX_BYTES = 64 * 1024
#: Worker threads decoding and encoding messages at once, per server process.
CODEC_THREADS = 2
#: Integers with more digits than this decode as infinite (no tool takes one anywhere near it).
INT_MAX_DIGITS = 100
#: Bytes read from the input at a time.
READ_CHUNK_BYTES = 64 * 1024
#: Bytes kept of an oversized line's start and end, to find its id and method.
OVERSIZED_KEPT_BYTES = 4096
#: After the input ends, longest wait for the answers to the requests read before it, in seconds
#: (a search ends by its deadline, at most 300 s: ``sleuth.memory.arguments.DEADLINE_MAX_MS``;
#: this only bounds a request that would never be answered).
ANSWERS_AFTER_EOF_MAX_S = 360.0

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
#: The answer to a JSON-RPC batch (an array of messages), which MCP does not take since its 2025-06-18
#: revision: a client waiting for the answers of its requests would otherwise wait for ever.
BATCH_REFUSED = "Invalid Request: a batch (a JSON array) is not taken: send one JSON-RPC message per line"

#: Bits of the largest integer id echoed back (an integer of INT_MAX_DIGITS decimal digits).
_ID_MAX_BITS = int(INT_MAX_DIGITS * 3.33)
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_ID = rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")'
_HEAD_ID_RE = re.compile(_ID)
_TAIL_ID_RE = re.compile(_ID + rb"\s*}\s*$")
_METHOD_RE = re.compile(rb'"method"\s*:\s*"([^"\\]{1,100})"')


# ---------------------------------------------------------------------------------------------- decoding


def _parse_int(digits: str) -> int | float:
    if len(digits.lstrip("-")) > INT_MAX_DIGITS:
        return float("-inf") if digits.startswith("-") else float("inf")
    return int(digits)


def _reply_error(request_id: int | str | None, code: int, message: str) -> bytes:
    payload = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return _scrub(json.dumps(payload, ensure_ascii=False, separators=(",", ":"))).encode("utf-8") + b"\n"


def decode_line(line: bytes) -> SessionMessage | bytes | None:
    """One input line as a message for the session, or the bytes to answer it with, or None (ignored).

    Strict decoding first (pydantic, as the SDK does); what it refuses is decoded leniently (see the
    module docstring) and checked as a JSON-RPC message again.
    """
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        pass
    else:
        if isinstance(message, types.JSONRPCNotification) and b'"id"' in line and _has_id(line):
            return _bad_id_reply()  # an id the strict parser dropped (1.5, [1]): a request, not a notification
        request_id = getattr(message, "id", None)
        if isinstance(request_id, int) and request_id.bit_length() > _ID_MAX_BITS:
            return _bad_id_reply()  # could not even be written back (Python's int-to-text limit)
        return SessionMessage(message)
    try:
        data = json.loads(line.decode("utf-8", "replace"), parse_int=_parse_int)
    except RecursionError:
        return too_deep_reply(line)
    except ValueError:
        return _reply_error(None, PARSE_ERROR, "Parse error: the message is not JSON")
    try:
        lenient = types.jsonrpc_message_adapter.validate_python(data, by_name=False)
    except (ValidationError, RecursionError):
        pass
    else:
        if isinstance(lenient, types.JSONRPCNotification) and isinstance(data, dict) and data.get("id") is not None:
            return _bad_id_reply()  # an id it dropped (a float, or an integer read as infinite)
        return SessionMessage(lenient)
    if isinstance(data, list):  # one error for the whole batch, its id null (JSON-RPC 2.0, "Batch")
        return _reply_error(None, INVALID_REQUEST, BATCH_REFUSED)
    request_id = data.get("id") if isinstance(data, dict) else None
    if isinstance(data, dict) and "method" in data and isinstance(request_id, int | str) \
            and not isinstance(request_id, bool):
        return _reply_error(request_id, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request")
    if isinstance(data, dict) and "method" in data and request_id is not None:
        return _bad_id_reply()
    return None  # a notification or a response: JSON-RPC answers neither


def _has_id(line: bytes) -> bool:
    """Whether the JSON object ``line`` has a non-null ``id`` (decoded leniently; a notification
    that mentions ``"id"`` is rare and small)."""
    try:
        data = json.loads(line.decode("utf-8", "replace"), parse_int=_parse_int)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("id") is not None


def _bad_id_reply() -> bytes:
    """JSON-RPC's answer to a request whose id it cannot echo (not a string or an integer): an
    error with a null id (JSON-RPC 2.0, section 5.1), never silence."""
    return _reply_error(None, INVALID_REQUEST, "Invalid Request: the id must be a string or an integer "
                        f"of at most {INT_MAX_DIGITS} digits")


@dataclass(frozen=True)
class Oversized:
    """A line longer than the limit: its first and last bytes (for its id and method) and its size."""

    head: bytes
    tail: bytes
    size: int


def _oversized_id(line: Oversized) -> int | str | None:
    params_at = line.head.find(b'"params"')
    before_params = line.head if params_at < 0 else line.head[:params_at]
    found = _HEAD_ID_RE.search(before_params) or _TAIL_ID_RE.search(line.tail)
    if found is None:
        return None
    value = json.loads(found.group(1))
    return value if isinstance(value, int | str) else None


def oversized_reply(line: Oversized, max_bytes: int) -> bytes:
    """The answer to a line over ``max_bytes``: a tool error for a ``tools/call``, else -32600."""
    message = (f"the message is {line.size} bytes long; the limit is {max_bytes} bytes per message "
               "(MESSAGE_MAX_BYTES): send fewer or shorter arguments")
    return _unreadable_reply(line, message)


def too_deep_reply(line: bytes) -> bytes:
    """The answer to a message nested too deep to decode (thousands of ``[``): a tool error
    stating the nesting limit for a ``tools/call`` (found by its id and method at the line's
    ends, as for an oversized line), else -32600."""
    from sleuth.mcp.limits import ARGUMENT_MAX_DEPTH  # here: sleuth.mcp.limits imports this module

    message = (f"the arguments are nested too deep to decode; the limit is {ARGUMENT_MAX_DEPTH} levels of "
               "arrays and objects (ARGUMENT_MAX_DEPTH)")
    return _unreadable_reply(Oversized(line[:OVERSIZED_KEPT_BYTES], line[-OVERSIZED_KEPT_BYTES:], len(line)), message)


def _unreadable_reply(line: Oversized, message: str) -> bytes:
    request_id = _oversized_id(line)
    params_at = line.head.find(b'"params"')
    method = _METHOD_RE.search(line.head if params_at < 0 else line.head[:params_at])
    if request_id is not None and method is not None and method.group(1) == b"tools/call":
        result = {"content": [{"type": "text", "text": message}], "isError": True}
        payload = {"jsonrpc": "2.0", "id": request_id, "result": result}
        return _scrub(json.dumps(payload, ensure_ascii=False, separators=(",", ":"))).encode("utf-8") + b"\n"
    return _reply_error(request_id, INVALID_REQUEST, f"Invalid Request: {message}")


class LineReader:
    """Lines (without their ``\\n``) from ``receive`` (which returns ``b""`` at the end), each at
    most ``max_bytes`` long; a longer one is read to its end without being kept and comes back as
    :class:`Oversized`."""

    def __init__(self, receive: Callable[[], Awaitable[bytes]], max_bytes: int = MESSAGE_MAX_BYTES) -> None:
        self._receive = receive
        self._max = max_bytes
        self._buf = bytearray()
        self._scanned = 0
        self._eof = False

    async def next(self) -> bytes | Oversized | None:
        """The next line, an :class:`Oversized` one, or None at the end of the input."""
        while True:
            newline = self._buf.find(b"\n", self._scanned)
            if newline >= 0:
                line = bytes(self._buf[:newline])
                del self._buf[: newline + 1]
                self._scanned = 0
                if len(line) > self._max:
                    return Oversized(line[:OVERSIZED_KEPT_BYTES], line[-OVERSIZED_KEPT_BYTES:], len(line))
                return line
            self._scanned = len(self._buf)
            if len(self._buf) > self._max:
                return await self._skip()
            if self._eof:
                return None
            chunk = await self._receive()
            if not chunk:
                self._eof = True
                if self._buf:  # a last line without its newline
                    self._buf += b"\n"
                continue
            self._buf += chunk

    async def _skip(self) -> Oversized:
        head, tail = bytes(self._buf[:OVERSIZED_KEPT_BYTES]), bytes(self._buf[-OVERSIZED_KEPT_BYTES:])
        size = len(self._buf)
        self._buf.clear()
        self._scanned = 0
        while True:
            chunk = await self._receive()
            if not chunk:
                self._eof = True
                return Oversized(head, tail, size)
            newline = chunk.find(b"\n")
            part = chunk if newline < 0 else chunk[:newline]
            size += len(part)
            tail = (tail + part)[-OVERSIZED_KEPT_BYTES:]
            if newline >= 0:
                self._buf += chunk[newline + 1 :]
                return Oversized(head, tail, size)


# ---------------------------------------------------------------------------------------------- encoding


def _scrub(text: str) -> str:
    return _SURROGATE_RE.sub("\ufffd", text)


def encode_message(message: types.JSONRPCMessage) -> bytes:
    """One message as a line of UTF-8 JSON; lone surrogates (which UTF-8 cannot carry) become U+FFFD."""
    try:
        data = message.model_dump_json(by_alias=True, exclude_unset=True)
    except PydanticSerializationError:
        dumped = message.model_dump(mode="json", by_alias=True, exclude_unset=True)
        data = _scrub(json.dumps(dumped, ensure_ascii=False))
    return data.encode("utf-8") + b"\n"


_CODEC_LIMITER: RunVar[anyio.CapacityLimiter] = RunVar("sleuth_codec_limiter")


async def _in_codec_thread(fn: Callable[[Any], T], arg: Any) -> T:
    try:
        limiter = _CODEC_LIMITER.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(CODEC_THREADS)
        _CODEC_LIMITER.set(limiter)
    return await anyio.to_thread.run_sync(fn, arg, limiter=limiter)


# ---------------------------------------------------------------------------------------------- transport


class Unanswered:
    """The requests read and not yet answered (by id, a count per id: a client may reuse one).

    The input may end right after a request (``printf '<request>\\n' | sleuth serve``: MCP's stdio
    transport closes stdin to end a session): :func:`line_transport` ends the server's read stream
    only once every request read has been answered, so the answers reach the client before the
    server exits (the SDK cancels the calls still in flight when its read stream ends).
    """

    def __init__(self) -> None:
        self._count: dict[str, int] = {}
        self._none = anyio.Event()
        self._none.set()

    @staticmethod
    def _key(request_id: object) -> str:
        """The id as the SDK correlates it (``coerce_request_id``: ``"7"``, ``" 7 "`` and ``"7_0"``... are
        the int they parse as), so a cancellation naming a request in another form settles it as the
        SDK's does (before, ``requestId: "1"`` cancelled request 1 and left it waited for 360 s)."""
        from mcp.shared.dispatcher import coerce_request_id

        return json.dumps(coerce_request_id(request_id) if isinstance(request_id, str | int) else request_id)

    def read(self, message: types.JSONRPCMessage) -> None:
        """Note ``message``, read from the client: a request now waits for its answer; a
        ``notifications/cancelled`` settles its request (the SDK never answers a cancelled one)."""
        if isinstance(message, types.JSONRPCRequest):
            key = self._key(message.id)
            self._count[key] = self._count.get(key, 0) + 1
            if self._none.is_set():
                self._none = anyio.Event()
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            self._settle((message.params or {}).get("requestId"))

    def written(self, message: types.JSONRPCMessage) -> None:
        """Note ``message``, written to the client: an answer settles its request."""
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
            self._settle(message.id)

    def _settle(self, request_id: object) -> None:
        key = self._key(request_id)
        left = self._count.get(key, 0) - 1
        if left > 0:
            self._count[key] = left
        else:
            self._count.pop(key, None)
        if not self._count:
            self._none.set()

    def abandon(self) -> None:
        """No answer can be written any more (the output is gone): nothing is waited for."""
        self._count.clear()
        self._none.set()

    def __len__(self) -> int:
        """Requests read and not yet answered."""
        return sum(self._count.values())

    async def all_answered(self) -> None:
        """Return once every request read has been answered (or cancelled by the client), or
        :meth:`abandon` was called."""
        while self._count:
            await self._none.wait()


@asynccontextmanager
async def line_transport(
    receive: Callable[[], Awaitable[bytes]], send: Callable[[bytes], Awaitable[None]],
    max_bytes: int = MESSAGE_MAX_BYTES,
) -> AsyncIterator[tuple[ContextReceiveStream[SessionMessage | Exception], ContextSendStream[SessionMessage]]]:
    """(read stream, write stream) for the SDK's low-level ``Server.run`` over a byte stream.

    When the input ends, the read stream ends once every request read before has been answered
    (:class:`Unanswered`; at most :data:`ANSWERS_AFTER_EOF_MAX_S` later): a client that sends a
    request and closes its side gets the answer, then the server exits.

    Args:
        receive: the next bytes of input, ``b""`` at its end (then the read stream ends, as above).
        send: writes bytes to the output.
        max_bytes: longest message accepted (:data:`MESSAGE_MAX_BYTES`).
    """
    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)
    sending = anyio.Lock()
    unanswered = Unanswered()

    async def put(data: bytes) -> None:
        async with sending:
            await send(data)

    async def reader() -> None:
        lines = LineReader(receive, max_bytes)
        async with read_writer:
            while (line := await lines.next()) is not None:
                if isinstance(line, Oversized):
                    await put(oversized_reply(line, max_bytes))
                    continue
                if not line.strip():
                    continue
                decoded = decode_line(line) if len(line) <= INLINE_DECODE_MAX_BYTES \
                    else await _in_codec_thread(decode_line, line)
                if isinstance(decoded, bytes):
                    await put(decoded)
                elif decoded is not None:
                    unanswered.read(decoded.message)
                    await read_writer.send(decoded)
            # The input ended: the read stream stays open until what was read has been answered.
            with anyio.move_on_after(ANSWERS_AFTER_EOF_MAX_S):
                await unanswered.all_answered()

    async def writer() -> None:
        try:
            async with write_reader:
                async for session_message in write_reader:
                    await put(await _in_codec_thread(encode_message, session_message.message))
                    unanswered.written(session_message.message)
        finally:  # the output failed (the client went away) or the server ended: wait for no answer
            unanswered.abandon()

    async def guarded(part: Callable[[], Awaitable[None]]) -> None:
        try:
            await part()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return  # the peer went away: the session ends

    async with anyio.create_task_group() as tg:
        tg.start_soon(guarded, reader)
        tg.start_soon(guarded, writer)
        try:
            yield read_stream, write_stream
        finally:
            tg.cancel_scope.cancel()


async def _in_daemon_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on a daemon thread of its own (a blocked pipe read or write never keeps the
    process alive once serving is over, as a pooled worker thread would)."""
    done = anyio.Event()
    box: dict[str, Any] = {}
    token = anyio.lowlevel.current_token()

    def run() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting task
            box["error"] = exc
        try:
            anyio.from_thread.run_sync(done.set, token=token)
        except Exception:  # noqa: BLE001 - the event loop is gone: nobody waits any more
            return

    threading.Thread(target=run, name="sleuth-stdio", daemon=True).start()
    await done.wait()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


@asynccontextmanager
async def stdio_transport(
    max_bytes: int = MESSAGE_MAX_BYTES,
) -> AsyncIterator[tuple[ContextReceiveStream[SessionMessage | Exception], ContextSendStream[SessionMessage]]]:
    """:func:`line_transport` over this process's stdin and stdout.

    While serving, file descriptor 0 reads the null device and 1 writes to stderr (as the SDK's
    stdio transport arranges), so nothing else in the process can read the protocol's input or
    write into its output; both are restored on exit (once per process: the two duplicates serving
    the protocol are left open).
    """
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)

    async def receive() -> bytes:
        try:
            return await _in_daemon_thread(os.read, wire_in, READ_CHUNK_BYTES)
        except OSError:
            return b""

    async def send(data: bytes) -> None:
        await _in_daemon_thread(_write_all, wire_out, data)

    try:
        async with line_transport(receive, send, max_bytes) as streams:
            yield streams
    finally:
        os.dup2(wire_out, 1)
        os.dup2(wire_in, 0)
        # The duplicates stay open: a daemon thread may still be blocked reading one, and a closed
        # descriptor number could be reused by a file opened later, which it would then read.
