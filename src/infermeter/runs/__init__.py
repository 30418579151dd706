"""Orchestration of whole runs: settings -> QSL + SUT -> engine -> run folder."""

from __future__ import annotations
