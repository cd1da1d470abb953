"""Reading bytes to text: BOM handling, UTF-8 first, charset-normalizer fallback, newline normalisation;
PDF bytes are handed to :mod:`sleuth.ingest.pdf` and come back as page texts joined by form feeds."""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path

import charset_normalizer

SNIFF_BYTES = 8 * 1024
"""How many leading bytes of a file :func:`looks_binary` inspects."""

# Longest BOMs first: the UTF-32-LE BOM starts with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Western single-byte encodings preferred when charset-normalizer rates them as good as its best guess
# (it often ranks e.g. mac_latin2 first for plain latin-1 prose).
_WESTERN_ENCODINGS = ("cp1252", "latin_1", "iso8859_15")
_CHAOS_TOLERANCE = 0.01


@dataclass(frozen=True)
class DecodedText:
    """Decoded file content.

    ``text`` has line endings normalised to ``\\n`` and no BOM; ``encoding`` is the Python codec name
    used (e.g. ``"utf-8"``, ``"cp1252"``), or ``"pdf"`` for a PDF's text layer (pages joined by
    :data:`sleuth.ingest.pdf.PAGE_SEPARATOR`); ``had_bom`` says whether a byte-order mark was removed;
    ``title`` is a title from the file's own metadata (a PDF's /Title), else None.
    """

    text: str
    encoding: str
    had_bom: bool
    title: str | None = None


class DecodeError(Exception):
    """Raised when bytes are binary (NUL bytes) or no plausible text encoding decodes them."""


def normalize_newlines(text: str) -> str:
    """Return ``text`` with CRLF and lone CR replaced by ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _detect_bom(data: bytes) -> tuple[bytes, str] | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return bom, encoding
    return None


def _fallback_encoding(data: bytes) -> str | None:
    """Pick a codec for non-UTF-8 bytes with charset-normalizer; None when nothing plausible decodes."""
    results = charset_normalizer.from_bytes(data)
    best = results.best()
    if best is None:
        return None
    for match in results:
        if match.encoding in _WESTERN_ENCODINGS and match.chaos <= best.chaos + _CHAOS_TOLERANCE:
            return match.encoding
    if best.coherence == 0.0:  # no language recognised: short sample, default to Windows-1252
        try:
            data.decode("cp1252")
        except UnicodeDecodeError:
            pass
        else:
            return "cp1252"
    return best.encoding


def _is_pdf(data: bytes, name: str | None) -> bool:
    if name is not None:
        return name.lower().endswith(".pdf")
    return data.startswith(b"%PDF-")


def decode_bytes(data: bytes, name: str | None = None) -> DecodedText:
    """Decode a file's bytes to text.

    PDFs: when ``name`` (the file's name or path) ends in ``.pdf``, or, without a ``name``, when
    ``data`` starts with ``%PDF-``, the text layer is extracted (:func:`sleuth.ingest.pdf.extract_pdf`):
    ``encoding`` is ``"pdf"``, ``title`` the metadata /Title, and ``text`` the page texts joined by
    ``"\\n\\f\\n"``. A file named otherwise is never read as a PDF.

    Other bytes, in order: a UTF-8/16/32 byte-order mark decides the codec (and is stripped);
    otherwise NUL bytes mean binary; then strict UTF-8; then charset-normalizer's guess (biased to
    Windows-1252 for Western text). CRLF and lone CR become ``\\n``.

    Raises:
        DecodeError: ``"binary content"`` for NUL bytes or when no plausible text encoding exists, or
            when bytes after a BOM do not decode in the BOM's encoding. For PDFs, the subclass
            :class:`sleuth.ingest.pdf.PdfError` with the reason (encrypted, corrupt, no text, ...).
    """
    if _is_pdf(data, name):
        from sleuth.ingest.pdf import extract_pdf

        pdf = extract_pdf(data)
        return DecodedText(pdf.text, "pdf", False, pdf.title)
    bom = _detect_bom(data)
    if bom is not None:
        marker, encoding = bom
        try:
            text = data[len(marker) :].decode(encoding)
        except UnicodeDecodeError as exc:
            raise DecodeError(f"invalid {encoding} after byte-order mark: {exc.reason}") from exc
        return DecodedText(normalize_newlines(text), encoding, True)
    if b"\x00" in data:
        raise DecodeError("binary content (NUL bytes)")
    try:
        text = data.decode("utf-8")
        encoding = "utf-8"
    except UnicodeDecodeError:
        fallback = _fallback_encoding(data)
        if fallback is None:
            raise DecodeError("binary content (no plausible text encoding)") from None
        text = data.decode(fallback, errors="replace")
        encoding = fallback
    return DecodedText(normalize_newlines(text), encoding, False)


def read_text(path: Path) -> DecodedText:
    """Read and decode a whole file (see :func:`decode_bytes`; a ``.pdf`` name means a PDF).

    Raises:
        DecodeError: binary or undecodable content, or an unusable PDF; the message names the file.
        OSError: the file cannot be read (missing, permission denied, ...).
    """
    path = Path(path)
    data = path.read_bytes()
    try:
        return decode_bytes(data, path.name)
    except DecodeError as exc:
        raise type(exc)(f"{path}: {exc}") from None


def looks_binary(sample: bytes) -> bool:
    """Guess from a file's first bytes (ideally :data:`SNIFF_BYTES` of them) whether it is binary.

    A BOM means text; a NUL byte means binary; valid UTF-8 (allowing a multi-byte character cut
    off at the end of the sample) means text; otherwise binary when charset-normalizer finds no
    plausible encoding.
    """
    if not sample or _detect_bom(sample) is not None:
        return False
    if b"\x00" in sample:
        return True
    try:
        sample.decode("utf-8")
        return False
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data" and exc.start >= len(sample) - 3:
            return False
    return charset_normalizer.from_bytes(sample).best() is None
