"""FromConfig on a series of conf files, written against the official API; prints JSON."""

import json
import sys

import mlperf_loadgen as lg

FIELDS = (
    "server_target_qps",
    "server_target_latency_ns",
    "min_duration_ms",
    "qsl_rng_seed",
    "min_query_count",
    "server_target_latency_percentile",
)


def main():
    folder = sys.argv[1]
    ts = lg.TestSettings()
    out = []
    for name in ("missing.conf", "bad.conf", "ignored.conf", "good.conf"):
        rc = ts.FromConfig(f"{folder}/{name}", "resnet50", "Server")
        out.append([name, rc] + [getattr(ts, f) for f in FIELDS])
    ts.scenario = lg.TestScenario.Offline
    ts.min_duration_ms, ts.min_query_count = 0, 8
    ls = lg.LogSettings()
    ls.log_output.outdir = folder
    ls.enable_trace = False
    sut = lg.ConstructSUT(
        lambda qs: lg.QuerySamplesComplete(
            [lg.QuerySampleResponse(q.id, 0, 0) for q in qs]
        ),
        lambda: None,
    )
    lg.StartTestWithLogSettings(sut, lg.ConstructQSL(8, 8, print, print), ts, ls)
    with open(f"{folder}/mlperf_log_detail.txt") as detail:  # noqa: PTH123
        errors = [line for line in detail if '"error_invalid_config"' in line]
    out.append(["config errors", len(errors)])
    print(json.dumps(out))


main()
