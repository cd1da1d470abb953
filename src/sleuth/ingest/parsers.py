"""Per-format parsing: markdown (with front matter), Jupyter notebooks, code, config, plain text and
PDF text layers (pages joined by form feeds, see :mod:`sleuth.ingest.pdf`).

:func:`parse_document` turns one decoded text into a :class:`~sleuth.types.ParsedDocument` whose blocks
point into ``ParsedDocument.text`` (``block.text == doc.text[block.start_char:block.end_char]``).
Pure functions: no I/O.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath
from typing import Any

import yaml
from frontmatter.default_handlers import BaseHandler
from markdown_it.token import Token

from sleuth.doc_types import BlockDraft, DocumentKind, ParsedDocument
from sleuth.ingest.chunk import (
    CHUNK_MAX_CHARS,
    CODE_WINDOW_LINES,
    CODE_WINDOW_OVERLAP_LINES,
    LineIndex,
    blocks_for_span,
    line_windows,
    make_block,
    trim_span,
)
from sleuth.ingest.decisions import decision_metadata
from sleuth.ingest.front_matter import BoundedYAMLHandler, FrontMatterLimit, TomlHandler
from sleuth.ingest.links import declared_entities, extract_links, markdown_tokens
from sleuth.ingest.markdown_tree import TreeToken
from sleuth.ingest.roles import split_rel_path
from sleuth.locations import cell_heading

MARKDOWN_EXTENSIONS: frozenset[str] = frozenset({".md", ".markdown", ".mdx", ".mdown", ".mkd", ".mkdn"})
NOTEBOOK_EXTENSIONS: frozenset[str] = frozenset({".ipynb"})
CODE_EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "jsx", ".ts": "typescript", ".tsx": "tsx", ".go": "go", ".rs": "rust", ".java": "java",
    ".c": "c", ".h": "c", ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".cs": "csharp", ".rb": "ruby", ".php": "php", ".swift": "swift", ".kt": "kotlin", ".kts": "kotlin",
    ".scala": "scala", ".sh": "bash", ".bash": "bash", ".zsh": "zsh", ".fish": "fish", ".ps1": "powershell",
    ".sql": "sql", ".lua": "lua", ".r": "r", ".m": "objective-c", ".mm": "objective-c", ".pl": "perl",
    ".pm": "perl", ".hs": "haskell", ".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".clj": "clojure",
    ".cljs": "clojure", ".dart": "dart", ".vue": "vue", ".svelte": "svelte", ".jl": "julia", ".zig": "zig",
    ".nim": "nim", ".ml": "ocaml", ".fs": "fsharp", ".groovy": "groovy", ".gradle": "groovy",
    ".css": "css", ".scss": "scss", ".less": "less", ".html": "html", ".htm": "html", ".proto": "protobuf",
    ".graphql": "graphql", ".tf": "terraform", ".cmake": "cmake", ".mk": "make",
}
TEXT_EXTENSIONS: frozenset[str] = frozenset(
    {".txt", ".text", ".rst", ".adoc", ".asciidoc", ".org", ".tex", ".csv", ".tsv", ".log"}
)
CONFIG_EXTENSIONS: frozenset[str] = frozenset(
    {".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".env.example", ".xml", ".properties"}
)
PDF_EXTENSIONS: frozenset[str] = frozenset({".pdf"})
TEXT_FILENAMES: frozenset[str] = frozenset(
    {"readme", "license", "licence", "copying", "notice", "authors", "contributors", "changelog",
     "changes", "history", "contributing", "install", "todo", "news", "codeowners"}
)
CODE_FILENAMES: dict[str, str] = {
    "makefile": "make", "gnumakefile": "make", "dockerfile": "dockerfile", "containerfile": "dockerfile",
    "rakefile": "ruby", "gemfile": "ruby", "vagrantfile": "ruby", "jenkinsfile": "groovy",
    "procfile": "text", "justfile": "just",
}

SMALL_CELL_CHARS = 200
"""Notebook cells shorter than this many characters are grouped with their neighbours."""


class ParseError(Exception):
    """A document that cannot be parsed at all (e.g. a notebook that is not valid JSON)."""


# --------------------------------------------------------------------------- format detection


def kind_for_path(rel_path: str) -> DocumentKind | None:
    """Document kind for a path by its extension or well-known file name, case-insensitively.

    Returns None for formats that are not indexed.
    """
    name, suffix, _folders = split_rel_path(rel_path.lower())
    if suffix in MARKDOWN_EXTENSIONS:
        return "markdown"
    if suffix in PDF_EXTENSIONS:
        return "pdf"
    if suffix in NOTEBOOK_EXTENSIONS:
        return "notebook"
    compound = any(name.endswith(ext) for ext in CONFIG_EXTENSIONS if ext.count(".") > 1)  # .env.example
    if compound or suffix in CONFIG_EXTENSIONS:
        return "config"
    if suffix in CODE_EXTENSIONS or name in CODE_FILENAMES:
        return "code"
    if suffix in TEXT_EXTENSIONS or name in TEXT_FILENAMES:
        return "text"
    stem = name[: -len(suffix)] if suffix else name
    if suffix and stem in TEXT_FILENAMES and suffix not in CODE_EXTENSIONS:  # e.g. LICENSE.MIT
        return "text"
    return None


def parse_document(rel_path: str, text: str, *, title: str | None = None) -> ParsedDocument:
    """Parse decoded ``text`` (``\\n`` line endings) according to :func:`kind_for_path`.

    Paths of unknown kind are parsed as plain text. The document's blocks never exceed
    ``CHUNK_MAX_CHARS`` characters and satisfy ``block.text == doc.text[start_char:end_char]``.
    ``title``: a title from the file's metadata (``DecodedText.title``, a PDF's /Title); used by
    PDFs, ignored by the other formats (which find their title in their text).

    Raises:
        ParseError: the document is unusable (malformed notebook JSON or structure).
    """
    kind = kind_for_path(rel_path) or "text"
    if kind == "markdown":
        return parse_markdown(rel_path, text)
    if kind == "pdf":
        return parse_pdf(rel_path, text, title)
    if kind == "notebook":
        return parse_notebook(rel_path, text)
    if kind in ("code", "config"):
        return parse_code(rel_path, text, kind)
    return parse_text(rel_path, text)


# --------------------------------------------------------------------------- front matter


_FM_HANDLERS: tuple[tuple[str, BaseHandler], ...] = (("YAML", BoundedYAMLHandler()), ("TOML", TomlHandler()))


def _jsonable(value: Any) -> Any:
    """Convert a front-matter value to JSON-serialisable data (dates to ISO strings, others to str)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.date | dt.time):  # datetime is a date
        return value.isoformat()
    return str(value)


def _error_line(exc: Exception, fm_first_line: int) -> str:
    mark = getattr(exc, "problem_mark", None)
    what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"line {fm_first_line + mark.line}: {what}"
    return what


_METADATA_LINE = re.compile(r"[ \t]*[\w\"'.-]+[ \t]*[:=]")


def _split_front_matter(
    text: str, lines: LineIndex
) -> tuple[dict[str, Any], int, int, list[str]]:
    """Find front matter at the very start of ``text``.

    Returns ``(front_matter, index_start, scan_start, problems)``: blocks cover ``text[index_start:]``;
    headings are looked for in ``text[scan_start:]``. Both are 0 when there is no usable front
    matter, except that headings are not looked for inside malformed metadata (``key: ...`` lines).
    """
    for name, handler in _FM_HANDLERS:
        assert handler.FM_BOUNDARY is not None
        opening = handler.FM_BOUNDARY.match(text)
        if opening is None:
            continue
        closing = handler.FM_BOUNDARY.search(text, opening.end())
        if closing is None:
            return {}, 0, 0, []  # a lone thematic break, not front matter
        body_start = closing.end()
        if text.startswith("\n", body_start):
            body_start += 1
        raw = text[opening.end() : closing.start()]
        try:
            data = handler.load(raw)
        except FrontMatterLimit as exc:
            # Over a limit (an alias bomb, say): indexed without it; the body still has its headings.
            return {}, body_start, body_start, [f"front matter: not read, over a limit: {exc}"]
        except (yaml.YAMLError, tomllib.TOMLDecodeError, ValueError) as exc:
            problem = f"front matter: invalid {name} ({_error_line(exc, lines(opening.end()))})"
            # Broken metadata ("key: ...") is not searched for headings; prose between two
            # thematic breaks (a page that merely starts with "---") is.
            looks_like_metadata = _METADATA_LINE.match(raw.lstrip("\n")) is not None
            return {}, 0, body_start if looks_like_metadata else 0, [problem]
        if data is None:
            return {}, body_start, body_start, []
        if not isinstance(data, dict):
            problem = f"front matter: not a {name} mapping (got {type(data).__name__}); indexed as body text"
            return {}, 0, 0, [problem]
        return _jsonable(data), body_start, body_start, []
    return {}, 0, 0, []


def _tags(front_matter: dict[str, Any]) -> list[str]:
    """Tags from ``tags`` (list or comma-separated string) plus ``keywords``/``categories`` lists."""
    found: list[str] = []
    for key in ("tags", "keywords", "categories"):
        value = front_matter.get(key)
        if key == "tags" and isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list):
            found.extend(str(v).strip() for v in value if v is not None and not isinstance(v, dict | list))
    return list(dict.fromkeys(t for t in found if t))


#: Front-matter keys holding a page's summary, the first that is a non-blank string searched as a block
#: of its own (Hugo and Docusaurus ``description``, Hugo ``summary``, Jekyll ``excerpt``, ``abstract``).
DESCRIPTION_KEYS = ("description", "summary", "excerpt", "abstract")


#: Words as :func:`_description_blocks` compares a summary with its page (lowercased; no stemming).
_WORDS = re.compile(r"\w+")


def _description_blocks(text: str, index_start: int, front_matter: dict[str, Any], lines: LineIndex,
                        body: Sequence[BlockDraft] = ()) -> list[BlockDraft]:
    """The page's summary in its front matter (:data:`DESCRIPTION_KEYS`) as a block of its own,
    placed where the front matter says it, so that every lane searches it (the front matter itself is
    not searched) and a hit there shows its line: the value's span when it is on the key's line (quotes
    left out), else the lines after the key that continue it (a YAML ``>`` or ``|`` block, a plain
    value running on, a TOML triple-quoted string), at most ``CHUNK_MAX_CHARS`` characters. A top-level key
    only (``params: {description: ...}`` is not the page's), on the first line of that key that holds
    its value as written (:func:`_loose`: escapes and spacing aside); none when no line does (an alias, a
    line that looks like the key inside another value's string), or when the page's ``body`` blocks
    and title hold every word of it already (a summary repeating the lead paragraph: 113 of the Hugo
    docs' 745 summaries; it would find nothing more, and its block and vector would cost as much as
    another's)."""
    key = next((k for k in DESCRIPTION_KEYS if isinstance(front_matter.get(k), str) and front_matter[k].strip()),
               None)
    if key is None or not index_start:
        return []
    said = set(_WORDS.findall(front_matter[key].lower()))
    title = front_matter.get("title")
    held: set[str] = set(_WORDS.findall(title.lower())) if isinstance(title, str) else set()
    for block in body:
        held.update(_WORDS.findall(block.text.lower()))
    if said <= held:
        return []
    head = text[:index_start]
    value = _loose(front_matter[key])
    for found in re.finditer(rf"(?m)^([\"']?){re.escape(key)}\1[ \t]*[:=][ \t]*(.*)$", head):
        start, end = _value_span(head, found, value)
        if start < end and _loose(head[start:end]) == value:  # the value as written: not a look-alike line
            break
    else:  # no line of the key holds its value as written (an alias, a line inside another value's string)
        return []
    start, end = trim_span(text, start, end)
    while start < end and text[start] in " \t":  # a block scalar's indentation
        start += 1
    if end <= start:
        return []
    return blocks_for_span(text, start, min(end, start + CHUNK_MAX_CHARS), (), lines)


def _loose(written: str) -> str:
    """A value as :func:`_description_blocks` compares the front matter's with the file's text:
    whitespace runs as one space, ``\\t`` and ``\\n`` escapes as spaces, other backslashes and a
    single-quoted string's doubled quote (``''``) as written once."""
    return " ".join(written.replace("\\t", " ").replace("\\n", " ").replace("\\", "").replace("''", "'").split())


#: A YAML anchor or tag before a value (``&summary``, ``!!str``), left out of the value's span.
_VALUE_PROPERTIES = re.compile(r"(?:[&!]\S*[ \t]+)+")


def _value_span(head: str, found: re.Match[str], value: str) -> tuple[int, int]:
    """Where the value of the key line ``found`` (its rest of line as group 2) is written in
    ``head``: on that line (quotes, a YAML anchor or tag and a trailing ``# comment`` left out), or
    on the lines that continue it (a YAML ``>`` or ``|`` block, a plain value running on, a TOML
    triple-quoted string)."""
    rest, rest_start = found.group(2).rstrip(), found.start(2)
    if (props := _VALUE_PROPERTIES.match(rest)) is not None:
        rest, rest_start = rest[props.end():], rest_start + props.end()
    if rest.startswith(('"""', "'''")):  # TOML multi-line string
        close = head.find(rest[:3], rest_start + 3)
        return rest_start + 3, close if close >= 0 else rest_start + len(rest)
    if rest[:1] in ("\"", "'"):  # a quoted value: to its closing quote (a comment may follow)
        close = _closing_quote(rest)
        if close is not None:
            return rest_start + 1, rest_start + close
        end = _continued(head, found.end(), rest_start + len(rest))  # running on: to the closing quote
        return rest_start + 1, end - 1 if head[end - 1:end] == rest[0] else end
    if rest and rest[0] not in "|>":
        comment = re.search(r"[ \t]#", rest)  # YAML: a comment starts after a blank
        end = rest_start + (comment.start() if comment else len(rest))
        if _loose(head[rest_start:end]) != value:
            end = _continued(head, found.end(), end)  # a plain value running on indented lines
        return rest_start, end
    start = found.end() + 1  # a block scalar, or the value on the lines below
    return start, _continued(head, found.end(), start)


def _closing_quote(rest: str) -> int | None:
    """The index in ``rest`` of the quote that closes the string ``rest`` opens (``"`` with
    backslash escapes, ``'`` with ``''`` for a quote), or None when it runs past the line."""
    quote, i = rest[0], 1
    while i < len(rest):
        if quote == '"' and rest[i] == "\\":
            i += 2
            continue
        if rest[i] == quote:
            if quote == "'" and rest[i + 1:i + 2] == "'":
                i += 2
                continue
            return i
        i += 1
    return None


def _continued(head: str, line_end: int, end: int) -> int:
    """The end of the indented lines after the line ending at ``line_end`` (a YAML value continued
    there); ``end`` when none is."""
    pos = line_end + 1
    while pos < len(head):
        nl = head.find("\n", pos)
        stop = len(head) if nl < 0 else nl
        line = head[pos:stop]
        if line.strip() and line[0] not in " \t":
            break
        if line.strip():
            end = stop
        pos = stop + 1
    return end


# --------------------------------------------------------------------------- markdown


_HEADING_ATTRS = re.compile(r"\s*\{[#.][^}]*\}\s*$")  # Hugo/Pandoc "## Title {#anchor}"


def _inline_text(token: Token | TreeToken) -> str:
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type == "image":
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return _HEADING_ATTRS.sub("", " ".join("".join(parts).split()))


def _headings(text: str, tokens: Sequence[Token | TreeToken] | None = None) -> list[tuple[int, int, str]]:
    """Top-level headings (ATX and setext) of markdown ``text`` as ``(line0, level, text)``.

    ``line0`` is 0-based within ``text``. Lines inside code fences, HTML blocks, block quotes and
    lists are not headings. ``tokens``: ``markdown_tokens(text)`` when already parsed.
    """
    if tokens is None:
        tokens = markdown_tokens(text)
    found = []
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.map:
            found.append((token.map[0], int(token.tag[1:]), _inline_text(tokens[i + 1])))
    return found


def parse_markdown(rel_path: str, text: str) -> ParsedDocument:
    """Parse a markdown page: front matter, title, tags, and one block per heading section.

    Each section runs from its heading line to the next heading (any level) and carries the path of
    enclosing heading texts; text before the first heading has path ``()``. Long sections are cut
    with overlap. Malformed or non-mapping front matter is reported in ``problems`` and the whole
    text is indexed. A decision record's ``Date:`` line and status (adr-tools, MADR) fill the front
    matter keys it lacks (:func:`sleuth.ingest.decisions.decision_metadata`). ``links`` and
    ``entities``: see :func:`sleuth.ingest.links.extract_links` (over the body after the front
    matter) and :func:`~sleuth.ingest.links.declared_entities`.
    """
    lines = LineIndex(text)
    front_matter, index_start, scan_start, problems = _split_front_matter(text, lines)
    stated, decision_problems = decision_metadata(rel_path, text[index_start:], front_matter)
    if stated:  # a decision record's Date: / Status lines, as front matter (which wins)
        front_matter = {**front_matter, **stated}
    problems = [*problems, *decision_problems]
    first_scan_line = lines(scan_start)
    stack: list[tuple[int, str]] = []
    sections: list[tuple[int, tuple[str, ...]]] = [(index_start, ())]
    h1_title = None
    tokens = markdown_tokens(text[scan_start:])
    for line0, level, heading in _headings(text[scan_start:], tokens):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        if level == 1 and h1_title is None and heading:
            h1_title = heading
        sections.append((lines.line_start(first_scan_line + line0), tuple(h for _, h in stack)))
    blocks: list[BlockDraft] = []
    for i, (start, path) in enumerate(sections):
        end = sections[i + 1][0] if i + 1 < len(sections) else len(text)
        blocks.extend(blocks_for_span(text, start, end, path, lines))
    if blocks:  # (a page of front matter alone is one block of its whole text: sleuth.indexer.make_blocks)
        blocks = [*_description_blocks(text, index_start, front_matter, lines, blocks), *blocks]
    fm_title = front_matter.get("title")
    if isinstance(fm_title, str) and fm_title.strip():
        title = fm_title.strip()
    else:
        title = h1_title or PurePosixPath(rel_path).stem
    return ParsedDocument(
        kind="markdown",
        title=title,
        text=text,
        blocks=blocks,
        tags=_tags(front_matter),
        front_matter=front_matter,
        problems=problems,
        links=extract_links(text[index_start:], front_matter, tokens if index_start == scan_start else None),
        entities=declared_entities(front_matter),
    )


# --------------------------------------------------------------------------- notebooks


def _cell_source(cell: dict[str, Any]) -> str:
    source = cell.get("source", cell.get("input", ""))
    if isinstance(source, list):
        source = "".join(str(s) for s in source)
    return str(source).replace("\r\n", "\n").replace("\r", "\n").strip("\n").rstrip()


#: Longest kernel language name put after a code cell's fence, in characters.
_KERNEL_LANGUAGE_MAX_CHARS = 64
#: Digits of the longest JSON integer read as a number; a longer one (past Python's 4,300-digit
#: conversion limit) is kept as its digits, so a notebook's metadata cannot make it unreadable.
_NOTEBOOK_INT_MAX_DIGITS = 4000


def _notebook_int(digits: str) -> int | str:
    return int(digits) if len(digits) <= _NOTEBOOK_INT_MAX_DIGITS else digits


def _kernel_language(meta: dict[str, Any]) -> str:
    """The notebook's language from ``language_info.name``, else ``kernelspec.language``, else
    ``python``. Metadata of another shape counts as absent: a section that is not an object, a name
    that is not a string, is empty, over :data:`_KERNEL_LANGUAGE_MAX_CHARS`, or holds a backtick or
    a character :meth:`str.isprintable` refuses (a newline would end the fence line)."""
    for key, field in (("language_info", "name"), ("kernelspec", "language")):
        section = meta.get(key)
        name = section.get(field) if isinstance(section, dict) else None
        if isinstance(name, str) and name.strip() and len(name) <= _KERNEL_LANGUAGE_MAX_CHARS \
                and name.isprintable() and "`" not in name:
            return name
    return "python"


def _notebook_cells(rel_path: str, text: str) -> tuple[list[dict[str, Any]], str]:
    try:
        nb = json.loads(text, parse_int=_notebook_int)
    except json.JSONDecodeError as exc:
        # "Unterminated string starting at" says where in the position it leaves out: put it back
        raise ParseError(f"{rel_path}: invalid notebook JSON ({exc.msg.removesuffix(' at')} at line {exc.lineno},"
                         f" column {exc.colno})") from None
    except RecursionError:
        raise ParseError(f"{rel_path}: invalid notebook JSON (arrays or objects nested too deeply)") from None
    if not isinstance(nb, dict):
        raise ParseError(f"{rel_path}: notebook JSON is not an object")
    cells = nb.get("cells")
    if cells is None and isinstance(nb.get("worksheets"), list):  # nbformat 3
        cells = [c for ws in nb["worksheets"] if isinstance(ws, dict) for c in ws.get("cells", [])]
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise ParseError(f"{rel_path}: notebook has no list of cell objects")
    meta = nb.get("metadata")
    return cells, _kernel_language(meta if isinstance(meta, dict) else {})


def parse_notebook(rel_path: str, text: str) -> ParsedDocument:
    """Parse a Jupyter notebook (JSON, nbformat 3 or 4) into a rendered text with one block per cell.

    ``ParsedDocument.text`` is the cells joined by blank lines: markdown and raw cells as-is, code
    cells inside a fenced block tagged with the kernel language; outputs and empty cells are left
    out. Consecutive cells under the same heading that are each shorter than ``SMALL_CELL_CHARS``
    share a block. Each block's heading path ends with its cells (``cell 4``, ``cells 4-6``:
    1-based positions in the notebook, empty cells counted, as Jupyter numbers them), which
    :func:`sleuth.locations.block_location` shows. Title: the first level-1 heading, else the file
    stem. ``links``: those of the markdown cells (code cells are fenced in the rendered text, so
    links there are ignored).

    Raises:
        ParseError: invalid JSON or no list of cells.
    """
    cells, lang = _notebook_cells(rel_path, text)
    parts: list[str] = []
    # start, end, heading path, opens a heading, cell number (1-based, every cell counted)
    spans: list[tuple[int, int, tuple[str, ...], bool, int]] = []
    stack: list[tuple[int, str]] = []
    title = None
    offset = 0
    for number, cell in enumerate(cells, start=1):
        source = _cell_source(cell)
        if not source.strip():
            continue
        cell_type = cell.get("cell_type", "code")
        rendered = f"```{lang}\n{source}\n```" if cell_type == "code" else source
        path_before = tuple(h for _, h in stack)
        path, opens = path_before, False
        if cell_type == "markdown":
            for _, level, heading in _headings(source):
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, heading))
                if not opens:
                    path, opens = tuple(h for _, h in stack), True
                if level == 1 and title is None and heading:
                    title = heading
        if parts:
            offset += 2
        spans.append((offset, offset + len(rendered), path, opens, number))
        parts.append(rendered)
        offset += len(rendered)
    full = "\n\n".join(parts)
    lines = LineIndex(full)
    blocks: list[BlockDraft] = []
    group: list[int] | None = None  # [start, end, first cell, last cell] of the current group of cells
    group_path: tuple[str, ...] = ()

    def flush(group: list[int]) -> None:
        path = (*group_path, cell_heading(group[2], group[3]))
        blocks.extend(blocks_for_span(full, group[0], group[1], path, lines))

    for start, end, path, opens, number in spans:
        small = end - start < SMALL_CELL_CHARS
        if (
            group is not None
            and small
            and not opens
            and path == group_path
            and group[1] - group[0] < SMALL_CELL_CHARS
        ):
            group[1], group[3] = end, number
            continue
        if group is not None:
            flush(group)
        group, group_path = [start, end, number, number], path
    if group is not None:
        flush(group)
    return ParsedDocument(
        kind="notebook", title=title or PurePosixPath(rel_path).stem, text=full, blocks=blocks,
        links=extract_links(full, {}),
    )


# --------------------------------------------------------------------------- code and config

_PY_TOP_LEVEL = re.compile(r"(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")


def _python_scopes(text: str) -> list[str | None]:
    """For each line (index 0-based), the enclosing top-level ``def``/``class`` name, if any."""
    scopes: list[str | None] = []
    current: str | None = None
    for line in text.split("\n"):
        if line and not line[0].isspace() and not line.startswith("#"):
            match = _PY_TOP_LEVEL.match(line)
            current = match.group(1) if match else None
        scopes.append(current)
    return scopes


def parse_code(rel_path: str, text: str, kind: DocumentKind = "code") -> ParsedDocument:
    """Parse source code or config into overlapping line windows (see :func:`line_windows`).

    Title: the file name. For Python, a block's heading path is the top-level ``def``/``class``
    enclosing its first line (``()`` outside any).
    """
    lines = LineIndex(text)
    name = PurePosixPath(rel_path).name
    scopes = _python_scopes(text) if name.lower().endswith((".py", ".pyi")) else None
    blocks: list[BlockDraft] = []
    for start, end in line_windows(text, CODE_WINDOW_LINES, CODE_WINDOW_OVERLAP_LINES, CHUNK_MAX_CHARS):
        start, end = trim_span(text, start, end)
        if start == end:
            continue
        path: tuple[str, ...] = ()
        if scopes is not None:
            scope = scopes[lines(start) - 1]
            path = (scope,) if scope else ()
        blocks.append(make_block(text, start, end, path, lines))
    return ParsedDocument(kind=kind, title=name, text=text, blocks=blocks)


# --------------------------------------------------------------------------- plain text

_BLANK_LINES = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)*")


def _paragraphs(text: str) -> Iterable[tuple[int, int]]:
    pos = 0
    for match in _BLANK_LINES.finditer(text):
        yield pos, match.start()
        pos = match.end()
    yield pos, len(text)


def _packed_spans(text: str, first: int, last: int) -> list[tuple[int, int]]:
    """Paragraphs of ``text[first:last]`` (separated by blank lines), trimmed, packed greedily into
    spans of at most ``CHUNK_MAX_CHARS`` characters (a longer paragraph stays one span)."""
    spans: list[tuple[int, int]] = []
    group: list[int] | None = None
    for start, end in _paragraphs(text[first:last]):
        start, end = trim_span(text, first + start, first + end)
        if start == end:
            continue
        if group is not None and end - group[0] <= CHUNK_MAX_CHARS:
            group[1] = end
            continue
        if group is not None:
            spans.append((group[0], group[1]))
        group = [start, end]
    if group is not None:
        spans.append((group[0], group[1]))
    return spans


def parse_text(rel_path: str, text: str) -> ParsedDocument:
    """Parse plain text: paragraphs (separated by blank lines) packed into blocks of at most
    ``CHUNK_MAX_CHARS`` characters; a longer paragraph is cut with overlap. Title: the file name.
    """
    lines = LineIndex(text)
    blocks: list[BlockDraft] = []
    for start, end in _packed_spans(text, 0, len(text)):
        blocks.extend(blocks_for_span(text, start, end, (), lines))
    return ParsedDocument(kind="text", title=PurePosixPath(rel_path).name, text=text, blocks=blocks)


# --------------------------------------------------------------------------- PDF

PDF_TITLE_MAX_CHARS = 200
"""A title taken from a PDF's first line of text is cut to this many characters."""
PDF_EMPTY_PAGES_LISTED = 10
"""At most this many page numbers are named in the "pages without text" problem."""


def parse_pdf(rel_path: str, text: str, title: str | None = None) -> ParsedDocument:
    """Parse a PDF's text layer: pages separated by form feeds (``\\f``, as
    :func:`sleuth.ingest.pdf.extract_pdf` joins them), each cut like plain text (:func:`parse_text`).

    Every block lies inside one page and its heading path is ``("page N",)`` (N 1-based, counted
    by form feeds, so pages without text keep the numbering); spans index into ``text`` itself.
    Title: ``title`` (the metadata /Title) when non-blank, else the first non-empty line of text
    (whitespace collapsed, at most ``PDF_TITLE_MAX_CHARS`` characters), else the file name. Pages
    without text among pages with text are reported in ``problems`` (scanned pages need OCR).
    """
    lines = LineIndex(text)
    blocks: list[BlockDraft] = []
    empty: list[int] = []
    start = 0
    for number, page in enumerate(text.split("\f"), start=1):
        end = start + len(page)
        page_blocks: list[BlockDraft] = []
        for span_start, span_end in _packed_spans(text, start, end):
            page_blocks.extend(blocks_for_span(text, span_start, span_end, (f"page {number}",), lines))
        if not page_blocks:
            empty.append(number)
        blocks.extend(page_blocks)
        start = end + 1
    problems = []
    if empty and blocks:
        listed = ", ".join(map(str, empty[:PDF_EMPTY_PAGES_LISTED]))
        if len(empty) > PDF_EMPTY_PAGES_LISTED:
            listed += ", ..."
        problems.append(f"PDF: no text on {len(empty)} page(s): {listed} (scanned images are not read)")
    doc_title = " ".join((title or "").split())
    if not doc_title:
        first_line = next((line for line in text.split("\n") if line.strip()), "")
        doc_title = " ".join(first_line.split())[:PDF_TITLE_MAX_CHARS].strip()
    return ParsedDocument(
        kind="pdf", title=doc_title or PurePosixPath(rel_path).name, text=text, blocks=blocks, problems=problems
    )


__all__ = [
    "CODE_EXTENSIONS",
    "CONFIG_EXTENSIONS",
    "MARKDOWN_EXTENSIONS",
    "NOTEBOOK_EXTENSIONS",
    "PDF_EXTENSIONS",
    "TEXT_EXTENSIONS",
    "ParseError",
    "kind_for_path",
    "parse_code",
    "parse_document",
    "parse_markdown",
    "parse_notebook",
    "parse_pdf",
    "parse_text",
]
