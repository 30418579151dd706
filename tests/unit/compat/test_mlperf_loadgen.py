"""The compat module in-process: types, settings, misuse and the opt-in shim."""

from __future__ import annotations

import array
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import infermeter.compat
import infermeter.compat.mlperf_loadgen as lg
from infermeter.compat.logparse import read_accuracy, read_logs

Issue = Callable[[list[lg.QuerySample]], None]


def _run(
    tmp_path: Path,
    issue: Issue,
    *,
    scenario: lg.TestScenario = lg.TestScenario.Offline,
    mode: lg.TestMode = lg.TestMode.PerformanceOnly,
    total: int = 16,
    **fields: Any,
) -> tuple[dict[str, str], Any]:
    ts = lg.TestSettings()
    ts.scenario, ts.mode = scenario, mode
    ts.min_duration_ms, ts.min_query_count = 0, 16
    for key, value in fields.items():
        setattr(ts, key, value)
    ls = lg.LogSettings()
    ls.log_output.outdir = str(tmp_path)
    ls.enable_trace = False
    sut = lg.ConstructSUT(issue, lambda: None)
    qsl = lg.ConstructQSL(total, total, lambda idx: None, lambda idx: None)
    lg.StartTestWithLogSettings(sut, qsl, ts, ls)
    lg.DestroySUT(sut)
    lg.DestroyQSL(qsl)
    return read_logs(tmp_path)


def _complete_all(samples: list[lg.QuerySample], **kw: Any) -> None:
    lg.QuerySamplesComplete(
        [lg.QuerySampleResponse(s.id, b"\x01", **kw) for s in samples]
    )


def test_defaults_match_the_official_classes() -> None:
    official = pytest.importorskip("mlperf_loadgen")
    ours, theirs = lg.TestSettings(), official.TestSettings()
    names = [n for n in dir(theirs) if not n.startswith("_") and n != "FromConfig"]
    for name in names:
        mine, other = getattr(ours, name), getattr(theirs, name)
        if name in ("scenario", "mode"):
            assert (mine.name, int(mine)) == (other.name, int(other)), name
        else:
            assert mine == pytest.approx(other), name
    ls, ols = lg.LogSettings(), official.LogSettings()
    assert ls.enable_trace is ols.enable_trace is True
    for name in ("outdir", "prefix", "suffix", "prefix_with_datetime"):
        assert getattr(ls.log_output, name) == getattr(ols.log_output, name)
    for enum_name in ("TestScenario", "TestMode", "LoggingMode"):
        ours_enum = {m.name: int(m) for m in getattr(lg, enum_name)}
        theirs_enum = {
            k: int(v) for k, v in getattr(official, enum_name).__members__.items()
        }
        assert ours_enum == theirs_enum


def test_misspelt_setting_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        lg.TestSettings().server_target_qsp = 5  # type: ignore[attr-defined]


def test_response_data_by_address_and_by_buffer(tmp_path: Path) -> None:
    seen: list[int] = []

    def issue(samples: list[lg.QuerySample]) -> None:
        buf = array.array("B", b"\xab\xcd")
        address, size = buf.buffer_info()
        half = len(samples) // 2
        lg.QuerySamplesComplete(
            [lg.QuerySampleResponse(s.id, address, size) for s in samples[:half]],
            lambda r: seen.append(r.id),
        )
        lg.QuerySamplesComplete(
            [
                lg.QuerySampleResponse(s.id, bytearray(b"\x12\x34"))
                for s in samples[half:]
            ]
        )

    _run(tmp_path, issue, mode=lg.TestMode.AccuracyOnly)
    entries = read_accuracy(tmp_path / "mlperf_log_accuracy.json")
    assert sorted(e["data"] for e in entries) == ["1234"] * 8 + ["ABCD"] * 8
    assert len(seen) == 8  # response_cb runs for each logged response


def test_completion_from_another_thread(tmp_path: Path) -> None:
    def issue(samples: list[lg.QuerySample]) -> None:
        threading.Thread(target=_complete_all, args=(samples,)).start()

    _, detail = _run(tmp_path, issue, scenario=lg.TestScenario.SingleStream)
    assert detail.errors == []
    assert detail.get("result_query_count") >= 16


@pytest.mark.parametrize(
    ("misuse", "message"),
    [
        ("unknown", "completion for an id that was never issued"),
        ("twice", "a sample was completed twice"),
        ("late_first", "a first token arrived after its sample completed"),
        ("no_tokens", "n_tokens argument missing or attempted to record 0"),
    ],
)
def test_misuse_is_a_logged_error_not_a_crash(
    tmp_path: Path, misuse: str, message: str
) -> None:
    # The official wheel logs the last three; an unknown id crashes it (SIGSEGV).
    def issue(samples: list[lg.QuerySample]) -> None:
        ids = [s.id for s in samples]
        responses = [lg.QuerySampleResponse(i, b"x", n_tokens=3) for i in ids]
        if misuse == "no_tokens":
            lg.FirstTokenComplete(responses)
            _complete_all(samples)
            return
        lg.QuerySamplesComplete(responses)
        if misuse == "unknown":
            lg.QuerySamplesComplete([lg.QuerySampleResponse(12345, b"x")])
        elif misuse == "twice":
            lg.QuerySamplesComplete(responses)
        elif misuse == "late_first":
            lg.FirstTokenComplete(responses)

    summary, detail = _run(tmp_path, issue, use_token_latencies=True)
    # Logged as an ERROR, or (n_tokens) named as the INVALID reason.
    text = (tmp_path / "mlperf_log_summary.txt").read_text()
    assert any(message in e for e in detail.errors) or f"ERROR: {message}" in text
    assert summary["Result is"] == "INVALID"


def test_destroyed_and_foreign_handles_raise_one_line() -> None:
    sut = lg.ConstructSUT(lambda s: None, lambda: None)
    qsl = lg.ConstructQSL(4, 4, lambda i: None, lambda i: None)
    lg.DestroySUT(sut)
    with pytest.raises(lg.LoadGenUsageError, match="already destroyed"):
        lg.StartTest(sut, qsl, lg.TestSettings())
    with pytest.raises(lg.LoadGenUsageError, match="is not a QSL handle"):
        lg.StartTest(
            lg.ConstructSUT(lambda s: None, lambda: None), 42, lg.TestSettings()
        )
    with pytest.raises(lg.LoadGenUsageError, match="no test running"):
        lg.QuerySamplesComplete([lg.QuerySampleResponse(1, b"")])
    with pytest.raises(TypeError, match="list of QuerySampleResponse"):
        _run_bad_type()


def _run_bad_type() -> None:
    errors: list[BaseException] = []

    def issue(samples: list[lg.QuerySample]) -> None:
        try:
            lg.QuerySamplesComplete([s.id for s in samples])  # type: ignore[misc]
        except TypeError as exc:
            errors.append(exc)
        _complete_all(samples)

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        _run(Path(tmp), issue)
    raise errors[0]


def test_server_calls_issue_once_per_query_unless_coalescing(tmp_path: Path) -> None:
    sizes: dict[bool, list[int]] = {True: [], False: []}
    for coalesce in (False, True):

        def issue(samples: list[lg.QuerySample], c: bool = coalesce) -> None:
            sizes[c].append(len(samples))
            _complete_all(samples)

        _run(
            tmp_path / str(coalesce),
            issue,
            scenario=lg.TestScenario.Server,
            server_target_qps=20000.0,
            min_query_count=2000,
            server_coalesce_queries=coalesce,
        )
    assert set(sizes[False]) == {1}
    assert sum(sizes[True]) == sum(sizes[False]) >= 2000
    assert len(sizes[True]) <= len(sizes[False])


def test_fast_sut_and_qdl(tmp_path: Path) -> None:
    def fast(ids: list[int], indices: list[int]) -> None:
        assert all(isinstance(i, int) and i != 0 for i in ids)
        lg.QuerySamplesComplete([lg.QuerySampleResponse(i, 0, 0) for i in ids])

    ts = lg.TestSettings()
    ts.scenario, ts.min_duration_ms, ts.min_query_count = lg.TestScenario.Offline, 0, 8
    ls = lg.LogSettings()
    ls.log_output.outdir, ls.enable_trace = str(tmp_path), False
    qsl = lg.ConstructQSL(8, 8, lambda i: None, lambda i: None)
    lg.StartTestWithLogSettings(lg.ConstructFastSUT(fast, lambda: None), qsl, ts, ls)
    assert read_logs(tmp_path)[1].get("sut_name") == "PyFastSUT"
    qdl = lg.ConstructQDL(_complete_all, lambda: None, lambda: "MyQDL")
    lg.StartTestWithLogSettings(qdl, qsl, ts, ls)
    assert read_logs(tmp_path)[1].get("sut_name") == "MyQDL"


def test_audit_config_is_applied_with_the_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "audit.config").write_text("*.*.min_query_count = 24\n")
    out = tmp_path / "logs"
    _, detail = _run(out, _complete_all, total=32)
    assert detail.get("requested_min_query_count") == 24
    assert any("Found Audit Config file" in w for w in detail.warnings)


def test_shim_makes_import_mlperf_loadgen_resolve_to_compat() -> None:
    saved = sys.modules.get("mlperf_loadgen")
    infermeter.compat.install()
    try:
        import mlperf_loadgen

        assert mlperf_loadgen is lg
    finally:
        infermeter.compat.uninstall()
    assert sys.modules.get("mlperf_loadgen") is saved
