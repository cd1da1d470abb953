"""Issue 15 with the official MCP TypeScript SDK (`@modelcontextprotocol/sdk`, installed by npm into
tests/integration/ts_client/node_modules on first use): a Node client with alice's bearer token
searches alpha over streamable HTTP, is denied beta, and a bad token gets 401."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import run_cli
from tests.integration.http_server import HttpServer, http_server, token

CLIENT_DIR = Path(__file__).resolve().parent / "ts_client"
#: Generous safety nets (npm fetches about 100 packages once; node starts in well under a second).
NPM_INSTALL_TIMEOUT_S = 600
NODE_TIMEOUT_S = 180


@pytest.fixture(scope="module")
def ts_client() -> Path:
    """The client folder with the SDK installed (``npm install`` when it is not yet)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    assert node and npm, "node and npm are needed for the TypeScript SDK test (apt-get install nodejs npm)"
    if not (CLIENT_DIR / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json").is_file():
        proc = subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=CLIENT_DIR, capture_output=True,
                              text=True, timeout=NPM_INSTALL_TIMEOUT_S)
        assert proc.returncode == 0, f"npm install failed: {proc.stderr[-2000:]}"
    return CLIENT_DIR


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, HttpServer]]:
    root = tmp_path_factory.mktemp("http-ts")
    for project, text in (("alpha", "# Alpha guide\n\nThe zeppelin hangar manual: lighthouse signal.\n"),
                          ("beta", "# Beta plan\n\nThe quasar lighthouse signal.\n")):
        (root / project).mkdir()
        (root / project / f"{project}.md").write_text(text, encoding="utf-8")
        run_cli("index", str(root / project), "--project", project, "--index", str(root / "idx"))
    run_cli("users", "add", "alice", "--project", "alpha", "--index", str(root / "idx"))
    with http_server(root / "idx", log_dir=root) as server:
        yield root / "idx", server


def node_client(client_dir: Path, url: str, tok: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    proc = subprocess.run(["node", "client.mjs", url, tok, json.dumps(calls)], cwd=client_dir, capture_output=True,
                          text=True, timeout=NODE_TIMEOUT_S)
    assert proc.stdout.strip(), f"no output from the node client ({proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_typescript_sdk_client_searches_alpha_and_is_denied_beta(ts_client: Path,
                                                                 served: tuple[Path, HttpServer]) -> None:
    index, server = served
    out = node_client(ts_client, server.url, token(index, "alice", server.url), [
        ("search_project", {"project_id": "alpha", "query": "lighthouse signal"}),
        ("search_project", {"project_id": "beta", "query": "lighthouse signal"}),
        ("get_projects", {}),
    ])
    assert "search_project" in out["tools"] and "project_memory_search" in out["tools"]
    alpha, beta, projects = out["results"]
    assert [i["item"]["title"] for i in alpha["structuredContent"]["items"]] == ["Alpha guide"]
    assert beta["isError"] is True
    assert beta["content"][0]["text"] == "Error executing tool search_project: project not found or access denied: beta"
    assert [p["project_id"] for p in projects["structuredContent"]["items"]] == ["alpha"]


def test_typescript_sdk_client_with_a_bad_token_gets_401(ts_client: Path, served: tuple[Path, HttpServer]) -> None:
    _, server = served
    out = node_client(ts_client, server.url, "not-a-token", [])
    assert out["code"] == 401 and "invalid_token" in out["error"]
