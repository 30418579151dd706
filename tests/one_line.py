"""A file-reading function's error on bad content: a ConfigError of one line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from infermeter.errors import ConfigError


def one_line_error(load: Callable[[Path], object], path: Path, text: str) -> str:
    """Write ``text`` to ``path``, call ``load`` on it and return its ConfigError's
    message, checked to be one line."""
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load(path)
    message = str(info.value)
    assert "\n" not in message
    return message
