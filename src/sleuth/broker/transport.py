"""MCP over a byte stream (the broker's accepted socket), framed as MCP stdio frames it.

:func:`stream_transport` is :func:`mcp.server.stdio.stdio_server` for a socket: one JSON-RPC
message per line each way, turned into the read and write streams the SDK's server runs on. The
session process pipes its stdin and stdout to the socket unchanged, so the client sees exactly
the stdio transport.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from anyio.abc import ByteSendStream
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream, create_context_streams
from mcp.shared.message import SessionMessage

#: Longest JSON-RPC message accepted from a session, in bytes (the text tools take up to 5,000,000
#: characters, which is up to 20 MB of UTF-8 once JSON-escaped).
MESSAGE_MAX_BYTES = 64 * 1024 * 1024


@asynccontextmanager
async def stream_transport(
    receive: BufferedByteReceiveStream, send: ByteSendStream, max_bytes: int = MESSAGE_MAX_BYTES,
) -> AsyncIterator[tuple[ContextReceiveStream[SessionMessage | Exception], ContextSendStream[SessionMessage]]]:
    """(read stream, write stream) for ``MCPServer``'s low-level ``run`` over a byte stream.

    The read stream ends when the peer closes its side (or sends a line longer than ``max_bytes``);
    a line that is not JSON-RPC is passed on as an exception, as the stdio transport does.
    """
    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)

    async def reader() -> None:
        async with read_writer:
            while True:
                try:
                    line = await receive.receive_until(b"\n", max_bytes)
                except (anyio.EndOfStream, anyio.IncompleteRead, anyio.DelimiterNotFound,
                        anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return
                if not line.strip():
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:  # noqa: BLE001 - reported to the session like stdio does
                    await read_writer.send(exc)
                    continue
                await read_writer.send(SessionMessage(message))

    async def writer() -> None:
        try:
            async with write_reader:
                async for session_message in write_reader:
                    data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await send.send(data.encode("utf-8") + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            tg.cancel_scope.cancel()
