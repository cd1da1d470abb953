"""The command line: ``sleuth index|embed|search|get|projects|status|doctor|watch|serve|broker|guides build|eval|ui``.

The commands live in :mod:`sleuth.commands`, one module per family; this module is the group, the
entry point and what a process does first (:mod:`sleuth.startup`). Errors from sleuth
(``SleuthError``) become one readable line on stderr and the error's exit code
(:func:`sleuth.commands.options.handle_errors`); nothing else is caught, so real bugs still show
their traceback.
"""

from __future__ import annotations

import os
import signal
import sys

from sleuth import startup

if __name__ == "__main__":  # `python -m sleuth.cli`; the `sleuth` command's launcher has done this already
    startup.begin(sys.argv[1:])
else:
    startup.set_process_defaults()

import click

from sleuth import __version__
from sleuth.commands.health import doctor_cmd, status_cmd
from sleuth.commands.indexing import embed_cmd, index_cmd, watch_cmd
from sleuth.commands.options import handle_errors
from sleuth.commands.reading import get_cmd, projects_cmd, render_text, search_cmd
from sleuth.commands.serving import broker_group, serve_cmd
from sleuth.commands.tools import eval_cmd, guides_group
from sleuth.commands.ui import ui_cmd
from sleuth.commands.users import users_group

__all__ = ["cli", "handle_errors", "main", "quick_exit", "render_text"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sleuth")
def cli() -> None:
    """sleuth: local-first hybrid search over a project's knowledge, for people and AI agents."""




cli.add_command(index_cmd)
cli.add_command(embed_cmd)
cli.add_command(search_cmd)
cli.add_command(get_cmd)
cli.add_command(projects_cmd)
cli.add_command(status_cmd)
cli.add_command(watch_cmd)
cli.add_command(doctor_cmd)
cli.add_command(serve_cmd)
cli.add_command(broker_group)
cli.add_command(users_group)
cli.add_command(guides_group)
cli.add_command(eval_cmd)
cli.add_command(ui_cmd)


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
