"""A faster CommonMark parse for what sleuth reads of a markdown page: its top-level headings and
the inline tokens that can hold a link. Pure functions: no I/O.

markdown-it-py (:func:`sleuth.ingest.links.markdown_tokens`) is the definition; it spends about
0.4 ms of CPU on a short page, most of a folder's parse workers' time. markdown-it-pyrs, a Rust port
of the same parser, builds the page's syntax tree in a tenth of that; :func:`tree_tokens` turns
the tree into the few tokens :func:`sleuth.ingest.parsers._headings` and
:func:`sleuth.ingest.links.extract_links` read, equal to markdown-it-py's for those readers:

- ``heading_open`` (``level``, ``map``, ``tag``) then ``inline`` for every heading, its children
  flat as markdown-it-py gives them (``text``, ``code_inline``, ``html_inline``, ``image``,
  breaks, emphasis and link open/close pairs);
- ``inline`` for each paragraph (a tight list item's hidden one too) whose source holds ``[``,
  ``<`` or ``&``: without one of them it holds no link, autolink, wikilink or entity, so reading
  it would add nothing.

A page is left to markdown-it-py (:func:`pyrs_usable` is false) when the two could differ or the
Rust parser could overflow its stack (it recurses on nesting) or take quadratic time: a line starting
with many container marks or much indentation (markdown-it-py stops nesting at 20 levels; a list
level counts two), many emphasis delimiters or images, a link to a scheme markdown-it refuses
(``file:``, ``javascript:``, written plainly or through an entity or escape: sleuth's markdown-it-py
accepts every URL, the Rust parser cannot be told to), many reference definitions or HTML
declarations and processing instructions (the Rust parser reads the rest of the paragraph for each:
8,000 definitions on consecutive lines took it 1.7 s against markdown-it-py's 0.12 s), an emphasis
delimiter next to a non-ASCII symbol (``**Note!**⚠️``: a punctuation character for markdown-it-py,
not for the Rust parser) or to U+0085, U+2028, U+2029 or NUL (whitespace for the Rust parser only),
a lowercase HTML declaration (``<!doctype html>`` opens an HTML block for markdown-it-py only), an
HTML comment holding ``--`` (a comment for markdown-it-py, text and links for the Rust parser), a
blockquote and a bare list marker line (``> a`` then ``-``: it ends the quote for markdown-it-py
only), a form feed or vertical tab, a backslash ending a line beside a reference definition, or a
``](`` ending a line beside one (markdown-it-py reads no link there).
A link whose URL starts or ends with whitespace (``[x](a.md\u3000)``: markdown-it-py strips it, the
Rust parser does not) makes the conversion fail. Any error of the Rust parser or of this conversion
also falls back (``None``). Checked page by page on the Hugo docs, the tldr pages and this repository's
markdown (``tests/ingest/test_markdown_tree.py``).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

if TYPE_CHECKING:
    from markdown_it_pyrs import Node

#: Container prefix units of one line (indentation characters and markers) above which a page goes
#: to markdown-it-py (each level of nesting opens with at least one on its line, a list level with two).
PYRS_LEADING_MARKS_MAX = 11
#: Emphasis delimiters (``*``, ``_``, ``~``) of a page above which it goes to markdown-it-py (nested
#: emphasis is the Rust parser's deepest recursion: 100,000 ``*`` overflow its stack).
PYRS_EMPHASIS_MARKS_MAX = 4000
#: Images (``![``) of a page from which it goes to markdown-it-py (images nest; markdown-it-py stops
#: parsing links 20 levels deep, the Rust parser does not).
PYRS_IMAGES_MAX = 20
#: ``]:`` marks (each reference definition has one) of a page above which it goes to markdown-it-py: the
#: Rust parser reads the rest of the paragraph for each definition (quadratic on consecutive lines).
PYRS_REFERENCE_MARKS_MAX = 64
#: ``<?`` and ``<!`` marks (not opening a comment) of a page above which it goes to markdown-it-py: the
#: Rust parser looks for the end of each HTML declaration or processing instruction to the end of the
#: paragraph (quadratic when none closes).
PYRS_HTML_MARKS_MAX = 64

# A line whose container prefix (indentation, ">" and list markers, from a marker on) has more than
# PYRS_LEADING_MARKS_MAX units: a blockquote level takes one unit, a list level at least two (its
# marker and a space), so fewer units keep markdown-it-py's nesting levels (a list counts two) under
# its limit of 20; or a list marker after a tab (a tab may stand for several levels' indentation).
_MARKER = r"(?:>|[-+*](?=[ \t])|\d{1,9}[.)](?=[ \t]))"
_LEADING_MARKS = re.compile(
    rf"^(?=[ \t]*{_MARKER})(?:[ \t]|{_MARKER}){{{PYRS_LEADING_MARKS_MAX + 1},}}"
    r"|^[ \t>]*\t[ \t>]*(?:[-+*]|\d{1,9}[.)])[ \t]", re.MULTILINE)
# A link destination (after "(", "<" or a reference definition's "]:") starting with a URL scheme
# markdown-it's validateLink refuses, or an entity, escape or percent code that could spell one.
_REFUSED_SCHEME = re.compile(r"(?:[(<]|\]:)\s*(?:javascript|vbscript|file|data)\s*[:&%\\]|&#", re.IGNORECASE)
# markdown-it-py's normalize rule: its line numbers are those of this text.
_NEWLINES = re.compile(r"\r\n?")
# A non-ASCII character (or NUL, read as U+FFFD) before or after an emphasis delimiter.
_AFTER_DELIMITER = re.compile(r"[*_]([^\x01-\x7f])")
_BEFORE_DELIMITER = re.compile(r"([^\x01-\x7f])[*_]")
# Characters the two parsers class differently for emphasis (besides the non-ASCII symbols).
_FLANK_DIFFERS = frozenset("\0\x85\u2028\u2029")
_LOWER_DECLARATION = re.compile(r"<![a-z]")
_QUOTE_LINE = re.compile(r"^[ \t]*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+)*>", re.MULTILINE)
_BARE_MARKER_LINE = re.compile(r"^[ \t]*(?:[-+*]|\d{1,9}[.)])[ \t]*$", re.MULTILINE)
_REFERENCE_LINE_ENDS = re.compile(r"\\$|\]\(\s*$", re.MULTILINE)
_LINK_MARKS = re.compile(rb"[\[<&]")
_EMPHASIS = {"em": ("em_open", "em_close"), "strong": ("strong_open", "strong_close"), "s": ("s_open", "s_close")}
_INLINE_NODES = frozenset({"text", "text_special", "code_inline", "html_inline", "softbreak", "hardbreak", "image",
                           "em", "strong", "s", "link", "autolink"})


@dataclass(slots=True)
class TreeToken:
    """A token as markdown-it-py's :class:`markdown_it.token.Token` has it, for the fields sleuth
    reads (``type``, ``content``, ``markup``, ``attrs``, ``info``, ``children``, ``level``, ``map``,
    ``tag``)."""

    type: str
    content: str = ""
    markup: str = ""
    attrs: dict[str, Any] = field(default_factory=dict)
    info: str = ""
    children: list[TreeToken] | None = None
    level: int = 0
    map: list[int] | None = None
    tag: str = ""


def pyrs_usable(text: str) -> bool:
    """Whether :func:`tree_tokens` may parse ``text`` (see the module docstring); cost: a few scans
    of the text from C."""
    if "\r" in text:  # the line-anchored checks see the lines the parser will (a lone CR ends one)
        text = _NEWLINES.sub("\n", text)
    return (_LEADING_MARKS.search(text) is None and _REFUSED_SCHEME.search(text) is None
            and text.count("*") + text.count("_") + text.count("~") <= PYRS_EMPHASIS_MARKS_MAX
            and text.count("![") < PYRS_IMAGES_MAX
            and text.count("]:") <= PYRS_REFERENCE_MARKS_MAX
            and text.count("<?") + text.count("<!") - text.count("<!--") <= PYRS_HTML_MARKS_MAX
            and _LOWER_DECLARATION.search(text) is None
            and "\f" not in text and "\v" not in text
            and ("]:" not in text or _REFERENCE_LINE_ENDS.search(text) is None)
            and (_BARE_MARKER_LINE.search(text) is None or _QUOTE_LINE.search(text) is None)
            and not _comment_with_dashes(text)
            and not _emphasis_flank_differs(text))


def _emphasis_flank_differs(text: str) -> bool:
    """Whether an emphasis delimiter of ``text`` is next to a character the two parsers class
    differently (a non-ASCII symbol; U+0085, U+2028, U+2029; NUL, read as U+FFFD)."""
    if text.isascii() and "\0" not in text:
        return False
    return (any(_flank_differs(m.group(1)) for m in _AFTER_DELIMITER.finditer(text))
            or any(_flank_differs(m.group(1)) for m in _BEFORE_DELIMITER.finditer(text)))


def _comment_with_dashes(text: str) -> bool:
    """Whether an HTML comment of ``text`` holds ``--`` or ends with ``--->`` (linear: comments do
    not nest, and without a closing ``-->`` none follows)."""
    start = text.find("<!--")
    while start >= 0:
        end = text.find("-->", start + 2)
        if end < 0:
            return False
        body = text[start + 4:end]
        if "--" in body or body.endswith("-"):
            return True
        start = text.find("<!--", end + 3)
    return False


def _flank_differs(char: str) -> bool:
    """Whether an emphasis delimiter next to ``char`` may flank differently for the two parsers."""
    return char in _FLANK_DIFFERS or unicodedata.category(char).startswith("S")


_PARSER: Any = None


def _parser() -> Any:
    global _PARSER
    if _PARSER is None:
        from markdown_it_pyrs import MarkdownIt

        _PARSER = MarkdownIt("commonmark")
    return _PARSER


def tree_tokens(text: str) -> list[TreeToken] | None:
    """The heading and inline tokens of markdown ``text`` (module docstring), or None when it is
    left to markdown-it-py: markdown-it-pyrs is not installed, :func:`pyrs_usable` is false, or
    the parse or its conversion failed."""
    if not pyrs_usable(text):
        return None
    try:
        parser = _parser()
    except ImportError:
        return None
    normalized = _NEWLINES.sub("\n", text).replace("\0", "\ufffd")
    try:
        return _Converter(normalized).tokens(parser.tree(normalized))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # noqa: BLE001 - a Rust panic is a BaseException; markdown-it-py parses it instead
        return None


class _Converter:
    """One page's tree to tokens; ``srcmap`` offsets are bytes of the UTF-8 text."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8", "surrogatepass")
        self._line_starts: list[int] | None = None
        self.out: list[TreeToken] = []

    def tokens(self, root: Node) -> list[TreeToken]:
        self._blocks(root.children, 0)
        return self.out

    def _line_of(self, offset: int) -> int:
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in re.finditer(b"\n", self.data))]
        return bisect.bisect_right(self._line_starts, offset) - 1

    def _blocks(self, nodes: Sequence[Node], level: int) -> None:
        run: list[Node] = []  # a tight list item's hidden paragraph: inline nodes among its blocks
        for node in nodes:
            name = node.name
            if name in _INLINE_NODES:
                run.append(node)
                continue
            if run:
                self._paragraph(run, level)
                run = []
            if name in ("heading", "lheading"):
                line0 = self._line_of(_span(node)[0])
                self.out.append(TreeToken("heading_open", level=level, map=[line0, line0 + 1],
                                          tag=f"h{node.meta['level']}"))
                self.out.append(TreeToken("inline", children=_flat(node.children, []), level=level + 1))
            elif name == "paragraph":
                self._paragraph(node.children, level)
            else:
                self._blocks(node.children, level + 1)
        if run:
            self._paragraph(run, level)

    def _paragraph(self, nodes: Sequence[Node], level: int) -> None:
        if not nodes:
            return
        start, end = _span(nodes[0])[0], _span(nodes[-1])[1]
        if _LINK_MARKS.search(self.data, start, end) is not None:
            self.out.append(TreeToken("inline", children=_flat(nodes, []), level=level + 1))


def _span(node: Node) -> tuple[int, int]:
    """``node``'s byte offsets in the text (ValueError without them: markdown-it-py parses the page)."""
    if node.srcmap is None:
        raise ValueError(f"no source offsets for {node.name!r}")
    return node.srcmap


def _flat(nodes: Sequence[Node], out: list[TreeToken]) -> list[TreeToken]:
    """``nodes`` (inline) as markdown-it-py's flat children (adjacent texts are not joined: readers
    join them)."""
    for node in nodes:
        name = node.name
        meta = node.meta
        if name == "text" or name == "text_special":
            out.append(TreeToken("text", meta.get("content", "")))
        elif name == "code_inline":
            out.append(TreeToken("code_inline", "".join(c.meta.get("content", "") for c in node.children)))
        elif name == "html_inline":
            out.append(TreeToken("html_inline", meta.get("content", "")))
        elif name == "softbreak" or name == "hardbreak":
            out.append(TreeToken(name))
        elif name == "image":
            alt = _flat(node.children, [])
            out.append(TreeToken("image", "".join(t.content for t in alt if t.type == "text"), children=alt))
        elif name in _EMPHASIS:
            opening, closing = _EMPHASIS[name]
            markup = "~~" if name == "s" else meta.get("marker", "*") * (2 if name == "strong" else 1)
            out.append(TreeToken(opening, markup=markup))
            _flat(node.children, out)
            out.append(TreeToken(closing, markup=markup))
        elif name == "link" or name == "autolink":
            info = "auto" if name == "autolink" else ""
            url = meta.get("url", "")
            decoded = unquote(url)
            if decoded != decoded.strip():  # markdown-it-py strips a URL (mdurl.parse), the Rust parser does not
                raise ValueError(f"URL with whitespace at an end: {url!r}")
            out.append(TreeToken("link_open", attrs={"href": url}, info=info))
            _flat(node.children, out)
            out.append(TreeToken("link_close", info=info))
        else:
            raise ValueError(f"unexpected inline node {name!r}")  # markdown-it-py parses the page instead
    return out
