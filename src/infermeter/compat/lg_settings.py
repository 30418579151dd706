"""``TestSettings`` of the ``mlperf_loadgen`` API and its ``FromConfig``, over RunSettings.

``FromConfig`` behaves like the official one (0 / -2 / -22, the embedded
mlperf.conf applied on the first user.conf, the "multiple conf files" error)
but says why on stderr; lines LoadGen silently ignores are skipped with a warning.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import re
import threading
from pathlib import Path
from typing import Any

from infermeter.compat.lg_types import TestMode, TestScenario
from infermeter.errors import ConfFileError
from infermeter.loadgen.conf import (
    ConfEntry,
    ConfType,
    _official_line,
    apply_conf,
    default_mlperf_conf_text,
    load_conf_text,
)
from infermeter.loadgen.settings import Mode, RunSettings, Scenario

log = logging.getLogger("infermeter.compat")

_FIELDS = tuple(f.name for f in dataclasses.fields(RunSettings))
_DEFAULTS = RunSettings()
_SCENARIOS = dict(zip(TestScenario, Scenario, strict=True))
_MODES = dict(zip(TestMode, Mode, strict=True))
_CONF_TYPES: dict[int, ConfType] = {0: "mlperf", 1: "user", 2: "audit"}
_SCENARIO_NAMES = tuple(s.name for s in TestScenario)
_WHITESPACE = re.compile(r"[ \t\n\v\f\r]+")
MULTIPLE_CONFS = (
    "Multiple conf files are used. This is not valid for official submission."
)


class _PreTestLog:
    """Detail-log lines logged before StartTest (LoadGen puts them at the top)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: list[tuple[str, str, str]] = []
        self.user_confs = 0

    def add(self, key: str, message: str, kind: str) -> None:
        with self.lock:
            self.entries.append((key, message, kind))

    def take(self) -> list[tuple[str, str, str]]:
        with self.lock:
            taken, self.entries = self.entries, []
        return taken


PRE_TEST_LOG = _PreTestLog()


class TestSettings:
    """Every LoadGen ``TestSettings`` field, same names and defaults.

    A misspelt attribute raises AttributeError (``__slots__``), as on the official
    class. ``completion_timeout_ns`` is an infermeter addition: LoadGen waits forever.
    """

    __slots__ = _FIELDS

    def __init__(self) -> None:
        for name in _FIELDS:
            setattr(self, name, getattr(_DEFAULTS, name))
        self.scenario = TestScenario.SingleStream
        self.mode = TestMode.PerformanceOnly

    def FromConfig(
        self, path: str, model: str, scenario: str, conf_type: int = 1
    ) -> int:
        """Apply a conf file: 0 on success, -2 if unreadable, -22 if malformed."""
        return from_config(self, path, model, scenario, conf_type)

    def __repr__(self) -> str:
        changed = {
            name: getattr(self, name)
            for name in _FIELDS
            if name not in ("scenario", "mode")
            and getattr(self, name) != getattr(_DEFAULTS, name)
        }
        return (
            f"TestSettings(scenario={self.scenario!r}, mode={self.mode!r}, {changed})"
        )


def to_run_settings(ts: TestSettings) -> RunSettings:
    """The RunSettings a TestSettings stands for; TypeError names a wrongly typed field."""
    values: dict[str, Any] = {}
    for name in _FIELDS:
        value = getattr(ts, name)
        default = getattr(_DEFAULTS, name)
        values[name] = _coerce(name, value, default)
    return RunSettings(**values)


def _coerce(name: str, value: Any, default: Any) -> Any:
    try:
        if name == "scenario":
            return _SCENARIOS[TestScenario(value)]
        if name == "mode":
            return _MODES[TestMode(value)]
        if isinstance(default, bool):
            return bool(value)
        if isinstance(default, int):
            return int(value) if float(value).is_integer() else _bad(name, value)
        return float(value)
    except (TypeError, ValueError):
        return _bad(name, value)


def _bad(name: str, value: Any) -> Any:
    raise TypeError(
        f"TestSettings.{name} = {value!r} has the wrong type; expected "
        f"{type(getattr(_DEFAULTS, name)).__name__}"
    )


def _store(ts: TestSettings, settings: RunSettings) -> None:
    reverse_s = {v: k for k, v in _SCENARIOS.items()}
    reverse_m = {v: k for k, v in _MODES.items()}
    for name in _FIELDS:
        value = getattr(settings, name)
        if name == "scenario":
            value = reverse_s[value]
        elif name == "mode":
            value = reverse_m[value]
        setattr(ts, name, value)


def from_config(
    ts: TestSettings, path: str, model: str, scenario: str, conf_type: int = 1
) -> int:
    """``TestSettings.FromConfig`` (see the module docstring)."""
    if conf_type not in _CONF_TYPES:
        raise ValueError(f"conf_type must be 0, 1 or 2 (got {conf_type})")
    if scenario not in _SCENARIO_NAMES:
        # LoadGen would silently match nothing scenario-specific.
        log.error(
            "FromConfig(%r): unknown scenario %r. Known: %s",
            path,
            scenario,
            ", ".join(_SCENARIO_NAMES),
        )
        return -errno.EINVAL
    scen = Scenario(scenario)
    settings = to_run_settings(ts)
    if conf_type == 1:
        with PRE_TEST_LOG.lock:
            first = PRE_TEST_LOG.user_confs == 0
            PRE_TEST_LOG.user_confs += 1
        if first:
            _apply(settings, _embedded(), model, scen, "mlperf")
        else:
            PRE_TEST_LOG.add("error_invalid_config", MULTIPLE_CONFS, "error")
            log.warning("FromConfig(%r): %s", path, MULTIPLE_CONFS)
    if conf_type == 0 and not path:
        entries = _embedded()
    else:
        code, entries = _read(path)
        if code:
            _store(ts, settings)
            return code
    _apply(settings, entries, model, scen, _CONF_TYPES[conf_type])
    _store(ts, settings)
    return 0


def _embedded() -> list[ConfEntry]:
    return load_conf_text(default_mlperf_conf_text(), "<embedded mlperf.conf>")


def _apply(
    settings: RunSettings,
    entries: list[ConfEntry],
    model: str,
    scenario: Scenario,
    conf_type: ConfType,
) -> None:
    for warning in apply_conf(
        settings, entries, model=model, scenario=scenario, conf_type=conf_type
    ):
        if conf_type != "mlperf":
            log.warning("%s", warning)


def _read(path: str) -> tuple[int, list[ConfEntry]]:
    """Entries of ``path``: (0, entries), (-ENOENT, []) or (-EINVAL, [])."""
    try:
        text = Path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        message = f"can't open file {path}"
        PRE_TEST_LOG.add("error_invalid_config", message, "error")
        log.error("FromConfig: %s (%s)", message, exc.strerror)
        return -errno.ENOENT, []
    try:
        return 0, load_conf_text(text, path)
    except ConfFileError:
        return _read_leniently(text, path)


def _read_leniently(text: str, path: str) -> tuple[int, list[ConfEntry]]:
    """Line by line: reject what LoadGen rejects, skip (loudly) what it ignores."""
    entries: list[ConfEntry] = []
    for line_no, line in enumerate(text.split("\n"), start=1):
        try:
            entries += load_conf_text("\n" * (line_no - 1) + line, path)
        except ConfFileError as exc:
            tokens = [t for t in _WHITESPACE.split(line) if t]
            if _official_line(tokens) == "error":
                PRE_TEST_LOG.add("error_invalid_config", str(exc), "error")
                log.error("FromConfig: %s", exc)
                return -errno.EINVAL, []
            log.warning("FromConfig: %s (skipped, as LoadGen does)", exc)
    return 0, entries
