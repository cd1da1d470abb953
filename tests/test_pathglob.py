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
