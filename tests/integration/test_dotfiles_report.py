"""``sleuth index`` and ``sleuth status --files`` leave tools' dotfiles out of the skip report.

A trial found ``.gitignore``, ``.gitattributes`` and ``.editorconfig`` listed among the skipped
files as "unsupported format" after every ``sleuth index`` of a repository: the user's version
control configuration reported as if it were a document sleuth could not read. Such dotfiles are
left out silently (as ripgrep hides dotfiles); a real document sleuth does not read (``.docx``) is
still reported.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from click.testing import CliRunner

from sleuth.cli import cli

ENV = {"SLEUTH_MODEL": "none", "SLEUTH_BROKER": "0"}


def test_index_and_status_report_documents_not_tools_dotfiles(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    for rel, text in ((".gitignore", "*.pyc\n"), (".gitattributes", "* text=auto\n"),
                      (".editorconfig", "root = true\n"), ("docs/.gitkeep", ""),
                      ("docs/guide.md", "# Guide\n\nHow to wombat.\n"), ("docs/report.docx", "PK\n")):
        (root / rel).write_text(text, encoding="utf-8")
    with zipfile.ZipFile(root / "docs" / "bundle.zip", "w") as archive:  # an archive's members alike
        archive.writestr("site/.gitignore", "public/\n")
        archive.writestr("site/intro.md", "# Intro\n\nWombats again.\n")
    idx = tmp_path / "idx"
    runner = CliRunner()
    out = runner.invoke(cli, ["index", str(root), "--index", str(idx)], env=ENV)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert any(line.startswith("indexed project 'repo' into ") and ": 3 files scanned, 2 added, " in line
               and ", 1 skipped (" in line for line in lines), lines
    assert lines[-2:] == ["  1 skipped file(s):", "    1 binary file type (docs/report.docx)"]

    status = runner.invoke(cli, ["status", "--files", "--index", str(idx)], env=ENV)
    assert status.exit_code == 0, status.output
    files = [line for line in status.output.splitlines() if line.startswith("    skipped ")
             or line.startswith("    indexed ")]
    assert [" ".join(line.split()[:2]) for line in files] == [
        "indexed docs/bundle.zip/site/intro.md", "indexed docs/guide.md", "skipped docs/report.docx"]
    assert "gitignore" not in status.output and "editorconfig" not in status.output
