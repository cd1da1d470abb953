"""Load on `sleuth serve --http` against stdio (issue 15): N concurrent MCP clients, each making M
`search_project` calls, over streamable HTTP (the SDK's HTTP client, one bearer token per client)
and over stdio (`sleuth serve`, one process per client, through the index's broker). Writes its
section of docs/BENCH.md.

Each client opens its session and makes one warm-up call (not counted), then M calls in a row,
cycling through a list of real questions about the Hugo docs (limit 10, default hybrid lanes).
Reported per transport: calls, errors (error results and exceptions), the client-side latency of
one call (p50, p95, p99, max) and throughput (calls per second, all clients at once, from the first
timed call to the last).

Usage: python bench/http_load.py --data ../shared/data [--clients 16] [--calls 100] [--out docs/BENCH.md]
                                 [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from broker_latency import QUERIES, extract_hugo  # noqa: E402 - same corpus and questions
from run import git_head, loadavg, machine_info  # noqa: E402 - bench/run.py's machine notes

BEGIN, END = "<!-- http-load:begin -->", "<!-- http-load:end -->"
#: How long the server may take to answer its metadata after starting, in seconds.
START_WAIT_S = 180.0


@dataclass
class Tally:
    latencies_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    first_start: float = float("inf")
    last_end: float = 0.0

    def wall_s(self) -> float:
        """From the first timed call's start to the last one's end (sessions opening left out), in seconds."""
        return max(0.0, self.last_end - self.first_start)


def sleuth(*args: str, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-m", "sleuth.cli", *args], capture_output=True, text=True, env=env,
                          check=True)
    return proc.stdout


async def calls(call: Any, client_no: int, n: int, tally: Tally) -> None:
    """One warm-up call, then ``n`` timed calls of ``call(arguments)``."""
    await call({"project_id": "hugo", "query": QUERIES[client_no % len(QUERIES)], "limit": 10})
    for i in range(n):
        arguments = {"project_id": "hugo", "query": QUERIES[(client_no * 7 + i) % len(QUERIES)], "limit": 10}
        started = time.perf_counter()
        tally.first_start = min(tally.first_start, started)
        try:
            result = await call(arguments)
        except Exception as exc:  # noqa: BLE001 - counted as an error
            tally.errors.append(f"{type(exc).__name__}: {exc}"[:200])
            continue
        ended = time.perf_counter()
        tally.last_end = max(tally.last_end, ended)
        tally.latencies_s.append(ended - started)
        if result.is_error or not (result.structured_content or {}).get("result_count"):
            tally.errors.append(str(result.content[0].text if result.content else result)[:200])


async def http_client(url: str, tok: str, client_no: int, n: int, tally: Tally) -> None:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {tok}"}, timeout=300) as http, \
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        await calls(lambda a: client.call_tool("search_project", a), client_no, n, tally)


async def stdio_one(index: Path, env: dict[str, str], client_no: int, n: int, tally: Tally) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "sleuth", "serve", "--index", str(index)],
                                   env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await calls(lambda a: session.call_tool("search_project", a), client_no, n, tally)


async def run_clients(make: Any, clients: int) -> tuple[Tally, float]:
    """``clients`` clients at once; (their tally, the timed calls' wall time in seconds)."""
    tally = Tally()
    async with anyio.create_task_group() as tg:
        for i in range(clients):
            tg.start_soon(make, i, tally)
    return tally, tally.wall_s()


def write_section(out: Path, text: str) -> None:
    """Put ``text`` between this script's markers in ``out`` (replacing its previous section, else appended)."""
    current = out.read_text(encoding="utf-8") if out.exists() else ""
    block = f"{BEGIN}\n{text.rstrip()}\n{END}\n"
    if BEGIN in current and END in current:
        head, _, rest = current.partition(BEGIN)
        _, _, tail = rest.partition(END)
        current = head + block + tail.lstrip("\n")
    else:
        current = current.rstrip("\n") + "\n\n" + block
    out.write_text(current, encoding="utf-8")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def row(transport: str, tally: Tally, wall_s: float, note: str) -> dict[str, object]:
    ms = sorted(t * 1000 for t in tally.latencies_s)

    def pct(q: float) -> float:
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))] if ms else float("nan")

    return {"transport": transport, "calls": len(ms), "errors": len(tally.errors),
            "p50 ms": statistics.median(ms) if ms else float("nan"), "p95 ms": pct(0.95), "p99 ms": pct(0.99),
            "max ms": ms[-1] if ms else float("nan"), "calls/s": len(ms) / wall_s if wall_s else 0.0, "note": note}


def measure_http(index: Path, env: dict[str, str], clients: int, n: int, log: Path) -> dict[str, object]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    tokens = [sleuth("users", "token", "bench", "--url", url, "--index", str(index), env=env).strip()
              for _ in range(clients)]
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "sleuth.cli", "serve", "--http", f"127.0.0.1:{port}",
                                 "--index", str(index)], stdout=subprocess.DEVNULL, stderr=err, env=env)
    try:
        deadline = time.monotonic() + START_WAIT_S
        while True:
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource", timeout=5).is_success:
                    break
            except httpx2.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the HTTP server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)

        async def one(i: int, tally: Tally) -> None:
            await http_client(url, tokens[i], i, n, tally)

        tally, wall = anyio.run(run_clients, one, clients)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    for error in tally.errors[:5]:
        print(f"http error: {error}", file=sys.stderr)
    return row("streamable HTTP (`sleuth serve --http`)", tally, wall,
               f"{clients} SDK HTTP clients, one session and bearer token each; one server process")


def measure_stdio(index: Path, env: dict[str, str], clients: int, n: int) -> dict[str, object]:
    brokered = {**env, "SLEUTH_BROKER": "1"}

    async def one(i: int, tally: Tally) -> None:
        await stdio_one(index, brokered, i, n, tally)

    try:
        tally, wall = anyio.run(run_clients, one, clients)
    finally:
        subprocess.run([sys.executable, "-m", "sleuth.cli", "broker", "stop", "--all"], env=brokered,
                       capture_output=True)
    for error in tally.errors[:5]:
        print(f"stdio error: {error}", file=sys.stderr)
    return row("stdio (`sleuth serve`, through the broker)", tally, wall,
               f"{clients} SDK stdio clients, one `sleuth serve` process each, one broker")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"), help="shared data folder")
    ap.add_argument("--out", type=Path, default=HERE.parent / "docs" / "BENCH.md", help="markdown report")
    ap.add_argument("--clients", type=int, default=16, help="concurrent clients")
    ap.add_argument("--calls", type=int, default=100, help="timed calls per client")
    ap.add_argument("--repeats", type=int, default=1,
                    help="runs of each transport, alternating (HTTP, stdio, HTTP, ...): load from other jobs "
                         "then weighs on both alike")
    ap.add_argument("--workdir", type=Path, default=None, help="scratch folder (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = ap.parse_args(argv)
    from sleuth.eval import format_table

    work = args.workdir or Path(tempfile.mkdtemp(prefix="sleuth-http-bench-"))
    brokers = Path(tempfile.mkdtemp(prefix="shb-", dir="/tmp"))  # short: socket paths are limited
    env = {**os.environ, "SLEUTH_BROKER_DIR": str(brokers)}
    for chooser in ("SLEUTH_INDEX", "SLEUTH_TOOLS", "SLEUTH_GUIDES"):
        env.pop(chooser, None)
    try:
        info, load0, head = machine_info(), loadavg(), git_head()
        index = work / "idx"
        if not (index / "catalog.sqlite3").exists():
            corpus = extract_hugo(args.data, work / "hugo")
            sleuth("index", str(corpus), "--project", "hugo", "--index", str(index), env=env)
        if "bench:" not in sleuth("users", "list", "--index", str(index), env=env):
            sleuth("users", "add", "bench", "--project", "hugo", "--index", str(index), env=env)
        counts = sleuth("status", "--index", str(index), env=env).splitlines()[1].split(", generation")[0].strip()
        rows, loads = [], []
        for repeat in range(1, args.repeats + 1):
            for measure in (lambda: measure_http(index, env, args.clients, args.calls, work / "serve-http.log"),
                            lambda: measure_stdio(index, env, args.clients, args.calls)):
                measured = measure()
                loads.append(loadavg())
                rows.append({**measured, "run": repeat, "load after": loads[-1].split()[0]})
        load1 = loads[-1]
    finally:
        shutil.rmtree(brokers, ignore_errors=True)
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    columns = ["run", "transport", "calls", "errors", "p50 ms", "p95 ms", "p99 ms", "max ms", "calls/s",
               "load after", "note"]
    section = "\n".join([
        "## Many clients at once: streamable HTTP against stdio (issue 15)", "",
        f"Generated by `python bench/http_load.py --data DIR --clients {args.clients} --calls {args.calls} "
        f"--repeats {args.repeats}` on "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M')} UTC (sleuth {head}); regenerated, not edited. "
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['ram']} RAM, Python {info['python']}. "
        f"Load average at start {load0}, at end {load1} (the 1-minute load after each run is in its row): the "
        "clients run on the same 2 cores as the server, and other engineers' jobs shared them, so these are "
        "upper bounds, and the two transports are compared run by run.", "",
        f"Index: the Hugo documentation ({counts}). {args.clients} clients at once, each: open a session, one "
        f"warm-up call, then {args.calls} `search_project` calls in a row (limit 10, default hybrid lanes, "
        "questions cycled). Latency is one call as its client sees it. On a machine this loaded the two are "
        "not like for like: stdio runs 16 `sleuth serve` pipe processes, the broker and the client process, "
        "HTTP only the server and the client process, so the scheduler gives stdio a larger share of the "
        "shared cores; on a quiet machine compare the p50s.", "",
        format_table(rows, columns, markdown=True, precision=1), "",
    ])
    print(section)
    write_section(args.out, section)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
