"""A document's text stored once (catalog format 5): the catalog keeps the gaps between its blocks,
and gives back exactly the text that was indexed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.store import doc_text
from sleuth.store.catalog import Catalog
from tests.store.old_formats import as_format_4

TEXT = "---\ntitle: A\n---\n# One\n\nalpha\n\n# Two\n\nbeta gamma\n"


def test_split_keeps_the_gaps_and_join_puts_the_blocks_back():
    spans = [(17, 30, "# One\n\nalpha\n"), (31, 48, "# Two\n\nbeta gamma")]
    assert [TEXT[s:e] for s, e, _ in spans] == [t for _, _, t in spans]
    stored, elided = doc_text.split(TEXT, spans)
    assert (stored, elided) == ("---\ntitle: A\n---\n\n\n", 30)
    assert doc_text.join(stored, elided, spans) == TEXT


def test_overlapping_blocks_stay_in_the_gaps():
    text = "line one\nline two\nline three\n"
    spans = [(0, 18, "line one\nline two\n"), (9, 29, "line two\nline three\n"), (18, 29, "line three\n")]
    stored, elided = doc_text.split(text, spans)
    assert (stored, elided) == ("", 29)  # the second block overlaps the first: the third is taken
    assert doc_text.join(stored, elided, spans) == text


def test_a_block_that_is_not_its_span_keeps_the_whole_text():
    assert doc_text.split("abc def", [(0, 3, "abc"), (4, 7, "DEF")]) == ("abc def", 0)
    assert doc_text.split("abc", [(0, 5, "abc")]) == ("abc", 0)  # a span past the end
    assert doc_text.split("abc", []) == ("abc", 0)
    assert doc_text.split("abc", [(1, 1, "")]) == ("abc", 0)  # empty blocks elide nothing
    assert doc_text.join("abc", 0, [(0, 3, "xyz")]) == "abc"


def test_code_points_beyond_the_basic_plane_count_once():
    text = "😀 héllo\n\n𝄞 world\n"
    spans = [(0, 7, "😀 héllo"), (9, 16, "𝄞 world")]
    stored, elided = doc_text.split(text, spans)
    assert (stored, elided) == ("\n\n\n", 14)
    assert doc_text.join(stored, elided, spans) == text


FILES = {
    "front.md": "---\ntitle: Front matter\ntags: [a, b]\n---\n\n# Heading\n\nSome text.\n\n## Sub\n\nMore text here.\n",
    "code.py": "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(80)),
    "plain.txt": "First paragraph of plain text.\n\n\n\nSecond paragraph, after blank lines.\n",
    "table.md": "# Table\n\n| a | b |\n| - | - |\n| 1 | 2 |\n\n```python\nprint('hi')\n```\n",
}


def _index(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "notes"
    root.mkdir()
    for name, text in FILES.items():
        (root / name).write_text(text, encoding="utf-8")
    folder = tmp_path / "idx"
    with Engine(folder, Config(model="none")) as e:
        e.index([root], project="notes")
    return root, folder


def _stored(folder: Path) -> dict[str, tuple[str, int]]:
    conn = sqlite3.connect(folder / "catalog.sqlite3")
    try:
        return {r: (t, n) for r, t, n in conn.execute("SELECT rel_path, text, elided_chars FROM documents")}
    finally:
        conn.close()


def _texts(folder: Path) -> dict[str, tuple[str, int]]:
    """``{path: (text, text length from body_extents)}`` as the catalog gives them back."""
    cat = Catalog(folder / "catalog.sqlite3")
    try:
        ids = {d.rel_path: d.doc_id for p in cat.roots() for d in cat.documents_for_projects([p])}
        extents = cat.body_extents(list(ids.values()))
        out = {}
        for rel, doc_id in ids.items():
            doc = cat.document(doc_id)
            assert doc is not None
            out[rel] = (doc.text, extents[doc_id][0])
        return out
    finally:
        cat.close()


def test_the_catalog_gives_back_every_text_exactly_and_stores_it_once(tmp_path):
    _root, folder = _index(tmp_path)
    stored = _stored(folder)
    assert sorted(stored) == sorted(FILES)
    assert all(len(t) + n == len(FILES[rel]) for rel, (t, n) in stored.items())
    assert {rel: t for rel, (t, _) in stored.items() if rel != "code.py"} == {
        "front.md": "---\ntitle: Front matter\ntags: [a, b]\n---\n\n\n\n\n", "plain.txt": "\n", "table.md": "\n"}
    assert 0 < stored["code.py"][1] < len(FILES["code.py"])  # overlapping code windows: some stay in the gaps
    got = _texts(folder)
    with Engine(folder, Config(model="none")) as e:
        for rel, (text, length) in got.items():
            assert length == len(text)
            assert e.get(rel).text == text  # the API's document text, as before format 5
    assert {rel: t for rel, (t, _) in got.items()} == FILES


def test_documents_of_a_migrated_catalog_keep_their_whole_text_until_written_again(tmp_path):
    root, folder = _index(tmp_path)
    before = _texts(folder)
    as_format_4(folder / "catalog.sqlite3")
    assert _texts(folder) == before  # migrated on this open: elided_chars 0, the whole text
    assert all(n == 0 for _, n in _stored(folder).values())
    (root / "front.md").write_text(FILES["front.md"] + "\n## Added\n\nA new section.\n", encoding="utf-8")
    with Engine(folder, Config(model="none")) as e:
        e.index([root], project="notes")
    stored = _stored(folder)
    assert stored["front.md"][1] > 0 and all(n == 0 for rel, (_, n) in stored.items() if rel != "front.md")
    assert _texts(folder)["front.md"][0] == FILES["front.md"] + "\n## Added\n\nA new section.\n"
