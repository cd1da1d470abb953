from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sleuth.indexer import doc_id_for, make_blocks
from sleuth.ingest import parse_document
from sleuth.store.catalog import Catalog, DocumentRow
from sleuth.text import analyze, surface_tokens

NOW = "2026-01-01T00:00:00.000Z"


def make_doc(project: str, rel: str, text: str, root: str = "/r", mtime_ns: int = 1, tags=None):
    parsed = parse_document(rel, text)
    doc_id = doc_id_for(project, "r", rel)
    title = parsed.title or rel
    row = DocumentRow(
        doc_id=doc_id, project_id=project, root=root, rel_path=rel, title=title,
        tags=list(tags if tags is not None else parsed.tags), kind=parsed.kind,
        front_matter=dict(parsed.front_matter), mtime_ns=mtime_ns, size_bytes=len(text),
        content_hash=f"hash-{hash(text)}", revision="rev", text=parsed.text, generation=0, indexed_at=NOW,
    )
    return row, make_blocks(project, doc_id, title, parsed)


MD_A = "# Alpha\n\nThe alpha engine indexes blocks.\n\n## Details\n\nMore details about alpha.\n"
MD_B = "# Beta\n\nBeta text about catalogs.\n"


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(tmp_path / "catalog.sqlite3")
    cat.upsert_project("proj", "Proj", ["/r"], NOW)
    yield cat
    cat.close()


def test_new_catalog_generation_zero(tmp_path):
    cat = Catalog(tmp_path / "c.sqlite3")
    assert cat.generation() == 0
    assert (tmp_path / "c.sqlite3").is_file()
    cat.close()


def test_wal_mode(catalog):
    assert catalog.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    raw = sqlite3.connect(catalog.path)
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        raw.close()


def test_upsert_project_merges_roots(catalog):
    catalog.upsert_project("proj", "Proj", ["/r", "/s"], NOW)
    catalog.upsert_project("other", "Other", ["/o"], NOW)
    projects = {p["project_id"]: p for p in catalog.projects()}
    assert projects["proj"]["roots"] == ["/r", "/s"]
    assert projects["proj"]["name"] == "Proj"
    assert projects["other"]["roots"] == ["/o"]
    assert [p["project_id"] for p in catalog.projects()] == ["other", "proj"]


def test_write_documents_stores_blocks_and_terms(catalog):
    row, blocks = make_doc("proj", "a.md", MD_A)
    assert len(blocks) >= 2
    gen = catalog.write_documents([(row, blocks)], NOW)
    assert gen == 1 == catalog.generation()
    stored = catalog.document(row.doc_id)
    assert stored is not None
    assert stored.text == MD_A
    assert stored.generation == gen
    assert stored.title == "Alpha"
    assert [b.block_id for b in catalog.blocks_of(row.doc_id)] == [b.block_id for b, *_ in blocks]
    for block, _terms, exact in blocks:  # the exact field the indexer computed with the terms
        assert exact == " ".join(surface_tokens(block.text))
    ibs = list(catalog.indexed_blocks(0))
    assert [ib.terms for ib in ibs] == [t for _, t, _ in sorted(blocks, key=lambda p: p[0].ordinal)]
    for ib in ibs:
        assert "alpha" in ib.terms.split()
        assert set(analyze(ib.block.text)) <= set(ib.terms.split())
        assert ib.block.text == MD_A[ib.block.start_char:ib.block.end_char]
        assert ib.block.project_id == "proj"


def test_generation_increases_with_each_write(catalog):
    gens = []
    for i in range(3):
        row, blocks = make_doc("proj", f"d{i}.md", f"# Doc {i}\n\ntext number {i}\n")
        gens.append(catalog.write_documents([(row, blocks)], NOW))
    row, _ = make_doc("proj", "d0.md", "x")
    gens.append(catalog.delete_documents([row.doc_id]))
    assert gens == sorted(gens) and len(set(gens)) == 4
    assert gens == [1, 2, 3, 4]
    assert catalog.generation() == 4


def test_changes_since(catalog):
    a, ablocks = make_doc("proj", "a.md", MD_A)
    b, bblocks = make_doc("proj", "b.md", MD_B)
    g1 = catalog.write_documents([(a, ablocks)], NOW)
    g2 = catalog.write_documents([(b, bblocks)], NOW)
    written0, deleted0 = catalog.changes_since(0)
    assert sorted(written0) == sorted([a.doc_id, b.doc_id]) and deleted0 == []
    assert catalog.changes_since(g1) == ([b.doc_id], [])
    assert catalog.changes_since(g2) == ([], [])
    g3 = catalog.delete_documents([a.doc_id])
    written, deleted = catalog.changes_since(g2)
    assert written == [] and deleted == [a.doc_id]
    assert catalog.changes_since(g3) == ([], [])
    # rewriting a deleted doc puts it in both lists
    catalog.write_documents([(a, ablocks)], NOW)
    written, deleted = catalog.changes_since(g2)
    assert written == [a.doc_id] and deleted == [a.doc_id]


def test_indexed_blocks_min_generation(catalog):
    a, ablocks = make_doc("proj", "a.md", MD_A)
    b, bblocks = make_doc("proj", "b.md", MD_B)
    g1 = catalog.write_documents([(a, ablocks)], NOW)
    catalog.write_documents([(b, bblocks)], NOW)
    assert {ib.block.doc_id for ib in catalog.indexed_blocks(g1)} == {b.doc_id}
    assert {ib.block.doc_id for ib in catalog.indexed_blocks(0)} == {a.doc_id, b.doc_id}


def test_delete_leaves_tombstones_and_removes_blocks(catalog):
    a, ablocks = make_doc("proj", "a.md", MD_A)
    catalog.write_documents([(a, ablocks)], NOW)
    gen = catalog.delete_documents([a.doc_id, "does-not-exist"])
    assert catalog.document(a.doc_id) is None
    assert catalog.blocks_of(a.doc_id) == []
    assert catalog.blocks([b.block_id for b, *_ in ablocks]) == {}
    rows = catalog.conn.execute("SELECT doc_id, project_id, generation FROM tombstones").fetchall()
    assert rows == [(a.doc_id, "proj", gen)]
    left = catalog.conn.execute("SELECT COUNT(*) FROM blocks").fetchone()[0]
    assert left == 0


def test_rewrite_replaces_blocks(catalog):
    a, ablocks = make_doc("proj", "a.md", MD_A)
    catalog.write_documents([(a, ablocks)], NOW)
    a2, a2blocks = make_doc("proj", "a.md", "# Alpha\n\nCompletely new words.\n")
    catalog.write_documents([(a2, a2blocks)], NOW)
    texts = [b.text for b in catalog.blocks_of(a.doc_id)]
    assert texts == [b.text for b, *_ in a2blocks]
    assert all("details" not in t for t in texts)
    assert catalog.document(a.doc_id).text == a2.text


def test_file_states(catalog):
    a, ablocks = make_doc("proj", "a.md", MD_A, mtime_ns=111)
    b, bblocks = make_doc("proj", "sub/b.md", MD_B, mtime_ns=222)
    other, oblocks = make_doc("proj", "c.md", MD_B, root="/elsewhere")
    catalog.write_documents([(a, ablocks), (b, bblocks), (other, oblocks)], NOW)
    states = catalog.file_states("proj", ["/r"])
    assert set(states) == {("/r", "a.md"), ("/r", "sub/b.md")}
    st = states[("/r", "a.md")]
    assert (st.doc_id, st.mtime_ns, st.size_bytes, st.content_hash) == (a.doc_id, 111, len(MD_A), a.content_hash)
    assert catalog.file_states("other", ["/r"]) == {}
    catalog.touch_documents([(a.doc_id, 999)])
    assert catalog.file_states("proj", ["/r"])[("/r", "a.md")].mtime_ns == 999


def test_projects_counts(catalog):
    catalog.upsert_project("empty", "Empty", [], NOW)
    a, ablocks = make_doc("proj", "a.md", MD_A)
    b, bblocks = make_doc("proj", "b.md", MD_B)
    catalog.write_documents([(a, ablocks), (b, bblocks)], NOW)
    counts = {p["project_id"]: (p["documents"], p["blocks"]) for p in catalog.projects()}
    assert counts == {"proj": (2, len(ablocks) + len(bblocks)), "empty": (0, 0)}
    catalog.delete_documents([a.doc_id])
    counts = {p["project_id"]: (p["documents"], p["blocks"]) for p in catalog.projects()}
    assert counts["proj"] == (1, len(bblocks))
    catalog.mark_indexed("proj", "2026-02-02T00:00:00.000Z")
    assert {p["project_id"]: p["last_indexed"] for p in catalog.projects()}["proj"] == "2026-02-02T00:00:00.000Z"


def test_second_catalog_sees_committed_data(catalog):
    other = Catalog(catalog.path)
    try:
        assert other.generation() == 0
        a, ablocks = make_doc("proj", "a.md", MD_A)
        gen = catalog.write_documents([(a, ablocks)], NOW)
        assert other.generation() == gen
        assert other.document(a.doc_id).text == MD_A
        assert {p["project_id"] for p in other.projects()} == {"proj"}
        assert other.changes_since(0) == ([a.doc_id], [])
        catalog.delete_documents([a.doc_id])
        assert other.document(a.doc_id) is None
    finally:
        other.close()


def test_failed_write_rolls_back(catalog):
    a, ablocks = make_doc("proj", "a.md", MD_A)
    dup = ablocks + [ablocks[0]]  # duplicate block id -> IntegrityError
    with pytest.raises(sqlite3.IntegrityError):
        catalog.write_documents([(a, dup)], NOW)
    assert catalog.generation() == 0
    assert catalog.document(a.doc_id) is None


def test_documents_without_text(catalog):
    a, ablocks = make_doc("proj", "a.md", MD_A)
    catalog.write_documents([(a, ablocks)], NOW)
    docs = catalog.documents([a.doc_id, "missing"])
    assert list(docs) == [a.doc_id]
    assert docs[a.doc_id].text == ""
    assert docs[a.doc_id].rel_path == "a.md"


def test_skips_recorded(catalog):
    catalog.record_skips("proj", "/r", [("x.bin", "binary content")], NOW)
    assert [(s["path"], s["reason"]) for s in catalog.skipped("proj")] == [("x.bin", "binary content")]
    catalog.record_skips("proj", "/r", [], NOW)
    assert catalog.skipped("proj") == []


@pytest.mark.parametrize("value", [
    '{"bad.ipynb": {"0": 1}}', '{"bad.ipynb": ["x", 1e999, 11, 3]}', '{"bad.ipynb": ["x", 1.5, 11, 3]}',
    '{"bad.ipynb": ["x", true, 11, 3]}', '{"bad.ipynb": ["x", 1, 11]}', "[1, 2]", "not json",
    "[" * 100_000 + "]" * 100_000,
])
def test_hostile_failed_file_rows_are_read_as_absent(catalog: Catalog, value: str) -> None:
    """Attack round (this stop): a planted ``failed_files`` meta value made every `sleuth index` fail
    (KeyError, OverflowError, RecursionError). An entry not of the shape written is left out (its file
    is tried again); the good entries beside it are kept."""
    from sleuth.store.rows import FailedFile

    key = catalog._failed_key("p", "/r")
    with catalog.write() as conn:
        conn.execute("INSERT INTO meta VALUES (?, ?)", (key, value))
    assert catalog.failed_files("p", "/r") == {}
    good = '{"ok.md": ["took too long", 5, 7, 3], ' + value[1:] if value.startswith('{"bad') else None
    if good is not None:
        with catalog.write() as conn:
            conn.execute("UPDATE meta SET value=? WHERE key=?", (good, key))
        assert catalog.failed_files("p", "/r") == {"ok.md": FailedFile("took too long", 5, 7, 3)}
