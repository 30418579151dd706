"""``mlperf_log_trace.json``: a Chrome trace of the performance phase (off by default)."""

from __future__ import annotations

import os
from pathlib import Path

from infermeter.loadgen.engine import PhaseResult
from infermeter.loadgen.records import UNSET

CHUNK = 100_000


def write_trace(phase: PhaseResult, path: Path, *, origin_ns: int) -> None:
    """One ``Sample`` begin/end pair per completed sample, times in us with 3 decimals."""
    pid = os.getpid()
    n = phase.samples_issued
    origin = phase.query_origin_ns[phase.schedule.query_of_samples()[:n]]
    rec = phase.records
    with path.open("w") as out:
        out.write('{"traceEvents":[\n')
        for begin in range(0, n, CHUNK):
            end = min(n, begin + CHUNK)
            lines = []
            for i in range(begin, end):
                done = int(rec.completed_ns[i])
                if done == UNSET:
                    continue
                ts = (int(origin[i]) - origin_ns) / 1e3
                lines.append(
                    f'{{"name":"Sample","cat":"default","ph":"b","pid":{pid},"id":{i},'
                    f'"ts":{ts:.3f},"args":{{"sample_seq":{i},'
                    f'"sample_idx":{int(phase.schedule.sample_indices[i])},'
                    f'"issue_start_ns":{int(rec.issued_ns[i]) - int(origin[i])},'
                    f'"complete_ns":{done - int(origin[i])}}}}},\n'
                    f'{{"name":"Sample","cat":"default","ph":"e","pid":{pid},"id":{i},'
                    f'"ts":{(done - origin_ns) / 1e3:.3f}}},\n'
                )
            out.write("".join(lines))
        out.write(
            '{"name":"LastTrace"}\n],\n"displayTimeUnit":"ns",\n'
            '"otherData":{"version":"infermeter trace v1"}\n}\n'
        )
