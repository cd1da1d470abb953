"""Fault injection for drills and tests: ``SLEUTH_FAULT_KILL_AT=POINT`` makes a process kill itself
(SIGKILL, as ``kill -9`` would) when it reaches ``POINT``, so a crash lands exactly where a test
wants it instead of after a guessed delay. Standard library only.

Points (a value matches every point it is a prefix of):
- ``record-written``: a record's file is in place, before it is indexed;
- ``record-committed``: a record has been written and indexed, before its receipt is answered;
- ``scratch:<file name>``: a temporary file for ``<file name>`` (e.g. ``scratch:vectors.``) has
  been written, before it is renamed into place;
- ``milvus:stats-committed``, ``milvus:lex-flushed``: a sync of the Milvus lanes has committed its
  statistics to the catalog / flushed its lexical rows to Milvus, before it records the generation;
- ``milvus:lex-part:<n>.``: the rows sync has sent its ``n``-th part;
- ``milvus:lex-aliased``, ``milvus:dense-aliased``: a rebuild has pointed the alias at the new
  collection, before the old one is dropped and the generation recorded.
"""

from __future__ import annotations

import os
import signal

#: Environment variable naming the point where the process kills itself.
KILL_AT_ENV = "SLEUTH_FAULT_KILL_AT"


def kill_point(point: str) -> None:
    """Kill this process with SIGKILL when ``$SLEUTH_FAULT_KILL_AT`` is a prefix of ``point``."""
    wanted = os.environ.get(KILL_AT_ENV)
    if wanted and point.startswith(wanted):
        os.kill(os.getpid(), signal.SIGKILL)
