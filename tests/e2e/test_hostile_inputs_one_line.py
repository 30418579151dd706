"""Hostile or damaged files a user hands infermeter: one line naming the file,
exit 2, never an internal error, a traceback or the file's bytes on the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_main import Result, run_main
from tests.results_fixtures import write_run

DEEP = "[" * 100_000 + "]" * 100_000


def _one_line(done: Result, *words: str) -> str:
    assert done.code == 2, done.output
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    assert "internal error" not in done.output and "Traceback" not in done.output
    for word in words:
        assert word in lines[0], lines[0]
    assert len(lines[0]) < 400, lines[0]
    return lines[0]


def test_deeply_nested_json_to_results_import(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(DEEP)
    done = run_main(
        "results", "import", str(tmp_path / "summary.json"),
        "--store", str(tmp_path / "s.db"),
    )  # fmt: skip
    _one_line(done, "summary.json", "nested too deeply")


def test_deeply_nested_run_json_to_report(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "r")
    (folder / "run.json").write_text(DEEP)
    _one_line(run_main("report", str(folder), "--no-compare"), "run.json", "nested")


@pytest.mark.parametrize(
    ("field", "value", "word"),
    [
        ("metrics", 7, "an object"),
        ("verdict", "VALID", "an object"),
        ("power", [1], "an object"),
        ("environment", "x", "an object"),
        ("warnings", {"a": 1}, "a list"),
        ("benchmark", 3, "a string"),
    ],
)
def test_wrong_typed_run_json_fields_to_report(
    tmp_path: Path, field: str, value: object, word: str
) -> None:
    folder = write_run(tmp_path / "r")
    doc = json.loads((folder / "run.json").read_text())
    doc[field] = value
    (folder / "run.json").write_text(json.dumps(doc))
    done = run_main(
        "report", str(folder), "--no-compare", "-o", str(tmp_path / "r.html")
    )
    _one_line(done, "run.json", repr(field), word)
    assert not (tmp_path / "r.html").exists()


def _run_with_conf(tmp_path: Path, conf: Path) -> Result:
    return run_main(
        "run", "--sut", "fake", "--scenario", "Offline", "--user-conf", str(conf),
        "--min-duration", "0s", "--output-dir", str(tmp_path / "out"),
        "--store", str(tmp_path / "s.db"),
    )  # fmt: skip


@pytest.mark.parametrize("key", ["target_qps", "min_query_count"])
def test_a_100000_digit_number_in_user_conf(tmp_path: Path, key: str) -> None:
    conf = tmp_path / "user.conf"
    conf.write_text(f"*.Offline.{key} = {'9' * 100_000}\n")
    line = _one_line(_run_with_conf(tmp_path, conf), "user.conf:1", key)
    assert "(100,002 characters)" in line  # the value and its quotes
    assert not (tmp_path / "out").exists()


def test_a_binary_user_conf_is_not_echoed(tmp_path: Path) -> None:
    conf = tmp_path / "user.conf"
    conf.write_bytes(bytes(range(256)) * 4)
    line = _one_line(_run_with_conf(tmp_path, conf), "user.conf", "not text")
    assert "\x1b" not in line and "\x07" not in line


def test_control_bytes_in_a_conf_key_are_shown_escaped(tmp_path: Path) -> None:
    conf = tmp_path / "user.conf"
    conf.write_text("abc\x1b[31m = 1\n")
    line = _one_line(_run_with_conf(tmp_path, conf), "user.conf:1", "abc\\x1b[31m")
    assert "\x1b" not in line


@pytest.mark.parametrize("command", ["predict", "calibrate"])
def test_a_round_this_machine_lacks_says_where_to_get_it(command: str) -> None:
    done = run_main("model", command, "--results", "v9.9")
    line = _one_line(done, "round v9.9", "inference_results_v9.9", "--results PATH")
    assert "/shared/" not in line  # a path an installed infermeter never has
