"""An unknown key in an index's config.toml (a new user's trial: ``lanse = ["bm25"]`` was silently
ignored) is refused by every command that reads the file, as a bad value is: exit code 2 and one
line naming the key, the file and the closest known key, never a traceback; a tool call after the
file was edited under a running MCP server answers the same as a tool error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.integration.conftest import run_cli
from tests.integration.http_server import free_port
from tests.integration.mcp_session import serve_env, text_of

LEXICAL = {"SLEUTH_MODEL": "none"}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lexical index of one note (project "notes") with one HTTP user."""
    root = tmp_path_factory.mktemp("cfg")
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_text("# Deploy\n\nThe netlify deploy notes.\n", encoding="utf-8")
    idx = root / "idx"
    run_cli("index", str(root / "notes"), "--project", "notes", "--index", str(idx), env=LEXICAL)
    run_cli("users", "add", "alice", "--project", "notes", "--index", str(idx))
    return idx


@pytest.mark.parametrize("command", [
    ["search", "deploy"], ["get", "a.md"], ["status"], ["index", "{notes}", "--project", "notes"],
    ["serve", "--no-broker"], ["serve", "--http", "127.0.0.1:{port}"], ["ui", "--port", "0"],
])
def test_every_command_refuses_an_unknown_key(index: Path, command: list[str]) -> None:
    config = index / "config.toml"
    config.write_text('lanse = ["bm25"]\n', encoding="utf-8")
    try:
        args = [arg.format(port=free_port(), notes=index.parent / "notes") for arg in command]
        proc = run_cli(*args, "--index", str(index), check=False, env=LEXICAL)
    finally:
        config.unlink()
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"error: unknown key `lanse` in {config}: did you mean `lanes`?\n")


def test_a_tool_call_after_the_file_is_edited_is_a_readable_tool_error(index: Path) -> None:
    """project_memory_search reads ``default_project`` from the file at each call: a key misspelt
    while the server runs is the call's error."""
    config = index / "config.toml"

    async def main() -> list[Any]:
        params = StdioServerParameters(command=sys.executable, env=serve_env(LEXICAL),
                                       args=["-m", "sleuth.cli", "serve", "--no-broker", "--index", str(index)])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            call = ("project_memory_search", {"query": "deploy", "limit": 1})
            before = await client.call_tool(*call)
            config.write_text('default_projekt = "notes"\n', encoding="utf-8")
            return [before, await client.call_tool(*call)]

    try:
        before, after = anyio.run(main)
    finally:
        config.unlink()
    assert not before.is_error
    assert (after.is_error, text_of(after)) == (
        True, f"unknown key `default_projekt` in {config}: did you mean `default_project`?")
