"""What every command shares: the ``--index`` and ``--format`` options, the one place errors become
a line on stderr and an exit code, JSON output, and small formatting helpers."""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from sleuth.errors import SleuthError
from sleuth.lanes import registry
from sleuth.locate import INDEX_DIR_NAME

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


def _say(line: str) -> None:
    """A line on stderr (an error, a wait) kept on one line: a path named with a newline or an escape
    (a folder given to --index) cannot split it or reach the terminal
    (:func:`sleuth.ingest.names.one_line`). A stderr that cannot take it (full, closed) loses the
    line, not the exit code."""
    from sleuth.ingest.names import one_line

    try:
        click.echo(one_line(line), err=True)
    except (OSError, ValueError):
        pass


def handle_errors(f: F) -> F:
    """Turn SleuthError, missing roots, unreadable catalogs and OS errors into one line and an exit code."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except SleuthError as exc:
            _say(f"error: {exc}")
            sys.exit(exc.exit_code)
        except (FileNotFoundError, NotADirectoryError) as exc:
            _say(f"error: {exc}")
            sys.exit(2)
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "readonly" in text or "unable to open" in text:
                hint = "check that you may write to the index folder (or pass another --index)"
            elif "locked" in text or "busy" in text:
                hint = "another sleuth process is writing; try again when it has finished"
            else:
                hint = "the index folder may be damaged; delete it and run `sleuth index` again"
            _say(f"error: the index catalog cannot be used ({text}): {hint}")
            sys.exit(6)
        except sqlite3.DatabaseError as exc:
            _say(f"error: the index catalog is damaged ({exc}); delete the index folder and run `sleuth index` again")
            sys.exit(6)
        except OSError as exc:
            _say(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
            sys.exit(6)

    return wrapper  # type: ignore[return-value]


#: Characters JSON may carry raw but a terminal must not get: C1 controls (U+0080-U+009F, U+009B is
#: an 8-bit CSI), bidirectional embedding/override/isolate controls, and the line/paragraph separators.
_TERMINAL_UNSAFE_RE = re.compile("[\u0080-\u009f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def say_waiting(command: str, lock: Any) -> None:
    """Make ``lock`` (the index's write lock, :class:`sleuth.locks.WriteLock` or its PostgreSQL
    twin) say one line on stderr when ``command`` has to wait for it: who holds it (as the lock
    says: escaped onto one line) and how long this waits. A line that cannot be written is left
    out (the run goes on)."""
    def said(holder: str) -> None:  # _say: one line, lost (not raised) on a full or closed stderr
        _say(f"{command}: waiting for {holder} to finish writing to the index (at most {lock.timeout_s:g} s;"
             " Ctrl-C stops)")

    lock.on_wait = said


def counted(n: int, noun: str) -> str:
    """``n`` (thousands separated) and ``noun``, plural unless ``n`` is 1: ``"1 document"``,
    ``"1,234 blocks"``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def emit_json(obj: Any) -> None:
    """``obj`` as indented JSON on stdout; characters a terminal would act on (C1 controls, bidi
    controls) are written as ``\\uXXXX`` escapes, so the data read back is the same."""
    text = json.dumps(obj, ensure_ascii=False, indent=2)
    click.echo(_TERMINAL_UNSAFE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", text))


class LanesOption(click.Option):
    """``--lanes``, whose help lists the lanes registered when it is shown (:mod:`sleuth.lanes.registry`)."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = f"Comma-separated lanes to run: {registry.describe_lanes()}."
        return super().get_help_record(ctx)


def parse_lanes(lanes: str | None) -> list[str] | None:
    """``--lanes a,b`` as checked lane names (None when not given; ``--lanes ""`` names no lane:
    an error, as ``--lanes ,`` is, not the configured lanes)."""
    if lanes is None:
        return None
    return list(registry.validate_lanes(lanes.split(",")))


def when(timestamp: object) -> str:
    """A "last indexed" time for people: none yet means no indexing run has finished."""
    return str(timestamp) if timestamp else "never (no indexing run has finished; run `sleuth index`)"
