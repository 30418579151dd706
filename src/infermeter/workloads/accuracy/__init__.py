"""Accuracy: one metric per module, the accuracy-log reader and the scorer."""

from __future__ import annotations
