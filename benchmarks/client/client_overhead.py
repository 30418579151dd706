"""Client overhead, side by side: infermeter vs aiperf, guidellm, inference-perf.

All tools stream /v1/completions (128 prompt tokens, 32 output tokens) from
the same max-throughput mock server. The server is pinned to CPU 1 and every
client (its whole process tree) to CPU 0. Each tool runs twice, with N1 and N2
requests at a fixed concurrency; differences cancel start-up costs:

    rate = (N2 - N1) / (wall2 - wall1)     cpu/1000 = 1000 (cpu2 - cpu1) / (N2 - N1)

CPU is user + system of the child process tree (RUSAGE_CHILDREN). Peers run
from throwaway venvs (see --peers); a peer that cannot run is skipped with the
reason. Also measures infermeter's issue and send lateness at 1,000 req/s.

    python benchmarks/client/client_overhead.py --peers /tmp/peers --tokenizer /tmp/peers/tok

One command against inference-perf alone (it needs Python >= 3.12; the
tokenizer is trained on the spot when the directory is missing):

    python3.12 -m venv /tmp/peers/iperf && /tmp/peers/iperf/bin/pip install inference-perf
    python benchmarks/client/client_overhead.py --tools infermeter,inference-perf
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from infermeter.runs.load import LoadSpec, run_load
from infermeter.servers.mock import MockConfig, MockProcess
from infermeter.suts.http_local import OpenAIHttpSUT
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import SyntheticPrompts

CLIENT_CPU, SERVER_CPU = 0, 1
ISL, OSL = 128, 32


def _pin_client() -> None:
    os.sched_setaffinity(0, {CLIENT_CPU})


def _offline_env(tool: str) -> dict[str, str]:
    """No hub: HF_ENDPOINT points at a closed port so a stray call fails at once."""
    env = dict(os.environ)
    env.update(
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        HF_ENDPOINT="http://127.0.0.1:9",
        TOKENIZERS_PARALLELISM="false",
    )
    if tool != "aiperf":  # aiperf rejects a local tokenizer path in offline mode
        env.update(TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    return env


def _server_completed(url: str) -> int:
    with urllib.request.urlopen(url.replace("/v1", "/stats"), timeout=10) as resp:
        return int(json.loads(resp.read()).get("completed", 0))


def _timed(
    cmd: list[str], env: dict[str, str], cwd: Path, timeout: float
) -> tuple[float, float, int, str]:
    """Run ``cmd`` pinned to the client CPU: (wall s, CPU s of its tree, rc, tail)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        cmd,
        env=env,
        cwd=cwd,
        preexec_fn=_pin_client,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode, (proc.stdout + proc.stderr)[-600:]


def infermeter_cmd(url: str, n: int, c: int, tok: Path, work: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "infermeter",
        "sweep",
        "--url",
        url,
        "--model",
        "m",
        "--concurrency",
        str(c),
        "--requests",
        str(n),
        "--input-tokens",
        str(ISL),
        "--output-tokens",
        str(OSL),
        "--json",
        "--no-preflight",  # its probe request is not part of the measured load
    ]


def aiperf_cmd(
    peers: Path, url: str, n: int, c: int, tok: Path, work: Path
) -> list[str]:
    return [
        str(peers / "aiperf/bin/aiperf"),
        "profile",
        "--model",
        "mock-model",
        "--url",
        url.removesuffix("/v1"),
        "--endpoint-type",
        "completions",
        "--streaming",
        "--tokenizer",
        str(tok),
        "--concurrency",
        str(c),
        "--request-count",
        str(n),
        "--prompt-input-tokens-mean",
        str(ISL),
        "--prompt-input-tokens-stddev",
        "0",
        "--prompt-output-tokens-mean",
        str(OSL),
        "--prompt-output-tokens-stddev",
        "0",
        "--ui",
        "none",
        "--no-server-metrics",
        "--no-gpu-telemetry",
        "--random-seed",
        "1",
        "--request-timeout-seconds",
        "600",
        "--output-artifact-dir",
        str(work / "aiperf_out"),
    ]


def guidellm_cmd(
    peers: Path, url: str, n: int, c: int, tok: Path, work: Path
) -> list[str]:
    target = url.removesuffix("/v1")
    return [
        str(peers / "guidellm/bin/guidellm"),
        "run",
        "--backend",
        f"kind=openai_http,target={target},model=mock-model,"
        "request_format=/v1/completions",
        "--profile",
        f"kind=concurrent,streams={c}",
        "--constraint",
        f"kind=max_requests,count={n}",
        "--data",
        f"kind=synthetic_text,prompt_tokens={ISL},output_tokens={OSL}",
        "--tokenizer",
        f"kind=huggingface_auto,model={tok}",
        "--output",
        f"kind=json,path={work / 'benchmarks.json'}",
        "--disable-console-interactive",
    ]


def iperf_cmd(
    peers: Path, url: str, n: int, c: int, tok: Path, work: Path
) -> list[str]:
    config = {
        "api": {"type": "completion", "streaming": True},
        "data": {
            "type": "synthetic",
            "input_distribution": {
                "type": "fixed",
                "mean": ISL,
                "min": ISL,
                "max": ISL,
            },
            "output_distribution": {
                "type": "fixed",
                "mean": OSL,
                "min": OSL,
                "max": OSL,
            },
        },
        "load": {
            "type": "concurrent",
            "stages": [{"num_requests": n, "concurrency_level": c}],
        },
        "server": {
            "type": "vllm",
            "model_name": "mock-model",
            "base_url": url.removesuffix("/v1"),
        },
        "tokenizer": {"pretrained_model_name_or_path": str(tok)},
        "storage": {"local_storage": {"path": str(work / "reports")}},
    }
    path = work / "config.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return [
        str(peers / "iperf/bin/inference-perf"),
        "-c",
        str(path),
        "--log-level",
        "WARNING",
    ]


def measure(name: str, make: Any, url: str, args: argparse.Namespace) -> dict[str, Any]:
    """Two runs (N1, N2) per repeat; medians of rate and CPU per 1,000 requests."""
    rates, cpus, served = [], [], []
    env = _offline_env(name)
    for _ in range(args.repeats):
        walls, cpu_s, counts = [], [], []
        for n in (args.n1, args.n2):
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                before = _server_completed(url)
                wall, cpu, rc, tail = _timed(
                    make(url, n, args.concurrency, args.tokenizer, work),
                    env,
                    work,
                    args.timeout,
                )
                done = _server_completed(url) - before
            if rc != 0 or done < n:
                return {
                    "tool": name,
                    "skipped": f"exit {rc}, {done}/{n} served: {tail}",
                }
            walls.append(wall)
            cpu_s.append(cpu)
            counts.append(done)
        extra = counts[1] - counts[0]
        rates.append(extra / (walls[1] - walls[0]))
        cpus.append(1000 * (cpu_s[1] - cpu_s[0]) / extra)
        served.append(counts)
    return {
        "tool": name,
        "requests_per_s": round(statistics.median(rates), 1),
        "cpu_s_per_1000": round(statistics.median(cpus), 3),
        "runs": {
            "rates": [round(r, 1) for r in rates],
            "cpu_s_per_1000": [round(c, 3) for c in cpus],
            "server_completed": served,
        },
    }


def lateness_at(url: str, rate: float, requests: int) -> dict[str, Any]:
    """infermeter in this process at ``rate`` (Poisson): lateness and CPU."""
    _pin_client()
    config = OpenAIConfig(url=url, model="m")
    prompts = SyntheticPrompts(1024, input_tokens=ISL, output_tokens=OSL)
    with OpenAIHttpSUT(config, prompts) as sut:
        spec = LoadSpec(mode="rate", rate=rate, requests=requests, warmup_requests=500)
        result = run_load(sut, spec, sample_count=1024)
    cert = result.certification
    return {
        "rate": rate,
        "completed": result.metrics.completed,
        "issue_lateness_ns": cert.issue_lateness_ns,
        "send_lateness_ns": cert.send_lateness_ns,
        "cpu_fraction": round(cert.cpu_fraction, 3),
        "client_bound": cert.client_bound,
    }


def ensure_tokenizer(path: Path) -> None:
    """A tiny byte-level BPE in ``path`` (the peers load a Hugging Face tokenizer)."""
    if (path / "tokenizer.json").exists():
        return
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=["<s>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    text = [m.__doc__ or "" for m in (json, os, subprocess, statistics, argparse)]
    tok.train_from_iterator(text * 20, trainer=trainer)
    path.mkdir(parents=True, exist_ok=True)
    tok.save(str(path / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "model_max_length": 4096,
    }
    (path / "tokenizer_config.json").write_text(json.dumps(config))
    special = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    (path / "special_tokens_map.json").write_text(json.dumps(special))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peers", type=Path, default=Path("/tmp/peers"))
    parser.add_argument("--tokenizer", type=Path, default=Path("/tmp/peers/tok"))
    parser.add_argument("--tools", default="infermeter,aiperf,guidellm,inference-perf")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--n1", type=int, default=2000)
    parser.add_argument("--n2", type=int, default=8000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--lateness-rate", type=float, default=1000.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    ensure_tokenizer(args.tokenizer)
    peers = args.peers
    makers = {
        "infermeter": infermeter_cmd,
        "aiperf": lambda *a: aiperf_cmd(peers, *a),
        "guidellm": lambda *a: guidellm_cmd(peers, *a),
        "inference-perf": lambda *a: iperf_cmd(peers, *a),
    }
    binaries = {
        "aiperf": "aiperf/bin/aiperf",
        "guidellm": "guidellm/bin/guidellm",
        "inference-perf": "iperf/bin/inference-perf",
    }
    os.sched_setaffinity(0, {SERVER_CPU})  # the spawned server inherits this
    results: list[dict[str, Any]] = []
    with MockProcess(MockConfig(mode="max-throughput", model="mock-model")) as url:
        _pin_client()
        for tool in args.tools.split(","):
            binary = binaries.get(tool)
            if binary and not (peers / binary).exists():
                results.append(
                    {"tool": tool, "skipped": f"{peers / binary} not installed"}
                )
                continue
            print(f"measuring {tool} ...", file=sys.stderr, flush=True)
            results.append(measure(tool, makers[tool], url, args))
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
        lateness = lateness_at(url, args.lateness_rate, int(args.lateness_rate * 5))
    report = {
        "machine": os.uname().nodename,
        "cpus": os.cpu_count(),
        "concurrency": args.concurrency,
        "n1": args.n1,
        "n2": args.n2,
        "isl": ISL,
        "osl": OSL,
        "tools": results,
        "lateness": lateness,
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    shutil.rmtree(Path(tempfile.gettempdir()) / "aiperf_out", ignore_errors=True)


if __name__ == "__main__":
    main()
