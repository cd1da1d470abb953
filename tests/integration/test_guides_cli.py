"""`sleuth guides build` through the real command line, on fixture content and on the Hugo docs."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.conftest import HUGO_TAR, run_cli
from tests.integration.mcp_session import session, text_of

HUGO_RENDER_HOOK_ANSWER = """2 guides matched "render hook".
1. Blockquote render hooks
https://gohugo.io/render-hooks/blockquotes
Create blockquote render hook templates to override the rendering of Markdown blockquotes to HTML.
2. Code block render hooks
https://gohugo.io/render-hooks/code-blocks
Create code block render hook templates to override the rendering of Markdown code blocks to HTML."""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


def test_count_is_printed_and_the_index_written(tmp_path: Path) -> None:
    write(tmp_path / "blog", "b-post.md", "---\ntitle: B post\nexcerpt: Second\ntags: [x]\n---\nbody\n")
    write(tmp_path / "blog", "a-post.mdx", "---\ntitle: A post\nexcerpt: First\n---\nbody\n")
    proc = run_cli("guides", "build", "blog", "--base-url", "https://x.dev/blog", cwd=tmp_path)
    assert proc.stdout == "wrote 2 guides to guides.json\n" and proc.stderr == ""
    assert json.loads((tmp_path / "guides.json").read_text(encoding="utf-8")) == [
        {"title": "A post", "excerpt": "First", "tags": [], "url": "https://x.dev/blog/a-post"},
        {"title": "B post", "excerpt": "Second", "tags": ["x"], "url": "https://x.dev/blog/b-post"},
    ]


def test_missing_title_or_excerpt_fails_naming_the_file(tmp_path: Path) -> None:
    write(tmp_path / "blog", "good.md", "---\ntitle: Good\nexcerpt: Fine\n---\n")
    bad = write(tmp_path / "blog", "no-excerpt.md", "---\ntitle: Half\n---\n")
    proc = run_cli("guides", "build", str(tmp_path / "blog"), "--base-url", "https://x.dev/", "-o",
                   str(tmp_path / "g.json"), check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"error: {bad}: front matter has no 'excerpt'\n"
    assert not (tmp_path / "g.json").exists()
    skip = run_cli("guides", "build", str(tmp_path / "blog"), "--base-url", "https://x.dev/", "-o",
                   str(tmp_path / "g.json"), "--skip-incomplete")
    assert skip.stdout == f"wrote 1 guide to {tmp_path / 'g.json'} (1 skipped)\n"
    assert skip.stderr == f"skipped {bad}: front matter has no 'excerpt'\n"


def test_bad_arguments_are_one_line(tmp_path: Path) -> None:
    proc = run_cli("guides", "build", str(tmp_path), "--base-url", "example.com", check=False)
    assert proc.returncode == 2 and proc.stderr.startswith("error: --base-url must be an absolute http(s) URL")
    proc = run_cli("guides", "build", str(tmp_path / "nope"), "--base-url", "https://x.dev/", check=False)
    assert proc.returncode == 2 and proc.stderr == f"error: content folder not found: {tmp_path / 'nope'}\n"


def test_hugo_docs_archive_builds_an_index_search_guides_answers(tmp_path: Path) -> None:
    out = tmp_path / "hugo-guides.json"
    proc = run_cli("guides", "build", str(HUGO_TAR.parent), "--base-url", "https://gohugo.io/", "-o", str(out),
                   "--excerpt-key", "description", "--tags-key", "keywords", "--recursive", "--skip-incomplete")
    assert proc.stdout == f"wrote 745 guides to {out} (247 skipped)\n"
    assert len(proc.stderr.splitlines()) == 247 and "_common/_index.md: front matter has no 'title'" in proc.stderr
    rows = json.loads(out.read_text(encoding="utf-8"))
    getenv = next(r for r in rows if r["title"] == "os.Getenv")
    assert getenv["url"] == "https://gohugo.io/functions/os/Getenv"
    assert getenv["excerpt"].startswith("Returns the value of an environment variable")
    answer = session(["--tools", "guides", "--guides", str(out)],
                     [("search_guides", {"query": "render hook", "limit": 2})], cwd=tmp_path)
    assert text_of(answer["results"][0]) == HUGO_RENDER_HOOK_ANSWER


def test_hugo_sample_folder_builds_recursively(hugo_sample: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    proc = run_cli("guides", "build", str(hugo_sample), "--base-url", "https://gohugo.io/", "-o", str(out),
                   "--excerpt-key", "description", "--recursive")
    assert proc.stdout == f"wrote 39 guides to {out}\n"
    urls = [r["url"] for r in json.loads(out.read_text(encoding="utf-8"))]
    assert "https://gohugo.io/render-hooks/" in urls and "https://gohugo.io/functions/os/Getenv" in urls


def test_guides_commands_have_help() -> None:
    for args in (["guides"], ["guides", "build"]):
        out = run_cli(*args, "--help").stdout
        assert out.startswith(f"Usage: sleuth {' '.join(args)}") and len(out.splitlines()) > 3
    serve = run_cli("serve", "--help").stdout
    assert "--tools PROFILE[,PROFILE...]" in serve and "--guides FILE" in serve and "--events FILE" in serve
