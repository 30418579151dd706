"""The time budget of a README or --help example: scaled to the wall time it asks for.

An example's budget is its own, from its own start: a start (a process,
imports, a model built) plus three times the wall time its flags ask for (a
run's ``--min-duration``, a sweep's points times ``--duration``), so that a
machine busy with other work (2-3x slower) still passes and a slow example
fails alone, never one budget for many.
"""

from __future__ import annotations

from infermeter.cli.options import parse_duration_ms

# A process start, imports, a model built, a run's pre- and post-processing: on
# a machine whose cores are taken by others, the part of an example its flags
# do not time.
START_S = 120.0
# A machine busy with other work runs an example 2-3x slower than a quiet one.
SLOWDOWN = 3.0
DEFAULT_RUN_S = 20.0  # ``infermeter run`` without --min-duration: 20 s of arrivals
DEFAULT_POINT_S = 10.0  # a sweep point without --duration
SEARCH_POINTS = 20  # a --search sweep's most probes
# Around a run's or a point's arrivals: its drain (the requests in flight when
# the arrivals end), its records and files.
DRAIN_S = 2.0
RAY_S = 30.0  # a local Ray cluster (a dozen processes) and its actors started


def _value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else None


def work_s(argv: list[str]) -> float:
    """The wall time ``infermeter ARGV`` asks for on a quiet machine."""
    return (RAY_S if "--ray" in argv else 0.0) + _arrivals_s(argv[0], argv)


def _arrivals_s(command: str, argv: list[str]) -> float:
    if command == "run":
        duration = _value(argv, "--min-duration")
        if duration is None:
            return DEFAULT_RUN_S + DRAIN_S
        return parse_duration_ms(duration, flag="--min-duration") / 1000 + DRAIN_S
    if command == "sweep":
        point = float(_value(argv, "--duration") or DEFAULT_POINT_S)
        listed = _value(argv, "--concurrency") or _value(argv, "--rates")
        # Listed points, a search's probes, or one point (a trace replayed).
        unlisted = SEARCH_POINTS if "--search" in argv else 1
        points = len(listed.split(",")) if listed else unlisted
        return points * (point + DRAIN_S)
    return 0.0


def budget_s(argv: list[str]) -> float:
    """Seconds ``infermeter ARGV`` may take: its start plus its work, on a busy machine."""
    return START_S + SLOWDOWN * work_s(argv)
