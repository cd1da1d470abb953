"""The command line: ``sleuth index|search|get|projects|status|doctor|watch|serve|guides build|eval``.

Errors from sleuth (``SleuthError``) become one readable line on stderr and the error's exit code;
nothing else is caught, so real bugs still show their traceback.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sleuth import startup

if __name__ == "__main__":  # `python -m sleuth.cli`; the `sleuth` command's launcher has done this already
    startup.begin(sys.argv[1:])
else:
    startup.set_process_defaults()

import click  # noqa: E402

from sleuth import __version__  # noqa: E402
from sleuth.config import (  # noqa: E402
    INDEX_DIR_NAME,
    INDEX_ENV,
    find_index_dir,
    load_serve_settings,
    validate_lanes,
)
from sleuth.engine import Engine  # noqa: E402
from sleuth.errors import ConfigError, SleuthError  # noqa: E402
from sleuth.types import SearchRequest, SearchResponse  # noqa: E402

F = TypeVar("F", bound=Callable[..., Any])


def index_option(f: F) -> F:
    """``--index DIR`` (also ``$SLEUTH_INDEX``), shared by every command."""
    return click.option(
        "--index", "index_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
        help=f"Index folder (default: $SLEUTH_INDEX, else the nearest {INDEX_DIR_NAME}/ upwards).",
    )(f)


def format_option(f: F) -> F:
    """``--format text|json``: one output switch for every command that prints results."""
    return click.option(
        "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
        help="Human-readable text, or one JSON object.",
    )(f)


def handle_errors(f: F) -> F:
    """Turn SleuthError, missing roots, unreadable catalogs and OS errors into one line and an exit code."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except SleuthError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except (FileNotFoundError, NotADirectoryError) as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "readonly" in text or "unable to open" in text:
                hint = "check that you may write to the index folder (or pass another --index)"
            elif "locked" in text or "busy" in text:
                hint = "another sleuth process is writing; try again when it has finished"
            else:
                hint = "the index folder may be damaged; delete it and run `sleuth index` again"
            click.echo(f"error: the index catalog cannot be used ({text}): {hint}", err=True)
            sys.exit(6)
        except sqlite3.DatabaseError as exc:
            click.echo(f"error: the index catalog is damaged ({exc}); delete the index folder and "
                       "run `sleuth index` again", err=True)
            sys.exit(6)
        except OSError as exc:
            click.echo(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), err=True)
            sys.exit(6)

    return wrapper  # type: ignore[return-value]


def _emit_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, indent=2))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sleuth")
def cli() -> None:
    """sleuth: local-first hybrid search over a project's knowledge, for people and AI agents."""


@cli.command("index")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--project", default=None, help="Project name (default: the first path's folder name).")
@index_option
@format_option
@handle_errors
def index_cmd(paths: tuple[Path, ...], project: str | None, index_dir: Path | None, fmt: str) -> None:
    """Index PATHS (folders or files) incrementally: only changed files are re-read, deleted ones removed."""
    for p in paths:
        if not p.exists():
            raise FileNotFoundError(f"path does not exist: {p}")
    if index_dir is not None or os.environ.get(INDEX_ENV):
        target = find_index_dir(index_dir)
    else:
        first = paths[0].resolve()
        target = (first if first.is_dir() else first.parent) / INDEX_DIR_NAME
    assert target is not None
    with Engine(target) as engine, EmbedProgress() as progress:
        report = engine.index(list(paths), project=project, embed_progress=progress.update)
        no_model = engine.model_unavailable
    if fmt == "json":
        _emit_json({"index_dir": str(target), **report.model_dump()})
        return
    click.echo(
        f"indexed project {report.project!r} into {target}: {report.scanned} files scanned, "
        f"{report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
        f"{report.removed} removed, {report.blocks} blocks written, {report.embedded} embedded, "
        f"{len(report.skipped)} skipped "
        f"({report.took_s:.2f} s)"
    )
    if no_model:
        click.echo(f"  vector lane unavailable (searches use the lexical lanes): {no_model}")
    for s in report.skipped:
        click.echo(f"  skipped {s['path']}: {s['reason']}")
    for p in report.problems:
        click.echo(f"  warning {p['path']}: {p['problem']}")


class EmbedProgress:
    """A progress bar on stderr while blocks are embedded (shown only when stderr is a terminal)."""

    def __init__(self) -> None:
        self._bar: Any = None

    def update(self, done: int, total: int) -> None:
        if not sys.stderr.isatty():
            return
        if self._bar is None:
            self._bar = click.progressbar(length=total, label="embedding blocks", file=sys.stderr)
            self._bar.__enter__()
        self._bar.update(done - self._bar.pos)

    def __enter__(self) -> EmbedProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)


def _parse_lanes(lanes: str | None) -> list[str] | None:
    return list(validate_lanes(lanes.split(","))) if lanes else None


def _when(timestamp: object) -> str:
    """A "last indexed" time for people: none yet means no indexing run has finished."""
    return str(timestamp) if timestamp else "never (no indexing run has finished; run `sleuth index`)"


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
        out.append(f"    id {h.doc_id}  lanes {', '.join(h.sources)}")
        if explain and h.explain:
            for c in h.explain:
                out.append(
                    f"      {c.lane:<6} rank {c.rank:>4}  {c.weight:g}/(k+{c.rank}) = {c.contribution:.6f}"
                    f"  (lane score {c.lane_score:.4f})"
                )
            out.append(f"      sum = {sum(c.contribution for c in h.explain):.6f}")
    out.append(f"{resp.result_count} result(s) in {resp.took_ms:.1f} ms")
    return "\n".join(out)


@cli.command("search")
@click.argument("query")
@click.option("--project", "projects", multiple=True, help="Search only this project (repeatable).")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True, help="Maximum results.")
@click.option("--lanes", default=None, help="Comma-separated lanes to run: bm25, tfidf, index, exact, vector"
              " (default: bm25,tfidf,index,vector).")
@click.option("--explain", is_flag=True, help="Show each result's per-lane rank and RRF contribution.")
@index_option
@format_option
@handle_errors
def search_cmd(query: str, projects: tuple[str, ...], limit: int, lanes: str | None, explain: bool,
               index_dir: Path | None, fmt: str) -> None:
    """Search the index for QUERY. Quote words ("like this") to require an exact phrase."""
    with Engine.open(index_dir) as engine:
        resp = engine.search(SearchRequest(query=query, projects=list(projects) or None, limit=limit,
                                           lanes=_parse_lanes(lanes), explain=explain))
    if fmt == "json":
        _emit_json(resp.model_dump())
    else:
        click.echo(render_text(resp, explain))


@cli.command("get")
@click.argument("doc_id")
@index_option
@format_option
@handle_errors
def get_cmd(doc_id: str, index_dir: Path | None, fmt: str) -> None:
    """Print the whole document DOC_ID (as shown by `sleuth search`)."""
    with Engine.open(index_dir) as engine:
        doc = engine.get(doc_id)
    if fmt == "json":
        _emit_json(doc.model_dump())
    else:
        click.echo(f"# {doc.title}\n({doc.project}: {doc.path}, {doc.kind}, revision {doc.revision})\n")
        click.echo(doc.text)


@cli.command("projects")
@index_option
@format_option
@handle_errors
def projects_cmd(index_dir: Path | None, fmt: str) -> None:
    """List the projects of the index with their roots and counts."""
    with Engine.open(index_dir) as engine:
        projects = engine.projects()
    if fmt == "json":
        _emit_json({"projects": [p.model_dump() for p in projects]})
        return
    if not projects:
        click.echo("no projects yet: run `sleuth index PATH`")
    for p in projects:
        click.echo(f"{p.project_id}: {p.documents} documents, {p.blocks} blocks, "
                   f"last indexed {_when(p.last_indexed)}")
        for root in p.roots:
            click.echo(f"    {root}")


@cli.command("status")
@click.option("--files", "files", is_flag=True,
              help="List every file: indexed (last indexed, current or stale), skipped or failed (with the reason).")
@index_option
@format_option
@handle_errors
def status_cmd(files: bool, index_dir: Path | None, fmt: str) -> None:
    """Show index health: documents, blocks, per-root coverage, skipped files with reasons, last indexed."""
    with Engine.open(index_dir) as engine:
        st = engine.status(files=files)
    if fmt == "json":
        _emit_json(st)
        return
    click.echo(f"index {st['index_dir']}")
    click.echo(f"  {st['documents']} documents, {st['blocks']} blocks, {len(st['projects'])} "  # type: ignore[arg-type]
               f"project(s), generation {st['generation']} (postings at {st['postings_generation']})")
    click.echo(f"  lanes: {', '.join(st['lanes'])}")  # type: ignore[arg-type]
    vec = st["vector_lane"]
    if vec["available"]:  # type: ignore[index]
        click.echo(f"  vector lane: {vec['model']} ({vec['dimensions']} dimensions, {vec['path']}), "  # type: ignore[index]
                   f"{vec['blocks_with_vectors']} of {vec['blocks']} blocks embedded")  # type: ignore[index]
    else:
        click.echo(f"  vector lane unavailable: {vec['reason']}")  # type: ignore[index]
    for p in st["projects"]:  # type: ignore[attr-defined]
        click.echo(f"  project {p['project_id']}: {p['documents']} documents, last indexed {_when(p['last_indexed'])}")
    for c in st["coverage"]:  # type: ignore[attr-defined]
        click.echo(f"    {c['root'] or '(records)'}: {c['indexed']} indexed, {c['skipped']} skipped, "
                   f"{c['failed']} failed, last indexed {_when(c['last_indexed'])}")
    skipped = st["skipped_files"]
    click.echo(f"  {len(skipped)} skipped file(s)")  # type: ignore[arg-type]
    for s in skipped:  # type: ignore[attr-defined]
        click.echo(f"    {s['path']}: {s['reason']}")
    problems = st["problems"]
    click.echo(f"  {len(problems)} file(s) indexed with a warning")  # type: ignore[arg-type]
    for p in problems:  # type: ignore[attr-defined]
        click.echo(f"    {p['path']}: {p['problem']}")
    if files:
        listed = st["files"]
        stale = sum(1 for f in listed if f.get("freshness") == "stale")  # type: ignore[attr-defined]
        click.echo(f"  {len(listed)} file(s), {stale} changed or gone since indexed (stale):")  # type: ignore[arg-type]
        for f in listed:  # type: ignore[attr-defined]
            if f["state"] == "indexed":
                click.echo(f"    {f['state']:<8} {f['path']}  (indexed {f['indexed_at']}, {f['freshness']})")
            else:
                click.echo(f"    {f['state']:<8} {f['path']}  ({f['reason']})")


@cli.command("watch")
@click.argument("projects", nargs=-1)
@click.option("--debounce-ms", type=click.IntRange(10, 60_000), default=None,
              help="A batch of changes is indexed once nothing changed for this long [default: 100].")
@index_option
@format_option
@handle_errors
def watch_cmd(projects: tuple[str, ...], debounce_ms: int | None, index_dir: Path | None, fmt: str) -> None:
    """Keep the index current: watch the roots of PROJECTS (default: every project) and re-index
    what changes (edits, new files, deletions, renames) until interrupted (Ctrl-C)."""
    import threading

    from sleuth.watch import DEBOUNCE_MS, WatchBatch, WatchedRoot, watch_index

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    def ready(roots: list[WatchedRoot]) -> None:
        names = sorted({r.project for r in roots})
        click.echo(f"watching {len(roots)} root(s) of {len(names)} project(s): {', '.join(names) or '(none)'}",
                   err=True)

    def show(batch: WatchBatch) -> None:
        if fmt == "json":
            click.echo(json.dumps({"project": batch.project, "root": batch.root, "paths": batch.paths,
                                   "took_s": batch.took_s, "error": batch.error,
                                   "report": batch.report.model_dump() if batch.report else None},
                                  ensure_ascii=False))
        elif batch.error:
            click.echo(f"{batch.project}: {batch.root}: error: {batch.error}", err=True)
        elif batch.report is not None:
            r = batch.report
            if r.added or r.updated or r.removed or r.skipped:
                shown = ", ".join(p or "(whole root)" for p in batch.paths[:5])
                more = f" and {len(batch.paths) - 5} more" if len(batch.paths) > 5 else ""
                click.echo(f"{batch.project}: {shown}{more}: {r.added} added, {r.updated} updated, "
                           f"{r.removed} removed, {len(r.skipped)} skipped ({batch.took_s:.2f} s)")

    with Engine.open(index_dir) as engine:
        watch_index(engine, list(projects) or None, stop, debounce_ms or DEBOUNCE_MS, on_batch=show, ready=ready)


@cli.command("doctor")
@click.option("--project", "project", default=None, help="One project (default: all).")
@index_option
@format_option
@handle_errors
def doctor_cmd(project: str | None, index_dir: Path | None, fmt: str) -> None:
    """Check index health: stale documents (changed or deleted since indexed), skipped files, lanes."""
    from sleuth.memory.doctor import doctor

    with Engine.open(index_dir) as engine:
        report = doctor(engine, project)
    if fmt == "json":
        _emit_json(report)
        return
    click.echo(f"index {report['index_dir']}: {'ok' if report['ok'] else 'needs attention'}")
    for p in report["projects"]:
        click.echo(f"  project {p['project_id']}: {p['documents']} documents, {p['blocks']} blocks, "
                   f"{p['stale_documents']} stale, {p['skipped_files']} skipped; memory folder {p['memory_dir']}")
    for name, lane in report["lanes"].items():
        state = "available" if lane.get("available") else f"unavailable: {lane.get('reason')}"
        click.echo(f"  lane {name}: {state}")
    if report["postings_generation"] != report["generation"]:
        click.echo(f"  postings at generation {report['postings_generation']} of {report['generation']}: "
                   "the next search or index catches up")
    for d in report["stale_documents"]:
        click.echo(f"  stale: {d['project_id']} {d['path']} (indexed {d['indexed_at']}): run `sleuth index` again")
    for s in report["skipped_files"]:
        click.echo(f"  skipped: {s['path']}: {s['reason']}")


@cli.command("serve")
@click.option("--project", "projects", multiple=True,
              help="Projects the MCP client may access (repeatable; default: every project).")
@click.option("--tools", "tools", default=None, metavar="PROFILE[,PROFILE...]",
              help="Tool families to serve: memory (project_memory_search, query_status, query_cancel, "
                   "project_memory_read/record/forget/doctor; needs an index), "
                   "project (search_project, get_notebook, get_projects; needs an index), "
                   "guides (search_guides; needs --guides), text (search_documents, search_index_query, "
                   "search_fuzzy; needs nothing). Default: memory,project, or `tools` in config.toml, "
                   "or $SLEUTH_TOOLS.")
@click.option("--guides", "guides_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="guides.json for the guides profile, from `sleuth guides build` "
                   "(default: `guides` in config.toml, or $SLEUTH_GUIDES).")
@click.option("--events", "events_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Append one JSON line per search_guides call ({event, tool_name, time}) to FILE; "
                   "written off the request path, so it never delays or fails a search.")
@click.option("--no-broker", is_flag=True,
              help="Serve in this process instead of through the index's shared broker "
                   "(also $SLEUTH_BROKER=0).")
@index_option
@handle_errors
def serve_cmd(projects: tuple[str, ...], tools: str | None, guides_file: Path | None, events_file: Path | None,
              no_broker: bool, index_dir: Path | None) -> None:
    """Serve over MCP on stdio the tool families chosen with --tools (default: memory and project tools).

    With an index, the session goes through the index's broker (`sleuth broker`), started on first use.
    """
    from sleuth.broker.client import broker_enabled, serve_via_broker

    if not no_broker and broker_enabled():
        code = serve_via_broker(index_dir, tools, projects, guides_file, events_file)
        if code is not None:
            sys.exit(code)
    from sleuth.mcp.server import parse_profiles, run_stdio

    settings = load_serve_settings(find_index_dir(index_dir))
    run_stdio(
        parse_profiles(tools if tools is not None else settings.tools),
        index=index_dir,
        allowed_projects=list(projects) or None,
        guides_path=guides_file or settings.guides,
        events_path=events_file,
    )


@cli.group("broker")
def broker_group() -> None:
    """The broker shared by an index's MCP sessions: it holds the index and the model in memory.

    The first `sleuth serve` of an index starts it; it exits by itself when idle.
    """


@broker_group.command("run")
@click.option("--key", default=None, hidden=True, help="Socket name chosen by the session that starts the broker.")
@click.option("--idle-exit", "idle_exit_s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Exit after this many seconds without sessions (default: $SLEUTH_BROKER_IDLE_S, else 600).")
@index_option
@handle_errors
def broker_run_cmd(key: str | None, idle_exit_s: float | None, index_dir: Path | None) -> None:
    """Run the index's broker in the foreground until it is idle, stopped or signalled (logs on stderr)."""
    from sleuth.broker.server import run_broker

    reason = run_broker(index_dir, key=key, idle_exit_s=idle_exit_s)
    click.echo(f"broker stopped: {reason}", err=True)


def _broker_scope(index_dir: Path | None, all_brokers: bool) -> Path | None:
    return None if all_brokers else find_index_dir(index_dir)


@broker_group.command("status")
@click.option("--all", "all_brokers", is_flag=True, help="Every broker of this user, not only the index's.")
@index_option
@format_option
@handle_errors
def broker_status_cmd(all_brokers: bool, index_dir: Path | None, fmt: str) -> None:
    """Show the index's broker: pid, sessions, running calls and requests, idle time, memory
    (with no index found, or --all, every broker of this user)."""
    from sleuth.broker.client import list_brokers

    scope = _broker_scope(index_dir, all_brokers)
    brokers = list_brokers(scope)
    if fmt == "json":
        _emit_json({"brokers": brokers})
        return
    if not brokers:
        click.echo(f"no broker running{f' for {scope}' if scope else ''}")
    for b in brokers:
        if b.get("state") != "serving":
            click.echo(f"broker {b.get('pid')} for {b.get('index')}: {b.get('state')}")
            continue
        click.echo(f"broker {b['pid']} for {b['index']}: {b['sessions']} session(s) ({b['sessions_total']} since "
                   f"start), {b['calls_running']} call(s) running, idle {b['idle_s']:g} s (exits after "
                   f"{b['idle_exit_s']:g} s), up {b['uptime_s']:g} s, {b['rss_mb']} MB")
        if b["requests_running"]:
            click.echo(f"  running requests: {', '.join(b['requests_running'])}")


@broker_group.command("stop")
@click.option("--all", "all_brokers", is_flag=True, help="Stop every broker of this user.")
@index_option
@handle_errors
def broker_stop_cmd(all_brokers: bool, index_dir: Path | None) -> None:
    """Stop the index's broker (with no index found, or --all, every broker of this user); calls
    running in it finish first, and its sessions end."""
    from sleuth.broker.client import stop_brokers

    scope = _broker_scope(index_dir, all_brokers)
    stopped = stop_brokers(scope)
    if not stopped:
        click.echo(f"no broker running{f' for {scope}' if scope else ''}")
    for row in stopped:
        state = "stopped" if row["stopped"] else "did not stop in time"
        click.echo(f"broker {row['pid']} for {row['index']}: {state}")
    if not all(row["stopped"] for row in stopped):
        sys.exit(1)


@cli.group("guides")
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


@cli.command("eval")
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
    from sleuth.evaluation import run_eval

    try:
        result = run_eval(dataset_dir, _parse_lanes(lanes), index_dir=index_dir, fresh=fresh)
    except DatasetError as exc:
        raise ConfigError(f"bad dataset: {exc}") from exc
    if fmt == "json":
        _emit_json(result)
        return
    click.echo(
        f"{result['dataset']} ({result['documents']} documents, {result['queries']} queries), "
        f"lanes {','.join(result['lanes'])}:"  # type: ignore[arg-type]
    )
    click.echo(
        f"  nDCG@10 {result['ndcg@10']:.4f}   Recall@100 {result['recall@100']:.4f}   MRR@10 {result['mrr@10']:.4f}"
    )
    click.echo(f"  indexed in {result['index_s']} s ({result['embedded']} blocks embedded), "
               f"{result['query_ms_mean']} ms per query")
    for lane, reason in result["unavailable_lanes"].items():  # type: ignore[attr-defined]
        click.echo(f"  lane {lane} unavailable: {reason}")


#: Commands that only read the index. Once one has answered, the process ends without Python's
#: teardown, which took 80 ms after a hybrid search at 200k blocks (unloading the model, the
#: memory-mapped vectors and every module: about 15 % of a cold `sleuth search`; docs/BENCH.md).
QUICK_EXIT_COMMANDS = frozenset({"search", "get", "projects", "status"})


def _exit_code(code: object) -> int:
    """The process exit status for ``sys.exit(code)`` (None: 0; a message: printed, 1)."""
    if code is None or isinstance(code, bool):
        return int(bool(code))
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def quick_exit(code: object) -> None:
    """End the process now with ``sys.exit(code)``'s status, after flushing stdout and stderr,
    skipping the interpreter's teardown (no ``atexit`` handlers, no object finalisers). Only for
    a command that has finished every write: what is left is freeing memory the OS frees anyway."""
    status = _exit_code(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be written anyway
            pass
    os._exit(status)


def main() -> None:
    """Console-script entry point. A closed output pipe (``sleuth status | head -1``) ends quietly;
    the read-only commands (``QUICK_EXIT_COMMANDS``) end without the interpreter's teardown."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if sys.argv[1:2] and sys.argv[1] in QUICK_EXIT_COMMANDS:
        try:
            cli(prog_name="sleuth")
        except SystemExit as done:
            quick_exit(done.code)
        quick_exit(0)
    cli(prog_name="sleuth")


if __name__ == "__main__":
    main()
