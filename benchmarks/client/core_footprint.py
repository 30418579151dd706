"""What ``pip install infermeter`` (the core) brings, and what ``--help`` costs.

Walks the core requirements of pyproject.toml through the installed
distributions (their own requirements, markers evaluated, extras not taken)
and sums the files each one installed: packages and MB of the core, beside
the same walk with the packages the core used to hold (jinja2, plotly,
rouge-score: now the [report] and [accuracy] extras). Then times
``infermeter --help`` in fresh interpreters: user + system CPU of the child,
the best and the median of several.

Reads the environment it runs in: the packages must be installed there (the
dev venv holds every one). Sizes are of the installed files, not of wheels.

    PYTHONPATH=src python benchmarks/client/core_footprint.py --runs 7
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
FORMER_CORE = ("jinja2>=3.1", "plotly>=5.18", "rouge-score>=0.1.2")


def core_requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return list(project["dependencies"])


def closure(requirements: list[str]) -> dict[str, int]:
    """Installed distributions the requirements pull in, each with its bytes."""
    seen: dict[str, int] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            print(f"not installed here: {req.name}", file=sys.stderr)
            continue
        seen[name] = _bytes(dist)
        todo.extend(Requirement(r) for r in dist.requires or [])
    return seen


def _bytes(dist: metadata.Distribution) -> int:
    total = 0
    for file in dist.files or []:
        path = Path(str(dist.locate_file(file)))
        if path.is_file():
            total += path.stat().st_size
    return total


def help_cpu_s(runs: int) -> list[float]:
    """CPU seconds (user + system) of ``python -m infermeter --help``, per run."""
    out = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [sys.executable, "-m", "infermeter", "--help"],
            check=True,
            capture_output=True,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return out


def _line(label: str, sizes: dict[str, int]) -> str:
    # +1: infermeter itself, which the walk does not count.
    return (
        f"{label}: {len(sizes) + 1} packages, "
        f"{sum(sizes.values()) / 1e6:.0f} MB installed (infermeter's own not counted)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="--help timings")
    args = parser.parse_args()
    core = core_requirements()
    now, before = closure(core), closure([*core, *FORMER_CORE])
    print(_line("core now", now))
    print(_line("core with jinja2, plotly, rouge-score", before))
    moved = sorted(set(before) - set(now), key=lambda n: -before[n])
    print(
        "moved to extras: " + ", ".join(f"{n} {before[n] / 1e6:.1f} MB" for n in moved)
    )
    cpu = help_cpu_s(args.runs)
    print(
        f"infermeter --help CPU: best {min(cpu):.2f} s, median "
        f"{statistics.median(cpu):.2f} s over {args.runs} runs"
    )


if __name__ == "__main__":
    main()
