"""The ``sleuth`` command's entry point: a fast path for ``sleuth serve``, the click CLI for the rest.

``sleuth serve`` is what MCP clients start for every session, so it should answer quickly: with a
broker (the default), a session is a byte pipe to the index's broker and needs neither click, the
engine nor the MCP SDK. This module reads ``serve``'s options by hand and hands the session to the
broker; anything it does not recognise (``--help``, a misspelt option, no index, ``--no-broker``,
no usable broker) goes to the full CLI (:mod:`sleuth.cli`), which parses, reports errors and serves
in-process as before.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

#: ``serve`` options taking a value → the keyword they fill (``--project`` repeats).
_VALUE_OPTIONS = {"--project": "projects", "--tools": "tools", "--guides": "guides", "--events": "events",
                  "--index": "index"}


def parse_serve_args(args: Sequence[str]) -> dict[str, object] | None:
    """``serve``'s options as keywords for :func:`sleuth.broker.client.serve_via_broker`, or None
    when the arguments need the full CLI (help, an unknown option or argument, a missing value,
    ``--no-broker``)."""
    out: dict[str, object] = {"projects": [], "tools": None, "guides": None, "events": None, "index": None}
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name not in _VALUE_OPTIONS:
            return None
        if not eq:
            if i + 1 >= len(args):
                return None
            value = args[i + 1]
            i += 1
        key = _VALUE_OPTIONS[name]
        if key == "projects":
            out["projects"].append(value)  # type: ignore[union-attr]
        else:
            out[key] = value
        i += 1
    return out


def main() -> None:
    """Console-script entry point (``sleuth``). A Ctrl-C while Python loads the command ends it
    with ``sleuth: interrupted`` and status 130 (as :class:`sleuth.cli.LazyGroup` does later), not a
    traceback."""
    try:
        _main()
    except KeyboardInterrupt:
        from sleuth.interrupts import INTERRUPTED_EXIT, INTERRUPTED_LINE

        sys.stderr.write(f"{INTERRUPTED_LINE}\n")
        sys.exit(INTERRUPTED_EXIT)


def _main() -> None:
    args = sys.argv[1:]
    if args[:1] != ["serve"]:
        from sleuth import startup

        startup.begin(args)
    if args[:1] == ["serve"]:
        from sleuth.broker.client import broker_enabled, serve_via_broker

        options = parse_serve_args(args[1:])
        if options is not None and broker_enabled():
            code = serve_via_broker(**options)  # type: ignore[arg-type]
            if code is not None:
                sys.exit(code)
            sys.argv.append("--no-broker")  # decided already: serve in this process, without a second try
    from sleuth.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
