"""Servers infermeter ships: OpenAI-compatible mock and simulated endpoints."""

from __future__ import annotations
