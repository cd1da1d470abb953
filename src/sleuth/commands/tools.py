"""``sleuth guides build`` and ``sleuth eval``."""

from __future__ import annotations

from pathlib import Path

import click

from sleuth.commands.options import emit_json, format_option, handle_errors, parse_lanes
from sleuth.errors import ConfigError


@click.group("guides")
def guides_group() -> None:
    """Build the guides index served by the guides tool profile (search_guides)."""


@guides_group.command("build")
@click.argument("content_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--base-url", required=True, help="URL the file slugs are appended to, e.g. https://example.com/blog/.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=Path("guides.json"),
              show_default=True, help="Where to write the index.")
@click.option("--excerpt-key", default="excerpt", show_default=True,
              help="Front-matter key holding the excerpt (e.g. description).")
@click.option("--tags-key", default="tags", show_default=True, help="Front-matter key holding the tags.")
@click.option("--title-key", default="title", show_default=True, help="Front-matter key holding the title.")
@click.option("--recursive", is_flag=True,
              help="Also read subfolders and .tar.gz/.zip archives; slugs become paths (functions/os/Getenv).")
@click.option("--skip-incomplete", is_flag=True,
              help="Skip (and list on stderr) files without a title or excerpt instead of failing.")
@handle_errors
def guides_build_cmd(content_dir: Path, base_url: str, output: Path, excerpt_key: str, tags_key: str,
                     title_key: str, recursive: bool, skip_incomplete: bool) -> None:
    """Index the title, excerpt and tags of each .md/.mdx file's front matter in CONTENT_DIR (bodies are never read)."""
    from sleuth.guides.build import build_guides, write_guides

    report = build_guides(content_dir, base_url, excerpt_key=excerpt_key, tags_key=tags_key, title_key=title_key,
                          recursive=recursive, skip_incomplete=skip_incomplete)
    for name, reason in report.skipped:
        click.echo(f"skipped {name}: {reason}", err=True)
    write_guides(report.guides, output)
    skipped = f" ({len(report.skipped)} skipped)" if report.skipped else ""
    count = len(report.guides)
    click.echo(f"wrote {count} {'guide' if count == 1 else 'guides'} to {output}{skipped}")


@click.command("eval")
@click.argument("dataset_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--lanes", default=None, help="Comma-separated lanes to fuse (default: the default lanes).")
@click.option("--index", "index_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to keep the evaluation index (default: sleuth's cache, so vectors are reused).")
@click.option("--fresh", is_flag=True, help="Start from an empty evaluation index (embeds everything again).")
@format_option
@handle_errors
def eval_cmd(dataset_dir: Path, lanes: str | None, index_dir: Path | None, fresh: bool, fmt: str) -> None:
    """Evaluate ranking on a BEIR-layout dataset: nDCG@10, Recall@100, MRR@10 (default settings)."""
    from sleuth.eval import DatasetError
    from sleuth.eval.run import run_eval

    try:
        result = run_eval(dataset_dir, parse_lanes(lanes), index_dir=index_dir, fresh=fresh)
    except DatasetError as exc:
        raise ConfigError(f"bad dataset: {exc}") from exc
    if fmt == "json":
        emit_json(result.model_dump(by_alias=True))
        return
    click.echo(f"{result.dataset} ({result.documents} documents, {result.queries} queries), "
               f"lanes {','.join(result.lanes)}:")
    click.echo(f"  nDCG@10 {result.ndcg_10:.4f}   Recall@100 {result.recall_100:.4f}   MRR@10 {result.mrr_10:.4f}")
    click.echo(f"  indexed in {result.index_s} s ({result.embedded} blocks embedded), "
               f"{result.query_ms_mean} ms per query")
    for lane, reason in result.unavailable_lanes.items():
        click.echo(f"  lane {lane} unavailable: {reason}")
