"""``sleuth search``, ``sleuth get`` and ``sleuth projects``: reading the index."""

from __future__ import annotations

from pathlib import Path

import click

from sleuth.commands.options import (
    LanesOption,
    emit_json,
    format_option,
    handle_errors,
    index_option,
    parse_lanes,
    when,
)
from sleuth.engine import Engine
from sleuth.ingest.names import printable
from sleuth.types import SearchRequest, SearchResponse


def render_text(resp: SearchResponse, explain: bool) -> str:
    """A search response as text: rank, score, path, title, heading, snippet (and the trace)."""
    out: list[str] = [f"(lane {lane} unavailable: {why})" for lane, why in resp.unavailable_lanes.items()]
    if not resp.hits:
        return "\n".join([*out, f"no results for {resp.query!r}" + (f": {resp.notice}" if resp.notice else "")])
    if resp.notice:
        out.append(f"({resp.notice})")
    for h in resp.hits:
        heading = " > ".join(h.heading_path)
        out.append(f"{h.rank:>2}. {h.path}  [{h.project}]  score {h.score:.4f}  lines {h.lines[0]}-{h.lines[1]}")
        out.append(f"    {h.title}" + (f"  §  {heading}" if heading else ""))
        out.append("    " + " ".join(h.snippet.split())[:240])
        out.append(f"    id {h.doc_id}  lanes {', '.join(h.sources)}"
                   + ("  (semantic-only match: no word of the query in it)" if h.semantic_only else ""))
        if explain and h.explain:
            for c in h.explain:
                out.append(
                    f"      {c.lane:<6} rank {c.rank:>4}  weight {c.weight:g}  contribution {c.contribution:.6f}"
                    f"  (lane score {c.lane_score:.4f})"
                )
            out.append(f"      sum = {sum(c.contribution for c in h.explain):.6f}")
    out.append(f"{resp.result_count} result(s) in {resp.took_ms:.1f} ms")
    return "\n".join(out)


@click.command("search")
@click.argument("query")
@click.option("--project", "projects", multiple=True, help="Search only this project (repeatable).")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True, help="Maximum results.")
@click.option("--lanes", default=None, cls=LanesOption)
@click.option("--variant", "variants", multiple=True, metavar="TEXT",
              help="Another wording of the query, fused with it (repeatable); code identifiers and quoted "
                   "phrases of the query are added as variants by themselves.")
@click.option("--explain", is_flag=True, help="Show each result's per-lane rank and RRF contribution.")
@index_option
@format_option
@handle_errors
def search_cmd(query: str, projects: tuple[str, ...], limit: int, lanes: str | None, variants: tuple[str, ...],
               explain: bool, index_dir: Path | None, fmt: str) -> None:
    """Search the index for QUERY. Quote words ("like this") to require an exact phrase.

    A document that another one in the index supersedes ranks below it."""
    with Engine.open(index_dir) as engine:
        resp = engine.search(SearchRequest(query=query, projects=list(projects) or None, limit=limit,
                                           lanes=parse_lanes(lanes), explain=explain, variants=list(variants)))
    if fmt == "json":
        emit_json(resp.model_dump())
    else:
        click.echo(printable(render_text(resp, explain)))  # a title or snippet may hold terminal escapes


@click.command("get")
@click.argument("doc_id")
@index_option
@format_option
@handle_errors
def get_cmd(doc_id: str, index_dir: Path | None, fmt: str) -> None:
    """Print the whole document DOC_ID (as shown by `sleuth search`)."""
    with Engine.open(index_dir) as engine:
        doc = engine.get(doc_id)
    if fmt == "json":
        emit_json(doc.model_dump())
    else:
        # control characters of the file (terminal escapes) shown escaped, never sent to the terminal
        click.echo(printable(f"# {doc.title}\n({doc.project}: {doc.path}, {doc.kind}, revision {doc.revision})\n"))
        click.echo(printable(doc.text))


@click.command("projects")
@index_option
@format_option
@handle_errors
def projects_cmd(index_dir: Path | None, fmt: str) -> None:
    """List the projects of the index with their roots and counts."""
    with Engine.open(index_dir) as engine:
        projects = engine.projects()
    if fmt == "json":
        emit_json({"projects": [p.model_dump() for p in projects]})
        return
    if not projects:
        click.echo("no projects yet: run `sleuth index PATH`")
    for p in projects:
        click.echo(f"{p.project_id}: {p.documents} documents, {p.blocks} blocks, "
                   f"last indexed {when(p.last_indexed)}")
        for root in p.roots:
            click.echo(f"    {root}")
