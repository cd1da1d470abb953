"""``sleuth status`` and ``sleuth doctor``: the index's health, rendered from their typed reports."""

from __future__ import annotations

import sys
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sleuth.commands.options import counted, emit_json, format_option, handle_errors, index_option, when

if TYPE_CHECKING:  # imported by the commands that open the index, not when `sleuth` starts
    from sleuth.reports import (
        CatalogBackend,
        DoctorReport,
        EmbeddingProgress,
        FamilyHealth,
        MilvusReport,
        RootCoverage,
        SkippedReason,
        StatusReport,
    )

#: The exit status of ``sleuth doctor`` when its report needs attention (0: all is well).
DOCTOR_NEEDS_ATTENTION_EXIT = 1


def render_embedding(e: EmbeddingProgress) -> str:
    """One line on the embedding: ``embedding in progress: 1,200 of 3,400 blocks (35 %), 41.5 blocks/s, ETA 53 s``."""
    from sleuth.progress import format_duration

    share = f" ({100 * e.embedded // e.total} %)" if e.total else ""
    counts = f"{e.embedded:,} of {e.total:,} blocks{share}"
    who = f" (process {e.pid})" if e.pid else ""  # a state file without a believable pid names none
    if e.state == "running" and e.starting:
        return f"embedding starting{who}: loading the model; {counts} embedded so far"
    if e.state == "running":
        rate = f", {e.rate_blocks_per_s:,.1f} blocks/s" if e.rate_blocks_per_s else ""
        eta = f", ETA {format_duration(e.eta_s)}" if e.eta_s is not None else ""
        return f"embedding in progress{who}: {counts} embedded{rate}{eta}"
    if e.state == "stopped":
        failed = f"; the last run failed: {e.error}" if e.error else ""
        return (f"embedding stopped: {counts} embedded and no process is embedding the rest{failed}: "
                "run `sleuth embed` to resume")
    return f"embedding done: {counts}"


def not_indexed_head(total: int, failed: int) -> str:
    """The heading of a list of ``total`` files not indexed, ``failed`` of them because they could not be
    read or parsed (:func:`sleuth.freshness.skip_state`): ``3 skipped file(s)``, ``2 failed file(s)``
    or ``5 file(s) not indexed (3 skipped, 2 failed)``, the words of every command."""
    if not 0 < failed <= total:
        return f"{total:,} skipped file(s)"
    if failed == total:
        return f"{total:,} failed file(s)"
    return f"{total:,} file(s) not indexed ({total - failed:,} skipped, {failed:,} failed)"


def render_skip_summary(groups: list[SkippedReason], indent: str, hint: str) -> list[str]:
    """Skipped files counted by reason, with the first paths of each."""
    out = []
    for g in groups:
        more = f", ... ({g.count - len(g.examples):,} more)" if g.count > len(g.examples) else ""
        out.append(f"{indent}{g.count:,} {g.reason} ({', '.join(g.examples)}{more})")
    if any(g.count > len(g.examples) for g in groups):
        out.append(f"{indent}every skipped file and its reason: {hint}")
    return out


def _coverage_line(c: RootCoverage) -> str:
    """One root's coverage line of ``sleuth status``."""
    return (f"    {c.root or '(records)'}: {c.indexed:,} indexed, {c.skipped:,} skipped, "
            f"{c.failed:,} failed, last indexed {when(c.last_indexed)}"
            + ("; parsed by an older sleuth: run `sleuth index` to parse it again" if c.outdated else ""))


def render_backends(catalog: CatalogBackend, milvus: MilvusReport | None) -> list[str]:
    """Where the catalog lives and, in scale-out mode, the lanes in Milvus: its address and
    version (or why it cannot be reached), the generation it reflects, a sync under way or stopped,
    the documents left out of it (the first ones)."""
    out = [f"  catalog: {catalog.backend} {catalog.location}"]
    if milvus is None:
        return out
    where = f"{milvus.uri}, collections {milvus.collection}_*"
    out.append(f"  milvus: {milvus.server_version} at {where}" if milvus.reachable
               else f"  milvus at {where}: {milvus.error}")
    vectors = (f", vectors at generation {milvus.dense_generation}"
               if milvus.dense_generation is not None and milvus.dense_generation != milvus.generation else "")
    recorded = "" if milvus.reachable else " (as the catalog records)"
    if milvus.generation is None:
        out.append(f"  milvus lanes never synced{recorded} (catalog at generation {milvus.catalog_generation}):"
                   " the next search or `sleuth index` syncs them")
    else:
        out.append(f"  milvus lanes at generation {milvus.generation} of {milvus.catalog_generation}{vectors}"
                   f"{recorded}: " + ("up to date" if milvus.up_to_date else
                                      "behind, the next search or `sleuth index` syncs them"))
    sync = milvus.sync
    if sync is not None:
        what = f"milvus sync to generation {sync.target_generation} ({'every row' if sync.rebuild else 'changes'})"
        out.append(f"  {what} under way: {sync.holder or 'another process'} holds the write lock"
                   if sync.state == "running" else
                   f"  {what} stopped mid-way (no process holds the write lock): the next search or"
                   " `sleuth index` finishes it")
    if milvus.left_out_count or milvus.left_out_more:
        plus = "+" if milvus.left_out_more else ""
        out.append(f"  {milvus.left_out_count:,}{plus} document(s) left out of Milvus (a row a Milvus field cannot"
                   " hold: a damaged or hostile catalog):")
        out.extend(f"    {d.project_id} {d.path}: {d.reason}" for d in milvus.left_out)
        if milvus.left_out_count > len(milvus.left_out):
            out.append(f"    ... ({milvus.left_out_count - len(milvus.left_out):,} more)")
        if milvus.left_out_more:
            out.append("    more were left out than the catalog records by id")
    return out


def render_status(st: StatusReport, verbose: bool = False, qualified: Collection[str] = frozenset()) -> str:
    """A status report as text for people (``verbose``: every skipped file, not a summary by reason)."""
    out = [f"index {st.index_dir}",
           f"  {counted(st.documents, 'document')}, {counted(st.blocks, 'block')}, {len(st.projects):,} project(s),"
           f" generation {st.generation} (postings at {st.postings_generation})"]
    if st.postings_behind:
        out.append(f"  the bm25, index, rm3 and exact lanes answer from generation {st.postings_generation}:"
                   f" {st.postings_behind}")
    if st.read_only:
        out.append(f"  opened read-only: {st.read_only}")
    out.extend(render_backends(st.catalog, st.milvus))
    out.append(f"  lanes: {', '.join(st.lanes)} (fusion {st.fusion})")
    out.extend(f"  config.toml: {note}" for note in st.settings_unused)
    vec = st.vector_lane
    if vec.available:
        out.append(f"  vector lane: {vec.model} ({vec.dimensions:,} dimensions, {vec.path}), "
                   f"{vec.blocks_with_vectors:,} of {vec.blocks:,} blocks embedded")
    else:
        # the reason is also a search's notice, which points here; status shows the progress below
        out.append(f"  vector lane unavailable: {(vec.reason or '').removesuffix(' (`sleuth status` shows how far)')}")
    if vec.embedding is not None and vec.embedding.state != "done":
        out.append(f"  {render_embedding(vec.embedding)}")
        unfinished = [p.project_id for p in st.projects if not p.last_indexed]
        if vec.embedding.state == "stopped" and unfinished:  # `sleuth embed` alone would leave a partial index
            out.append(f"  first, no indexing run of project(s) {', '.join(unfinished)} has finished (interrupted?):"
                       " `sleuth index` goes on with it, then embeds")
    listed = {p.project_id for p in st.projects}
    for p in st.projects:  # each project's roots under it (a root may belong to several projects)
        out.append(f"  project {p.project_id}: {counted(p.documents, 'document')}, last indexed {when(p.last_indexed)}")
        out.extend(_coverage_line(c) for c in st.coverage if c.project == p.project_id)
    out.extend(_coverage_line(c) for c in st.coverage if c.project not in listed)
    out.append("  " + not_indexed_head(st.skipped, sum(c.failed for c in st.coverage)) + (":" if st.skipped else ""))
    if verbose or st.files is not None:
        out.extend(f"    {s.path}: {s.reason}" for s in st.skipped_files)
    else:
        out.extend(render_skip_summary(st.skipped_by_reason, "    ", "`sleuth status --verbose`"))
    out.append(f"  {len(st.problems):,} file(s) indexed with a warning")
    out.extend(f"    {p.path}: {p.problem}" for p in st.problems)
    if st.files is not None:
        stale = sum(1 for f in st.files if f.freshness == "stale")
        out.append(f"  {len(st.files):,} file(s), {stale:,} of them changed or gone since indexed (stale); every file:")
        several = len({f.project for f in st.files}) > 1  # then each line says its project, as doctor's do
        for f in st.files:
            shown = f"{f.project} " * several + _path(f.project, f.root, f.path, qualified)
            if f.state == "indexed":
                out.append(f"    {f.state:<8} {shown}  (indexed {f.indexed_at}, {f.freshness})")
            else:
                out.append(f"    {f.state:<8} {shown}  ({f.reason})")
    from sleuth.ingest.names import one_line

    return "\n".join(map(one_line, out))  # a root named with a newline cannot forge a line


def _partly_embedded(lane: FamilyHealth) -> str:
    """`` (700 of 1178 blocks embedded: ...)`` for an available vector family whose blocks do not
    all have a vector yet (it answers only for those that do), else nothing."""
    have, total = lane.details.get("blocks_with_vectors"), lane.details.get("blocks")
    if not lane.available or not isinstance(have, int) or not isinstance(total, int) or have >= total:
        return ""
    if lane.details.get("embedding") == "stopped":
        return (f" ({have:,} of {total:,} blocks embedded: it does not see the others, and no process is embedding"
                " them: run `sleuth embed` to resume)")
    return (f" ({have:,} of {total:,} blocks embedded: it does not see the others yet; `sleuth status` shows the"
            " embedding's progress, `sleuth embed` finishes it)")


def _path(project: str, root: str, path: str, qualified: Collection[str]) -> str:
    """A file's path as search results show it: with its root's label in front (``en/_index.md``)
    when its project has several roots (``qualified``, :meth:`Engine.multi_root_projects`)."""
    from sleuth.pathglob import qualified_path

    return qualified_path(root, path) if project in qualified else path


def _stale_advice(root: str, index_dir: str) -> str:
    """What to run for a stale document of ``root``: ``sleuth index`` again, or, when the root itself
    is gone (renamed or deleted), the command that removes its documents, naming this index (a root
    renamed with the index folder inside it is no longer where ``sleuth index`` looks for its index)."""
    import os

    from sleuth.ingest.names import shlex_quote

    if root and not os.path.lexists(root):
        return (f" its root {root} no longer exists: `sleuth index {shlex_quote(root)} --index"
                f" {shlex_quote(index_dir)}` removes its documents")
    return " run `sleuth index` again"


def render_doctor(report: DoctorReport, qualified: Collection[str] = frozenset()) -> str:
    """A doctor report as text for people (``qualified``: the projects with several roots, whose
    paths are shown with their root's label, as search results show them)."""
    out = [f"index {report.index_dir}: {'ok' if report.ok else 'needs attention'}"]
    out.extend(render_backends(report.catalog, report.milvus))
    for p in report.projects:
        failed = f", {p.failed_files:,} failed" if 0 < p.failed_files <= p.skipped_files else ""
        out.append(f"  project {p.project_id}: {counted(p.documents, 'document')}, {counted(p.blocks, 'block')}, "
                   f"{p.stale_documents:,} stale, {p.skipped_files - (p.failed_files if failed else 0):,} skipped"
                   f"{failed}; memory folder {p.memory_dir}")
    for name, lane in report.lanes.items():  # seed 004's retrieval families, each answered by lanes
        out.append(f"  retrieval family {name} (lanes {', '.join(lane.lanes) or 'none'}): "
                   + ("available" if lane.available else f"unavailable: {lane.reason}") + _partly_embedded(lane))
    if report.postings_generation != report.generation:
        out.append(f"  postings at generation {report.postings_generation} of {report.generation}: "
                   "the next search or index catches up")
    for pair in report.overlapping:
        projects, _, root = pair.partition(": ")
        out.append(f"  overlapping: projects {projects} both hold {root}: their files are in both, and a search of"
                   " every project returns them twice (`sleuth projects remove NAME` drops one; no file is deleted)")
    out.extend(f"  stale: {d.project_id} {_path(d.project_id, d.root, d.path, qualified)} (indexed {d.indexed_at}):"
               + _stale_advice(d.root, report.index_dir)
               for d in report.stale_documents)
    unlisted = report.stale_document_count - len(report.stale_documents)
    if unlisted > 0:  # the report lists the first ones only (memory.doctor.STALE_LISTED_MAX)
        out.append(f"  ... and {unlisted:,} more stale document(s) not listed here:"
                   " `sleuth status --files` lists every file")
    if report.skipped_by_reason:
        from sleuth.freshness import skip_state

        failed = sum(g.count for g in report.skipped_by_reason if skip_state(g.reason) == "failed")
        out.append(f"  {not_indexed_head(report.skipped_file_count, failed)}:")
        out.extend(render_skip_summary(report.skipped_by_reason, "    ", "`sleuth status --verbose`"))
    from sleuth.ingest.names import one_line

    return "\n".join(map(one_line, out))  # an index path named with a newline cannot forge a line


@click.command("status")
@click.option("--files", "files", is_flag=True,
              help="List every file: indexed (last indexed, current or stale), skipped or failed (with the reason).")
@click.option("--verbose", "-v", is_flag=True, help="List every skipped file (default: a summary by reason).")
@index_option
@format_option
@handle_errors
def status_cmd(files: bool, verbose: bool, index_dir: Path | None, fmt: str) -> None:
    """Show index health: documents, blocks, embedding progress, per-root coverage, skipped files
    by reason, last indexed; where the catalog lives and, in scale-out mode, the lanes in Milvus."""
    from sleuth.engine import Engine

    with Engine.open(index_dir, milvus_optional=True) as engine:  # an unreachable Milvus is reported
        st = engine.status(files=files, verbose=verbose)
        qualified = engine.multi_root_projects()
    if fmt == "json":
        emit_json(st.model_dump())
    else:
        click.echo(render_status(st, verbose, qualified))


@click.command("doctor")
@click.option("--project", "project", default=None, help="One project (default: all).")
@index_option
@format_option
@handle_errors
def doctor_cmd(project: str | None, index_dir: Path | None, fmt: str) -> None:
    """Check index health: stale documents (changed or deleted since indexed), skipped files, lanes.

    Exits 0 when all is well ("ok"), 1 when anything needs attention (stale documents, two projects
    holding the same files, postings behind the catalog, no vector lane although a model is
    configured, blocks waiting for a vector with no process embedding them, Milvus unreachable or
    behind the catalog: the report says what, in text or JSON), and with the codes of every
    command on errors (3: no index, 4: no such project, ...). A model turned off
    (SLEUTH_MODEL=none) is reported, not counted; so are skipped files and documents left out of
    Milvus."""
    from sleuth.engine import Engine
    from sleuth.memory.doctor import doctor

    with Engine.open(index_dir, milvus_optional=True) as engine:  # an unreachable Milvus is reported
        report = doctor(engine, project)
        qualified = engine.multi_root_projects()
    if fmt == "json":
        emit_json(report.model_dump())
    else:
        click.echo(render_doctor(report, qualified))
    if not report.ok:
        sys.exit(DOCTOR_NEEDS_ATTENTION_EXIT)
