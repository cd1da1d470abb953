"""Finding files under roots: .gitignore rules (nested, as git applies them), default excludes,
size limit, binary detection. Yields candidates and reasons for files that cannot be indexed.

Symlinks are never followed (see :mod:`sleuth.ingest.confine`): nothing outside a project's roots
is read, and each real file is indexed once. Paths come out in index form
(:mod:`sleuth.ingest.names`): a name that is not valid UTF-8 is kept, losslessly escaped.

A ``.gitignore`` line that is not a valid pattern (``\\``, ``[z-a]``, ``[[:foo:]]``) is left out and
its other lines apply, as git does; the walk's caller hears of it (``on_ignore_file``)."""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import pathspec

from sleuth.doc_types import SkippedFile, SourceFile
from sleuth.ingest.confine import ConfinementError, Roots, link_reason, open_file, read_file
from sleuth.ingest.decode import SNIFF_BYTES, looks_binary
from sleuth.ingest.names import fs_name, index_name, printable
from sleuth.ingest.pdf import PDF_MAX_BYTES
from sleuth.locate import is_index_folder
from sleuth.pathglob import GLOB_ERRORS, gitignore_spec, gitignore_specs, glob_error_reason, re2_readable

#: The skip reason of another sleuth index's folder under a root (:func:`walk_roots`).
OTHER_INDEX_REASON = "another sleuth index: not indexed here, and commands run in the folder holding it use that index"

IgnoreFileHook = Callable[[str, list[str]], None]
"""Told of each ``.gitignore`` a walk reads: its path relative to the root (index form,
``sub/.gitignore``) and the problems of the lines left out (:func:`sleuth.pathglob.gitignore_specs`;
empty when every line applies). A file may be told of more than once (:func:`walk_paths`)."""

DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git/", ".git", ".hg/", ".svn/", ".jj/",
    "node_modules/", "bower_components/",
    ".venv/", "venv/", "__pycache__/", "*.egg-info/", ".eggs/",
    ".tox/", ".nox/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/", ".ipynb_checkpoints/",
    ".sleuth/", "build/", "dist/", "target/", ".next/", ".nuxt/", ".svelte-kit/", ".turbo/",
    "coverage/", "htmlcov/", ".coverage", ".cache/", ".gradle/", ".terraform/",
    ".idea/", ".vscode/", ".DS_Store", "Thumbs.db",
)
"""Gitignore-style patterns never walked, on top of .gitignore files (``.git`` also as a file: the
``gitdir:`` pointer of every git worktree and submodule checkout). Directories holding a
``pyvenv.cfg`` (virtual environments under any name) are skipped too. Those of
``ANY_CASE_EXCLUDES`` match whatever the case of their letters; the others as written (as git's
own rules do on a case-sensitive file system)."""

ANY_CASE_EXCLUDES: frozenset[str] = frozenset({".git/", ".git", ".hg/", ".svn/", ".jj/", ".sleuth/", ".DS_Store",
                                               "Thumbs.db"})
"""The default excludes matched regardless of case (``.GIT/``, ``.Hg/``, ``THUMBS.DB``): version
control and index folders and the files the file managers of case-insensitive systems leave. On
macOS and Windows ``.GIT`` *is* the repository's ``.git``; git and Mercurial refuse to check out a
path with ``.git`` or ``.hg`` in any case on every system for that reason, so such a folder on a
case-sensitive one came from elsewhere. A project's own ``.gitignore`` keeps git's semantics
(case-sensitive, as with ``core.ignorecase`` false)."""


def _any_case(pattern: str) -> str:
    """``pattern`` with each letter a choice of both cases (``.git/`` -> ``.[gG][iI][tT]/``)."""
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in pattern)


def default_exclude_lines(extra_excludes: Sequence[str] = ()) -> list[str]:
    """The gitignore lines a walk applies before any ``.gitignore``: ``DEFAULT_EXCLUDES`` (those of
    ``ANY_CASE_EXCLUDES`` matching any case), then ``extra_excludes`` as given."""
    return [_any_case(p) if p in ANY_CASE_EXCLUDES else p for p in DEFAULT_EXCLUDES] + list(extra_excludes)


def excluded_folder_name(name: str) -> bool:
    """Whether a folder called ``name`` is never walked whatever its place (a default exclude
    ``name/`` without a wildcard; :data:`ANY_CASE_EXCLUDES` in any case)."""
    return name in _EXCLUDED_FOLDER_NAMES or name.lower() in _ANY_CASE_FOLDER_NAMES


_EXCLUDED_FOLDER_NAMES = frozenset(p[:-1] for p in DEFAULT_EXCLUDES if p.endswith("/") and "*" not in p)
_ANY_CASE_FOLDER_NAMES = frozenset(p[:-1].lower() for p in ANY_CASE_EXCLUDES if p.endswith("/"))

FILE_MAX_BYTES: int = 5 * 1024 * 1024
"""Files larger than this many bytes are skipped with a reason (PDFs: ``PDF_MAX_BYTES``)."""

GITIGNORE_MAX_BYTES: int = 1024 * 1024
"""A ``.gitignore`` larger than this many bytes is not read (as if there were none)."""

BINARY_EXTENSIONS: frozenset[str] = frozenset(
    """.png .jpg .jpeg .gif .bmp .tif .tiff .webp .ico .icns .psd .heic .avif
    .mp3 .mp4 .m4a .wav .ogg .flac .avi .mov .mkv .webm .zip .gz .tgz .bz2 .xz .zst .7z .rar .tar
    .jar .war .whl .egg .so .dylib .dll .exe .bin .o .a .lib .obj .class .pyc .pyo .pyd
    .woff .woff2 .ttf .otf .eot .sqlite .sqlite3 .db .parquet .feather .arrow .npy .npz .pkl .pickle
    .h5 .hdf5 .pt .ckpt .onnx .safetensors .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp
    .dmg .iso .deb .rpm .wasm""".split()
)
"""Extensions skipped without reading the file (reason ``"binary file type: .ext"``)."""

UNSUPPORTED_EXTENSIONS: dict[str, str] = {}
"""Document formats recognised but not indexed yet, extension -> format name (reason
``"unsupported format: NAME"``). Empty since PDFs are read (sleuth.ingest.pdf)."""

PDF_EXTENSION = ".pdf"
"""PDFs are binary: they are not sniffed for text, and their size limit is ``PDF_MAX_BYTES``."""


def tool_dotfile(name: str) -> bool:
    """Whether a file called ``name`` is a tool's dotfile rather than a document: its name starts
    with a dot and is in no format sleuth reads nor a document format it names when skipping
    (``.gitignore``, ``.gitattributes``, ``.editorconfig``, ``.npmrc``, ``.python-version``,
    ``.env``). A walk leaves such files out silently, as it does ignored ones, instead of
    reporting each as a skipped "unsupported format": a user does not expect their version
    control's configuration listed among skipped documents (ripgrep hides dotfiles by default). A
    dotfile in a format sleuth reads (``.notes.md``, ``.prettierrc.json``, ``.env.example``) is
    indexed as before, and one with a binary or document extension (``.draft.docx``) or an
    archive's is still walked and reported; a root named on the command line is always reported."""
    if not name.startswith("."):
        return False
    from sleuth.ingest.parsers import kind_for_path  # a dotfile's name is rare: parsers stay unloaded

    lowered = name.lower()
    suffix = os.path.splitext(lowered)[1]
    return (kind_for_path(name) is None and suffix not in BINARY_EXTENSIONS and suffix not in UNSUPPORTED_EXTENSIONS
            and not lowered.endswith(ARCHIVE_SUFFIXES))


def max_bytes_for(name: str) -> int:
    """Size limit in bytes of a file (or archive member) named ``name``: PDFs have their own."""
    return PDF_MAX_BYTES if name.lower().endswith(PDF_EXTENSION) else FILE_MAX_BYTES


class _Defaults:
    """The default excludes (and a walk's extra ones), compiled once: all of them for folders, and
    for files only those that can match a file the walk reaches.

    A pattern ending in ``/`` matches a folder and everything below it, so it matches a file only
    when it matches one of the file's folders; the walk tests every folder on the way down
    (:meth:`_Ignores.excluded`, the defaults first) and never enters one they exclude. So, when no
    pattern is a negation (``!``, which could bring a file back), such patterns cannot change the
    answer for a file that is reached, and a file is tested against the others only (3 of the 37
    defaults instead of all: 37 regular expressions per file were a tenth of a folder index's CPU).
    """

    def __init__(self, lines: Sequence[str]) -> None:
        lines = [re2_readable(line) for line in lines]  # an --exclude given with undecodable bytes
        try:
            self.spec = gitignore_spec(lines)
        except GLOB_ERRORS:  # which line: each alone (only now: a walk compiles its defaults once)
            for line in lines:
                try:
                    gitignore_spec([line])
                except GLOB_ERRORS as exc:
                    raise ValueError(f"exclude {line!r} is not a valid pattern: {glob_error_reason(line, exc)}"
                                     ) from None
            raise
        if any(line.lstrip().startswith("!") for line in lines):
            self.files = self.spec
        else:
            self.files = gitignore_spec([line for line in lines if not line.rstrip().endswith("/")])

    def match(self, probe: str, is_dir: bool) -> bool:
        return (self.spec if is_dir else self.files).match_file(probe)


class _Ignores:
    """The ignore rules in force in one directory: defaults plus the chain of .gitignore files
    (``on_ignore_file``: told of each .gitignore read, :data:`IgnoreFileHook`)."""

    def __init__(
        self, defaults: _Defaults, chain: tuple[tuple[str, pathspec.GitIgnoreSpec], ...],
        on_ignore_file: IgnoreFileHook | None = None,
    ) -> None:
        self.defaults = defaults
        self.chain = chain  # (directory rel path with trailing "/" or "", spec), outermost first
        self.on_ignore_file = on_ignore_file

    def excluded(self, rel: str, is_dir: bool) -> bool:
        probe = re2_readable(rel + "/" if is_dir else rel)
        if self.defaults.match(probe, is_dir):
            return True
        for base, spec in reversed(self.chain):  # the deepest .gitignore with a matching rule decides
            result = spec.check_file(probe[len(base) :])
            if result.include is not None:
                return bool(result.include)
        return False

    def entering(self, rel_dir: str, directory: Path) -> _Ignores:
        # A symlinked .gitignore is not followed (git >= 2.32 does not follow it either).
        try:
            data = read_file(directory / ".gitignore", GITIGNORE_MAX_BYTES)
        except OSError:
            return self
        lines = data.decode("utf-8", errors="replace").splitlines()
        base = rel_dir + "/" if rel_dir else ""
        specs, problems = gitignore_specs(lines)  # a line git would not read is left out, and told
        if self.on_ignore_file is not None:
            self.on_ignore_file(index_name(base + ".gitignore"), problems)
        # Several specs of one file (rules too many for one RE2 set) are tried last first, as
        # the files of the chain are: a path's last matching rule decides.
        return _Ignores(self.defaults, self.chain + tuple((base, spec) for spec in specs), self.on_ignore_file)


#: File name endings of archives, read member by member (sleuth.ingest.archive).
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar", ".zip")

Unchanged = Callable[[str, os.stat_result], bool]
"""``(rel_path in index form, the file's own lstat) -> True`` when the file is as the index last
read it (same modification time and size): the walk then yields it without reading a byte."""


class _Scope(NamedTuple):
    """What stays the same during one walk: the project's roots, outside which nothing is read
    (symlink targets are judged against them), and the caller's :data:`Unchanged` test (None: every
    candidate is sniffed), and the index being written (None: not told, and no other index is
    reported)."""

    confine: Roots
    unchanged: Unchanged | None = None
    own_index: Path | None = None


def _check_file(root: Path, path: Path, fs_rel: str, st: os.stat_result,
                unchanged: Unchanged | None = None) -> SourceFile | SkippedFile:
    """A regular file (``st``: its own ``lstat``), ``fs_rel`` as the file system names it. When
    ``unchanged`` says the file is as indexed, it is not opened: the binary sniff read the same
    bytes when it was indexed (the mtime-and-size limit of any such check: see ``walk_roots``)."""
    rel = index_name(fs_rel)
    suffix = os.path.splitext(rel)[1].lower()

    def candidate() -> SourceFile:
        return SourceFile(root=root, path=path, rel_path=rel, size_bytes=st.st_size, mtime_ns=st.st_mtime_ns,
                          identity=(st.st_dev, st.st_ino))

    if rel.lower().endswith(ARCHIVE_SUFFIXES):
        # Archives are read member by member by the indexer (sleuth.ingest.archive).
        return candidate()
    if suffix in UNSUPPORTED_EXTENSIONS:
        return SkippedFile(rel, f"unsupported format: {UNSUPPORTED_EXTENSIONS[suffix]}")
    if suffix in BINARY_EXTENSIONS:
        return SkippedFile(rel, f"binary file type: {suffix}")
    limit = max_bytes_for(rel)
    if st.st_size > limit:
        return SkippedFile(rel, f"too large: {st.st_size} bytes > {limit} byte limit")
    if suffix == PDF_EXTENSION:  # binary by nature; its text layer is read by sleuth.ingest.pdf
        return candidate()
    if unchanged is not None and unchanged(rel, st):  # a stat, not a read: as ``git status``
        return candidate()
    try:
        fd = open_file(path, check=False)  # a peek: the reader checks the file it opens
        try:
            sample = os.read(fd, SNIFF_BYTES)
        finally:
            os.close(fd)
    except ConfinementError as exc:
        return SkippedFile(rel, f"unreadable: {exc}")
    except OSError as exc:
        return SkippedFile(rel, printable(f"unreadable: {exc.strerror or exc}"))
    if looks_binary(sample):
        return SkippedFile(rel, "binary content")
    return candidate()


class _Folder(NamedTuple):
    """A folder to walk (``ignores``: the rules in force in its parent), which :func:`_entry`
    yields where a recursive walk would have entered it."""

    path: Path
    rel: str
    ignores: _Ignores


#: What the walk's steps yield: a file's outcome, or a folder to walk next.
_Step = SourceFile | SkippedFile | _Folder


def _depth_first(root: Path, first: Iterator[_Step], scope: _Scope) -> Iterator[SourceFile | SkippedFile]:
    """The files and skipped files of ``first`` and of every folder it yields, in the order of a
    recursive walk (each folder's entries by name, a folder's contents where the folder is), with a
    stack of the folders being listed instead of Python frames: a folder nested a thousand levels
    deep stopped ``sleuth index`` with a RecursionError (two generator frames a level)."""
    stack = [first]
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
        elif isinstance(step, _Folder):
            stack.append(_folder_entries(root, step, scope))
        else:
            yield step


def _walk_dir(
    root: Path, directory: Path, rel_dir: str, ignores: _Ignores, scope: _Scope
) -> Iterator[SourceFile | SkippedFile]:
    return _depth_first(root, _folder_entries(root, _Folder(directory, rel_dir, ignores), scope), scope)


def _folder_entries(root: Path, folder: _Folder, scope: _Scope) -> Iterator[_Step]:
    ignores = folder.ignores.entering(folder.rel, folder.path)
    try:
        entries = sorted(os.scandir(folder.path), key=lambda e: e.name)
    except OSError as exc:
        yield SkippedFile(index_name(folder.rel) or ".", printable(f"unreadable directory: {exc.strerror or exc}"))
        return
    for entry in entries:
        rel = f"{folder.rel}/{entry.name}" if folder.rel else entry.name
        yield from _entry(root, folder.path / entry.name, rel, ignores, scope, entry)


def _visit(root: Path, path: Path, rel: str, ignores: _Ignores, scope: _Scope,
           entry: os.DirEntry[str] | None = None) -> Iterator[SourceFile | SkippedFile]:
    """One directory entry ``rel`` (as the file system names it; ``ignores``: the rules in force in
    its folder): a folder is walked, a file checked, a symlink reported. ``entry`` (from
    ``os.scandir``) saves system calls; without it the path is looked at with ``lstat`` and a
    missing path yields nothing."""
    return _depth_first(root, _entry(root, path, rel, ignores, scope, entry), scope)


def _entry(root: Path, path: Path, rel: str, ignores: _Ignores, scope: _Scope,
           entry: os.DirEntry[str] | None = None) -> Iterator[_Step]:
    """:func:`_visit`'s one step: a folder is yielded as a :class:`_Folder`, not walked."""
    try:
        if entry is not None:
            is_link, is_dir = entry.is_symlink(), entry.is_dir(follow_symlinks=False)
        else:
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                return
            is_link, is_dir = stat.S_ISLNK(mode), stat.S_ISDIR(mode)
        if is_dir:
            if ignores.excluded(rel, is_dir=True) or _unwalked_folder(path):
                if scope.own_index is not None and path != scope.own_index and is_index_folder(path):
                    yield SkippedFile(index_name(rel), OTHER_INDEX_REASON)
                return
            yield _Folder(path, rel, ignores)
            return
        if ignores.excluded(rel, is_dir=False):
            return
        try:
            st = entry.stat(follow_symlinks=True) if entry is not None else os.stat(path)
        except FileNotFoundError:
            yield SkippedFile(index_name(rel), "broken symlink")
            return
    except OSError as exc:
        yield SkippedFile(index_name(rel), printable(f"unreadable: {exc.strerror or exc}"))
        return
    if stat.S_ISDIR(st.st_mode):
        if is_link and not ignores.excluded(rel, is_dir=True):
            yield SkippedFile(index_name(rel), "symlinked directory not followed")
        return
    if not stat.S_ISREG(st.st_mode):
        yield SkippedFile(index_name(rel), "not a regular file")
        return
    if is_link:  # never followed: outside the roots, or another file of them (indexed as itself)
        yield SkippedFile(index_name(rel), link_reason(path, scope.confine))
        return
    if path.name.startswith(".") and tool_dotfile(index_name(path.name)):
        return
    yield _check_file(root, path, rel, st, scope.unchanged)


def _walk(roots: list[Path], defaults: _Defaults, scope: _Scope,
          on_ignore_file: IgnoreFileHook | None = None) -> Iterator[SourceFile | SkippedFile]:
    for root in roots:
        if root.is_dir():
            yield from _walk_dir(root, root, "", _Ignores(defaults, (), on_ignore_file), scope)
        elif root.is_symlink():  # a root named through a symlink is read as what it names
            real = Path(os.path.realpath(root))
            yield _check_file(real.parent, real, real.name, real.stat(), scope.unchanged)
        else:
            yield _check_file(root.parent, root, root.name, root.lstat(), scope.unchanged)


def walk_roots(
    roots: Sequence[Path], extra_excludes: Sequence[str] = (), confine: Sequence[Path] | Roots | None = None,
    unchanged: Unchanged | None = None, on_ignore_file: IgnoreFileHook | None = None, own_index: Path | None = None,
) -> Iterator[SourceFile | SkippedFile]:
    """Find candidate files under each root, in a deterministic (name-sorted, depth-first) order.

    A root may be a directory (walked recursively) or a single file (yielded with ``root`` = its parent
    and ``rel_path`` = its name, without applying ignore rules). Paths matched by ``DEFAULT_EXCLUDES``
    (:func:`default_exclude_lines`: some in any case), ``extra_excludes`` (gitignore syntax, relative to
    each root) or any ``.gitignore`` (each applying to its own subtree, deeper files overriding
    shallower ones; a symlinked ``.gitignore`` is not read) are silently left out; excluded directories
    and symlinked directories are not descended into. Other files that cannot be indexed come out as
    :class:`SkippedFile` with a reason: a binary or unsupported extension, larger than
    ``FILE_MAX_BYTES`` (PDFs: ``PDF_MAX_BYTES``; PDFs are not sniffed for binary content), unreadable,
    binary content, a broken symlink, a symlinked directory, not a regular file, or a symlinked file
    (never followed: :func:`sleuth.ingest.confine.link_reason` says whether it points outside
    ``confine`` or to another file inside, indexed under its own path).

    ``confine``: every root of the project (default: ``roots``), inside which symlink targets are
    judged (a :class:`~sleuth.ingest.confine.Roots`: their real paths, already resolved).
    ``rel_path`` is in index form (:func:`sleuth.ingest.names.index_name`: names that are not
    valid UTF-8 are escaped); ``SourceFile.path`` is the real path ``root / name`` and
    ``SourceFile.identity`` the file's ``(st_dev, st_ino)``.

    ``unchanged`` (:data:`Unchanged`): a candidate it says is as indexed is yielded without being
    opened (no binary sniff), so an unchanged file costs its ``lstat`` only. Every other check above
    still applies to it (ignore rules, symlinks, type, size limit). Like git's index, this trusts
    modification time and size: a file rewritten with the same size and time (a text file turned
    binary included) is taken as indexed until one of them changes.

    A ``.gitignore`` line that is not a valid pattern is left out (its file's other lines apply);
    ``on_ignore_file`` is told of each ``.gitignore`` read, with such lines' problems
    (:data:`IgnoreFileHook`).

    Another sleuth index's folder under a root (:func:`sleuth.locate.is_index_folder`, whatever its
    name) is never walked; when ``own_index`` (the index being written) is given, each other one
    comes out as a :class:`SkippedFile` with :data:`OTHER_INDEX_REASON` (commands run below it
    use that index, not this one: a user should know it is there).

    Raises (at call time, before anything is yielded):
        FileNotFoundError: a root does not exist.
        NotADirectoryError: a root exists but is neither a directory nor a regular file.
        ValueError: one of ``extra_excludes`` is not a valid pattern.
    """
    checked: list[Path] = []
    for root in map(Path, roots):
        if not root.exists():
            raise FileNotFoundError(f"root does not exist: {root}")
        if not (root.is_dir() or root.is_file()):
            raise NotADirectoryError(f"root is neither a directory nor a regular file: {root}")
        checked.append(root)
    defaults = _defaults(extra_excludes)
    return _walk(checked, defaults, _Scope(_real_roots(checked if confine is None else confine), unchanged,
                                           own_index), on_ignore_file)


def _real_roots(confine: Sequence[Path] | Roots) -> Roots:
    """``confine`` as :class:`~sleuth.ingest.confine.Roots` (as given when it is one)."""
    return confine if isinstance(confine, Roots) else Roots(confine)


def _defaults(extra_excludes: Sequence[str]) -> _Defaults:
    """The compiled default excludes with ``extra_excludes`` (see :func:`default_exclude_lines`),
    compiled once for the same lines: a run with a root per file walks each alone (1,500 roots
    compiled them 1,500 times, a third of such a run).

    Raises:
        ValueError: one of ``extra_excludes`` is not a valid pattern (not remembered: raised again).
    """
    return _compiled_defaults(tuple(default_exclude_lines(extra_excludes)))


@functools.lru_cache(maxsize=8)
def _compiled_defaults(lines: tuple[str, ...]) -> _Defaults:
    """:class:`_Defaults` of ``lines``, remembered (read only once made: shared by walks and threads)."""
    return _Defaults(lines)


def _unwalked_folder(path: Path) -> bool:
    """A folder never walked whatever its name: a virtual environment (``pyvenv.cfg``) or an index
    folder of sleuth's (:func:`sleuth.locate.is_index_folder`: another index's users, keys and
    logs, under any name given with ``--index``)."""
    return (path / "pyvenv.cfg").is_file() or is_index_folder(path)


def normalize_rel_paths(rel_paths: Iterable[str]) -> list[str]:
    """Relative paths cleaned (``./a//b/`` → ``a/b``), sorted, without repeats and without paths
    inside another one of the list; ``""`` (the whole root) when any of them is the root itself."""
    cleaned = sorted({"/".join(part for part in rel.replace(os.sep, "/").split("/") if part not in ("", "."))
                      for rel in rel_paths})
    if "" in cleaned:
        return [""]
    out: list[str] = []
    for rel in cleaned:  # sorted: a folder comes right before the paths inside it
        if not out or not rel.startswith(out[-1] + "/"):
            out.append(rel)
    return out


def walk_paths(
    root: Path, rel_paths: Iterable[str], extra_excludes: Sequence[str] = (),
    confine: Sequence[Path] | Roots | None = None,
    unchanged: Unchanged | None = None, on_ignore_file: IgnoreFileHook | None = None, own_index: Path | None = None,
) -> Iterator[SourceFile | SkippedFile]:
    """What :func:`walk_roots` would yield for ``root`` (a folder), restricted to ``rel_paths``.

    Each path (relative to ``root``, ``/``-separated, in index form) may be a file or a folder
    (walked recursively); the same rules apply as in a walk of the whole root, including every
    ``.gitignore`` between ``root`` and the path. Paths that do not exist (any more) or that are
    ignored yield nothing; ``..`` is not allowed. Used to re-index only what changed.
    ``unchanged``: as for :func:`walk_roots`. ``on_ignore_file``: as for :func:`walk_roots` (told of
    every ``.gitignore`` read, those of the folders above each path included). ``own_index``: as
    for :func:`walk_roots`.

    Raises:
        ValueError: a path with ``..``, or one of ``extra_excludes`` is not a valid pattern.
    """
    defaults = _defaults(extra_excludes)
    scope = _Scope(_real_roots([root] if confine is None else confine), unchanged, own_index)
    top = _Ignores(defaults, (), on_ignore_file).entering("", root)
    for rel in normalize_rel_paths(rel_paths):
        if not rel:
            yield from _walk_dir(root, root, "", _Ignores(defaults, (), on_ignore_file), scope)
            continue
        parts = rel.split("/")
        if ".." in parts:
            raise ValueError(f"path outside the root: {rel!r}")
        parts = [fs_name(part) for part in parts]
        ignores, ok = top, True
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if (ignores.excluded(folder, is_dir=True) or os.path.islink(root / folder)
                    or _unwalked_folder(root / folder)):
                ok = False  # an ignored folder, or one reached through a symlink, is not walked
                break
            ignores = ignores.entering(folder, root / folder)
        if ok:
            fs_rel = "/".join(parts)
            yield from _visit(root, root / fs_rel, fs_rel, ignores, scope)


def reaches(root: Path, rel: str, extra_excludes: Sequence[str] = ()) -> bool:
    """Whether a walk of ``root`` (a folder) reaches ``rel``, a path under it as the file system
    names it (``/``-separated): no folder on the way, nor the path itself, is ignored (the default
    excludes, ``extra_excludes`` and every ``.gitignore`` between them, as :func:`walk_paths`
    reads them), a symlink or a virtualenv. ``""`` (the root itself) is reached. Reads only the
    ``.gitignore`` files on the way.

    Raises:
        ValueError: ``rel`` has a ``..`` part, or one of ``extra_excludes`` is not a valid pattern.
    """
    (clean,) = normalize_rel_paths([rel])
    if not clean:
        return True
    parts = clean.split("/")
    if ".." in parts:
        raise ValueError(f"path outside the root: {rel!r}")
    ignores = _Ignores(_defaults(extra_excludes), ()).entering("", root)
    for depth in range(1, len(parts) + 1):
        sub = "/".join(parts[:depth])
        path = root / sub
        if os.path.islink(path):
            return False
        is_dir = depth < len(parts) or path.is_dir()  # a part on the way is a folder
        if ignores.excluded(sub, is_dir=is_dir) or (is_dir and _unwalked_folder(path)):
            return False
        if depth < len(parts):
            ignores = ignores.entering(sub, path)
    return True
