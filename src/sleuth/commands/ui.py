"""``sleuth ui``: the local web page over an index (see :mod:`sleuth.ui`)."""

from __future__ import annotations

from pathlib import Path

import click

from sleuth.commands.options import handle_errors, index_option
from sleuth.ui import UI_DEFAULT_PORT


@click.command("ui")
@click.option("--port", type=click.IntRange(0, 65535), default=UI_DEFAULT_PORT, show_default=True,
              help="TCP port to listen on (0: any free port; the URL is printed).")
@click.option("--host", type=click.Choice(["127.0.0.1", "::1", "localhost"]), default="127.0.0.1",
              show_default=True, help="Loopback address to listen on (the page is never served beyond this machine).")
@click.option("--project", "projects", multiple=True,
              help="Projects the page may show, by name or id (repeatable; default: every project).")
@index_option
@handle_errors
def ui_cmd(port: int, host: str, projects: tuple[str, ...], index_dir: Path | None) -> None:
    """Serve a local web page to search the index, see why each result ranked, read documents and
    check what the index holds. Open the printed URL in a browser: it holds a token made for this
    run, which every request needs (other accounts of this machine cannot use the page); Ctrl-C stops it."""
    from sleuth.commands.reading import project_ids
    from sleuth.engine import Engine
    from sleuth.errors import ProjectNotFound, shown
    from sleuth.interrupts import stopped_by_signals
    from sleuth.types import project_id_for
    from sleuth.ui.app import serve_ui

    # a name is read as `sleuth index --project` and `sleuth search --project` read it
    chosen = project_ids(projects)
    # Ctrl-C or SIGTERM stops the page: "sleuth ui: stopped", exit 0 (not click's "Aborted!", 1)
    with stopped_by_signals("ui"), Engine.open(index_dir, serving=True) as engine:
        known = set(engine.project_ids())
        for given in projects:
            if project_id_for(given) not in known:
                raise ProjectNotFound(f"project not found: {shown(given)!r}")
        serve_ui(engine, port, host, chosen or None,
                 ready=lambda url: click.echo(f"sleuth ui: serving {url} (Ctrl-C to stop)"))
