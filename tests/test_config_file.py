"""An index's config.toml is read like any hostile input (attack session 32, low): an index folder
can come with a cloned repository. Arrays or inline tables nested a few thousand deep ended every
command with tomllib's ``RecursionError`` traceback; a config.toml of any size was read whole (a
200 MB one: 660 MB of memory, half a minute); and one that is a FIFO, a symlink to ``/dev/zero``
or a folder was silently ignored. Each is now a ConfigError naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sleuth.config import load_config
from sleuth.errors import ConfigError


def refusal(index: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(index)
    return str(info.value)


@pytest.mark.parametrize("nested", ["a = " + "[" * 5000 + "]" * 5000, "a = " + "{b = " * 3000 + "1" + "}" * 3000])
def test_deep_nesting_is_a_readable_error(tmp_path: Path, nested: str) -> None:
    (tmp_path / "config.toml").write_text(nested + "\n", encoding="utf-8")
    assert refusal(tmp_path) == f"cannot read {tmp_path / 'config.toml'}: arrays or tables nested too deeply"


def test_a_file_over_the_limit_is_refused_unparsed(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("#" * (1024 * 1024) + "\nlanes = 5\n", encoding="utf-8")
    assert refusal(tmp_path) == f"cannot read {tmp_path / 'config.toml'}: larger than 1,048,576 bytes"
    (tmp_path / "config.toml").write_text("#" * (1024 * 1024 - 14) + "\nlanes = 5\n", encoding="utf-8")
    assert refusal(tmp_path).startswith("bad configuration value: ")  # at the limit: read and parsed


def test_something_other_than_a_regular_file_is_refused_unread(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    os.mkfifo(config)  # opening it would wait for a writer
    assert refusal(tmp_path) == f"cannot read {config}: not a regular file"
    config.unlink()
    config.symlink_to("/dev/zero")
    assert refusal(tmp_path) == f"cannot read {config}: not a regular file"
    config.unlink()
    config.mkdir()
    assert refusal(tmp_path) == f"cannot read {config}: not a regular file"
    config.rmdir()
    assert load_config(tmp_path).lanes  # no file: the defaults
