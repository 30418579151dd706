"""Names in conf files that LoadGen would silently never match: models, and "did you mean".

The reference set of model names is the embedded mlperf.conf's own (every
MLPerf model), plus ``*`` and the model a run asks for; the engine never
consults the workload registry.
"""

from __future__ import annotations

import difflib

from infermeter.loadgen.conf_keys import ConfEntry


def suggest(word: str, choices: tuple[str, ...] | list[str]) -> str:
    lowered = {c.lower(): c for c in choices}
    match = lowered.get(word.lower()) or next(
        iter(difflib.get_close_matches(word, choices, n=1, cutoff=0.6)), None
    )
    return f"; did you mean {match!r}?" if match else ""


def conf_models(entries: list[ConfEntry] | tuple[ConfEntry, ...]) -> frozenset[str]:
    """The model names a conf file uses (for the embedded mlperf.conf: every MLPerf model)."""
    return frozenset(e.model for e in entries)


def unknown_model(entry: ConfEntry, known: frozenset[str]) -> str | None:
    """Why LoadGen would never match ``entry``'s model (None: it may)."""
    if entry.model in known:
        return None
    choices = sorted(known - {"*"})
    return (
        f"unknown model {entry.model!r}{suggest(entry.model, choices)} "
        f"(LoadGen silently never matches it). Known: *, {', '.join(choices)}"
    )


def check_models(
    entries: list[ConfEntry] | tuple[ConfEntry, ...], known: frozenset[str]
) -> None:
    """ConfFileError for the first entry whose model no run could ever match."""
    for entry in entries:
        problem = unknown_model(entry, known)
        if problem is not None:
            raise entry.error(problem)
