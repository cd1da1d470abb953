from __future__ import annotations

import os
from pathlib import Path

import pytest

from sleuth.ingest import walk as walk_module
from sleuth.ingest.walk import FILE_MAX_BYTES, walk_roots
from sleuth.types import SkippedFile, SourceFile


def write(root: Path, rel: str, content: str | bytes = "text\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def collect(roots: list[Path], extra: tuple[str, ...] = ()) -> tuple[list[str], dict[str, str]]:
    found: list[str] = []
    skipped: dict[str, str] = {}
    for item in walk_roots(roots, extra):
        if isinstance(item, SourceFile):
            found.append(item.rel_path)
        else:
            assert isinstance(item, SkippedFile)
            skipped[item.path] = item.reason
    return found, skipped


def test_sorted_relative_paths_and_fields(tmp_path: Path) -> None:
    write(tmp_path, "b.md")
    write(tmp_path, "a/z.md", "hello")
    write(tmp_path, "a/b/c.txt")
    items = list(walk_roots([tmp_path]))
    assert [i.rel_path for i in items] == ["a/b/c.txt", "a/z.md", "b.md"]
    first = items[1]
    assert isinstance(first, SourceFile)
    assert first.root == tmp_path and first.path == tmp_path / "a" / "z.md"
    assert first.size_bytes == 5
    assert first.mtime_ns == os.stat(tmp_path / "a" / "z.md").st_mtime_ns


def test_nested_gitignore(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\nsecret/\n")
    write(tmp_path, "app.log")
    write(tmp_path, "keep.md")
    write(tmp_path, "secret/x.md")
    write(tmp_path, "sub/.gitignore", "local.md\n!important.log\n/anchored.md\n")
    write(tmp_path, "sub/local.md")
    write(tmp_path, "sub/important.log")
    write(tmp_path, "sub/other.log")
    write(tmp_path, "sub/anchored.md")
    write(tmp_path, "sub/deeper/anchored.md")
    write(tmp_path, "sub/deeper/local.md")
    write(tmp_path, "other/local.md")  # the sub/.gitignore does not apply outside sub/
    found, skipped = collect([tmp_path])
    assert found == [  # the .gitignore files themselves are tools' dotfiles (walk.tool_dotfile): left out
        "keep.md",
        "other/local.md",
        "sub/deeper/anchored.md",
        "sub/important.log",
    ]
    assert skipped == {}


def test_default_and_extra_excludes(tmp_path: Path) -> None:
    for rel in [
        ".git/config", "node_modules/x/index.js", ".venv/lib/a.py", "__pycache__/m.txt", ".sleuth/db.txt",
        "build/out.txt", "dist/x.txt", "pkg.egg-info/PKG-INFO", "deep/node_modules/y.js", ".DS_Store",
        "myenv/lib/site.py", "drafts/wip.md", "src/main.py",
    ]:
        write(tmp_path, rel)
    write(tmp_path, "myenv/pyvenv.cfg", "home = /usr\n")
    found, skipped = collect([tmp_path], extra=("drafts/",))
    assert found == ["src/main.py"]
    assert skipped == {}


def test_version_control_and_metadata_excludes_match_any_case(tmp_path: Path) -> None:
    """``.GIT/`` is the repository's ``.git`` on macOS and Windows (git refuses such a path on every
    system): it and the other version-control, index and file-manager names are excluded in any
    case; the other defaults and a project's .gitignore match as written (git's rules on Linux)."""
    from sleuth.ingest.walk import walk_paths
    from sleuth.watch import WatchedRoot, changed_paths

    for rel in [
        ".GIT/config", ".Git/hooks/post-checkout", "sub/.gIt/HEAD", ".HG/store/data.txt", ".Svn/entries",
        ".JJ/repo.txt", ".SLEUTH/catalog.txt", ".ds_store", "sub/THUMBS.DB", "sub/thumbs.db",
        "NODE_MODULES/x.js", "Build/out.txt", "Secret.md", "secret.md", "src/main.py", ".gitish/notes.md",
    ]:
        write(tmp_path, rel)
    write(tmp_path, ".gitignore", "secret.md\n")
    found, skipped = collect([tmp_path])
    assert found == [".gitish/notes.md", "Build/out.txt", "NODE_MODULES/x.js", "Secret.md",
                     "src/main.py"]
    assert skipped == {}
    assert [f.rel_path for f in walk_paths(tmp_path, [".GIT/config", ".Git", "sub", "Secret.md"])] == ["Secret.md"]
    root = WatchedRoot("p", tmp_path, False)
    events = [str(tmp_path / rel) for rel in (".GIT/config", "sub/.gIt/HEAD", ".Hg", "NODE_MODULES/y.js", "a.md")]
    assert changed_paths(events, [root], tmp_path / "idx") == {root: {"NODE_MODULES/y.js", "a.md"}}


def test_binary_and_size_skips(tmp_path: Path) -> None:
    write(tmp_path, "nul.txt", b"hello\x00world")
    write(tmp_path, "pic.png", b"not even read")
    write(tmp_path, "paper.pdf", b"%PDF-1.4")
    write(tmp_path, "big.md", b"a" * (FILE_MAX_BYTES + 1))
    write(tmp_path, "limit.md", b"a" * FILE_MAX_BYTES)
    write(tmp_path, "utf16.txt", "\ufeffhi".encode("utf-16-le"))
    found, skipped = collect([tmp_path])
    assert found == ["limit.md", "paper.pdf", "utf16.txt"]  # PDFs are binary but read (sleuth.ingest.pdf)
    assert skipped == {
        "nul.txt": "binary content",
        "pic.png": "binary file type: .png",
        "big.md": f"too large: {FILE_MAX_BYTES + 1} bytes > {FILE_MAX_BYTES} byte limit",
    }


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "locked.md")

    def deny(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(walk_module, "open_file", deny)
    assert list(walk_roots([tmp_path])) == [SkippedFile("locked.md", "unreadable: Permission denied")]


def test_symlinks_are_never_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    write(outside, "doc.md")
    write(root, "real.md")
    write(root, "sub/index.md")
    (root / "linked_dir").symlink_to(outside, target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "link.md").symlink_to(outside / "doc.md")
    (root / "passwd").symlink_to("/etc/passwd")
    (root / "broken.md").symlink_to(tmp_path / "missing.md")
    (root / "sub/README.md").symlink_to("index.md")  # the same page twice in every folder of a repository
    (root / "chain.md").symlink_to(root / "sub/README.md")
    found, skipped = collect([root])
    assert found == ["real.md", "sub/index.md"]
    assert skipped == {
        "broken.md": "broken symlink",
        "chain.md": "symlink to sub/index.md: each file is indexed once, under its own path",
        "link.md": "symlink to a file outside the project's roots",
        "linked_dir": "symlinked directory not followed",
        "loop": "symlinked directory not followed",
        "passwd": "symlink to a file outside the project's roots",
        "sub/README.md": "symlink to sub/index.md: each file is indexed once, under its own path",
    }


def test_symlinks_are_judged_against_every_root_of_the_project(tmp_path: Path) -> None:
    docs, notes = tmp_path / "docs", tmp_path / "notes"
    write(notes, "plan.md")
    write(docs, "a.md")
    (docs / "plan.md").symlink_to(notes / "plan.md")
    assert collect([docs])[1] == {"plan.md": "symlink to a file outside the project's roots"}
    skipped = {i.path: i.reason for i in walk_roots([docs], confine=[docs, notes]) if isinstance(i, SkippedFile)}
    assert skipped == {"plan.md": "symlink to plan.md: each file is indexed once, under its own path"}


def test_a_symlinked_gitignore_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(tmp_path, "elsewhere/rules", "*.md\n")
    write(root, "a.md")
    (root / ".gitignore").symlink_to(tmp_path / "elsewhere/rules")
    found, skipped = collect([root])
    assert found == ["a.md"]
    assert skipped == {".gitignore": "symlink to a file outside the project's roots"}


def test_a_file_replaced_after_the_walk_is_not_read(tmp_path: Path) -> None:
    from sleuth.ingest.confine import ConfinementError, read_file

    write(tmp_path, "outside/secret.md", "secret\n")
    root = tmp_path / "root"
    write(root, "doc.md")
    (item,) = list(walk_roots([root]))
    assert isinstance(item, SourceFile) and item.identity is not None
    # The listed file's inode stays in use (a second link to it), so the file written at its path
    # below cannot be given the same inode number (ext4 and tmpfs reuse a freed one at once).
    os.link(root / "doc.md", tmp_path / "listed.md")
    (root / "doc.md").unlink()
    (root / "doc.md").symlink_to(tmp_path / "outside/secret.md")  # swapped for a link after the walk
    with pytest.raises(ConfinementError, match="symlink"):
        read_file(item.path, 100, item.identity)
    (root / "doc.md").unlink()
    os.rename(tmp_path / "outside", root / "sub")
    (root / "sub2").symlink_to(root / "sub", target_is_directory=True)
    write(root, "doc.md", "other\n")  # a new file at the same path is not the file listed
    with pytest.raises(ConfinementError, match="replaced"):
        read_file(item.path, 100, item.identity)


def test_names_that_are_not_utf8_are_escaped_losslessly(tmp_path: Path) -> None:
    from sleuth.ingest.names import fs_name

    raw = os.fsdecode(b"caf\xe9.md")
    (tmp_path / raw).write_text("# cafe\n")
    (tmp_path / "back\\slash.md").write_text("x\n")
    (tmp_path / "esc\x1b.md").write_text("x\n")
    items = list(walk_roots([tmp_path]))
    assert [i.rel_path for i in items] == ["back\\\\slash.md", "caf\\xe9.md", "esc\\x1b.md"]
    for item in items:
        assert isinstance(item, SourceFile)
        assert item.rel_path.encode("utf-8") and (tmp_path / fs_name(item.rel_path)) == item.path
    assert [i.rel_path for i in walk_module.walk_paths(tmp_path, ["caf\\xe9.md"])] == ["caf\\xe9.md"]


def test_walk_paths_does_not_go_through_a_symlinked_folder(tmp_path: Path) -> None:
    write(tmp_path, "outside/secret.md")
    root = tmp_path / "root"
    write(root, "a.md")
    (root / "sub").symlink_to(tmp_path / "outside", target_is_directory=True)
    assert list(walk_module.walk_paths(root, ["sub/secret.md"])) == []
    assert list(walk_module.walk_paths(root, ["sub"])) == [SkippedFile("sub", "symlinked directory not followed")]


def test_single_file_root_and_bad_roots(tmp_path: Path) -> None:
    path = write(tmp_path, "sub/one.md")
    (item,) = list(walk_roots([path]))
    assert item == SourceFile(
        root=tmp_path / "sub", path=path, rel_path="one.md", size_bytes=5, mtime_ns=path.stat().st_mtime_ns
    )
    with pytest.raises(FileNotFoundError, match="root does not exist"):
        walk_roots([tmp_path, tmp_path / "nope"])  # raised at call time, before iterating
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotADirectoryError):
        walk_roots([fifo])


def test_fifo_inside_root_is_reported_not_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    assert list(walk_roots([tmp_path])) == [SkippedFile("pipe", "not a regular file")]


def test_files_are_tested_against_the_defaults_that_can_match_them_only(tmp_path: Path) -> None:
    """Every file a walk reaches is excluded by the file patterns exactly when the whole default
    spec excludes it (the folder patterns match only files below folders the walk never enters)."""
    import pathspec

    from sleuth.ingest.walk import DEFAULT_EXCLUDES, _Defaults, walk_paths

    names = ["build", "dist", "x.egg-info", "node_modules", ".coverage", ".DS_Store", "Thumbs.db", "ok", "docs",
             "coverage"]
    for top in names:
        for sub in names:
            (tmp_path / top / sub).mkdir(parents=True, exist_ok=True)
            for leaf in ("a.md", ".coverage", "Thumbs.db", "build", "dist.md"):
                (tmp_path / top / sub / leaf).write_text("text")
    extra = ["/docs/ok/", "*.tmp"]
    lines = [*DEFAULT_EXCLUDES, *extra]
    full = pathspec.GitIgnoreSpec.from_lines(lines)
    defaults = _Defaults(lines)
    assert len(defaults.files.patterns) == 5  # .git (a worktree's file), .coverage, .DS_Store, Thumbs.db and *.tmp
    reached = [f.rel_path for f in walk_roots([tmp_path], extra) if isinstance(f, SourceFile)]
    assert "ok/docs/a.md" in reached and "docs/ok/a.md" not in reached and "build/ok/a.md" not in reached
    every_file = [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()]

    def folders(rel: str) -> list[str]:
        return ["/".join(rel.split("/")[:i]) + "/" for i in range(1, rel.count("/") + 1)]

    kept_by_full = [rel for rel in every_file if not any(map(full.match_file, [*folders(rel), rel]))]
    assert sorted(reached) == sorted(kept_by_full)
    assert sorted(f.rel_path for f in walk_paths(tmp_path, ["ok", "docs"], extra)
                  if isinstance(f, SourceFile)) == sorted(r for r in kept_by_full if r.startswith(("ok/", "docs/")))
    # a negation may bring a file back: then files are tested against every pattern
    negated = _Defaults(["build/", "!build/keep.md"])
    assert negated.files is negated.spec


def test_a_folder_nested_past_the_recursion_limit_is_walked(tmp_path: Path) -> None:
    """Attack session 31: 1,200 nested folders stopped ``sleuth index`` (and the watcher's walk)
    with a RecursionError traceback: the walk recursed two generator frames a folder. Its stack of
    folders now has no Python frame per level; order is still a recursive walk's."""
    folder = tmp_path
    for _ in range(1200):
        folder = folder / "a"
        folder.mkdir()  # one level at a time: mkdir(parents=True) recurses too
    (folder / "deep.md").write_text("# deep\n")
    (folder.parent / "z.md").write_text("# beside\n")
    write(tmp_path, "a.md")
    write(tmp_path, "b.md")
    deep = "a/" * 1200 + "deep.md"
    beside = "a/" * 1199 + "z.md"
    try:
        assert collect([tmp_path]) == ([deep, beside, "a.md", "b.md"], {})  # folder a sorts before a.md
        assert [i.rel_path for i in walk_module.walk_paths(tmp_path, ["a"])] == [deep, beside]
        assert [i.rel_path for i in walk_module.walk_paths(tmp_path, [deep])] == [deep]
    finally:  # pytest's clean-up (shutil.rmtree) recurses a frame a folder: it would fail on this one
        (folder / "deep.md").unlink()
        (folder.parent / "z.md").unlink()
        while folder != tmp_path:
            folder.rmdir()
            folder = folder.parent


def test_a_gitignore_rule_that_backtracks_in_python_re_is_matched_by_re2(tmp_path: Path) -> None:
    """Attack session 31: a 30-byte .gitignore, ``*?*?*?*?*?*?*?*?*?*?*?*?*z``, beside a file with a
    long name made ``sleuth index`` run for minutes (two more ``*?``: hours), Python's ``re``
    holding the GIL. The walk's rules are matched by pathspec's RE2 backend (checked first)."""
    write(tmp_path, ".gitignore", "*?" * 30 + "*z\n")
    write(tmp_path, "parse_worker_helpers_and_more_things_" * 4 + ".md")
    write(tmp_path, "notes/" + "q" * 60 + "z")
    write(tmp_path, "short.md")
    spec = walk_module._Defaults(["*?" * 30 + "*z"]).spec
    assert type(spec._backend).__module__.startswith("pathspec._backends.re2")
    found, skipped = collect([tmp_path])
    assert found == ["parse_worker_helpers_and_more_things_" * 4 + ".md", "short.md"]


def test_an_exclude_with_undecodable_bytes_is_matched_as_a_wildcard_would(tmp_path: Path) -> None:
    """RE2 reads UTF-8: an --exclude given with a lone surrogate (undecodable bytes of argv) is read
    with U+FFFD for it, which stands for any undecodable byte of a name."""
    write(tmp_path, "keep.md")
    write(tmp_path, "caf\udce9.md")
    found, _ = collect([tmp_path], ("caf\udcff.md",))
    assert found == ["keep.md"]


def test_tools_dotfiles_are_left_out_not_reported(tmp_path: Path) -> None:
    """A trial: ``sleuth index`` and ``sleuth status`` listed .gitignore, .gitattributes and
    .editorconfig as skipped files ("unsupported format"). A dotfile in no format sleuth reads is
    left out silently (as ripgrep hides dotfiles); one it reads is walked, one with a document or
    binary extension still reported; a file named as a root is always walked."""
    from sleuth.ingest.walk import tool_dotfile

    for rel in (".gitignore", ".gitattributes", ".editorconfig", "sub/.npmrc", ".env", ".python-version",
                ".notes.md", ".prettierrc.json", ".env.example", ".draft.docx", ".backup.zip", "a.md"):
        write(tmp_path, rel)
    found, skipped = collect([tmp_path])
    assert found == [".backup.zip", ".env.example", ".notes.md", ".prettierrc.json", "a.md"]
    assert skipped == {".draft.docx": "binary file type: .docx"}
    assert collect([tmp_path / ".gitignore"])[0] == [".gitignore"]  # named: the indexer reports it
    assert [tool_dotfile(n) for n in (".gitignore", ".GITATTRIBUTES", ".foo.DOCX", ".x.tar.gz", "gitignore")] == [
        True, True, False, False, False]


def _counting_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the walk opens from now on (its binary sniff), in order."""
    opened: list[str] = []
    real = walk_module.open_file

    def counting(path, *args, **kwargs):
        opened.append(os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(walk_module, "open_file", counting)
    return opened


def test_a_file_the_caller_says_is_unchanged_is_not_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "a.md", "# A\n")
    write(tmp_path, "nul.txt", b"abc\x00def")  # binary content: only a read can tell
    opened = _counting_opens(monkeypatch)
    asked: list[tuple[str, int, int]] = []

    def unchanged(rel: str, st: os.stat_result) -> bool:
        asked.append((rel, st.st_size, st.st_mtime_ns))
        return True

    items = list(walk_roots([tmp_path], unchanged=unchanged))
    assert [(type(i).__name__, i.rel_path) for i in items] == [("SourceFile", "a.md"), ("SourceFile", "nul.txt")]
    assert opened == []
    assert asked == [("a.md", 4, os.stat(tmp_path / "a.md").st_mtime_ns),
                     ("nul.txt", 7, os.stat(tmp_path / "nul.txt").st_mtime_ns)]
    # Not unchanged: sniffed as before.
    items = list(walk_roots([tmp_path], unchanged=lambda rel, st: False))
    assert opened == [str(tmp_path / "a.md"), str(tmp_path / "nul.txt")]
    assert items[1] == SkippedFile("nul.txt", "binary content")


def test_an_unchanged_file_still_meets_every_check_that_costs_no_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "secret.md", "# secret\n")
    root = tmp_path / "root"
    write(root, "big.md", "x" * (FILE_MAX_BYTES + 1))
    write(root, "pic.png", "not really")
    write(root, ".gitignore", "ignored.md\n")
    write(root, "ignored.md")
    (root / "link.md").symlink_to(outside / "secret.md")
    os.mkfifo(root / "pipe.md")
    found, skipped = [], {}
    for item in walk_roots([root], unchanged=lambda rel, st: True):
        if isinstance(item, SourceFile):
            found.append(item.rel_path)
        else:
            skipped[item.path] = item.reason.split(":")[0]
    assert found == []  # the .gitignore is a tool's dotfile: left out of the walk
    assert skipped == {"big.md": "too large", "link.md": "symlink to a file outside the project's roots",
                       "pic.png": "binary file type", "pipe.md": "not a regular file"}


def test_walk_paths_passes_the_unchanged_test_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "sub/a.md", "# A\n")
    opened = _counting_opens(monkeypatch)
    items = list(walk_module.walk_paths(tmp_path, ["sub"], unchanged=lambda rel, st: rel == "sub/a.md"))
    assert [i.rel_path for i in items] == ["sub/a.md"] and opened == []


@pytest.mark.parametrize(("line", "reason"), [
    ("\\", "Escape character found with no next character to escape: '\\\\'"),
    ("a\\", "Escape character found with no next character to escape: 'a\\\\'"),
    ("[z-a]", "bad character range z-a"),
    ("[\\d-a]", "bad character range d-a"),
    ("[[:foo:]]", "invalid character class range: [:foo:]"),
    ("!", "Pattern normalized to nothing."),
])
def test_a_gitignore_line_that_is_not_a_pattern_is_left_out_and_told(tmp_path: Path, line: str,
                                                                      reason: str) -> None:
    """Attack session 34: one such line in a .gitignore made the walk raise (GitIgnorePatternError,
    re.error or re2's error), so ``sleuth index`` stopped with a traceback. Git leaves the line out
    and applies the others; so does the walk, and it tells its caller which line, once per read."""
    from sleuth.ingest.walk import walk_paths

    write(tmp_path, "sub/.gitignore", f"*.log\n{line}\n!keep.log\n")
    write(tmp_path, "sub/a.md")
    write(tmp_path, "sub/x.log")
    write(tmp_path, "sub/keep.log")
    told: list[tuple[str, list[str]]] = []
    found = [item.rel_path for item in walk_roots([tmp_path], on_ignore_file=lambda p, probs: told.append((p, probs)))
             if isinstance(item, SourceFile)]
    assert found == ["sub/a.md", "sub/keep.log"]  # lines 1 and 3 apply (the .gitignore itself: a tool's dotfile)
    problem = f"line 2 ignored, not a valid pattern: {line!r} ({reason})"
    assert told == [("sub/.gitignore", [problem])]
    told.clear()
    found = [item.rel_path for item in walk_paths(tmp_path, ["sub/x.log", "sub/keep.log"],
                                                  on_ignore_file=lambda p, probs: told.append((p, probs)))
             if isinstance(item, SourceFile)]
    assert found == ["sub/keep.log"]
    assert ("sub/.gitignore", [problem]) in told and {p for p, _ in told} == {"sub/.gitignore"}


def test_a_gitignore_too_large_for_one_re2_set_is_split(tmp_path: Path) -> None:
    """2,000 rules such as ``dir7/**/*x7?[a-z]*.md`` are too many for one RE2 set ("failed to compile
    Set": the walk stopped); they are matched as several sets, the last matching rule deciding."""
    rules = [f"dir{i}/**/*x{i}?[a-z]*.md" for i in range(2000)]
    write(tmp_path, ".gitignore", "\n".join([*rules, "!dir5/keep/**"]) + "\n")
    write(tmp_path, "dir5/q/zx5ab.md")  # ignored by rule 6
    write(tmp_path, "dir1999/zx1999ab.md")  # by the last rule
    write(tmp_path, "dir5/keep/zx5ab.md")  # brought back by the negation after them
    write(tmp_path, "dir5/q/zx6ab.md")
    told: list[tuple[str, list[str]]] = []
    found = [item.rel_path for item in walk_roots([tmp_path], on_ignore_file=lambda p, probs: told.append((p, probs)))
             if isinstance(item, SourceFile)]
    assert found == ["dir5/keep/zx5ab.md", "dir5/q/zx6ab.md"]
    assert told == [(".gitignore", [])]


def test_an_extra_exclude_that_is_not_a_pattern_is_refused_at_once(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    with pytest.raises(ValueError, match=r"exclude '\[z-a\]' is not a valid pattern: bad character range z-a"):
        walk_roots([tmp_path], ["[z-a]"])
