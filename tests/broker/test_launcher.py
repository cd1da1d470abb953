"""The `sleuth` entry point's fast path: serve options read by hand, anything else to click."""

from __future__ import annotations

import subprocess
import sys

from sleuth.launcher import parse_serve_args


def test_serve_options_are_read_in_both_forms() -> None:
    assert parse_serve_args([]) == {"projects": [], "tools": None, "guides": None, "events": None, "index": None}
    got = parse_serve_args(["--index", "/i", "--project=a", "--project", "b", "--tools=memory", "--guides", "g.json",
                            "--events", "e.jsonl"])
    assert got == {"projects": ["a", "b"], "tools": "memory", "guides": "g.json", "events": "e.jsonl", "index": "/i"}


def test_anything_else_goes_to_the_full_cli() -> None:
    for args in (["--help"], ["-h"], ["--no-broker"], ["--index"], ["--bogus", "x"], ["extra"], ["--tool", "x"]):
        assert parse_serve_args(args) is None, args


def test_importing_the_fast_path_stays_light() -> None:
    # The thin `sleuth serve` must not pay for numpy, tantivy, pydantic, click or the MCP SDK.
    code = ("import sys, sleuth.launcher, sleuth.broker.client; "
            "heavy = [m for m in ('numpy', 'tantivy', 'pydantic', 'click', 'mcp', 'anyio', 'onnxruntime') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""
