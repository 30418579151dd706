"""Systems under test: adapters that implement ``SystemUnderTest``."""

from __future__ import annotations
