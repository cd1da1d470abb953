"""`sleuth guides build` logic: which files, in which order, which fields, which errors."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from sleuth.errors import ConfigError
from sleuth.guides import load_guides
from sleuth.guides.build import GuideBuildError, build_guides, normalize_base_url, write_guides
from tests.guides.fixture import BASE_URL, SEED_GUIDES, write_content


def md(folder: Path, name: str, front: str, body: str = "Body text.\n") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{front}\n{body}", encoding="utf-8")
    return path


def test_seed_fixture_builds_in_sorted_name_order(tmp_path: Path) -> None:
    content = write_content(tmp_path / "blog")
    (content / "notes.txt").write_text("not a guide", encoding="utf-8")
    md(content, "drafts/hidden.md", "---\ntitle: Draft\nexcerpt: Draft\n---")  # subfolders: only with --recursive
    guides = build_guides(content, BASE_URL).guides
    assert [g.url for g in guides] == [BASE_URL + slug for slug, _ in SEED_GUIDES]
    vendor = next(g for g in guides if g.url.endswith("/software-vendor-management"))
    assert vendor.excerpt == "Vendor management - contracts, reviews and exits - for executives who do not code."
    assert vendor.tags == ["Vendor Management", "Pineapples"]


def test_fields_tags_and_dashes(tmp_path: Path) -> None:
    md(tmp_path, "b.mdx", '---\ntitle: "B \u2014 two"\nexcerpt: >\n  folded\n  lines\ntags: solo\n---')
    md(tmp_path, "a.md", "---\ntitle: 2024\nexcerpt: x \u2013 y\n---")
    md(tmp_path, "c.md", "+++\ntitle = 'TOML guide'\nexcerpt = 'From TOML'\ntags = ['t']\n+++")
    rows = [g.model_dump() for g in build_guides(tmp_path, "https://x.dev/guides").guides]
    assert rows == [
        {"title": "2024", "excerpt": "x - y", "tags": [], "url": "https://x.dev/guides/a"},
        {"title": "B - two", "excerpt": "folded lines", "tags": ["solo"], "url": "https://x.dev/guides/b"},
        {"title": "TOML guide", "excerpt": "From TOML", "tags": ["t"], "url": "https://x.dev/guides/c"},
    ]


@pytest.mark.parametrize(
    ("front", "problem"),
    [
        ("---\nexcerpt: E\n---", "front matter has no 'title'"),
        ("---\ntitle: T\n---", "front matter has no 'excerpt'"),
        ("---\ntitle: '  '\nexcerpt: E\n---", "front matter has no 'title'"),
        ("no front matter at all", "front matter has no 'title' and no 'excerpt'"),
        ("---\ntitle: [unclosed\n---", "malformed front matter"),
        ("---\ntitle: [a, b]\nexcerpt: E\n---", "front matter 'title' must be text, got a list"),
        ("---\ntitle: T\nexcerpt: E\ntags: {a: 1}\n---", "front matter 'tags' must be a list of tags"),
    ],
)
def test_a_bad_file_fails_the_build_naming_it(tmp_path: Path, front: str, problem: str) -> None:
    md(tmp_path, "good.md", "---\ntitle: T\nexcerpt: E\n---")
    bad = md(tmp_path, "bad.md", front)
    with pytest.raises(GuideBuildError) as err:
        build_guides(tmp_path, BASE_URL)
    assert str(err.value).startswith(f"{bad}: {problem}")


def test_skip_incomplete_lists_what_it_skipped(tmp_path: Path) -> None:
    md(tmp_path, "good.md", "---\ntitle: T\ndescription: D\n---")
    bad = md(tmp_path, "partial.md", "---\n_comment: Do not remove front matter.\n---")
    report = build_guides(tmp_path, BASE_URL, excerpt_key="description", skip_incomplete=True)
    assert [g.excerpt for g in report.guides] == ["D"]
    assert report.skipped == [(str(bad), "front matter has no 'title' and no 'description'")]


def test_not_utf8_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "latin1.md").write_bytes("---\ntitle: caf\xe9\n---".encode("latin-1"))
    with pytest.raises(GuideBuildError, match=r"latin1\.md: not UTF-8 text"):
        build_guides(tmp_path, BASE_URL)


def test_recursive_reads_subfolders_and_archives(tmp_path: Path) -> None:
    content = tmp_path / "site"
    md(content, "top.md", "---\ntitle: Top\ndescription: top page\n---")
    md(content, "guides/_index.md", "---\ntitle: Guides\ndescription: the section\n---")
    md(content, "guides/how-to.md", "---\ntitle: How to\ndescription: steps\nkeywords: [steps]\n---")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        # Slugs are taken below the folder holding every markdown member (content/en/, as in the Hugo bundle).
        for name, text in [("content/en/_index.md", "---\ntitle: Docs\ndescription: home\n---\n"),
                           ("content/en/functions/os/Getenv.md", "---\ntitle: os.Getenv\ndescription: env\n---\n"),
                           ("content/en/functions/_index.md", "---\ntitle: Functions\ndescription: all\n---\n"),
                           ("content/en/logo.png", "binary")]:
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (content / "bundle.tar.gz").write_bytes(buf.getvalue())
    guides = build_guides(content, "https://docs.dev", excerpt_key="description", tags_key="keywords",
                          recursive=True).guides
    assert [(g.title, g.url, g.tags) for g in guides] == [
        ("Docs", "https://docs.dev/", []),
        ("Functions", "https://docs.dev/functions/", []),
        ("os.Getenv", "https://docs.dev/functions/os/Getenv", []),
        ("Guides", "https://docs.dev/guides/", []),
        ("How to", "https://docs.dev/guides/how-to", ["steps"]),
        ("Top", "https://docs.dev/top", []),
    ]


def test_no_guide_files_is_an_error_with_a_hint(tmp_path: Path) -> None:
    md(tmp_path, "sub/a.md", "---\ntitle: T\nexcerpt: E\n---")
    with pytest.raises(GuideBuildError, match=r"no \.md or \.mdx files directly in .*--recursive"):
        build_guides(tmp_path, BASE_URL)
    with pytest.raises(GuideBuildError, match="content folder not found"):
        build_guides(tmp_path / "missing", BASE_URL)


@pytest.mark.parametrize("url", ["blog/", "ftp://x.dev/", "", "https://", "https://x.dev/a b"])
def test_base_url_must_be_absolute(url: str) -> None:
    with pytest.raises(GuideBuildError, match="--base-url must be an absolute http"):
        normalize_base_url(url)


def test_base_url_gets_a_trailing_slash() -> None:
    assert normalize_base_url("https://x.dev/blog") == "https://x.dev/blog/"
    assert normalize_base_url("http://localhost:1313/") == "http://localhost:1313/"


def test_written_index_round_trips(tmp_path: Path) -> None:
    guides = build_guides(write_content(tmp_path / "blog"), BASE_URL).guides
    write_guides(guides, tmp_path / "guides.json")
    rows = json.loads((tmp_path / "guides.json").read_text(encoding="utf-8"))
    assert all(set(r) == {"title", "excerpt", "tags", "url"} for r in rows)
    assert all("\u2014" not in r["title"] + r["excerpt"] and "\n" not in r["excerpt"] for r in rows)
    assert load_guides(tmp_path / "guides.json") == guides


@pytest.mark.parametrize(
    ("text", "message"),
    [("{}", "expected a JSON array of guides, got dict"), ("[{\"title\": \"T\"}]", "guide 1 is invalid (excerpt"),
     ("not json", "is not valid JSON"),
     # attack session 32 (low): nested past the decoder's limit, a RecursionError traceback from sleuth serve
     ("[" * 100_000 + "]" * 100_000, "is not valid JSON: arrays or objects nested too deeply"),
     ('{"guides": ' + "[" * 100_000 + "]" * 100_000 + "}", "is not valid JSON: arrays or objects nested too deeply")],
)
def test_bad_index_files_are_explained(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "guides.json").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_guides(tmp_path / "guides.json")
    with pytest.raises(ConfigError, match="guides index not found"):
        load_guides(tmp_path / "nope.json")


def test_hostile_guides_are_refused_naming_the_file(tmp_path: Path) -> None:
    from tests.ingest.test_front_matter import billion_laughs

    md(tmp_path, "a.md", "---\ntitle: A\nexcerpt: Fine\n---")
    md(tmp_path, "bomb.md", f"---\n{billion_laughs()}title: Bomb\nexcerpt: Boom\n---")
    with pytest.raises(GuideBuildError, match="bomb.md: malformed front matter .more than 10000 values"):
        build_guides(tmp_path, BASE_URL)
    report = build_guides(tmp_path, BASE_URL, skip_incomplete=True)
    assert [g.title for g in report.guides] == ["A"] and [name for name, _ in report.skipped] == [
        str(tmp_path / "bomb.md")]
    (tmp_path / "bomb.md").unlink()
    outside = md(tmp_path.parent / f"{tmp_path.name}-outside", "secret.md", "---\ntitle: Secret\nexcerpt: S\n---")
    (tmp_path / "link.md").symlink_to(outside)
    with pytest.raises(GuideBuildError, match="link.md: cannot read: is a symlink .not followed."):
        build_guides(tmp_path, BASE_URL)
