"""Progress per phase: counts, rate and time left, as plain lines (the clock is injected)."""

from __future__ import annotations

import io

import pytest

from sleuth.errors import ConfigError
from sleuth.progress import PlainLines, Progress, format_duration, format_elapsed, progress_interval_s


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_each_phase_shows_its_count_rate_and_time_left() -> None:
    clock = Clock()
    progress = Progress(clock=clock)
    progress.start("scan")
    clock.now += 2
    progress.advance("scan", 400)
    assert progress.line() == "scan 400 files, 200.0 files/s"  # no total yet: no time left
    progress.finish("scan", final=False)
    progress.start("parse", total=400)
    clock.now += 4
    progress.advance("parse", 100)
    assert progress.line() == ("scan 400/400 files, 200.0 files/s, done in 2.0 s | "
                               "parse 100/400 files, 25.0 files/s, ETA 12 s")
    progress.start("embedding", total=10_000, done=4_000)  # 4,000 embedded before: not in the rate
    clock.now += 10
    progress.advance("embedding", 500)
    assert progress.line().endswith("embedding 4,500/10,000 blocks, 50.0 blocks/s, ETA 1 min 50 s")


def test_plain_lines_come_once_per_interval_and_at_the_end() -> None:
    clock, out = Clock(), io.StringIO()
    progress = Progress(PlainLines(out, interval_s=5, label="sleuth index"), clock=clock)
    progress.start("parse", total=30)
    for _ in range(30):
        clock.now += 0.5
        progress.advance("parse")
    progress.finish("parse")
    assert out.getvalue().splitlines() == [
        "sleuth index: parse 10/30 files, 2.0 files/s, ETA 10 s",  # 5 s after the start
        "sleuth index: parse 20/30 files, 2.0 files/s, ETA 5 s",
        "sleuth index: parse 30/30 files, 2.0 files/s, ETA 0 s",
        "sleuth index: parse 30/30 files, 2.0 files/s, done in 15 s",
    ]


def test_a_line_that_did_not_change_is_written_again_only_after_a_minute() -> None:
    clock, out = Clock(), io.StringIO()
    progress = Progress(PlainLines(out, interval_s=5, label="sleuth embed"), clock=clock)
    progress.elsewhere("embedding", 10, 300, None, None, by="process 4242")  # the other process reports nothing new
    for _ in range(30):  # 75 s of the same figures, a change every 2.5 s
        clock.now += 2.5
        progress.elsewhere("embedding", 10, 300, None, None, by="process 4242")
    assert out.getvalue().splitlines() == ["sleuth embed: embedding 10/300 blocks by process 4242"] * 2  # 5 s, 65 s
    progress.elsewhere("embedding", 20, 300, None, None, by="process 4242")
    clock.now += 5
    progress.elsewhere("embedding", 20, 300, None, None, by="process 4242")
    assert out.getvalue().splitlines()[-1] == "sleuth embed: embedding 20/300 blocks by process 4242"


def test_work_added_during_a_run_raises_the_total_shown_not_the_count_past_it() -> None:
    clock = Clock()
    progress = Progress(clock=clock)
    progress.start("embedding", total=1_867)
    clock.now += 10
    progress.advance("embedding", 1_936)  # blocks of files indexed meanwhile
    assert progress.line() == "embedding 1,936/1,936 blocks, 193.6 blocks/s, ETA 0 s"


def test_interval_zero_writes_every_change_and_a_quick_run_only_its_end() -> None:
    clock, out = Clock(), io.StringIO()
    progress = Progress(PlainLines(out, interval_s=0), clock=clock)
    progress.start("postings")
    clock.now += 1
    progress.advance("postings", 500)
    assert out.getvalue().splitlines() == ["sleuth: postings 0 blocks", "sleuth: postings 500 blocks, 500.0 blocks/s"]
    quick = io.StringIO()
    progress = Progress(PlainLines(quick, interval_s=5), clock=clock)
    progress.start("scan")
    progress.advance("scan", 3)
    progress.finish("scan", final=False)  # the parse goes on: no line yet
    progress.advance("parse", 3)
    clock.now += 1
    progress.finish("parse")
    progress.finish("scan")
    assert quick.getvalue() == ("sleuth: scan 3/3 files, done in under 0.1 s | parse 3/3 files, 3.0 files/s, "
                                "done in 1.0 s\n")


def test_durations_and_the_interval_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert [format_duration(s) for s in (0.4, 59.6, 200, 7500)] == ["0 s", "1 min 00 s", "3 min 20 s", "2 h 05 min"]
    # A time taken is as precise as it is short: never "0 s" (a new user's trial: "done in 0 s").
    assert [format_elapsed(s) for s in (0, 0.04, 0.05, 0.4, 2, 9.94, 9.96, 42.4, 200)] == [
        "under 0.1 s", "under 0.1 s", "0.1 s", "0.4 s", "2.0 s", "9.9 s", "10 s", "42 s", "3 min 20 s"]
    monkeypatch.setenv("SLEUTH_PROGRESS_INTERVAL_S", "0")
    assert progress_interval_s() == 0
    monkeypatch.setenv("SLEUTH_PROGRESS_INTERVAL_S", "soon")
    with pytest.raises(ConfigError, match="SLEUTH_PROGRESS_INTERVAL_S must be a number of seconds >= 0"):
        progress_interval_s()


def test_the_end_of_a_phase_says_what_this_process_did_and_what_it_found_done() -> None:
    """A new user's trial: `sleuth embed` after the worker had embedded everything said "embedding
    300/300 blocks, done in 0 s". The end now says what was embedded here, before, or by the
    process this one waited for, and how long it waited."""
    clock = Clock()

    def ended(total: int, have: int, own: int, waited_s: float = 0.0, others: int = 0, took_s: float = 0.0,
              setup_s: float = 0.0) -> str:
        progress = Progress(clock=clock)
        progress.start("embedding", total=total, done=have, waited_s=waited_s, others=others, setup_s=setup_s)
        clock.now += took_s
        if own:
            progress.advance("embedding", own)
        progress.finish("embedding")
        return progress.line()

    assert ended(300, 300, 0) == "embedding 300/300 blocks, already embedded"
    assert ended(300, 300, 0, waited_s=3.24, others=300) == \
        "embedding 300/300 blocks, 300 embedded by another process while this one waited 3.2 s"
    assert ended(300, 300, 0, waited_s=75, others=44) == ("embedding 300/300 blocks, 44 embedded by another process "
                                                          "while this one waited 1 min 15 s, 256 already embedded")
    assert ended(300, 0, 300, took_s=0.4) == "embedding 300/300 blocks, 750.0 blocks/s, done in 0.4 s"
    assert ended(300, 256, 44, took_s=2.2) == \
        "embedding 300/300 blocks, 20.0 blocks/s, done in 2.2 s (44 embedded here, 256 already embedded)"
    assert ended(300, 256, 44, waited_s=0.04, others=56, took_s=12) == (
        "embedding 300/300 blocks, 3.7 blocks/s, done in 12 s (44 embedded here, 56 by another process while "
        "this one waited under 0.1 s, 200 already embedded)")
    assert ended(0, 0, 0) == "embedding 0/0 blocks, done in under 0.1 s"
    # The model's load, before the first block, is said (a new user's trial: "done in 0.1 s (1 embedded
    # here)" after half a minute); one under a second is not.
    assert ended(5, 4, 1, took_s=0.1, setup_s=27.94) == (
        "embedding 5/5 blocks, 10.0 blocks/s, done in 0.1 s after 28 s loading the model (1 embedded here, 4 "
        "already embedded)")
    assert ended(300, 0, 300, took_s=0.4, setup_s=0.9) == "embedding 300/300 blocks, 750.0 blocks/s, done in 0.4 s"


def test_a_watchers_quick_batch_writes_nothing_and_a_long_one_its_end_too() -> None:
    clock, out = Clock(), io.StringIO()
    quick = Progress(PlainLines(out, interval_s=5, end_line=False), clock=clock)
    quick.advance("parse", 2)
    clock.now += 1
    quick.finish("parse")
    assert out.getvalue() == ""
    long = Progress(PlainLines(out, interval_s=5, label="sleuth watch", end_line=False), clock=clock)
    long.start("parse")
    clock.now += 6
    long.advance("parse", 12)
    long.finish("parse")
    assert out.getvalue().splitlines() == ["sleuth watch: parse 12 files, 2.0 files/s",
                                           "sleuth watch: parse 12/12 files, 2.0 files/s, done in 6.0 s"]


def test_bars_show_every_phase_with_its_count() -> None:
    from sleuth.progress import RichBars

    out = io.StringIO()
    bars = RichBars(out)
    progress = Progress(bars)
    progress.start("parse", total=40)
    progress.advance("parse", 40)
    progress.start("embedding", total=40_000, done=12_345)
    bars.close()
    text = out.getvalue()
    # counts as the plain lines write them: with thousands separators (they read 12345/40000)
    assert "parse" in text and "40/40" in text and "embedding" in text and "12,345/40,000" in text


def test_bars_show_an_eta_only_when_a_phase_has_one() -> None:
    # a phase without a total (the scan, as it finds files) showed its elapsed time and a bare "ETA"
    from sleuth.progress import RichBars

    out, clock = io.StringIO(), Clock()
    bars = RichBars(out)
    progress = Progress(bars, clock=clock)
    progress.start("scan")
    progress.start("parse", total=400)
    clock.now += 4
    progress.advance("scan", 1515)
    progress.advance("parse", 100)
    bars.close()
    lines = out.getvalue().splitlines()
    scan, parse = (next(line for line in lines if line.startswith(n)) for n in ("scan", "parse"))
    assert "1,515 " in scan and "1,515/" not in scan and "ETA" not in scan
    assert parse.rstrip().endswith("ETA 12 s")


def test_the_python_api_counts_every_phase_of_a_run(tmp_path) -> None:
    from sleuth.config import Config
    from sleuth.engine import Engine

    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(3):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nText {i}.\n", encoding="utf-8")
    (notes / "table.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    out = io.StringIO()
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        report = engine.index([notes], project="notes", phases=Progress(PlainLines(out, interval_s=3600)))
    assert report.skipped == [{"path": "table.csv", "reason": 'tabular data file: .csv (set tabular = "index" in'
                                                              ' config.toml to index it)'}]
    (line,) = out.getvalue().splitlines()
    assert [p.split(", ")[0] for p in line.removeprefix("sleuth: ").split(" | ")] == [
        "scan 4/4 files", "parse 4/4 files", "postings 3/3 blocks"]
