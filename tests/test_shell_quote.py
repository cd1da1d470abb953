"""The commands sleuth prints for a user to paste (`sleuth index ROOT --index INDEX` for a root that is
gone) name the path in a shell's quoting, control characters included: attack round 2 of stop 38
printed a newline as ``\\x0a`` inside ``'...'``, which names another path."""

from __future__ import annotations

import subprocess

import pytest

from sleuth.ingest.names import one_line, shlex_quote


@pytest.mark.parametrize("path", ["/tmp/plain", "/tmp/a b", "/tmp/r o't $HOME", "/tmp/new\nline", "/tmp/e\x1bsc\tt",
                                  "/tmp/back\\slash\nx", "/tmp/ls\u2028ep", "/tmp/q'\n'"])
def test_a_quoted_path_is_one_printable_line_that_bash_reads_back(path: str) -> None:
    quoted = shlex_quote(path)
    assert one_line(quoted) == quoted and quoted.isprintable()
    read = subprocess.run(["bash", "-c", f"printf '%s' {quoted}"], capture_output=True, text=True, check=True)
    assert read.stdout == path
