from __future__ import annotations

import pytest

from sleuth.ingest.links import (
    FRONT_MATTER_RELATIONS,
    LinkResolver,
    declared_entities,
    extract_links,
    resolve_target,
)
from sleuth.ingest.parsers import parse_document
from sleuth.types import Link


def test_markdown_links_and_wikilinks_in_document_order() -> None:
    text = (
        "Intro [design](../design/overview.md#goals) and [[Retrieval Notes|notes]].\n\n"
        "See [[ADR-0002#Consequences]], <file:///srv/docs/guide.md> and [the plan](plans/q3.md?rev=2).\n\n"
        "![[Embedded note]] and [ref link][r].\n\n"
        "[r]: ./reference.md\n"
    )
    assert extract_links(text, {}) == [
        Link("../design/overview.md", "link", "design"),
        Link("Retrieval Notes", "wikilink", "notes"),
        Link("ADR-0002", "wikilink", ""),
        Link("/srv/docs/guide.md", "link", ""),
        Link("plans/q3.md", "link", "the plan"),
        Link("Embedded note", "wikilink", ""),
        Link("./reference.md", "link", "ref link"),
    ]


def test_links_in_code_are_ignored() -> None:
    text = (
        "```markdown\n[fenced](fenced.md) and [[Fenced]]\n```\n\n"
        "    [indented](indented.md) [[Indented]]\n\n"
        "Inline `[code](code.md)` and `[[Code]]`, but [real](real.md) and [[Real]].\n\n"
        "~~~\n[[Tilde]]\n~~~\n"
    )
    assert extract_links(text, {}) == [Link("real.md", "link", "real"), Link("Real", "wikilink", "")]


def test_external_urls_anchors_and_images_are_not_links() -> None:
    text = (
        "[web](https://example.org/a.md) [plain](http://x.y) [mail](mailto:a@b.c) [proto](//cdn/x.md) "
        "[tel](tel:123) [same page](#section) [[#Heading only]] ![figure](fig.png) <https://auto.link>\n"
        "[drive](C:/notes/x.md)\n"
    )
    assert extract_links(text, {}) == [Link("C:/notes/x.md", "link", "drive")]


def test_targets_are_percent_decoded_and_duplicates_keep_the_first() -> None:
    text = "[one](<my note.md>) [two](my%20note.md#x) [[Target]] [[Target|again]] [three](caf%C3%A9.md)\n"
    assert extract_links(text, {}) == [
        Link("my note.md", "link", "one"),
        Link("Target", "wikilink", ""),
        Link("café.md", "link", "three"),
    ]


def test_wikilinks_survive_emphasis_characters_and_line_breaks_end_them() -> None:
    text = "[[snake_case_note]] [[a *starred* name]] [[broken\nacross lines]]\n"
    assert extract_links(text, {}) == [
        Link("snake_case_note", "wikilink", ""),
        Link("a *starred* name", "wikilink", ""),
    ]


def test_link_label_collapses_whitespace_and_keeps_code() -> None:
    links = extract_links("[the `Engine`\nclass](src/engine.md)\n", {})
    assert links == [Link("src/engine.md", "link", "the Engine class")]


def test_front_matter_relations_come_first() -> None:
    front_matter = {
        "title": "ADR 3",
        "Supersedes": ["ADR-0001.md", "[[ADR 2|second]]", 7, None],
        "depends-on": "../plans/q3.md#milestone",
        "related": "https://example.org",
        "see_also": "[[Glossary]]",
        "tags": ["x"],
    }
    assert extract_links("Body [[Glossary]] link.\n", front_matter) == [
        Link("ADR-0001.md", "supersedes", ""),
        Link("ADR 2", "supersedes", "second"),
        Link("../plans/q3.md", "depends_on", ""),
        Link("Glossary", "see_also", ""),
        Link("Glossary", "wikilink", ""),
    ]


def test_front_matter_relation_names() -> None:
    for key in ("related", "supersedes", "superseded_by", "depends_on", "blocks", "implements", "refs",
                "references", "parent", "see_also"):
        assert key in FRONT_MATTER_RELATIONS
        assert extract_links("", {key: "x.md"}) == [Link("x.md", key, "")]
    assert extract_links("", {"Superseded By": "new.md"}) == [Link("new.md", "superseded_by", "")]
    assert extract_links("", {"author": "x.md", "links": "y.md"}) == []


def test_declared_entities() -> None:
    assert declared_entities({"entities": ["SQLite", " tantivy ", "sqlite", "", 3], "entity": "RRF  fusion",
                              "tags": ["draft"]}) == ["SQLite", "tantivy", "RRF fusion"]
    assert declared_entities({"entity": "Smith, J."}) == ["Smith, J."]
    assert declared_entities({"tags": ["a", "b"]}) == []
    assert declared_entities({}) == []


def test_parse_document_fills_links_and_entities() -> None:
    text = (
        "---\ntitle: Q3 plan\nentities: [SQLite]\nsupersedes: q2.md\n---\n"
        "# Plan\n\nFollows [[ADR-0003]] and [the design](../design.md).\n\n```\n[[Not this]]\n```\n"
    )
    doc = parse_document("plans/q3.md", text)
    assert doc.links == [
        Link("q2.md", "supersedes", ""),
        Link("ADR-0003", "wikilink", ""),
        Link("../design.md", "link", "the design"),
    ]
    assert doc.entities == ["SQLite"]
    assert parse_document("src/x.py", "# [[Not a link]]\n").links == []


def test_notebook_links_come_from_markdown_cells_only() -> None:
    import json

    nb = {"cells": [
        {"cell_type": "markdown", "source": ["# Run 12\n", "Uses [[Dataset v2]] and [config](conf/run.yaml)."]},
        {"cell_type": "code", "source": ["# [[Not a link]]\n", "x = '[a](b.md)'"]},
    ], "metadata": {}}
    doc = parse_document("exp/run12.ipynb", json.dumps(nb))
    assert doc.links == [Link("Dataset v2", "wikilink", ""), Link("conf/run.yaml", "link", "config")]


# --------------------------------------------------------------------------- resolution

KNOWN = [
    "README.md",
    "docs/design/overview.md",
    "docs/guide.md",
    "docs/My Note.md",
    "docs/plans/q3.md",
    "docs/plans/README.md",
    "decisions/ADR-0002-use-sqlite.md",
    "notes/guide.md",
    "papers/attention.pdf",
    "bundle.zip/inner/a.md",
    "bundle.zip/inner/b.md",
]
TITLES = {
    "decisions/ADR-0002-use-sqlite.md": "Use SQLite for the catalog",
    "docs/design/overview.md": "Design overview",
    "papers/attention.pdf": "Attention Is All You Need",
}


@pytest.mark.parametrize(
    ("target", "from_path", "expected"),
    [
        ("design/overview.md", "docs/guide.md", "docs/design/overview.md"),
        ("./design/overview.md", "docs/guide.md", "docs/design/overview.md"),
        ("../guide.md", "docs/plans/q3.md", "docs/guide.md"),
        ("../../README.md", "docs/plans/q3.md", "README.md"),
        ("../design/overview", "docs/plans/q3.md", "docs/design/overview.md"),  # extension omitted
        ("My%20Note.md", "docs/guide.md", "docs/My Note.md"),  # percent-decoded
        ("My Note", "docs/guide.md", "docs/My Note.md"),
        ("my note", "README.md", "docs/My Note.md"),  # wikilink by stem, case-insensitive
        ("plans/", "docs/guide.md", "docs/plans/README.md"),  # folder -> its README
        ("/docs/guide.md", "notes/guide.md", "docs/guide.md"),  # leading slash: root-relative
        ("docs/guide", "notes/guide.md", "docs/guide.md"),  # root-relative fallback ([[docs/guide]])
        ("guide", "notes/x.md", "notes/guide.md"),  # stem tie: the linking file's folder wins
        ("guide", "papers/x.md", "docs/guide.md"),  # stem tie elsewhere: shortest, then alphabetical
        ("Use SQLite for the catalog", "docs/guide.md", "decisions/ADR-0002-use-sqlite.md"),  # title
        ("attention is all you need", "README.md", "papers/attention.pdf"),
        ("attention.pdf", "README.md", "papers/attention.pdf"),  # file name with extension
        ("b.md", "bundle.zip/inner/a.md", "bundle.zip/inner/b.md"),  # inside an archive
        ("overview.md", "docs/guide.md", "docs/design/overview.md"),  # bare name found elsewhere
        ("docs\\guide.md", "README.md", "docs/guide.md"),  # backslashes
        ("DOCS/GUIDE.MD", "README.md", "docs/guide.md"),  # unique case-insensitive path
    ],
)
def test_resolve_target(target: str, from_path: str, expected: str) -> None:
    assert resolve_target(target, from_path, KNOWN, TITLES) == expected


@pytest.mark.parametrize(
    ("target", "from_path"),
    [
        ("missing.md", "docs/guide.md"),
        ("Unknown Entity", "docs/guide.md"),
        ("../../../README.md", "docs/guide.md"),  # climbs above the root
        ("design/missing/overview.md", "docs/guide.md"),  # a path is not matched by name alone
        ("attention", "README.md"),  # only markdown extensions may be omitted
        ("", "README.md"),
    ],
)
def test_unresolvable_targets(target: str, from_path: str) -> None:
    assert resolve_target(target, from_path, KNOWN, TITLES) is None


def test_case_insensitive_path_must_be_unique() -> None:
    resolver = LinkResolver(["a/Note.md", "a/note.md"], {})
    assert resolver.resolve("a/note.md", "x.md") == "a/note.md"
    assert resolver.resolve("a/NOTE.md", "x.md") is None
    assert resolver.resolve("NOTE", "a/x.md") == "a/Note.md"  # by name: same folder, then alphabetical


def test_titles_of_unknown_paths_are_ignored() -> None:
    assert resolve_target("Ghost", "a.md", ["a.md"], {"gone.md": "Ghost"}) is None


def test_toml_table_headers_and_template_targets_are_not_links() -> None:
    text = (
        "{{< code-toggle file=hugo >}}\n[[menus.main]]\nname = 'Home'\nweight = 10\n{{< /code-toggle >}}\n\n"
        "[[Standalone note]]\nplain prose after it.\n\n"
        "[template]({{% eturl rss %}}) [go]({{ .Site.BaseURL }}/x.md) [[{{ .Title }}]] [ok](ok.md)\n"
    )
    assert extract_links(text, {}) == [
        Link("Standalone note", "wikilink", ""),
        Link("ok.md", "link", "ok"),
    ]


def test_tokens_parsed_once_give_the_same_links() -> None:
    from sleuth.ingest.links import markdown_tokens

    text = "# T\n\n[a](a.md) [[B]]\n"
    assert extract_links(text, {}, markdown_tokens(text)) == extract_links(text, {}) == [
        Link("a.md", "link", "a"), Link("B", "wikilink", "")
    ]
