"""``infermeter run``: one benchmark run (being built)."""

from __future__ import annotations

from infermeter.cli.main import app


@app.command("run")
def run_command() -> None:
    """Run a benchmark."""
