from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth.ingest import pdf as pdf_module
from sleuth.ingest import walk as walk_module
from sleuth.ingest.archive import iter_archive
from sleuth.ingest.decode import DecodeError, decode_bytes, read_text
from sleuth.ingest.parsers import parse_document
from sleuth.ingest.pdf import PAGE_SEPARATOR, PDF_MAX_BYTES, PdfError, extract_pdf
from sleuth.ingest.walk import walk_roots
from sleuth.types import SkippedFile, SourceFile
from tests.ingest.test_parsers import check_invariants
from tests.pdf_samples import encrypt_pdf, image_only_pdf, make_pdf

PAGES = [
    "Attention Is All You Need\nTransformers replace recurrence with self-attention.",
    "Method\nMulti-head attention projects queries, keys and values.\nThe quokka ablation removes heads.",
    "Results\nBLEU improves on the wombat benchmark.",
]


def test_extract_pages_and_title() -> None:
    pdf = extract_pdf(make_pdf(PAGES, title="Attention Study"))
    assert pdf.pages == tuple(PAGES)
    assert pdf.title == "Attention Study"
    assert pdf.text == PAGE_SEPARATOR.join(PAGES)
    assert extract_pdf(make_pdf(PAGES)).title is None


def test_blocks_are_page_aware_with_exact_spans() -> None:
    decoded = decode_bytes(make_pdf(PAGES, title="Attention Study"))
    assert (decoded.encoding, decoded.title) == ("pdf", "Attention Study")
    doc = parse_document("papers/attention.pdf", decoded.text, title=decoded.title)
    check_invariants(doc)
    assert doc.kind == "pdf"
    assert doc.title == "Attention Study"
    assert doc.problems == []
    assert [(b.heading_path, b.text) for b in doc.blocks] == [
        (("page 1",), PAGES[0]),
        (("page 2",), PAGES[1]),
        (("page 3",), PAGES[2]),
    ]
    text = decoded.text
    page2 = doc.blocks[1]
    assert (page2.start_char, page2.end_char) == (len(PAGES[0]) + 3, len(PAGES[0]) + 3 + len(PAGES[1]))
    assert (page2.start_line, page2.end_line) == (4, 6)  # page 1: lines 1-2, form feed: line 3
    assert text[page2.start_char : page2.end_char] == page2.text


def test_long_pages_are_cut_inside_their_page() -> None:
    sentence = "Sparse attention scales to long sequences without quadratic memory. "
    long_text = "\n".join(sentence * 3 for _ in range(40))  # about 8,000 characters: fpdf2 flows it onto 2 pages
    decoded = decode_bytes(make_pdf([long_text, "Short last page."]))
    doc = parse_document("long.pdf", decoded.text)
    check_invariants(doc)
    page_spans, start = [], 0
    for page in decoded.text.split("\f"):
        page_spans.append((start, start + len(page)))
        start += len(page) + 1
    assert len(page_spans) == 3
    for block in doc.blocks:
        number = int(block.heading_path[0].removeprefix("page "))
        first, last = page_spans[number - 1]
        assert first <= block.start_char < block.end_char <= last
    assert len([b for b in doc.blocks if b.heading_path == ("page 1",)]) >= 2  # a page longer than a block
    assert (doc.blocks[-1].heading_path, doc.blocks[-1].text) == (("page 3",), "Short last page.")
    assert doc.title == decoded.text.split("\n")[0].strip()  # the first line, as the PDF wraps it


def test_pages_without_text_keep_numbering_and_are_reported() -> None:
    decoded = decode_bytes(make_pdf(["First page text.", "", "Third page text."]))
    assert decoded.text == "First page text.\n\f\n\n\f\nThird page text."
    doc = parse_document("scan-mix.pdf", decoded.text)
    assert [(b.heading_path, b.text) for b in doc.blocks] == [
        (("page 1",), "First page text."),
        (("page 3",), "Third page text."),
    ]
    assert doc.problems == ["PDF: no text on 1 page(s): 2 (scanned images are not read)"]


def test_title_falls_back_to_first_line_then_file_name() -> None:
    doc = parse_document("x.pdf", "\n\f\n  Deep   Residual Learning  \nBody.")
    assert doc.title == "Deep Residual Learning"
    assert [b.heading_path for b in doc.blocks] == [("page 2",)]
    assert parse_document("dir/empty.pdf", "\f").title == "empty.pdf"
    assert parse_document("x.pdf", "Body line", title="   ").title == "Body line"
    assert parse_document("notes.md", "# Heading\n", title="ignored").title == "Heading"


def test_empty_user_password_is_decrypted() -> None:
    pdf = extract_pdf(encrypt_pdf(make_pdf(PAGES, title="Locked?"), user_password=""))
    assert pdf.pages == tuple(PAGES)
    assert pdf.title == "Locked?"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (encrypt_pdf(make_pdf(PAGES), user_password="secret"), "encrypted PDF: a password is required"),
        (image_only_pdf(), "no extractable text in 2 page(s) (scanned images need OCR, which sleuth does not do)"),
        (b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog", "corrupt PDF: "),
        (make_pdf(PAGES)[:400], "corrupt PDF: "),
        (b"plain text pretending to be a PDF\n", "not a PDF: no %PDF- header"),
    ],
    ids=["password", "text-less", "garbage", "truncated", "not-a-pdf"],
)
def test_unusable_pdfs_raise_with_a_reason(data: bytes, reason: str) -> None:
    with pytest.raises(PdfError) as info:
        decode_bytes(data, "paper.pdf")
    assert str(info.value).startswith(reason)
    assert isinstance(info.value, DecodeError)  # what the indexer reports as a skipped file


def test_page_and_size_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    data = make_pdf(PAGES)
    monkeypatch.setattr(pdf_module, "PDF_MAX_PAGES", 2)
    with pytest.raises(PdfError, match=r"^too many pages: 3 > 2 page limit for PDF$"):
        extract_pdf(data)
    monkeypatch.setattr(pdf_module, "PDF_MAX_BYTES", 100)
    with pytest.raises(PdfError, match=rf"^too large: {len(data)} bytes > 100 byte limit for PDF$"):
        extract_pdf(data)


def test_decode_routes_by_name_else_by_header(tmp_path: Path) -> None:
    data = make_pdf(PAGES)
    assert decode_bytes(data).encoding == "pdf"  # archive members: sniffed
    assert decode_bytes(data, "paper.PDF").encoding == "pdf"
    markdown = b"%PDF-1.4 is the header every PDF starts with.\n"
    assert decode_bytes(markdown, "notes/pdf-format.md").text == markdown.decode()
    (tmp_path / "paper.pdf").write_bytes(data)
    assert read_text(tmp_path / "paper.pdf").text == PAGE_SEPARATOR.join(PAGES)
    (tmp_path / "locked.pdf").write_bytes(encrypt_pdf(data, user_password="secret"))
    with pytest.raises(PdfError) as info:
        read_text(tmp_path / "locked.pdf")
    assert str(info.value) == f"{tmp_path / 'locked.pdf'}: encrypted PDF: a password is required"


def test_walk_reads_pdfs_with_their_own_size_limit(tmp_path: Path) -> None:
    (tmp_path / "paper.pdf").write_bytes(make_pdf(PAGES))
    huge = tmp_path / "huge.pdf"
    with open(huge, "wb") as handle:  # sparse: no disk space used
        handle.truncate(PDF_MAX_BYTES + 1)
    (tmp_path / "big-but-ok.pdf").write_bytes(b"%PDF-1.4\n")
    os.truncate(tmp_path / "big-but-ok.pdf", walk_module.FILE_MAX_BYTES + 1)  # over the text limit only
    items = {i.rel_path if isinstance(i, SourceFile) else i.path: i for i in walk_roots([tmp_path])}
    assert isinstance(items["paper.pdf"], SourceFile)
    assert isinstance(items["big-but-ok.pdf"], SourceFile)
    assert items["huge.pdf"] == SkippedFile(
        "huge.pdf", f"too large: {PDF_MAX_BYTES + 1} bytes > {PDF_MAX_BYTES} byte limit"
    )


def test_archive_members_that_are_pdfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = make_pdf(PAGES)
    archive = tmp_path / "papers.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("inner/paper.pdf", data)
    (member,) = list(iter_archive(archive))
    assert not isinstance(member, SkippedFile)
    assert decode_bytes(member.data).text == PAGE_SEPARATOR.join(PAGES)
    monkeypatch.setattr(walk_module, "PDF_MAX_BYTES", 100)
    assert list(iter_archive(archive)) == [
        SkippedFile("inner/paper.pdf", f"too large: {len(data)} bytes > 100 byte limit")
    ]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab \n.\t", max_size=3000), min_size=1, max_size=5))
def test_pdf_blocks_stay_inside_their_page_property(pages: list[str]) -> None:
    pages = [p.strip("\n") for p in pages]
    text = PAGE_SEPARATOR.join(pages)
    doc = parse_document("p.pdf", text)
    check_invariants(doc)
    start = 0
    spans = []
    for page in text.split("\f"):
        spans.append((start, start + len(page)))
        start += len(page) + 1
    assert len(spans) == len(pages)
    for block in doc.blocks:
        first, last = spans[int(block.heading_path[0].removeprefix("page ")) - 1]
        assert first <= block.start_char < block.end_char <= last
    covered = {int(b.heading_path[0][5:]) for b in doc.blocks}
    assert covered == {n for n, p in enumerate(pages, 1) if p.strip()}
