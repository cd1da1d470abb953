"""A new user's trial: a file changed or gone since it was indexed looked current in text output.

`sleuth search` (text) showed such a hit unmarked although its JSON said ``"freshness": "stale"``,
and `sleuth get` printed the indexed text with no word, in text and JSON. Both say it now, with
the real CLI on a real folder; `get` still prints the indexed text and exits 0."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.conftest import run_cli

ENV = {"SLEUTH_MODEL": "none", "SLEUTH_BROKER": "0"}


def _indexed_then_edited(tmp_path: Path) -> tuple[Path, Path]:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "onboarding.md").write_text("# Onboarding\n\nCollect your laptop on day one.\n", encoding="utf-8")
    (notes / "glossary.md").write_text("# Glossary\n\nTaxonomy: how we file notes.\n", encoding="utf-8")
    (notes / "tools.md").write_text("# Tools\n\nThe laptop runs the editor.\n", encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(notes), "--project", "notes", "--index", str(index), env=ENV)
    (notes / "onboarding.md").write_text("# Onboarding\n\nCollect your laptop and badge on day one.\n",
                                         encoding="utf-8")
    (notes / "glossary.md").rename(notes / "glossary-old.md")
    return notes, index


def test_text_search_marks_changed_and_gone_hits(tmp_path: Path) -> None:
    _notes, index = _indexed_then_edited(tmp_path)
    out = run_cli("search", "laptop", "--index", str(index), env=ENV).stdout.splitlines()
    heads = {line.split()[1]: line for line in out if line[:3].strip().rstrip(".").isdigit()}
    assert heads["onboarding.md"].endswith(
        "  (stale: the file changed since it was indexed: run `sleuth index` again)")
    assert "stale" not in heads["tools.md"]
    gone = run_cli("search", "taxonomy", "--index", str(index), env=ENV).stdout.splitlines()
    # model = "none" is a choice: the default lanes' search does not say the vector lane is missing
    assert gone[0].startswith(" 1. glossary.md  [notes]  ")
    assert gone[0].endswith("  (stale: the file is gone since it was indexed: run `sleuth index` again)")
    asked = run_cli("search", "taxonomy", "--lanes", "bm25,vector", "--index", str(index), env=ENV).stdout
    assert asked.splitlines()[0] == "(lane vector unavailable: no embedding model configured (model = 'none'))"
    hit = json.loads(run_cli("search", "taxonomy", "--index", str(index), "--format", "json", env=ENV).stdout)
    assert hit["hits"][0]["freshness"] == "stale"


def test_get_says_the_file_changed_or_is_gone(tmp_path: Path) -> None:
    _notes, index = _indexed_then_edited(tmp_path)
    changed = run_cli("get", "onboarding.md", "--index", str(index), env=ENV)
    assert changed.returncode == 0 and "Collect your laptop on day one." in changed.stdout  # the indexed text
    assert changed.stderr.strip() == ("sleuth get: stale: the file changed since it was indexed; shown as indexed"
                                      " -- run `sleuth index` again to read it anew")
    gone = run_cli("get", "glossary.md", "--index", str(index), env=ENV)
    assert gone.returncode == 0 and "Taxonomy: how we file notes." in gone.stdout
    assert gone.stderr.strip() == ("sleuth get: stale: the file is gone since it was indexed; shown as indexed"
                                   " -- run `sleuth index` again to read it anew")
    current = run_cli("get", "tools.md", "--index", str(index), env=ENV)
    assert (current.returncode, current.stderr) == (0, "")
    as_json = {ref: json.loads(run_cli("get", ref, "--index", str(index), "--format", "json", env=ENV).stdout)
               for ref in ("onboarding.md", "glossary.md", "tools.md")}
    assert {ref: (d["freshness"], d["stale_reason"]) for ref, d in as_json.items()} == {
        "onboarding.md": ("stale", "changed"), "glossary.md": ("stale", "gone"), "tools.md": ("current", None)}
    block_id = as_json["onboarding.md"]["blocks"][0]["block_id"]
    block = json.loads(run_cli("get", block_id, "--index", str(index), "--format", "json", env=ENV).stdout)
    assert (block["freshness"], block["stale_reason"]) == ("stale", "changed")
