"""Text out of PDF files with pypdf: one text per page, joined with form feeds, plus the /Title.

The indexer reads a PDF through the same path as any text file: :func:`sleuth.ingest.decode.read_text`
(or ``decode_bytes`` for archive members) sees PDF bytes and returns the pages joined by
:data:`PAGE_SEPARATOR`; :func:`sleuth.ingest.parsers.parse_pdf` splits them again into page-aware
blocks. Anything that makes a PDF unusable raises :class:`PdfError` (a ``DecodeError``), which the
indexer reports as a skipped file with its reason; it never stops an index run. pypdf is imported on
first use (it is not needed to search).
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass

from sleuth.ingest.decode import DecodeError, normalize_newlines

PDF_MAGIC = b"%PDF-"
"""Bytes a PDF file starts with."""
PDF_HEADER_SEARCH_BYTES = 1024
"""PDF readers accept the ``%PDF-`` header anywhere in a file's first this many bytes."""
PDF_MAX_BYTES = 64 * 1024 * 1024
"""PDFs larger than this many bytes are skipped (papers with figures run to tens of MiB; the text
layer is what is indexed, but the whole file is read into memory to get it)."""
PDF_MAX_PAGES = 2000
"""PDFs with more pages than this are skipped (reason ``too many pages``) rather than cut short."""
PAGE_SEPARATOR = "\n\f\n"
"""Between two pages' texts: a form feed on a line of its own, so every page starts on a new line.
Page texts never contain a form feed themselves."""

_log = logging.getLogger(__name__)
# pypdf logs what it repairs in damaged files ("EOF marker not found"); without a handler of its own
# Python's last-resort handler would print that on stderr during `sleuth index`. Applications that
# configure logging still receive these records (they propagate to the root logger).
logging.getLogger("pypdf").addHandler(logging.NullHandler())


class PdfError(DecodeError):
    """A PDF that cannot be indexed: encrypted with a password, corrupt, without text, too big."""


@dataclass(frozen=True)
class PdfText:
    """The text layer of a PDF: ``pages[i]`` is the text of page ``i + 1`` (``""`` when it has none),
    newlines normalised, form feeds and NULs replaced by spaces; ``title`` is the metadata /Title
    (stripped), or None when absent or blank."""

    pages: tuple[str, ...]
    title: str | None

    @property
    def text(self) -> str:
        """The pages joined by :data:`PAGE_SEPARATOR` (what the indexer stores and cuts into blocks)."""
        return PAGE_SEPARATOR.join(self.pages)


def looks_like_pdf(data: bytes) -> bool:
    """True when ``data`` starts with the ``%PDF-`` header."""
    return data.startswith(PDF_MAGIC)


def _clean(page_text: str) -> str:
    return normalize_newlines(page_text).replace("\f", " ").replace("\x00", " ").strip("\n")


def extract_pdf(data: bytes) -> PdfText:
    """Extract the text of every page of a PDF held in ``data``.

    A PDF encrypted with an empty user password (restrictions only) is decrypted and read.

    Raises:
        PdfError: with a reason meant for the index report: larger than :data:`PDF_MAX_BYTES`
            (``too large: ...``); no ``%PDF-`` header in the first :data:`PDF_HEADER_SEARCH_BYTES`
            bytes (``not a PDF``); a password is needed (``encrypted PDF``); pypdf cannot read it
            (``corrupt PDF: ...``); more than :data:`PDF_MAX_PAGES` pages (``too many pages``); no
            page has any text (``no extractable text``: scanned images, which need OCR).
    """
    if len(data) > PDF_MAX_BYTES:
        raise PdfError(f"too large: {len(data)} bytes > {PDF_MAX_BYTES} byte limit for PDF")
    if PDF_MAGIC not in data[:PDF_HEADER_SEARCH_BYTES]:
        raise PdfError("not a PDF: no %PDF- header")
    from pypdf import PasswordType, PdfReader
    from pypdf.errors import DependencyError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                decrypted = reader.decrypt("")
            except (DependencyError, NotImplementedError) as exc:
                raise PdfError(f"encrypted PDF: cannot decrypt ({exc})") from None
            if decrypted == PasswordType.NOT_DECRYPTED:
                raise PdfError("encrypted PDF: a password is required")
        count = len(reader.pages)
        if count > PDF_MAX_PAGES:
            raise PdfError(f"too many pages: {count} > {PDF_MAX_PAGES} page limit for PDF")
        pages = tuple(_clean(page.extract_text() or "") for page in reader.pages)
        title = _title(reader)
    except PdfError:
        raise
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types on damaged input; one file never stops an index
        raise PdfError(f"corrupt PDF: {type(exc).__name__}: {exc}") from None
    if not any(page.strip() for page in pages):
        raise PdfError(f"no extractable text in {count} page(s) (scanned images need OCR, which sleuth does not do)")
    return PdfText(pages, title)


def _title(reader: object) -> str | None:
    """The document information /Title, or None (a damaged info dictionary is not an error)."""
    try:
        metadata = reader.metadata  # type: ignore[attr-defined]
        title = metadata.title if metadata is not None else None
    except Exception as exc:  # noqa: BLE001 - metadata is optional; the text is what matters
        _log.debug("PDF metadata unreadable: %s", exc)
        return None
    if isinstance(title, str):
        title = " ".join(title.replace("\x00", " ").split())
        return title or None
    return None


__all__ = [
    "PAGE_SEPARATOR",
    "PDF_HEADER_SEARCH_BYTES",
    "PDF_MAGIC",
    "PDF_MAX_BYTES",
    "PDF_MAX_PAGES",
    "PdfError",
    "PdfText",
    "extract_pdf",
    "looks_like_pdf",
]
