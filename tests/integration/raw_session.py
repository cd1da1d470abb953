"""A real `sleuth serve` process spoken to in raw JSON-RPC lines: what a broken or hostile client
sends (lone surrogate escapes, arguments that are not objects, over-long lines), which the SDK's
client refuses to encode. Answers are read by a thread, so a test never blocks on a missing one:
it fails after a generous safety timeout instead."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

from tests.integration.conftest import SLEUTH

#: Generous safety net for one answer (the machine is shared): never a measure of speed, in seconds.
ANSWER_WAIT_S = 240.0

_RAW_MARK = "\x1fraw\x1f"


class Raw:
    """JSON text put verbatim into a message (``1e400``, a 400-digit integer, ``"\\ud800"``)."""

    def __init__(self, text: str) -> None:
        self.text = text


def dumps(value: Any) -> str:
    """``value`` as JSON (ASCII, so lone surrogates go out as ``\\udXXX`` escapes), with each
    :class:`Raw` replaced by its text."""
    raws: list[str] = []

    def mark(v: Any) -> Any:
        if isinstance(v, Raw):
            raws.append(v.text)
            return f"{_RAW_MARK}{len(raws) - 1}{_RAW_MARK}"
        if isinstance(v, dict):
            return {k: mark(x) for k, x in v.items()}
        if isinstance(v, list):
            return [mark(x) for x in v]
        return v

    text = json.dumps(mark(value), ensure_ascii=True)
    for n, raw in enumerate(raws):
        text = text.replace(json.dumps(f"{_RAW_MARK}{n}{_RAW_MARK}"), raw)
    return text


class RawSession:
    """`python -m sleuth.cli serve ARGS` with stdin and stdout as raw JSON-RPC lines, initialised.

    Args:
        args: arguments after ``serve``.
        env: the process's whole environment.
        stderr: file receiving the server's log.
    """

    def __init__(self, args: list[str], env: dict[str, str], stderr: Path) -> None:
        self._err = stderr.open("ab")
        self.proc = subprocess.Popen([*SLEUTH, "serve", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, env=env)
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._answers: dict[Any, dict[str, Any]] = {}
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.initialize = self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                   "clientInfo": {"name": "raw-test", "version": "1"}})
        self.send_line(dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def send_line(self, data: bytes) -> None:
        """Write ``data`` and a newline to the server's stdin."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def send(self, method: str, params: Any) -> int:
        """Send a request without waiting; returns its id."""
        self._next_id += 1
        self.send_line(dumps({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}).encode())
        return self._next_id

    def answer(self, request_id: Any, wait_s: float = ANSWER_WAIT_S) -> dict[str, Any]:
        """The server's answer to ``request_id`` (answers to other ids are kept for later).

        Raises:
            AssertionError: no answer within ``wait_s`` seconds, or the server ended first.
        """
        while request_id not in self._answers:
            try:
                line = self._lines.get(timeout=wait_s)
            except queue.Empty:
                raise AssertionError(f"no answer to request {request_id} within {wait_s:.0f} s") from None
            if line is None:
                raise AssertionError(f"the server ended before answering request {request_id}")
            message = json.loads(line)
            if "id" in message and ("result" in message or "error" in message):
                self._answers[message["id"]] = message
        return self._answers.pop(request_id)

    def call(self, method: str, params: Any) -> dict[str, Any]:
        """Send a request and return its answer."""
        return self.answer(self.send(method, params))

    def call_tool(self, name: str, arguments: Any) -> dict[str, Any]:
        """``tools/call`` of ``name``; returns the whole JSON-RPC answer."""
        return self.call("tools/call", {"name": name, "arguments": arguments})

    def close(self) -> None:
        """Close stdin and wait for the server to end (killed after the safety timeout)."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(ANSWER_WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._err.close()

    def __enter__(self) -> RawSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def tool_text(answer: dict[str, Any]) -> str:
    """The text of a ``tools/call`` answer's content (all blocks joined)."""
    return "\n".join(block.get("text", "") for block in answer["result"]["content"])
