"""The HTTP SUT spread over worker processes: every sample completes, counts add up."""

from __future__ import annotations

import pytest

from infermeter.errors import ConfigError
from infermeter.runs.load import LoadSpec, run_load
from infermeter.servers.faults import FaultConfig
from infermeter.servers.mock import MockConfig, MockProcess
from infermeter.suts.http_workers import MultiProcessHttpSUT
from infermeter.suts.openai_http import OpenAIHttpSUT, create_http_sut
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import Prompt, SyntheticPrompts

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_two_workers_complete_every_sample_and_report_failures() -> None:
    faults = FaultConfig(error_rate=0.2)
    cfg = MockConfig(
        mode="faults", ttft="const:0.005", itl="const:0.001", faults=faults, seed=1
    )
    with MockProcess(cfg) as url:
        config = OpenAIConfig(url=url, model="m", workers=2)
        prompts = SyntheticPrompts(32, input_tokens=8, output_tokens=6)
        sut = create_http_sut(config, prompts)
        assert isinstance(sut, MultiProcessHttpSUT)
        with sut:
            spec = LoadSpec(
                mode="concurrency", concurrency=8, requests=120, warmup_requests=10
            )
            result = run_load(sut, spec, sample_count=32)
            stats = sut.stats()
    m = result.metrics
    assert m.completed + m.failed == m.issued == 120
    assert 5 <= m.failed <= 45 and set(m.failure_reasons) == {
        'HTTP 500: {"error": {"message": "injected fault", "type": "server_error", '
        '"code": 500}}'
    }
    assert (stats["workers"], stats["requests"]) == (2, 120)
    assert stats["completed"] == m.completed and stats["failed"] == m.failed
    assert result.certification.requests == 120
    assert (
        result.phase.records.n_tokens[:120][result.phase.records.status[:120] == 0] == 6
    ).all()


def test_one_worker_is_the_plain_sut_and_unpicklable_prompts_are_refused() -> None:
    config = OpenAIConfig(url="http://127.0.0.1:9/v1", model="m")
    with create_http_sut(config, SyntheticPrompts(2)) as sut:
        assert isinstance(sut, OpenAIHttpSUT)

    class Local:  # defined in a function: cannot be pickled for a child process
        def prompt(self, index: int) -> Prompt:
            return Prompt(text="x")

    with pytest.raises(ConfigError, match="picklable"):
        MultiProcessHttpSUT(
            OpenAIConfig(url="http://127.0.0.1:9/v1", model="m", workers=2), Local()
        )
