"""mlperf.conf / user.conf / audit.config: read them as LoadGen's ``FromConfig`` does.

Valid files read exactly as the official parser reads them. Where it is
silently wrong (``key=value`` ignored, typos never matched, a trailing comment
rejecting the whole file...) we raise a one-line ``ConfFileError`` instead.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Literal

from infermeter.errors import ConfFileError, ConfigError
from infermeter.loadgen.cnumbers import is_conf_number
from infermeter.loadgen.conf_keys import (
    KNOWN_KEYS,
    MLPERF_ONLY_KEYS,
    READS,
    SCENARIO_NAMES,
    UNREAD_KEYS,
    ConfEntry,
    convert,
    scenarios_read,
)
from infermeter.loadgen.conf_names import (
    check_models,
    conf_models,
    suggest,
    unknown_model,
)
from infermeter.loadgen.settings import RunSettings, Scenario

__all__ = [
    "ConfEntry",
    "ConfFileNotFoundError",
    "ConfType",
    "apply_conf",
    "default_mlperf_conf_text",
    "load_conf_file",
    "load_conf_text",
    "settings_from_confs",
]

ConfType = Literal["mlperf", "user", "audit"]
# LoadGen's warning when it applies an audit.config (compliance tests).
AUDIT_WARNING = (
    "Found Audit Config file (audit.config). Overriding TestSettings from "
    "audit.config file."
)
# std::istringstream >> splits on the C locale's whitespace only.
_WHITESPACE = re.compile(r"[ \t\n\v\f\r]+")
_REJECTS = "LoadGen rejects the whole file (FromConfig returns -EINVAL, -22)"
_IGNORES = "LoadGen silently ignores the line"
_Fail = Callable[[str], ConfFileError]


class ConfFileNotFoundError(ConfigError, FileNotFoundError):
    """A conf file cannot be opened (the official ``FromConfig`` returns -ENOENT)."""


def default_mlperf_conf_text() -> str:
    """The embedded mlperf.conf (the MLPerf rules as LoadGen 6.0.17 embeds them)."""
    return _embedded_text()


@functools.cache
def _embedded_text() -> str:
    return (resources.files("infermeter.loadgen") / "data" / "mlperf.conf").read_text(
        encoding="utf-8"
    )


@functools.cache
def _embedded_entries() -> tuple[ConfEntry, ...]:
    return tuple(load_conf_text(_embedded_text(), "<embedded mlperf.conf>"))


def load_conf_file(path: str | Path) -> list[ConfEntry]:
    """Parse a conf file; ConfFileNotFoundError if it cannot be opened."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ConfFileNotFoundError(
            f"Cannot open conf file '{path}' ({exc.strerror}). Pass the path of an "
            "existing mlperf.conf / user.conf."
        ) from exc
    if b"\0" in raw:
        # Echoing a binary file's "key" would print its bytes to the terminal.
        raise ConfigError(
            f"Conf file '{path}' is not text (it holds NUL bytes); pass an "
            "mlperf.conf / user.conf"
        )
    return load_conf_text(raw.decode("utf-8", errors="replace"), str(path))


def load_conf_text(text: str, path: str = "<text>") -> list[ConfEntry]:
    """Parse conf text into entries, in file order; ConfFileError on a bad line."""
    entries = []
    # std::getline splits on '\n' only; a lone '\r' is whitespace inside a line.
    for line_no, line in enumerate(text.split("\n"), start=1):
        tokens = [t for t in _WHITESPACE.split(line) if t]
        entry = _parse_line(tokens, path, line_no)
        if entry is not None:
            entries.append(entry)
    return entries


def _official_line(tokens: list[str]) -> Literal["skip", "error", "value"]:
    """What the official tokenizer does with a line (its three-state machine)."""
    state = "key"
    for token in tokens:
        if state == "value":
            if not is_conf_number(token):
                return "error"
        elif token == "#":
            return "skip"
        elif state == "equals":
            if token != "=":
                return "error"
            state = "value"
        else:
            state = "equals"
    return "value" if state == "value" and len(tokens) > 2 else "skip"


def _parse_line(tokens: list[str], path: str, line_no: int) -> ConfEntry | None:
    if not tokens or tokens[0] == "#":
        return None
    head = tokens[0]
    official = _official_line(tokens)
    outcome = _REJECTS if official == "error" else _IGNORES

    def fail(problem: str) -> ConfFileError:
        return ConfFileError(path, line_no, head, problem)

    if head.startswith("#"):
        # '#x' is a key to LoadGen, not a comment: harmless unless it errors.
        if official == "error":
            raise fail(f"write '# ' with a space to start a comment; {outcome}")
        return None
    _check_shape(tokens, fail, outcome)
    return _entry(tokens, path, line_no, fail)


def _check_shape(tokens: list[str], fail: _Fail, outcome: str) -> None:
    head = tokens[0]
    if len(tokens) == 1 or tokens[1] != "=":
        if "=" in head or (len(tokens) > 1 and tokens[1].startswith("=")):
            raise fail(f"write 'key = value' with spaces around '='; {outcome}")
        if len(tokens) > 1 and tokens[1] == "#":
            raise fail(f"a key followed by a comment has no value; {outcome}")
        raise fail(f"expected 'model.scenario.key = value'; {outcome}")
    if len(tokens) == 2:
        raise fail(f"no value after '='; {outcome}")
    if any("#" in t for t in tokens[2:]):
        raise fail(
            "a '#' comment after the value is not allowed: LoadGen rejects the whole "
            "file (FromConfig returns -EINVAL, -22); put the comment on its own line"
        )
    if len(tokens) > 3:
        raise fail(
            f"one value per line, got {' '.join(tokens[2:])!r}; "
            + (outcome if outcome == _REJECTS else "LoadGen silently keeps the last")
        )
    if not is_conf_number(tokens[2]):
        raise fail(
            f"value {tokens[2]!r} is not a number (integer or decimal); {outcome}"
        )


def _entry(tokens: list[str], path: str, line_no: int, fail: _Fail) -> ConfEntry:
    parts = tokens[0].rsplit(".", 2)
    if len(parts) != 3 or not all(parts):
        raise fail(
            "the key must be 'model.scenario.key' ('*' for any); LoadGen never reads it"
        )
    model, scenario, key = parts
    if scenario != "*" and scenario not in SCENARIO_NAMES:
        known = ("*", *SCENARIO_NAMES)
        raise fail(
            f"unknown scenario {scenario!r}{suggest(scenario, known)}. Known: "
            f"{', '.join(known)} (LoadGen silently never matches it)"
        )
    if key not in KNOWN_KEYS:
        raise fail(
            f"unknown key {key!r}{suggest(key, sorted(KNOWN_KEYS))} "
            "(LoadGen silently ignores unknown keys)"
        )
    return ConfEntry(path, line_no, model, scenario, key, tokens[2])


def apply_conf(
    settings: RunSettings,
    entries: list[ConfEntry] | tuple[ConfEntry, ...],
    *,
    model: str,
    scenario: Scenario,
    conf_type: ConfType,
) -> list[str]:
    """Apply one file's entries to ``settings`` in place; returns warnings.

    Lookup per key: ``model.scenario.key``, ``*.scenario.key``, ``model.*.key``,
    ``*.*.key``; later lines win over earlier identical keys. Never sets
    ``settings.scenario`` (neither does the official ``FromConfig``). A user or
    audit line naming a model no conf knows is a warning here (LoadGen
    ignores it); ``settings_from_confs`` refuses it.
    """
    warnings: list[str] = []
    if conf_type != "mlperf":
        known = conf_models(_embedded_entries()) | {"*", model}
        warnings += [
            entry.warning(f"never used: {problem}")
            for entry in entries
            if (problem := unknown_model(entry, known)) is not None
        ]
    table = _entry_table(entries, conf_type, warnings)
    for read in READS:
        entry = _lookup(table, model, read.scenario or scenario.value, read.key)
        if entry is None:
            continue
        if read.gate is not None and not getattr(settings, read.gate):
            warnings.append(
                entry.warning(f"ignored: LoadGen reads it only when {read.gate} = 1")
            )
            continue
        value, notes = convert(read, entry)
        warnings.extend(notes)
        setattr(settings, read.field, value)
    return list(dict.fromkeys(warnings))


def _entry_table(
    entries: list[ConfEntry] | tuple[ConfEntry, ...],
    conf_type: ConfType,
    warnings: list[str],
) -> dict[str, ConfEntry]:
    table: dict[str, ConfEntry] = {}
    for entry in entries:
        if conf_type != "mlperf":
            note = _user_entry_note(entry, conf_type)
            if note:
                warnings.append(entry.warning(note))
            if entry.key in MLPERF_ONLY_KEYS:
                continue
        earlier = table.get(entry.name)
        if earlier is not None:
            warnings.append(
                entry.warning(f"overrides line {earlier.line_no} (the last wins)")
            )
        table[entry.name] = entry
    return table


def _user_entry_note(entry: ConfEntry, conf_type: ConfType) -> str | None:
    if entry.key in MLPERF_ONLY_KEYS:
        return (
            f"ignored: {entry.key} is read only from mlperf.conf, not {conf_type} conf"
        )
    if entry.key in UNREAD_KEYS:
        return f"ignored: LoadGen never reads {entry.key}"
    fixed = scenarios_read(entry.key)
    if fixed is not None and entry.scenario != "*" and entry.scenario not in fixed:
        where = " or ".join(sorted(fixed))
        return f"never used: LoadGen looks {entry.key} up only under {where}"
    return None


def _lookup(
    table: dict[str, ConfEntry], model: str, scenario: str, key: str
) -> ConfEntry | None:
    for name in (
        f"{model}.{scenario}.{key}",
        f"*.{scenario}.{key}",
        f"{model}.*.{key}",
        f"*.*.{key}",
    ):
        if name in table:
            return table[name]
    return None


def settings_from_confs(
    model: str,
    scenario: Scenario,
    user_conf_path: str | Path | None = None,
    mlperf_conf_path: str | Path | None = None,
    audit_conf_path: str | Path | None = None,
) -> tuple[RunSettings, list[str]]:
    """RunSettings for ``model``/``scenario``: mlperf.conf, then user.conf, then audit.

    The embedded mlperf.conf is used when ``mlperf_conf_path`` is None. Any key a
    later file sets overrides the earlier file whatever its specificity. The
    returned settings carry ``scenario``; warnings are one line each. A
    user.conf or audit.config line for a model that no conf names (a typo
    LoadGen would silently ignore) is a ``ConfFileError`` with "did you mean".
    """
    settings = RunSettings(scenario=scenario)
    mlperf = (
        _embedded_entries()
        if mlperf_conf_path is None
        else load_conf_file(mlperf_conf_path)
    )
    warnings = apply_conf(
        settings, mlperf, model=model, scenario=scenario, conf_type="mlperf"
    )
    layers: tuple[tuple[str | Path | None, ConfType], ...] = (
        (user_conf_path, "user"),
        (audit_conf_path, "audit"),
    )
    known = conf_models(_embedded_entries()) | conf_models(mlperf) | {"*", model}
    for path, conf_type in layers:
        if path is not None:
            entries = load_conf_file(path)
            check_models(entries, known)
            warnings += apply_conf(
                settings, entries, model=model, scenario=scenario, conf_type=conf_type
            )
    return settings, warnings
