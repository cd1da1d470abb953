"""Front matter read with limits: YAML (``---``) and TOML (``+++``) metadata at the top of a page.

A YAML alias bomb ("billion laughs": nine anchors, each a list of nine aliases to the one before)
is a few hundred bytes that stand for 9^9 values: PyYAML builds it as a small graph of shared
objects, but anything that walks it as a tree (turning it into JSON for the catalog) takes
gigabytes and hours. Front matter is therefore parsed as Elasticsearch and YAML libraries with
"safe" presets do, under limits that no real page comes near (the Hugo docs: 180 characters, no
alias, depth 3 on average):

- at most :data:`FRONT_MATTER_MAX_CHARS` characters (else it is not parsed);
- at most :data:`FRONT_MATTER_MAX_ALIASES` aliases (``*name``);
- at most :data:`FRONT_MATTER_MAX_DEPTH` levels of nested collections, aliases expanded;
- at most :data:`FRONT_MATTER_MAX_NODES` values (scalars and collections), aliases expanded;
- no recursive alias (a collection that holds itself).

Going over a limit raises :class:`FrontMatterLimit`; the page is then indexed without its front
matter and the reason is reported as a problem (see :func:`sleuth.ingest.parsers.parse_markdown`).
The YAML is scanned by libyaml (C) when present and composed by PyYAML's Python composer, which
counts as it goes: about 0.1 ms for a typical page.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

import yaml
from frontmatter.default_handlers import BaseHandler, YAMLHandler
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, SequenceNode
from yaml.resolver import Resolver

FRONT_MATTER_MAX_CHARS = 64 * 1024
"""Front matter longer than this many characters is not parsed (the page is indexed without it)."""
FRONT_MATTER_MAX_ALIASES = 100
"""At most this many YAML aliases (``*name``) in one front matter."""
FRONT_MATTER_MAX_DEPTH = 32
"""At most this many levels of nested collections, aliases expanded."""
FRONT_MATTER_MAX_NODES = 10_000
"""At most this many values (scalars and collections) in one front matter, aliases expanded."""


class FrontMatterLimit(ValueError):
    """Front matter over one of the limits of this module; the message says which."""


class _CountingComposer(Composer):
    """PyYAML's composer, counting aliases and nesting depth as it builds the node graph."""

    def __init__(self) -> None:
        super().__init__()
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(AliasEvent):  # pyright: ignore[reportAttributeAccessIssue] -- the Parser mixin's
            self._aliases += 1
            if self._aliases > FRONT_MATTER_MAX_ALIASES:
                raise FrontMatterLimit(f"more than {FRONT_MATTER_MAX_ALIASES} aliases")
        self._depth += 1
        if self._depth > FRONT_MATTER_MAX_DEPTH:
            raise FrontMatterLimit(f"nested deeper than {FRONT_MATTER_MAX_DEPTH} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        expanded_size(node)
        return self.construct_document(node)  # type: ignore[attr-defined]


def expanded_size(root: Node) -> int:
    """How many values the YAML node graph ``root`` stands for with every alias expanded.

    Linear in the number of distinct nodes (shared nodes are counted once and remembered), so it
    is cheap even for a graph that stands for billions of values.

    Raises:
        FrontMatterLimit: more than ``FRONT_MATTER_MAX_NODES`` values, deeper than
            ``FRONT_MATTER_MAX_DEPTH``, or a recursive alias.
    """
    known: dict[int, tuple[int, int]] = {}  # id(node) -> (values, height)
    open_ids: set[int] = set()

    def visit(node: Node, depth: int) -> tuple[int, int]:
        key = id(node)
        if key in known:
            size, height = known[key]
        else:
            if key in open_ids:
                raise FrontMatterLimit("a recursive alias (a collection that holds itself)")
            if depth > FRONT_MATTER_MAX_DEPTH:
                raise FrontMatterLimit(f"nested deeper than {FRONT_MATTER_MAX_DEPTH} levels")
            open_ids.add(key)
            if isinstance(node, SequenceNode):
                children = list(node.value)
            elif isinstance(node, MappingNode):
                children = [n for pair in node.value for n in pair]
            else:
                children = []
            size, height = 1, 1
            for child in children:
                child_size, child_height = visit(child, depth + 1)
                size += child_size
                height = max(height, child_height + 1)
                if size > FRONT_MATTER_MAX_NODES:
                    raise FrontMatterLimit(f"more than {FRONT_MATTER_MAX_NODES} values with aliases expanded")
            open_ids.discard(key)
            known[key] = size, height
        if depth + height - 1 > FRONT_MATTER_MAX_DEPTH:
            raise FrontMatterLimit(f"nested deeper than {FRONT_MATTER_MAX_DEPTH} levels")
        return size, height

    return visit(root, 1)[0]


if getattr(yaml, "__with_libyaml__", False):
    from yaml._yaml import CParser as _Parser

    class BoundedSafeLoader(_CountingComposer, _Parser, SafeConstructor, Resolver):  # type: ignore[misc]
        """A YAML safe loader with the limits of this module (libyaml scans, Python composes)."""

        def __init__(self, stream: str | bytes) -> None:
            _Parser.__init__(self, stream)
            _CountingComposer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

else:  # pragma: no cover - PyYAML built without libyaml
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class BoundedSafeLoader(Reader, Scanner, Parser, _CountingComposer, SafeConstructor, Resolver):  # type: ignore[no-redef]
        """A YAML safe loader with the limits of this module (pure Python)."""

        def __init__(self, stream: str | bytes) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            _CountingComposer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)


def _check_length(fm: str) -> None:
    if len(fm) > FRONT_MATTER_MAX_CHARS:
        raise FrontMatterLimit(f"{len(fm)} characters, more than the {FRONT_MATTER_MAX_CHARS} character limit")


def load_yaml(fm: str) -> Any:
    """Parse YAML front matter ``fm`` (safe types only) under the limits of this module.

    Raises:
        FrontMatterLimit: over a limit. yaml.YAMLError: invalid YAML.
    """
    _check_length(fm)
    loader = BoundedSafeLoader(fm)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_toml(fm: str) -> Any:
    """Parse TOML front matter ``fm`` under the length, depth and value limits (TOML has no
    aliases; nesting deep enough to exhaust the parser's recursion counts as over the depth limit).

    Raises:
        FrontMatterLimit: over a limit. tomllib.TOMLDecodeError: invalid TOML.
    """
    _check_length(fm)
    try:
        data = tomllib.loads(fm)
    except RecursionError:
        raise FrontMatterLimit(f"nested deeper than {FRONT_MATTER_MAX_DEPTH} levels") from None
    _check_tree(data)
    return data


def _check_tree(data: dict[str, Any]) -> None:
    """Raise FrontMatterLimit when the parsed TOML ``data`` nests deeper than
    ``FRONT_MATTER_MAX_DEPTH`` or holds more than ``FRONT_MATTER_MAX_NODES`` values, as
    :func:`expanded_size` does for YAML. Iterative: dotted keys (``a.a.a....b = 1``) nest a table a
    level for two characters, and tomllib builds them without recursion, so the tree may be far
    deeper than any recursive walk of it (turning it into JSON) can go."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    values = 0
    while stack:
        value, depth = stack.pop()
        values += 1 + (len(value) if isinstance(value, dict) else 0)  # a table's keys count, as YAML's do
        if values > FRONT_MATTER_MAX_NODES:
            raise FrontMatterLimit(f"more than {FRONT_MATTER_MAX_NODES} values")
        if depth > FRONT_MATTER_MAX_DEPTH:
            raise FrontMatterLimit(f"nested deeper than {FRONT_MATTER_MAX_DEPTH} levels")
        if isinstance(value, dict | list):
            stack.extend((child, depth + 1) for child in (value.values() if isinstance(value, dict) else value))


class BoundedYAMLHandler(YAMLHandler):
    """python-frontmatter's ``---`` YAML handler, loading with :func:`load_yaml`."""

    def load(self, fm: str, **kwargs: object) -> Any:
        return load_yaml(fm)


class TomlHandler(BaseHandler):
    """python-frontmatter handler for ``+++`` TOML front matter, loading with :func:`load_toml`."""

    FM_BOUNDARY = re.compile(r"^\+{3,}\s*$", re.MULTILINE)
    START_DELIMITER = END_DELIMITER = "+++"

    def load(self, fm: str, **kwargs: object) -> Any:
        return load_toml(fm)


__all__ = [
    "FRONT_MATTER_MAX_ALIASES",
    "FRONT_MATTER_MAX_CHARS",
    "FRONT_MATTER_MAX_DEPTH",
    "FRONT_MATTER_MAX_NODES",
    "BoundedSafeLoader",
    "BoundedYAMLHandler",
    "FrontMatterLimit",
    "TomlHandler",
    "expanded_size",
    "load_toml",
    "load_yaml",
]
