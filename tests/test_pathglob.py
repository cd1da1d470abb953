"""Path globs (sleuth.pathglob): gitignore semantics over the path and <root label>/<path>."""

from __future__ import annotations

import pytest

from sleuth.errors import QueryError
from sleuth.pathglob import PathFilter, qualified_path, root_label


@pytest.mark.parametrize(("globs", "path", "selected"), [
    (["publish.css"], "en/publish.css", True),  # no slash: any depth
    (["ja/*.css"], "publish.css", True),  # the root label counts as a folder
    (["en/*.css"], "publish.css", False),
    (["docs/"], "docs/a/b.md", True),
    (["*.md"], "a/b.md", True),
    (["docs/**/*.md", "!docs/old/"], "docs/old/x.md", False),  # the last match decides
    (["docs/**/*.md", "!docs/old/"], "docs/new/x.md", True),
    (["!drafts/"], "notes/a.md", True),  # only negations: everything else
    (["!drafts/"], "drafts/a.md", False),
])
def test_globs(globs: list[str], path: str, selected: bool) -> None:
    assert PathFilter(globs).matches("/site/ja", path) is selected


def test_labels_and_bad_globs() -> None:
    assert (root_label("/work/site/en"), qualified_path("/work/site/en", "a.md")) == ("en", "en/a.md")
    with pytest.raises(QueryError, match="path glob 2 is empty"):
        PathFilter(["*.md", "!"])
    with pytest.raises(QueryError, match="at most 500 are allowed"):
        PathFilter(["x" * 501])


def test_a_glob_that_backtracks_for_hours_in_python_re_is_matched_by_re2() -> None:
    """Attack session 31: ``*?*?*?*?*?*?*?*?*?*?*?*z`` (24 characters) made Python's ``re`` try every
    split of a long path among its stars, for hours and holding the GIL, so one search froze
    ``sleuth ui`` and the HTTP server's page. The rules are RE2's (checked first: a rule of ``re``
    would hang the match below), which is linear in the path's length."""
    glob = "*?" * 40 + "*z"
    f = PathFilter([glob, "!*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*y/**"])
    assert {type(regex).__module__ for _, regex in f.rules} == {"re2"}
    long_name = "src/sleuth/ingest/" + "parse_worker_helpers_and_more_things_" * 6 + ".md"
    assert not f.matches("/srv/r", long_name)
    assert f.matches("/srv/r", "a" * 40 + "z")
    assert not f.matches("/srv/r", "a" * 39 + "z")  # 40 characters at least before the z
    assert not f.matches("/srv/r", "q" * 30 + "y/" + "a" * 40 + "z")  # deselected by the second glob


def test_undecodable_bytes_of_a_name_are_matched_by_wildcards() -> None:
    """RE2 reads UTF-8: a file name's undecodable byte (a lone surrogate) counts as one character."""
    assert PathFilter(["*.md"]).matches("/srv/r", "caf\udce9.md")
    assert PathFilter(["caf?.md"]).matches("/srv/r", "caf\udce9.md")
    assert not PathFilter(["caf??.md"]).matches("/srv/r", "caf\udce9.md")
    assert PathFilter(["caf\udce9/**"]).matches("/srv/r\udcff", "caf\udce9/x.md")  # a glob given with one too


@pytest.mark.parametrize(("glob", "message"), [
    ("[", "path glob '[' is not a valid glob"),
    ("\\", "path glob '\\\\' is not a valid glob: Escape character found with no next character to escape: '\\\\'"),
    ("[z-a]", "path glob '[z-a]' is not a valid glob: bad character range z-a"),
    ("!docs/[\\d-a]", "path glob '!docs/[\\\\d-a]' is not a valid glob: bad character range d-a"),
    ("[[:foo:]]", "path glob '[[:foo:]]' is not a valid glob: invalid character class range: [:foo:]"),
])
def test_a_glob_pathspec_cannot_compile_is_a_query_error(glob: str, message: str) -> None:
    """Attack session 34: the errors of pathspec's Python regex (``re.error``) and of its RE2 backend
    escaped as tracebacks on the CLI and 500s on the page; only ValueError and TypeError were caught."""
    with pytest.raises(QueryError) as caught:
        PathFilter(["*.md", glob])
    assert str(caught.value) == message


def test_a_posix_class_is_read_by_re2_without_a_python_warning() -> None:
    """``[[:alpha:]]`` made Python's ``re`` print "FutureWarning: Possible nested set" on stderr (an
    error under this suite's warning filter); RE2, which matches, reads the class as git does."""
    f = PathFilter(["[[:alpha:]]*.md"])
    assert f.matches("/srv/r", "notes.md") and not f.matches("/srv/r", "1notes.md")
    assert not f.matches("/srv/r", ":x.md")  # not a set of the characters '[', ':', 'a', 'l', ...


@pytest.mark.parametrize(("name", "lookalike"), [("g.md ", "g.md"), ("a  ", "a"), ("i[x]", "ix"), ("a*", "ab"),
                                                 ("q?", "qq"), ("b\\s", "bs"), (" lead", "lead")])
def test_gitignore_literal_matches_the_name_as_written(name: str, lookalike: str) -> None:
    """A root's name as an exclude line matches that name only (a trailing space, dropped by git's
    rules unless escaped, made ``g.md `` exclude ``g.md``: an attack round's finding)."""
    from sleuth.pathglob import gitignore_literal, gitignore_spec

    spec = gitignore_spec(["/" + gitignore_literal(name)])
    assert spec.match_file(name) and not spec.match_file(lookalike)
