"""What hostile MCP calls cost, and whether they hold other sessions back (issue 12, item 5).

Prints:

1. the argument checks every call passes (``sleuth.mcp.limits.check_arguments``) on the largest
   calls allowed and on a 1 MB query (which they refuse), and the strict and lenient decoding of the
   largest message (``sleuth.mcp.wire.decode_line``), in ms;
2. what a 1 MB query cost ``search_guides`` before the query cap (``GuideIndex.search``, which ran on
   the event loop), over 85 guides (the issue's index size);
3. through one broker: session B's time from starting ``sleuth serve`` to the answer of its first
   ``search_project`` (initialize included), idle and while session A runs the largest
   ``search_documents`` allowed (10,000 documents, 5,000,000 characters), median of ``--runs``.

Usage: python bench/liveness.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from sleuth.guides.entry import GuideEntry  # noqa: E402
from sleuth.guides.search import GuideIndex  # noqa: E402
from sleuth.mcp.limits import ArgumentError, check_arguments  # noqa: E402
from sleuth.mcp.memory_tools import SEARCH_INPUT_SCHEMA  # noqa: E402
from sleuth.mcp.text_tools import SEARCH_DOCUMENTS_SCHEMA  # noqa: E402
from sleuth.mcp.wire import decode_line  # noqa: E402
from tests.integration.raw_session import RawSession, dumps  # noqa: E402

SLEUTH = [sys.executable, "-m", "sleuth.cli"]
DOCUMENTS = [(f"document {n} about rate limiting and quotas " + "filler text " * 40)[:500] for n in range(10_000)]


def best_ms(fn: object, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return min(times)


def checks() -> None:
    largest = {"query": "rate limiting", "documents": DOCUMENTS, "top_k": 5}
    grouped = {"project_id": "p", "queries": [{"id": f"q{i}", "query": "x" * 400, "query_variants": ["v" * 400] * 19}
                                              for i in range(20)]}

    def refused() -> None:
        try:
            check_arguments("search_guides", {"properties": {}}, {"query": "vendor " * 150_000})
        except ArgumentError:
            pass

    print(f"check_arguments, 10,000 documents / 5,000,000 chars: "
          f"{best_ms(lambda: check_arguments('search_documents', SEARCH_DOCUMENTS_SCHEMA, largest)):.1f} ms")
    print(f"check_arguments, 20 queries x 19 variants x 400 chars: "
          f"{best_ms(lambda: check_arguments('project_memory_search', SEARCH_INPUT_SCHEMA, grouped)):.1f} ms")
    print(f"check_arguments, 1 MB query (refused): {best_ms(refused):.3f} ms")
    line = dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "search_documents", "arguments": largest}}).encode()
    lenient = line.replace(b'"rate limiting"', b'"rate limiting \\ud800"')
    print(f"decode_line, {len(line) / 1e6:.1f} MB message: strict {best_ms(lambda: decode_line(line)):.0f} ms, "
          f"with a lone surrogate (lenient) {best_ms(lambda: decode_line(lenient)):.0f} ms (worker thread)")


def old_guides_cost() -> None:
    entries = [GuideEntry(title=f"Guide {n}: vendor management and fractional CTO work", excerpt="A guide " * 20,
                          tags=["Vendor", "Guides"], url=f"https://example.com/{n}") for n in range(85)]
    index = GuideIndex(entries)
    start = time.perf_counter()
    index.search("vendor guide " * 80_000)
    print(f"GuideIndex.search, 1 MB query over 85 guides (before the cap, on the event loop): "
          f"{time.perf_counter() - start:.1f} s")


def broker(runs: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="sleuth-liveness-"))
    folder = tempfile.mkdtemp(prefix="sbl-", dir="/tmp")
    env = {**os.environ, "SLEUTH_BROKER": "1", "SLEUTH_BROKER_DIR": folder, "SLEUTH_BROKER_IDLE_S": "600"}
    env.pop("SLEUTH_INDEX", None)
    try:
        (work / "notes").mkdir()
        (work / "notes" / "ledger.md").write_text("# Ledger notes\n\nDouble-entry ledger.\n", encoding="utf-8")
        subprocess.run([*SLEUTH, "index", str(work / "notes"), "--project", "notes", "--index", str(work / "idx")],
                       check=True, capture_output=True, env=env)
        args = ["--index", str(work / "idx"), "--tools", "project,text"]

        def b_first_answer() -> float:
            start = time.perf_counter()
            with RawSession(args, env, work / "b.log") as b:
                answer = b.call_tool("search_project", {"project_id": "notes", "query": "ledger"})
                assert not answer["result"].get("isError"), answer
                elapsed = time.perf_counter() - start
            return elapsed

        b_first_answer()  # starts the broker and warms it
        idle = [b_first_answer() for _ in range(runs)]
        busy, a_runs = [], []
        with RawSession(args, env, work / "a.log") as a:
            for _ in range(runs):
                start = time.perf_counter()
                pending = a.send("tools/call", {"name": "search_documents", "arguments": {
                    "query": "rate limiting", "documents": DOCUMENTS, "top_k": 5}})
                busy.append(b_first_answer())
                result = a.answer(pending)["result"]["structuredContent"]
                assert result["status"] == "ok", result
                a_runs.append(time.perf_counter() - start)
        print(f"broker, session B start to first search_project answer: idle median "
              f"{statistics.median(idle) * 1000:.0f} ms; while A runs the largest search_documents "
              f"(A's call: median {statistics.median(a_runs):.1f} s) median {statistics.median(busy) * 1000:.0f} ms"
              f" ({runs} runs each)")
    finally:
        subprocess.run([*SLEUTH, "broker", "stop", "--all"], env=env, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps({"python": sys.version.split()[0], "cpus": os.cpu_count(), "load": os.getloadavg()}))
    checks()
    old_guides_cost()
    broker(args.runs)


if __name__ == "__main__":
    main()
