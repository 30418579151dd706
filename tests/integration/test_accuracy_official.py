"""Scoring an accuracy log written by the official LoadGen equals scoring ours."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from infermeter.clock import MonotonicClock
from infermeter.loadgen.interfaces import CompletionSink, QueryBatch
from infermeter.loadgen.logs.files import LogOutput, write_logs
from infermeter.loadgen.runner import run_test
from infermeter.loadgen.settings import Mode, RunSettings, Scenario
from infermeter.workloads import get_benchmark
from infermeter.workloads.accuracy.scorer import AccuracyReport, score_accuracy_log
from infermeter.workloads.datasets import DatasetOptions, build_qsl

N = 24
BENCH = get_benchmark("resnet50")


def _responses() -> dict[int, np.ndarray]:
    """Known bytes per sample: right top-1 for 2 of every 3 samples."""
    qsl = build_qsl(BENCH, options=DatasetOptions(samples=N))
    out = {}
    for i in range(N):
        label = int(qsl.reference(i))
        top1 = label if i % 3 else (label + 7) % 1000
        out[i] = np.asarray([top1, label, 3, 4, 5], dtype=np.float32)
    return out


class KnownBytesSUT:
    name = "KnownBytesSUT"

    def __init__(self, responses: dict[int, np.ndarray]) -> None:
        self.responses = responses

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        data = [self.responses[i].tobytes() for i in batch.sample_indices.tolist()]
        sink.complete(batch.ids, data=data)

    def flush_queries(self) -> None:
        pass


def _ours(tmp_path: Path, responses: dict[int, np.ndarray]) -> Path:
    qsl = build_qsl(BENCH, options=DatasetOptions(samples=N))
    settings = RunSettings(scenario=Scenario.OFFLINE, mode=Mode.ACCURACY_ONLY)
    outcome = run_test(KnownBytesSUT(responses), qsl, settings, clock=MonotonicClock())
    out = tmp_path / "ours"
    out.mkdir()
    write_logs(outcome, LogOutput(out))
    return out / "mlperf_log_accuracy.json"


def _official(tmp_path: Path, responses: dict[int, np.ndarray], monkeypatch) -> Path:
    lg = pytest.importorskip("mlperf_loadgen")
    out = tmp_path / "official"
    out.mkdir()
    monkeypatch.chdir(out)  # LoadGen looks for audit.config in the working directory

    def issue(samples: list) -> None:
        for s in samples:
            arr = responses[s.index]
            lg.QuerySamplesComplete(
                [lg.QuerySampleResponse(s.id, arr.ctypes.data, arr.nbytes)]
            )

    sut = lg.ConstructSUT(issue, lambda: None)
    qsl = lg.ConstructQSL(N, N, lambda idx: None, lambda idx: None)
    settings = lg.TestSettings()
    settings.scenario = lg.TestScenario.Offline
    settings.mode = lg.TestMode.AccuracyOnly
    log = lg.LogSettings()
    log.log_output.outdir = str(out)
    log.enable_trace = False
    lg.StartTestWithLogSettings(sut, qsl, settings, log)
    lg.DestroyQSL(qsl)
    lg.DestroySUT(sut)
    return out / "mlperf_log_accuracy.json"


def _values(report: AccuracyReport) -> dict[str, float | None]:
    return {m.metric: m.value for m in report.metrics}


@pytest.mark.official
def test_official_log_scores_like_ours(tmp_path: Path, monkeypatch) -> None:
    responses = _responses()
    official = _official(tmp_path, responses, monkeypatch)
    ours = _ours(tmp_path, responses)
    qsl = build_qsl(BENCH, options=DatasetOptions(samples=N))
    a = score_accuracy_log(official, BENCH, qsl)
    b = score_accuracy_log(ours, BENCH, qsl)
    assert a.samples == b.samples == N
    assert _values(a) == _values(b)
    assert _values(a)["top1"] == pytest.approx(100 * 16 / 24)
    assert _values(a)["top5"] == 100.0
    assert not a.passed


class TokenSUT:
    name = "TokenSUT"

    def __init__(self, tokens: dict[int, np.ndarray]) -> None:
        self.tokens = tokens

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        rows = [self.tokens[i] for i in batch.sample_indices.tolist()]
        counts = np.asarray([len(r) for r in rows], dtype=np.int64)
        sink.complete(batch.ids, n_tokens=counts, data=[r.tobytes() for r in rows])

    def flush_queries(self) -> None:
        pass


@pytest.mark.official
def test_official_llm_log_scores_like_ours(tmp_path: Path, monkeypatch) -> None:
    lg = pytest.importorskip("mlperf_loadgen")
    from infermeter.workloads.datasets import parse_length
    from infermeter.workloads.datasets.synthetic import corpus_tokenizer

    bench = get_benchmark("llama2-70b")
    opts = DatasetOptions(samples=12, output_len=parse_length("uniform:5:30"))
    qsl = build_qsl(bench, options=opts)
    tok = corpus_tokenizer()
    # half the answers are the reference, half are truncated to 3 words
    tokens = {}
    for i in range(12):
        ids = tok.encode(str(qsl.reference(i)))
        tokens[i] = np.asarray(ids if i % 2 else ids[:3], dtype=np.int32)

    out = tmp_path / "official"
    out.mkdir()
    monkeypatch.chdir(out)

    def issue(samples: list) -> None:
        for s in samples:
            arr = tokens[s.index]
            lg.QuerySamplesComplete(
                [lg.QuerySampleResponse(s.id, arr.ctypes.data, arr.nbytes, len(arr))]
            )

    sut = lg.ConstructSUT(issue, lambda: None)
    lqsl = lg.ConstructQSL(12, 12, lambda idx: None, lambda idx: None)
    settings = lg.TestSettings()
    settings.scenario = lg.TestScenario.Offline
    settings.mode = lg.TestMode.AccuracyOnly
    settings.use_token_latencies = True
    log = lg.LogSettings()
    log.log_output.outdir = str(out)
    log.enable_trace = False
    lg.StartTestWithLogSettings(sut, lqsl, settings, log)
    lg.DestroyQSL(lqsl)
    lg.DestroySUT(sut)

    ours_settings = RunSettings(
        scenario=Scenario.OFFLINE, mode=Mode.ACCURACY_ONLY, use_token_latencies=True
    )
    outcome = run_test(TokenSUT(tokens), qsl, ours_settings, clock=MonotonicClock())
    write_logs(outcome, LogOutput(tmp_path))
    a = score_accuracy_log(out, bench, qsl, tokenizer=tok)
    b = score_accuracy_log(tmp_path, bench, qsl, tokenizer=tok)
    assert _values(a) == _values(b)
    expected = sum(len(t) for t in tokens.values()) / 12
    assert _values(a)["tokens_per_sample"] == round(expected, 1)
    assert 40 < _values(a)["rouge1"] < 100
    assert a.test06 is not None and a.test06.passed
