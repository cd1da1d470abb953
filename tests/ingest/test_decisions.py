"""Decision records in the layouts people write (adr-tools, MADR 2, MADR 3, Nygard's ## Status):
date, status and supersession read into front-matter fields, and record numbers resolved to files."""

from __future__ import annotations

from sleuth.ingest.decisions import decision_metadata, decision_status
from sleuth.ingest.links import LinkResolver
from sleuth.ingest.parsers import parse_document
from sleuth.ingest.roles import kind_label, recorded_time

# As `adr new -s 1 Use PostgreSQL` (npryce/adr-tools) writes it, after `adr new -s 2 ...` superseded it.
ADR_TOOLS_OLD = """# 2. Use PostgreSQL

Date: 2020-01-01

## Status

Superceded by [3. Use SQLite](0003-use-sqlite.md)

Supercedes [1. Use flat files](0001-use-flat-files.md)

## Context

The catalog needs a database.
"""
ADR_TOOLS_NEW = """# 3. Use SQLite

Date: 2021-06-15

## Status

Accepted

Supersedes [2. Use PostgreSQL](0002-use-postgresql.md)

## Context

One file is enough.
"""
# MADR 2.x (adr/madr template.md): a bullet list under the title.
MADR_2 = """# Use Markdown Architectural Decision Records

* Status: superseded by [ADR-0005](0005-use-asciidoc.md)
* Deciders: Oliver, Anna
* Date: 2017-12-30

Technical Story: none

## Context and Problem Statement

We want to record architectural decisions.
"""
# MADR 3/4: YAML front matter.
MADR_3 = """---
status: "superseded by ADR-0007"
date: 2022-03-04
deciders: Anna
---
# Use Plain JUnit5 for advanced test assertions

## Context and Problem Statement

How to write readable test assertions?
"""


def test_adr_tools_layout() -> None:
    doc = parse_document("doc/adr/0002-use-postgresql.md", ADR_TOOLS_OLD)
    assert {k: doc.front_matter[k] for k in ("date", "status", "superseded_by", "supersedes")} == {
        "date": "2020-01-01", "status": "superseded",
        "superseded_by": ["0003-use-sqlite.md"], "supersedes": ["0001-use-flat-files.md"]}
    assert [(k.target, k.relation) for k in doc.links if k.relation != "link"] == [
        ("0003-use-sqlite.md", "superseded_by"), ("0001-use-flat-files.md", "supersedes")]
    assert recorded_time(doc.front_matter, 99) == (1_577_836_800_000_000_000, None)  # 2020-01-01T00:00Z
    assert kind_label("doc/adr/0002-use-postgresql.md", "markdown", doc.front_matter) == "decision"
    assert decision_status(doc.front_matter) == "superseded"
    new = parse_document("doc/adr/0003-use-sqlite.md", ADR_TOOLS_NEW)
    assert (new.front_matter["status"], new.front_matter["supersedes"]) == ("accepted", ["0002-use-postgresql.md"])


def test_madr_2_bullets() -> None:
    doc = parse_document("docs/decisions/0001-use-madr.md", MADR_2)
    assert (doc.front_matter["date"], doc.front_matter["status"], doc.front_matter["superseded_by"]) == (
        "2017-12-30", "superseded", ["0005-use-asciidoc.md"])
    assert doc.title == "Use Markdown Architectural Decision Records"


def test_madr_3_front_matter_status_names_a_record_number() -> None:
    doc = parse_document("docs/decisions/0003-use-junit5.md", MADR_3)
    assert doc.front_matter["status"] == "superseded by ADR-0007"  # front matter is kept as written
    assert doc.front_matter["superseded_by"] == ["ADR-0007"]
    assert decision_status(doc.front_matter) == "superseded"
    assert recorded_time(doc.front_matter, 0)[0] == 1_646_352_000_000_000_000  # 2022-03-04
    resolver = LinkResolver(["docs/decisions/0003-use-junit5.md", "docs/decisions/0007-use-assertj.md",
                             "notes/0007-other.md"], {})
    assert resolver.resolve("ADR-0007", "docs/decisions/0003-use-junit5.md") == "docs/decisions/0007-use-assertj.md"
    assert resolver.resolve("ADR 7", "docs/decisions/0003-use-junit5.md") == "docs/decisions/0007-use-assertj.md"
    assert resolver.resolve("7", "docs/decisions/0003-use-junit5.md") is None  # a bare number is no record


def test_nygard_status_section_in_a_numbered_file_outside_a_decisions_folder() -> None:
    text = "# 7. Use Y\n\nDate: 2023-02-01\n\n## Status\n\nProposed\n\n## Decision\n\nY.\n"
    doc = parse_document("architecture/0007-use-y.md", text)
    assert (doc.front_matter["kind"], doc.front_matter["status"], doc.front_matter["date"]) == (
        "decision", "proposed", "2023-02-01")
    assert kind_label("architecture/0007-use-y.md", "markdown", doc.front_matter) == "decision"


def test_front_matter_wins_and_other_documents_are_left_alone() -> None:
    text = "---\ndate: 2019-05-05\nstatus: accepted\n---\n# 4. X\n\nDate: 2020-01-01\n\n## Status\n\nRejected\n"
    doc = parse_document("adr/0004-x.md", text)
    assert (doc.front_matter["date"], doc.front_matter["status"]) == ("2019-05-05", "accepted")
    # A weekly note with a Status section and a Date line is not a decision record.
    note = parse_document("notes/weekly.md", "# Weekly\n\nDate: 2020-01-01\n\n## Status\n\nAll good\n")
    assert note.front_matter == {}
    assert decision_metadata("notes/weekly.md", "## Status\n\nAccepted\n", {}) == ({}, [])


def test_a_date_that_is_not_iso_is_reported() -> None:
    doc = parse_document("adr/0008-z.md", "# 8. Z\n\nDate: 12 March 2021\n\n## Status\n\nAccepted\n")
    assert "date" not in doc.front_matter and doc.front_matter["status"] == "accepted"
    assert doc.problems == ["decision record Date: '12 March 2021' is not an ISO 8601 date (YYYY-MM-DD); "
                            "using the file's modification time"]
