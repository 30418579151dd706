"""Accelerator names: MLCommons strings to a short name plus a kept variant.

"NVIDIA H200-SXM-141GB-CTS" -> ("H200 SXM", "CTS"); power caps such as
"750W" or "Power Cap 1000 W" stay in the variant, so capped systems never merge
silently with uncapped ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from infermeter.errors import ConfigError

_VENDOR = re.compile(
    r"^(NVIDIA|AMD Instinct|AMD|Intel|Google|Tesla|Qualcomm|UntetherAI)\s+", re.I
)
_POWER = re.compile(r"(?:power\s*cap\s*)?(\d{3,4})\s*W\b", re.I)
_MEMORY = re.compile(r"[-\s]?(\d{2,3})\s*GB?\b", re.I)
_FORM = {"SXM": "SXM", "PCIE": "PCIe", "NVL": "NVL", "OAM": "OAM"}
# Tokens that describe a partition mode, memory type or packaging, not a part.
_DROP = {"NPS1", "SPX", "CPX", "GRACE", "HOPPER", "SUPERCHIP", "GPU", "GEFORCE"}
_DROP_RE = re.compile(r"^HBM\d?E?$", re.I)
# Words without digits that still belong to the product name.
_NAME_WORDS = {"TPU", "RTX", "JETSON", "AGX", "ORIN"}


@dataclass(frozen=True, slots=True)
class Accelerator:
    """A normalised accelerator: ``name`` groups results, ``variant`` keeps caps."""

    raw: str
    name: str
    variant: str

    @property
    def slug(self) -> str:
        """Lower-case key used by price tables and flags, e.g. ``h100-sxm``."""
        return slugify(self.name)

    @property
    def label(self) -> str:
        return f"{self.name} ({self.variant})" if self.variant else self.name


def slugify(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def normalise(raw: str) -> Accelerator:
    """Map an MLCommons accelerator string to a short name and a variant."""
    text = raw.strip()
    if not text:
        return Accelerator(raw, "", "")
    power = _POWER.search(text)
    variant_parts = [f"{power.group(1)}W"] if power else []
    text = _POWER.sub(" ", text) if power else text
    text = _VENDOR.sub("", text).replace("Power Cap", " ")
    tokens = [t for t in re.split(r"[-\s]+", text) if t]
    name_parts: list[str] = []
    memory = ""
    for token in tokens:
        upper = token.upper()
        if upper in _DROP or _DROP_RE.match(token):
            continue
        if _MEMORY.fullmatch(token):
            memory = upper if upper.endswith("GB") else upper.rstrip("G") + "GB"
        elif upper in _FORM:
            name_parts.append(_FORM[upper])
        elif upper in _NAME_WORDS or any(c.isdigit() for c in token):
            name_parts.append(
                token.upper() if re.fullmatch(r"[a-z]\d{2,}", token) else token
            )
        else:
            variant_parts.insert(len(variant_parts) - bool(power), token)
    # Memory only matters where the same chip ships with several sizes (GH200).
    if memory and name_parts and name_parts[0].upper() == "GH200":
        variant_parts.insert(0, memory)
    return Accelerator(raw, " ".join(name_parts), " ".join(variant_parts))


def resolve_gpu(text: str, known: list[str]) -> str:
    """Match a user's GPU name against known slugs; one-line error when unknown."""
    slug = slugify(normalise(text).name) or slugify(text)
    for candidate in (slugify(text), slug):
        if candidate in known:
            return candidate
    raise ConfigError(
        f"Unknown GPU {text!r}. Known: {', '.join(sorted(known))} "
        "(add it to your price file with --prices FILE)."
    )
