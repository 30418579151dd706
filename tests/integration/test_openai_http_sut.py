"""The HTTP SUT against the real mock server on 127.0.0.1 port 0."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from infermeter.errors import ConfigError
from infermeter.loadgen.interfaces import QueryBatch
from infermeter.servers.faults import FaultConfig
from infermeter.servers.mock import MockConfig, MockServer
from infermeter.suts.http_local import OpenAIHttpSUT
from infermeter.suts.openai_request import ApiKey, OpenAIConfig, Timeouts
from infermeter.suts.prompts import Prompt, SyntheticPrompts
from infermeter.testing import RecordingSink

pytestmark = pytest.mark.integration


def _batch(n: int, start: int = 0) -> QueryBatch:
    ids = np.arange(start, start + n, dtype=np.int64)
    return QueryBatch(ids, ids % 8, np.zeros(n, dtype=np.int64))


def _run(sut: OpenAIHttpSUT, n: int, *, log_all: bool = False) -> RecordingSink:
    sink = RecordingSink(log_all=log_all)
    sut.issue_query(_batch(n), sink)
    assert sink.wait(n, timeout_s=20)
    return sink


@pytest.fixture
def server() -> Iterator[MockServer]:
    srv = MockServer(MockConfig(mode="echo"))
    srv.start()
    yield srv
    srv.stop()


def _sut(url: str, **kw: object) -> OpenAIHttpSUT:
    prompts = SyntheticPrompts(8, input_tokens=5, output_tokens=4)
    return OpenAIHttpSUT(OpenAIConfig(url=url, model="m", **kw), prompts)  # type: ignore[arg-type]


@pytest.mark.parametrize("api", ["completions", "chat"])
@pytest.mark.parametrize("stream", [True, False])
def test_every_sample_completes_with_usage_tokens(
    server: MockServer, api: str, stream: bool
) -> None:
    with _sut(server.url, api=api, stream=stream) as sut:
        sink = _run(sut, 20, log_all=True)
    assert sink.failed == {}
    # A whole (non-streamed) answer has no first-token time: none is reported.
    assert set(sink.first_tokens) == (set(range(20)) if stream else set())
    assert {tokens for tokens, _ in sink.completed.values()} == {4}
    prompt = SyntheticPrompts(8, input_tokens=5, output_tokens=4).prompt(3)
    assert prompt.text is not None
    # echo mode sends the prompt's words back: the accuracy data is the answer
    assert sink.completed[3][1] == (" ".join(prompt.text.split()[:4]) + " ").encode()
    stats = sut.stats()
    assert (stats["requests"], stats["completed"], stats["failed"]) == (20, 20, 0)
    ids, sent = sut.send_times()
    assert sorted(ids.tolist()) == list(range(20)) and (sent > 0).all()


def test_chunk_count_fallback_without_usage(server: MockServer) -> None:
    with _sut(server.url, include_usage=False) as sut:
        sink = _run(sut, 5)
    assert {t for t, _ in sink.completed.values()} == {4}
    tally = sut.exchange.tally
    assert tally.from_delta_events == 5 and tally.from_usage == 0
    assert sut.stats()["token_counts"]["source"] == "delta_events"


def test_tokenizer_discrepancy_figure(server: MockServer, tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    # A character-level tokenizer counts more tokens than the server's words.
    model = tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")
    tok = tokenizers.Tokenizer(model)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Split("", "isolated")
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    with _sut(server.url, tokenizer_file=str(path)) as sut:
        _run(sut, 8)
    # The server sent usage: the tokenizer's check waited until the tally is read.
    assert len(sut.exchange.recounts) == 8
    counted = sut.exchange.tally
    assert not sut.exchange.recounts
    assert counted.both_samples == 8 and counted.usage_tokens == 32
    assert counted.discrepancy == pytest.approx((counted.tokenizer_tokens - 32) / 32)
    assert counted.tokenizer_tokens > 32


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("error_rate", "HTTP 500"),
        ("reset_rate", "connection reset"),
        ("malformed_rate", "malformed stream chunk"),
    ],
)
def test_faults_fail_samples_with_reason(fault: str, reason: str) -> None:
    cfg = MockConfig(
        mode="faults", ttft="const:0", itl="const:0", faults=FaultConfig(**{fault: 1.0})
    )  # type: ignore[arg-type]
    with MockServer(cfg) as url, _sut(url) as sut:
        sink = _run(sut, 6)
    assert len(sink.failed) == 6 and not sink.completed
    assert all(reason in r for r in sink.failed.values()), sink.failed


def test_stall_hits_total_timeout_and_slow_first_byte_hits_first_token_timeout() -> (
    None
):
    stall = MockConfig(
        mode="faults", ttft="const:0", itl="const:0", faults=FaultConfig(stall_rate=1.0)
    )
    with MockServer(stall) as url, _sut(url, timeouts=Timeouts(total_s=0.3)) as sut:
        sink = _run(sut, 3)
    assert set(sink.failed.values()) == {"timeout: request took over 0.3 s"}
    assert set(sink.first_tokens) == {0, 1, 2}  # one token came before the stall
    slow = MockConfig(
        mode="faults",
        ttft="const:0",
        itl="const:0",
        faults=FaultConfig(slow_first_byte_rate=1.0, slow_first_byte_s=5),
    )
    limits = Timeouts(first_token_s=0.2, total_s=10)
    with MockServer(slow) as url, _sut(url, timeouts=limits) as sut:
        sink = _run(sut, 3)
    assert set(sink.failed.values()) == {"timeout: no first token within 0.2 s"}


def test_a_connect_timeout_is_named_as_one_not_as_the_request_limit() -> None:
    # A listener that never accepts, its queue already full: new connects hang.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        queued = [socket.create_connection(("127.0.0.1", port), timeout=5)]
        limits = Timeouts(connect_s=0.3, total_s=600)
        with _sut(f"http://127.0.0.1:{port}/v1", timeouts=limits) as sut:
            sink = _run(sut, 2)
        for conn in queued:
            conn.close()
    assert set(sink.failed.values()) == {"timeout: no connection within 0.3 s"}


def test_connection_refused_fails_every_sample() -> None:
    srv = MockServer()
    url = srv.start()
    srv.stop()  # nothing listens on this port any more
    with _sut(url) as sut:
        sink = _run(sut, 4)
    assert len(sink.failed) == 4
    assert all(r.startswith("cannot connect") for r in sink.failed.values())


def test_api_key_is_sent_but_never_in_reasons_or_stats(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "sk-test-SECRET-0123456789"
    monkeypatch.setenv("MY_KEY", secret)
    key = ApiKey.load(env="MY_KEY")
    assert key is not None and secret not in repr(key) and secret not in str(key)
    cfg = MockConfig(mode="faults", faults=FaultConfig(error_rate=0.5), seed=2)
    with MockServer(cfg) as url:
        sut = OpenAIHttpSUT(
            OpenAIConfig(url=url, model="m"), SyntheticPrompts(2), api_key=key
        )
        with sut:
            sink = _run(sut, 8)
    assert sink.failed and sink.completed
    assert key.redact(f"x {secret} y") == "x *** y"
    assert secret not in str(sink.failed) and secret not in str(sut.stats())
    assert secret not in str(sut.config.params())


def test_authorization_header_reaches_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_KEY", "k")
    srv = MockServer()
    url = srv.start()
    with OpenAIHttpSUT(
        OpenAIConfig(url=url, model="m"),
        SyntheticPrompts(2),
        api_key=ApiKey.load(env="MY_KEY"),
    ) as sut:
        _run(sut, 3)
    srv.stop()
    assert srv.app.stats["with_authorization"] == 3


def test_missing_key_env_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    with pytest.raises(ConfigError, match="NO_SUCH_KEY"):
        ApiKey.load(env="NO_SUCH_KEY")


def test_token_id_prompts_cannot_go_to_chat(server: MockServer) -> None:
    class Ids:
        def prompt(self, index: int) -> Prompt:
            return Prompt(token_ids=[1, 2, 3], max_tokens=2)

    cfg = OpenAIConfig(url=server.url, model="m", api="chat")
    with OpenAIHttpSUT(cfg, Ids()) as sut:
        sink = _run(sut, 2)
    assert all("use --api completions" in r for r in sink.failed.values())
    cfg = OpenAIConfig(url=server.url, model="m")
    with OpenAIHttpSUT(cfg, Ids()) as sut:
        sink = _run(sut, 2)
    assert {t for t, _ in sink.completed.values()} == {2}


def test_server_restart_mid_run_fails_only_the_requests_it_cut() -> None:
    cfg = MockConfig(mode="timed", ttft="const:0.05", itl="const:0.01")
    srv = MockServer(cfg)
    url = srv.start()
    with _sut(url) as sut:
        sink = RecordingSink(log_all=False)
        sut.issue_query(_batch(10), sink)
        srv.restart()  # in-flight requests are cut
        sut.issue_query(_batch(10, start=10), sink)
        assert sink.wait(20, timeout_s=20)
    srv.stop()
    assert len(sink.completed) + len(sink.failed) == 20
    assert set(range(10, 20)) <= set(sink.completed)
    assert all("connect" in r for r in sink.failed.values()), sink.failed


def test_stopping_a_server_cuts_a_handler_that_would_run_for_minutes() -> None:
    # aiohttp's default graceful wait is 60 s (and can elapse in full); ours cuts
    # in-flight handlers after about a second, so stop() returns well before 30 s.
    srv = MockServer(MockConfig(mode="timed", ttft="const:120", itl="const:0.01"))
    url = srv.start()
    with _sut(url) as sut:
        sink = RecordingSink(log_all=False)
        sut.issue_query(_batch(2), sink)
        started = time.monotonic()
        srv.stop()
        assert time.monotonic() - started < 20
        assert sink.wait(2, timeout_s=20)
    assert set(sink.failed) == {0, 1}
