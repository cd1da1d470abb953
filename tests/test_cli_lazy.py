"""The ``sleuth`` command loads a command's module only when that command runs: ``import
sleuth.cli`` and ``sleuth --help`` leave the engine, numpy, tantivy, onnxruntime, usearch and the
MCP SDK unimported, and the help lists every command as an eagerly built group would."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap

import click
import pytest
from click.testing import CliRunner

from sleuth.cli import COMMANDS, LazyGroup, cli

#: Modules a start that runs no command must not import (what made `import sleuth.cli` take seconds).
HEAVY_MODULES = ("onnxruntime", "numpy", "tantivy", "usearch", "mcp", "tokenizers", "starlette", "sleuth.engine")

#: Terminal widths the help is compared at (click shortens each command's line to fit).
WIDTHS = (80, 52, 200)


def _in_fresh_process(code: str) -> dict[str, object]:
    """What ``code`` (which sets ``out``, a JSON-able dict) found in a new interpreter; the heavy
    modules loaded by then under ``loaded``."""
    program = textwrap.dedent(code) + textwrap.dedent(f"""
        import json, sys
        out["loaded"] = [m for m in {HEAVY_MODULES!r} if m in sys.modules]
        print(json.dumps(out))
    """)
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_import_sleuth_cli_loads_no_heavy_module() -> None:
    found = _in_fresh_process("""
        import sleuth.cli
        out = {}
    """)
    assert found["loaded"] == []


def _help(group: click.Group, width: int) -> str:
    result = CliRunner().invoke(group, ["--help"], prog_name="sleuth", terminal_width=width)
    assert result.exit_code == 0, result.output
    return result.output


def _eager_group() -> click.Group:
    """The group as it was before commands loaded lazily: every command imported and added."""
    commands = [getattr(importlib.import_module(module), attribute) for module, attribute, _ in COMMANDS.values()]
    return click.Group("sleuth", commands=commands, help=cli.help, params=cli.params,
                       context_settings=cli.context_settings)


def test_help_lists_every_command_as_an_eager_group_does_without_loading_them() -> None:
    found = _in_fresh_process(f"""
        from click.testing import CliRunner
        from sleuth.cli import cli
        out = {{str(w): CliRunner().invoke(cli, ["--help"], prog_name="sleuth", terminal_width=w).output
               for w in {WIDTHS!r}}}
    """)
    assert found.pop("loaded") == []
    eager = _eager_group()
    for width in WIDTHS:
        assert found[str(width)] == _help(eager, width), width
    assert "search    Search the index for QUERY." in found["80"]  # type: ignore[operator]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_help_line_is_the_commands_own_short_help(name: str) -> None:
    module, attribute, line = COMMANDS[name]
    command = getattr(importlib.import_module(module), attribute)
    assert isinstance(command, click.Command) and command.name == name and not command.hidden
    for limit in (20, 45, 70, 1000):
        assert click.Command(name, help=line).get_short_help_str(limit) == command.get_short_help_str(limit)


def test_a_command_is_loaded_when_it_runs_and_an_unknown_one_is_refused() -> None:
    found = _in_fresh_process("""
        from click.testing import CliRunner
        from sleuth.cli import cli
        result = CliRunner().invoke(cli, ["bogus"], prog_name="sleuth")
        out = {"code": result.exit_code, "output": result.output}
    """)
    assert found["loaded"] == [] and found["code"] == 2
    assert "No such command 'bogus'" in str(found["output"])
    group = LazyGroup("sleuth", context_settings=cli.context_settings)
    search = group.get_command(click.Context(group), "search")
    assert search is importlib.import_module("sleuth.commands.reading").search_cmd
    assert group.get_command(click.Context(group), "bogus") is None
    result = CliRunner().invoke(group, ["search", "-h"], prog_name="sleuth")  # -h as the real group has it
    assert result.exit_code == 0 and "Usage: sleuth search [OPTIONS] QUERY" in result.output
