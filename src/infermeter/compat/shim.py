"""Opt-in: make ``import mlperf_loadgen`` resolve to infermeter's compatibility module.

``python -m infermeter.compat.shim harness.py [args...]`` runs an unchanged
harness on the native engine; ``infermeter.compat.install()`` does the same in-process.
"""

from __future__ import annotations

import runpy
import sys

MODULE = "mlperf_loadgen"
_saved: list[object] = []


def install() -> None:
    """Point ``sys.modules['mlperf_loadgen']`` at the compatibility module."""
    from infermeter.compat import mlperf_loadgen

    current = sys.modules.get(MODULE)
    if current is mlperf_loadgen:
        return
    _saved.append(current)
    sys.modules[MODULE] = mlperf_loadgen


def uninstall() -> None:
    """Restore whatever ``mlperf_loadgen`` was before ``install()`` (usually nothing)."""
    from infermeter.compat import mlperf_loadgen

    if sys.modules.get(MODULE) is not mlperf_loadgen:
        return
    previous = _saved.pop() if _saved else None
    if previous is None:
        del sys.modules[MODULE]
    else:
        sys.modules[MODULE] = previous  # type: ignore[assignment]


def main(argv: list[str] | None = None) -> int:
    """Run ``argv[0]`` as ``__main__`` with the shim installed."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        sys.stderr.write(
            "usage: python -m infermeter.compat.shim SCRIPT.py [ARGS...]\n"
            "Runs SCRIPT with 'import mlperf_loadgen' resolving to "
            "infermeter.compat.mlperf_loadgen.\n"
        )
        return 2
    install()
    sys.argv = list(args)
    runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
