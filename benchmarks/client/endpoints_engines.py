"""One MLPerf Endpoints point against the timed mock, by both engines side by side.

infermeter's engine (``endpoints run``) and the reference client (``endpoints run
--engine endpoints-reference``, mlcommons/endpoints in its own Python 3.12 venv) run
the same point: concurrency 8, 4 passes of 64 synthetic prompts, 32 output tokens,
seed set A. Printed: TTFT p90 and TPOT p90 of each engine beside the mock's own log
of the same requests (GET /mock/requests: server-side times from the request's
arrival to its first token chunk and on to its last byte, which leave out the
network and the client's parsing) and what the mock was told (constant TTFT and
inter-token gap), and each engine's client CPU seconds per 1,000 requests (infermeter: its own
certification; the reference: the CPU of its process tree, from getrusage of the
children). The reference counts tokens with a word-level tokenizer over the mock's
words (tests/endpoints_fixtures.py builds it).

    python benchmarks/client/endpoints_engines.py --client-python VENV/bin/python
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the tests' word-level tokenizer

from tests.endpoints_fixtures import word_tokenizer  # noqa: E402

from infermeter.runs.endpoints_files import percentile  # noqa: E402
from infermeter.runs.endpoints_reference import run_reference_points  # noqa: E402
from infermeter.runs.endpoints_run import EndpointsRunRequest, run_points  # noqa: E402
from infermeter.servers.mock import MockConfig, MockProcess  # noqa: E402
from infermeter.servers.mock_served import served_latencies  # noqa: E402

TTFT_S, ITL_S, OUT, USERS, DATASET, PASSES = 0.050, 0.005, 32, 8, 64, 4


def _summary(folder: Path) -> dict[str, object]:
    [path] = folder.glob("*/performance/result_summary.json")
    return dict(json.loads(path.read_text()))


def _mock_log(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url.replace("/v1", "/mock/requests")) as resp:
        return dict(json.loads(resp.read()))


def _log_p90_ms(log: dict[str, Any], start: int, end: int) -> tuple[float, ...]:
    """TTFT p90 and TPOT p90 (ms) of the mock's log rows ``start:end``."""
    rows = {k: v[start:end] for k, v in log.items() if isinstance(v, list)}
    ttft, tpot = served_latencies(rows)
    return tuple(float(np.percentile(x, 90)) * 1e3 for x in (ttft, tpot))


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client-python", type=Path, required=True)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="endpoints-engines-"))
    cfg = MockConfig(
        mode="timed",
        ttft=f"const:{TTFT_S}",
        itl=f"const:{ITL_S}",
        output_tokens=f"const:{OUT}",
    )
    with MockProcess(cfg) as url:
        ours = EndpointsRunRequest(
            sut_options={"url": url, "model": "m"},
            concurrency=[USERS],
            out_dir=tmp / "infermeter",
            dataset_size=DATASET,
            input_tokens=16,
            output_tokens=OUT,
            seed_set="A",
            duration_s=0.01,
            warmup_requests=0,
            min_passes=PASSES,
            partial=True,
        )
        run_points(ours)
        mark = _mock_log(url)["requests"]
        before = _children_cpu_s()
        theirs = dataclasses.replace(ours, out_dir=tmp / "reference")
        run_reference_points(
            theirs, args.client_python, str(word_tokenizer(tmp / "tok"))
        )
        reference_cpu_s = _children_cpu_s() - before
        log = _mock_log(url)
    # The log's rows of each engine's run (probes and warmup included: a few rows).
    log_a = _log_p90_ms(log, 0, mark)
    log_b = _log_p90_ms(log, mark, len(log["received_ns"]))
    a, b = _summary(tmp / "infermeter"), _summary(tmp / "reference")
    n = PASSES * DATASET
    cpu_a = a["infermeter"]["client"]["cpu_s_per_1000_requests"]  # type: ignore[index]
    head = ("infermeter", "reference", "mock log (i)", "mock log (r)", "told")
    print(f"{'':<24}" + "".join(f"{h:>14}" for h in head))
    for i, (name, key, told) in enumerate(
        (("TTFT p90 (ms)", "ttft", TTFT_S), ("TPOT p90 (ms)", "tpot", ITL_S))
    ):
        pa, pb = percentile(a[key], 90.0), percentile(b[key], 90.0)  # type: ignore[arg-type]
        cells = ((pa or 0) / 1e6, (pb or 0) / 1e6, log_a[i], log_b[i], told * 1e3)
        print(f"{name:<24}" + "".join(f"{c:>14.2f}" for c in cells))
    done = (a["n_samples_completed"], b["n_samples_completed"], n)
    print(f"{'completed samples':<24}{done[0]:>14}{done[1]:>14}{done[2]:>14}")
    cpu_b = reference_cpu_s / n * 1000
    print(f"{'client CPU s / 1k req':<24}{cpu_a:>14.2f}{cpu_b:>14.2f}")
    print("mock log (i)/(r): the mock's own rows of infermeter's / the reference's run")
    print(f"(runs in {tmp})")


if __name__ == "__main__":
    main()
