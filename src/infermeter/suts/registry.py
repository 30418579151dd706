"""SUT kinds by name: a plain dict filled by a ``register(kind)`` decorator.

Third-party SUTs can register through the ``infermeter.suts`` entry-point group.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points

from infermeter.clock import Clock
from infermeter.errors import ConfigError
from infermeter.loadgen.interfaces import QuerySampleLibrary, SystemUnderTest
from infermeter.loadgen.settings import Mode, Scenario


@dataclass(frozen=True)
class SutContext:
    """What a SUT factory gets: the run's dataset, clock and the user's options."""

    qsl: QuerySampleLibrary
    clock: Clock
    scenario: Scenario
    benchmark: str = ""
    token_run: bool = False
    options: dict[str, str] = field(default_factory=dict)
    mode: Mode = Mode.PERFORMANCE_ONLY  # what the harness knows; a SUT need not care

    def option(self, key: str, default: str) -> str:
        return self.options.get(key, default)

    def float_option(self, key: str, default: float, *, minimum: float = 0.0) -> float:
        """``--sut-opt key=NUMBER`` (``sut_number``), or ``default``."""
        text = self.options.get(key)
        return default if text is None else sut_number(key, text, minimum)


def sut_number(key: str, text: str, minimum: float = 0.0) -> float:
    """``--sut-opt key=TEXT`` as a finite number >= ``minimum`` (the options are
    times, counts, rates and shares; ``inf`` overflowed an integer cast)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= minimum):
        raise ConfigError(
            f"SUT option {key}={text!r} is not a number >= {minimum:g}; pass e.g. "
            f"--sut-opt {key}=1.5"
        )
    return value


Factory = Callable[[SutContext], SystemUnderTest]
_FACTORIES: dict[str, Factory] = {}
# Built-in kinds live in modules imported on first use, so that listing kinds
# does not import torch, onnxruntime or aiohttp.
_BUILTIN_MODULES = {
    "null": "infermeter.suts.null",
    "fake": "infermeter.suts.fake",
    "audit-fake": "infermeter.suts.audit_fake",
    "openai": "infermeter.suts.openai_http",
    "simulated": "infermeter.suts.simulated",
    # A server plus the openai SUT: lives in runs/ (suts/ may not import servers/).
    "sim": "infermeter.runs.sim_endpoint",
    "onnxruntime": "infermeter.suts.onnxruntime_sut",
    "torch_llm": "infermeter.suts.torch_llm",
}


def register(kind: str) -> Callable[[Factory], Factory]:
    """Register a SUT factory under ``kind``."""

    def decorate(factory: Factory) -> Factory:
        _FACTORIES[kind] = factory
        return factory

    return decorate


def known_kinds() -> list[str]:
    kinds = set(_FACTORIES) | set(_BUILTIN_MODULES)
    kinds |= {ep.name for ep in entry_points(group="infermeter.suts")}
    return sorted(kinds)


def create_sut(kind: str, context: SutContext) -> SystemUnderTest:
    """Build the SUT registered as ``kind``."""
    if kind not in _FACTORIES:
        _load(kind)
    return _FACTORIES[kind](context)


def _load(kind: str) -> None:
    module = _BUILTIN_MODULES.get(kind)
    if module is not None:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("infermeter"):
                raise ConfigError(
                    f"SUT kind {kind!r} is not available in this build"
                ) from None
            raise
    else:
        for ep in entry_points(group="infermeter.suts"):
            if ep.name == kind:
                _FACTORIES[kind] = ep.load()
    if kind not in _FACTORIES:
        known = ", ".join(known_kinds())
        raise ConfigError(f"Unknown SUT kind {kind!r}. Known kinds: {known}.")
