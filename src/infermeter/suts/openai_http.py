"""The ``openai`` SUT: any OpenAI-compatible endpoint, over the transport its options pick.

``--sut openai --sut-opt KEY=VALUE``: the options become an ``OpenAIConfig``
(``openai_options``), the factory picks the transport (``http_factory``). The
HTTP client's layers, from the wire up, are in ``suts/DESIGN.md``.
"""

from __future__ import annotations

from infermeter.loadgen.interfaces import SystemUnderTest
from infermeter.suts.http_factory import create_http_sut
from infermeter.suts.http_local import OpenAIHttpSUT
from infermeter.suts.openai_media import with_media_api
from infermeter.suts.openai_options import config_from_options, prompts_for
from infermeter.suts.registry import SutContext, register


@register("openai")
def _create(context: SutContext) -> SystemUnderTest:
    config, key = config_from_options(with_media_api(context))
    sut = create_http_sut(
        config, prompts_for(context.qsl), api_key=key, clock=context.clock
    )
    watch = getattr(context.qsl, "watch", None)
    if callable(watch) and isinstance(sut, OpenAIHttpSUT):
        watch(sut)  # bodies built when samples load, outside the timed run
    return sut
