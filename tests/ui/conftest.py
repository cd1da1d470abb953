"""Fixtures for the tests of ``sleuth ui``: a small real corpus indexed by the real CLI (markdown
with front matter, a decision record, a three-page PDF, a notebook, a broken notebook that fails to
parse, a second project, and a third with two roots holding the same path), a real ``sleuth ui``
process on a free loopback port, and headless Debian chromium driven by Playwright (the system
binary: no browser is downloaded)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pdf_samples import make_pdf

SLEUTH = [sys.executable, "-m", "sleuth.cli"]
UI_TESTS = Path(__file__).resolve().parent
#: The WebMCP polyfill's standalone script, installed by `make ui-test-deps` (npm ci in tests/ui).
POLYFILL = UI_TESTS / "node_modules" / "@mcp-b" / "webmcp-polyfill" / "dist" / "index.iife.js"
#: A generous safety net for one server start (never a measure of speed).
SERVER_START_TIMEOUT_S = 120.0

NOTES: dict[str, str] = {
    "fusion.md": (
        "---\ntitle: Fusing lanes\ntags: [ranking, fusion]\n---\n# Fusing lanes\n\n"
        "## Z-score fusion\n\nThe zebrafinch method normalises each lane's scores into z-scores and adds them "
        "with the lane weights.\n\n## Reciprocal rank fusion\n\nRRF adds one over k plus rank for each lane.\n"
    ),
    "adr/0001-use-sqlite.md": (
        "---\ntitle: Use SQLite for the catalog\nkind: decision\ndate: 2024-03-05\n---\n"
        "# Use SQLite for the catalog\n\n"
        "## Context\n\nThe catalog must survive crashes: the quokkabase option was rejected.\n\n"
        "## Decision\n\nWe keep the catalog in SQLite with write-ahead logging.\n"
    ),
    "plans/roadmap.md": (
        "---\ntitle: Roadmap\ndate: 2025-06-01\n---\n# Roadmap\n\n## Next quarter\n\n"
        "Ship the quokkabase importer and the page that shows why a result ranked.\n"
    ),
    "notes/lanes.md": (
        "# Lanes\n\nEach lane retrieves blocks; bm25 ranks by term statistics, the vector lane by meaning.\n\n"
        "## Zebrafinch notes\n\nThe zebrafinch lane notes say fusion happens after every lane answered.\n"
    ),
}
PDF_PAGES = (
    "Introduction to retrieval evaluation.\nThis page talks about judged sets.",
    "The okapiwombat measure is defined on this second page.\nIt weighs recall against precision.",
    "Conclusions and future work on evaluation.",
)
NOTEBOOK = {
    "nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"language": "python"}},
    "cells": [
        {"cell_type": "markdown", "source": ["# Experiments\n"], "metadata": {}},
        {"cell_type": "markdown", "source": ["## Loading\n", "We load the pangolinset corpus here.\n"], "metadata": {}},
        {"cell_type": "code", "source": ["corpus = load('pangolinset')\n"], "metadata": {}, "outputs": [],
         "execution_count": 1},
    ],
}


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*SLEUTH, *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise AssertionError(f"sleuth {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


@pytest.fixture(scope="session")
def ui_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus folder: ``notes/`` (project notes) and ``other/`` (project other)."""
    base = tmp_path_factory.mktemp("ui-corpus")
    notes = base / "notes"
    for rel, text in NOTES.items():
        path = notes / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (notes / "papers").mkdir()
    (notes / "papers" / "evaluation.pdf").write_bytes(make_pdf(PDF_PAGES, title="Retrieval evaluation"))
    (notes / "experiments.ipynb").write_text(json.dumps(NOTEBOOK), encoding="utf-8")
    (notes / "broken.ipynb").write_text("{ this is not json", encoding="utf-8")
    other = base / "other"
    other.mkdir()
    (other / "secret.md").write_text("# Other project\n\nThe zebrafinch of the other project.\n", encoding="utf-8")
    for lang, word in (("en", "English"), ("ja", "Japanese")):  # one project, two roots, the same path
        (base / "twin" / lang).mkdir(parents=True)
        (base / "twin" / lang / "guide.md").write_text(f"# Guide\n\nThe marmosetword guide in {word}.\n",
                                                      encoding="utf-8")
    return base


@pytest.fixture(scope="session")
def ui_index(ui_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus indexed by the real `sleuth index` with the default model (vectors included)."""
    index = tmp_path_factory.mktemp("ui-index") / "idx"
    run_cli("index", str(ui_corpus / "notes"), "--project", "notes", "--index", str(index))
    run_cli("index", str(ui_corpus / "other"), "--project", "other", "--index", str(index))
    run_cli("index", str(ui_corpus / "twin" / "en"), str(ui_corpus / "twin" / "ja"), "--project", "twin",
            "--index", str(index))
    return index


class UiServer:
    """A running `sleuth ui` process: ``url`` as it printed it (with its token, what a user opens),
    ``base`` (the same without the token), ``token`` and ``port``."""

    def __init__(self, index: Path, *extra: str) -> None:
        self.log = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # read only when it failed
        self.proc = subprocess.Popen([*SLEUTH, "ui", "--port", "0", "--index", str(index), *extra],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert self.proc.stdout is not None
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        line = ""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line or self.proc.poll() is not None:
                break
        if "serving http://" not in line:
            self.stop()
            self.log.seek(0)
            why = self.log.read()
            raise AssertionError(f"sleuth ui did not start: {line!r} {why}")
        self.url = line.split("serving ", 1)[1].split(" ", 1)[0]
        parts = urllib.parse.urlsplit(self.url)
        assert (parts.path, parts.fragment) == ("/", ""), self.url
        (self.token,) = urllib.parse.parse_qs(parts.query, strict_parsing=True)["token"]
        self.base = f"{parts.scheme}://{parts.netloc}/"
        assert parts.port is not None
        self.port = parts.port

    def get(self, path: str, headers: dict[str, str] | None = None, method: str = "GET",
            token: bool = True) -> tuple[int, Any]:
        """``(status, JSON body)`` of a request to the server, sent with its token as a bearer
        header unless ``token`` is False (or ``headers`` give their own ``Authorization``)."""
        sent = {"Authorization": f"Bearer {self.token}"} if token else {}
        request = urllib.request.Request(self.base.rstrip("/") + path, headers={**sent, **(headers or {})},
                                         method=method)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.log.close()


@pytest.fixture(scope="session")
def ui_server(ui_index: Path) -> Iterator[UiServer]:
    """`sleuth ui` over the whole index."""
    server = UiServer(ui_index)
    yield server
    server.stop()


def chromium_path() -> str:
    found = os.environ.get("SLEUTH_TEST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "chromium is missing: apt-get install chromium (or set SLEUTH_TEST_CHROMIUM)"
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian chromium under Playwright, one per test module: Playwright's sync API runs
    an asyncio loop in the main thread while it lives, so a test of another module that runs its
    own loop (``asyncio.run``, ``anyio.run``) after a session-wide browser failed with "Already
    running asyncio in this thread" (tests/ui then tests/integration/test_http.py)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=chromium_path(), headless=True)
        yield chromium
        chromium.close()


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    """A fresh page (1200 x 900) whose script errors fail the test."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield tab
    context.close()
    assert errors == []


def open_page(tab: Any, url: str) -> None:
    """Load the page and wait until its filters are loaded (``html[data-ready]``)."""
    tab.goto(url)
    tab.wait_for_selector("html[data-ready='1']")


def screenshot_image(tab: Any, path: Path) -> Any:
    """A screenshot of the viewport, saved to ``path`` and returned as an RGB PIL image."""
    from PIL import Image

    data = tab.screenshot(path=str(path))
    return Image.open(io.BytesIO(data)).convert("RGB")
