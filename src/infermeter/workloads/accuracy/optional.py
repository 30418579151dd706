"""Import an optional extra, or raise the one-line error naming its pip install."""

from __future__ import annotations

import importlib
from types import ModuleType

from infermeter.errors import MissingDependencyError

# module -> (package on PyPI, infermeter extra that installs it)
EXTRAS = {
    "pycocotools": ("pycocotools", "accuracy"),
    "sklearn": ("scikit-learn", "accuracy"),
    "jiwer": ("jiwer", "accuracy"),
    "torch": ("torch", "image-metrics"),
    "torchmetrics": ("torchmetrics", "image-metrics"),
    "transformers": ("transformers", "image-metrics"),
}


def require(module: str) -> ModuleType:
    """``importlib.import_module(module)``, or MissingDependencyError naming the extra."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        package, extra = EXTRAS.get(module.split(".")[0], (module, "accuracy"))
        raise MissingDependencyError(package, extra) from None
