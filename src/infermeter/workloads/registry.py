"""The benchmark registry: built-in MLPerf benchmarks plus custom ones from TOML."""

from __future__ import annotations

import difflib
import functools
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError
from infermeter.workloads.benchmark import Benchmark, benchmark_from_dict

_CUSTOM: dict[str, Benchmark] = {}
_INTERACTIVE_SUFFIX = "-interactive"


@functools.cache
def _builtin() -> dict[str, Benchmark]:
    text = resources.files("infermeter.workloads").joinpath("data/benchmarks.toml")
    return _parse(
        text.read_text(encoding="utf-8"), origin="benchmarks.toml", custom=False
    )


def _parse(text: str, *, origin: str, custom: bool) -> dict[str, Benchmark]:
    try:
        doc: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{origin}: not valid TOML ({exc}); fix the syntax."
        ) from None
    tables = doc.get("benchmark")
    if not isinstance(tables, list) or not tables:
        raise ConfigError(
            f"{origin}: no [[benchmark]] tables found; define at least one."
        )
    found: dict[str, Benchmark] = {}
    for table in tables:
        bench = benchmark_from_dict(table, origin=origin, custom=custom)
        found[bench.name] = bench
    return found


def _key(name: str) -> str:
    # "llama3_1-8b", "Llama3.1-8B" and "llama3.1_8b" are the same benchmark.
    return name.strip().lower().replace("_", ".").replace(" ", "")


def _all() -> dict[str, Benchmark]:
    return {**_builtin(), **_CUSTOM}


def _lookup(name: str) -> Benchmark | None:
    wanted = _key(name)
    for bench in _all().values():
        names = (bench.name, *bench.aliases, *bench.conf_models)
        if any(_key(n) == wanted for n in names):
            return bench
    return None


def get_benchmark(name: str) -> Benchmark:
    """The benchmark called ``name`` (an alias, conf model or ``-interactive`` too)."""
    bench = _lookup(name)
    if bench is not None:
        return bench
    if _key(name).endswith(_INTERACTIVE_SUFFIX):
        base = _lookup(name[: -len(_INTERACTIVE_SUFFIX)])
        if base is not None:
            return base.interactive()
    names = sorted(_all())
    close = difflib.get_close_matches(name.lower(), names, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"Unknown benchmark {name!r}.{hint} Known: {', '.join(names)}.")


def list_benchmarks() -> list[Benchmark]:
    """Every known benchmark (built-in and registered custom ones), sorted by name."""
    return sorted(_all().values(), key=lambda b: b.name)


def load_benchmarks_file(path: str | Path, *, register: bool = True) -> list[Benchmark]:
    """Read custom benchmarks from a TOML file (same fields as the built-in table)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"Cannot read benchmark file {str(path)!r}: {exc.strerror}."
        ) from None
    found = _parse(text, origin=str(path), custom=True)
    if register:
        _CUSTOM.update(found)
    return list(found.values())


def unregister_custom() -> None:
    """Forget every custom benchmark (tests use this)."""
    _CUSTOM.clear()
