"""Real PDFs for tests, written with fpdf2 (text pages) and pypdf (encryption)."""

from __future__ import annotations

import io
from collections.abc import Sequence


def make_pdf(pages: Sequence[str], title: str | None = None) -> bytes:
    """A PDF with one page per string (an empty string gives a page without text); lines of a string
    become lines of text, and ``title`` the document information /Title."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    if title is not None:
        pdf.set_title(title)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 6, text)
    return bytes(pdf.output())


def encrypt_pdf(data: bytes, user_password: str, owner_password: str = "owner") -> bytes:
    """``data`` re-written encrypted (AES-256); an empty ``user_password`` opens without a password."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def image_only_pdf() -> bytes:
    """A two-page PDF whose pages carry a drawing but no text (like a scanned paper)."""
    from fpdf import FPDF

    pdf = FPDF()
    for _ in range(2):
        pdf.add_page()
        pdf.rect(20, 20, 100, 50, style="F")
    return bytes(pdf.output())
