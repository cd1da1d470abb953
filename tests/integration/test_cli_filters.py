"""Issue 17.2 on the real command line: `sleuth search` filters and pages, `sleuth get` by path and
block id, root labels when a project has two roots, cells and pages as locations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import run_cli

LEXICAL = {"SLEUTH_MODEL": "none"}


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    os.utime(p, (1_600_000_000, 1_600_000_000))  # 2020-09-13


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("site")
    en, ja = base / "en", base / "ja"
    write(en, "publish.css", "/* publish quokka styles */\nbody { color: black; }\n")
    write(ja, "publish.css", "/* publish quokka styles, ja */\nbody { color: red; }\n")
    write(en, "guide/deploy.md", "---\ntags: [ops]\ndate: 2024-05-01\n---\n# Deploy\n\nquokka deploy steps.\n")
    write(en, "adr/0001-use-files.md", "# 1. Use files\n\nDate: 2019-03-01\n\n## Status\n\nAccepted\n\n"
          "## Context\n\nquokka storage.\n")
    cells = [{"cell_type": "markdown", "source": "# Numbers"}, {"cell_type": "code", "source": "wombat = 1"}]
    write(en, "nb/n.ipynb", json.dumps({"cells": cells, "metadata": {}, "nbformat": 4}))
    index = base / "idx"
    run_cli("index", str(en), str(ja), "--project", "site", "--index", str(index), env=LEXICAL)
    return index, base


def search(index: Path, *args: str) -> list[dict]:
    out = run_cli("search", *args, "--index", str(index), "--format", "json", env=LEXICAL).stdout
    return json.loads(out)["hits"]


def test_filters_and_pages(site: tuple[Path, Path]) -> None:
    index, _ = site
    assert [h["path"] for h in search(index, "quokka", "--tag", "OPS")] == ["guide/deploy.md"]
    assert [h["path"] for h in search(index, "quokka", "--kind", "decision", "--until", "2019-03-01")] == [
        "adr/0001-use-files.md"]
    assert [h["path"] for h in search(index, "quokka", "--since", "2024-01-01T00:00:00Z")] == ["guide/deploy.md"]
    assert [(h["root_label"], h["path"]) for h in search(index, "quokka", "--path", "ja/*.css")] == [
        ("ja", "publish.css")]
    whole = [h["doc_id"] for h in search(index, "quokka", "--limit", "4")]
    pages = [h["doc_id"] for off in ("0", "2") for h in search(index, "quokka", "--limit", "2", "--offset", off)]
    assert len(whole) == 4 and pages == whole
    bad = run_cli("search", "quokka", "--index", str(index), "--since", "last week", check=False, env=LEXICAL)
    assert bad.returncode == 2 and "'last week' is not a date (2024-03-01)" in bad.stderr
    bad = run_cli("search", "quokka", "--index", str(index), "--kind", "markdown", check=False, env=LEXICAL)
    assert bad.returncode == 2 and "'document', 'note', 'paper', 'decision'" in bad.stderr


def test_text_output_shows_root_labels_and_locations(site: tuple[Path, Path]) -> None:
    index, _ = site
    out = run_cli("search", "publish quokka styles", "--index", str(index), env=LEXICAL).stdout
    assert "en/publish.css  [site]  code" in out and "ja/publish.css  [site]  code" in out
    out = run_cli("search", "wombat", "--index", str(index), "--limit", "1", "--lanes", "bm25", env=LEXICAL).stdout
    assert out.splitlines()[0].startswith(" 1. en/nb/n.ipynb  [site]  notebook  score ")
    assert out.splitlines()[0].endswith("  cells 1-2")  # two small cells share a block


def test_get_by_path_and_block_id(site: tuple[Path, Path]) -> None:
    index, _ = site
    ambiguous = run_cli("get", "publish.css", "--index", str(index), check=False, env=LEXICAL)
    assert ambiguous.returncode != 0 and "names 2 documents: en/publish.css" in ambiguous.stderr
    ja = json.loads(run_cli("get", "ja/publish.css", "--index", str(index), "--format", "json", env=LEXICAL).stdout)
    assert (ja["root_label"], ja["path"], ja["kind"], ja["format"]) == ("ja", "publish.css", "code", "code")
    adr = run_cli("get", "adr/0001-use-files.md", "--index", str(index), env=LEXICAL).stdout
    assert adr.startswith("# 1. Use files\n(site: en/adr/0001-use-files.md, decision, accepted, revision ")
    block = ja["blocks"][0]["block_id"]
    shown = run_cli("get", block, "--index", str(index), env=LEXICAL).stdout
    assert shown.startswith(f"# publish.css\n(site: ja/publish.css, lines 1-2, block {block})\n")
    assert "color: red" in shown


def test_shell_completion_is_clicks_own() -> None:
    sleuth = Path(sys.executable).parent / "sleuth"
    env = {**os.environ, "_SLEUTH_COMPLETE": "bash_complete", "COMP_WORDS": "sleuth search x --kind d",
           "COMP_CWORD": "4"}
    out = subprocess.run([str(sleuth)], capture_output=True, text=True, env=env, timeout=60, check=True).stdout
    assert out.split() == ["plain,document", "plain,decision"]
    script = subprocess.run([str(sleuth)], capture_output=True, text=True, timeout=60, check=True,
                            env={**os.environ, "_SLEUTH_COMPLETE": "bash_source"}).stdout
    assert "complete -o nosort -F _sleuth_completion sleuth" in script


@pytest.mark.parametrize(("glob", "reason"), [
    ("[z-a]", "bad character range z-a"),
    ("[\\d-a]", "bad character range d-a"),
    ("[[:foo:]]", "invalid character class range: [:foo:]"),
])
def test_a_path_glob_pathspec_cannot_compile_is_a_readable_error(site: tuple[Path, Path], glob: str,
                                                                 reason: str) -> None:
    """Attack session 34: these globs ended ``sleuth search`` with a traceback (re.error, re2 error)."""
    index, _ = site
    bad = run_cli("search", "quokka", "--path", glob, "--index", str(index), check=False, env=LEXICAL)
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr == f"error: path glob {glob!r} is not a valid glob: {reason}\n"


def test_a_posix_class_in_a_path_glob_prints_no_library_warning(site: tuple[Path, Path]) -> None:
    index, _ = site
    out = run_cli("search", "quokka", "--path", "[[:alpha:]]*/*.css", "--index", str(index), "--format", "json",
                  "--lanes", "bm25", env=LEXICAL)
    assert [(h["root_label"], h["path"]) for h in json.loads(out.stdout)["hits"]] == [("en", "publish.css"),
                                                                                   ("ja", "publish.css")]
    assert "Warning" not in out.stderr, out.stderr
