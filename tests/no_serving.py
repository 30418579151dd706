"""Servers started in-process with their socket's bind trapped: a command that
took its input reaches the bind and raises ``Served`` there instead of serving
(and a test of bad input never hangs on a server that accepted it)."""

from __future__ import annotations

import pytest


class Served(BaseException):
    """A server got as far as binding its socket: it took its input."""


def trap_binds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every server binds through ``bind_socket``: trap it where each one looks it up."""

    def trap(*_: object, **__: object) -> None:
        raise Served

    for module in ("mock", "sim", "sim_fleet"):
        monkeypatch.setattr(f"infermeter.servers.{module}.bind_socket", trap)
