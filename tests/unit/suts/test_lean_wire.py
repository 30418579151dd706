"""The lean wire's request head: built once per URL and headers, as HTTP/1.1 wants it."""

from __future__ import annotations

import pytest

from infermeter.suts.lean_wire import request_head


def test_the_head_names_the_path_host_and_headers_and_ends_at_the_length() -> None:
    key, head = request_head(
        "http://127.0.0.1:8000/v1/chat/completions?x=1",
        {"Content-Type": "application/json", "Authorization": "Bearer k"},
    )
    assert key == ("127.0.0.1", 8000)
    assert head == (
        b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"
        b"Accept: */*\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer k\r\nContent-Length: "
    )


def test_default_port_and_ipv6_hosts() -> None:
    key, head = request_head("http://example.test/v1/completions", {})
    assert key == ("example.test", 80) and b"\r\nHost: example.test\r\n" in head
    key, head = request_head("http://[::1]:9000/v1/completions", {})
    assert key == ("::1", 9000) and b"\r\nHost: [::1]:9000\r\n" in head


def test_only_plain_http() -> None:
    with pytest.raises(ValueError, match="http://"):
        request_head("https://example.test/v1/completions", {})


@pytest.mark.parametrize(
    ("options", "lean"),
    [
        ({}, True),
        ({"wire": "aiohttp"}, False),
        ({"url": "https://example.test/v1"}, False),  # TLS stays on aiohttp
        ({"url": "http://a.test/v1,https://b.test/v1"}, False),
        ({"api": "images"}, False),  # the media APIs too
    ],
)
def test_which_wire_an_exchange_takes(options: dict[str, str], lean: bool) -> None:
    from infermeter.clock import MonotonicClock
    from infermeter.suts.http_exchange import Exchange
    from infermeter.suts.openai_options import config_from_options
    from infermeter.suts.reachability import Reachability

    config, _ = config_from_options(
        {"url": "http://127.0.0.1:8000/v1", "model": "m", **options}
    )
    assert Exchange(config, Reachability(0, MonotonicClock())).lean is lean


def test_an_unknown_wire_is_one_line_naming_the_choices() -> None:
    from infermeter.errors import ConfigError
    from infermeter.suts.openai_options import config_from_options

    with pytest.raises(
        ConfigError, match=r"wire='h2' is not a wire; use one of: lean, aiohttp"
    ):
        config_from_options(
            {"url": "http://127.0.0.1:8000/v1", "model": "m", "wire": "h2"}
        )
