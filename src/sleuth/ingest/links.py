"""Links between documents: markdown links, ``[[wikilinks]]``, front-matter relations and declared
entities, and resolving a link target to an indexed file. Pure functions: no I/O.

The graph lane is built from these: a resolved link is an edge between two files; an unresolved one
(and a declared entity) is an edge to an entity node named by the target.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.token import Token

from sleuth.doc_types import Link
from sleuth.ingest.markdown_tree import TreeToken, tree_tokens

FRONT_MATTER_RELATIONS: tuple[str, ...] = (
    "related",
    "supersedes",
    "superseded_by",
    "depends_on",
    "blocks",
    "blocked_by",
    "implements",
    "references",
    "refs",
    "parent",
    "children",
    "see_also",
)
"""Front-matter keys whose values (a string or a list of strings) are links; the key is the
:attr:`Link.relation`. Keys are matched case-insensitively with ``-`` and spaces read as ``_``
(``Depends-On`` is ``depends_on``); ``refs`` and ``references`` are kept apart as written."""

ENTITY_KEYS: tuple[str, ...] = ("entities", "entity")
"""Front-matter keys that declare entities (see :func:`declared_entities`)."""

MARKDOWN_LINK_SUFFIXES: tuple[str, ...] = (".md", ".markdown", ".mdx")
"""Extensions tried when a link target omits one (``[[notes/setup]]`` finds ``notes/setup.md``)."""

FOLDER_INDEX_NAMES: tuple[str, ...] = ("README.md", "index.md", "_index.md")
"""Files a link to a folder (``docs/`` or ``docs``) resolves to, in this order."""

# A URL scheme (two or more characters, so a Windows drive letter "C:" is a path).
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
# [[Target]], [[Target|label]], [[Target#Heading]], [[Target#Heading|label]], ![[Embed]]
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n|#]*)(?:#[^\[\]\n|]*)?(?:\|([^\[\]\n]*))?\]\]")
# Tokens that end a run of plain text: a wikilink never spans them.
_TEXT_BREAKS = frozenset({"code_inline", "link_open", "link_close", "image", "html_inline"})
# A TOML "key = value" line: after a line that is only "[[name]]", that line is a TOML array-of-tables
# header (config examples outside code fences, e.g. inside Hugo shortcodes), not a wikilink.
_TOML_ASSIGNMENT = re.compile(r"[ \t]*[\w.\"'-]+[ \t]*=")
# A numbered file (decision records: 0005-use-x.md, ADR-0005-x.md) and a record number as a target.
_NUMBERED_FILE = re.compile(r"(?:adr[-_ ]?)?0*(\d{1,5})[-_ .]", re.IGNORECASE)
_RECORD_NUMBER = re.compile(r"(?:adr|decision)[-_ #]*0*(\d{1,5})", re.IGNORECASE)
# Template expressions ({{ .Site.BaseURL }}, {% url %}) are not paths.
_TEMPLATE_MARKS = ("{{", "{%")


def _markdown_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark")
    # markdown-it refuses file: (and javascript:) URLs; this parser renders nothing, and file: links
    # are local links, so accept every URL and filter schemes in _local_target.
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    return md


_MD = _markdown_parser()


def markdown_tokens(text: str) -> Sequence[Token | TreeToken]:
    """markdown-it (CommonMark) tokens of ``text``, as :func:`extract_links` and
    ``sleuth.ingest.parsers._headings`` read them; parse once and pass them to both when the caller
    needs the tokens too (``sleuth.ingest.parsers`` does). markdown-it-pyrs gives them in a fraction
    of the time when it may (:func:`sleuth.ingest.markdown_tree.tree_tokens`: the headings and the
    inline tokens that can hold a link); else markdown-it-py (:func:`markdown_it_tokens`)."""
    found = tree_tokens(text)
    return found if found is not None else markdown_it_tokens(text)


def markdown_it_tokens(text: str) -> list[Token]:
    """markdown-it-py's whole token stream of ``text`` (the definition :func:`markdown_tokens` follows)."""
    return _MD.parse(text)


def _normalize_key(key: str) -> str:
    return re.sub(r"[\s-]+", "_", key.strip().lower())


def _strip_fragment(target: str) -> str:
    """``target`` without ``#anchor`` and ``?query``, and surrounding whitespace."""
    for mark in ("#", "?"):
        cut = target.find(mark)
        if cut >= 0:
            target = target[:cut]
    return target.strip()


def _local_target(href: str) -> str | None:
    """The percent-decoded local path of a markdown link's href, or None for a URL with a scheme
    other than ``file:`` (http, https, mailto, ...), a protocol-relative ``//host`` URL, or a link
    to an anchor of the same page."""
    href = href.strip()
    if href.startswith("//"):
        return None
    match = _SCHEME.match(href)
    if match is not None:
        if match.group(1).lower() != "file":
            return None
        href = href[match.end() :]
        if href.startswith("//"):  # file://host/path: drop the (usually empty) host
            slash = href.find("/", 2)
            href = href[slash:] if slash >= 0 else ""
    target = unquote(_strip_fragment(href))
    if any(mark in target for mark in _TEMPLATE_MARKS):
        return None
    return target or None


def _is_toml_table_header(text: str, start: int, end: int) -> bool:
    """True when ``text[start:end]`` fills its line and the next line is a TOML ``key = value``."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    if line_end < 0 or text[line_start:start].strip() or text[end:line_end].strip():
        return False
    return _TOML_ASSIGNMENT.match(text, line_end + 1) is not None


def _wikilinks(text: str) -> Iterator[Link]:
    for match in _WIKILINK.finditer(text):
        target = match.group(1).strip()
        if not target:  # [[#Heading]] points into the same page
            continue
        if _is_toml_table_header(text, match.start(), match.end()):
            continue
        if any(mark in target for mark in _TEMPLATE_MARKS):
            continue
        yield Link(target, "wikilink", (match.group(2) or "").strip())


def _inline_links(children: Sequence[Token | TreeToken]) -> Iterator[Link]:
    """Markdown links and wikilinks of one inline token's children, in order."""
    run: list[str] = []  # plain text since the last break, with emphasis markers put back
    label: list[str] | None = None
    pending: str | None = None  # target of the markdown link being read
    for child in children:
        if child.type in _TEXT_BREAKS:
            yield from _wikilinks("".join(run))
            run = []
        if child.type == "link_open":
            pending = _local_target(str(child.attrs.get("href", "")))
            label = [] if child.info != "auto" else None
        elif child.type == "link_close":
            if pending is not None:
                yield Link(pending, "link", " ".join("".join(label or []).split()))
            pending, label = None, None
        elif child.type in ("text", "code_inline"):
            if child.type == "text":
                run.append(child.content)
            if label is not None:
                label.append(child.content)
        elif child.type in ("em_open", "em_close", "strong_open", "strong_close", "s_open", "s_close"):
            run.append(child.markup)
        elif child.type in ("softbreak", "hardbreak"):
            run.append("\n")
            if label is not None:
                label.append(" ")
    yield from _wikilinks("".join(run))


def _front_matter_links(front_matter: Mapping[str, object]) -> Iterator[Link]:
    wanted = set(FRONT_MATTER_RELATIONS)
    for key, value in front_matter.items():
        relation = _normalize_key(str(key))
        if relation not in wanted:
            continue
        values: Iterable[object] = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if not isinstance(item, str):
                continue
            match = _WIKILINK.fullmatch(item.strip())
            if match is not None:  # Obsidian style: related: "[[Other note]]"
                target, label = match.group(1).strip(), (match.group(2) or "").strip()
            else:
                local = _local_target(item)
                target, label = (local or ""), ""
            if target:
                yield Link(target, relation, label)


def extract_links(
    text: str, front_matter: Mapping[str, object], tokens: Sequence[Token | TreeToken] | None = None
) -> list[Link]:
    """The outgoing links of a markdown document, deduplicated, in document order.

    ``text`` is the markdown body (front matter already split off, as ``parse_markdown`` does);
    ``front_matter`` the parsed front matter (``{}`` when none). Found, in this order:

    - front-matter relations (:data:`FRONT_MATTER_RELATIONS`, in key order): each string value, or
      each string of a list value, is one link with ``relation`` = the normalised key. A value
      written as a wikilink (``"[[Other note|label]]"``) gives its target and label; other values
      are read like link targets (anchor and query removed, percent-decoded). Non-string values are
      ignored; a string is never split on commas.
    - markdown links ``[label](target)``, reference links and autolinks (``<file:///...>``) whose
      target is a local path: relation ``"link"``, label = the link text with whitespace collapsed
      (``""`` for autolinks). URLs with another scheme (``http:``, ``https:``, ``mailto:``, ...),
      ``//host`` URLs and same-page ``#anchor`` links are left out. Images are not links.
    - wikilinks ``[[Target]]``, ``[[Target|label]]``, ``[[Target#Heading]]`` and embeds
      ``![[Target]]``: relation ``"wikilink"``, target ``"Target"`` (heading dropped), label the alias.
      A ``[[name]]`` alone on its line followed by a ``key = value`` line is a TOML table header
      in a config example, not a wikilink.

    Targets have ``#anchor`` and ``?query`` removed and are percent-decoded (``my%20note.md`` is
    ``my note.md``); targets containing template syntax (``{{``, ``{%``) are left out. Links inside
    fenced or indented code blocks, inline code spans and raw HTML are ignored. Duplicates (same
    ``target`` and ``relation``) keep their first occurrence.

    ``tokens``: :func:`markdown_tokens` of ``text`` when the caller already has them (saves a parse).
    """
    found: list[Link] = list(_front_matter_links(front_matter))
    for token in tokens if tokens is not None else markdown_tokens(text):
        if token.type == "inline" and token.children:
            found.extend(_inline_links(token.children))
    unique: dict[tuple[str, str], Link] = {}
    for link in found:
        unique.setdefault((link.target, link.relation), link)
    return list(unique.values())


def declared_entities(front_matter: Mapping[str, object]) -> list[str]:
    """Entities a document's front matter declares under ``entities:`` or ``entity:`` (in that order).

    A value is a string (one entity, never split on commas) or a list of strings; other values are
    ignored. Names are stripped of surrounding whitespace, empty ones dropped, and deduplicated
    case-insensitively keeping the first spelling (``["SQLite", "sqlite"]`` gives ``["SQLite"]``).

    ``tags:`` are deliberately not entities: tags are labels shared by many documents ("draft",
    "todo"), already searchable as the document's tags, and as graph nodes they would become hubs
    that connect unrelated documents.
    """
    names: dict[str, str] = {}
    for key in ENTITY_KEYS:
        value = front_matter.get(key)
        values: Iterable[object] = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if isinstance(item, str) and item.strip():
                name = " ".join(item.split())
                names.setdefault(name.casefold(), name)
    return list(names.values())


# --------------------------------------------------------------------------- resolution


def _stem(rel_path: str) -> str:
    name = posixpath.basename(rel_path)
    for suffix in MARKDOWN_LINK_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _fold(value: str) -> str:
    return " ".join(value.split()).casefold()


class LinkResolver:
    """Resolves link targets to known paths; builds its lookup tables once (O(n) for n paths), then
    answers each :meth:`resolve` in O(1) plus ties. Use one for a whole index run.

    ``known_paths``: rel_paths of the indexed documents (forward slashes, relative to one root;
    archive members as ``bundle.zip/inner/path.md``). ``titles``: rel_path -> document title.
    """

    def __init__(self, known_paths: Collection[str], titles: Mapping[str, str]) -> None:
        self._paths = frozenset(known_paths)
        self._by_folded_path: dict[str, list[str]] = {}
        self._by_stem: dict[str, list[str]] = {}
        self._by_title: dict[str, list[str]] = {}
        for path in sorted(self._paths):
            self._by_folded_path.setdefault(path.casefold(), []).append(path)
            for name in {_fold(_stem(path)), _fold(posixpath.basename(path))}:
                self._by_stem.setdefault(name, []).append(path)
        for path, title in sorted(titles.items()):
            if path in self._paths and title.strip():
                self._by_title.setdefault(_fold(title), []).append(path)
        self._by_number: dict[int, list[str]] = {}
        for path in sorted(self._paths):
            numbered = _NUMBERED_FILE.match(posixpath.basename(path))
            if numbered is not None:
                self._by_number.setdefault(int(numbered.group(1)), []).append(path)

    def _lookup(self, candidate: str) -> str | None:
        if candidate in self._paths:
            return candidate
        matches = self._by_folded_path.get(candidate.casefold(), [])
        return matches[0] if len(matches) == 1 else None

    def _as_path(self, path: str) -> str | None:
        """``path`` (already normalised) as written, with a markdown extension, or as a folder."""
        for candidate in (path, *(path + s for s in MARKDOWN_LINK_SUFFIXES)):
            found = self._lookup(candidate)
            if found is not None:
                return found
        for name in FOLDER_INDEX_NAMES:
            found = self._lookup(posixpath.join(path, name) if path else name)
            if found is not None:
                return found
        return None

    @staticmethod
    def _closest(matches: list[str], from_dir: str) -> str:
        """Among several matches: the one in the linking file's folder, else the shortest path, else
        the alphabetically first."""
        for path in matches:
            if posixpath.dirname(path) == from_dir:
                return path
        return min(matches, key=lambda p: (p.count("/"), len(p), p))

    def resolve(self, target: str, from_rel_path: str) -> str | None:
        """The known rel_path ``target`` (a :attr:`Link.target`) points to from ``from_rel_path``,
        or None. See :func:`resolve_target` for the rules."""
        from_dir = posixpath.dirname(from_rel_path)
        variants = [target.strip().replace("\\", "/")]
        decoded = unquote(variants[0])
        if decoded != variants[0]:
            variants.append(decoded)
        for raw in variants:
            if not raw:
                continue
            rooted = raw.startswith("/")
            body = raw.lstrip("/")
            if not rooted:
                relative = posixpath.normpath(posixpath.join(from_dir, body))
                if not relative.startswith("../") and relative != "..":
                    found = self._as_path("" if relative == "." else relative)
                    if found is not None:
                        return found
            if body:
                found = self._as_path(posixpath.normpath(body))
                if found is not None:
                    return found
        for raw in variants:
            if "/" in raw.strip("/"):
                continue  # a path that names a folder is not matched by name alone
            name = _fold(raw.strip("/"))
            for table in (self._by_stem, self._by_title):
                matches = table.get(name)
                if matches:
                    return self._closest(matches, from_dir)
        number = _RECORD_NUMBER.fullmatch(target.strip())
        if number is not None:
            matches = self._by_number.get(int(number.group(1)))
            if matches:
                return self._closest(matches, from_dir)
        return None


def resolve_target(
    target: str, from_rel_path: str, known_paths: Collection[str], titles: Mapping[str, str]
) -> str | None:
    """Resolve a link target to one of ``known_paths``, or None when nothing matches (the caller then
    treats the target as an entity).

    Tried in order, first hit wins (each with the target as given, then percent-decoded):

    1. a path relative to the linking file's folder (``./``, ``../`` and ``\\`` handled; a path
       climbing above the root is not relative), then the same path relative to the root (a leading
       ``/`` means root-relative only; wikilinks like ``[[notes/setup]]`` are root-relative); each
       exactly, then with a markdown extension added (:data:`MARKDOWN_LINK_SUFFIXES`), then as a
       folder's :data:`FOLDER_INDEX_NAMES`. Exact case first; a case-insensitive match counts only
       when it is unique.
    2. for a bare name without ``/`` (wikilinks, ``[[Design Doc]]``): the file name or the file stem
       (markdown extension removed), case-insensitively and whitespace-collapsed;
    3. then a document title (``titles``: rel_path -> title), likewise;
    4. then a decision record's number (``ADR-0005``, ``ADR 5``, ``decision 5``, as
       :mod:`sleuth.ingest.decisions` writes supersession targets): a file numbered so
       (``0005-use-x.md``, ``adr-5-x.md``).

    Several name or title matches: the one in the linking file's folder, else the shortest path,
    else the alphabetically first. A link may resolve to ``from_rel_path`` itself. Builds a
    :class:`LinkResolver` on every call (O(len(known_paths))); resolve many links with one resolver.
    """
    return LinkResolver(known_paths, titles).resolve(target, from_rel_path)


__all__ = [
    "ENTITY_KEYS",
    "FOLDER_INDEX_NAMES",
    "FRONT_MATTER_RELATIONS",
    "MARKDOWN_LINK_SUFFIXES",
    "Link",
    "LinkResolver",
    "declared_entities",
    "extract_links",
    "markdown_it_tokens",
    "markdown_tokens",
    "resolve_target",
]
