"""Reports sized for people and agents (real `sleuth` processes and a real MCP session): skipped
files summarised by reason, the doctor bounded, tabular data files kept out of prose results."""

from __future__ import annotations

import json
from pathlib import Path

from sleuth.memory.doctor import DOCTOR_LISTED_MAX
from sleuth.reports import SKIPPED_EXAMPLES_PER_REASON, STATUS_SKIPPED_LISTED_MAX
from tests.integration.conftest import run_cli
from tests.integration.mcp_session import session

LEXICAL = {"SLEUTH_MODEL": "none"}
#: Files of each skipped kind in the vault: more than every list's bound.
EXES, IMAGES = 150, 67


def vault(root: Path) -> Path:
    """Two notes, ``EXES`` binary programs and ``IMAGES`` text files of a format not indexed (both
    skipped, by different rules)."""
    (root / "bin").mkdir(parents=True)
    (root / "img").mkdir()
    (root / "a.md").write_text("# Alpha\n\nThe alpha note.\n", encoding="utf-8")
    (root / "b.md").write_text("# Beta\n\nThe beta note.\n", encoding="utf-8")
    for i in range(EXES):
        (root / "bin" / f"tool{i:03d}.exe").write_bytes(b"MZ\0\0")
    for i in range(IMAGES):
        (root / "img" / f"pic{i:03d}.xyz").write_text("not indexed\n", encoding="utf-8")
    return root


def test_skipped_files_are_summarised_by_reason_and_listed_on_request(tmp_path: Path) -> None:
    root, index = vault(tmp_path / "vault"), tmp_path / "idx"
    out = run_cli("index", str(root), "--project", "vault", "--index", str(index), env=LEXICAL).stdout.splitlines()
    skipped = [line for line in out if line.endswith(" skipped file(s):") or line.startswith("    ")]
    assert skipped[0] == f"  {EXES + IMAGES} skipped file(s):"
    assert skipped[1] == (f"    {EXES} binary file type (bin/tool000.exe, bin/tool001.exe, bin/tool002.exe,"
                          f" ... ({EXES - SKIPPED_EXAMPLES_PER_REASON} more))")
    assert skipped[2] == (f"    {IMAGES} unsupported format (img/pic000.xyz, img/pic001.xyz, img/pic002.xyz, ..."
                          f" ({IMAGES - SKIPPED_EXAMPLES_PER_REASON} more))")
    assert skipped[3] == ("    every skipped file and its reason: `sleuth index --verbose` or"
                          " `sleuth status --verbose`")
    assert len(out) < 10  # not one line per file

    verbose = run_cli("index", str(root), "--project", "vault", "--index", str(index), "--verbose",
                      env=LEXICAL).stdout
    assert verbose.count("\n  skipped ") == EXES + IMAGES and "  skipped bin/tool149.exe: binary file type: .exe" \
        in verbose

    report = json.loads(run_cli("index", str(root), "--project", "vault", "--index", str(index), "--format", "json",
                                env=LEXICAL).stdout)
    assert len(report["skipped"]) == EXES + IMAGES  # JSON keeps every file for scripts
    assert [(g["reason"], g["count"]) for g in report["skipped_by_reason"]][0] == ("binary file type", EXES)

    st = json.loads(run_cli("status", "--index", str(index), "--format", "json").stdout)
    assert st["skipped"] == EXES + IMAGES and len(st["skipped_files"]) == STATUS_SKIPPED_LISTED_MAX
    assert sum(g["count"] for g in st["skipped_by_reason"]) == EXES + IMAGES
    every = json.loads(run_cli("status", "--index", str(index), "--format", "json", "--verbose").stdout)
    assert len(every["skipped_files"]) == EXES + IMAGES
    text = run_cli("status", "--index", str(index)).stdout
    assert f"  {EXES + IMAGES} skipped file(s):\n    {EXES} binary file type (bin/tool000.exe" in text
    assert "tool149.exe" not in text and "tool149.exe" in run_cli("status", "--index", str(index), "-v").stdout
    assert text.count("\n") < 20


def test_project_memory_doctor_is_bounded(tmp_path: Path) -> None:
    root, index = vault(tmp_path / "vault"), tmp_path / "idx"
    run_cli("index", str(root), "--project", "vault", "--index", str(index), env=LEXICAL)
    out = session(["--index", str(index), "--tools", "memory"], [("project_memory_doctor", {})], env=LEXICAL)
    (result,) = out["results"]
    doctor = result.structured_content["doctor"]
    assert doctor["skipped_file_count"] == EXES + IMAGES and len(doctor["skipped_files"]) == DOCTOR_LISTED_MAX
    assert [(g["reason"], g["count"], len(g["examples"])) for g in doctor["skipped_by_reason"]] == [
        ("binary file type", EXES, SKIPPED_EXAMPLES_PER_REASON),
        ("unsupported format", IMAGES, SKIPPED_EXAMPLES_PER_REASON)]
    assert doctor["projects"][0]["skipped_files"] == EXES + IMAGES
    assert len(json.dumps(doctor)) < 12_000  # was one entry per file: about 200 bytes each
    # the model turned off (LEXICAL) is reported, not a fault: the vault is well (it was ok: false)
    assert doctor["ok"] is True and doctor["lanes"]["vector"]["available"] is False


def tabular_corpus(root: Path) -> Path:
    """Four short notes and a 15,000-line CSV whose name and rows hold every word of the query."""
    (root / "docs").mkdir(parents=True)
    (root / "data").mkdir()
    lines = ["timestamp,operation,file,bytes,status"]
    lines += [f"2024-03-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00,read,file_{i % 500}.csv,{(i * 7919) % 99999},ok"
              for i in range(15_000)]
    (root / "data" / "file_reads.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "data" / "export.json").write_text(json.dumps([{"row": i, "value": "x" * 20} for i in range(8_000)]),
                                               encoding="utf-8")
    (root / "package.json").write_text('{"name": "demo", "scripts": {"build": "tsc"}}\n', encoding="utf-8")
    notes = {
        "importing-data.md": "# Importing data\n\nPython's csv module parses comma-separated values: open the file"
                             " with newline='' and iterate over csv.reader, or use csv.DictReader.\n",
        "file-io.md": "# File input and output\n\nOpen files with a context manager so they are closed. Read text"
                      " with read() or line by line.\n",
        "pandas.md": "# Loading tables with pandas\n\npandas.read_csv loads a comma-separated file into a"
                     " DataFrame; read_excel reads spreadsheets.\n",
        "writing-json.md": "# Writing JSON\n\nSerialise objects with json.dump; pass indent=2 for readable output.\n",
    }
    for name, text in notes.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    return root


def test_a_large_csv_no_longer_crowds_out_prose(tmp_path: Path) -> None:
    root = tabular_corpus(tmp_path / "corpus")
    index = tmp_path / "idx"  # the default rule, with every default lane (the vector lane too)
    report = json.loads(run_cli("index", str(root), "--project", "corpus", "--index", str(index), "--format",
                                "json").stdout)
    reasons = {s["path"]: s["reason"] for s in report["skipped"]}
    assert reasons == {
        "data/file_reads.csv": 'tabular data file: .csv (set tabular = "index" in config.toml to index it)',
        "data/export.json": f"tabular data file: .json of {(root / 'data' / 'export.json').stat().st_size} bytes"
                            ' (set tabular = "index" in config.toml to index it)'}
    assert report["added"] == 5  # the notes and the small package.json
    hits = json.loads(run_cli("search", "read a csv file", "--index", str(index), "--format", "json").stdout)["hits"]
    assert hits[0]["path"].startswith("docs/") and all(h["path"].startswith("docs/") for h in hits)

    # Indexed as text (the rule switched off), the CSV comes first for the same query.
    indexed = tmp_path / "indexed"
    indexed.mkdir()
    (indexed / "config.toml").write_text('tabular = "index"\n', encoding="utf-8")
    report = json.loads(run_cli("index", str(root), "--project", "corpus", "--index", str(indexed), "--format",
                                "json", env=LEXICAL).stdout)
    assert (report["added"], report["skipped"]) == (7, [])
    hits = json.loads(run_cli("search", "read a csv file", "--index", str(indexed), "--format", "json",
                              env=LEXICAL).stdout)["hits"]
    assert hits[0]["path"] == "data/file_reads.csv"


def test_the_tabular_setting_is_checked(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    index.mkdir()
    (index / "config.toml").write_text('tabular = "penalise"\n', encoding="utf-8")
    (tmp_path / "a.md").write_text("# A\n", encoding="utf-8")
    bad = run_cli("index", str(tmp_path / "a.md"), "--index", str(index), check=False)
    source = f"(settings from {index / 'config.toml'})"
    assert bad.returncode != 0 and bad.stderr.strip() == (
        f"error: tabular must be one of skip, index, got 'penalise' {source}")
    (index / "config.toml").write_text("tabular_json_min_bytes = -1\n", encoding="utf-8")
    bad = run_cli("index", str(tmp_path / "a.md"), "--index", str(index), check=False)
    assert bad.stderr.strip() == f"error: tabular_json_min_bytes must be a number of bytes >= 0, got -1 {source}"


def test_a_file_that_cannot_be_parsed_is_counted_failed_alike_by_index_status_and_doctor(tmp_path: Path) -> None:
    root, index = tmp_path / "vault", tmp_path / "idx"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nThe alpha note.\n", encoding="utf-8")
    (root / "bad.ipynb").write_text("{not json", encoding="utf-8")
    (root / "tool.exe").write_bytes(b"MZ\0\0")
    out = run_cli("index", str(root), "--project", "vault", "--index", str(index), env=LEXICAL).stdout.splitlines()
    assert out[0].endswith(", 1 skipped, 1 failed (" + out[0].rsplit(" (", 1)[1]), out
    assert "  2 file(s) not indexed (1 skipped, 1 failed):" in out
    status = run_cli("status", "--index", str(index)).stdout.splitlines()
    assert f"    {root}: 1 indexed, 1 skipped, 1 failed, last indexed" in "\n".join(status)
    assert "  2 file(s) not indexed (1 skipped, 1 failed):" in status
    doctor = run_cli("doctor", "--index", str(index), check=False).stdout.splitlines()
    assert "  2 file(s) not indexed (1 skipped, 1 failed):" in doctor
    verbose = run_cli("index", str(root), "--project", "vault", "--index", str(index), "-v", env=LEXICAL).stdout
    assert "  failed bad.ipynb: cannot parse: " in verbose and "  skipped tool.exe: binary file type: .exe" in verbose


def test_skipped_files_of_several_roots_are_told_apart(tmp_path: Path) -> None:
    """A new user's trial: after a rename, two roots' files of one name were listed as
    ``data/blob.bin, data/blob.bin``; they are qualified by their root's folder name."""
    from sleuth.reports import skip_summary, stored_skips

    rows = [{"project": "vault", "root": "/v/vault", "path": "data/blob.bin", "reason": "binary content"},
            {"project": "vault2", "root": "/v/vault2", "path": "data/blob.bin", "reason": "binary content"}]
    (group,) = skip_summary(stored_skips(rows))
    assert (group.count, group.examples) == (2, ["vault/data/blob.bin", "vault2/data/blob.bin"])
    assert stored_skips(rows[:1]) == [("data/blob.bin", "binary content")]  # one root: its paths as they are
