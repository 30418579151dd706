"""Parts of a published system: MLPerf accelerator strings to spec keys, kept honest.

``resolve_parts("NVIDIA H200-SXM-141GB-CTS")`` gives the part ``h200-sxm`` and the
variant ``CTS``; a power cap ("Power Cap 1000 W", or a wattage below the part's
TDP) and virtualisation stay in the variant, so a capped or virtualised system is
named as such and never silently merged with the stock part; systems mixing parts
("MI300X (x32), MI325X (x16)") keep every part with its count. CPU-only rows name
their processor instead of an accelerator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from infermeter.perfmodel.specs import Accelerator, accelerators, match_accelerator

_CAP = re.compile(r"power\s*cap\s*(\d{3,4})\s*w", re.I)
_WATTS = re.compile(r"(?<![a-z0-9])(\d{3,4})\s*w\b", re.I)
# A part's count in a mixed string: "(x32)", or "(x2x8)" (two nodes of eight).
_COUNT = re.compile(r"\(x\s*(\d+)(?:\s*x\s*(\d+))?\)", re.I)
_PIECES = re.compile(r",|\band\b|&|\+", re.I)


@dataclass(frozen=True, slots=True)
class PartMatch:
    """The parts of one published system and what sets it apart from the stock part."""

    raw: str
    parts: tuple[tuple[Accelerator, int], ...]
    variant: str = ""

    @property
    def mixed(self) -> bool:
        return len(self.parts) > 1

    @property
    def key(self) -> str:
        """One name for grouping: the part key, or the keys joined by '+' when mixed."""
        return "+".join(acc.key for acc, _ in self.parts)

    @property
    def accelerator(self) -> Accelerator:
        return self.parts[0][0]

    @property
    def power(self) -> str:
        """ "capped" (power cap, MaxQ), "boost" (above the part's TDP, CTS) or ""."""
        if "cap" in self.variant:
            return "capped"
        if "CTS" in self.variant or re.search(r"\d W(?!\w)", self.variant):
            return "boost"
        return ""

    @property
    def label(self) -> str:
        if self.mixed:
            body = " + ".join(f"{n}x {acc.key}" for acc, n in self.parts)
            return f"{body} (mixed parts)"
        return f"{self.key} ({self.variant})" if self.variant else self.key


def _variant(raw: str, acc: Accelerator, system: str = "") -> str:
    notes = []
    if re.search(r"max\s*q", system, re.I):
        notes.append("MaxQ power-capped")
    cap = _CAP.search(raw)
    watts = _WATTS.search(raw)
    if cap:
        notes.append(f"{cap.group(1)} W power cap")
    elif watts and acc.tdp_w and float(watts.group(1)) < acc.tdp_w:
        notes.append(f"{watts.group(1)} W power cap")
    elif watts and acc.tdp_w and float(watts.group(1)) > acc.tdp_w:
        notes.append(f"{watts.group(1)} W")
    if re.search(r"(?<![a-z])cts(?![a-z])", raw, re.I):
        notes.append("CTS")
    if re.search(r"virtuali[sz]ed", raw, re.I):
        notes.append("virtualized")
    return ", ".join(notes)


def resolve_parts(raw: str, count: int = 0, system: str = "") -> PartMatch | None:
    """The spec parts of an accelerator string; None when a part has no spec.

    ``count`` is the system's accelerator total; a mixed string carries its own
    counts ("(x32)"); ``system`` (the system name) tells MaxQ power-capped runs.
    """
    pieces = _pieces(raw)
    found = [(match_accelerator(p), _piece_count(p)) for p in pieces]
    parts = [(acc, n) for acc, n in found if acc is not None]
    if not parts or len(parts) < len(pieces):
        return None
    # Parts named without counts ("NVIDIA H200-SXM-141GB + AMD Instinct MI350X",
    # 16 in all, the system "H200 x8 + MI350X x8") share what the counted ones
    # leave, evenly; a total that does not divide evenly is not guessed. One part
    # without a count is the whole system; without a total (a name looked up, not
    # a published row) the uncounted parts count 0.
    uncounted = sum(n is None for _, n in parts)
    rest = count - sum(n or 0 for _, n in parts)
    if count and uncounted > 1 and (rest <= 0 or rest % uncounted):
        return None
    share = count if len(parts) == 1 else max(rest, 0) // max(uncounted, 1)
    whole = tuple((acc, share if n is None else n) for acc, n in parts)
    return PartMatch(raw, whole, _variant(raw, parts[0][0], system))


def _pieces(raw: str) -> list[str]:
    """The parts of a mixed string, listed with their counts by commas or "and"
    ("MI300X (x8) and MI325X (x8) and MI355X (x8)"), or joined by "+" without
    counts; ``[raw]`` for one part (where "+" is not between two known parts)."""
    if _COUNT.search(raw):
        return [p for p in _PIECES.split(raw) if p.strip()]
    joined = [p for p in raw.split("+") if p.strip()]
    if len(joined) > 1 and all(match_accelerator(p) for p in joined):
        return joined
    return [raw]


def _piece_count(piece: str) -> int | None:
    n = _COUNT.search(piece)
    if not n:
        return None
    return int(n.group(1)) * int(n.group(2) or 1)


def known_parts() -> list[str]:
    return sorted(accelerators())
