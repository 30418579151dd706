"""Writing a finished test's log files where ``LogOutput`` says (LoadGen's file names)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from infermeter.loadgen.logs.accuracy import render_accuracy
from infermeter.loadgen.logs.summary_file import render_counts, render_summary

if TYPE_CHECKING:
    from infermeter.loadgen.runner import RunOutcome


@dataclass
class LogOutput:
    """Where and how the log files are written (LoadGen's LogOutputSettings)."""

    outdir: Path
    prefix: str = "mlperf_log_"
    suffix: str = ""
    prefix_with_datetime: bool = False
    enable_trace: bool = False

    def path(self, kind: str, ext: str, stamp: str) -> Path:
        middle = f"{stamp}_" if self.prefix_with_datetime else ""
        return self.outdir / f"{self.prefix}{middle}{kind}{self.suffix}.{ext}"


def write_logs(outcome: RunOutcome, output: LogOutput) -> list[Path]:
    """Write summary, detail and accuracy logs (and the trace when asked); return the paths."""
    output.outdir.mkdir(parents=True, exist_ok=True)
    stamp = outcome.started_at.strftime("%Y%m%dT%H%M%SZ")
    detail = outcome.detail
    if outcome.summary is not None:
        summary_text = render_summary(
            outcome.summary,
            sut_name=outcome.sut_name,
            warnings=detail.warnings,
            errors=detail.errors,
        )
    else:
        summary_text = render_counts(detail.warnings, detail.errors)
    paths = [
        output.path("summary", "txt", stamp),
        output.path("detail", "txt", stamp),
        output.path("accuracy", "json", stamp),
    ]
    paths[0].write_text(summary_text)
    paths[1].write_text(detail.text())
    paths[2].write_text(render_accuracy(outcome.accuracy_entries))
    if output.enable_trace and outcome.performance is not None:
        from infermeter.loadgen.logs.trace import write_trace

        paths.append(output.path("trace", "json", stamp))
        write_trace(outcome.performance, paths[-1], origin_ns=detail.origin_ns)
    return paths
