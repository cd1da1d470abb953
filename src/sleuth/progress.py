"""Progress of an indexing run, phase by phase: counts, rate and time left.

The indexer counts (:class:`Progress`: ``scan`` files found, ``parse`` files read and parsed,
``postings`` blocks written to the postings, ``embedding`` blocks embedded); a sink shows them. On a
terminal the sink is a live bar per phase (:class:`RichBars`, rich); anywhere else (a pipe, a CI log,
a server's stderr) it is one plain line every few seconds (:class:`PlainLines`,
``PROGRESS_INTERVAL_S``, or ``$SLEUTH_PROGRESS_INTERVAL_S``). Both write to stderr only: stdout
carries results (and, in the MCP stdio server, the protocol). The clock is injected, so the lines
can be checked without depending on how fast the machine is.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TextIO

from sleuth.interrupts import check_interrupt

#: The phases of an indexing run, in order, with the unit each counts (the three ``milvus`` ones:
#: the sync of a scaled-out index, :mod:`sleuth.store.milvus_sync`, after the others).
PHASE_UNITS: dict[str, str] = {"scan": "files", "parse": "files", "postings": "blocks", "embedding": "blocks",
                               "milvus terms": "blocks", "milvus rows": "blocks", "milvus vectors": "documents"}
#: Seconds between two plain progress lines (pipes, CI logs, servers' stderr).
PROGRESS_INTERVAL_S = 5.0
#: Environment variable overriding ``PROGRESS_INTERVAL_S`` (seconds >= 0; 0: a line on every change).
PROGRESS_INTERVAL_ENV = "SLEUTH_PROGRESS_INTERVAL_S"
#: What a finished phase's units are once done ("5/5 blocks, already embedded").
PHASE_DONE_WORDS: dict[str, str] = {"scan": "found", "parse": "parsed", "postings": "written",
                                    "embedding": "embedded", "milvus terms": "counted", "milvus rows": "sent",
                                    "milvus vectors": "sent"}
#: What a phase loads before its first unit, for its end line ("done in 0.4 s after 28 s loading
#: the model": the embedding said "done in 0.1 s" after a wait of half a minute).
PHASE_SETUP_WORDS: dict[str, str] = {"embedding": "loading the model"}
#: A phase's setup shorter than this, in seconds, is not mentioned.
SETUP_SHOWN_MIN_S = 1.0
#: A plain progress line the same as the last one written is written again only after this many seconds.
REPEAT_AFTER_S = 60.0
#: Elapsed times below this many seconds are shown with a tenth of a second ("done in 0.4 s").
TENTHS_BELOW_S = 10.0


@dataclass
class Phase:
    """The count of one phase: ``done`` of ``total`` (None: not known yet), between ``started`` and
    ``finished`` (clock seconds; ``base`` is what was done before ``started``, left out of the rate).

    ``waited_s``: seconds this process waited for another one doing the same work before it
    started (the embed lock's holder), of which ``others`` units were done by that process
    meanwhile (counted in ``base``).

    ``by``: while another process does the phase's work and this one waits for it
    (:meth:`Progress.elsewhere`), who it is (``process 4242``), with the rate and time left it
    reports, ``reported_rate`` (units per second) and ``reported_eta_s`` (seconds; None: not known
    yet); None when this process does it.

    ``setup_s``: seconds this process spent just before ``started`` loading what the phase needs
    (:data:`PHASE_SETUP_WORDS`), told in its end line, not counted in its time or rate."""

    name: str
    unit: str
    started: float
    done: int = 0
    total: int | None = None
    finished: float | None = None
    base: int = 0
    waited_s: float = 0.0
    others: int = 0
    by: str | None = None
    reported_rate: float | None = None
    reported_eta_s: float | None = None
    setup_s: float = 0.0

    def rate(self, now: float) -> float | None:
        """Units per second since the phase started (None before a measurable time has passed), or
        the rate the process doing it reports (``by``; None while it reports none)."""
        if self.by is not None:
            return self.reported_rate if self.reported_rate is not None and self.reported_rate > 0 else None
        elapsed = (self.finished if self.finished is not None else now) - self.started
        work = self.done - self.base
        return work / elapsed if elapsed > 0 and work > 0 else None

    def shown_total(self) -> int | None:
        """The total as shown: never below ``done`` (work added during a run, such as blocks of files
        indexed meanwhile, raises the count past the total known at the start; no ``1,936/1,867``)."""
        return None if self.total is None else max(self.total, self.done)

    def count(self) -> str:
        """``done/total`` with thousands separators (``1,200/3,400``), or ``done`` alone without a total."""
        total = self.shown_total()
        return f"{self.done:,}/{total:,}" if total is not None else f"{self.done:,}"

    def eta_s(self, now: float) -> float | None:
        """Seconds left at the current rate (None: no total or no rate yet, or finished), or the
        time left the process doing it reports (``by``)."""
        if self.by is not None and self.finished is None:
            return self.reported_eta_s
        rate = self.rate(now)
        if self.finished is not None or self.total is None or rate is None:
            return None
        return max(self.total - self.done, 0) / rate


def format_duration(seconds: float) -> str:
    """``42 s``, ``3 min 20 s``, ``2 h 05 min`` (rounded to whole seconds)."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def format_elapsed(seconds: float) -> str:
    """A time taken, as precise as it is short: ``under 0.1 s``, ``0.4 s``, ``9.5 s``, then as
    :func:`format_duration` (``42 s``, ``3 min 20 s``); a quick phase is never ``0 s``."""
    if seconds < 0.05:
        return "under 0.1 s"
    if seconds < TENTHS_BELOW_S - 0.05:
        return f"{seconds:.1f} s"
    return format_duration(seconds)


def _finished(phase: Phase) -> str:
    """How a finished phase ended, truthfully: what this process did and how long it took, or that
    nothing was left for it (done before, or by the process it waited for), and the wait."""
    word = PHASE_DONE_WORDS.get(phase.name, "done")
    own = phase.done - phase.base
    waited = f"while this one waited {format_elapsed(phase.waited_s)}"
    if own <= 0 and phase.base > 0:
        if not phase.others:
            return f"already {word}"
        before = phase.base - phase.others
        return (f"{phase.others:,} {word} by another process {waited}"
                + (f", {before:,} already {word}" if before else ""))
    took = f"done in {format_elapsed((phase.finished or phase.started) - phase.started)}"
    if phase.setup_s >= SETUP_SHOWN_MIN_S:
        took += f" after {format_elapsed(phase.setup_s)} {PHASE_SETUP_WORDS.get(phase.name, 'starting')}"
    if phase.base == 0:
        return took
    parts = [f"{own:,} {word} here"]
    if phase.others:
        parts.append(f"{phase.others:,} by another process {waited}")
    if phase.base - phase.others:
        parts.append(f"{phase.base - phase.others:,} already {word}")
    return f"{took} ({', '.join(parts)})"


def format_phase(phase: Phase, now: float) -> str:
    """One phase for people: ``parse 1,200/3,400 files, 85.0 files/s, ETA 26 s``; done by another
    process meanwhile, ``embedding 219/300 blocks by process 4242, 9.0 blocks/s, ETA 9 s`` (its
    figures); once finished, ``done in 4.2 s`` (with what was done here when some was done before:
    ``(44 embedded here, 256 already embedded)``), or ``already embedded`` when nothing was left for
    this process."""
    out = f"{phase.name} {phase.count()} {phase.unit}"
    if phase.by is not None and phase.finished is None:
        out += f" by {phase.by}"
    rate = phase.rate(now)
    if rate is not None:
        out += f", {rate:,.1f} {phase.unit}/s"
    if phase.finished is not None:
        return f"{out}, {_finished(phase)}"
    eta = phase.eta_s(now)
    if eta is not None:
        out += f", ETA {format_duration(eta)}"
    return out


class Progress:
    """Counts per phase of one run, shown by ``sink`` after every change (the sink decides how often
    to draw). Thread-unsafe by design: one indexing run counts from one thread.

    Args:
        sink: called with this object after each change, and with ``final=True`` when a phase ends.
        clock: seconds, monotonic (injected in tests).
    """

    def __init__(self, sink: Callable[[Progress, bool], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sink = sink
        self.clock = clock
        self.phases: dict[str, Phase] = {}

    def _show(self, final: bool = False) -> None:
        if self.sink is not None:
            self.sink(self, final)

    def start(self, name: str, total: int | None = None, done: int = 0, waited_s: float = 0.0,
              others: int = 0, setup_s: float = 0.0) -> Phase:
        """Start (or restart) phase ``name`` at ``done`` of ``total``, after waiting ``waited_s``
        seconds for another process, which did ``others`` of the ``done`` units meanwhile, and
        ``setup_s`` seconds loading what it needs (:attr:`Phase.setup_s`)."""
        phase = Phase(name, PHASE_UNITS.get(name, "items"), self.clock(), done, total, base=done,
                      waited_s=waited_s, others=min(others, done), setup_s=setup_s)
        self.phases[name] = phase
        self._show()
        return phase

    def advance(self, name: str, n: int = 1, total: int | None = None) -> None:
        """Count ``n`` more units of ``name`` (started when it was not); ``total`` when now known.

        Raises:
            KeyboardInterrupt: Ctrl-C was pressed within :func:`sleuth.interrupts.stop_on_interrupt`
                (again, should the first one have been lost in a finalizer).
        """
        check_interrupt()
        phase = self.phases.get(name) or self.start(name)
        phase.done += n
        if total is not None:
            phase.total = total
        self._show()

    def elsewhere(self, name: str, done: int, total: int | None, rate: float | None, eta_s: float | None,
                  by: str) -> None:
        """Phase ``name`` is being done by another process, ``by`` (``process 4242``), as this one
        waits for it: that process reports ``done`` of ``total`` units at ``rate`` units per second,
        ``eta_s`` seconds left (None: not known yet). Shown with its figures until this process
        starts the phase itself (:meth:`start`).

        Raises:
            KeyboardInterrupt: as :meth:`advance`.
        """
        check_interrupt()
        phase = self.phases.get(name)
        if phase is None or phase.by is None or phase.finished is not None:
            phase = Phase(name, PHASE_UNITS.get(name, "items"), self.clock(), done, total, base=done, by=by)
            self.phases[name] = phase
        phase.done, phase.total, phase.by, phase.reported_rate, phase.reported_eta_s = done, total, by, rate, eta_s
        self._show()

    def set_total(self, name: str, total: int) -> None:
        """The total of ``name`` is now known."""
        phase = self.phases.get(name) or self.start(name)
        phase.total = total
        self._show()

    def finish(self, name: str, final: bool = True) -> None:
        """Phase ``name`` is over (its total is what was done); shown once more, as the end of a
        part of the run when ``final`` (False: other phases go on, e.g. the scan before the parse)."""
        phase = self.phases.get(name)
        if phase is None or phase.finished is not None:
            return
        phase.total = phase.done
        phase.finished = self.clock()
        self._show(final=final)

    def line(self) -> str:
        """Every phase so far, in order, on one line."""
        now = self.clock()
        shown = [self.phases[n] for n in PHASE_UNITS if n in self.phases]
        shown += [p for n, p in self.phases.items() if n not in PHASE_UNITS]
        return " | ".join(format_phase(p, now) for p in shown)


#: The indexing run's counts while its lanes are warmed (:func:`counting`): a Milvus sync, run from
#: the lanes' ``warm``, counts its parts there. Per thread: a search's sync in another thread counts nowhere.
_CURRENT: ContextVar[Progress | None] = ContextVar("sleuth_progress", default=None)


@contextlib.contextmanager
def counting(progress: Progress | None) -> Iterator[None]:
    """Within the block, :func:`current` is ``progress`` (in this thread); every phase started
    meanwhile and not finished is finished at the end (also when the block raises)."""
    token = _CURRENT.set(progress)
    before = set(progress.phases) if progress is not None else set()
    try:
        yield
    finally:
        _CURRENT.reset(token)
        if progress is not None:
            for name in [n for n in progress.phases if n not in before]:
                progress.finish(name)


def current() -> Progress | None:
    """The counts :func:`counting` set in this thread, or None."""
    return _CURRENT.get()


def progress_interval_s() -> float:
    """``$SLEUTH_PROGRESS_INTERVAL_S`` when set (seconds >= 0), else ``PROGRESS_INTERVAL_S``.

    Raises:
        ConfigError: the variable is not a number >= 0.
    """
    from sleuth.errors import ConfigError

    raw = os.environ.get(PROGRESS_INTERVAL_ENV, "").strip()
    if not raw:
        return PROGRESS_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ConfigError(f"{PROGRESS_INTERVAL_ENV} must be a number of seconds >= 0, got {raw!r}")
    return value


class PlainLines:
    """A sink writing ``<label>: <phases>`` to ``stream`` at most once every ``interval_s`` seconds
    (the first line one interval after the start), and whenever every phase started so far has
    ended (so the last figures are always written, and a quick run writes only those).

    Args:
        stream: where the lines go (stderr by default; never stdout in the MCP stdio server).
        interval_s: seconds between lines (0: a line on every change).
        label: the line's prefix.
        end_line: write the end's line even for a run that wrote no line before it (False: a run
            quicker than one interval writes nothing, as a watcher's small batches).
    """

    def __init__(self, stream: TextIO | None = None, interval_s: float = PROGRESS_INTERVAL_S,
                 label: str = "sleuth", end_line: bool = True) -> None:
        self.stream = stream
        self.interval_s = interval_s
        self.label = label
        self.end_line = end_line
        self._last: float | None = None
        self._written = 0
        self._last_line = ""

    def __call__(self, progress: Progress, final: bool) -> None:
        now = progress.clock()
        final = final and all(p.finished is not None for p in progress.phases.values())
        if final and not self.end_line and not self._written:
            return
        if not final and self._last is not None and now - self._last < self.interval_s:
            return
        if not final and self._last is None and self.interval_s > 0:
            self._last = now  # the first line comes after one interval: a quick run prints only its end
            return
        line = f"{self.label}: {progress.line()}"
        if not final and line == self._last_line and self._last is not None and now - self._last < REPEAT_AFTER_S:
            return  # nothing moved (waiting on another process): a line a minute says it is alive
        self._last = now
        self._written += 1
        self._last_line = line
        stream = self.stream or sys.stderr
        try:
            stream.write(f"{line}\n")
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: progress is not worth failing the run for
            pass

    def close(self) -> None:
        """Nothing to release (the same interface as :class:`RichBars`)."""


class RichBars:
    """A sink drawing one live bar per phase on a terminal (rich), on stderr; :meth:`close` ends the display."""

    def __init__(self, stream: TextIO | None = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        # The ETA is the phase's own (Phase.eta_s, as the plain lines say it), shown only when known:
        # a phase without a total (the scan, as it finds files) has none.
        self._bars = RichProgress(
            # the count as the plain lines write it, with thousands separators (12,345/40,000)
            TextColumn("{task.description:<9}"), BarColumn(), TextColumn("{task.fields[count]}"), TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("{task.fields[eta]}"),
            console=Console(file=stream or sys.stderr), transient=False)
        self._tasks: dict[str, Any] = {}
        self._started = False

    def __call__(self, progress: Progress, final: bool) -> None:
        if not self._started:
            self._bars.start()
            self._started = True
        now = progress.clock()
        for name, phase in progress.phases.items():
            rate = phase.rate(now)
            shown = f"{rate:,.1f} {phase.unit}/s" if rate is not None else ""
            eta_s = phase.eta_s(now)
            eta = f"ETA {format_duration(eta_s)}" if eta_s is not None else ""
            shown_name = f"{name} by {phase.by}" if phase.by is not None and phase.finished is None else name
            count, total = phase.count(), phase.shown_total()
            if name not in self._tasks:
                self._tasks[name] = self._bars.add_task(shown_name, total=total, rate=shown, eta=eta, count=count)
            self._bars.update(self._tasks[name], description=shown_name, completed=phase.done, total=total,
                              rate=shown, eta=eta, count=count)

    def close(self) -> None:
        if self._started:
            self._bars.stop()
            self._started = False


def terminal_sink(stream: TextIO | None = None, label: str = "sleuth") -> PlainLines | RichBars:
    """Bars when ``stream`` (default stderr) is a terminal, else plain lines every
    :func:`progress_interval_s` seconds."""
    stream = stream or sys.stderr
    if stream is not None and stream.isatty():
        return RichBars(stream)
    return PlainLines(stream, progress_interval_s(), label)
