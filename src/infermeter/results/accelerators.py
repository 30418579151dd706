"""Accelerator names: one scheme for published rows, runs, flags and price tables.

A part the performance model knows is named by its spec key (``h200-sxm``,
``b200``, ``rtx-pro-6000``, ``mi355x``: ``infermeter model specs``), whatever
the spelling: an MLCommons string ("NVIDIA H200-SXM-141GB-CTS"), an NVML or
ROCm device name ("NVIDIA H200", "AMD Instinct MI300X") or an alias. What sets a
system apart from the stock part stays in the variant: a power cap ("1000 W
power cap"), CTS, virtualisation, or a mix of parts ("32x mi300x + 16x
mi325x"), so such systems are named as such, never merged silently. A part
without a spec keeps a cleaned-up name of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from infermeter.errors import ConfigError
from infermeter.perfmodel.parts import resolve_parts
from infermeter.perfmodel.specs import accelerators

_VENDOR = re.compile(
    r"^(NVIDIA|AMD Instinct|AMD|Intel(?:\(R\))?|Google|Tesla|Qualcomm|UntetherAI)\s+",
    re.I,
)
_POWER = re.compile(r"(?:power\s*cap\s*)?(\d{3,4})\s*W\b", re.I)
_MEMORY = re.compile(r"(?<![A-Za-z0-9])\d{2,3}\s*GB?(?![A-Za-z0-9])", re.I)


@dataclass(frozen=True, slots=True)
class Accelerator:
    """A normalised accelerator: ``name`` groups results, ``variant`` keeps caps."""

    raw: str
    name: str
    variant: str

    @property
    def slug(self) -> str:
        """Key used by price tables and flags: the spec key, e.g. ``h100-sxm``."""
        return slugify(self.name)

    @property
    def label(self) -> str:
        return f"{self.name} ({self.variant})" if self.variant else self.name


def slugify(name: str) -> str:
    return re.sub(r"[^a-z0-9+]+", "-", name.lower()).strip("-")


def _fallback(text: str) -> Accelerator:
    """A part without a spec: vendor, memory size and wattage out, words kept."""
    power = _POWER.search(text)
    variant = f"{power.group(1)} W" if power else ""
    name = _VENDOR.sub("", _POWER.sub(" ", text).replace("Power Cap", " "))
    name = _MEMORY.sub(" ", name)
    name = re.sub(r"\(\s*\)|\[[^\]]*\]", " ", name)
    name = re.sub(r"\s+", " ", name).strip(" -,")
    return Accelerator(text, name, variant)


def normalise(raw: str, system: str = "") -> Accelerator:
    """Map an MLCommons string or a device name to the one part name and a variant."""
    text = raw.strip()
    if not text:
        return Accelerator(raw, "", "")
    match = resolve_parts(text, system=system)
    if match is None:
        return _fallback(text)
    if match.mixed:
        body = " + ".join(f"{n}x {acc.key}" if n else acc.key for acc, n in match.parts)
        return Accelerator(raw, match.key, f"{body}, mixed parts")
    return Accelerator(raw, match.key, match.variant)


def resolve_gpu(text: str, known: list[str]) -> str:
    """A user's GPU name (key, alias, MLPerf or NVML name) to a known key; one-line
    error listing the known ones otherwise."""
    for candidate in (slugify(text), normalise(text).slug):
        if candidate in known:
            return candidate
    raise ConfigError(
        f"Unknown GPU {text!r}. Known: {', '.join(sorted(known))} "
        "(add it to your price file with --prices FILE)."
    )


def known_parts() -> list[str]:
    """Every part key the model has specs for."""
    return sorted(accelerators())
