"""``sleuth index`` and ``sleuth watch``: writing the index, once or as files change."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from sleuth.commands.options import counted, emit_json, format_option, handle_errors, index_option, say_waiting
from sleuth.interrupts import INTERRUPTED_EXIT
from sleuth.locate import INDEX_DIR_NAME, INDEX_ENV, enclosing_index, find_index_dir, has_catalog, resolved

if TYPE_CHECKING:
    from sleuth.types import IndexReport

#: Folders of another project named in the line saying it has this folder's name (the rest counted).
NAMED_FOLDERS_MAX = 3


@click.command("index")
@click.argument("paths", nargs=-1, required=False, type=click.Path(path_type=Path))
@click.option("--project", default=None,
              help="Project name (default: the project that has the first path as a root or holds it in a root, "
                   "else the first path's folder name, with its parent's when another project has that name).")
@click.option("--wait/--no-wait", "wait", default=None,
              help="Embed before returning (default: return once keyword search works, embed in a background "
                   "worker; $SLEUTH_INDEX_WAIT=1 makes --wait the default).")
@click.option("--verbose", "-v", is_flag=True, help="List every skipped file (default: a summary by reason).")
@click.option("--retry-failed", is_flag=True,
              help="Parse again the files whose parse failed (too long, too much memory, a parser error) "
                   "although unchanged since (default: skipped until they change, reported with their reason).")
@index_option
@format_option
@handle_errors
def index_cmd(paths: tuple[Path, ...], project: str | None, wait: bool | None, verbose: bool, retry_failed: bool,
              index_dir: Path | None, fmt: str) -> None:
    """Index PATHS (folders or files) incrementally: only changed files are re-read, deleted ones removed.

    Without --index the index is PATHS[0]/.sleuth (a file's folder), unless an index further up has
    PATHS[0] under one of its roots: it is indexed there, as git adds a path to its repository.

    Without PATHS, every root of every project of the index found here (the nearest .sleuth/ in this
    folder or above it, or --index) is indexed again, or only the roots of --project: what the advice
    "run `sleuth index` again" means.

    Keyword search (bm25, index, rm3, exact lanes) works as soon as this returns; the embeddings of new
    blocks are made by a background worker (`sleuth status` shows how far it is, `sleuth embed`
    waits for it), unless --wait."""
    from sleuth import background
    from sleuth.engine import Engine
    from sleuth.errors import ConfigError
    from sleuth.ingest.names import is_valid_text, printable
    from sleuth.interrupts import stop_on_interrupt
    from sleuth.progress import Progress, terminal_sink
    from sleuth.store.folder import foreign_owner

    if not paths:
        _refresh(project, wait, verbose, retry_failed, index_dir, fmt)
        return
    enclosing: tuple[Path, str] | None = None
    if index_dir is not None or os.environ.get(INDEX_ENV):
        target = find_index_dir(index_dir)
    else:
        first = resolved(paths[0])
        target = (first if first.is_dir() else first.parent) / INDEX_DIR_NAME
        if not has_catalog(target) and (enclosing := enclosing_index(first)) is not None:
            target = enclosing[0]  # as git adds a path to the repository it is in
    assert target is not None
    if not is_valid_text(str(target)):  # tantivy and SQLite take UTF-8 paths only
        where = ("" if index_dir is not None or os.environ.get(INDEX_ENV)
                 else f" (beside {printable(str(paths[0]))}, as without --index)")
        raise ConfigError(f"the index folder {printable(str(target))}{where} would have a path that is not valid "
                          "UTF-8: choose one whose path is with --index (or SLEUTH_INDEX)")
    _check_paths(paths, target)  # before the index folder is made: a refused command leaves nothing
    wait = background.wait_by_default() if wait is None else wait
    sink = terminal_sink(label="sleuth index")
    phases = Progress(sink)
    embedding: dict[str, Any] = {}
    lock: Any = None
    try:
        with stop_on_interrupt(), Engine(target) as engine:
            if (owner := foreign_owner(engine.index_dir)) is not None:
                click.echo(f"warning: {owner}", err=True)
            lock = engine.folder.write_lock
            say_waiting("sleuth index", lock)
            report = engine.index(list(paths), project=project, embed=False, phases=phases,
                                  retry_failed=retry_failed)
            embedding, no_model = _embed_after(engine, report, wait, phases)
    except KeyboardInterrupt:
        sink.close()
        _interrupted(lock)
    finally:
        sink.close()
    if fmt == "json":
        emit_json({"index_dir": str(target), **_report_json(report), **({"embedding": embedding} if embedding else {})})
        return
    for line in _report_lines(report, paths, target, enclosing, no_model, embedding,
                              explicit=index_dir is not None or bool(os.environ.get(INDEX_ENV)), verbose=verbose,
                              named=project is not None):
        click.echo(line)


def _report_json(report: IndexReport) -> dict[str, Any]:
    """A run's report as ``sleuth index --format json`` gives it: its fields, and the skipped files
    counted by reason."""
    from sleuth.reports import skip_summary

    skipped = [(s["path"], s["reason"]) for s in report.skipped]
    return {**report.model_dump(), "skipped_by_reason": [g.model_dump() for g in skip_summary(skipped)]}


def _embed_after(engine: Any, report: IndexReport, wait: bool, phases: Any) -> tuple[dict[str, Any], str | None]:
    """The embedding after an indexing run: done now when ``wait`` (counted in ``report``: its
    ``embedded`` and ``took_s``; ``phases`` shows it), else left to a background worker.
    Returns ``(the worker's state, {} when waited; why the vector lane is unavailable, or None)``."""
    from sleuth import background

    if not wait:
        return background.embed_in_background(engine)
    started = time.perf_counter()
    report.embedded = background.embed_now(engine, phases) or 0
    report.took_s = round(report.took_s + time.perf_counter() - started, 3)
    return {}, engine.model_unavailable


def _interrupted(lock: Any) -> NoReturn:
    """Say what a ``sleuth index`` stopped by Ctrl-C leaves (``lock``: the index's write lock, None
    before the index was opened) and exit with ``INTERRUPTED_EXIT``."""
    if lock is None or not lock.taken:  # stopped before the index was its to write
        click.echo("sleuth index: interrupted before it wrote anything: run the same command again to index", err=True)
    else:
        click.echo("sleuth index: interrupted; what it wrote stays indexed (and the vectors it made): run the "
                   "same command again to go on", err=True)
    sys.exit(INTERRUPTED_EXIT)


def _refresh(project: str | None, wait: bool | None, verbose: bool, retry_failed: bool, index_dir: Path | None,
             fmt: str) -> None:
    """``sleuth index`` without PATHS: index again every root of every project of the index found
    here (or of ``project`` alone), one run per project (:meth:`sleuth.engine.Engine.refresh`: the
    roots read under the write lock and taken as kept, a root gone since forgotten, one that leads
    elsewhere now refused). An index found by looking upwards (no --index, no $SLEUTH_INDEX) may have
    come with the folder (a cloned repository): only its roots inside that folder are indexed, the
    others named, and one that belongs to another user is refused. Then one background embedding
    (or ``wait``).

    Raises:
        ConfigError: no index is found here, another user's was found, or it has no project to index.
        ProjectNotFound: ``project`` is not a project of the index.
    """
    from sleuth import background
    from sleuth.engine import Engine
    from sleuth.errors import ConfigError
    from sleuth.interrupts import stop_on_interrupt
    from sleuth.progress import Progress, terminal_sink
    from sleuth.store.folder import foreign_owner

    explicit = index_dir is not None or bool(os.environ.get(INDEX_ENV))
    target = find_index_dir(index_dir)
    if target is None or not has_catalog(target):
        where = f"at {target}" if target is not None else "in this folder or above it (and no --index)"
        raise ConfigError(f"no index {where}: give the PATHS to index (`sleuth index ~/notes`)")
    if (owner := foreign_owner(target)) is not None:
        if not explicit:
            raise ConfigError(f"{owner}: `sleuth index` without paths indexes only into an index of your own"
                              " found here; name it with --index to use it")
        click.echo(f"warning: {owner}", err=True)
    wait = background.wait_by_default() if wait is None else wait
    reports: list[IndexReport] = []
    embedding: dict[str, Any] = {}
    lock: Any = None
    sink = terminal_sink(label="sleuth index")
    try:
        with stop_on_interrupt(), Engine(target) as engine:
            wanted = engine.searcher.check_projects([project] if project is not None else None)
            ids = [str(row["project_id"]) for row in engine.catalog.projects()
                   if wanted is None or row["project_id"] in wanted]
            if not ids:
                raise ConfigError(f"the index {target} has no project to index: give the PATHS to index")
            lock = engine.folder.write_lock
            say_waiting("sleuth index", lock)
            for pid in ids:
                report = engine.refresh(pid, None if explicit else target.parent, embed=False, phases=Progress(sink),
                                        retry_failed=retry_failed)
                if report is not None:  # None: removed meanwhile
                    reports.append(report)
            if not reports:
                raise ConfigError(f"the index {target} has no project to index now: give the PATHS to index")
            embedding, no_model = _embed_after(engine, reports[-1], wait, Progress(sink))
    except KeyboardInterrupt:
        sink.close()
        _interrupted(lock)
    finally:
        sink.close()
    if fmt == "json":
        emit_json({"index_dir": str(target), "projects": [_report_json(r) for r in reports],
                   **({"embedding": embedding} if embedding else {})})
        return
    refreshed = {r.project for r in reports}  # a gone root of one of these is forgotten by its own run
    for i, report in enumerate(reports):
        last = i == len(reports) - 1
        report.gone_roots = [g for g in report.gone_roots if g.partition(": ")[0] not in refreshed]
        for line in _report_lines(report, (), target, None, no_model if last else None, embedding if last else {},
                                  explicit=True, verbose=verbose, named=True):
            click.echo(line)


def _check_paths(paths: tuple[Path, ...], target: Path) -> None:
    """Refuse, before anything is written: a path that is gone unless the index ``target`` exists
    (a root, or a path under one, that is gone loses its documents there; the engine checks
    which), a path neither a folder nor a regular file (``/dev/null``), and an index folder or a
    path inside one (``target`` included: sleuth never indexes an index's own files).

    Raises:
        FileNotFoundError, ConfigError: as said.
    """
    from sleuth.errors import ConfigError
    from sleuth.locate import index_folder_holding

    for p in paths:
        resolved_p = resolved(p)
        if not resolved_p.exists():
            if not has_catalog(target):
                raise FileNotFoundError(f"path does not exist: {p}")
            continue
        if not (resolved_p.is_dir() or resolved_p.is_file()):
            raise ConfigError(f"{p} is neither a folder nor a regular file: sleuth indexes folders and files")
        if (held := index_folder_holding(resolved_p, target)) is not None:
            where = "the index folder" if held == resolved_p else f"inside the index folder {held}"
            given = " (where --index or $SLEUTH_INDEX puts the index)" if held == target else ""
            raise ConfigError(f"{p} is {where}{given}: sleuth does not index an index's own files (its users, keys,"
                              " logs and settings); index the folder that holds it")


def _report_lines(report: IndexReport, paths: tuple[Path, ...], target: Path, enclosing: tuple[Path, str] | None,
                  no_model: str | None, embedding: dict[str, Any], explicit: bool, verbose: bool,
                  named: bool = False) -> list[str]:
    """What ``sleuth index`` prints of ``report`` (text format); ``explicit``: the index was named
    (``--index``, ``$SLEUTH_INDEX``); ``enclosing``: the index above the first path that was used,
    with its root holding the path; ``named``: the project was named (``--project``)."""
    from sleuth.ingest.names import one_line
    from sleuth.types import INBOX_PROJECT_ID

    skipped = [(s["path"], s["reason"]) for s in report.skipped]
    out = [
        f"indexed project {report.project!r} into {target}: {counted(report.scanned, 'file')}"
        " scanned, "
        f"{report.added:,} added, {report.updated:,} updated, {report.unchanged:,} unchanged, "
        f"{report.removed:,} removed, {counted(report.blocks, 'block')} written, "
        f"{report.embedded:,} embedded, "
        f"{not_indexed_counts(skipped)} ({report.took_s:.2f} s)"]
    out += _link_lines(paths, report.project)
    if enclosing is not None:
        first = paths[0].resolve()
        own = (first if first.is_dir() else first.parent) / INDEX_DIR_NAME
        if enclosing[1] == str(first):
            where = "is a root of this index: indexed there"
        elif str(first) in report.roots:
            why = ("as --project named it (or that root's ignore rules leaving it out)" if named
                   else "that root's ignore rules leaving it out")
            where = (f"is under {enclosing[1]}, a root of this index: indexed there as a root of project "
                     f"{report.project!r}, {why}")
        else:
            where = f"is under {enclosing[1]}, a root of this index: refreshed within that root"
        out.append(f"  {paths[0]} {where} (`--index {own}` makes a separate index)")
    out += [f"  {root}, a root of project {report.project!r} inside this run's root, is part of it now: its files "
            "are filed under it (and refreshed with it)" for root in report.merged_roots]
    first_given = str(resolved(paths[0])) if paths else ""
    out += [f"  {root} is a new root of project {report.project!r}" + (
            "" if root == first_given else ", the project of this run's first path (so are its files now)")
            for root in report.joined_roots]
    out += _root_change_lines(report, target)
    out += _project_lines(report, named)
    if report.project == INBOX_PROJECT_ID:
        out.append(f"  project {INBOX_PROJECT_ID!r} is the Inbox of records filed without a project: a search of every "
                   f"project leaves it out (`--project {INBOX_PROJECT_ID}` searches it)")
    if no_model:
        out.append(f"  vector lane unavailable (searches use the lexical lanes): {no_model}")
    if not explicit and (found := _found_here()) != target:
        first_found = f"; here they find {found} first" if found is not None else ""
        out.append(f"  other commands find this index from inside {target.parent}, or with --index {target} "
                   f"(or SLEUTH_INDEX={target}){first_found}")
    if embedding:
        out.append(_embedding_line(embedding))
    out += render_skips(skipped, verbose)
    out += [f"  warning {p['path']}: {p['problem']}" for p in report.problems]
    return [one_line(line) for line in out]  # a root named with a newline cannot forge a line


def _root_change_lines(report: IndexReport, target: Path) -> list[str]:
    """What ``sleuth index`` says of roots: another project's overlapping this run's, roots gone and
    forgotten, the project removed with its last root, other roots gone (one line a project when
    several: a glob's deleted files made a line each)."""
    from sleuth.ingest.names import shlex_quote

    out: list[str] = []
    overlapping: dict[str, list[str]] = {}  # another project -> its roots overlapping this run's, one line each
    for shared in report.shared_roots:
        other, _, root = shared.partition(": ")
        overlapping.setdefault(other, []).append(root)
    for other, roots in overlapping.items():
        listed = _some(roots)
        out.append(f"  warning: project {other!r} has {'a root' if len(roots) == 1 else 'roots'} that overlap"
                   f"{'s' if len(roots) == 1 else ''} this run's ({listed}): their files are in "
                   f"both projects, and a search of every project returns them twice (`sleuth projects remove "
                   f"{other}` drops that project, or index with --project {other})")
    if 0 < len(report.forgotten_roots) <= NAMED_FOLDERS_MAX:
        out += [f"  {root} no longer exists (renamed or deleted): its documents were removed and it is no"
                f" longer a root of project {report.project!r}" for root in report.forgotten_roots]
    elif report.forgotten_roots:  # a glob's files deleted: one line, not one a file
        out.append(f"  {len(report.forgotten_roots):,} roots no longer exist (renamed or deleted; "
                   f"{_some(report.forgotten_roots)}): their documents were removed and they are no longer roots of"
                   f" project {report.project!r}")
    if report.project_removed:
        out.append(f"  project {report.project!r} had no root left, so it was removed (index the folder's new"
                   " path to search it again)")
    gone_by_project: dict[str, list[str]] = {}
    for gone in report.gone_roots:
        other, _, root = gone.partition(": ")
        gone_by_project.setdefault(other, []).append(root)
    for other, roots in gone_by_project.items():
        if len(roots) == 1:
            out.append(f"  warning: {roots[0]}, a root of project {other!r}, no longer exists: its documents stay"
                       f" (marked stale) until `sleuth index {shlex_quote(roots[0])} --index"
                       f" {shlex_quote(str(target))}` removes them, or `sleuth projects remove {shlex_quote(other)}`")
        else:
            out.append(f"  warning: {len(roots):,} roots of project {other!r} no longer exist ({_some(roots)}): their"
                       f" documents stay (marked stale) until `sleuth index --project {shlex_quote(other)} --index"
                       f" {shlex_quote(str(target))}` (every root of it again) removes them, or `sleuth projects"
                       f" remove {shlex_quote(other)}`")
    return out


def _some(paths: list[str]) -> str:
    """The first ``NAMED_FOLDERS_MAX`` of ``paths``, and how many more."""
    more = f" and {len(paths) - NAMED_FOLDERS_MAX:,} more" if len(paths) > NAMED_FOLDERS_MAX else ""
    return ", ".join(paths[:NAMED_FOLDERS_MAX]) + more


def _link_lines(paths: tuple[Path, ...], project: str) -> list[str]:
    """A warning for each path given that is a symbolic link (``notes/*.md`` catching a planted
    ``notes/key.md -> ~/.ssh/id_rsa``): such a root is indexed as what it leads to, which a walk of
    its folder never reads (links are not followed there); at most ``NAMED_FOLDERS_MAX`` named."""
    links = [p for p in paths if os.path.islink(p)]
    out = []
    for p in links[:NAMED_FOLDERS_MAX]:
        try:
            target = str(p.resolve())
        except (OSError, RuntimeError):
            target = "?"
        out.append(f"  warning: {p} is a symbolic link to {target}: indexed as a root of its own (the walk of a"
                   f" folder never follows links); if that was not meant, `sleuth projects remove {project}` and"
                   " index the paths you mean")
    if len(links) > NAMED_FOLDERS_MAX:
        out.append(f"  warning: {len(links) - NAMED_FOLDERS_MAX:,} more paths given are symbolic links, indexed as"
                   " what they lead to")
    return out


def _project_lines(report: IndexReport, named: bool) -> list[str]:
    """What ``sleuth index`` says of the project's name (another project had the folder's, a folder
    named inbox) and of users who may search it (grants left from a removed project of its id)."""
    from sleuth.ingest.names import shlex_quote
    from sleuth.types import INBOX_PROJECT_ID

    out: list[str] = []
    other = report.name_taken_by[0].partition(": ")[0] if report.name_taken_by else ""  # whose name it was
    if report.name_taken_by:
        folders = [taken.partition(": ")[2] for taken in report.name_taken_by]
        shown_folders = [f"{f} (gone)" if not os.path.lexists(f) else f for f in folders[:NAMED_FOLDERS_MAX]]
        more = f" and {len(folders) - NAMED_FOLDERS_MAX:,} more" if len(folders) > NAMED_FOLDERS_MAX else ""
        out.append(f"  (project {other!r} already has this folder's name, with other folders"
                   f" ({', '.join(shown_folders)}{more}): this one is project {report.project!r};"
                   f" `--project {shlex_quote(other)}` adds it to {other!r} instead)")
    if report.stale_grants:
        out.append(f"  warning: user(s) {', '.join(report.stale_grants)} of `sleuth serve --http` still hold a grant on"
                   f" {report.project!r} from a project of that id removed before, so they may search this one:"
                   f" `sleuth users list` shows their grants")
    if report.grants_unchecked:
        out.append(f"  warning: the users file could not be read ({report.grants_unchecked}), so whether users of"
                   f" `sleuth serve --http` still hold a grant on the new project {report.project!r} was not checked")
    if not named and (other or report.project) == f"{INBOX_PROJECT_ID}-folder":
        out.append(f"  (a folder named {INBOX_PROJECT_ID} makes the project {report.project!r}: the id "
                   f"{INBOX_PROJECT_ID!r} is the Inbox of records filed without a project)")
    return out


def _embedding_line(embedding: dict[str, Any]) -> str:
    """What ``sleuth index`` says of the embedding left to a background worker."""
    if embedding.get("started") is False:
        worker = f" (process {embedding['pid']})" if embedding["pid"] else ""
        return (f"  keyword search is ready; the embedding worker already running{worker} has "
                f"{embedding['pending_blocks']:,} block(s) of the index left to embed, this run's among them:"
                " `sleuth status` shows how far, `sleuth embed` waits for it")
    if embedding.get("pid"):
        return (f"  keyword search is ready; embedding {embedding['pending_blocks']:,} block(s) in the background "
                f"(process {embedding['pid']}): `sleuth status` shows how far, `sleuth embed` waits for it")
    return (f"  keyword search is ready; the embedding worker could not start ({embedding['error']}): "
            f"run `sleuth embed` to embed {embedding['pending_blocks']:,} block(s)")


def _found_here() -> Path | None:
    """The index a command run here without ``--index`` finds (the nearest ``.sleuth/`` in the
    current folder and its parents), or None."""
    try:
        return find_index_dir(None)
    except OSError:  # the current folder was deleted
        return None


def render_skips(skips: list[tuple[str, str]], verbose: bool) -> list[str]:
    """Skipped files for people: a line per reason with its count and first paths, or (``verbose``)
    a line per file."""
    from sleuth.commands.health import not_indexed_head, render_skip_summary
    from sleuth.freshness import failed_count, skip_state
    from sleuth.reports import skip_summary

    if verbose:
        return [f"  {skip_state(reason)} {path}: {reason}" for path, reason in skips]
    lines = render_skip_summary(skip_summary(skips), "    ", "`sleuth index --verbose` or `sleuth status --verbose`")
    return [f"  {not_indexed_head(len(skips), failed_count(skips))}:", *lines] if lines else []


def not_indexed_counts(skips: list[tuple[str, str]]) -> str:
    """``"N skipped"``, or ``"N skipped, M failed"`` when some of ``skips`` (path, reason) could not be
    read or parsed (:func:`sleuth.freshness.skip_state`): the words and counts of ``sleuth status``."""
    from sleuth.freshness import failed_count

    failed = failed_count(skips)
    return f"{len(skips) - failed:,} skipped" + (f", {failed:,} failed" if failed else "")


@click.command("embed")
@click.option("--background", "in_background", is_flag=True,
              help="Start a background worker and return (it embeds while you search).")
@click.option("--worker", is_flag=True, hidden=True,
              help="Be the background worker (what `sleuth index` starts): leave if another process embeds.")
@index_option
@format_option
@handle_errors
def embed_cmd(in_background: bool, worker: bool, index_dir: Path | None, fmt: str) -> None:
    """Embed the blocks that have no vector yet (after `sleuth index`), waiting for a background
    worker that is already at it; resumes where a killed worker stopped."""
    from sleuth import background
    from sleuth.engine import Engine
    from sleuth.interrupts import stop_on_interrupt
    from sleuth.progress import PlainLines, Progress, progress_interval_s, terminal_sink

    if worker:  # detached: stderr is embed.log
        with Engine.open(index_dir) as engine:
            label = f"{background.WORKER_LOG_LABEL} (process {os.getpid()})"
            sink = PlainLines(sys.stderr, progress_interval_s(), label)
            background.run_worker(engine, Progress(sink))
        return
    waited_s: float | None = None  # seconds waited for a background worker
    with Engine.open(index_dir) as engine:
        if in_background:
            pending = background.pending_blocks(engine)
            pid = background.start_worker(engine.index_dir) if pending else None
            result: dict[str, Any] = {"state": "background" if pid else "done", "pending_blocks": pending, "pid": pid}
        else:
            embedder = engine.embedder()
            before = 0 if embedder is None else engine.catalog.vector_counts(embedder.name, dim=embedder.dim)[0]
            started = time.monotonic()
            waited = background.worker_running(engine.index_dir)
            if waited:
                click.echo("waiting for the embedding worker to finish (its progress follows)", err=True)
            sink = terminal_sink(label="sleuth embed")
            progress = Progress(sink)
            try:
                with stop_on_interrupt():
                    done = background.embed_now(engine, progress) or 0
            except KeyboardInterrupt:
                sink.close()
                if background.worker_running(engine.index_dir):  # this one waited for it, and has let go
                    click.echo("sleuth embed: interrupted; the background worker goes on embedding: `sleuth status` "
                               "shows how far, `sleuth embed` waits for it again", err=True)
                else:
                    click.echo("sleuth embed: interrupted; the vectors made so far are kept: run `sleuth embed` "
                               "again to go on", err=True)
                sys.exit(INTERRUPTED_EXIT)
            finally:
                sink.close()
            have, total = (0, 0) if embedder is None else \
                engine.catalog.vector_counts(embedder.name, dim=embedder.dim)
            phase = progress.phases.get("embedding")  # its wait is until the lock was free, not the embedding's
            if waited:
                waited_s = phase.waited_s if phase is not None and phase.waited_s else time.monotonic() - started
            result = {"state": "done", "embedded": done, "embedded_by_worker": max(0, have - before - done),
                      "waited_s": round(waited_s, 1) if waited_s is not None else None,
                      "blocks_with_vectors": have, "blocks": total, "model_unavailable": engine.model_unavailable}
    if fmt == "json":
        emit_json(result)
    elif result.get("model_unavailable"):
        click.echo(f"nothing embedded: {result['model_unavailable']}")
    elif in_background:
        click.echo(f"embedding {result['pending_blocks']:,} block(s) in the background (process {result['pid']})"
                   if result["pid"]
                   else "every block has a vector: nothing to embed")
    else:
        from sleuth.progress import format_elapsed

        by_worker = (f" and the background worker {result['embedded_by_worker']:,} while this waited"
                     f" {format_elapsed(waited_s)}" if waited_s is not None else "")
        click.echo(f"embedded {result['embedded']:,} block(s) here{by_worker}; {result['blocks_with_vectors']:,} of "
                   f"{result['blocks']:,} blocks have a vector")


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

    from sleuth.engine import Engine
    from sleuth.ingest.names import one_line
    from sleuth.interrupts import stopped_by_signals
    from sleuth.watch import DEBOUNCE_MS, WatchBatch, WatchedRoot, left_out_roots, watch_index

    stop = threading.Event()

    def ready(roots: list[WatchedRoot]) -> None:
        names = sorted({r.project for r in roots})
        click.echo(f"watching {len(roots)} root(s) of {len(names)} project(s): {', '.join(names) or '(none)'}",
                   err=True)

    def show(batch: WatchBatch) -> None:
        if fmt == "json":
            click.echo(json.dumps({"project": batch.project, "root": batch.root, "paths": batch.paths,
                                   "took_s": batch.took_s, "error": batch.error, "embedding": batch.embedding,
                                   "report": batch.report.model_dump() if batch.report else None},
                                  ensure_ascii=False))
        elif batch.error:
            click.echo(one_line(f"{batch.project}: {batch.root}: error: {batch.error}"), err=True)
        elif batch.report is not None:
            r = batch.report
            if r.added or r.updated or r.removed or r.skipped:
                shown = ", ".join(p or "(whole root)" for p in batch.paths[:5])
                more = f" and {len(batch.paths) - 5} more" if len(batch.paths) > 5 else ""
                click.echo(one_line(f"{batch.project}: {shown}{more}: {r.added} added, {r.updated} updated, "
                                    f"{r.removed} removed, "
                                    f"{not_indexed_counts([(x['path'], x['reason']) for x in r.skipped])} "
                                    f"({batch.took_s:.2f} s)"))
        if fmt != "json" and batch.embedding and batch.embedding.get("started") is not False:
            click.echo(_embedding_line(batch.embedding), err=True)  # a worker started, or could not start

    from sleuth.progress import PlainLines, Progress, progress_interval_s

    interval = progress_interval_s()

    def progress() -> Progress:  # a line every few seconds on stderr for a batch that lasts
        return Progress(PlainLines(sys.stderr, interval, "sleuth watch", end_line=False))

    # Ctrl-C or SIGTERM stops the watch at once, a batch under way too (what it committed stays; the
    # rest is found again by the next watch's first scan): "sleuth watch: stopped", exit 0.
    with stopped_by_signals("watch", stop), Engine.open(index_dir) as engine:
        # An index found upwards may have come with its folder (a cloned repository): its roots there only
        explicit = index_dir is not None or bool(os.environ.get(INDEX_ENV))
        within = None if explicit else engine.index_dir.parent
        if within is not None and (outside := left_out_roots(engine, list(projects) or None, within)):
            click.echo(one_line(f"sleuth watch: {len(outside):,} root(s) outside {within}, the folder of the index"
                                f" found here, left out ({_some(outside)}): `sleuth watch --index"
                                f" {engine.index_dir}` watches them"), err=True)
        watch_index(engine, list(projects) or None, stop, debounce_ms or DEBOUNCE_MS, on_batch=show, ready=ready,
                    progress=progress, within=within)
