"""Time from starting an MCP session (`sleuth serve`) to its first answer, through the broker and
without it (issue 6: at most 0.5 s when the broker is warm). Writes its section of docs/BENCH.md.

Each run spawns `python -m sleuth serve --index DIR` with a real MCP client (the SDK's stdio
client), initialises, makes one `project_memory_search` (hybrid: exact, BM25, vector and graph
lanes; a query not asked before, so its embedding is computed) and stops the clock at the answer.
Modes: *cold* (no broker running: the session starts it, which loads the index and the model),
*warm* (the broker runs: every session after the first), *warm, click CLI* (`python -m sleuth.cli
serve`, which imports the whole CLI before piping) and *in-process* (`--no-broker`: the session
opens the index and loads the model itself, as before the broker).

Usage: python bench/broker_latency.py --data ../shared/data [--out docs/BENCH.md] [--runs 10]
                                      [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import git_head, loadavg, machine_info  # noqa: E402 - bench/run.py's machine notes

#: The section this script owns in docs/BENCH.md (bench/run.py keeps it when it rewrites the file).
BEGIN, END = "<!-- broker-latency:begin -->", "<!-- broker-latency:end -->"
#: The issue's target for a session's first answer when the broker is warm, in seconds.
TARGET_S = 0.5
QUERIES = [
    "how do I read an environment variable in a template", "render hook for code blocks",
    "page bundles and resources", "taxonomy terms listing", "image processing resize filters",
    "multilingual content translation", "front matter cascade", "menu configuration entries",
    "shortcode with named parameters", "archetypes for new content", "related content configuration",
    "output formats and media types", "build options for pages", "summary and content length",
    "sections and nested sections", "permalinks configuration tokens", "data files in templates",
    "syntax highlighting options", "table of contents settings", "diagrams with goat and mermaid",
    "link render hook title attribute", "heading anchors render hook", "os.ReadFile in templates",
    "file exists check in a template", "list a directory with os.ReadDir",
]


def extract_hugo(data: Path, dest: Path) -> Path:
    """The Hugo documentation (every .md page) from ``md-hugo-docs/markdown.tar.gz`` into ``dest``."""
    with tarfile.open(data / "md-hugo-docs" / "markdown.tar.gz") as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".md")]
        tar.extractall(dest, members=members, filter="data")
    return dest


def sleuth(*args: str, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-m", "sleuth.cli", *args], capture_output=True, text=True, env=env,
                          check=True)
    return proc.stdout


async def first_answer(index: Path, env: dict[str, str], query: str, module: str, extra: list[str]) -> float:
    """Seconds from spawning the session to the first search's answer."""
    started = time.perf_counter()
    params = StdioServerParameters(command=sys.executable, args=["-m", module, "serve", "--index", str(index), *extra],
                                   env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("project_memory_search", {"query": query, "all_projects": True})
        took = time.perf_counter() - started
        if result.is_error or not result.structured_content.get("results"):
            raise RuntimeError(f"no answer for {query!r}: {result.content[0].text[:200]}")
    return took


def row(mode: str, times: list[float], note: str, target: bool) -> dict[str, object]:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    out: dict[str, object] = {"mode": mode, "runs": len(times), "median s": statistics.median(times),
                              "p90 s": p90, "min s": ordered[0], "max s": ordered[-1], "note": note}
    if target:
        out["target s"] = TARGET_S
        out["pass"] = "yes" if statistics.median(times) <= TARGET_S else "no"
    return out


def measure(index: Path, env: dict[str, str], runs: int) -> list[dict[str, object]]:
    queries = iter(QUERIES * (1 + 4 * runs // len(QUERIES)))
    brokered = {**env, "SLEUTH_BROKER": "1"}

    def stop() -> None:
        sleuth("broker", "stop", "--all", env=brokered)

    cold, warm, warm_cli, alone = [], [], [], []
    for _ in range(max(1, runs // 3)):
        stop()
        cold.append(anyio.run(first_answer, index, brokered, next(queries), "sleuth", []))
    for _ in range(runs):
        warm.append(anyio.run(first_answer, index, brokered, next(queries), "sleuth", []))
    for _ in range(max(1, runs // 2)):
        warm_cli.append(anyio.run(first_answer, index, brokered, next(queries), "sleuth.cli", []))
    status = sleuth("broker", "status", "--index", str(index), env=brokered).strip()
    stop()
    for _ in range(max(1, runs // 2)):
        alone.append(anyio.run(first_answer, index, brokered, next(queries), "sleuth", ["--no-broker"]))
    print(status, file=sys.stderr)
    return [
        row("cold: the session starts the broker", cold, "broker loads the index and the model; stopped "
            "before each run", target=False),
        row("warm: broker running (2nd and later sessions)", warm, "`python -m sleuth serve` (the `sleuth` "
            "command's entry point): a byte pipe to the broker", target=True),
        row("warm, click CLI: python -m sleuth.cli serve", warm_cli, "imports the whole CLI before piping",
            target=True),
        row("in-process (--no-broker)", alone, "the session opens the index and loads the model itself",
            target=False),
    ]


def write_section(out: Path, text: str) -> None:
    """Put ``text`` between the markers in ``out`` (replacing the previous section, else appended)."""
    current = out.read_text(encoding="utf-8") if out.exists() else ""
    block = f"{BEGIN}\n{text.rstrip()}\n{END}\n"
    if BEGIN in current and END in current:
        head, _, rest = current.partition(BEGIN)
        _, _, tail = rest.partition(END)
        current = head + block + tail.lstrip("\n")
    else:
        current = current.rstrip("\n") + "\n\n" + block
    out.write_text(current, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"), help="shared data folder")
    ap.add_argument("--out", type=Path, default=HERE.parent / "docs" / "BENCH.md", help="markdown report")
    ap.add_argument("--runs", type=int, default=10, help="warm sessions measured (other modes: fewer)")
    ap.add_argument("--workdir", type=Path, default=None, help="scratch folder (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = ap.parse_args(argv)
    from sleuth.eval import format_table

    work = args.workdir or Path(tempfile.mkdtemp(prefix="sleuth-broker-bench-"))
    brokers = Path(tempfile.mkdtemp(prefix="sbb-", dir="/tmp"))  # short: socket paths are limited
    env = {**os.environ, "SLEUTH_BROKER_DIR": str(brokers)}
    for chooser in ("SLEUTH_INDEX", "SLEUTH_TOOLS", "SLEUTH_GUIDES"):
        env.pop(chooser, None)
    try:
        info, load0, head = machine_info(), loadavg(), git_head()
        corpus = extract_hugo(args.data, work / "hugo")
        index = work / "idx"
        if not (index / "catalog.sqlite3").exists():
            started = time.perf_counter()
            sleuth("index", str(corpus), "--project", "hugo", "--index", str(index), "--wait", env=env)
            print(f"indexed in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        counts = sleuth("status", "--index", str(index), env=env).splitlines()[1].split(", generation")[0].strip()
        rows = measure(index, env, args.runs)
        load1 = loadavg()
    finally:
        subprocess.run([sys.executable, "-m", "sleuth.cli", "broker", "stop", "--all"], env=env, capture_output=True)
        shutil.rmtree(brokers, ignore_errors=True)
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    columns = ["mode", "runs", "median s", "p90 s", "min s", "max s", "target s", "pass", "note"]
    section = "\n".join([
        "## First answer of a new MCP session (broker, issue 6)", "",
        f"Generated by `python bench/broker_latency.py --data DIR --runs {args.runs}` on "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M')} UTC (sleuth {head}); regenerated, not edited. "
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['ram']} RAM, Python {info['python']}. "
        f"Load average at start {load0}, at end {load1}: other engineers' jobs shared the 2 cores, so these "
        f"are upper bounds.", "",
        f"Index: the Hugo documentation ({counts}), hybrid lanes with all-MiniLM-L6-v2. Each run: spawn "
        "`sleuth serve` with the MCP SDK's stdio client, initialise, one `project_memory_search` (all projects, "
        "a query not asked before) — the clock stops at its answer.", "",
        format_table(rows, columns, markdown=True, precision=3), "",
    ])
    print(section)
    write_section(args.out, section)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
