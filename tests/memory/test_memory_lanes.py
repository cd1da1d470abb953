"""Which lanes project_memory_search runs: the registry's defaults less MEMORY_SKIPPED_DEFAULT_LANES,
unless lanes are configured -- then exactly those, even when they name the registry's defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleuth.config import load_config
from sleuth.engine import Engine
from sleuth.lanes import registry
from sleuth.memory.arguments import MEMORY_LANES, parse_memory_request
from sleuth.memory.search import MEMORY_SKIPPED_DEFAULT_LANES, MemorySearch


def expected(defaults) -> list[str]:
    """The tool's lanes for its default families (every family) given the default lanes ``defaults``."""
    return list(registry.lanes_for_families(MEMORY_LANES, tuple(defaults)))


def lanes_of(index: Path) -> list[str]:
    eng = Engine(index)
    try:
        req = parse_memory_request({"query": "storage plan", "project_id": "demo"})
        return list(MemorySearch(eng).request(req, ("demo",), "r-1").lanes or [])
    finally:
        eng.close()


def test_unconfigured_lanes_leave_out_rm3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLEUTH_LANES", raising=False)
    assert not load_config(tmp_path).lanes_set
    assert MEMORY_SKIPPED_DEFAULT_LANES == ("rm3",) and "rm3" in registry.default_lanes()
    lanes = lanes_of(tmp_path / "idx")
    assert lanes == expected(n for n in registry.default_lanes() if n != "rm3") and "rm3" not in lanes


def test_lanes_configured_as_the_defaults_are_run_as_configured(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLEUTH_LANES", raising=False)
    index = tmp_path / "idx"
    index.mkdir()
    listed = ", ".join(f'"{n}"' for n in registry.default_lanes())
    (index / "config.toml").write_text(f"lanes = [{listed}]\n", encoding="utf-8")
    assert load_config(index).lanes_set
    lanes = lanes_of(index)
    assert lanes == expected(registry.default_lanes()) and "rm3" in lanes


def test_lanes_from_the_environment_count_as_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLEUTH_LANES", ",".join(registry.default_lanes()))
    assert lanes_of(tmp_path / "idx") == expected(registry.default_lanes())
    monkeypatch.setenv("SLEUTH_LANES", "bm25,rm3")
    assert lanes_of(tmp_path / "idx") == expected(["bm25", "rm3"])
