"""Token totals against a real llama.cpp server (llama-cpp-python) equal what it generated.

Writes a tiny random-weight GGUF (benchmarks/client/tiny_gguf.py), serves it with
``llama_cpp.server`` on 127.0.0.1, and runs ``infermeter run --sut openai``
(streamed, Offline) against it. The server's streams carry no usage, so
infermeter counts one token per token-bearing chunk (an estimate, named as
such); with ``--sut-opt tokenizer=`` it re-counts the text with the model's
own tokenizer. The truth is the server's ``usage.completion_tokens`` of the
same requests sent non-streamed (greedy decoding: the same tokens).

For the tokenizer run, a logit bias keeps the output to printable ASCII: text
the server dropped (bytes of an unfinished UTF-8 character) cannot be
re-counted by any tokenizer, and that is what the chunk count is for.

    python benchmarks/client/llama_cpp_tokens.py --llama-python /work/llama-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
SAMPLES = 16


@dataclass
class Row:
    api: str
    counting: str
    source: str
    infermeter_tokens: int
    server_tokens: int
    samples: int
    text_chunks_only: int | None = None  # what counting non-empty chunks gave

    @property
    def equal(self) -> bool:
        return self.infermeter_tokens == self.server_tokens


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as resp:
        return dict(json.loads(resp.read()))


class LlamaServer:
    """``python -m llama_cpp.server`` on a free loopback port, for a ``with`` block."""

    def __init__(self, python: str, model: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._cmd = [
            python, "-m", "llama_cpp.server", "--model", str(model),
            "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "1024",
        ]  # fmt: skip
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LlamaServer:
        self._proc = subprocess.Popen(
            self._cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {' '.join(self._cmd)}")
            try:
                urllib.request.urlopen(self.url + "/models", timeout=2).close()
                return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.3)
        raise RuntimeError("llama_cpp.server did not answer within 120 s")

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(30)


def ascii_only_bias() -> dict[str, float]:
    """Logit bias banning every token that is not printable ASCII (ids per tiny_gguf)."""
    sys.path.insert(0, str(HERE))
    from tiny_gguf import byte_chars

    chars = byte_chars()
    printable = {chars[b] for b in range(32, 127)}
    vocab = [*chars, "<eos>", "<merge>"]
    return {str(i): -100.0 for i, t in enumerate(vocab) if t not in printable}


def _infermeter_run(
    url: str, api: str, out: Path, extra: list[str]
) -> tuple[dict[str, Any], np.ndarray]:
    cmd = [
        sys.executable, "-m", "infermeter", "run", "--sut", "openai", "--url", url,
        "--model", "tiny", "--api", api, "--benchmark", "llama2-70b",
        "--scenario", "Offline", "--min-duration", "0s", "--min-query-count",
        str(SAMPLES), "--total-sample-count", str(SAMPLES),
        "--performance-sample-count", str(SAMPLES), "--output-len", "24",
        "--input-len", "16", "--output-dir", str(out), "--store", str(out) + ".db",
        # llama-cpp-python's server answers one request at a time and resets
        # the connections of requests that arrive meanwhile.
        "--sut-opt", "max_in_flight=1", *extra,
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode not in (0, 3):
        raise RuntimeError(f"infermeter run failed: {done.stderr.strip()[-400:]}")
    doc = json.loads((out / "run.json").read_text())
    with np.load(out / "records.npz") as rec:
        return doc, rec["sample_index"].copy()


def _server_tokens(
    url: str, api: str, indices: np.ndarray, bias: dict[str, float] | None
) -> tuple[int, int]:
    """The server's own count for the issued samples, from non-streamed answers,
    and what counting only the stream's chunks with text would have said."""
    from infermeter.suts.openai_options import QSLPrompts
    from infermeter.suts.openai_request import OpenAIConfig, build_body
    from infermeter.workloads.datasets.factory import DatasetOptions, build_qsl
    from infermeter.workloads.datasets.lengths import parse_length
    from infermeter.workloads.registry import get_benchmark

    options = DatasetOptions(
        samples=SAMPLES,
        performance_sample_count=SAMPLES,
        input_len=parse_length("16"),
        output_len=parse_length("24"),
    )
    prompts = QSLPrompts(build_qsl(get_benchmark("llama2-70b"), options=options))
    config = OpenAIConfig(url=url, model="tiny", api=api, stream=False)
    usage: dict[int, int] = {}
    text_chunks: dict[int, int] = {}
    for index in sorted(set(indices.tolist())):
        body = json.loads(build_body(config, prompts.prompt(index)))
        if bias:
            body["logit_bias"] = bias
        usage[index] = int(_post(config.endpoint, body)["usage"]["completion_tokens"])
        text_chunks[index] = _text_chunks(config.endpoint, {**body, "stream": True})
    issued = indices.tolist()
    return sum(usage[i] for i in issued), sum(text_chunks[i] for i in issued)


def _text_chunks(url: str, body: dict[str, Any]) -> int:
    from infermeter.suts.sse import StreamState

    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    state = StreamState()
    with urllib.request.urlopen(request, timeout=120) as resp:
        state.feed(resp.read())
    return state.finish().fragments


def measure(llama_python: str, work: Path, apis: tuple[str, ...]) -> list[Row]:
    """Every (api, counting) row: infermeter's total beside the server's."""
    subprocess.run(
        [llama_python, str(HERE / "tiny_gguf.py"), str(work / "model")],
        check=True,
        capture_output=True,
    )
    bias = ascii_only_bias()
    rows = []
    with LlamaServer(llama_python, work / "model" / "tiny.gguf") as server:
        for api in apis:
            for counting, extra, logit_bias in (
                ("chunks", [], None),
                (
                    "tokenizer",
                    [
                        "--sut-opt",
                        f"tokenizer={work / 'model'}",
                        "--sut-opt",
                        "extra_body=" + json.dumps({"logit_bias": bias}),
                    ],
                    bias,
                ),
            ):
                out = work / f"{api}-{counting}"
                doc, indices = _infermeter_run(server.url, api, out, extra)
                counts = doc.get("token_counts") or {}
                truth, text_only = _server_tokens(server.url, api, indices, logit_bias)
                rows.append(
                    Row(
                        api=api,
                        counting=counting,
                        source=str(counts.get("source")),
                        infermeter_tokens=int(doc["metrics"]["token_count"]),
                        server_tokens=truth,
                        samples=int(indices.shape[0]),
                        text_chunks_only=text_only,
                    )
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-python", default=sys.executable)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = measure(args.llama_python, Path(tmp), ("completions", "chat"))
    print("| API | counting | source (run.json) | samples | infermeter tokens "
          "| server usage tokens | difference | chunks with text only |")  # fmt: skip
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        diff = r.infermeter_tokens / r.server_tokens - 1 if r.server_tokens else 0.0
        print(
            f"| {r.api} | {r.counting} | {r.source} | {r.samples} | "
            f"{r.infermeter_tokens:,} | {r.server_tokens:,} | {diff:+.2%} | "
            f"{r.text_chunks_only:,} |"
        )


if __name__ == "__main__":
    main()
