"""infermeter's version: a module of its own so the engine can log it without importing
the package's public entry points (``infermeter/__init__`` imports the engine)."""

from __future__ import annotations

__version__ = "0.1.0"
