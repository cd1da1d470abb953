"""Shared by the tests of `sleuth serve --http` over a real server: a small index with users, and
the audit lines as the server's writer thread appends them."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import run_cli

#: Polls of the audit file (written by a thread, off the request path): a safety net, in seconds.
AUDIT_WAIT_S = 60.0


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of projects alpha and beta with users alice, bob and gina (alpha, read) and
    wendy (alpha, read and write)."""
    root = tmp_path_factory.mktemp("httpd")
    for project, text in (("alpha", "# Alpha guide\n\nThe lighthouse signal.\n"),
                          ("beta", "# Beta plan\n\nThe quasar.\n")):
        (root / project).mkdir()
        (root / project / "guide.md").write_text(text, encoding="utf-8")
        run_cli("index", str(root / project), "--project", project, "--index", str(root / "idx"))
    for name in ("alice", "bob", "gina"):
        run_cli("users", "add", name, "--project", "alpha", "--index", str(root / "idx"))
    run_cli("users", "add", "wendy", "--project", "alpha", "--write", "--index", str(root / "idx"))
    return root / "idx"


def audit_lines(index: Path, wanted: Callable[[list[dict[str, Any]]], bool]) -> list[dict[str, Any]]:
    """The audit lines, once ``wanted(lines)`` holds (or the safety net ran out)."""
    path = index / "audit.jsonl"
    deadline = time.monotonic() + AUDIT_WAIT_S
    while True:
        lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        if wanted(lines) or time.monotonic() > deadline:
            return lines
        time.sleep(0.1)
