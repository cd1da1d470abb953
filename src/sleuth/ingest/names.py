"""File names as the index stores them: always valid, printable UTF-8, and losslessly mapped back.

On Linux a file name is any string of bytes. Python hands names that are not valid UTF-8 to the
program with each undecodable byte as a lone surrogate (``os.fsdecode``: ``b"caf\\xe9.md"`` →
``"caf\\udce9.md"``), which SQLite, JSON and tantivy cannot store. The index therefore keeps every
path in an *index form*, as git's ``core.quotePath`` and Python's ``backslashreplace`` do:

- an undecodable byte becomes ``\\xNN`` (two lower-case hex digits): ``caf\\xe9.md``;
- a control character (C0, DEL, C1), which would garble a terminal or a log line, becomes the
  ``\\xNN`` escapes of its UTF-8 bytes: a name holding ESC shows as ``\\x1b``; so does a bidirectional
  embedding, override or isolate control (U+202A-U+202E, U+2066-U+2069), which would make a name
  read as another ("Trojan Source", CVE-2021-42574: ``report\\u202etxt.exe`` shows as
  ``reportexe.txt``);
- a backslash becomes ``\\\\``, so that an escape never collides with a real name;
- everything else is kept as it is.

Names without a backslash or an undecodable byte or a control character (nearly all of them) are
their own index form. :func:`fs_name` inverts :func:`index_name` exactly (``fs_name(index_name(x))
== x`` for every name the OS can give), so a path stored in the index always finds its file again.
"""

from __future__ import annotations

import os
import re

#: What needs escaping in a name from the file system: a backslash, a control character (C0, DEL,
#: C1), a bidirectional embedding/override/isolate control, or a lone surrogate standing for an
#: undecodable byte.
_NEEDS_ESCAPE = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
#: The escapes of the index form.
_ESCAPE = re.compile(r"\\(\\|x[0-9a-f]{2})")


def _escape(char: str) -> str:
    if char == "\\":
        return "\\\\"
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: an undecodable byte
        return f"\\x{code - 0xDC00:02x}"
    return "".join(f"\\x{b:02x}" for b in char.encode("utf-8", "surrogatepass"))


def index_name(name: str) -> str:
    """The index form of ``name`` (a file name or a ``/``-separated path as the OS gives it, with
    undecodable bytes as surrogates): see the module docstring. Pure; never raises."""
    if _NEEDS_ESCAPE.search(name) is None:
        return name
    return _NEEDS_ESCAPE.sub(lambda m: _escape(m.group()), name)


def fs_name(name: str) -> str:
    """The name (or path) on the file system, as Python's ``os`` functions take it, of an index
    form made by :func:`index_name`. A backslash not followed by ``\\`` or ``xNN`` stays as it is.
    Pure; never raises."""
    if "\\" not in name:
        return name
    out = bytearray()
    pos = 0
    for match in _ESCAPE.finditer(name):
        out += name[pos : match.start()].encode("utf-8", "surrogateescape")
        escape = match.group(1)
        out += b"\\" if escape == "\\" else bytes([int(escape[1:], 16)])
        pos = match.end()
    out += name[pos:].encode("utf-8", "surrogateescape")
    return os.fsdecode(bytes(out))


#: What a message may not carry raw: control characters (C0, DEL, C1), bidirectional embedding,
#: override and isolate controls, and lone surrogates.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` (an error message, a skip reason, what the CLI prints) with control characters other
    than tab and newline, bidirectional embedding/override/isolate controls, and lone surrogates
    (undecodable bytes of a file name), escaped as in :func:`index_name`; the
    rest, backslashes included, unchanged. For messages, which need not map back. Pure."""
    if _UNPRINTABLE.search(text) is None:
        return text
    return _UNPRINTABLE.sub(lambda m: _escape(m.group()), text)


#: What a line of output may not carry raw: what :func:`printable` escapes, tab, newline and
#: carriage return, the line and paragraph separators (``str.splitlines`` splits at them), and the
#: invisible direction marks (LRM, RLM, ALM), the zero-width space, word joiner and byte order mark
#: a name can hide behind (``inbox\u200b`` shown as ``inbox``); not ZWNJ and ZWJ, which Persian,
#: Indic scripts and emoji sequences need.
_NOT_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u2069\ufeff"
                           "\ud800-\udfff]")


def one_line(text: str) -> str:
    """``text`` (one line the CLI prints: a root, a path, a message about them) with every control
    character escaped as :func:`printable` escapes them, tab, newline, carriage return, U+2028 and
    U+2029 too (a root named ``"a\\nb"`` shows as ``a\\x0ab`` and cannot forge a line), and the
    invisible marks and zero-width characters (``\\xe2\\x80\\x8b``). Pure."""
    if _NOT_ONE_LINE.search(text) is None:
        return text
    return _NOT_ONE_LINE.sub(lambda m: _escape(m.group()), text)


def is_valid_text(name: str) -> bool:
    """True when ``name`` encodes to UTF-8 (holds no lone surrogate), as SQLite and JSON need."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shlex_quote(value: str) -> str:
    """``value`` quoted for a shell when it needs it: :func:`shlex.quote`, or, when it holds a
    character that is not printable (a newline in a folder's name), bash's and zsh's ``$'...'`` with
    that character as ``\\xNN`` / ``\\uNNNN`` -- a printed line must not hold it, and inside ``'...'``
    its escaped form would name another path."""
    import shlex

    if value.isprintable():
        return shlex.quote(value)
    out = []
    for ch in value:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x80 else f"\\u{ord(ch):04x}" if ord(ch) < 0x10000
                       else f"\\U{ord(ch):08x}")
    return "$'" + "".join(out) + "'"


__all__ = ["fs_name", "index_name", "is_valid_text", "one_line", "printable", "shlex_quote"]
