"""The shortcuts of a search's result step give what the plain definitions give."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth.pipeline.results import _HEADING_LINE, _body_holds
from sleuth.store.catalog import HitBlock
from sleuth.text.analyze import analyze, find_terms
from sleuth.types import Hit, LaneContribution, Passage

HIT_FIELDS: dict[str, Any] = dict(
    rank=1, doc_id="d", project="p", path="a.md", title="A", kind="document", format="markdown", tags=["t"],
    score=1.5, sources=["bm25"], semantic_only=False, block_ids=["d:1"], best_block_id="d:1", heading_path=["H"],
    lines=(1, 3), location="lines 1-3", snippet="s", highlights=[(0, 1)],
    explain=[LaneContribution.of_fields(lane="bm25", rank=1, weight=1.0, contribution=1.0, lane_score=7.25,
                                        repeats=None, moved_above=None),
             LaneContribution.of_fields(lane="supersedes", rank=1, weight=1.0, contribution=0.5, lane_score=1.5,
                                        repeats=None, moved_above="c")],
    root="/r", root_label="r", role="other", family="document", recorded_ns=5, revision="v",
    passages=[Passage.of_fields(text="s", start=0, end=1, highlights=[(0, 1)], heading_path=["H"])],
    freshness=None, source_length=0, body_chars=0, superseded_by=[], moved_above=["c"], mentioned_by=[],
)


def test_of_fields_is_model_construct_with_every_field() -> None:
    made, constructed = Hit.of_fields(**HIT_FIELDS), Hit.model_construct(**HIT_FIELDS)
    assert made.model_dump(mode="json") == constructed.model_dump(mode="json")
    assert made.model_fields_set == constructed.model_fields_set == set(Hit.model_fields)
    assert made.model_dump_json() == constructed.model_dump_json()


def test_of_fields_refuses_a_missing_or_unknown_field() -> None:
    fields = dict(HIT_FIELDS)
    del fields["rank"]
    with pytest.raises(TypeError, match=r"missing \['rank'\], unknown \[\]"):
        Hit.of_fields(**fields)
    with pytest.raises(TypeError, match=r"missing \[\], unknown \['extra'\]"):
        Hit.of_fields(**HIT_FIELDS, extra=1)


def _block(text: str, kind: str) -> HitBlock:
    return HitBlock(block_id="d:1", doc_id="d", heading_path=("H",), text=text, start_line=1, end_line=1,
                    project_id="p", rel_path="a.md", title="A", tags=[], kind=kind, start_char=0, end_char=len(text),
                    root="/r", role="other", label="document", family="document", recorded_ns=0, revision="v",
                    mtime_ns=0, size_bytes=0, content_hash="", indexed_at="")


PIECES = ["# ", "## ", "   # ", "    # ", "#", "cell", "Cells", "alpha", "beta's", "x", "é", "İ", " ", "-", ".",
          "\n", "\r\n", "\r", "\x85", "\u2028"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14), st.sampled_from(["markdown", "notebook", "text"]))
def test_body_holds_is_its_definition(pieces: list[str], kind: str) -> None:
    text, terms = "".join(pieces), frozenset(analyze("cell alpha beta"))
    # the definition: the text without its heading lines (markdown and notebooks) holds a term
    body = text if kind == "text" else "\n".join(line for line in text.splitlines() if not _HEADING_LINE.match(line))
    assert _body_holds(_block(text, kind), find_terms(text, terms)) == bool(find_terms(body, terms))
