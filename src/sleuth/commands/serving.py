"""``sleuth serve`` (MCP over stdio) and ``sleuth broker run|status|stop``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from sleuth.commands.options import emit_json, format_option, handle_errors, index_option
from sleuth.errors import IndexNotFound
from sleuth.locate import INDEX_DIR_NAME, find_index_dir


@click.command("serve")
@click.option("--project", "projects", multiple=True,
              help="Projects the MCP client may access, by name or id (repeatable; default: every project).")
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
@click.option("--http", "http_bind", default=None, metavar="[HOST:]PORT",
              help="Serve MCP over streamable HTTP at http://HOST:PORT/mcp instead of stdio, to the users of "
                   "`sleuth users` with their bearer tokens (HOST defaults to 127.0.0.1, loopback only), and "
                   "the search page of `sleuth ui` at http://HOST:PORT/ui/ behind the same tokens.")
@click.option("--url", "public_url", default=None, metavar="URL",
              help="With --http: the URL clients use for the MCP endpoint (e.g. https://kb.example.com/mcp "
                   "behind a TLS proxy); tokens must name it (`sleuth users token --url`). "
                   "Default http://HOST:PORT/mcp.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="HOST[:PORT]",
              help="With --http: another Host header value to accept (repeatable); others get 421.")
@click.option("--allow-origin", "allow_origins", multiple=True, metavar="ORIGIN",
              help="With --http: another browser Origin to accept, e.g. https://app.example (repeatable); "
                   "others get 403.")
@click.option("--max-request-bytes", type=click.IntRange(min=1024), default=None,
              help="With --http: largest request body accepted (default 4 MiB); larger ones get 413.")
@click.option("--rate-limit", "rate_limit", default=None, metavar="N/PERIOD",
              help="With --http: requests allowed per token, as N/s, N/min or N/hour (default 600/min); "
                   "more get 429.")
@click.option("--audit-queries", is_flag=True,
              help="With --http: the audit log (audit.jsonl in the index folder) also records query texts.")
@click.option("--issuer-url", default=None, metavar="URL",
              help="With --http and --jwks-url: also accept RS256/ES256 access tokens of this external OAuth "
                   "issuer (their iss), mapped to `sleuth users` by sub; the metadata names it.")
@click.option("--jwks-url", default=None, metavar="URL",
              help="With --http and --issuer-url: the issuer's JSON Web Key Set (https, or http to loopback).")
@index_option
@handle_errors
def serve_cmd(projects: tuple[str, ...], tools: str | None, guides_file: Path | None, events_file: Path | None,
              no_broker: bool, http_bind: str | None, public_url: str | None, allow_hosts: tuple[str, ...],
              allow_origins: tuple[str, ...], max_request_bytes: int | None, rate_limit: str | None,
              audit_queries: bool, issuer_url: str | None, jwks_url: str | None, index_dir: Path | None) -> None:
    """Serve over MCP on stdio the tool families chosen with --tools (default: memory and project tools).

    With an index, the session goes through the index's broker (`sleuth broker`), started on first use.
    With --http, serve a team over streamable HTTP instead: each user sees only their projects
    (`sleuth users`).
    """
    if projects:  # names as `sleuth index --project` made them ids
        from sleuth.commands.reading import project_ids

        projects = tuple(project_ids(projects))
    http_only = {"--url": public_url, "--allow-host": allow_hosts, "--allow-origin": allow_origins,
                 "--max-request-bytes": max_request_bytes, "--rate-limit": rate_limit,
                 "--audit-queries": audit_queries, "--issuer-url": issuer_url, "--jwks-url": jwks_url}
    if http_bind is not None:
        from sleuth.interrupts import stopped_by_signals

        # Ctrl-C or SIGTERM stops the server: "sleuth serve: stopped", exit 0 (not click's "Aborted!", 1)
        with stopped_by_signals("serve"):
            _serve_http(http_bind, projects, tools, guides_file, events_file, public_url, allow_hosts,
                        allow_origins, max_request_bytes, rate_limit, audit_queries, index_dir, issuer_url, jwks_url)
        return
    given = [name for name, value in http_only.items() if value]
    if given:
        raise click.UsageError(f"{', '.join(given)} only apply with --http")
    from sleuth.broker.client import broker_enabled, serve_via_broker

    if not no_broker and broker_enabled():
        code = serve_via_broker(index_dir, tools, projects, guides_file, events_file)
        if code is not None:
            sys.exit(code)
    from sleuth.config import load_serve_settings
    from sleuth.mcp.server import parse_profiles, run_stdio

    settings = load_serve_settings(find_index_dir(index_dir))
    run_stdio(
        parse_profiles(tools if tools is not None else settings.tools),
        index=index_dir,
        allowed_projects=list(projects) or None,
        guides_path=guides_file or settings.guides,
        events_path=events_file,
    )


def _serve_http(bind: str, projects: tuple[str, ...], tools: str | None, guides_file: Path | None,
                events_file: Path | None, public_url: str | None, allow_hosts: tuple[str, ...],
                allow_origins: tuple[str, ...], max_request_bytes: int | None, rate_limit: str | None,
                audit_queries: bool, index_dir: Path | None, issuer_url: str | None = None,
                jwks_url: str | None = None) -> None:
    from sleuth.httpd.settings import HTTP_REQUEST_MAX_BYTES, RATE_LIMIT_DEFAULT, http_settings

    if events_file is not None:
        raise click.UsageError("--events applies to stdio sessions; over --http every call is in the audit log")
    settings = http_settings(bind, public_url, allow_hosts, allow_origins,
                             max_request_bytes or HTTP_REQUEST_MAX_BYTES, rate_limit or RATE_LIMIT_DEFAULT,
                             audit_queries, issuer_url, jwks_url)
    from sleuth.config import load_serve_settings
    from sleuth.httpd.app import run_http
    from sleuth.mcp.server import parse_profiles

    serve_settings = load_serve_settings(find_index_dir(index_dir))
    run_http(settings, parse_profiles(tools if tools is not None else serve_settings.tools), index=index_dir,
             allowed_projects=list(projects) or None, guides_path=guides_file or serve_settings.guides)


@click.group("broker")
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


def _config_error(index_dir: Path) -> str | None:
    """Why the settings of ``index_dir`` cannot be loaded (the broker a session starts loads them
    first, and exits on this error), or None when they can."""
    from sleuth.config import load_config
    from sleuth.errors import ConfigError

    try:
        load_config(index_dir)
    except ConfigError as exc:
        return str(exc)
    return None


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
        emit_json({"brokers": brokers})
        return
    from sleuth.ingest.names import one_line

    if not brokers:
        click.echo(one_line(f"no broker running{f' for {scope}' if scope else ''}"))
        if scope is not None and (bad := _config_error(scope)):
            click.echo(one_line(f"  and none can start: {bad}"))
    for b in brokers:  # an index path named with a newline cannot forge a line
        if b.get("state") != "serving":
            click.echo(one_line(f"broker {b.get('pid')} for {b.get('index')}: {b.get('state')}"))
            continue
        click.echo(one_line(f"broker {b['pid']} for {b['index']}: {b['sessions']} session(s) ({b['sessions_total']}"
                            f" since start), {b['calls_running']} call(s) running, idle {b['idle_s']:g} s (exits"
                            f" after {b['idle_exit_s']:g} s), up {b['uptime_s']:g} s, {b['rss_mb']} MB"))
        if b.get("config_current") is False:
            click.echo("  serving the settings of config.toml as it was when it started: it was edited since, so"
                       " new sessions get another broker, and this one exits once its sessions end")
        if b["requests_running"]:
            click.echo(f"  running requests: {', '.join(b['requests_running'])}")


@broker_group.command("stop")
@click.option("--all", "all_brokers", is_flag=True, help="Stop every broker of this user.")
@index_option
@handle_errors
def broker_stop_cmd(all_brokers: bool, index_dir: Path | None) -> None:
    """Stop the index's broker (--all: every broker of this user); calls running in it finish
    first, and its sessions end."""
    from sleuth.broker.client import stop_brokers

    scope = _broker_scope(index_dir, all_brokers)
    if scope is None and not all_brokers:  # stopping every broker (other projects' sessions) is asked for by name
        raise IndexNotFound(f"no index found here (looked for {INDEX_DIR_NAME}/ in {Path.cwd()} and its parents): "
                            "pass --index DIR for its broker, or --all to stop every broker of this user")
    from sleuth.ingest.names import one_line

    stopped = stop_brokers(scope)
    if not stopped:
        click.echo(one_line(f"no broker running{f' for {scope}' if scope else ''}"))
    for row in stopped:
        state = "stopped" if row["stopped"] else "did not stop in time"
        click.echo(one_line(f"broker {row['pid']} for {row['index']}: {state}"))
    if not all(row["stopped"] for row in stopped):
        sys.exit(1)
