"""infermeter: benchmark AI inference the way MLPerf Inference does, and further."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
