"""Token counts against a llama.cpp-style stream: equal to what the server generated.

The mock's llama.cpp style sends no usage even when asked, an empty-text
chunk for a token that ends inside a UTF-8 character, a role-only first chat
chunk and a finish-only last chunk. Counting only chunks with text would be
low by one token in eight here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from aiohttp import web
from tests.cli_main import run_main

from infermeter.loadgen.interfaces import QueryBatch
from infermeter.servers.background import ThreadedServer
from infermeter.servers.mock import MockConfig, MockServer
from infermeter.suts.http_local import OpenAIHttpSUT
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import SyntheticPrompts
from infermeter.suts.token_count import describe, is_estimate
from infermeter.testing import RecordingSink

pytestmark = pytest.mark.integration

N = 24
OUT = 37  # not a multiple of 8: the last split character is cut off cleanly


def _run(url: str, **kw: object) -> tuple[OpenAIHttpSUT, RecordingSink]:
    prompts = SyntheticPrompts(4, input_tokens=5, output_tokens=OUT)
    sink = RecordingSink(log_all=True)
    ids = np.arange(N, dtype=np.int64)
    with OpenAIHttpSUT(
        OpenAIConfig(url=url, model="m", ignore_eos=True, **kw),  # type: ignore[arg-type]
        prompts,
    ) as sut:
        sut.issue_query(QueryBatch(ids, ids % 4, np.zeros(N, np.int64)), sink)
        assert sink.wait(N, timeout_s=30)
    assert sink.failed == {}
    return sut, sink


def _generated(server: MockServer) -> int:
    return int(server.mock.stats["tokens"])


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_llama_cpp_stream_counts_every_token_event(api: str) -> None:
    server = MockServer(MockConfig(mode="max-throughput", style="llama.cpp"))
    with server as url:
        sut, sink = _run(url, api=api)
    server_tokens = _generated(server)
    counted = sum(tokens for tokens, _ in sink.completed.values())
    assert server_tokens == N * OUT
    assert counted == server_tokens  # empty-text chunks counted, finish/role not
    counts = sut.stats()["token_counts"]
    assert counts["source"] == "delta_events" and is_estimate(counts)
    assert "estimate" in describe(counts)
    # The text carries the split character whole.
    assert "é" in sink.completed[0][1].decode()


def test_llama_cpp_non_streamed_answers_carry_usage() -> None:
    with MockServer(MockConfig(style="llama.cpp")) as url:
        sut, sink = _run(url, stream=False)
    assert {tokens for tokens, _ in sink.completed.values()} == {OUT}
    assert sut.stats()["token_counts"]["source"] == "usage"
    assert not sink.first_tokens  # no TTFT from a whole answer


def _byte_bpe(path: Path) -> str:
    """A byte-level BPE that splits the mock's text as the mock generated it."""
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {"t": 0, "o": 1, "k": 2, "to": 3, "tok": 4, "Ã": 5, "©": 6}
    model = tokenizers.models.BPE(vocab, [("t", "o"), ("to", "k")])
    tok = tokenizers.Tokenizer(model)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.save(str(path / "tokenizer.json"))
    return str(path)


def test_a_tokenizer_recounts_exactly(tmp_path: Path) -> None:
    folder = _byte_bpe(tmp_path)  # a folder holding tokenizer.json
    with MockServer(MockConfig(style="llama.cpp")) as url:
        sut, sink = _run(url, tokenizer_file=folder)
    counted = sum(tokens for tokens, _ in sink.completed.values())
    assert counted == N * OUT
    counts = sut.stats()["token_counts"]
    assert counts["source"] == "tokenizer" and not is_estimate(counts)
    assert counts["tokenizer"].endswith("tokenizer.json")


def test_usage_wins_over_the_tokenizer_and_the_gap_is_reported(
    tmp_path: Path,
) -> None:
    folder = _byte_bpe(tmp_path)
    with MockServer(MockConfig()) as url:  # openai style: usage in the stream
        sut, sink = _run(url, tokenizer_file=folder)
    assert {tokens for tokens, _ in sink.completed.values()} == {OUT}
    counts = sut.stats()["token_counts"]
    assert counts["source"] == "usage"
    assert counts["usage_vs_tokenizer_samples"] == N
    # The BPE has no token for the space byte and skips it: both count 37.
    assert counts["usage_vs_tokenizer_discrepancy"] == pytest.approx(0.0)


class _LostStream:
    """Answers as ``transformers serve --continuous-batching`` was seen to under
    concurrent load: one final chunk with no text whose ``usage`` counts tokens."""

    def build(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/completions", self._complete)
        return app

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        chunk = {
            "choices": [{"index": 0, "text": "", "finish_reason": "length"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": OUT},
        }
        await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await resp.write_eof()
        return resp


def test_usage_without_streamed_text_fails_the_sample_and_says_why() -> None:
    prompts = SyntheticPrompts(4, input_tokens=5, output_tokens=OUT)
    sink = RecordingSink(log_all=True)
    ids = np.arange(4, dtype=np.int64)
    server = ThreadedServer(_LostStream())
    with server as url, OpenAIHttpSUT(OpenAIConfig(url=url, model="m"), prompts) as sut:
        sut.issue_query(QueryBatch(ids, ids, np.zeros(4, np.int64)), sink)
        assert sink.wait(4, timeout_s=30)
    assert sink.completed == {}
    assert set(sink.failed.values()) == {
        "empty response: no text streamed, though the server's usage counts tokens"
    }


def test_run_tokenizer_also_counts_an_endpoints_answers(tmp_path: Path) -> None:
    """`infermeter run --tokenizer` shapes the prompts and re-counts the answers
    against the server's usage; a large gap is a warning in run.json."""
    tokenizers = pytest.importorskip("tokenizers")
    alphabet = sorted(tokenizers.pre_tokenizers.ByteLevel.alphabet())
    bytewise = tokenizers.Tokenizer(
        tokenizers.models.BPE({c: i for i, c in enumerate(alphabet)}, [])
    )
    bytewise.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok = tmp_path / "tok"
    tok.mkdir()
    bytewise.save(str(tok / "tokenizer.json"))  # one token a byte: not the mock's
    with MockServer(MockConfig()) as url:
        result = run_main(
            "run", "--sut", "openai", "--url", url, "--model", "mock-model",
            "--scenario", "Offline", "--tokenizer", str(tok / "tokenizer.json"),
            "--input-len", "16", "--output-len", "8", "--min-duration", "100ms",
            "--min-query-count", "16", "--performance-sample-count", "16",
            "--output-dir", str(tmp_path / "run"), "--store", str(tmp_path / "s.db"),
            "--metrics-url", "off",
        )  # fmt: skip
    assert result.code in (0, 3), result.output
    doc = json.loads((tmp_path / "run" / "run.json").read_text())
    counts = doc["token_counts"]
    assert counts["source"] == "usage"
    assert counts["tokenizer"].endswith("tokenizer.json")
    assert counts["usage_vs_tokenizer_samples"] == 16
    gap = counts["usage_vs_tokenizer_discrepancy"]
    assert abs(gap) > 0.05
    said = "against the server's usage over 16 samples"
    assert any(said in w for w in doc["warnings"]), doc["warnings"]
