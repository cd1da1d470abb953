"""Start-up cost of the ``sleuth`` command: two source trees (a baseline and a candidate) in one run.

For each tree, with PYTHONPATH set to its ``src`` and PYTHONHASHSEED=0, the instructions executed
(valgrind callgrind, robust to the other jobs sharing the machine) by:

* ``python -c "import sleuth.cli"``;
* ``python -m sleuth --help`` (what the ``sleuth`` command runs: :mod:`sleuth.launcher`);
* ``python -m sleuth search walrus --index IDX`` answered by that tree's running broker;
* ``python -m sleuth status --index IDX``;

and the total of ``python -X importtime -c "import sleuth.cli"`` (the sum of every module's own
import time, median of ``--runs`` processes; wall time, so load-dependent). Prints a markdown table
of both trees and the candidate/baseline ratios.

Usage: python bench/cli_startup.py --baseline /work/main/src --candidate src [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import loadavg, machine_info  # bench/run.py's machine notes

#: A generous wait for a broker to load the index and the model (the machine is shared), in seconds.
BROKER_WAIT_S = 300.0

NOTES = {
    "walrus.md": "# Walrus migration\n\nThe walrus herd moves north in spring.\n\n## Feeding\n\nClams.\n",
    "ledger.md": "# Ledger design\n\nDouble-entry ledger with idempotent writes; the walrus audit trail.\n",
}


def tree_env(src: Path, broker_dir: Path) -> dict[str, str]:
    """The environment of a ``sleuth`` process running ``src``, with its own brokers' folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLEUTH_")}
    env.update(PYTHONPATH=str(src), PYTHONHASHSEED="0", SLEUTH_BROKER="1", SLEUTH_BROKER_DIR=str(broker_dir),
               SLEUTH_BROKER_IDLE_S="900")
    return env


def instructions(args: list[str], env: Mapping[str, str]) -> int:
    """Instructions executed by ``python ARGS`` under callgrind (the process must exit 0)."""
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, *args],
                          capture_output=True, text=True, env=dict(env), check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{args} exited {proc.returncode}: {proc.stderr[-2000:]}")
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in callgrind's output: {proc.stderr[-2000:]}")
    return int(found.group(1))


def importtime_ms(env: Mapping[str, str]) -> float:
    """The sum of the modules' own import times of ``import sleuth.cli``, in milliseconds."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import sleuth.cli"], capture_output=True,
                          text=True, env=dict(env), check=True)
    own_us = [int(m.group(1)) for m in re.finditer(r"^import time:\s+(\d+) \|", proc.stderr, re.MULTILINE)]
    return sum(own_us) / 1000


def modules_of_import(env: Mapping[str, str]) -> int:
    """How many modules ``import sleuth.cli`` leaves in ``sys.modules``."""
    proc = subprocess.run([sys.executable, "-c", "import sys, sleuth.cli; print(len(sys.modules))"],
                          capture_output=True, text=True, env=dict(env), check=True)
    return int(proc.stdout)


@contextmanager
def broker(index: Path, env: Mapping[str, str]) -> Iterator[None]:
    """The index's broker of this tree, running and warm."""
    proc = subprocess.Popen([sys.executable, "-m", "sleuth.cli", "broker", "run", "--index", str(index)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(env))
    try:
        deadline = time.monotonic() + BROKER_WAIT_S
        while True:
            status = subprocess.run([sys.executable, "-m", "sleuth.cli", "broker", "status", "--index", str(index),
                                     "--format", "json"], capture_output=True, text=True, env=dict(env))
            if '"warm": true' in status.stdout:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the broker did not start: {status.stdout} {status.stderr}")
            time.sleep(0.5)
        yield
    finally:
        subprocess.run([sys.executable, "-m", "sleuth.cli", "broker", "stop", "--index", str(index)],
                       capture_output=True, env=dict(env))
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def searched_by_broker(index: Path, env: Mapping[str, str]) -> int:
    """The searches the tree's broker has answered."""
    out = subprocess.run([sys.executable, "-m", "sleuth.cli", "broker", "status", "--index", str(index),
                          "--format", "json"], capture_output=True, text=True, env=dict(env), check=True).stdout
    found = re.search(r'"searches_total": (\d+)', out)
    return int(found.group(1)) if found else -1


def measure(src: Path, index: Path, work: Path, runs: int) -> dict[str, float]:
    """Every number of one tree."""
    env = tree_env(src, Path(tempfile.mkdtemp(prefix="b-", dir=work)))
    out: dict[str, float] = {
        "import sleuth.cli": instructions(["-c", "import sleuth.cli"], env),
        "sleuth --help": instructions(["-m", "sleuth", "--help"], env),
        "sleuth status": instructions(["-m", "sleuth", "status", "--index", str(index)], env),
    }
    with broker(index, env):
        before = searched_by_broker(index, env)
        out["sleuth search (broker answers)"] = instructions(["-m", "sleuth", "search", "walrus", "--index",
                                                              str(index)], env)
        if searched_by_broker(index, env) != before + 1:
            raise RuntimeError("the broker did not answer the measured search")
    out["importtime total ms (median)"] = statistics.median(importtime_ms(env) for _ in range(runs))
    out["modules after import sleuth.cli"] = modules_of_import(env)
    return out


def main() -> None:
    """Measure both trees and print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", type=Path, required=True, help="the baseline's src folder")
    ap.add_argument("--candidate", type=Path, required=True, help="the candidate's src folder")
    ap.add_argument("--runs", type=int, default=5, help="processes for the -X importtime median")
    args = ap.parse_args()
    load_start = loadavg()
    work = Path(tempfile.mkdtemp(prefix="cli-startup-", dir="/tmp"))
    try:
        notes = work / "notes"
        notes.mkdir()
        for name, text in NOTES.items():
            (notes / name).write_text(text, encoding="utf-8")
        index = work / "idx"
        subprocess.run([sys.executable, "-m", "sleuth.cli", "index", str(notes), "--wait", "--index", str(index)],
                       env=tree_env(args.candidate.resolve(), work), capture_output=True, check=True)
        base = measure(args.baseline.resolve(), index, work, args.runs)
        cand = measure(args.candidate.resolve(), index, work, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    info = machine_info()
    print(f"Machine: {info.get('cpu')}, {info.get('cores')} cores, {info.get('ram')} RAM, Python "
          f"{sys.version.split()[0]}. Load average at start {load_start}, at end {loadavg()}.\n")
    print("| what | baseline | candidate | candidate / baseline |")
    print("| --- | ---: | ---: | ---: |")
    for name, b in base.items():
        c = cand[name]
        shown = (lambda v: f"{v:,.1f}") if "ms" in name else (lambda v: f"{v:,.0f}")
        unit = "" if "ms" in name or "modules" in name else " instructions"
        print(f"| {name}{unit} | {shown(b)} | {shown(c)} | {c / b:.3f} |")


if __name__ == "__main__":
    main()
