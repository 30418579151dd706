"""``--sut-opt`` parsing for the openai SUT, request shaping and the QSL adapter."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from infermeter.errors import ConfigError
from infermeter.suts.openai_options import QSLPrompts, config_from_options, prompts_for
from infermeter.suts.openai_request import ApiKey, OpenAIConfig, build_body
from infermeter.suts.prompts import Prompt, SyntheticPrompts
from infermeter.suts.registry import SutContext

BASE = {"url": "http://h:1/v1", "model": "m"}


def test_defaults_and_typed_options() -> None:
    cfg, key = config_from_options(
        {
            **BASE,
            "api": "chat",
            "stream": "false",
            "max_tokens": "64",
            "ignore_eos": "1",
            "timeout": "30",
            "first_token_timeout": "5",
            "max_in_flight": "8",
            "extra_body": '{"top_k": 1}',
        }
    )
    assert key is None
    assert (cfg.api, cfg.stream, cfg.max_tokens, cfg.ignore_eos) == (
        "chat",
        False,
        64,
        True,
    )
    assert (cfg.timeouts.total_s, cfg.timeouts.first_token_s) == (30.0, 5.0)
    assert cfg.max_in_flight == 8 and cfg.extra_body == {"top_k": 1}
    assert cfg.endpoint == "http://h:1/v1/chat/completions"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"model": "m"}, "needs --url and --model"),
        ({**BASE, "colour": "red"}, "Unknown openai SUT option"),
        ({**BASE, "stream": "maybe"}, "use true or false"),
        ({**BASE, "timeout": "soon"}, "not a number"),
        # inf overflowed the integer casts; a negative timeout never fired
        ({**BASE, "max_in_flight": "inf"}, "max_in_flight='inf' is not a number >= 0"),
        ({**BASE, "timeout": "nan"}, "timeout='nan' is not a number >= 0"),
        ({**BASE, "timeout": "-5"}, "timeout='-5' is not a number >= 0"),
        ({**BASE, "extra_body": "[1]"}, "JSON object"),
        ({**BASE, "api": "responses"}, "Unknown API"),
        ({"url": "h:1", "model": "m"}, "must start with http"),
    ],
)
def test_bad_options_name_the_fix(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_options(options)


def test_key_from_file_is_stripped_and_hidden(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text("sk-abc\n")
    _, key = config_from_options({**BASE, "api_key_file": str(path)})
    assert (
        key is not None
        and key.header() == "Bearer sk-abc"
        and "sk-abc" not in repr(key)
    )
    with pytest.raises(ConfigError, match="Cannot read API key file"):
        ApiKey.load(file=str(tmp_path / "missing"))
    # The way out it names is a flag that exists (it said --api-key-file).
    with pytest.raises(ConfigError, match=r"--sut-opt api_key_file=PATH"):
        ApiKey.load(env="INFERMETER_TEST_UNSET_KEY")


def test_body_shaping() -> None:
    cfg = OpenAIConfig(
        url="http://h/v1",
        model="m",
        min_tokens=True,
        ignore_eos=True,
        extra_body={"seed": 1},
    )
    body = json.loads(build_body(cfg, Prompt(text="hi", max_tokens=7)))
    assert body == {
        "model": "m",
        "prompt": "hi",
        "max_tokens": 7,
        "min_tokens": 7,
        "temperature": 0.0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
        "seed": 1,
    }
    chat = OpenAIConfig(
        url="http://h/v1",
        model="m",
        api="chat",
        stream=False,
        max_tokens=3,
        temperature=None,
    )
    body = json.loads(build_body(chat, Prompt(text="hi")))
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 3,
    }


@dataclass
class _Sample:
    prompt: str | None
    input_ids: list[int] | None
    messages: tuple[tuple[str, str], ...] | None
    output_tokens: int | None


class _QSL:
    total_sample_count = 2

    def sample(self, index: int) -> _Sample:
        if index == 0:
            return _Sample("text", [1, 2], None, 5)
        return _Sample(None, [3, 4], (("system", "s"), ("user", "u")), None)


def test_qsl_adapter_prefers_text_and_maps_messages() -> None:
    prompts = prompts_for(_QSL())
    assert isinstance(prompts, QSLPrompts)
    first, second = prompts.prompt(0), prompts.prompt(1)
    assert (first.text, first.token_ids, first.max_tokens) == ("text", None, 5)
    assert second.token_ids == [3, 4]
    assert second.messages == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
    ]


def test_prompt_sources_fall_back_to_synthetic() -> None:
    class Bare:
        total_sample_count = 3

    synthetic = prompts_for(Bare())
    assert isinstance(synthetic, SyntheticPrompts) and synthetic.count == 3
    assert prompts_for(synthetic) is synthetic
    text = synthetic.prompt(1).text
    assert text is not None and len(text.split()) == 128
    assert synthetic.prompt(1) != synthetic.prompt(2)


@pytest.mark.parametrize("text", ["inf", "nan", "-5", "fast"])
def test_a_sut_number_option_is_finite_and_not_negative(text: str) -> None:
    # --sut-opt tpot_ms=inf was an internal OverflowError in the fake SUT.
    ctx = SutContext(qsl=None, clock=None, scenario=None, options={"tpot_ms": text})
    with pytest.raises(
        ConfigError, match=f"tpot_ms='{re.escape(text)}' is not a number >= 0"
    ):
        ctx.float_option("tpot_ms", 10.0)
    never = SutContext(
        qsl=None, clock=None, scenario=None, options={"hang_after": "-1"}
    )
    assert never.float_option("hang_after", -1, minimum=-1) == -1.0
