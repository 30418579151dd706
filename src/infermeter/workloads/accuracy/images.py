"""CLIP score and FID for text-to-image (SDXL) with torchmetrics, from local models only.

Nothing is downloaded: FID takes a feature extractor you give (a TorchScript
file or an ``nn.Module`` mapping uint8 NCHW images to (N, d) features; MLPerf's
uses Inception-v3 pool features against COCO statistics), and CLIP score takes a
local Hugging Face CLIP directory (MLPerf's reference uses open_clip ViT-bigG-14:
the SDXL targets hold for that model only).

- FID = |mu_r - mu_g|^2 + Tr(S_r + S_g - 2 (S_r S_g)^(1/2)) over the features
  (torchmetrics ``FrechetInceptionDistance``).
- CLIP score = max(mean over images of 100 x cos(image, caption), 0)
  (torchmetrics ``CLIPScore``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.errors import DatasetError
from infermeter.workloads.accuracy.optional import require

Images = Sequence[npt.NDArray[np.uint8]]  # each CHW uint8


def _batch(images: Images) -> Any:
    torch = require("torch")
    if not images:
        raise DatasetError("No images to score.")
    return torch.from_numpy(np.stack([np.asarray(i, np.uint8) for i in images]))


def load_features(path: str | Path) -> Any:
    """A TorchScript feature extractor saved with ``torch.jit.save``."""
    torch = require("torch")
    try:
        return torch.jit.load(str(path), map_location="cpu").eval()
    except (OSError, RuntimeError, ValueError) as exc:
        raise DatasetError(
            f"Cannot load feature extractor {str(path)!r} ({exc}); give a TorchScript file."
        ) from None


def fid(generated: Images, reference: Images, features: Any) -> float:
    """FID between ``generated`` and ``reference`` under ``features``."""
    fid_module = require("torchmetrics.image.fid")
    if isinstance(features, (str, Path)):
        features = load_features(features)
    metric = fid_module.FrechetInceptionDistance(feature=features, normalize=False)
    metric.update(_batch(reference), real=True)
    metric.update(_batch(generated), real=False)
    return float(metric.compute())


def load_clip(directory: str | Path) -> tuple[Any, Any]:
    """(model, processor) of a local CLIP directory; never a download."""
    transformers = require("transformers")
    where = Path(directory)
    if not (where / "config.json").exists():
        raise DatasetError(
            f"{str(where)!r} is not a CLIP model directory (no config.json); give a "
            "local directory saved with save_pretrained."
        )
    model = transformers.CLIPModel.from_pretrained(where, local_files_only=True)
    processor = transformers.CLIPProcessor.from_pretrained(where, local_files_only=True)
    return model, processor


def clip_score(images: Images, captions: Sequence[str], model_dir: str | Path) -> float:
    """Mean CLIP score of ``images`` against their ``captions``."""
    clip_module = require("torchmetrics.multimodal.clip_score")
    loaded = load_clip(model_dir)
    metric = clip_module.CLIPScore(model_name_or_path=lambda: loaded)
    return float(metric(_batch(images), list(captions)))


@dataclass(frozen=True, slots=True)
class ImageScoring:
    """What scoring an SDXL log needs: local models only, each optional."""

    clip_model: Path | None = None
    fid_features: Path | None = None
    fid_stats: Path | None = None  # npz with "mu" and "sigma" of the reference set


def fid_against_stats(generated: Images, stats: str | Path, features: Any) -> float:
    """FID of ``generated`` against reference statistics (the reference's ``.npz``)."""
    fid_module = require("torchmetrics.image.fid")
    torch = require("torch")
    try:
        with np.load(stats) as data:
            mu, sigma = (
                np.asarray(data["mu"], np.float64),
                np.asarray(data["sigma"], np.float64),
            )
    except (OSError, KeyError, ValueError) as exc:
        raise DatasetError(
            f"Cannot read FID statistics {str(stats)!r} ({exc}); give an npz with "
            "'mu' and 'sigma'."
        ) from None
    if isinstance(features, (str, Path)):
        features = load_features(features)
    metric = fid_module.FrechetInceptionDistance(feature=features, normalize=False)
    if metric.real_features_sum.shape[0] != mu.shape[0]:
        raise DatasetError(
            f"FID statistics have {mu.shape[0]} features, the extractor gives "
            f"{metric.real_features_sum.shape[0]}: they come from different models."
        )
    # The metric keeps sums; n = 2 reproduces mu and sigma exactly:
    # mean = sum / n, cov = (cov_sum - n mu mu^T) / (n - 1).
    n = 2
    dtype = metric.real_features_sum.dtype
    metric.real_features_sum = torch.tensor(mu * n, dtype=dtype)
    metric.real_features_cov_sum = torch.tensor(
        sigma * (n - 1) + n * np.outer(mu, mu), dtype=dtype
    )
    metric.real_features_num_samples = torch.tensor(n)
    metric.update(_batch(generated), real=False)
    return float(metric.compute())


def decode_image(data: npt.NDArray[np.uint8], qsl_idx: int) -> npt.NDArray[np.uint8]:
    """An HWC uint8 square RGB response (SDXL's 1024x1024x3) as CHW."""
    side = round((data.size / 3) ** 0.5)
    if side * side * 3 != data.size:
        raise DatasetError(
            f"Response of sample {qsl_idx} has {data.size} bytes, not a square RGB "
            "image (the SDXL reference logs 1024x1024x3 uint8)."
        )
    return np.ascontiguousarray(data.reshape(side, side, 3).transpose(2, 0, 1))
