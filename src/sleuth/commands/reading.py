"""``sleuth search``, ``sleuth get`` and ``sleuth projects``: reading the index."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from sleuth.commands.options import (
    LanesOption,
    counted,
    emit_json,
    format_option,
    handle_errors,
    index_option,
    parse_lanes,
    say_waiting,
    when,
)
from sleuth.ingest.names import one_line, printable
from sleuth.ingest.roles import FILTER_KINDS, ROLES
from sleuth.types import (
    OFFSET_MAX,
    PATH_GLOBS_MAX,
    RANK_WINDOW_STEP_DOCS,
    SEARCH_VARIANTS_MAX,
    Hit,
    SearchFilters,
    SearchRequest,
    SearchResponse,
)


class DateParam(click.ParamType):
    """A date (``2024-03-01``) or ISO 8601 date-time (``2024-03-01T10:00:00Z``; no zone: UTC), as
    nanoseconds since the epoch; a date alone given to ``--until`` means the end of that day
    (:func:`sleuth.ingest.roles.time_bound_ns`, which the page's filters use too)."""

    name = "DATE"

    def __init__(self, end_of_day: bool = False) -> None:
        self.end_of_day = end_of_day

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        from sleuth.ingest.roles import time_bound_ns

        ns = time_bound_ns(str(value), self.end_of_day)
        if ns is None:
            self.fail(f"{value!r} is not a date (2024-03-01) or date-time (2024-03-01T10:00:00Z)", param, ctx)
        return ns


def project_ids(names: Sequence[str], param_hint: str = "'--project'") -> list[str]:
    """The project ids of ``--project`` values: a name is read as ``sleuth index --project`` reads
    it (``"My Notes!"`` is the project ``my-notes``, :func:`sleuth.types.project_id_for`); an id
    is itself. Raises click.BadParameter (naming ``param_hint``) for a name with nothing usable in it."""
    from sleuth.errors import QueryError
    from sleuth.types import project_id_for

    out = []
    for name in names:
        try:
            out.append(project_id_for(name))
        except QueryError as exc:
            raise click.BadParameter(str(exc), param_hint=param_hint) from None
    return list(dict.fromkeys(out))


def shown_path(h: Hit, qualified: set[str]) -> str:
    """A hit's path, root-qualified (``en/publish.css``) when its project has several roots."""
    return f"{h.root_label}/{h.path}" if h.project in qualified and h.root_label else h.path


def shown_ref(doc_id: str, shown: dict[str, Hit], qualified: set[str]) -> str:
    """A document as ``#rank path`` when it is among the ``shown`` hits (by doc id), else ``id <doc_id>``."""
    return f"#{shown[doc_id].rank} {shown_path(shown[doc_id], qualified)}" if doc_id in shown else f"id {doc_id}"


def superseded_note(h: Hit, shown: dict[str, Hit], qualified: set[str]) -> str:
    """What supersedes hit ``h``: each replacing document as ``#rank path`` when it is among the
    ``shown`` hits (by doc id), else by its id."""
    return ", ".join(shown_ref(d, shown, qualified) for d in h.superseded_by)


def render_text(resp: SearchResponse, explain: bool, qualified: set[str] | None = None,
                gone: set[str] | None = None, quiet_no_model: bool = False) -> str:
    """A search response as text: rank, score, path, location, title, heading, snippet, what
    supersedes it (and the trace). A hit whose ``freshness`` is ``stale`` is marked so after its
    path (``gone``: the doc ids of those whose file is gone rather than changed).

    ``quiet_no_model``: leave out the vector lane's "unavailable" line when the index has no model
    by choice (``model = "none"``), as for a search with the default lanes. The Inbox left out of a
    search of every project is named only when nothing was found (the JSON always carries it)."""
    from sleuth.errors import NO_MODEL_REASON
    from sleuth.freshness import stale_note
    from sleuth.fusion import SUPERSEDES_TRACE
    from sleuth.types import inbox_note

    out: list[str] = [f"(lane {lane} unavailable: {why})" for lane, why in resp.unavailable_lanes.items()
                      if not (quiet_no_model and why == NO_MODEL_REASON)]
    out += [f"(lane {lane} failed: {why})" for lane, why in resp.failed_lanes.items()]
    if not resp.hits:
        return "\n".join(map(one_line, [*out, f"no results for {resp.query!r}" + (f": {resp.notice}" if resp.notice
                                                                                   else "")]))
    # The Inbox left out is said where it explains an empty answer, not under every search that found something.
    notice = resp.notice
    if notice and resp.inbox_left_out:
        note = inbox_note(resp.inbox_left_out)
        notice = notice.replace(f"; {note}", "").replace(note, "").removeprefix("; ") or None
    if notice:
        out.append(f"({notice})")
    by_id = {h.doc_id: h for h in resp.hits}
    for h in resp.hits:
        heading = " > ".join(x for x in h.heading_path if x != h.location)
        where = f"  {h.location}" if h.location else ""
        note = stale_note(h.freshness, h.doc_id in (gone or set()))
        out.append(f"{h.rank:>2}. {shown_path(h, qualified or set())}  [{h.project}]  {h.kind}  score {h.score:.4f}"
                   f"{where}" + (f"  ({note}: run `sleuth index` again)" if note else ""))
        out.append(f"    {h.title}" + (f"  §  {heading}" if heading else ""))
        out.append("    " + " ".join(h.snippet.split())[:240])
        block = f"  block {h.best_block_id}" if h.best_block_id and h.best_block_id != h.doc_id else ""
        out.append(f"    id {h.doc_id}{block}  lanes {', '.join(h.sources)}"
                   + ("  (semantic-only match: found by the vector lane alone)" if h.semantic_only else ""))
        if h.superseded_by:
            out.append(f"    superseded by {superseded_note(h, by_id, qualified or set())}"
                       + ("  (so ranked below it, whatever its fused score)" if explain else ""))
        if h.moved_above:
            out.append(f"    supersedes {', '.join(shown_ref(d, by_id, qualified or set()) for d in h.moved_above)}"
                       "  (so moved above it; its score is at least that one's)")
        if explain and h.explain:
            for c in h.explain:
                if c.lane == SUPERSEDES_TRACE:
                    out.append(f"      moved above {shown_ref(c.moved_above or '', by_id, qualified or set())}, which"
                               f" it supersedes: contribution {c.contribution:.6f}  (its score {c.lane_score:.4f})")
                    continue
                counted = (f"repeats {c.repeats}, not counted" if c.repeats else
                           f"weight {c.weight:g}  contribution {c.contribution:.6f}")
                out.append(f"      {c.lane:<6} rank {c.rank:>4}  {counted}  (lane score {c.lane_score:.4f})")
            out.append(f"      sum = {sum(c.contribution for c in h.explain):.6f}")
    first = resp.hits[0].rank
    shown = f"results {first}-{first + len(resp.hits) - 1}" if first > 1 else f"{resp.result_count} result(s)"
    out.append(f"{shown} in {resp.took_ms:.1f} ms")
    # One entry a line: a title, heading or root named with a newline (YAML's `title: |`) cannot forge one.
    return "\n".join(map(one_line, out))


@click.command("search")
@click.argument("words", nargs=-1, required=True, metavar="QUERY...")
@click.option("--project", "projects", multiple=True,
              help="Search only this project (repeatable); without it, every project but the inbox (records "
                   "filed without a project), as MCP's all_projects.")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True, help="Maximum results.")
@click.option("--offset", type=click.IntRange(0, OFFSET_MAX), default=0, show_default=True,
              help="Skip this many results first (the next page: --offset 10 after --limit 10); pages within "
                   f"each {RANK_WINDOW_STEP_DOCS} results neither repeat nor skip one.")
@click.option("--path", "paths", multiple=True, metavar="GLOB",
              help="Only paths matching this gitignore-style glob ('docs/**', '*.md', 'en/**' for the root en, "
                   "'!drafts/' to leave out; repeatable, the last match decides).")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(FILTER_KINDS),
              help="Only documents of this kind (repeatable: any of them).")
@click.option("--role", "roles", multiple=True, type=click.Choice(ROLES),
              help="Only documents of this role (repeatable: any of them).")
@click.option("--tag", "tags", multiple=True, help="Only documents with this tag (repeatable: any of them).")
@click.option("--since", type=DateParam(), default=None,
              help="Only documents recorded on or after DATE (their date, else the file's modification time).")
@click.option("--until", type=DateParam(end_of_day=True), default=None,
              help="Only documents recorded on or before DATE (a date alone: until the end of that day, UTC).")
@click.option("--lanes", default=None, cls=LanesOption)
@click.option("--variant", "variants", multiple=True, metavar="TEXT",
              help="Another wording of the query, fused with it (repeatable); code identifiers and quoted "
                   "phrases of the query are added as variants by themselves.")
@click.option("--explain", is_flag=True, help="Show each result's per-lane rank and contribution to the fused score.")
@index_option
@format_option
@handle_errors
def search_cmd(words: tuple[str, ...], projects: tuple[str, ...], limit: int, offset: int, paths: tuple[str, ...],
               kinds: tuple[str, ...], roles: tuple[str, ...], tags: tuple[str, ...], since: int | None,
               until: int | None, lanes: str | None, variants: tuple[str, ...], explain: bool,
               index_dir: Path | None, fmt: str) -> None:
    """Search the index for QUERY. Its words may come as one argument or several (`sleuth search
    raised beds`); quote words ("like this", inside the shell's quotes) to require an exact phrase.

    Filters apply inside every lane before its top results are cut, so a filtered search returns
    as many results as an unfiltered one would. A document that another one in the index
    supersedes ranks below it. When the index's broker runs (an MCP session started it), it
    answers the search, with the index and the model already loaded; $SLEUTH_BROKER=0 searches
    in this process."""
    query = " ".join(words)  # `sleuth search raised beds` as `sleuth search "raised beds"`
    if since is not None and until is not None and since > until:
        raise click.BadParameter("--since is later than --until: no document can match", param_hint="--since")
    for given, most, hint in ((variants, SEARCH_VARIANTS_MAX, "--variant"), (paths, PATH_GLOBS_MAX, "--path")):
        if len(given) > most:
            raise click.BadParameter(f"{len(given)} given; the limit is {most}", param_hint=hint)
    filters = SearchFilters(kinds=list(kinds), roles=list(roles), paths=list(paths), tags=list(tags),
                            recorded_after_ns=since, recorded_before_ns=until)
    request = SearchRequest(query=query, projects=project_ids(projects) or None, inbox=False, limit=limit,
                            offset=offset, lanes=parse_lanes(lanes), explain=explain,
                            variants=list(variants), filters=filters, details=True)
    answered = _from_broker(index_dir, request)
    if answered is not None:
        resp, qualified = answered
    else:
        from sleuth.engine import Engine  # not imported when the broker answers

        with Engine.open(index_dir, serving=True) as engine:
            resp = engine.search(request)
            qualified = engine.multi_root_projects()
    if fmt == "json":
        emit_json(search_json(resp))
    else:
        from sleuth.freshness import file_gone

        gone = {h.doc_id for h in resp.hits if h.freshness == "stale" and file_gone(h.root, h.path)}
        # a title or snippet may hold terminal escapes
        click.echo(printable(render_text(resp, explain, qualified, gone, quiet_no_model=lanes is None)))


def search_json(resp: SearchResponse) -> dict[str, Any]:
    """``sleuth search --format json``'s object: the response without ``questions``, whose one
    question (the CLI asks one) repeats ``hits`` word for word, with that question's ``variants``
    (the query first, then ``--variant`` texts and the identifiers and phrases added) in its place."""
    out = resp.model_dump(exclude={"questions"})
    out["variants"] = list(resp.questions[0].variants) if resp.questions else [resp.query]
    return out


def _from_broker(index_dir: Path | None, request: SearchRequest) -> tuple[SearchResponse, set[str]] | None:
    """The answer of the index's running broker (:mod:`sleuth.broker.search`), or None when none
    answers and the search runs in this process."""
    from sleuth.broker.search import search_via_broker
    from sleuth.locate import find_index_dir, has_catalog

    try:
        found = find_index_dir(index_dir)
    except OSError:
        return None
    if found is None or not has_catalog(found):
        return None  # Engine.open reports it
    return search_via_broker(found, request)


def _cwd_path(engine: Any, ref: str, scope: list[str] | None) -> tuple[str, str | None]:
    """``(ref as the engine takes it, a note for stderr or None)``. A file relative to the current
    folder (``a.md`` typed inside ``notes/``, ``./a.md``, ``../docs/x.md``) is that file, as the shell
    opens it (its real path: ``link/../x.md`` is where the link leads), when it is a document of the
    index (or a file indexing passed over); it wins over another project's document of the same
    root-relative path (``./readme.md`` in ``a/notes`` is not project b's ``readme.md``). A path
    written from here (``./``, ``../``) names that file only: not indexed, it is not found. A bare
    name of a file here that is not indexed is also read as a path relative to a root (the form
    results show), with a note saying the file here is not the one shown. Otherwise ``ref`` as given:
    an id, a path relative to its root or an absolute path. A command line's paths are the shell's;
    the MCP tools, which run nowhere in particular, take ids and root-relative paths."""
    import os

    from sleuth.errors import QueryError, SleuthError

    try:
        if os.path.isabs(ref) or "\0" in ref or not os.path.lexists(ref):
            return ref, None
        here = os.path.realpath(ref)
    except (OSError, ValueError):  # the current folder was deleted; a name too long
        return ref, None
    try:
        engine.resolve(here, scope)
    except QueryError:  # the file here is a document of several projects: that error, naming them
        return here, None
    except SleuthError as exc:
        if str(exc).startswith("not indexed: ") or ref.startswith(("./", "../")) or ref in (".", ".."):
            return here, None  # indexing passed over the file, or a path written from here: that file's error
        if "." not in ref and "/" not in ref:  # an id (hex, a block's ``:``) that is also a file's name here
            return ref, None
        return ref, (f"{ref} here ({here}) is not a document of the index; shown instead: the document whose path"
                     f" in its root is {ref}")
    return here, None


@click.command("get")
@click.argument("ref", metavar="ID_OR_PATH")
@click.option("--project", "projects", multiple=True, help="Look only in this project (repeatable).")
@index_option
@format_option
@handle_errors
def get_cmd(ref: str, projects: tuple[str, ...], index_dir: Path | None, fmt: str) -> None:
    """Print a whole document, or one block of it.

    ID_OR_PATH: a document id or block id (as `sleuth search` shows them), or a path relative to
    its root (docs/setup.md), qualified by the root's folder name when several roots hold it
    (en/publish.css), or a file's path from here (absolute, or relative to the current folder).
    The text printed is the one indexed: when the file changed or is gone
    since, a note on stderr says so (JSON: ``freshness`` "current" or "stale", and
    ``stale_reason`` "changed" or "gone" when stale); the exit code stays 0."""
    from sleuth.engine import Engine
    from sleuth.freshness import file_gone, row_freshness, stale_note

    with Engine.open(index_dir, serving=True) as engine:
        scope = project_ids(projects) or None
        ref, elsewhere = _cwd_path(engine, ref, scope)
        _doc_id, block_id = engine.resolve(ref, scope)
        doc = engine.get(ref, scope)
        qualified = doc.project in engine.multi_root_projects()
        row = engine.catalog.document(doc.doc_id)
    state = row_freshness(row) if row is not None else "current"
    gone = state == "stale" and file_gone(doc.root, doc.path)
    fresh: dict[str, Any] = {"freshness": state, "stale_reason": ("gone" if gone else "changed")
                             if state == "stale" else None}
    if elsewhere is not None:
        click.echo(printable(f"sleuth get: {elsewhere}"), err=True)
    note = stale_note(state, gone)
    if note and fmt != "json":
        click.echo(printable(f"sleuth get: {note}; shown as indexed -- run `sleuth index` again to read it anew"),
                   err=True)
    path = f"{doc.root_label}/{doc.path}" if qualified and doc.root_label else doc.path
    block = next((b for b in doc.blocks if b["block_id"] == block_id), None) if block_id else None
    if block is not None:
        chars = block["chars"]
        assert isinstance(chars, list)
        text = doc.text[chars[0]:chars[1]]
        if fmt == "json":
            emit_json({"doc_id": doc.doc_id, "project": doc.project, "path": doc.path, "root": doc.root,
                       "root_label": doc.root_label, "title": doc.title, "kind": doc.kind, **block, "text": text,
                       **fresh})
        else:
            click.echo(printable(f"# {one_line(doc.title)}\n({doc.project}: {one_line(path)}, {block['location']},"
                                 f" block {block_id})\n"))
            click.echo(printable(text))
        return
    if fmt == "json":
        emit_json({**doc.model_dump(), **fresh})
    else:
        status = f", {doc.status}" if doc.status else ""
        # control characters of the file (terminal escapes) shown escaped, never sent to the terminal
        # the header's title and path on their own lines: a name holding a newline cannot forge a line
        click.echo(printable(f"# {one_line(doc.title)}\n({doc.project}: {one_line(path)}, {doc.kind}{status},"
                             f" revision {doc.revision})\n"))
        click.echo(printable(doc.text))


@click.group("projects", invoke_without_command=True)
@index_option
@format_option
@click.pass_context
@handle_errors
def projects_cmd(ctx: click.Context, index_dir: Path | None, fmt: str) -> None:
    """List the projects of the index with their roots and counts (`sleuth projects remove NAME`
    removes one)."""
    if ctx.invoked_subcommand is not None:
        return
    from sleuth.engine import Engine

    with Engine.open(index_dir, serving=True) as engine:
        projects = engine.projects()
    if fmt == "json":
        emit_json({"projects": [p.model_dump() for p in projects]})
        return
    if not projects:
        click.echo("no projects yet: run `sleuth index PATH`")
    for p in projects:
        click.echo(f"{p.project_id}: {counted(p.documents, 'document')}, {counted(p.blocks, 'block')}, "
                   f"last indexed {when(p.last_indexed)}")
        for root in p.roots:
            click.echo(f"    {one_line(root)}")  # a root named with a newline cannot forge a line


@projects_cmd.command("remove")
@click.argument("project")
@index_option
@format_option
@handle_errors
def projects_remove_cmd(project: str, index_dir: Path | None, fmt: str) -> None:
    """Remove PROJECT from the index: its documents leave every lane and `sleuth watch`, and its
    roots can be indexed again under another project. No file is deleted (records written by MCP
    stay in the index's memory folder); vectors stay cached for texts indexed again."""
    from sleuth.auth.users import grants_by_project
    from sleuth.engine import Engine

    project = project_ids([project], "'PROJECT'")[0]  # a name as `sleuth index --project` made it an id
    with Engine.open(index_dir, serving=True) as engine:
        say_waiting("sleuth projects remove", engine.folder.write_lock)
        removed = engine.remove_project(project)
        grants, problem = grants_by_project(engine.index_dir)
        granted = grants.get(project, [])
    if fmt == "json":
        emit_json({"project": project, "removed": True, "documents": removed, "granted_to": granted,
                   "grants_unchecked": problem})
    else:
        click.echo(f"removed project {project!r}: {removed:,} document(s) left the index (no file was deleted)")
        if problem:
            click.echo(f"  warning: the users file could not be read ({problem}), so the users still holding a grant"
                       f" on {project!r} are not named")
        if granted:
            click.echo(f"  user(s) {', '.join(granted)} of `sleuth serve --http` still hold a grant on {project!r}: a"
                       f" project made later under that id is theirs to search too (`sleuth users remove NAME`, then"
                       f" `sleuth users add NAME --project ...`, changes a user's projects)")
