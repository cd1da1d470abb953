from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth.ingest.chunk import CHUNK_MAX_CHARS
from sleuth.ingest.parsers import ParseError, kind_for_path, parse_document
from sleuth.locations import block_location
from sleuth.types import ParsedDocument


def check_invariants(doc: ParsedDocument) -> None:
    for block in doc.blocks:
        assert block.text == doc.text[block.start_char : block.end_char]
        assert block.text.strip()
        assert len(block.text) <= CHUNK_MAX_CHARS
        assert block.start_line == doc.text.count("\n", 0, block.start_char) + 1
        assert block.end_line == doc.text.count("\n", 0, block.end_char - 1) + 1
    json.dumps(doc.front_matter)


def sections(doc: ParsedDocument) -> list[tuple[tuple[str, ...], str]]:
    return [(b.heading_path, b.text) for b in doc.blocks]


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("docs/a.md", "markdown"), ("A.MDX", "markdown"), ("nb.ipynb", "notebook"), ("src/x.py", "code"),
        ("Makefile", "code"), ("sub/Dockerfile", "code"), ("README", "text"), ("LICENSE", "text"),
        ("notes.rst", "text"), ("conf.yaml", "config"), (".env.example", "config"), ("x.json", "config"),
        ("paper.pdf", "pdf"), ("A/PAPER.PDF", "pdf"), ("image.svg", None), (".gitignore", None),
    ],
)
def test_kind_for_path(path: str, kind: str | None) -> None:
    assert kind_for_path(path) == kind


def test_yaml_front_matter_title_tags_and_sections() -> None:
    text = (
        "---\n"
        "title: Install guide\n"
        "tags: [setup, linux, setup]\n"
        "keywords: [install]\n"
        "date: 2024-03-01\n"
        "updated: 2024-03-02T10:00:00Z\n"
        "---\n"
        "Intro text.\n\n"
        "# Install\n\nSteps.\n\n"
        "## On Linux\n\nUse apt.\n\n"
        "### Debian\n\nUse apt-get.\n\n"
        "## On Mac\n\nUse brew.\n\n"
        "# Usage\n\nRun it.\n"
    )
    doc = parse_document("docs/install.md", text)
    check_invariants(doc)
    assert doc.kind == "markdown"
    assert doc.title == "Install guide"
    assert doc.tags == ["setup", "linux", "install"]
    assert doc.front_matter["date"] == "2024-03-01"
    assert doc.front_matter["updated"] == "2024-03-02T10:00:00+00:00"
    assert doc.problems == []
    assert doc.text == text
    assert sections(doc) == [
        ((), "Intro text."),
        (("Install",), "# Install\n\nSteps."),
        (("Install", "On Linux"), "## On Linux\n\nUse apt."),
        (("Install", "On Linux", "Debian"), "### Debian\n\nUse apt-get."),
        (("Install", "On Mac"), "## On Mac\n\nUse brew."),
        (("Usage",), "# Usage\n\nRun it."),
    ]
    assert doc.blocks[0].start_line == 8


def test_toml_front_matter() -> None:
    text = '+++\ntitle = "Toml page"\ntags = "a, b ,c"\ndate = 2023-05-06\n+++\n\nBody here.\n'
    doc = parse_document("t.md", text)
    check_invariants(doc)
    assert doc.title == "Toml page"
    assert doc.tags == ["a", "b", "c"]
    assert doc.front_matter == {"title": "Toml page", "tags": "a, b ,c", "date": "2023-05-06"}
    bad = parse_document("t.md", "+++\ntitle = \n+++\nBody\n")
    assert bad.problems == ["front matter: invalid TOML (Invalid value (at line 2, column 9))"]
    assert bad.blocks[0].text == "+++\ntitle = \n+++\nBody"
    assert sections(doc) == [((), "Body here.")]


def test_title_falls_back_to_first_h1_then_stem() -> None:
    assert parse_document("x/page.md", "## Sub\n\n# Main title\n\ntext").title == "Main title"
    assert parse_document("x/page.md", "just text").title == "page"


def test_horizontal_rule_at_top_is_not_front_matter() -> None:
    text = "---\n\nSome intro prose here.\n\n---\n\n# Heading\n\nBody.\n"
    doc = parse_document("hr.md", text)
    check_invariants(doc)
    assert doc.front_matter == {}
    assert doc.problems == ["front matter: not a YAML mapping (got str); indexed as body text"]
    assert doc.blocks[0].start_char == 0
    assert doc.blocks[0].text == "---\n\nSome intro prose here.\n\n---"
    assert sections(doc)[-1] == (("Heading",), "# Heading\n\nBody.")


def test_lone_thematic_break_is_not_front_matter() -> None:
    doc = parse_document("hr.md", "---\nJust text\n")
    assert doc.problems == []
    assert sections(doc) == [((), "---\nJust text")]


def test_malformed_yaml_body_still_indexed() -> None:
    text = "---\ntitle: ok\ntags: [unclosed\nfoo: bar\n---\n# Real heading\n\nBody text.\n"
    doc = parse_document("bad.md", text)
    check_invariants(doc)
    assert doc.front_matter == {}
    assert doc.problems == ["front matter: invalid YAML (line 4: did not find expected ',' or ']')"]
    assert doc.title == "Real heading"
    assert sections(doc) == [
        ((), "---\ntitle: ok\ntags: [unclosed\nfoo: bar\n---"),
        (("Real heading",), "# Real heading\n\nBody text."),
    ]


def test_prose_between_rules_that_fails_yaml_keeps_its_headings() -> None:
    text = "---\n# Intro\n\n- a: b\nplain: [\n---\n\n# Next\n\nBody\n"
    doc = parse_document("rules.md", text)
    check_invariants(doc)
    assert doc.problems and doc.problems[0].startswith("front matter: invalid YAML")
    assert [b.heading_path for b in doc.blocks] == [(), ("Intro",), ("Next",)]


def test_empty_front_matter_and_front_matter_only() -> None:
    assert parse_document("e.md", "---\n---\nBody\n").blocks[0].text == "Body"
    doc = parse_document("only.md", "---\ntitle: Only\n---\n")
    assert doc.blocks == [] and doc.title == "Only"


def test_headings_inside_fences_are_ignored() -> None:
    text = (
        "# Top\n\n```bash\n# not a heading\necho hi\n```\n\n~~~\n## also not\n~~~\n\n"
        "> # quoted, not a section\n\n## Real\n\nx\n"
    )
    doc = parse_document("f.md", text)
    check_invariants(doc)
    assert [b.heading_path for b in doc.blocks] == [("Top",), ("Top", "Real")]
    assert "# not a heading" in doc.blocks[0].text


def test_heading_text_is_plain_and_anchor_stripped() -> None:
    doc = parse_document("h.md", "## The `config` [file](x.md) {#cfg}\n\ntext\n")
    assert doc.blocks[0].heading_path == ("The config file",)


def test_long_section_split_with_overlap() -> None:
    paragraphs = [f"Paragraph number {i}. " + "lorem ipsum dolor " * 20 for i in range(30)]
    text = "# Title\n\n## Long\n\n" + "\n\n".join(paragraphs) + "\n"
    doc = parse_document("long.md", text)
    check_invariants(doc)
    long_blocks = [b for b in doc.blocks if b.heading_path == ("Title", "Long")]
    assert len(long_blocks) >= 5
    for first, second in zip(long_blocks, long_blocks[1:], strict=False):
        assert first.start_char < second.start_char < first.end_char  # overlapping cuts
        assert second.text.startswith("Paragraph number") or second.text[0].isalpha()


def _notebook(cells: list[dict], lang: str = "python") -> str:
    return json.dumps({"cells": cells, "metadata": {"language_info": {"name": lang}}, "nbformat": 4})


def test_notebook_cells() -> None:
    big = "x = 1\n" * 50
    text = _notebook(
        [
            {"cell_type": "markdown", "source": ["# Analysis\n", "\n", "Intro."]},
            {"cell_type": "code", "source": big, "outputs": [{"text": "IGNORED OUTPUT"}]},
            {"cell_type": "code", "source": ""},
            {"cell_type": "markdown", "source": "## Results\n\nShort."},
            {"cell_type": "code", "source": "print(2)"},
        ]
    )
    doc = parse_document("nb/a.ipynb", text)
    check_invariants(doc)
    assert doc.kind == "notebook"
    assert doc.title == "Analysis"
    assert "IGNORED OUTPUT" not in doc.text
    assert doc.text == (
        "# Analysis\n\nIntro.\n\n```python\n" + big.rstrip() + "\n```\n\n"
        "## Results\n\nShort.\n\n```python\nprint(2)\n```"
    )
    # The heading path ends with the block's cells, numbered as Jupyter does (the empty cell 3 counts).
    assert sections(doc) == [
        (("Analysis", "cell 1"), "# Analysis\n\nIntro."),
        (("Analysis", "cell 2"), "```python\n" + big.rstrip() + "\n```"),
        (("Analysis", "Results", "cells 4-5"), "## Results\n\nShort.\n\n```python\nprint(2)\n```"),
    ]
    assert [block_location("notebook", b.heading_path, b.start_line, b.end_line) for b in doc.blocks] == [
        "cell 1", "cell 2", "cells 4-5"]


def test_malformed_notebook_raises() -> None:
    with pytest.raises(ParseError, match="invalid notebook JSON"):
        parse_document("bad.ipynb", '{"cells": [')
    with pytest.raises(ParseError) as raised:  # the decoder's words with the position they refer to
        parse_document("bad.ipynb", '{"cells": ["abc')
    assert str(raised.value) == "bad.ipynb: invalid notebook JSON (Unterminated string starting at line 1, column 12)"
    with pytest.raises(ParseError, match="no list of cell objects"):
        parse_document("bad.ipynb", '{"metadata": {}}')


def test_notebook_with_hostile_metadata_is_indexed() -> None:
    """Attack session 31: a notebook whose metadata has another shape than Jupyter writes was not
    indexed at all ("parser failed: AttributeError: 'list' object has no attribute 'get'", or
    "ValueError: Exceeds the limit (4300 digits)" for a long integer), and a kernel language name
    holding a newline ended the code fence and wrote its own lines into the document's text."""
    cells = [{"cell_type": "code", "source": "x = 1"}]
    for metadata in ({"language_info": ["r"]}, {"language_info": "r", "kernelspec": 7},
                     {"language_info": {"name": "py\n```\n# Injected"}}, {"language_info": {"name": {"a": 1}}},
                     {"kernelspec": {"language": "x" * 65}}, {"language_info": {"name": "a`b"}}):
        doc = parse_document("nb.ipynb", json.dumps({"cells": cells, "metadata": metadata}))
        assert doc.text == "```python\nx = 1\n```", metadata
    doc = parse_document("nb.ipynb", json.dumps({"cells": cells, "metadata": {
        "language_info": ["r"], "kernelspec": {"language": "Wolfram Language"}}}))
    assert doc.text == "```Wolfram Language\nx = 1\n```"
    big = "9" * 5000
    doc = parse_document("nb.ipynb", '{"cells": [{"cell_type": "code", "source": ["n = ", ' + big + ']}], '
                         '"metadata": {"size": ' + big + ', "small": 12}}')
    assert doc.text == f"```python\nn = {big}\n```"


def test_deeply_nested_notebook_is_a_parse_error() -> None:
    """A notebook nested past the JSON decoder's recursion limit is refused as invalid notebook JSON
    (it was "parser failed: RecursionError: maximum recursion depth exceeded ...")."""
    for text in ("[" * 100_000 + "]" * 100_000, '{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}"):
        with pytest.raises(ParseError) as raised:
            parse_document("nb.ipynb", text)
        assert str(raised.value) == "nb.ipynb: invalid notebook JSON (arrays or objects nested too deeply)"


def test_code_windows_with_overlap_and_python_scopes() -> None:
    lines = ["import os", ""] + [f"def f{i}():" if i % 40 == 0 else f"    x = {i}" for i in range(128)]
    text = "\n".join(lines) + "\n"
    doc = parse_document("pkg/mod.py", text)
    check_invariants(doc)
    assert doc.kind == "code" and doc.title == "mod.py"
    assert [(b.start_line, b.end_line) for b in doc.blocks] == [(1, 60), (51, 110), (101, 130)]
    assert [b.heading_path for b in doc.blocks] == [(), ("f40",), ("f80",)]


def test_config_and_minified_code_are_capped() -> None:
    doc = parse_document("app.min.js", "var a=1;" * 1000)  # 8,000 characters on one line
    check_invariants(doc)
    assert len(doc.blocks) >= 8000 // CHUNK_MAX_CHARS + 1
    assert max(len(b.text) for b in doc.blocks) <= CHUNK_MAX_CHARS
    assert doc.blocks[0].start_char == 0 and doc.blocks[-1].end_char == 8000
    cfg = parse_document("settings.yaml", "a: 1\nb: 2\n")
    assert cfg.kind == "config" and sections(cfg) == [((), "a: 1\nb: 2")]


def test_plain_text_paragraph_packing() -> None:
    paragraphs = [f"para {i} " + "w" * 500 for i in range(9)]  # 507 characters each
    per_block = (CHUNK_MAX_CHARS + 3) // 510  # paragraphs (with 3-character separators) per block
    text = "\n\n\n".join(paragraphs)
    doc = parse_document("notes.txt", text)
    check_invariants(doc)
    assert doc.kind == "text" and doc.title == "notes.txt"
    expected = ["\n\n\n".join(paragraphs[i : i + per_block]) for i in range(0, len(paragraphs), per_block)]
    assert [b.text for b in doc.blocks] == expected


def test_unknown_extension_parsed_as_text() -> None:
    assert parse_document("x.weird", "hello").kind == "text"


_MD_LINES = st.sampled_from(
    ["# A", "## B c", "### D", "####### seven", "---", "+++", "title: x", "tags: [a", "```", "~~~py",
     "text line", "Sentence one. Sentence two!", "", "", "   ", "    indented", "> # quoted", "- item",
     "Setext", "===", "x" * 300, "word " * 100, "é ü 中文", "\t"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_MD_LINES, max_size=80), st.sampled_from(["\n", ""]))
def test_markdown_block_invariants_property(lines: list[str], tail: str) -> None:
    text = "\n".join(lines) + tail
    doc = parse_document("p.md", text)
    assert doc.text == text
    check_invariants(doc)
    again = parse_document("p.md", text)
    assert again == doc


def test_kind_for_path_reads_names_as_pathlib_does() -> None:
    from pathlib import PurePosixPath

    from sleuth.ingest.parsers import kind_for_path

    def reference(rel: str) -> str | None:  # the name, suffix and stem from pathlib
        name = PurePosixPath(rel).name.lower()
        renamed = "x/" + name if name not in ("", ".") else rel
        return kind_for_path(renamed) if name else kind_for_path(rel)

    for rel, kind in (("a/b.MD", "markdown"), ("Makefile", "code"), ("x/LICENSE.MIT", "text"), ("a/.env.example",
                      "config"), ("notes.", None), (".md", None), ("a/b/", None), ("dir.md/", "markdown"),
                      ("dir.md/.", "markdown"), ("a.tar.gz", None), ("x.ipynb", "notebook"), ("p.PDF", "pdf")):
        assert kind_for_path(rel) == kind == reference(rel), rel


@pytest.mark.parametrize(("text", "block", "lines"), [
    ("---\ntitle: Bee\ndescription: quokka habitat notes\n---\n\n# Bee\n\nBody.\n", "quokka habitat notes", (3, 3)),
    ('---\ntitle: Bee\ndescription: "quokka: habitat notes"\ntags: [a]\n---\n# Bee\nBody\n',
     "quokka: habitat notes", (3, 3)),
    ("---\ntitle: Bee\ndescription: >\n  quokka habitat\n  notes here\nweight: 3\n---\n# Bee\nBody\n",
     "quokka habitat\n  notes here", (4, 5)),
    ("---\ntitle: Bee\ndescription: quokka habitat\n  notes continued\nweight: 3\n---\n# Bee\nBody\n",
     "quokka habitat\n  notes continued", (3, 4)),
    ('+++\ntitle = "Bee"\ndescription = """\nquokka habitat\nnotes\n"""\n+++\n# Bee\nBody\n',
     "quokka habitat\nnotes", (4, 5)),
    ("---\nsummary: 'quokka summary'\n---\nBody\n", "quokka summary", (2, 2)),
    # attack round of stop 38: a line like the key inside another value's string, a key given twice
    ('+++\nnotes = """\ndescription = "zulufake hidden"\n"""\ndescription = "zulureal value"\n+++\n# Body\nbody\n',
     "zulureal value", (5, 5)),
    ('---\ntitle: "hello\ndescription: FAKE\n  world"\ndescription: real words\n---\n# Body\nbody\n', "real words",
     (5, 5)),
    ("---\ndescription: FIRST\ndescription: SECOND\n---\n# Body\nbody\n", "SECOND", (3, 3)),
    ('---\ndescription: "a \\"quoted\\" word"\n---\n# Body\nbody\n', 'a \\"quoted\\" word', (2, 2)),
    # attack round 2 of stop 38: a comment, an anchor or a tag is not the summary's text
    ("---\ndescription: Setup guide # internal: codename bluefalcon\n---\n# B\nbody\n", "Setup guide", (2, 2)),
    ('---\ndescription: "Setup guide"  # secret note\n---\n# B\nbody\n', "Setup guide", (2, 2)),
    ('+++\ndescription = "Setup guide" # toml secret\n+++\n# B\nbody\n', "Setup guide", (2, 2)),
    ("---\ndescription: &d !!str Setup guide\n---\n# B\nbody\n", "Setup guide", (2, 2)),
    ('---\ntitle: T\nother: "x\ndescription: Setup guide plus text of another key\n"\ndescription: "Setup\\tguide"\n'
     '---\n# B\nbody\n', "Setup\\tguide", (6, 6)),
    ('---\ndescription: "quokka habitat\n  notes continued"\nweight: 3\n---\n# Bee\nBody\n',
     "quokka habitat\n  notes continued", (2, 3)),
])
def test_a_pages_front_matter_summary_is_a_block_of_its_own(text: str, block: str, lines: tuple[int, int]) -> None:
    """A new user's trial: `description:` of the front matter was not searched (the front matter is not).
    It is the page's first block, its text the file's own (so its lines and `sleuth get` show it)."""
    doc = parse_document("page.md", text)
    first = doc.blocks[0]
    assert (first.text, first.heading_path, (first.start_line, first.end_line)) == (block, (), lines)
    assert text[first.start_char:first.end_char] == first.text
    assert len(doc.blocks) == 2


@pytest.mark.parametrize("text", [
    "---\ntitle: Bee\nparams:\n  description: not the page's\n---\n# Bee\nBody\n",  # nested: not the page's
    "---\ndescription: ''\n---\n# Bee\nBody\n",  # blank
    "---\ndescription: [a, list]\n---\n# Bee\nBody\n",  # not text
    "---\ndescription: The bee body.\n---\n# Bee\nbody, the\n",  # every word of it on the page already
    "---\nx: &a aliased words\ndescription: *a\n---\n# Bee\nBody\n",  # its words are not on its line
])
def test_no_summary_block_without_a_top_level_summary_text(text: str) -> None:
    assert [b.heading_path for b in parse_document("page.md", text).blocks] == [("Bee",)]
