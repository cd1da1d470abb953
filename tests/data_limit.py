"""Run a function in a child process that may allocate only a little more memory than it starts
with (``RLIMIT_DATA`` over its ``VmData``): a test that a planted huge value is never loaded (the
child fails with MemoryError when it is). One child script for the SQLite and PostgreSQL tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

#: How long a child may run, in seconds (a guard against a hang, never a measure of speed).
CHILD_TIMEOUT_S = 600

_CHILD = """
import importlib, resource, sys
target, headroom_mib, preload = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for name in filter(None, preload.split(",")):
    importlib.import_module(name)
module, _, attr = target.partition(":")
function = getattr(importlib.import_module(module), attr)  # imported before the limit: not measured

def data_bytes():
    for line in open("/proc/self/status"):
        if line.startswith("VmData:"):
            return int(line.split()[1]) * 1024
    raise SystemExit("no VmData")

limit = data_bytes() + headroom_mib * 1024 * 1024
resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
function(*sys.argv[4:])
"""


def run_with_data_headroom(target: str, headroom_mib: int, *args: str,
                           preload: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """Run ``target`` (``"package.module:function"``) with the string arguments ``args`` in a child
    process that may allocate ``headroom_mib`` MiB more than it holds once ``target``'s module and
    the ``preload`` modules are imported; returns the finished process (output as text)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-c", _CHILD, target, str(headroom_mib), ",".join(preload), *args],
                          capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT_S)
