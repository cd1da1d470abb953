"""Attack session 3: ``.git`` as a file. In every git worktree and submodule checkout, ``.git`` is a
file (``gitdir: /absolute/path/of/the/main/repository/.git/worktrees/x``). The default exclude
``.git/`` (any case) matches folders only, so the walker yields that file (and ``sub/.GIT``) as a
candidate; the indexer then lists it among the skipped files ("unsupported format") in every
`sleuth index` and `sleuth status` of a worktree or submodule (its text is not indexed: checked). The
watcher drops every event whose last part is an excluded folder name, so walker and watcher
disagree about the same path. git itself never treats a ``.git`` file as content."""

from __future__ import annotations

from pathlib import Path

from sleuth.ingest.walk import walk_roots
from sleuth.types import SourceFile


def _worktree(root: Path) -> Path:
    root.mkdir()
    (root / ".git").write_text("gitdir: /home/alice/private-repo/.git/worktrees/feature\n", encoding="utf-8")
    (root / "sub").mkdir()
    (root / "sub" / ".GIT").write_text("gitdir: ../.git/modules/sub\n", encoding="utf-8")
    (root / "notes.md").write_text("# Notes\n\nPlain notes.\n", encoding="utf-8")
    return root


def test_a_git_file_of_a_worktree_or_submodule_is_not_walked(tmp_path: Path) -> None:
    root = _worktree(tmp_path / "wt")
    found = sorted(f.rel_path for f in walk_roots([root]) if isinstance(f, SourceFile))
    assert found == ["notes.md"]

