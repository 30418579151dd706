"""JSON from files a user hands us: any malformed input is a ``ValueError``.

``json.loads`` raises ``RecursionError`` on arrays nested a few thousand deep;
readers that turn ``ValueError`` into one line catch that too through ``loads``.
"""

from __future__ import annotations

import json
from typing import Any


def loads(raw: str | bytes) -> Any:
    """``json.loads``; nesting too deep to read is a ``ValueError`` like any other."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None
