"""MCP over a byte stream (the broker's accepted socket), framed as MCP stdio frames it.

:func:`stream_transport` is :func:`sleuth.mcp.wire.line_transport` over a socket: one JSON-RPC
message per line each way, with the same handling of hostile lines as the in-process server
(lone surrogates, lines that are not JSON-RPC, lines over ``MESSAGE_MAX_BYTES``). The session
process pipes its stdin and stdout to the socket unchanged, so the client sees exactly the stdio
transport.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
from anyio.abc import ByteSendStream
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream
from mcp.shared.message import SessionMessage

from sleuth.mcp.wire import MESSAGE_MAX_BYTES, READ_CHUNK_BYTES, line_transport

__all__ = ["MESSAGE_MAX_BYTES", "stream_transport"]


@asynccontextmanager
async def stream_transport(
    receive: BufferedByteReceiveStream, send: ByteSendStream, max_bytes: int = MESSAGE_MAX_BYTES,
    on_end: Callable[[], object] | None = None,
) -> AsyncIterator[tuple[ContextReceiveStream[SessionMessage | Exception], ContextSendStream[SessionMessage]]]:
    """(read stream, write stream) for ``MCPServer``'s low-level ``run`` over a byte stream.

    ``receive`` may already hold bytes read after the session's header line; they come first. When
    the peer closes its side, ``on_end`` is called at once (the broker cancels the session's
    searches still running, which then answer that they were cancelled), and the read stream ends
    once every request read has been answered (:func:`sleuth.mcp.wire.line_transport`), so the
    peer, which may still read, gets every answer.
    """

    async def chunk() -> bytes:
        try:
            data = await receive.receive(READ_CHUNK_BYTES)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError):
            data = b""
        if not data and on_end is not None:
            on_end()
        return data

    async with line_transport(chunk, send.send, max_bytes) as streams:
        yield streams
