from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth.ingest.chunk import (
    CHUNK_MAX_CHARS,
    line_of_offset,
    line_windows,
    make_block,
    split_span,
    trim_span,
)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def test_line_index_matches_counting() -> None:
    text = "ab\n\ncd\nefg\n"
    index = line_of_offset(text)
    assert [index(i) for i in range(len(text) + 1)] == [_line_of(text, i) for i in range(len(text) + 1)]
    assert index.line_count == 5
    assert index.line_start(3) == 4
    assert index.line_start(99) == len(text)


def test_short_span_is_one_piece() -> None:
    assert split_span("hello world", 0, 11) == [(0, 11)]
    assert split_span("hello", 2, 2) == []


def test_split_prefers_paragraph_boundaries_with_overlap() -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 60 for i in range(10)]  # ~320 chars each
    text = "\n\n".join(paragraphs)
    pieces = split_span(text, 0, len(text), max_chars=1000, overlap_chars=200)
    assert len(pieces) > 1
    assert pieces[0][0] == 0 and pieces[-1][1] == len(text)
    for (s1, e1), (s2, _e2) in zip(pieces, pieces[1:], strict=False):
        assert text[e1 - 2 : e1] == "\n\n"  # cut right after a blank line
        assert s1 < s2 < e1  # progress, and overlap with the previous piece
        assert 0 < e1 - s2 <= 200
    assert all(e - s <= 1000 for s, e in pieces)


def test_split_falls_back_to_sentences_then_spaces_then_hard_cut() -> None:
    sentences = "This is one sentence. " * 100
    pieces = split_span(sentences, 0, len(sentences), max_chars=300, overlap_chars=50)
    assert all(sentences[e - 2 : e] == ". " for _, e in pieces[:-1])
    blob = "x" * 1000
    pieces = split_span(blob, 0, 1000, max_chars=300, overlap_chars=50)
    assert pieces[0] == (0, 300)
    assert pieces[1] == (250, 550)
    assert pieces[-1][1] == 1000


def test_split_rejects_bad_overlap() -> None:
    with pytest.raises(ValueError):
        split_span("abc", 0, 3, max_chars=10, overlap_chars=10)


def test_line_windows_overlap() -> None:
    text = "".join(f"line {i}\n" for i in range(1, 131))
    windows = line_windows(text, window_lines=60, overlap_lines=10, max_chars=100_000)
    starts = [_line_of(text, s) for s, _ in windows]
    ends = [_line_of(text, e - 1) for _, e in windows]
    assert starts == [1, 51, 101]
    assert ends == [60, 110, 130]


def test_line_windows_cap_long_lines() -> None:
    text = "short\n" + "m" * 5000 + "\nshort again\n"
    windows = line_windows(text, max_chars=1600)
    assert all(e - s <= 1600 for s, e in windows)
    assert windows[0] == (0, 6)
    covered = set()
    for s, e in windows:
        covered.update(range(s, e))
    assert covered == set(range(len(text)))


def test_trim_span_keeps_indentation() -> None:
    text = "\n\n    indented code\n\n  \n"
    start, end = trim_span(text, 0, len(text))
    assert text[start:end] == "    indented code"
    assert trim_span("   \n ", 0, 5) == (0, 0)


def test_make_block_lines() -> None:
    text = "a\n\nbody line\nsecond\n\n"
    block = make_block(text, 1, len(text), ("H",))
    assert block.text == "body line\nsecond"
    assert (block.start_line, block.end_line) == (3, 4)
    assert (block.start_char, block.end_char) == (3, 19)
    assert block.heading_path == ("H",)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab .!\n\t é")), max_size=3000),
    max_chars=st.integers(min_value=20, max_value=400),
    data=st.data(),
)
def test_split_span_properties(text: str, max_chars: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(min_value=0, max_value=max_chars - 1))
    start = data.draw(st.integers(min_value=0, max_value=len(text)))
    end = data.draw(st.integers(min_value=start, max_value=len(text)))
    pieces = split_span(text, start, end, max_chars, overlap)
    if start == end:
        assert pieces == []
        return
    assert pieces[0][0] == start and pieces[-1][1] == end
    for s, e in pieces:
        assert start <= s < e <= end and e - s <= max_chars
    for (s1, e1), (s2, _) in zip(pieces, pieces[1:], strict=False):
        assert s1 < s2 <= e1  # progress, no gap


@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab \n{}")), max_size=4000))
def test_line_windows_cover_text(text: str) -> None:
    windows = line_windows(text, window_lines=7, overlap_lines=2, max_chars=CHUNK_MAX_CHARS // 8)
    covered = set()
    for s, e in windows:
        assert 0 <= s < e <= len(text) and e - s <= CHUNK_MAX_CHARS // 8
        covered.update(range(s, e))
    assert covered == set(range(len(text)))
