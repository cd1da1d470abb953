"""``sleuth guides build``: the guides index from the front matter of markdown files (seed 001).

Only front matter is read (title, excerpt, tags); article bodies never enter the index.

- Sources: the ``.md`` / ``.mdx`` files directly in the content folder, in sorted name order, as
  the seed's builder lists them; with ``recursive``, every ``.md`` / ``.mdx`` file below it and
  inside the ``.tar.gz`` / ``.tgz`` / ``.tar`` / ``.zip`` archives there, in sorted path order.
- Slug: the file name without its extension (``fractional-cto-roi.md`` → ``fractional-cto-roi``).
  With ``recursive``, the path below the folder without its extension (``functions/os/Getenv``);
  an ``index`` / ``_index`` file stands for its folder (``functions/``); for an archive the path
  is taken below the folder that holds all of its markdown members (``content/en/`` for the Hugo
  docs bundle). url = base URL (with a ``/`` added when it lacks one) + slug.
- Front matter is YAML (``---``) or TOML (``+++``), read with python-frontmatter under the limits of
  :mod:`sleuth.ingest.front_matter`; files are read as the indexer reads them (never through a
  symlink, at most ``FILE_MAX_BYTES``; archives under the archive limits). ``title`` and
  the excerpt key (``excerpt``; e.g. ``description`` for Hugo) are required: a file missing
  either fails the build naming the file, unless ``skip_incomplete`` is set, in which case it is
  skipped with its reason. Tags (``tags`` or another key) are optional: a list or one string.
- Title, excerpt and tags go through :func:`sleuth.guides.entry.plain` (dashes replaced,
  whitespace collapsed).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import frontmatter
import yaml
from frontmatter.default_handlers import BaseHandler

from sleuth.errors import SleuthError
from sleuth.guides.entry import GuideEntry, plain
from sleuth.ingest.archive import ArchiveError, ArchiveMember, is_archive, iter_archive
from sleuth.ingest.confine import Roots, read_file
from sleuth.ingest.front_matter import BoundedYAMLHandler, TomlHandler
from sleuth.ingest.walk import FILE_MAX_BYTES
from sleuth.types import SkippedFile

#: File name endings that are guides (case-sensitive, as the seed's ``endsWith``).
GUIDE_SUFFIXES = (".md", ".mdx")
#: File stems that stand for their folder in recursive mode.
INDEX_STEMS = frozenset({"index", "_index"})
_URL_RE = re.compile(r"https?://[^\s/]+(/\S*)?")


class GuideBuildError(SleuthError):
    """A guide cannot be read or lacks a required field; the message names the file."""

    exit_code = 2


#: Front matter is read under the limits of sleuth.ingest.front_matter (an alias bomb is refused).
_HANDLERS: tuple[BaseHandler, ...] = (BoundedYAMLHandler(), TomlHandler())


@dataclass(frozen=True)
class GuideSource:
    """One markdown file: ``name`` for messages, ``slug`` for its url, ``data`` its bytes."""

    name: str
    slug: str
    data: bytes


@dataclass
class BuildReport:
    """What a build produced: the guides in order, and the files skipped with their reason."""

    guides: list[GuideEntry] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _utf16_order(name: str) -> bytes:
    # JavaScript's Array.prototype.sort() compares UTF-16 code units.
    return name.encode("utf-16-be", "surrogatepass")


def _strip_suffix(name: str) -> str:
    for suffix in GUIDE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _nested_slug(rel_path: str) -> str:
    stem = _strip_suffix(rel_path)
    folder, base = posixpath.split(stem)
    if base in INDEX_STEMS:
        return f"{folder}/" if folder else ""
    return stem


def _member_name(name: str) -> str:
    while name.startswith("./"):
        name = name[2:]
    return name


def _archive_sources(archive: Path, rel: str) -> Iterator[tuple[str, GuideSource]]:
    """``(sort key, source)`` for the markdown members of ``archive`` (``rel``: its path below the folder)."""
    try:
        members = [m for m in iter_archive(archive) if _member_name(m.path if isinstance(m, SkippedFile) else m.name)
                   .endswith(GUIDE_SUFFIXES)]
    except ArchiveError as exc:
        raise GuideBuildError(f"{archive}: {exc}") from None
    for m in members:
        if isinstance(m, SkippedFile):
            raise GuideBuildError(f"{archive}/{_member_name(m.path)}: {m.reason}")
    readable = [m for m in members if isinstance(m, ArchiveMember)]
    common = posixpath.commonpath([posixpath.dirname(_member_name(m.name)) for m in readable]) if readable else ""
    for m in readable:
        inner = _member_name(m.name)
        below = posixpath.relpath(inner, common) if common else inner
        yield f"{rel}/{inner}", GuideSource(f"{archive}/{inner}", _nested_slug(below), m.data)


def list_sources(content_dir: Path, recursive: bool = False) -> list[GuideSource]:
    """The guide files of ``content_dir`` in the order the index keeps them (see the module doc).

    Raises:
        GuideBuildError: the folder does not exist, or an archive or file cannot be read.
    """
    if not content_dir.is_dir():
        raise GuideBuildError(f"content folder not found: {content_dir}")
    found: list[tuple[str, GuideSource | Path]] = []
    try:
        if not recursive:
            for entry in os.scandir(content_dir):
                if entry.is_file() and entry.name.endswith(GUIDE_SUFFIXES):
                    found.append((entry.name, Path(entry.path)))
        else:
            for folder, dirs, files in os.walk(content_dir):
                dirs[:] = [d for d in dirs if not d.startswith(".") and d != "node_modules"]
                for name in files:
                    path = Path(folder, name)
                    rel = path.relative_to(content_dir).as_posix()
                    if name.endswith(GUIDE_SUFFIXES):
                        found.append((rel, path))
                    elif is_archive(name):
                        found.extend(_archive_sources(path, rel))
    except OSError as exc:
        raise GuideBuildError(f"cannot list {content_dir}: {exc.strerror or exc}") from None
    sources: list[GuideSource] = []
    roots = Roots([content_dir])
    for rel, item in sorted(found, key=lambda pair: _utf16_order(pair[0])):
        if isinstance(item, GuideSource):
            sources.append(item)
            continue
        try:  # never through a symlink, never beyond the size limit
            data = read_file(item, FILE_MAX_BYTES, roots=roots)
        except OSError as exc:
            raise GuideBuildError(f"{item}: cannot read: {exc.strerror or exc}") from None
        sources.append(GuideSource(str(item), _nested_slug(rel) if recursive else _strip_suffix(rel), data))
    return sources


def _text_value(value: Any, key: str) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list | tuple):
        raise ValueError(f"front matter {key!r} must be text, got a {'mapping' if isinstance(value, dict) else 'list'}")
    return plain(str(value))


def _tags_value(value: Any, key: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, dict):
        raise ValueError(f"front matter {key!r} must be a list of tags, got a mapping")
    items = value if isinstance(value, list | tuple) else [value]
    tags = [_text_value(v, key) for v in items]
    return [t for t in tags if t]


def read_front_matter(source: GuideSource) -> dict[str, Any]:
    """The front matter of ``source`` as a mapping (empty when there is none).

    Raises:
        ValueError: not UTF-8, malformed YAML/TOML, or front matter that is not a mapping.
    """
    try:
        text = source.data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    text = text.replace("\r\n", "\n")
    for handler in _HANDLERS:
        if handler.detect(text):
            try:
                metadata = frontmatter.loads(text, handler=handler).metadata
            except (yaml.YAMLError, tomllib.TOMLDecodeError, ValueError) as exc:
                first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise ValueError(f"malformed front matter ({first_line})") from None
            if not isinstance(metadata, dict):
                raise ValueError("front matter is not a mapping of keys to values")
            return metadata
    return {}


def guide_from_source(
    source: GuideSource, base_url: str, excerpt_key: str = "excerpt", tags_key: str = "tags", title_key: str = "title"
) -> GuideEntry:
    """One guide from one file's front matter.

    Raises:
        ValueError: unreadable front matter, or a missing/empty title or excerpt (the message
            names the missing key; the caller adds the file name).
    """
    meta = read_front_matter(source)
    title = _text_value(meta.get(title_key), title_key)
    excerpt = _text_value(meta.get(excerpt_key), excerpt_key)
    missing = [key for key, value in ((title_key, title), (excerpt_key, excerpt)) if not value]
    if missing:
        raise ValueError(f"front matter has no {' and no '.join(repr(k) for k in missing)}")
    return GuideEntry(title=title, excerpt=excerpt, tags=_tags_value(meta.get(tags_key), tags_key),
                      url=base_url + source.slug)


def normalize_base_url(base_url: str) -> str:
    """``base_url`` checked to be an absolute http(s) URL, with a trailing ``/``.

    Raises:
        GuideBuildError: anything else (``blog/``, ``ftp://x``, blanks).
    """
    base = base_url.strip()
    if not _URL_RE.fullmatch(base):
        raise GuideBuildError(f"--base-url must be an absolute http(s) URL such as https://example.com/blog/, "
                              f"got {base_url!r}")
    return base if base.endswith("/") else base + "/"


def build_guides(
    content_dir: Path,
    base_url: str,
    *,
    excerpt_key: str = "excerpt",
    tags_key: str = "tags",
    title_key: str = "title",
    recursive: bool = False,
    skip_incomplete: bool = False,
) -> BuildReport:
    """Read every guide of ``content_dir`` (see the module doc).

    Raises:
        GuideBuildError: a bad base URL, a missing folder or one without guide files, or a file
            that cannot be used, named in the message (``skip_incomplete`` turns per-file
            problems into skipped files instead).
    """
    base = normalize_base_url(base_url)
    sources = list_sources(content_dir, recursive)
    if not sources:
        where = "in or below" if recursive else "directly in"
        hint = "" if recursive else " (--recursive also reads subfolders and .tar.gz/.zip archives)"
        raise GuideBuildError(f"no .md or .mdx files {where} {content_dir}{hint}")
    report = BuildReport()
    for source in sources:
        try:
            report.guides.append(guide_from_source(source, base, excerpt_key, tags_key, title_key))
        except ValueError as exc:
            if not skip_incomplete:
                raise GuideBuildError(f"{source.name}: {exc}") from None
            report.skipped.append((source.name, str(exc)))
    return report


def write_guides(guides: list[GuideEntry], output: Path) -> None:
    """Write ``guides`` as ``guides.json``: a JSON array of ``{title, excerpt, tags, url}`` (UTF-8).

    Raises:
        OSError: the file cannot be written.
    """
    rows = [g.model_dump() for g in guides]
    output.write_text(json.dumps(rows, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
