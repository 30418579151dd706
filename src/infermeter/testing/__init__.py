"""Fakes shipped for tests and for users' own tests: virtual time, fake SUTs, QSLs, sinks."""

from __future__ import annotations

from infermeter.testing.clock import ManualClock
from infermeter.testing.qsl import InMemoryQSL
from infermeter.testing.sink import RecordingSink

__all__ = ["InMemoryQSL", "ManualClock", "RecordingSink"]
