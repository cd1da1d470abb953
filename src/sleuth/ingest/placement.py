"""Where the paths given to ``sleuth index`` go: which project, and which of them are new roots.

A project's roots never hold a file twice, and a path inside an indexed folder is not made a
second home for its files:

- a path under a folder root of the project that the root's walk reaches (not ignored, not behind
  a symlink) is *refreshed* within that root, as a file watcher refreshes a changed path
  (:meth:`sleuth.indexer.Indexer.update_paths`); it does not become a root;
- any other path becomes (or stays) a root. A root being indexed takes in the project's roots
  inside it that its walk reaches (:meth:`sleuth.indexer.Indexer._inner_roots`: their files are
  filed under it again, then their own copies go) and walks the others, which its ignore rules
  leave out, in the same run; until a take-in is done a root's walk leaves out the project's other
  roots inside it (:func:`nested_root_excludes`), so no file is filed twice in one project.

Without ``--project`` the first path chooses the project (:func:`choose_project`): the project
that has it as a root, else the one whose folder root holds it (the deepest), else the one
project whose roots lie inside it (a file indexed first, its folder later), else a new project
named after the folder (a file's folder, for a file; a folder named ``inbox`` makes the project
``inbox-folder``, not the Inbox of records filed without a project). A folder name already taken by a
project of other folders (``~/work/notes`` indexed, then ``~/home/notes``; theirs gone from disk too)
gives a name of its own, its parent's name first (``home-notes``, else ``notes-2``, ``notes-3``...), as
qmd refuses a second collection of one name: two unrelated folders are never searched as one project
unless ``--project`` says so, or both are given to one run (:func:`choose_project`). A path of
another project than the one chosen is refused (:func:`other_projects_paths`): filed under both,
its files would be searched twice.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from sleuth.errors import QueryError
from sleuth.ingest.names import is_valid_text
from sleuth.ingest.walk import reaches
from sleuth.pathglob import gitignore_literal
from sleuth.types import INBOX_PROJECT_ID, PROJECT_ID_MAX_BYTES, project_id_for


class Placement(NamedTuple):
    """The paths of one ``index`` call, placed in their project.

    Attributes:
        roots: the paths indexed as roots of the project (in the order given).
        refresh: ``{root: [rel, ...]}``: paths under an existing folder root of the project (as the
            catalog keeps it), relative to it, ``/``-separated, refreshed within it.
    """

    roots: list[Path]
    refresh: dict[str, list[str]]


def _holding_root(path: Path, roots: Sequence[str]) -> tuple[str, str] | None:
    """The deepest of ``roots`` that is a folder holding ``path`` (strictly) and whose walk
    reaches it, with ``path`` relative to it; None when there is none."""
    best: tuple[str, str] | None = None
    for root in roots:
        root_path = Path(root)
        if root_path == path or not path.is_relative_to(root_path) or not root_path.is_dir():
            continue
        rel = path.relative_to(root_path).as_posix()
        if not is_valid_text(rel):
            continue  # a name the index would escape: indexed as its own root, as before
        try:
            reached = reaches(root_path, rel)
        except (OSError, ValueError):
            reached = False
        if reached and (best is None or len(root) > len(best[0])):
            best = (root, rel)
    return best


def _owner(path: Path, ordered: Sequence[tuple[str, Sequence[str]]]) -> str | None:
    """The project that has ``path`` (resolved) as a root (the first of ``ordered``, ``(project_id,
    roots)`` by id), else the one whose folder root holds it, the deepest (its walk reaching it);
    None when no project has it."""
    for pid, roots in ordered:
        if str(path) in roots:
            return pid
    holding = [(len(hit[0]), pid) for pid, roots in ordered if (hit := _holding_root(path, roots)) is not None]
    return min(holding, key=lambda item: (-item[0], item[1]))[1] if holding else None


def choose_project(paths: Sequence[Path], roots_by_project: Mapping[str, Sequence[str]],
                   index_dir: Path | None = None, reserved: Collection[str] = ()) -> tuple[str, list[str]]:
    """The project the paths of one run go to when no project is named (see the module docstring).

    Args:
        paths: the paths given, resolved; the first one chooses.
        roots_by_project: ``{project_id: roots}`` of the index (roots resolved, as kept).
        index_dir: the index folder: roots inside it (the memory folders ``project_memory_record``
            writes) never make a folder around them join their project, nor take a name.
        reserved: project ids a new name must not take besides the projects' (the ids users still
            hold grants on, their project removed: a folder named anew is not theirs).
    Returns:
        ``(name, taken)``: a project id, or for a new project the name to make one from (the
        folder's name, ``"default"`` for the file system's root, ``"<name>-folder"`` when the name's
        id is the Inbox's, :data:`sleuth.types.INBOX_PROJECT_ID`); ``taken``: when the folder's own
        name belongs to a project of other folders (:func:`_other_folders`), those folders as
        ``"project_id: root"`` (the name returned is then another one, :func:`_free_name`), else empty.
    """
    first = paths[0]
    ordered = sorted(roots_by_project.items())
    if (owner := _owner(first, ordered)) is not None:
        return owner, []
    if first.is_dir():
        inside = [pid for pid, roots in ordered
                  if any(Path(r) != first and Path(r).is_relative_to(first)
                         and not (index_dir is not None and Path(r).is_relative_to(index_dir)) for r in roots)]
        if len(inside) == 1:
            return inside[0], []
    folder = first if first.is_dir() else first.parent
    name = folder.name or "default"
    try:
        inbox = project_id_for(name) == INBOX_PROJECT_ID
    except QueryError:  # nothing usable in the name: project_id_for says so to the caller
        return name, []
    # A folder named "inbox" is not the Inbox of records filed without a project, which a search of
    # every project leaves out.
    name = f"{name}-folder" if inbox else name
    pid = project_id_for(name)
    folders = [p if p.is_dir() else p.parent for p in paths]
    taken = [f"{pid}: {root}" for root in _other_folders(pid, folders, roots_by_project, index_dir)]
    return (_free_name(name, folder, roots_by_project, reserved), taken) if taken else (name, [])


def other_projects_paths(paths: Sequence[Path], pid: str,
                         roots_by_project: Mapping[str, Sequence[str]]) -> list[tuple[Path, str]]:
    """The ``paths`` (resolved) that another project than ``pid`` has as a root or holds in a folder
    root whose walk reaches them, and ``pid`` does not: ``[(path, that project's id)]``, the project
    being the one a run of that path alone files it under (:func:`choose_project`: a root of it,
    else the deepest root holding it). A run without ``--project`` refuses them: filed under ``pid``
    too, their files would be in two projects (a search of every project returns them twice)."""
    out: list[tuple[Path, str]] = []
    ordered = sorted(roots_by_project.items())
    own = roots_by_project.get(pid, [])
    for path in paths:
        if str(path) in own or _holding_root(path, own) is not None:
            continue
        if (owner := _owner(path, ordered)) is not None:
            out.append((path, owner))
    return out


def _other_folders(pid: str, folders: Sequence[Path], roots_by_project: Mapping[str, Sequence[str]],
                   index_dir: Path | None) -> list[str]:
    """The roots of project ``pid`` outside ``index_dir``, gone from disk or not, when none of them
    is related to one of ``folders`` (the folders of the paths given: a root holding one, or inside
    one); else none. A project with such roots keeps its name for its folders: a folder of the same
    name elsewhere gets another, even when theirs are gone (moved, or only away: a drive not
    mounted). A project with none (no root, only its memory folder, or roots of the paths given:
    ``sleuth index home/notes work/notes``, or a file its root's ignore rules leave out, given
    alone) lends its name to the paths, which join it."""
    roots = [r for r in roots_by_project.get(pid, [])
             if not (index_dir is not None and Path(r).is_relative_to(index_dir))]
    if any(folder.is_relative_to(r) or Path(r).is_relative_to(folder) for r in roots for folder in folders):
        return []
    return roots


def _free_name(name: str, folder: Path, roots_by_project: Mapping[str, Sequence[str]],
               reserved: Collection[str] = ()) -> str:
    """A name for a new project of ``folder`` whose id no project has and is not ``reserved``:
    ``<parent>-<name>`` (``home-notes``), else ``<name>-2``, ``<name>-3``...; each a valid new id (at
    most :data:`sleuth.types.PROJECT_ID_MAX_BYTES`, not the Inbox's)."""
    parent = folder.parent.name
    # The name's id, cut to leave room for "-<n>" (a name cut as typed could keep only punctuation).
    short = project_id_for(name).encode()[:PROJECT_ID_MAX_BYTES // 2].decode(errors="ignore")
    candidates = [f"{parent}-{name}"] if parent else []
    candidates += [f"{short}-{n}" for n in range(2, len(roots_by_project) + len(reserved) + 3)]
    for candidate in candidates:  # one number more than there are ids taken: one is free
        try:
            pid = project_id_for(candidate, PROJECT_ID_MAX_BYTES)
        except QueryError:  # too long, or nothing usable
            continue
        if pid not in roots_by_project and pid not in reserved and pid != INBOX_PROJECT_ID:
            return candidate
    raise QueryError(f"no free project name for {name!r}: pass --project NAME")  # not reached


def outermost(paths: Sequence[Path]) -> list[Path]:
    """Resolved ``paths`` without repeats and without those inside another one of them whose walk
    reaches them (they are walked with it). Each path kept stands where the first path it holds (or
    itself) was given: ``[notes/sub, docs, notes]`` gives ``[notes, docs]``, so the first path given
    still chooses the project. Only a path's ancestors among the paths given are looked at (linear
    in the number of paths, not quadratic: 1,500 paths took 37 s)."""
    unique = list(dict.fromkeys(paths))
    given = {str(p) for p in unique}

    def holder(path: Path) -> Path | None:
        ancestors = [str(a) for a in path.parents if str(a) in given]
        hit = _holding_root(path, ancestors) if ancestors else None
        return None if hit is None else Path(hit[0])

    out: dict[Path, None] = {}
    for path in unique:
        top = path
        while (up := holder(top)) is not None:  # each step a shorter path: it ends
            top = up
        out.setdefault(top, None)
    return list(out)


def place(paths: Sequence[Path], own_roots: Sequence[str]) -> Placement:
    """Split resolved ``paths`` (:func:`outermost` ones) into new (or existing) roots and paths
    refreshed within one of ``own_roots``, the project's roots as the catalog keeps them (see the
    module docstring)."""
    roots: list[Path] = []
    refresh: dict[str, list[str]] = {}
    for path in dict.fromkeys(paths):
        hit = None if str(path) in own_roots else _holding_root(path, own_roots)
        if hit is None:
            roots.append(path)
        else:
            refresh.setdefault(hit[0], []).append(hit[1])
    return Placement(roots, refresh)


def shared_roots(roots: Sequence[Path], roots_by_project: Mapping[str, Sequence[str]], project: str,
                 index_dir: Path | None = None) -> list[str]:
    """``"project: root"`` of every root of another project than ``project`` that holds one of
    ``roots`` (its walk reaching it), or lies inside one (reached by its walk): their files are
    in both projects. Roots inside ``index_dir`` (the memory folders) are left out."""
    out: list[str] = []
    for other, keys in sorted(roots_by_project.items()):
        if other == project:
            continue
        for key in keys:
            theirs = Path(key)
            if index_dir is not None and theirs.is_relative_to(index_dir):
                continue
            if any(theirs == root or _holding_root(root, [key]) is not None
                   or _holding_root(theirs, [str(root)]) is not None for root in roots):
                out.append(f"{other}: {key}")
    return out


def nested_root_excludes(root: Path, project_roots: Sequence[Path], index_dir: Path) -> list[str]:
    """Exclude lines (gitignore syntax, anchored at ``root``) for the project's other roots inside
    ``root``, so that a walk of ``root`` leaves their files to them; roots inside the index folder
    (the memory folder) are left out, the walk skips the index folder anyway."""
    lines: list[str] = []
    for other in project_roots:
        if other == root or not other.is_relative_to(root) or other.is_relative_to(index_dir):
            continue
        literal = gitignore_literal(other.relative_to(root).as_posix())
        lines.append(f"/{literal}/" if other.is_dir() else f"/{literal}")
    return lines


def overlapping_projects(roots_by_project: Mapping[str, Sequence[str]], projects: Collection[str],
                         index_dir: Path | None = None) -> list[str]:
    """``"a and b: root"`` for each pair of ``projects`` whose roots overlap, with one root where
    they do: a root of both, or a root of one inside a folder root of the other whose walk reaches
    it (the files there are in both projects, and a search of every project returns them twice).
    Roots inside ``index_dir`` (the memory folders) are left out. Each root's folders are looked up
    (linear in the roots); only the pairs so found read ``.gitignore`` files
    (:func:`sleuth.ingest.walk.reaches`). Pairs sorted, each once."""
    owners: dict[str, list[str]] = {}
    for pid in sorted(projects):
        for key in roots_by_project.get(pid, []):
            if index_dir is None or not Path(key).is_relative_to(index_dir):
                owners.setdefault(key, []).append(pid)
    found: dict[tuple[str, str], str] = {}
    for key, pids in owners.items():
        for i, a in enumerate(pids):
            for b in pids[i + 1:]:
                found.setdefault((a, b) if a < b else (b, a), key)
        path = Path(key)
        for folder in path.parents:
            for holder in owners.get(str(folder), ()):
                for pid in pids:
                    pair = (holder, pid) if holder < pid else (pid, holder)
                    if holder != pid and pair not in found and _reached(folder, path):
                        found[pair] = key
    return [f"{a} and {b}: {key}" for (a, b), key in sorted(found.items())]


def _reached(folder: Path, path: Path) -> bool:
    """Whether a walk of the folder ``folder`` reaches ``path`` under it (False when it cannot say)."""
    rel = path.relative_to(folder).as_posix()
    try:
        return folder.is_dir() and is_valid_text(rel) and reaches(folder, rel)
    except (OSError, ValueError):
        return False
