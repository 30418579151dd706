"""Run the official ``mlperf_loadgen`` wheel once and print what it generated, as JSON.

Used by tests in a subprocess (the wheel keeps global state per process):
``python -m tests.official.probe '{"scenario": "Server", ...}'``. Prints
``loaded_qsl_set``, the sample indices in issue order, the scheduled offsets
(ns, from the trace) and the detail-log keys.
"""

from __future__ import annotations

import array
import json
import sys
import tempfile
from pathlib import Path

import mlperf_loadgen as lg

SCENARIOS = {
    "SingleStream": lg.TestScenario.SingleStream,
    "MultiStream": lg.TestScenario.MultiStream,
    "Server": lg.TestScenario.Server,
    "Offline": lg.TestScenario.Offline,
}
MODES = {
    "PerformanceOnly": lg.TestMode.PerformanceOnly,
    "AccuracyOnly": lg.TestMode.AccuracyOnly,
}


def main(spec: dict) -> dict:
    total = spec.pop("total", 1024)
    perf = spec.pop("perf", 1024)
    trace = spec.pop("trace", True)
    tokens = spec.pop("tokens", False)
    issued: list[int] = []
    payload = array.array("B", b"\x01\x02\x03\x04")
    address, size = payload.buffer_info()

    def issue(samples):  # completes every sample at once, with a 4-byte response
        issued.extend(s.index for s in samples)
        if tokens:
            lg.FirstTokenComplete(
                [lg.QuerySampleResponse(s.id, address, size) for s in samples]
            )
            responses = [
                lg.QuerySampleResponse(s.id, address, size, 2) for s in samples
            ]
        else:
            responses = [lg.QuerySampleResponse(s.id, address, size) for s in samples]
        lg.QuerySamplesComplete(responses)

    sut = lg.ConstructSUT(issue, lambda: None)
    qsl = lg.ConstructQSL(total, perf, lambda i: None, lambda i: None)
    ts = lg.TestSettings()
    ts.scenario = SCENARIOS[spec.pop("scenario")]
    ts.mode = MODES[spec.pop("mode", "PerformanceOnly")]
    for key, value in spec.items():
        setattr(ts, key, value)
    out = Path(tempfile.mkdtemp(prefix="lgprobe_"))
    ls = lg.LogSettings()
    ls.log_output.outdir = str(out)
    ls.enable_trace = trace
    lg.StartTestWithLogSettings(sut, qsl, ts, ls)
    lg.DestroyQSL(qsl)
    lg.DestroySUT(sut)
    detail = {}
    for line in (out / "mlperf_log_detail.txt").read_text().splitlines():
        if line.startswith(":::MLLOG"):
            rec = json.loads(line[len(":::MLLOG ") :])
            detail.setdefault(rec["key"], rec["value"])
    scheduled = []
    if trace:
        # The wheel's trace is not valid JSON as a whole (it double-quotes
        # some strings), but each "Sample" line is.
        samples = []
        for line in (out / "mlperf_log_trace.json").read_text().splitlines():
            if line.startswith('{"name":"Sample"') and '"ph":"b"' in line:
                event = json.loads(line.rstrip(","))
                samples.append((event["args"]["sample_seq"], event["ts"]))
        samples.sort()
        if samples:
            t0 = samples[0][1]
            scheduled = [round((ts - t0) * 1000) for _, ts in samples]
    return {
        "loaded_qsl_set": detail.get("loaded_qsl_set"),
        "sample_indices": issued,
        "scheduled_ns": scheduled,
        "detail": detail,
        "summary_text": (out / "mlperf_log_summary.txt").read_text(),
        "detail_keys": sorted(
            {
                json.loads(line[len(":::MLLOG ") :])["key"]
                for line in (out / "mlperf_log_detail.txt").read_text().splitlines()
                if line.startswith(":::MLLOG")
            }
        ),
        "accuracy_text": (out / "mlperf_log_accuracy.json").read_text(),
        "outdir": str(out),
    }


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
