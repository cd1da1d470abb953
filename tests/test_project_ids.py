"""Project ids from names (:func:`sleuth.types.project_id_for`): ASCII names as before, accents
folded so that names differing in a letter stay two projects, other scripts kept, ids their own ids."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sleuth.errors import QueryError
from sleuth.types import PROJECT_ID_MAX_BYTES, project_id_for

_OLD_RUN_RE = re.compile(r"[^a-z0-9._-]+")


def _old_ascii_id(name: str) -> str:
    """The rule before accents were folded, for ASCII names (which it still gives)."""
    return _OLD_RUN_RE.sub("-", name.strip().lower()).strip("-.")


@pytest.mark.parametrize(("name", "pid"), [
    ("My Notes!", "my-notes"), ("a--b", "a--b"), ("a-!b", "a--b"), ("..x..", "x"), ("A_B.c", "a_b.c"),
    ("Müller", "muller"), ("Möller", "moller"), ("Straße", "strasse"), ("Café Noir", "cafe-noir"),
    ("ﬁle", "file"), ("Проект", "проект"), ("東京 notes", "東京-notes"), ("한국", "한국"), ("ǰ", "j"),
    ("x\u0301y", "xy"), ("Mu\u0308ller", "muller"), ("caf\udce9", "caf"), ("ＩＮＢＯＸ", "inbox"), ("²", "2"),
    # other scripts keep their marks (an attack round: ガス and カス were one project, हिन्दी was ह-नद)
    ("ガス", "ガス"), ("カス", "カス"), ("йод", "йод"), ("हिन्दी", "हिन्दी"), ("தமிழ்", "தமிழ்"),
    ("payroll\u3164", "payroll"),  # a Hangul filler shows as blank: not a letter of the id
    # a second mark on a letter (a second attack round: कहीं was कही, ที่ was ที)
    ("कहीं", "कहीं"), ("ที่", "ที่"), ("हिंदी", "हिंदी"), ("e\u0301\u0302", "e"),
])
def test_project_ids(name: str, pid: str) -> None:
    assert project_id_for(name) == pid


def test_names_that_say_nothing_or_too_much_are_refused() -> None:
    for name in ("!!!", " ", "\u0301", "\udcff", "\u3164", "-\u0915\u093f"[2:], "-"):
        with pytest.raises(QueryError, match=r"it needs a letter or digit \('\.', '_' and '-' may join them\)"):
            project_id_for(name)
    # A project being made has an id of at most PROJECT_ID_MAX_BYTES (it names a folder); a name
    # read to find one may be longer (it is then not found).
    longest = "ж" * (PROJECT_ID_MAX_BYTES // 2)
    assert project_id_for(longest, PROJECT_ID_MAX_BYTES) == longest
    with pytest.raises(QueryError, match=f"at most {PROJECT_ID_MAX_BYTES} bytes"):
        project_id_for(longest + "ж", PROJECT_ID_MAX_BYTES)
    assert project_id_for(longest + "ж") == longest + "ж"


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=30))
def test_ascii_names_keep_their_ids(name: str) -> None:
    old = _old_ascii_id(name)
    if old:
        assert project_id_for(name) == old
    else:
        with pytest.raises(QueryError):
            project_id_for(name)


@given(st.text(max_size=30))
def test_an_id_is_its_own_id(name: str) -> None:
    try:
        pid = project_id_for(name)
    except QueryError:
        return
    assert project_id_for(pid) == pid
    assert all(ch.isalnum() or ch in "._-" or unicodedata.category(ch).startswith("M") for ch in pid)
    assert pid.strip("-.") == pid and "/" not in pid and "\\" not in pid


def test_a_project_with_too_long_an_id_is_not_made(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its id names the folder of its records (``<index>/memory/<id>``: 255 bytes at most)."""
    from sleuth.config import Config
    from sleuth.engine import Engine, Record

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        for make in (lambda name: engine.index([tmp_path / "notes"], project=name, embed=False),
                     lambda name: engine.index_records(name, [Record("a.md", "alpha", "A")], embed=False)):
            with pytest.raises(QueryError, match=f"at most {PROJECT_ID_MAX_BYTES} bytes of UTF-8"):
                make("ж" * (PROJECT_ID_MAX_BYTES // 2 + 1))
        assert engine.project_ids() == []
        # One made before the bound (an upgrade: its id in the catalog) is indexed again as before.
        long_id = "b" * (PROJECT_ID_MAX_BYTES + 30)
        with monkeypatch.context() as before_the_bound:
            before_the_bound.setattr("sleuth.indexer.PROJECT_ID_MAX_BYTES", 10_000)
            engine.index([tmp_path / "notes"], project=long_id, embed=False)
        (tmp_path / "notes" / "b.md").write_text("# B\n\nbeta\n", encoding="utf-8")
        assert engine.index([tmp_path / "notes"], project=long_id, embed=False).added == 1
        assert engine.project_ids() == [long_id]
