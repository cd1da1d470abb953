"""What `sleuth status --files` and `sleuth doctor` say to people, on a real index (a new user's
trial: the --files header read as if only the stale files followed, and doctor called the vector
family "available" while a third of the blocks had a vector)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleuth.commands.health import render_doctor, render_status
from sleuth.engine import Engine
from sleuth.memory.doctor import doctor


def test_status_files_header_and_doctor_name_what_is_partial(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(3):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nAbout tides, note {i}.\n", encoding="utf-8")
    with Engine(tmp_path / "idx") as engine:
        engine.index([notes], project="notes")  # embedded
        for i in range(3, 5):
            (notes / f"n{i}.md").write_text(f"# Note {i}\n\nAbout reefs, note {i}.\n", encoding="utf-8")
        engine.index([notes], project="notes", embed=False)  # two blocks wait, and no worker was started
        (notes / "n0.md").write_text("# Note 0\n\nChanged since.\n", encoding="utf-8")
        status = render_status(engine.status(files=True), verbose=False)
        text = render_doctor(doctor(engine))
    assert "  5 file(s), 1 of them changed or gone since indexed (stale); every file:" in status
    assert "n1.md  (indexed" in status and ", current)" in status
    vector = next(line for line in text.splitlines() if line.startswith("  retrieval family vector"))
    assert vector.endswith("available (3 of 5 blocks embedded: it does not see the others, and no process is"
                           " embedding them: run `sleuth embed` to resume)")
    bm25 = next(line for line in text.splitlines() if line.startswith("  retrieval family bm25"))
    assert bm25.endswith(": available")


def test_doctor_text_counts_the_stale_documents_it_does_not_list(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A new user's trial (365 pages edited, doctor printed 100 `stale:` lines and stopped there,
    nothing saying that 265 more were stale): the text names how many it leaves out and where they
    are all listed."""
    import sleuth.memory.doctor as doctor_module

    monkeypatch.setattr(doctor_module, "STALE_LISTED_MAX", 2)
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(5):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nAbout tides, note {i}.\n", encoding="utf-8")
    with Engine(tmp_path / "idx") as engine:
        engine.index([notes], project="notes", embed=False)
        for i in range(5):
            (notes / f"n{i}.md").write_text(f"# Note {i}\n\nChanged since, note {i}.\n", encoding="utf-8")
        lines = render_doctor(doctor(engine)).splitlines()
    assert "  project notes: 5 documents, 5 blocks, 5 stale, 0 skipped; memory folder " in "\n".join(lines)
    assert sum(line.startswith("  stale: notes n") for line in lines) == 2
    assert ("  ... and 3 more stale document(s) not listed here: `sleuth status --files` lists every file"
            in lines)


def test_doctor_and_status_files_show_the_paths_of_a_project_of_several_roots_as_search_does(
        tmp_path: Path) -> None:
    """A new user's trial (the Hugo docs, one project of 17 folders): `sleuth search` showed
    `render-hooks/_index.md`, while doctor's stale lines and `sleuth status --files` showed 19 lines
    of a bare `_index.md`, no telling which. Now they show the root's label as search does; a
    project of one root keeps its bare paths. Files of several projects are each shown with their
    project, as doctor shows them (`status --files` had no project column)."""
    from click.testing import CliRunner

    from sleuth.cli import cli

    site, notes = tmp_path / "site", tmp_path / "notes"
    for folder in (site / "en", site / "ja", notes):
        folder.mkdir(parents=True)
        (folder / "_index.md").write_text(f"# {folder.name}\n\nWelcome to {folder.name}.\n", encoding="utf-8")
    idx = tmp_path / "idx"
    with Engine(idx) as engine:
        engine.index([site / "en", site / "ja"], project="site", embed=False)
        engine.index([notes], project="notes", embed=False)
    for folder in (site / "ja", notes):
        (folder / "_index.md").write_text("# Changed\n\nSince indexed.\n", encoding="utf-8")
    env = {"SLEUTH_MODEL": "none", "SLEUTH_BROKER": "0"}
    doctor_text = CliRunner().invoke(cli, ["doctor", "--index", str(idx)], env=env).output.splitlines()
    assert sorted(line.split(" (indexed ")[0] for line in doctor_text if line.startswith("  stale:")) == [
        "  stale: notes _index.md", "  stale: site ja/_index.md"]
    status = CliRunner().invoke(cli, ["status", "--files", "--index", str(idx)], env=env).output.splitlines()
    assert sorted(line.split("  (")[0] for line in status if line.startswith("    indexed ")) == [
        "    indexed  notes _index.md", "    indexed  site en/_index.md", "    indexed  site ja/_index.md"]
