"""The broker's read/write gate: reads together, writes alone and in arrival order."""

from __future__ import annotations

import anyio
import pytest
from mcp.types import Tool, ToolAnnotations

from sleuth.broker.gate import CONTROL, CONTROL_META, READ, WRITE, ReadWriteGate, gate_kind, gate_kinds
from sleuth.engine import Engine
from sleuth.mcp.registry import ServeContext
from sleuth.mcp.server import PROFILES, build_server


def test_every_tool_of_every_profile_passes_the_gate_as_its_annotations_say(tmp_path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    with Engine(tmp_path / "idx") as engine:
        engine.index([tmp_path / "notes"], project="notes")
        server = build_server(ServeContext(engine=engine), tuple(p for p in PROFILES if p != "guides"))
        kinds = gate_kinds(anyio.run(server.list_tools))
    assert {name for name, kind in kinds.items() if kind == WRITE} == {"project_memory_record",
                                                                      "project_memory_forget"}
    assert {name for name, kind in kinds.items() if kind == CONTROL} == {"query_status", "query_cancel"}
    assert kinds["project_memory_search"] == kinds["search_project"] == kinds["search_documents"] == READ


def test_a_new_tool_is_a_write_unless_it_says_otherwise() -> None:
    schema = {"type": "object"}
    assert gate_kind(Tool(name="new_tool", inputSchema=schema)) == WRITE
    assert gate_kind(Tool(name="t", inputSchema=schema, annotations=ToolAnnotations(readOnlyHint=False))) == WRITE
    assert gate_kind(Tool(name="t", inputSchema=schema, annotations=ToolAnnotations(readOnlyHint=True))) == READ
    assert gate_kind(Tool(name="t", inputSchema=schema, _meta=dict(CONTROL_META))) == CONTROL


def test_reads_run_together_and_a_write_runs_alone_after_them() -> None:
    gate = ReadWriteGate()
    log: list[str] = []

    async def reader(name: str, hold: anyio.Event) -> None:
        async with gate.read():
            log.append(f"{name} in (readers {gate.readers})")
            await hold.wait()
            log.append(f"{name} out")

    async def writer() -> None:
        async with gate.write():
            assert gate.readers == 0
            log.append("write")

    async def main() -> None:
        first, late = anyio.Event(), anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader, "r1", first)
            tg.start_soon(reader, "r2", first)
            await wait_until(lambda: gate.readers == 2)
            tg.start_soon(writer)
            await wait_until(lambda: gate.writing)
            tg.start_soon(reader, "r3", late)  # arrives while the write waits: held back
            await anyio.sleep(0.05)
            assert gate.readers == 2 and "write" not in log
            first.set()
            await wait_until(lambda: "write" in log)
            late.set()

    anyio.run(main)
    assert log[:2] == ["r1 in (readers 1)", "r2 in (readers 2)"]
    assert log.index("write") > max(log.index("r1 out"), log.index("r2 out"))
    assert log.index("r3 in (readers 1)") > log.index("write")
    assert gate.snapshot() == {"reads_running": 0, "writing": False, "reads": 3, "writes": 1,
                               "writes_beside_reads": 0}


def test_writes_run_one_at_a_time_in_arrival_order() -> None:
    gate = ReadWriteGate()
    order: list[int] = []
    inside = 0

    async def writer(n: int) -> None:
        nonlocal inside
        async with gate.write():
            inside += 1
            assert inside == 1
            await anyio.sleep(0.01)
            order.append(n)
            inside -= 1

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for n in range(6):
                tg.start_soon(writer, n)
                await anyio.sleep(0)  # arrive in this order

    anyio.run(main)
    assert order == list(range(6))


def test_a_write_stops_waiting_for_a_very_slow_read_and_counts_it() -> None:
    gate = ReadWriteGate(drain_timeout_s=0.05)

    async def main() -> None:
        release = anyio.Event()

        async def slow_reader() -> None:
            async with gate.read():
                await release.wait()

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_reader)
            await wait_until(lambda: gate.readers == 1)
            async with gate.write():
                assert gate.readers == 1
            release.set()

    anyio.run(main)
    assert gate.snapshot()["writes_beside_reads"] == 1


def test_a_failing_before_hook_releases_the_gate() -> None:
    gate = ReadWriteGate()

    async def busy() -> None:
        raise RuntimeError("another process writes")

    async def main() -> None:
        with pytest.raises(RuntimeError):
            async with gate.write(before=busy):
                raise AssertionError("the write must not run")
        assert not gate.writing
        async with gate.read():
            pass
        async with gate.write():
            pass

    anyio.run(main)
    assert gate.snapshot()["writes"] == 1


async def wait_until(condition, timeout_s: float = 10.0) -> None:
    with anyio.fail_after(timeout_s):
        while not condition():
            await anyio.sleep(0.001)
