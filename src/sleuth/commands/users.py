"""``sleuth users add|list|remove|token|revoke|disable|enable|rotate-key``: the users of ``sleuth serve --http``."""

from __future__ import annotations

from pathlib import Path

import click

from sleuth.commands.options import emit_json, format_option, handle_errors, index_option
from sleuth.errors import IndexNotFound


def _index(index_dir: Path | None) -> Path:
    from sleuth.locate import find_index_dir, has_catalog

    found = find_index_dir(index_dir)
    if found is None or not has_catalog(found):  # the catalog's file, or the folder of a PostgreSQL catalog
        raise IndexNotFound(f"no index found{f' at {found}' if found else ''}: pass --index or run `sleuth index`")
    return found


@click.group("users")
def users_group() -> None:
    """The users of `sleuth serve --http`: their projects, scopes and bearer tokens.

    Kept in users.json in the index folder (mode 0600); the server reads it again when it changes,
    so every change holds from the next request on.
    """


@users_group.command("add")
@click.argument("name")
@click.option("--project", "projects", multiple=True, required=True,
              help="A project the user may access (repeatable).")
@click.option("--write", is_flag=True,
              help="Also grant the sleuth:write scope (project_memory_record, project_memory_forget).")
@index_option
@handle_errors
def users_add_cmd(name: str, projects: tuple[str, ...], write: bool, index_dir: Path | None) -> None:
    """Add user NAME with access to the given projects (read-only unless --write)."""
    from sleuth.auth.tokens import signing_key
    from sleuth.auth.users import UserStore
    from sleuth.engine import Engine
    from sleuth.errors import ConfigError

    folder = _index(index_dir)
    from sleuth.types import INBOX_PROJECT_ID

    with Engine.open(folder) as engine:
        known = {*engine.project_ids(), INBOX_PROJECT_ID}  # the Inbox is there before its first record
    unknown = sorted(set(projects) - known)
    if unknown:
        raise ConfigError(f"unknown project(s): {', '.join(unknown)} (see `sleuth projects`)")
    user = UserStore(folder).add(name, projects, write)
    signing_key(folder, create=True)
    click.echo(f"added {user.name}: projects {', '.join(user.projects)}; scopes {' '.join(user.scopes)}")
    click.echo(f"make a token with: sleuth users token {user.name} --url URL --index {folder} "
               "(URL: the server's MCP URL, its --url or http://HOST:PORT/mcp)", err=True)


@users_group.command("list")
@index_option
@format_option
@handle_errors
def users_list_cmd(index_dir: Path | None, fmt: str) -> None:
    """List the users with their projects, scopes and state."""
    from sleuth.auth.users import UserStore

    users = UserStore(_index(index_dir)).users()
    rows = [{"name": u.name, "projects": list(u.projects), "scopes": list(u.scopes), "disabled": u.disabled,
             "created_at": u.created_at} for u in sorted(users.values(), key=lambda u: u.name)]
    if fmt == "json":
        emit_json({"users": rows})
        return
    if not rows:
        click.echo("no users (add one with `sleuth users add NAME --project P`)")
    for row in rows:
        state = " (disabled)" if row["disabled"] else ""
        click.echo(f"{row['name']}{state}: projects {', '.join(row['projects'])}; scopes {' '.join(row['scopes'])}")


@users_group.command("remove")
@click.argument("name")
@index_option
@handle_errors
def users_remove_cmd(name: str, index_dir: Path | None) -> None:
    """Remove user NAME: their tokens are refused from the server's next request on."""
    from sleuth.auth.users import UserStore

    UserStore(_index(index_dir)).remove(name)
    click.echo(f"removed {name}")


@users_group.command("revoke")
@click.argument("name")
@index_option
@handle_errors
def users_revoke_cmd(name: str, index_dir: Path | None) -> None:
    """Revoke every token issued to NAME so far (the user stays; make a new token)."""
    from sleuth.auth.users import UserStore

    UserStore(_index(index_dir)).revoke(name)
    click.echo(f"revoked every token of {name}")


@users_group.command("disable")
@click.argument("name")
@index_option
@handle_errors
def users_disable_cmd(name: str, index_dir: Path | None) -> None:
    """Disable NAME: their tokens are refused until `sleuth users enable`."""
    from sleuth.auth.users import UserStore

    UserStore(_index(index_dir)).set_disabled(name, True)
    click.echo(f"disabled {name}")


@users_group.command("enable")
@click.argument("name")
@index_option
@handle_errors
def users_enable_cmd(name: str, index_dir: Path | None) -> None:
    """Enable NAME again (tokens issued before still work unless revoked)."""
    from sleuth.auth.users import UserStore

    UserStore(_index(index_dir)).set_disabled(name, False)
    click.echo(f"enabled {name}")


@users_group.command("token")
@click.argument("name")
@click.option("--ttl", default="30d", show_default=True, metavar="DURATION",
              help="Lifetime: a number with s, m, h, d or w (at most 366d).")
@click.option("--url", default=None, metavar="URL",
              help="The server's MCP URL the token is for (its audience), as clients reach it: the "
                   "server's --url, else http://HOST:PORT/mcp of its --http (default: $SLEUTH_HTTP_URL, else "
                   "http://127.0.0.1:8765/mcp). A server refuses a token for another URL with 401, naming "
                   "its own URL.")
@click.option("--read-only", is_flag=True, help="Leave out the sleuth:write scope even if the user holds it.")
@index_option
@handle_errors
def users_token_cmd(name: str, ttl: str, url: str | None, read_only: bool, index_dir: Path | None) -> None:
    """Print a bearer token for NAME (a signed JWT) on stdout; send it as `Authorization: Bearer TOKEN`."""
    from sleuth.auth.tokens import canonical_resource, default_server_url, parse_ttl, token_for_cli
    from sleuth.auth.users import SCOPE_READ

    target = url or default_server_url()
    token = token_for_cli(_index(index_dir), name, target, parse_ttl(ttl), (SCOPE_READ,) if read_only else None)
    click.echo(token)
    click.echo(f"token for {name} at {canonical_resource(target)}, valid for {ttl}", err=True)


@users_group.command("rotate-key")
@click.option("--grace", default="24h", show_default=True, metavar="DURATION",
              help="How long tokens signed with the previous key keep working: a number with s, m, h, d or w "
                   "(0 drops it at once; at most 366d).")
@index_option
@handle_errors
def users_rotate_key_cmd(grace: str, index_dir: Path | None) -> None:
    """Make a new token-signing key; the previous one stays valid for --grace, then is dropped.

    New tokens (`sleuth users token`) are signed with the new key and name it in their `kid`
    header; a running server picks the change up at its next request.
    """
    from datetime import UTC, datetime

    from sleuth.auth.keys import rotate_keys
    from sleuth.auth.tokens import parse_duration

    fresh, kept = rotate_keys(_index(index_dir), parse_duration(grace, allow_zero=True))
    click.echo(f"new signing key {fresh.kid}")
    for key in kept:
        until = datetime.fromtimestamp(key.expires_at or 0, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        click.echo(f"key {key.kid}: its tokens work until {until}")
    click.echo("make new tokens with: sleuth users token NAME", err=True)
