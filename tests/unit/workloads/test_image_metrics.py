"""FID with a small custom feature module and CLIP score with a tiny random local CLIP.

Nothing is downloaded: the CLIP model is built here with random weights and a
byte-level vocabulary, saved to a temporary directory and loaded from there.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

from infermeter.workloads.accuracy import images  # noqa: E402


class ChannelMeans(torch.nn.Module):
    """Features = the per-channel mean of each image (3 numbers)."""

    def forward(self, x):
        return x.float().mean(dim=(2, 3))


def _flat_images(values: np.ndarray) -> list[np.ndarray]:
    return [
        np.broadcast_to(v.reshape(3, 1, 1), (3, 8, 8)).astype(np.uint8) for v in values
    ]


def test_fid_hand_computed() -> None:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 200, size=(16, 3))
    ref = _flat_images(base)
    # Same covariance, means shifted by 10 per channel: FID = |10, 10, 10|^2 = 300.
    assert images.fid(_flat_images(base + 10), ref, ChannelMeans()) == pytest.approx(
        300.0, rel=1e-4
    )
    assert images.fid(ref, ref, ChannelMeans()) == pytest.approx(0.0, abs=1e-3)


def test_fid_from_a_torchscript_file(tmp_path) -> None:
    path = tmp_path / "features.pt"
    torch.jit.save(torch.jit.script(ChannelMeans()), str(path))
    base = np.random.default_rng(1).integers(0, 200, size=(8, 3))
    value = images.fid(_flat_images(base + 5), _flat_images(base), path)
    assert value == pytest.approx(75.0, rel=1e-4)


def _byte_vocab() -> list[str]:
    # GPT-2 / CLIP byte-to-unicode table: printable bytes map to themselves.
    keep = [*range(33, 127), *range(161, 173), *range(174, 256)]
    extra = [b for b in range(256) if b not in keep]
    return [chr(b) for b in keep] + [chr(256 + i) for i in range(len(extra))]


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("tiny-clip")
    chars = _byte_vocab()
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = transformers.CLIPTokenizer(
        vocab_file=str(folder / "vocab.json"), merges_file=str(folder / "merges.txt")
    )
    processor = transformers.CLIPProcessor(
        image_processor=transformers.CLIPImageProcessor(
            size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
        ),
        tokenizer=tokenizer,
    )
    layer = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1}
    config = transformers.CLIPConfig(
        text_config={**layer, "vocab_size": len(vocab), "num_attention_heads": 2},
        vision_config={
            **layer,
            "num_attention_heads": 2,
            "image_size": 32,
            "patch_size": 8,
        },
        projection_dim=16,
    )
    torch.manual_seed(0)
    transformers.CLIPModel(config).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def test_clip_score_matches_the_cosine_by_hand(tiny_clip) -> None:
    rng = np.random.default_rng(2)
    pics = [rng.integers(0, 255, size=(3, 32, 32)).astype(np.uint8) for _ in range(3)]
    captions = ["a red bicycle", "two cats asleep", "a bowl of soup"]
    score = images.clip_score(pics, captions, tiny_clip)
    model, processor = images.load_clip(tiny_clip)
    with torch.no_grad():
        batch = processor(
            text=captions,
            images=[torch.from_numpy(p) for p in pics],
            return_tensors="pt",
            padding=True,
        )
        img = model.get_image_features(pixel_values=batch["pixel_values"])
        txt = model.get_text_features(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
        )
    img = getattr(img, "pooler_output", img)
    txt = getattr(txt, "pooler_output", txt)
    cos = torch.nn.functional.cosine_similarity(img, txt)
    assert score == pytest.approx(max(float((100 * cos).mean()), 0.0), abs=1e-3)


def test_clip_refuses_a_non_model_directory(tmp_path) -> None:
    pytest.importorskip("transformers")
    from infermeter.errors import DatasetError

    with pytest.raises(DatasetError, match="not a CLIP model directory"):
        images.clip_score([np.zeros((3, 8, 8), np.uint8)], ["x"], tmp_path)
