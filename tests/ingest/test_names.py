"""The index form of file names: printable valid UTF-8, and lossless both ways."""

from __future__ import annotations

import os
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from sleuth.ingest.names import fs_name, index_name, is_valid_text, printable


def test_ordinary_names_are_their_own_index_form() -> None:
    for name in ("README.md", "docs/guide.md", "été/naïve café.md", "日本語.md", "emoji 👩‍💻.md", "a b/c-d_e.f"):
        assert index_name(name) is name
        assert fs_name(name) is name


def test_escapes() -> None:
    assert index_name(os.fsdecode(b"caf\xe9.md")) == "caf\\xe9.md"
    assert index_name("a\\b.md") == "a\\\\b.md"
    assert index_name("bell\x07\x1b[31m.md") == "bell\\x07\\x1b[31m.md"
    assert index_name("c1\x85.md") == "c1\\xc2\\x85.md"  # a C1 control: the escapes of its UTF-8 bytes
    assert index_name("a\\x41.md") == "a\\\\x41.md"  # a real name that looks like an escape stays itself
    assert fs_name("a\\\\x41.md") == "a\\x41.md"
    assert fs_name("odd\\q.md") == "odd\\q.md"  # not an escape: kept


@given(st.binary(min_size=1, max_size=40).filter(lambda b: b"/" not in b and b"\0" not in b))
def test_every_file_system_name_maps_back(raw: bytes) -> None:
    name = os.fsdecode(raw)
    shown = index_name(name)
    assert is_valid_text(shown)  # SQLite, JSON and tantivy can hold it
    assert not any(unicodedata.category(c) in ("Cc", "Cs") for c in shown)  # nothing to garble a terminal
    assert fs_name(shown) == name
    assert os.fsencode(fs_name(shown)) == raw


def test_is_valid_text() -> None:
    assert is_valid_text("café")
    assert not is_valid_text(os.fsdecode(b"caf\xe9"))


def test_bidirectional_controls_are_escaped_both_ways() -> None:
    """A right-to-left override would make ``report<RLO>txt.exe`` read as ``reportexe.txt``."""
    name = "report\u202etxt.exe"
    assert index_name(name) == "report\\xe2\\x80\\xaetxt.exe"
    assert fs_name(index_name(name)) == name
    assert printable("title \u2066isolated\u2069 \u202aembedded\u202c") == (
        "title \\xe2\\x81\\xa6isolated\\xe2\\x81\\xa9 \\xe2\\x80\\xaaembedded\\xe2\\x80\\xac")
    hebrew = "Hebrew \u05e9\u05dc\u05d5\u05dd and a mark \u200f stay"  # letters and marks are not controls
    assert printable(hebrew) == hebrew


def test_one_line_cannot_be_split_or_hide_a_name() -> None:
    """What the CLI prints one entry a line: nothing that ends a line (for a terminal or for
    ``str.splitlines``), nothing invisible a name can hide behind (an attack round: a root named
    with U+2028 forged a line of `sleuth projects`, ``inbox\\u200b`` showed as ``inbox``); ZWNJ and ZWJ
    (Persian, Indic scripts, emoji sequences), accents and other scripts as they are."""
    from sleuth.ingest.names import one_line

    forged = "a\nb\rc\td\x0be\x0cf\x1cg\x85h\u2028i\u2029j"
    assert one_line(forged).splitlines() == [one_line(forged)]
    assert one_line(forged) == "a\\x0ab\\x0dc\\x09d\\x0be\\x0cf\\x1cg\\xc2\\x85h\\xe2\\x80\\xa8i\\xe2\\x80\\xa9j"
    assert one_line("inbox\u200b \u200e\u200f\u061c\ufeff\u2060 \u202e") == (
        "inbox\\xe2\\x80\\x8b \\xe2\\x80\\x8e\\xe2\\x80\\x8f\\xd8\\x9c\\xef\\xbb\\xbf\\xe2\\x81\\xa0 \\xe2\\x80\\xae")
    kept = "Müller 東京 می\u200cخواهم 👨\u200d👩 \\ back"
    assert one_line(kept) == kept
