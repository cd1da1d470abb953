"""The command line: ``sleuth index|embed|search|get|projects|status|doctor|watch|serve|broker|guides build|eval|ui``.

The commands live in :mod:`sleuth.commands`, one module per family, each imported only when one of
its commands runs (:class:`LazyGroup`); this module is the group, the entry point and what a process
does first (:mod:`sleuth.startup`). Errors from sleuth
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

import importlib
from typing import TYPE_CHECKING, Any

import click

from sleuth import __version__
from sleuth.interrupts import INTERRUPTED_EXIT, INTERRUPTED_LINE

if TYPE_CHECKING:
    from sleuth.commands.options import handle_errors
    from sleuth.commands.reading import render_text

__all__ = ["cli", "handle_errors", "main", "quick_exit", "render_text"]


#: Every command of ``sleuth``: its name → (its module, the module's attribute, its line in
#: ``sleuth --help``). A command's module is imported only when that command runs (or shows its
#: own help), so ``sleuth --help`` and a search answered by the broker load neither the engine,
#: numpy, tantivy, onnxruntime nor the MCP SDK. The help lines are the commands' own short help
#: (the first sentence of their docstring; tests/test_cli_lazy.py checks they stay the same).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "index": ("sleuth.commands.indexing", "index_cmd",
              "Index PATHS (folders or files) incrementally: only changed files are re-read, deleted ones "
              "removed."),
    "embed": ("sleuth.commands.indexing", "embed_cmd",
              "Embed the blocks that have no vector yet (after `sleuth index`), waiting for a background "
              "worker that is already at it; resumes where a killed worker stopped."),
    "search": ("sleuth.commands.reading", "search_cmd", "Search the index for QUERY."),
    "get": ("sleuth.commands.reading", "get_cmd", "Print a whole document, or one block of it."),
    "projects": ("sleuth.commands.reading", "projects_cmd",
                 "List the projects of the index with their roots and counts (`sleuth projects remove NAME` "
                 "removes one)."),
    "status": ("sleuth.commands.health", "status_cmd",
               "Show index health: documents, blocks, embedding progress, per-root coverage, skipped files by "
               "reason, last indexed; where the catalog lives and, in scale-out mode, the lanes in Milvus."),
    "watch": ("sleuth.commands.indexing", "watch_cmd",
              "Keep the index current: watch the roots of PROJECTS (default: every project) and re-index what "
              "changes (edits, new files, deletions, renames) until interrupted (Ctrl-C)."),
    "doctor": ("sleuth.commands.health", "doctor_cmd",
               "Check index health: stale documents (changed or deleted since indexed), skipped files, lanes."),
    "serve": ("sleuth.commands.serving", "serve_cmd",
              "Serve over MCP on stdio the tool families chosen with --tools (default: memory and project "
              "tools)."),
    "broker": ("sleuth.commands.serving", "broker_group",
               "The broker shared by an index's MCP sessions: it holds the index and the model in memory."),
    "users": ("sleuth.commands.users", "users_group",
              "The users of `sleuth serve --http`: their projects, scopes and bearer tokens."),
    "guides": ("sleuth.commands.tools", "guides_group",
               "Build the guides index served by the guides tool profile (search_guides)."),
    "eval": ("sleuth.commands.tools", "eval_cmd",
             "Evaluate ranking on a BEIR-layout dataset: nDCG@10, Recall@100, MRR@10 (default settings)."),
    "ui": ("sleuth.commands.ui", "ui_cmd",
           "Serve a local web page to search the index, see why each result ranked, read documents and check "
           "what the index holds."),
}


class LazyGroup(click.Group):
    """A group whose commands (:data:`COMMANDS`) are imported when one is looked up to run, and
    listed in its help from their help lines without importing any (click's "Lazily Loading
    Subcommands" pattern). Commands added with :meth:`add_command` behave as in a plain group.
    A Ctrl-C that reaches it (one pressed before the command's own handling began, while it loads)
    ends the command with ``sleuth: interrupted`` and status 130, not click's "Aborted!" and 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo(INTERRUPTED_LINE, err=True)
            ctx.exit(INTERRUPTED_EXIT)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command's name, sorted (as a plain group lists them)."""
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, its module imported on first use; None for an unknown name."""
        if cmd_name in self.commands or cmd_name not in COMMANDS:
            return self.commands.get(cmd_name)
        module, attribute, _help = COMMANDS[cmd_name]
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):  # a wrong table entry: a bug, shown as one
            raise TypeError(f"{module}.{attribute} is not a click command")
        self.commands[cmd_name] = command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The "Commands" section of the help, as click writes it, from the help lines of
        :data:`COMMANDS` (the modules of commands not imported yet stay so)."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self.commands:
                command = self.commands[name]
                if command.hidden:
                    continue
                rows.append((name, command.get_short_help_str(limit)))
            else:
                stand_in = click.Command(name, help=COMMANDS[name][2])  # shortened as click shortens help
                rows.append((name, stand_in.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sleuth")
def cli() -> None:
    """sleuth: local-first hybrid search over a project's knowledge, for people and AI agents."""


def __getattr__(name: str) -> object:
    # `from sleuth.cli import render_text` (and handle_errors) still works, importing the command
    # module then, not when `sleuth` starts.
    if name == "render_text":
        from sleuth.commands.reading import render_text

        return render_text
    if name == "handle_errors":
        from sleuth.commands.options import handle_errors

        return handle_errors
    raise AttributeError(f"module 'sleuth.cli' has no attribute {name!r}")


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


def is_server_command(args: list[str]) -> bool:
    """Whether ``args`` (``sys.argv[1:]``) run a command that serves until stopped: ``serve``
    (stdio or HTTP), ``ui``, ``watch``, ``broker run``."""
    words = [a for a in args if not a.startswith("-")][:2]
    return words[:1] in (["serve"], ["ui"], ["watch"]) or words == ["broker", "run"]


def main() -> None:
    """Console-script entry point. A closed output pipe (``sleuth status | head -1``) ends a command
    quietly (SIGPIPE's default action), but not a server (:func:`is_server_command`): a client that
    closed its connection before the answer was written killed ``sleuth serve --http`` (or the
    broker) for everyone, without a token; a server keeps Python's SIG_IGN and loses that client only.
    The read-only commands (``QUICK_EXIT_COMMANDS``) end without the interpreter's teardown."""
    if not is_server_command(sys.argv[1:]):
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
