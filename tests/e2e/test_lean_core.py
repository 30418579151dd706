"""The core install runs benchmarks; report rendering ([report]) and ROUGE
scoring ([accuracy]) are extras: without them, one line names the extra, and
``infermeter --help`` never loads them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.results_fixtures import write_run

EXTRAS = ("jinja2", "plotly", "rouge_score", "nltk")


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_help_loads_no_report_code_nor_extras() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from infermeter.cli.main import main\n"
        "sys.argv = ['infermeter', '--help']\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: main()\n"
        "    except SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{EXTRAS!r} or m.startswith('infermeter.report')))"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("missing", ["jinja2", "plotly"])
def test_report_without_its_extra_is_one_line_naming_it(
    tmp_path: Path, missing: str
) -> None:
    run = write_run(tmp_path / "r")
    code = (
        f"import sys; sys.modules[{missing!r}] = None; "
        + ("sys.modules['plotly.offline'] = None; " if missing == "plotly" else "")
        + "from infermeter.cli.main import main; main()"
    )
    done = _python(code, "report", str(run), "-o", str(tmp_path / "r.html"))
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == [
        f"error: {missing} is not installed; install the extra: "
        "pip install 'infermeter[report]'"
    ]
    assert not (tmp_path / "r.html").exists()


def test_rouge_without_its_extra_names_it() -> None:
    code = (
        "import sys; sys.modules['rouge_score'] = None\n"
        "from infermeter.errors import MissingDependencyError\n"
        "from infermeter.workloads.accuracy.rouge import rouge\n"
        "try: rouge(['a b'], ['a c'])\n"
        "except MissingDependencyError as exc: print(exc)\n"
    )
    done = _python(code)
    assert done.stdout.strip().endswith("pip install 'infermeter[accuracy]'"), done
