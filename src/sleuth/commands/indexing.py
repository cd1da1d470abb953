"""``sleuth index`` and ``sleuth watch``: writing the index, once or as files change."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import click

from sleuth.commands.options import emit_json, format_option, handle_errors, index_option
from sleuth.config import INDEX_DIR_NAME, INDEX_ENV, find_index_dir
from sleuth.engine import Engine


@click.command("index")
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
        emit_json({"index_dir": str(target), **report.model_dump()})
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




@click.command("watch")
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
