"""Progress lines for a stderr that is not a terminal: counts, percent and an ETA."""

from __future__ import annotations

from infermeter.cli.render import ProgressLines


def test_a_line_has_the_counts_and_an_eta_from_the_rate_so_far() -> None:
    lines = ProgressLines("llama2-70b Server")
    # 1,000 of 24,576 done in 100 s: 23,576 more at 10/s is 2,357.6 s.
    line = lines.line(1_000, 24_576, 100.0)
    assert line == (
        "llama2-70b Server: 1,000 of 24,576 samples done (4 %), "
        "0:01:40 elapsed, ETA 0:39:17"
    )
    assert lines.line(0, 10, 5.0).endswith("ETA unknown")
    assert lines.line(10, 10, 5.0).endswith("finishing")


def test_the_tty_bar_shows_the_time_left() -> None:
    from rich.progress import TimeRemainingColumn

    from infermeter.cli.render import progress_bar

    columns = progress_bar().columns
    assert any(isinstance(column, TimeRemainingColumn) for column in columns)
