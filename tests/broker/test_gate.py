"""The broker's read/write gate: reads together, writes alone and in arrival order."""

from __future__ import annotations

import anyio
import pytest

from sleuth.broker.gate import CONTROL, READ, WRITE, ReadWriteGate, tool_kind


def test_tool_kinds() -> None:
    assert tool_kind("project_memory_record") == tool_kind("project_memory_forget") == WRITE
    assert tool_kind("query_status") == tool_kind("query_cancel") == CONTROL
    assert tool_kind("project_memory_search") == tool_kind("search_project") == tool_kind(None) == READ


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


async def wait_until(condition, timeout_s: float = 10.0) -> None:  # noqa: ANN001
    with anyio.fail_after(timeout_s):
        while not condition():
            await anyio.sleep(0.001)
