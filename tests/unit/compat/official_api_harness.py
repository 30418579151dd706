"""A LoadGen harness written only against the official ``mlperf_loadgen`` API.

Run unchanged on the official wheel (``python official_api_harness.py CASE OUTDIR``)
and on infermeter (``python -m infermeter.compat.shim official_api_harness.py ...``).
Worker threads complete samples away from the issue thread; LLM cases report a
first token before the completion. Responses are a function of the sample index.
"""

import argparse
import array
import queue
import threading

import mlperf_loadgen as lg

TOTAL, PERF = 256, 128
SEEDS = {
    "qsl_rng_seed": 2085463073848966840,
    "sample_index_rng_seed": 2747215439041700203,
    "schedule_rng_seed": 16159082839903944936,
}


def response_bytes(index):
    return bytes([index % 251, (index * 7) % 256, 0xAB, 0xCD])


class WorkerSUT:
    """Issue enqueues; two worker threads complete (first token first for LLMs)."""

    def __init__(self, tokens, batch):
        self.tokens = tokens
        self.batch = batch
        self.work = queue.Queue()
        self.threads = [
            threading.Thread(target=self.run, daemon=True) for _ in range(2)
        ]
        for t in self.threads:
            t.start()

    def issue(self, samples):
        for k in range(0, len(samples), self.batch):
            self.work.put(samples[k : k + self.batch])

    def run(self):
        while (samples := self.work.get()) is not None:
            buffers = [array.array("B", response_bytes(s.index)) for s in samples]
            if self.tokens:
                lg.FirstTokenComplete(
                    [
                        lg.QuerySampleResponse(s.id, b.buffer_info()[0], 1)
                        for s, b in zip(samples, buffers, strict=True)
                    ]
                )
            lg.QuerySamplesComplete(
                [
                    lg.QuerySampleResponse(
                        s.id, b.buffer_info()[0], len(b), 3 + s.index % 5
                    )
                    for s, b in zip(samples, buffers, strict=True)
                ]
            )

    def stop(self):
        for _ in self.threads:
            self.work.put(None)
        for t in self.threads:
            t.join()


def settings_for(case):
    ts = lg.TestSettings()
    for key, value in SEEDS.items():
        setattr(ts, key, value)
    ts.mode = lg.TestMode.PerformanceOnly
    ts.min_duration_ms = 200
    if case in ("server", "llm_server"):
        ts.scenario = lg.TestScenario.Server
        ts.server_target_qps = 2500
        ts.server_target_latency_ns = 2_000_000_000
        ts.min_query_count = 600
        if case == "llm_server":
            ts.use_token_latencies = True
            ts.ttft_latency = 2_000_000_000
            ts.tpot_latency = 1_000_000_000
    elif case == "offline":
        ts.scenario = lg.TestScenario.Offline
        ts.offline_expected_qps = 1000
        ts.min_query_count = 500
        ts.min_duration_ms = 0
    elif case == "offline_invalid":  # 500 samples cannot last a minute
        ts.scenario = lg.TestScenario.Offline
        ts.min_query_count = 500
        ts.min_duration_ms = 60_000
    elif case == "multistream":
        ts.scenario = lg.TestScenario.MultiStream
        ts.multi_stream_expected_latency_ns = 50_000
        ts.min_query_count = 700
        ts.min_duration_ms = 0
    elif case == "accuracy":
        ts.scenario = lg.TestScenario.SingleStream
        ts.mode = lg.TestMode.AccuracyOnly
    elif case == "llm_sample_count":  # llama2-70b asks for 24,576 samples
        ts.scenario = lg.TestScenario.Offline
        ts.use_token_latencies = True
        ts.offline_expected_qps = 1000
        ts.min_query_count = 500
        ts.min_duration_ms = 0
        ts.performance_sample_count_override = 24576
    elif case == "sample_count":  # resnet50 asks for 1,024 samples
        ts.scenario = lg.TestScenario.SingleStream
        ts.single_stream_expected_latency_ns = 100_000
        ts.min_query_count = 100
        ts.min_duration_ms = 0
        ts.performance_sample_count_override = 1024
    elif case == "llm_tpot_fails":
        ts.scenario = lg.TestScenario.Server
        ts.server_target_qps = 2500
        ts.min_query_count = 600
        ts.use_token_latencies = True
        ts.ttft_latency = 2_000_000_000
        ts.tpot_latency = 1
    return ts


def qsl_size(case):
    """Total and performance sample counts of the QSL."""
    if case == "llm_sample_count":
        return 1024, 1024
    if case == "sample_count":
        return 128, 128
    return TOTAL, PERF


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case")
    parser.add_argument("outdir")
    args = parser.parse_args()
    tokens = args.case.startswith("llm")
    sut_impl = WorkerSUT(tokens, batch=16)
    sut = lg.ConstructSUT(sut_impl.issue, lambda: None)
    qsl = lg.ConstructQSL(*qsl_size(args.case), lambda idx: None, lambda idx: None)
    log_settings = lg.LogSettings()
    log_settings.log_output.outdir = args.outdir
    log_settings.enable_trace = False
    lg.StartTestWithLogSettings(sut, qsl, settings_for(args.case), log_settings)
    sut_impl.stop()
    lg.DestroyQSL(qsl)
    lg.DestroySUT(sut)
    print("done", flush=True)


if __name__ == "__main__":
    main()
