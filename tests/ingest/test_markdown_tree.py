"""markdown-it-pyrs gives the headings and links markdown-it-py gives (sleuth.ingest.markdown_tree),
on hand-made pages, generated ones and the real Hugo docs; pages it could get wrong or crash on are
left to markdown-it-py."""

from __future__ import annotations

import tarfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth.ingest.links import extract_links, markdown_it_tokens, markdown_tokens
from sleuth.ingest.markdown_tree import pyrs_usable, tree_tokens
from sleuth.ingest.parsers import _headings, parse_document
from tests.integration.conftest import HUGO_TAR


def read(text: str, tokens) -> tuple[list[tuple[int, int, str]], list]:
    return _headings(text, tokens), extract_links(text, {}, tokens)


def same_as_markdown_it(text: str) -> tuple[list[tuple[int, int, str]], list]:
    expected = read(text, markdown_it_tokens(text))
    assert read(text, markdown_tokens(text)) == expected
    tree = tree_tokens(text)
    if tree is not None:
        assert read(text, tree) == expected
    return expected


PARSED_BY_PYRS = [
    "é\n# Ünï [x](a.md) `c` ![i](b.png) <b>h</b>\n\n> # quoted\n\nfoo [[Wiki|Alias]]\n===\n\n[r]\n\n[r]: c.md\n",
    "- item [[Wiki]]\n  ```\n  [x](in-code.md)\n  ```\n  after [y](y.md)\n- next *[[Em]]* **[[St]]** _[[U]]_\n",
    "> # quoted heading\n\n# Real [l](h.md)\n\n- # list heading\n\n1. [o](o.md)\n   - [p](p.md)\n",
    "\\[\\[Esc\\]\\] [ref] <https://x.y/z> <mailto:a@b.c>\n\n[ref]: r.md \"t\"\n",
    "Title\n=====\n\nSub [s](s.md)\n---\n\n<div>\n[h](html.md)\n</div>\n\n`[c](code.md)` <span>[s](span.md)</span>\n",
    "text  \nhard [b](b.md)\nsoft [[c]]\n\n    [indented](code.md)\n\n* [[a]]\n\n  [[b]]\n",
    "a\r\nb\r\n\r\n# H1 [l](l.md)\r\n\r\n## H2\r\n",
    "a\rb\r\r# H1\r\rx [y](y.md)\r## H2\r",
    "a\0b\n\n# H\0 [n](n.md)\n\n## H2\n",
    "[a b](<my note.md>) [p](my%20note.md) [u](ünï.md) [q](x.md?y#z) [[T#H|L]] ![[E]]\n",
    "\t# tab heading\n#NoSpace\n####### seven\n# \n## Closing ##\n### [[In heading]]\n",
    "[[name]]\nkey = 1\n\n[link](a.md 'title') [[x|y]] [[bad\nline]] [](empty.md)\n",
    "東京 [[東京]] [東](東.md)\n\n## 見出し\n\n" + "段落 " * 50 + "\n\n# Last\n",
]
LEFT_TO_MARKDOWN_IT = [
    "[a](file:///x/a.md) <file:///y/b.md>\n",  # markdown-it refuses file: URLs; sleuth's accepts them
    "[j](javascript:alert(1)) [d](data:text/plain,hi) [f](FILE\\:///z.md)\n",
    "[e](f&#105;le:///a.md) &#91;&#91;Entity&#93;&#93;\n",
    "> " * 12 + "[deep](d.md)\n",  # markdown-it-py stops nesting 20 levels deep
    "- a\n" + "".join("  " * i + f"- [l{i}](l{i}.md)\n" for i in range(1, 12)),
    "- a\n\t- [tab](t.md)\n",
    "![" * 20 + "x" + "](i.png)" * 20,
    "*" * 2001 + "x" + "*" * 2001,
    # a symbol is punctuation for markdown-it-py only (emphasis for it, two literal "**" for the Rust parser)
    "## **Warning!**\u26a0\ufe0f read [w](w.md)\n",
    "# *?*\0 and _a_\u2028\n",  # NUL (read as U+FFFD, a symbol) and U+2028 (whitespace for Rust only)
    "<!doctype html>\n---\n",  # an HTML block for markdown-it-py only, a heading for the Rust parser
    "".join(f"[r{i}]: r{i}.md\n" for i in range(65)),  # quadratic for the Rust parser on consecutive lines
    "a <?" * 65,  # a processing instruction that never closes: the Rust parser reads on to the end, each
    "a <!-- x -- y [r](b.md) -->\n",  # a comment for markdown-it-py (no link), not for the Rust parser
    "> a\nb\n-\nc\n===\n",  # the bare "-" ends the quote for markdown-it-py only: a heading for it alone
    "[r]: d\f\n---\n",  # a form feed ends the definition for the Rust parser only
    "[r]: \\\n[r]\n",  # the Rust parser reads the backslash and the next line as the URL
    "[r]\n\n[r]:\\",  # no link for the Rust parser
    "# [r](\n\n[r]: r.md\n",  # no link for markdown-it-py ('(' ends the text), a link for the Rust parser
]


@pytest.mark.parametrize("text", PARSED_BY_PYRS)
def test_pages_markdown_it_pyrs_parses_give_markdown_it_py_headings_and_links(text: str) -> None:
    assert pyrs_usable(text) and tree_tokens(text) is not None
    same_as_markdown_it(text)


def test_a_link_url_with_whitespace_at_an_end_falls_back_to_markdown_it_py() -> None:
    # markdown-it-py strips the URL (U+3000, &nbsp;, &Tab;), the Rust parser keeps it: the page passes
    # the gate, its conversion fails, and markdown-it-py's link is the one read
    for text in ["[x](a.md\u3000)\n", "[x](&nbsp;b.md)\n", "[r]\n\n[r]: c.md&Tab;\n", "[](&nbsp;)\n"]:
        assert pyrs_usable(text) and tree_tokens(text) is None
        same_as_markdown_it(text)
    assert [link.target for link in extract_links("[x](a.md\u3000) [y](&nbsp;b.md)", {})] == ["a.md", "b.md"]


def test_hand_made_pages_read_as_expected() -> None:
    # top-level headings only (not the quoted one), with their line; links with their labels
    headings, links = same_as_markdown_it(PARSED_BY_PYRS[0])
    assert headings == [(1, 1, "Ünï x c i <b>h</b>"), (5, 1, "foo [[Wiki|Alias]]")]
    assert [(link.target, link.relation, link.label) for link in links] == [
        ("a.md", "link", "x"), ("Wiki", "wikilink", "Alias"), ("c.md", "link", "r")]
    assert same_as_markdown_it(PARSED_BY_PYRS[7])[0] == [(3, 1, "H1"), (6, 2, "H2")]  # lone CRs are line ends
    # file: links are local links (markdown-it-py told to accept every URL): the page is left to it
    assert [link.target for link in extract_links(LEFT_TO_MARKDOWN_IT[0], {})] == ["/x/a.md", "/y/b.md"]


@pytest.mark.parametrize("text", LEFT_TO_MARKDOWN_IT)
def test_pages_the_rust_parser_could_get_wrong_go_to_markdown_it_py(text: str) -> None:
    assert not pyrs_usable(text) and tree_tokens(text) is None
    same_as_markdown_it(text)


@pytest.mark.parametrize("text", ["> " * 100_000 + "x [l](a.md)", "- " * 50_000 + "x",
                                  "*" * 100_000 + "x" + "*" * 100_000, "\t" * 50_000 + "- x"])
def test_nesting_that_overflows_the_rust_parsers_stack_never_reaches_it(text: str) -> None:
    # each of these ends the process with SIGSEGV inside markdown-it-pyrs 0.4 (measured): the page
    # is parsed by markdown-it-py instead, and the page is indexed
    assert tree_tokens(text) is None
    assert parse_document("deep.md", text).blocks


@pytest.mark.parametrize("text", ["x\r" + "> " * 100_000 + "x", "x\r\r" + "- " * 50_000 + "x",
                                  "> a\r-\r&\r=\r", "[r](\u2028\n\n[r]:>\n"])
def test_lone_carriage_returns_end_lines_for_the_gate_too(text: str) -> None:
    # the parser reads a lone CR as a line end: the first two passed the gate and ended the process with
    # SIGSEGV inside markdown-it-pyrs (measured); the last two gave other headings or links
    assert not pyrs_usable(text) and tree_tokens(text) is None
    assert parse_document("deep.md", text).blocks
    same_as_markdown_it(text)


FRAGMENTS = st.sampled_from([
    "# Heading", "## Sub [l](s.md)", "Setext\n===", "Sub\n---", "> quote [q](q.md)", "> # quoted", "- item",
    "- [[wiki]]", "  - nested [n](n.md)", "1. one", "2) two [[t|T]]", "```\n[c](c.md)\n```", "    indented [i](i.md)",
    "*em [[e]]*", "**strong**", "_u_ [x](<a b.md>)", "`code [x](y.md)`", "<div>\n[h](h.md)\n</div>", "<b>[i](i.md)</b>",
    "![img](p.png)", "<https://a.b/c>", "[ref]", "[ref]: r.md", "\\[\\[not\\]\\]", "text with words", "",
    "[[x]]\nk = 1", "東京 [東](東.md)", "trailing  ", "é [é](é.md)", "---", "***", "+ plus",
])
PAGES = st.lists(FRAGMENTS, max_size=12).flatmap(
    lambda parts: st.sampled_from(["\n", "\n\n", "\r\n"]).map(lambda sep: sep.join(parts)))


@settings(max_examples=300, deadline=None)
@given(PAGES)
def test_generated_pages_give_the_same_headings_and_links(text: str) -> None:
    same_as_markdown_it(text)


def test_the_hugo_docs_give_the_same_headings_and_links() -> None:
    if not HUGO_TAR.exists():
        pytest.fail(f"shared data not found: {HUGO_TAR}")
    pages = taken = 0
    with tarfile.open(HUGO_TAR) as tar:
        for member in tar:
            f = tar.extractfile(member) if member.isfile() and member.name.endswith(".md") else None
            if f is None:
                continue
            text = f.read().decode("utf-8", "replace")
            pages += 1
            taken += tree_tokens(text) is not None
            same_as_markdown_it(text)
    assert pages == 992 and taken >= 950


def test_a_page_the_rust_parser_panics_on_is_indexed_without_its_panic_on_the_terminal(tmp_path) -> None:
    # markdown-it-pyrs 0.4 panics on a code span left open inside brackets and prints the panic (and a
    # backtrace with RUST_BACKTRACE) on file descriptor 2: the page falls back to markdown-it-py, and
    # the parse worker keeps that descriptor off the terminal (an attack round saw 55 lines of it)
    import os
    import subprocess

    from tests.integration.conftest import SLEUTH

    text = "# P\n\n[`open [l](q.md)\n"
    assert tree_tokens(text) is None  # the panic is caught: markdown-it-py parses it
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "p.md").write_text(text, encoding="utf-8")
    (folder / "q.md").write_text("# Q\n\nfine\n", encoding="utf-8")
    done = subprocess.run([*SLEUTH, "index", str(folder), "--index", str(tmp_path / "idx"), "--format", "json"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "SLEUTH_MODEL": "none", "RUST_BACKTRACE": "1"})
    assert done.returncode == 0, done.stderr
    assert "panicked" not in done.stderr and "backtrace" not in done.stderr, done.stderr
    assert '"added": 2' in done.stdout and '"skipped": []' in done.stdout
