"""Untrusted files: a pickle never runs unless the user says to trust it.

The malicious pickle creates a file when unpickled. Without --allow-pickle
that file must never appear, and the error must name both ways on.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from tests.cli_main import flat, run_main

pd = pytest.importorskip("pandas")


class Payload:
    """Unpickling this calls ``Path.touch(marker)``: code from a data file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, ...]:
        return (Path.touch, (self.marker,))


@pytest.fixture
def evil(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "payload-ran"
    path = tmp_path / "open_orca.pkl"
    path.write_bytes(pickle.dumps(Payload(marker)))
    return path, marker


def invoke(*args: str) -> tuple[int, str]:
    result = run_main(*args)
    return result.code, result.output


def _assert_refused(code: int, output: str, marker: Path) -> None:
    assert not marker.exists(), "the pickle's code ran"
    assert code == 2, output
    line = output.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "--allow-pickle" in line
    assert "infermeter datasets convert" in line
    assert "runs any code" in line


def test_a_pickle_dataset_is_refused_and_nothing_runs(
    tmp_path: Path, evil: tuple[Path, Path]
) -> None:
    path, marker = evil
    code, out = invoke(
        "run",
        "--sut",
        "fake",
        "--dataset",
        str(path),
        "--min-duration",
        "1s",
        "--output-dir",
        str(tmp_path / "run"),
        "--store",
        str(tmp_path / "s.db"),
    )
    _assert_refused(code, out, marker)
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_a_pickle_under_another_name_is_refused_too(
    tmp_path: Path, evil: tuple[Path, Path]
) -> None:
    path, marker = evil
    disguised = path.rename(tmp_path / "prompts.data")
    for fmt in ("pickle", "openorca-pickle"):
        code, out = invoke(
            "run",
            "--sut",
            "fake",
            "--dataset",
            str(disguised),
            "--dataset-format",
            fmt,
            "--output-dir",
            str(tmp_path / "run"),
        )
        _assert_refused(code, out, marker)


def test_accuracy_and_convert_refuse_it_without_the_flag(
    tmp_path: Path, evil: tuple[Path, Path]
) -> None:
    path, marker = evil
    code, out = invoke("datasets", "convert", str(path), str(tmp_path / "o.parquet"))
    _assert_refused(code, out, marker)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "mlperf_log_accuracy.json").write_text("[]")
    code, out = invoke(
        "accuracy",
        str(tmp_path / "logs"),
        "--benchmark",
        "llama2-70b",
        "--dataset",
        str(path),
    )
    _assert_refused(code, out, marker)


def test_the_payload_is_real_it_runs_when_trusted(
    tmp_path: Path, evil: tuple[Path, Path]
) -> None:
    """The refusals above are meaningful: this file does run code once trusted."""
    path, marker = evil
    code, out = invoke(
        "datasets", "convert", str(path), str(tmp_path / "o.jsonl"), "--allow-pickle"
    )
    assert marker.exists()
    assert code != 0 and "not a pandas DataFrame" in out


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_convert_once_then_run_on_plain_data(tmp_path: Path, suffix: str) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    frame = pd.DataFrame(
        {
            "input": [f"question {i}" for i in range(16)],
            "tok_input": [list(range(i + 2)) for i in range(16)],
            "output": [f"answer {i}" for i in range(16)],
            "tok_output_length": [4] * 16,
        }
    )
    source = tmp_path / "reference.pkl"
    frame.to_pickle(source)
    target = tmp_path / f"reference{suffix}"
    code, out = invoke(
        "datasets", "convert", str(source), str(target), "--allow-pickle"
    )
    assert code == 0, out
    assert "16 rows" in flat(out)
    code, out = invoke(
        "run",
        "--sut",
        "fake",
        "--scenario",
        "Offline",
        "--dataset",
        str(target),
        "--min-duration",
        "100ms",
        "--total-sample-count",
        "16",
        "--output-dir",
        str(tmp_path / "run"),
        "--store",
        str(tmp_path / "s.db"),
    )
    assert code in (0, 3), out  # a verdict, either way: the dataset was read
    assert "Result:" in out


def test_a_trusted_pickle_runs_with_the_flag(tmp_path: Path) -> None:
    frame = pd.DataFrame({"input": ["a", "b"], "output": ["x", "y"]})
    frame.to_pickle(tmp_path / "d.pkl")
    code, out = invoke(
        "run",
        "--sut",
        "fake",
        "--scenario",
        "Offline",
        "--dataset",
        str(tmp_path / "d.pkl"),
        "--allow-pickle",
        "--min-duration",
        "100ms",
        "--output-dir",
        str(tmp_path / "run"),
        "--store",
        str(tmp_path / "s.db"),
    )
    assert code in (0, 3), out
    assert "Result:" in out


def test_an_empty_folder_as_dataset_is_called_that_not_a_pickle(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    code, out = invoke(
        "run", "--sut", "fake", "--dataset", str(tmp_path / "data"),
        "--output-dir", str(tmp_path / "run"), "--store", str(tmp_path / "s.db"),
    )  # fmt: skip
    assert code == 2, out
    assert "is an empty folder" in out and "pickle" not in out
    assert not (tmp_path / "run").exists()
