"""The stdio framing of every server: what each hostile line decodes to, oversized lines, and
answers that UTF-8 cannot carry. The processes that use it are tested in tests/integration."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server.mcpserver import MCPServer

from sleuth.mcp import wire
from sleuth.mcp.sdk import serve_streams
from sleuth.mcp.wire import LineReader, Oversized, decode_line, encode_message, line_transport, oversized_reply

CALL = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_fuzzy","arguments":%s}}'


def test_a_lone_surrogate_escape_reaches_the_session() -> None:
    message = decode_line(CALL % b'{"query":"\\ud800","candidates":["a"]}')
    assert not isinstance(message, bytes | type(None))
    assert message.message.params["arguments"]["query"] == "\ud800"  # type: ignore[union-attr]


def test_lines_that_are_not_json_rpc_are_answered_and_notifications_never() -> None:
    assert json.loads(decode_line(b"not json")) == {  # type: ignore[arg-type]
        "jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error: the message is not JSON"}}
    invalid = json.loads(decode_line(b'{"jsonrpc":"2.0","id":"x1","method":5}'))  # type: ignore[arg-type]
    assert (invalid["id"], invalid["error"]["code"]) == ("x1", -32600)
    assert decode_line(b'{"jsonrpc":"2.0","method":5}') is None
    huge = decode_line(CALL % (b'{"query":"\\ud800","candidates":["a"],"threshold":1' + b"0" * 5000
                               + b',"top_k":NaN}'))
    arguments = huge.message.params["arguments"]  # type: ignore[union-attr]
    assert arguments["threshold"] == float("inf") and arguments["top_k"] != arguments["top_k"]  # inf, NaN


@pytest.mark.parametrize("line", [b"[]", b'[{"jsonrpc":"2.0","id":10,"method":"tools/list"}]', b"[1, 2]"])
def test_a_batch_is_answered_with_one_error(line: bytes) -> None:
    """An attack round's finding: a JSON-RPC batch got no answer at all, and a client waiting for id 10
    waited for ever. MCP takes no batches (2025-06-18): one Invalid Request error, its id null."""
    assert json.loads(decode_line(line)) == {  # type: ignore[arg-type]
        "jsonrpc": "2.0", "id": None,
        "error": {"code": -32600, "message": "Invalid Request: a batch (a JSON array) is not taken: send one "
                                             "JSON-RPC message per line"}}


def lines_of(chunks: list[bytes], max_bytes: int) -> list[bytes | Oversized]:
    async def main() -> list[bytes | Oversized]:
        queue = list(chunks)

        async def receive() -> bytes:
            return queue.pop(0) if queue else b""

        reader, out = LineReader(receive, max_bytes), []
        while (line := await reader.next()) is not None:
            out.append(line)
        return out

    return anyio.run(main)


def test_an_oversized_line_is_skipped_and_the_next_ones_read() -> None:
    big = b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{"q":"' + b"x" * 500 + b'"}}}'
    got = lines_of([b"first\nsec", b"ond\n", big[:200], big[200:] + b"\nafter\nlast"], max_bytes=100)
    assert got[:2] == [b"first", b"second"] and got[3:] == [b"after", b"last"]
    oversized = got[2]
    assert isinstance(oversized, Oversized) and oversized.size == len(big)
    answer = json.loads(oversized_reply(oversized, 100))
    assert answer["id"] == 9 and answer["result"]["isError"] is True
    assert answer["result"]["content"][0]["text"].startswith(f"the message is {len(big)} bytes long; the limit is "
                                                             "100 bytes per message")


def test_an_oversized_line_with_its_id_last_or_none_is_answered_with_what_can_be_known() -> None:
    last = Oversized(b'{"method":"tools/call","params":{"arguments":{"id":"inner"',
                     b'"x"}},"jsonrpc":"2.0","id":"out"}', 10_000)
    assert json.loads(oversized_reply(last, 100))["id"] == "out"
    unknown = json.loads(oversized_reply(Oversized(b'{"params":{"id":1', b"xxxx", 10_000), 100))
    assert unknown["id"] is None and unknown["error"]["code"] == -32600


def test_an_answer_utf8_cannot_carry_is_sent_with_replacement_characters() -> None:
    answer = types.jsonrpc_message_adapter.validate_python({"jsonrpc": "2.0", "id": 1, "result": {"t": "a\ud800b"}})
    assert json.loads(encode_message(answer)) == {"jsonrpc": "2.0", "id": 1, "result": {"t": "a\ufffdb"}}


@pytest.mark.parametrize("request_id", ["1.5", "[1]", "true", "{}", "1" * 200, "1" * 5000])
def test_a_request_whose_id_cannot_be_echoed_gets_an_error_with_a_null_id(request_id: str) -> None:
    """Not silence (which a client waits on forever): JSON-RPC 2.0 section 5.1's answer."""
    answer = decode_line(('{"jsonrpc":"2.0","id":' + request_id + ',"method":"tools/list"}').encode())
    assert isinstance(answer, bytes)
    assert json.loads(answer) == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "Invalid Request: the id must be a string or an integer of at most 100 digits"}}


@pytest.mark.parametrize("line", [b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}',
                                  b'{"jsonrpc":"2.0","id":"x","method":"tools/list"}',
                                  b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                                  b'{"jsonrpc":"2.0","method":"notifications/initialized","params":{"id":3}}'])
def test_good_ids_and_notifications_pass(line: bytes) -> None:
    assert not isinstance(decode_line(line), bytes)


@pytest.mark.parametrize("literal, shown", [
    (b"9" * 5000, "a number too large to read (Infinity, or an integer of over 100 digits)"),
    (b"-" + b"9" * 5000, "a negative number too large to read (-Infinity, or an integer of over 100 digits)"),
    (b"Infinity", "a number too large to read (Infinity, or an integer of over 100 digits)"),
])
def test_an_integer_too_long_to_read_is_named_as_such_in_the_tool_error(literal: bytes, shown: str) -> None:
    from sleuth.mcp.envelope import ToolError, bounded_int

    message = decode_line(CALL % (b'{"notebook_id":"n","limit":' + literal + b"}"))
    limit = message.message.params["arguments"]["limit"]  # type: ignore[union-attr]
    with pytest.raises(ToolError) as caught:
        bounded_int(limit, "limit", 10, 1, 200)
    assert str(caught.value) == f"limit must be an integer from 1 to 200; got {shown}"  # was "got inf"


# ---------------------------------------------------------------------------------------------- the input ending

#: Safety net for a session over line_transport to end (the machine is shared), in seconds: a
#: session that would wait for an answer it can never get fails here instead of hanging.
SESSION_END_WAIT_S = 120.0
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "wire-test", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def served(messages: list[dict[str, Any]], fail_sends: bool = False) -> list[dict[str, Any]]:
    """Serve a real MCPServer (a tool ``hang`` that never returns, ``echo`` that does) over
    :func:`line_transport` fed ``messages`` then the end of the input; returns what it wrote
    (nothing when ``fail_sends``: each write raises as a closed pipe does)."""
    server: MCPServer[Any] = MCPServer(name="wire-test")

    async def hang() -> str:
        """Never answers."""
        await anyio.sleep_forever()
        return ""

    def echo(text: str) -> str:
        """Answers ``text``."""
        return text

    server.add_tool(hang)
    server.add_tool(echo)
    feed = [b"".join(json.dumps(m).encode() + b"\n" for m in messages)]
    written: list[dict[str, Any]] = []

    async def receive() -> bytes:
        return feed.pop(0) if feed else b""

    async def send(data: bytes) -> None:
        if fail_sends:
            raise BrokenPipeError("the client went away")
        written.extend(json.loads(line) for line in data.splitlines())

    async def main() -> None:
        with anyio.fail_after(SESSION_END_WAIT_S):
            async with line_transport(receive, send) as (read_stream, write_stream):
                await serve_streams(server, read_stream, write_stream)

    anyio.run(main)
    return written


def test_requests_read_before_the_input_ends_are_answered() -> None:
    call = {"jsonrpc": "2.0", "id": "e", "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}}}
    written = served([INITIALIZE, INITIALIZED, call])
    assert [m["id"] for m in written] == [1, "e"]
    assert written[1]["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_a_request_the_client_cancelled_is_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "ANSWERS_AFTER_EOF_MAX_S", 1e9)  # only the cancel can end the wait
    hang = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "hang", "arguments": {}}}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5, "reason": "bored"}}
    written = served([INITIALIZE, INITIALIZED, hang, cancel])
    assert [m["id"] for m in written] == [1]  # a cancelled request is never answered (MCP)


def test_no_answer_is_waited_for_once_the_output_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "ANSWERS_AFTER_EOF_MAX_S", 1e9)  # only the failed write can end the wait
    hang = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "hang", "arguments": {}}}
    assert served([INITIALIZE, INITIALIZED, hang], fail_sends=True) == []


@pytest.mark.parametrize(("request_id", "cancelled_as"), [(1, "1"), (10, "1_0"), (7, " 7 "), ("7", 7), ("a", "a")])
def test_a_cancellation_naming_the_request_in_another_form_settles_it(request_id: object, cancelled_as: object) -> None:
    """Attack round (this stop): ``notifications/cancelled`` with ``requestId: "1"`` cancels request 1
    in the SDK (which correlates ids as ``coerce_request_id`` does) and no answer is written; the server
    waited for it after stdin's end for ANSWERS_AFTER_EOF_MAX_S (361 s)."""
    pending = wire.Unanswered()
    pending.read(types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/list"))  # type: ignore[arg-type]
    assert len(pending) == 1
    pending.read(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled",
                                           params={"requestId": cancelled_as}))
    assert len(pending) == 0
