"""An endpoint that serves OpenAI's API under /v1 and its own API without it
(llama-server's native ``/completions``): a URL without /v1 fails the preflight
with one line, before the run sends load that would fail every request."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from aiohttp import web

from infermeter.errors import SUTConnectionError
from infermeter.runs.preflight import preflight
from infermeter.servers.background import ThreadedServer
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import SyntheticPrompts

pytestmark = pytest.mark.integration


class _LlamaServerLike:
    def build(self) -> web.Application:
        async def models(request: web.Request) -> web.Response:
            return web.json_response({"object": "list", "data": [{"id": "m.gguf"}]})

        async def openai(request: web.Request) -> web.Response:
            return web.json_response(
                {
                    "choices": [{"text": "a b", "finish_reason": "length"}],
                    "usage": {"completion_tokens": 2},
                }
            )

        async def native(request: web.Request) -> web.StreamResponse:
            # The server's own format: no choices, no [DONE].
            body = await request.json()
            if not body.get("stream"):
                return web.json_response({"content": "a b", "stop": True})
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            for chunk in (
                {"content": "a", "stop": False},
                {"content": "", "stop": True},
            ):
                await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
            return resp

        app = web.Application()
        for prefix in ("", "/v1"):
            app.router.add_get(prefix + "/models", models)
        app.router.add_post("/v1/completions", openai)
        app.router.add_post("/completions", native)
        return app


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    server = ThreadedServer(_LlamaServerLike())
    url = server.start().rstrip("/")
    yield url.removesuffix("/v1")
    server.stop()


@pytest.mark.parametrize("stream", [True, False])
def test_a_url_without_v1_fails_the_preflight_naming_the_fix(
    base: str, stream: bool
) -> None:
    config = OpenAIConfig(url=base, model="m.gguf", stream=stream)
    with pytest.raises(SUTConnectionError) as caught:
        preflight(config, SyntheticPrompts(1))
    message = str(caught.value)
    assert "not in the OpenAI format" in message
    assert f"add /v1 to --url, e.g. {base}/v1" in message
    assert "\n" not in message


def test_the_same_server_under_v1_passes(base: str) -> None:
    config = OpenAIConfig(url=base + "/v1", model="m.gguf", stream=False)
    report = preflight(config, SyntheticPrompts(1))
    assert report.probe is not None and report.probe.usage


def test_a_wrong_version_path_is_advised_the_api_base_not_v2_v1(base: str) -> None:
    config = OpenAIConfig(url=base + "/v2", model="m.gguf")
    with pytest.raises(SUTConnectionError) as caught:
        preflight(config, SyntheticPrompts(1))
    message = str(caught.value)
    assert "HTTP 404" in message and f"e.g. {base}/v1" in message
    assert "/v2/v1" not in message
