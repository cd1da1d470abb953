from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from sleuth.ingest.decode import DecodeError, decode_bytes, looks_binary, read_text

FRENCH = "Le café était très agréable, à côté de la forêt. Über die Straße, naïve señor.\n" * 3


def test_plain_utf8() -> None:
    decoded = decode_bytes("héllo → wörld\n".encode())
    assert decoded.text == "héllo → wörld\n"
    assert decoded.encoding == "utf-8"
    assert decoded.had_bom is False


def test_utf8_bom_is_stripped(tmp_path: Path) -> None:
    path = tmp_path / "bom.md"
    path.write_bytes(codecs.BOM_UTF8 + "# Título\n".encode())
    decoded = read_text(path)
    assert decoded.text == "# Título\n"
    assert decoded.encoding == "utf-8"
    assert decoded.had_bom is True


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_with_bom(codec: str) -> None:
    bom = codecs.BOM_UTF16_LE if codec.endswith("le") else codecs.BOM_UTF16_BE
    decoded = decode_bytes(bom + "naïve\r\ntext\n".encode(codec))
    assert decoded.text == "naïve\ntext\n"
    assert decoded.encoding == codec
    assert decoded.had_bom is True


def test_crlf_and_lone_cr_become_newlines() -> None:
    assert decode_bytes(b"a\r\nb\rc\n\r\nd").text == "a\nb\nc\n\nd"


def test_latin1_fallback(tmp_path: Path) -> None:
    path = tmp_path / "old.txt"
    path.write_bytes(FRENCH.encode("latin-1"))
    decoded = read_text(path)
    assert decoded.text == FRENCH
    assert decoded.encoding in ("cp1252", "latin_1", "iso8859_15")
    assert decoded.had_bom is False


def test_short_latin1_word_falls_back_to_cp1252() -> None:
    decoded = decode_bytes(b"caf\xe9\r\n")
    assert decoded.text == "café\n"
    assert decoded.encoding == "cp1252"


def test_nul_bytes_are_binary(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_bytes(b"abc\x00def")
    with pytest.raises(DecodeError, match="binary content") as info:
        read_text(path)
    assert str(path) in str(info.value)


def test_empty_bytes() -> None:
    assert decode_bytes(b"").text == ""


def test_looks_binary() -> None:
    assert looks_binary(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR") is True
    assert looks_binary("plain text ✓".encode()) is False
    assert looks_binary(codecs.BOM_UTF16_LE + "x".encode("utf-16-le")) is False
    # a multi-byte character cut off at the end of the sample is still text
    assert looks_binary("ok é".encode()[:-1]) is False
    assert looks_binary(b"") is False
