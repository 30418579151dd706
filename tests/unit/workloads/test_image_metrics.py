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
    pytest.importorskip("PIL")  # CLIP's image processor needs Pillow
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


def test_sdxl_log_scored_with_local_models(tmp_path, tiny_clip) -> None:
    """An SDXL accuracy run, then ``infermeter accuracy`` with the local models."""
    from typer.testing import CliRunner

    from infermeter.cli.main import app
    from infermeter.workloads.accuracy.log import read_accuracy_log

    runner = CliRunner()
    run = tmp_path / "run"
    args = ["run", "--benchmark", "stable-diffusion-xl", "--scenario", "Offline"]
    args += [
        "--mode",
        "AccuracyOnly",
        "--sut",
        "fake",
        "--sut-opt",
        "answers=reference",
    ]
    args += ["--total-sample-count", "4", "--output-dir", str(run)]
    result = runner.invoke(app, [*args, "--store", str(tmp_path / "s.db")])
    assert result.exit_code in (0, 3), result.output
    pics = [
        images.decode_image(np.frombuffer(e.data, np.uint8), e.qsl_idx)
        for e in read_accuracy_log(run)
    ]
    # Reference statistics = the features of these very images: FID 0.
    feats = np.stack([p.reshape(3, -1).mean(axis=1) for p in pics]).astype(np.float64)
    np.savez(
        tmp_path / "stats.npz", mu=feats.mean(0), sigma=np.cov(feats, rowvar=False)
    )
    torch.jit.save(torch.jit.script(ChannelMeans()), str(tmp_path / "f.pt"))
    result = runner.invoke(
        app,
        [
            "accuracy",
            str(run),
            "--clip-model",
            str(tiny_clip),
            "--fid-features",
            str(tmp_path / "f.pt"),
            "--fid-stats",
            str(tmp_path / "stats.npz"),
            "--json",
        ],
    )
    report = json.loads(result.output)
    got = {m["metric"]: m for m in report["metrics"]}
    assert got["fid"]["value"] == pytest.approx(0.0, abs=1e-2)
    from infermeter.workloads import get_benchmark
    from infermeter.workloads.datasets import DatasetOptions, build_qsl

    qsl = build_qsl(get_benchmark("sdxl"), options=DatasetOptions(samples=4))
    captions = [qsl.sample(e.qsl_idx).prompt for e in read_accuracy_log(run)]
    expected = images.clip_score(pics, captions, tiny_clip)
    assert got["clip_score"]["value"] == pytest.approx(expected, abs=1e-4)
    # The SDXL targets are absolute values for the reference's models: no PASS here.
    assert report["passed"] is False
