"""A new user's trial (issue 14 item 4): a query word found nowhere in the corpus went unreported
when another word matched -- `sleuth search "taxnomy templates"` answered on "templates" alone,
silently. The words no indexed document holds are named (a few, each cut short) on every surface
that shows notices: the CLI's text and JSON, and the MCP envelope."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession

from tests.integration.conftest import run_cli
from tests.integration.mcp_session import session as mcp_session
from tests.integration.test_memory_mcp import ok, session

ENV = {"SLEUTH_MODEL": "none", "SLEUTH_BROKER": "0"}
NOTICE = "no indexed document holds the word(s) 'taxnomy'; the results match the other words"


def _index(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "templates.md").write_text("# Templates\n\nOur note templates live here.\n", encoding="utf-8")
    (notes / "tides.md").write_text("# Tides\n\nThe harbour tide table.\n", encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(notes), "--project", "notes", "--index", str(index), env=ENV)
    return index


def test_cli_text_and_json_name_the_absent_words(tmp_path: Path) -> None:
    index = _index(tmp_path)
    text = run_cli("search", "taxnomy templates", "--index", str(index), env=ENV).stdout.splitlines()
    # (no line for the vector lane: model = "none" is a choice)
    assert text[0:2] == [f"({NOTICE})", text[1]] and text[1].startswith(" 1. templates.md  [notes]  ")
    found = json.loads(run_cli("search", "taxnomy templates", "--index", str(index), "--format", "json",
                               env=ENV).stdout)
    assert [h["path"] for h in found["hits"]] == ["templates.md"]
    assert (found["notice"], found["word_notice"]) == (NOTICE, NOTICE)
    every = json.loads(run_cli("search", "templates tide", "--index", str(index), "--format", "json", env=ENV).stdout)
    assert (every["notice"], every["word_notice"]) == (None, None)  # every word occurs: nothing to say
    many = json.loads(run_cli("search", f"qwxa qwxb \"templates\" qwxc qwxd {'z' * 60}", "--index", str(index),
                              "--format", "json", env=ENV).stdout)
    assert many["word_notice"] == ("no indexed document holds the word(s) 'qwxa', 'qwxb', 'qwxc' and 2 more; the "
                                   "results match the other words")
    long = json.loads(run_cli("search", f"templates {'z' * 60}", "--index", str(index), "--format", "json",
                              env=ENV).stdout)
    assert long["word_notice"] == (f"no indexed document holds the word(s) '{'z' * 40}…'; the results match the "
                                   "other words")
    none = json.loads(run_cli("search", "taxnomy qwxa", "--index", str(index), "--format", "json", env=ENV).stdout)
    assert none["word_notice"] == "no word of the query occurs in the searched documents"  # as before


def test_mcp_envelope_names_the_absent_words(tmp_path: Path) -> None:
    index = _index(tmp_path)

    async def script(s: ClientSession) -> dict[str, Any]:
        return ok(await s.call_tool("project_memory_search", {"query": "taxnomy templates", "project_id": "notes"}))

    out = session(index, script, {"SLEUTH_MODEL": "none"})
    assert [r["path"] for r in out["results"]] == ["templates.md"]
    assert out["meta"]["notice"] == NOTICE


def test_a_project_limited_session_is_told_nothing_of_another_projects_words(tmp_path: Path) -> None:
    """Attack session 32 (medium): the absent-word check looked the words up in the whole index, so a
    session limited to one project (`sleuth serve --project notes`, or an HTTP user of it) learnt
    whether a word occurs in another project's documents: 'zanzibar templates' was answered without
    the notice when only the other project held 'zanzibar', and with it otherwise -- an oracle for
    any word of the projects it may not see. Now the words of the searched projects count only, so
    that word is named as absent, word for word like one that no document holds."""
    index = _index(tmp_path)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "plans.md").write_text("# Plans\n\nThe zanzibar acquisition closes in May.\n", encoding="utf-8")
    run_cli("index", str(secret), "--project", "secret", "--index", str(index), env=ENV)
    args = ["--index", str(index), "--project", "notes", "--no-broker"]
    calls = [("project_memory_search", {"query": f"{word} templates", "project_id": "notes"})
             for word in ("zanzibar", "taxnomy")]
    zanzibar, taxnomy = (ok(r)["meta"]["notice"] for r in mcp_session(args, calls, env=ENV)["results"])
    assert (zanzibar, taxnomy) == (NOTICE.replace("taxnomy", "zanzibar"), NOTICE)
    scoped = json.loads(run_cli("search", "zanzibar templates", "--project", "notes", "--index", str(index),
                                "--format", "json", env=ENV).stdout)
    assert scoped["word_notice"] == NOTICE.replace("taxnomy", "zanzibar")
    whole = json.loads(run_cli("search", "zanzibar templates", "--index", str(index), "--format", "json",
                               env=ENV).stdout)
    assert whole["word_notice"] is None  # every project searched: the word occurs
