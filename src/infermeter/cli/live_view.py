"""The run's live view on a terminal: the bar, and under it the figures so far.

AIPerf's dashboard in one line: completed samples per second (and output
tokens per second), TTFT and TPOT p99 over the samples done, failures. The
figures come from ``loadgen.live`` over the phase's records, computed when the
bar refreshes and at most once a second (``EVERY_S``), on the thread that
draws the bar: never per completion, never under the sink's lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from infermeter.loadgen.engine import LivePhase
from infermeter.loadgen.live import LiveFigures, live_figures

EVERY_S = 1.0


class LiveView:
    """Watches the performance phase (a ``PhaseWatcher``); ``line()`` says its
    figures so far, recomputed at most every ``every_s``."""

    def __init__(self, every_s: float = EVERY_S) -> None:
        self.every_s = every_s
        self._phase: LivePhase | None = None
        self._line = ""
        self._next = 0.0
        self.figures: LiveFigures | None = None  # of the last look

    def phase_started(self, phase: LivePhase) -> None:
        self._phase, self._line, self._next = phase, "", 0.0
        self.figures = None

    def phase_ended(self) -> None:
        self._phase = None  # the last line stays until the bar goes

    def clear(self) -> None:
        """Forget the last phase's line (a sweep's next point, during its warm-up)."""
        self._line, self.figures = "", None

    def line(self) -> str:
        now = time.monotonic()
        phase = self._phase  # read once: the sweep's bar asks from rich's thread
        if phase is not None and now >= self._next:
            self._next = now + self.every_s
            self.figures = live_figures(phase)
            self._line = live_line(self.figures)
        return self._line


def live_line(f: LiveFigures) -> str:
    """``12.3 samples/s · 3,936 tok/s · p99 TTFT 812 ms, TPOT 41.2 ms · 0 failed``.

    A run completing under half as fast as it issues says its issue rate too
    (``130.2 samples/s (issued 2,000/s)``): why the ETA is past the plan.
    """
    parts = []
    if f.per_s is not None:
        behind = f" (issued {f.issued_per_s:,.0f}/s)" if f.behind() else ""
        parts.append(f"{f.per_s:,.1f} samples/s{behind}")
    if f.tokens_per_s is not None:
        parts.append(f"{f.tokens_per_s:,.0f} tok/s")
    p99 = [
        f"{name} {_ms(value)}"
        for name, value in (("TTFT", f.ttft_p99_ms), ("TPOT", f.tpot_p99_ms))
        if value is not None
    ]
    if p99:
        parts.append("p99 " + ", ".join(p99))
    if f.ok or f.failed:
        parts.append(f"{f.failed:,} failed")
    return " · ".join(parts)


def behind_note(f: LiveFigures) -> str:
    """For a log line: the completion pace against the issue pace, when behind."""
    if not f.behind() or f.issued_per_s is None:
        return ""
    return (
        f"; completing {f.per_s or 0:,.0f} samples/s of {f.issued_per_s:,.0f}/s "
        "issued: the endpoint (or this client) does not keep up, the run takes "
        "longer than planned"
    )


def _ms(value: float) -> str:
    return f"{value:,.0f} ms" if value >= 100 else f"{value:.1f} ms"


class LiveBar(Progress):
    """rich's Progress with one more line under the bar: ``live_line``, or
    ``line_source()`` when set (asked by rich's refresh thread as it draws)."""

    live_line = ""
    line_source: Callable[[], str] | None = None

    def get_renderables(self) -> Iterable[RenderableType]:
        yield from super().get_renderables()
        line = self.live_line if self.line_source is None else self.line_source()
        if line:
            yield Text(line, no_wrap=True, overflow="ellipsis")


def progress_bar(console: Console) -> LiveBar:
    """The TTY bar: samples done, time elapsed, the time left at the pace so far,
    and under it the live figures."""
    return LiveBar(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
