"""The API key never leaves the process: a gateway that echoes the
``Authorization`` header in its error bodies (some do) must not put it on the
console, into run.json, the logs, the store or a sweep's files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from infermeter.errors import SUTConnectionError
from infermeter.runs.preflight import preflight
from infermeter.servers.background import ThreadedServer
from infermeter.suts.openai_request import ApiKey, OpenAIConfig, redact
from infermeter.suts.prompts import SyntheticPrompts
from tests.cli_main import run_main

pytestmark = pytest.mark.integration

KEY = "sk-test-5ecret-d0-not-print"


class _EchoingGateway:
    """An OpenAI endpoint behind a gateway that echoes the request's headers in
    its errors: the probe and every third request get HTTP 502 with the header."""

    def __init__(self) -> None:
        self.seen = 0

    def build(self) -> web.Application:
        async def models(request: web.Request) -> web.Response:
            return web.json_response({"object": "list", "data": [{"id": "m"}]})

        async def completions(request: web.Request) -> web.StreamResponse:
            body = await request.json()
            self.seen += 1
            if self.seen % 3 == 1:
                auth = request.headers.get("Authorization", "")
                return web.Response(
                    status=502,
                    text=f"upstream failed; request headers: Authorization: {auth}",
                )
            if not body.get("stream"):
                return web.json_response(
                    {"choices": [{"text": "a b"}], "usage": {"completion_tokens": 2}}
                )
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            for chunk in (
                {"choices": [{"text": "a "}]},
                {"choices": [{"text": "b"}]},
                {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2}},
            ):
                await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await resp.write(b"data: [DONE]\n\n")
            return resp

        app = web.Application()
        app.router.add_get("/v1/models", models)
        app.router.add_post("/v1/completions", completions)
        return app


@pytest.fixture
def gateway() -> Iterator[str]:
    server = ThreadedServer(_EchoingGateway())
    url = server.start()
    yield url
    server.stop()


def _no_key_anywhere(output: str, *folders: Path) -> None:
    assert KEY not in output
    assert "Bearer ***" in output or "***" in output  # the echo was there, redacted
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                assert KEY.encode() not in path.read_bytes(), path


def _run_args(url: str, tmp: Path, *key_args: str) -> list[str]:
    return [
        "run", "--sut", "openai", "--url", url, "--model", "m",
        "--scenario", "Offline", "--min-duration", "0s", "--min-query-count", "6",
        "--total-sample-count", "6", "--performance-sample-count", "6",
        "--output-dir", str(tmp / "run"), "--store", str(tmp / "store.db"), *key_args,
    ]  # fmt: skip


def test_key_from_env_never_printed_nor_written(
    gateway: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IM_TEST_KEY", KEY)
    done = run_main(*_run_args(gateway, tmp_path, "--api-key-env", "IM_TEST_KEY"))
    assert (tmp_path / "run" / "run.json").exists(), done.output
    warnings = json.loads((tmp_path / "run" / "run.json").read_text())
    assert "Bearer ***" in json.dumps(warnings)
    _no_key_anywhere(done.output, tmp_path)


def test_key_from_file_never_printed_nor_written(gateway: str, tmp_path: Path) -> None:
    key_file = tmp_path / "secrets" / "key.txt"
    key_file.parent.mkdir()
    key_file.write_text(KEY + "\n")
    key_arg = ("--sut-opt", f"api_key_file={key_file}")
    done = run_main(*_run_args(gateway, tmp_path / "out", *key_arg))
    assert (tmp_path / "out" / "run" / "run.json").exists(), done.output
    _no_key_anywhere(done.output, tmp_path / "out")


def test_sweep_never_prints_nor_writes_the_key(
    gateway: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IM_TEST_KEY", KEY)
    done = run_main(
        "sweep", "--url", gateway, "--model", "m", "--concurrency", "1,2",
        "--requests", "6", "--warmup", "0", "--input-tokens", "4",
        "--output-tokens", "2", "--api-key-env", "IM_TEST_KEY",
        "--out", str(tmp_path / "sweep"),
    )  # fmt: skip
    assert (tmp_path / "sweep" / "sweep.json").exists(), done.output
    _no_key_anywhere(done.output, tmp_path)


def test_redact_hides_the_key_and_any_bearer_token() -> None:
    key = ApiKey(KEY)
    text = f'{{"authorization": "Bearer {KEY}", "proxy": "bearer gw-123"}}'
    out = redact(text, key)
    assert KEY not in out and "gw-123" not in out
    assert out.startswith('{"authorization": "Bearer ***", "proxy": "bearer ***"}')
    # Without a key the bearer tokens still go.
    assert redact("Authorization: Bearer abc.def", None) == "Authorization: Bearer ***"


class _Refusing:
    """Answers 401 to every request, echoing the header it got."""

    def build(self) -> web.Application:
        async def refuse(request: web.Request) -> web.Response:
            auth = request.headers.get("Authorization", "none")
            return web.Response(status=401, text=f"invalid key: {auth}")

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", refuse)
        return app


@pytest.mark.parametrize("with_key", [True, False])
def test_a_401_says_the_key_was_refused_when_one_was_sent(with_key: bool) -> None:
    server = ThreadedServer(_Refusing())
    url = server.start()
    try:
        with pytest.raises(SUTConnectionError) as caught:
            preflight(
                OpenAIConfig(url=url, model="m"),
                SyntheticPrompts(1),
                ApiKey(KEY) if with_key else None,
            )
    finally:
        server.stop()
    message = str(caught.value)
    assert "HTTP 401" in message and KEY not in message
    if with_key:
        assert "the key sent was refused" in message and "pass the key" not in message
    else:
        assert "pass the key with --api-key-env VAR" in message
