"""``build_qsl``: the dataset for a benchmark, from a user's file or synthetic."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from infermeter.errors import ConfigError, DatasetPathError
from infermeter.workloads.benchmark import Benchmark
from infermeter.workloads.datasets import formats, media_formats, media_readers, tables
from infermeter.workloads.datasets.base import (
    DatasetQSL,
    SampleSource,
    unreadable_as_dataset_error,
)
from infermeter.workloads.datasets.encoded_media import EncodedMedia
from infermeter.workloads.datasets.lengths import LengthSpec, fixed
from infermeter.workloads.datasets.shapes import PromptShape
from infermeter.workloads.datasets.synthetic import (
    SyntheticCaptions,
    SyntheticConversations,
    SyntheticImages,
    SyntheticPrompts,
    SyntheticSquad,
)
from infermeter.workloads.datasets.synthetic_media import media_source
from infermeter.workloads.datasets.synthetic_tasks import TASKS, SyntheticTaskPrompts
from infermeter.workloads.datasets.tokenizer import (
    Tokenizer,
    check_tokenizer_matches,
    load_tokenizer,
)

SYNTHETIC_TEXT_SAMPLES = 1024
SYNTHETIC_IMAGE_SAMPLES = 128


@dataclass(frozen=True, slots=True)
class DatasetOptions:
    """How to read (or make) a dataset; every field optional."""

    columns: Mapping[str, str] = field(default_factory=dict)
    tokenizer: str | Path | None = None
    samples: int | None = None
    performance_sample_count: int | None = None
    seed: int = 0
    input_len: LengthSpec | None = None
    output_len: LengthSpec | None = None
    shared_prefix_tokens: int = 0
    num_prefixes: int = 1
    conversation_turns: int = 0  # > 0: multi-turn conversations (--prompts)
    image_dir: Path | None = None
    allow_pickle: bool = False  # unpickling runs code: only when the user says so


def _pickle(path: Path, opts: DatasetOptions) -> SampleSource:
    frame = tables.read_frame(path, "pickle", allow_pickle=opts.allow_pickle)
    return tables.FrameSource(path.name, frame, opts.columns, str(path))


def _csv(path: Path, opts: DatasetOptions) -> SampleSource:
    frame = tables.read_frame(path, "csv")
    return tables.FrameSource(path.name, frame, opts.columns, str(path))


def _parquet(path: Path, opts: DatasetOptions) -> SampleSource:
    frame = tables.read_frame(path, "parquet")
    return tables.FrameSource(path.name, frame, opts.columns, str(path))


def _cnn(path: Path, opts: DatasetOptions) -> SampleSource:
    if path.suffix in (".pkl", ".pickle"):
        return _pickle(path, opts)  # the Llama 3.1 8B reference ships a pickle
    return formats.cnn_dailymail(path)


READERS: dict[str, Callable[[Path, DatasetOptions], SampleSource]] = {
    "pickle": _pickle,
    "openorca-pickle": _pickle,
    "mixtral-pickle": _pickle,
    "llama3-pickle": _pickle,
    "deepseek-pickle": _pickle,
    "csv": _csv,
    "parquet": _parquet,
    "gpt-oss-parquet": _parquet,
    "jsonl": lambda p, o: tables.JsonlSource(p, o.columns),
    "cnn-dailymail": _cnn,
    "squad": lambda p, o: formats.squad(p),
    "imagenet": lambda p, o: formats.ImageList(p, o.image_dir),
    "sharegpt": lambda p, o: formats.sharegpt(p),
    "multi-turn": lambda p, o: formats.multi_turn(p),
    "coco": lambda p, o: media_formats.CocoDetection(p),
    "openimages": lambda p, o: media_formats.CocoDetection(p),
    "text-lines": lambda p, o: media_formats.text_lines(p),
    "image-folder": lambda p, o: media_readers.ImageFolder(p),
    "vlm-jsonl": lambda p, o: media_readers.VisionJsonl(p),
    "librispeech": lambda p, o: media_readers.AudioList(p),
    "coco-captions": lambda p, o: media_readers.coco_captions(p),
}
FORMATS = (*sorted(READERS), "synthetic")


def build_qsl(
    benchmark: Benchmark,
    dataset_path: str | Path | None = None,
    *,
    fmt: str | None = None,
    options: DatasetOptions | None = None,
) -> DatasetQSL:
    """The QSL for ``benchmark``: read ``dataset_path`` or, without one, synthetic."""
    opts = options or DatasetOptions()
    tokenizer = load_tokenizer(opts.tokenizer) if opts.tokenizer else None
    if dataset_path is None or fmt == "synthetic":
        source = _synthetic(benchmark, opts, tokenizer)
    else:
        path = Path(dataset_path)
        if not path.exists():
            raise DatasetPathError(
                f"Dataset file {str(path)!r} not found; check the path."
            )
        if path.is_dir() and not any(path.iterdir()):
            # Its benchmark's format would name it (a pickle, a JSON file).
            raise DatasetPathError(
                f"Dataset {str(path)!r} is an empty folder; pass the dataset file "
                "(or a folder that holds it)"
            )
        with unreadable_as_dataset_error(repr(str(path))):
            source = _read(path, fmt or _guess_format(path, benchmark), opts)
    perf = opts.performance_sample_count or benchmark.performance_sample_count or None
    qsl = DatasetQSL(
        source, performance_sample_count=perf, tokenizer=tokenizer, limit=opts.samples
    )
    if tokenizer is not None:
        _check_tokenizer(qsl, tokenizer)
    return qsl


def _synthetic(
    bench: Benchmark, opts: DatasetOptions, tokenizer: Tokenizer | None
) -> SampleSource:
    shape = bench.synthetic_shape or None
    if bench.dataset_format == "imagenet":
        return SyntheticImages(
            opts.samples or SYNTHETIC_IMAGE_SAMPLES,
            seed=opts.seed,
            **({"shape": shape} if shape else {}),
        )
    media = media_source(
        bench.dataset_format, count=opts.samples, shape=shape, seed=opts.seed
    )
    kind = media_readers.modality(bench)
    if media is not None:
        # Endpoints are sent files: the waveforms and pictures, encoded at load.
        return EncodedMedia(media) if kind in ("speech", "vision-chat") else media
    count = opts.samples or min(
        bench.performance_sample_count or SYNTHETIC_TEXT_SAMPLES, SYNTHETIC_TEXT_SAMPLES
    )
    if kind in ("text-to-image", "text-to-video"):
        return SyntheticCaptions(count, seed=opts.seed)
    if bench.dataset_format == "squad":
        return SyntheticSquad(count, seed=opts.seed)
    input_len = opts.input_len or fixed(bench.synthetic_input_tokens or 128)
    output_len = opts.output_len or fixed(bench.synthetic_output_tokens or 128)
    if opts.conversation_turns:
        return SyntheticConversations(
            count,
            turns=opts.conversation_turns,
            input_len=input_len,
            output_len=output_len,
            seed=opts.seed,
            tokenizer=tokenizer,
        )
    prompts = SyntheticPrompts(
        count,
        input_len=input_len,
        output_len=output_len,
        seed=opts.seed,
        tokenizer=tokenizer,
        shared_prefix_tokens=opts.shared_prefix_tokens,
        num_prefixes=opts.num_prefixes,
    )
    tasks = TASKS.get(bench.dataset_format)
    return prompts if tasks is None else SyntheticTaskPrompts(prompts, tasks)


def prompt_shape_of(opts: DatasetOptions) -> PromptShape:
    """The ``--prompts`` shape ``opts`` asks for."""
    if opts.conversation_turns:
        return PromptShape("multi-turn", turns=opts.conversation_turns)
    if opts.shared_prefix_tokens:
        return PromptShape(
            "shared-prefix",
            groups=opts.num_prefixes,
            prefix_tokens=opts.shared_prefix_tokens,
        )
    return PromptShape()


def synthetic_text(
    count: int,
    shape: PromptShape,
    *,
    input_len: LengthSpec,
    output_len: LengthSpec,
    seed: int = 0,
) -> SampleSource:
    """Synthetic LLM prompts of ``shape`` (for load tools without a benchmark)."""
    if shape.kind == "multi-turn":
        return SyntheticConversations(
            count,
            turns=shape.turns,
            input_len=input_len,
            output_len=output_len,
            seed=seed,
        )
    return SyntheticPrompts(
        count,
        input_len=input_len,
        output_len=output_len,
        seed=seed,
        shared_prefix_tokens=shape.prefix_tokens,
        num_prefixes=shape.groups,
    )


def sniff_format(path: Path) -> str | None:
    """Guess a file's format from its name and first bytes (None: no idea)."""
    media = media_readers.sniff_media(path)
    if media is not None and path.suffix.lower() not in (".json", ".txt"):
        return media
    suffix = path.suffix.lower()
    by_suffix = {
        ".pkl": "pickle",
        ".pickle": "pickle",
        ".csv": "csv",
        ".parquet": "parquet",
        ".txt": "imagenet",
    }
    if suffix in by_suffix:
        return by_suffix[suffix]
    if suffix == ".jsonl":
        with path.open(encoding="utf-8", errors="replace") as fh:
            first = fh.readline()
        return "multi-turn" if '"messages"' in first else "jsonl"
    if suffix == ".json":
        return _sniff_json(path)
    return None


def _read(path: Path, name: str, opts: DatasetOptions) -> SampleSource:
    reader = READERS.get(name)
    if reader is None:
        raise ConfigError(
            f"Cannot read dataset format {name!r}. Known: {', '.join(FORMATS)}."
        )
    return reader(path, opts)


def _guess_format(path: Path, bench: Benchmark) -> str:
    """The sniffed format, or the benchmark's when a name alone cannot tell.

    A multimodal benchmark looks for its media layouts first (a folder of
    images or LibriSpeech, an MMMU-style JSONL, a prompt list).
    """
    if media_readers.modality(bench) is not None:
        media = media_readers.sniff_media(path)
        if media is not None:
            return media
    sniffed = sniff_format(path)
    if sniffed is None or (
        sniffed == "imagenet" and bench.dataset_format == "text-lines"
    ):
        return bench.dataset_format
    if sniffed == "coco" and bench.dataset_format == "openimages":
        return "openimages"
    return sniffed


def _sniff_json(path: Path) -> str | None:
    data = formats.read_json(path)
    if isinstance(data, dict) and "data" in data:
        return "squad"
    if isinstance(data, dict) and "images" in data and "annotations" in data:
        return "coco"
    if isinstance(data, list) and data and isinstance(data[0], dict):
        if "transcript" in data[0] and "files" in data[0]:
            return "librispeech"
        if "conversations" in data[0]:
            return "sharegpt"
        if "instruction" in data[0]:
            return "cnn-dailymail"
    return None


def _check_tokenizer(qsl: DatasetQSL, tokenizer: Tokenizer) -> None:
    first = qsl.sample(0)
    if first.input_ids is not None and not isinstance(qsl.source, SyntheticPrompts):
        ids = first.input_ids.tolist()
        check_tokenizer_matches(
            tokenizer, first.prompt or "", ids, where=f"dataset {qsl.name!r} sample 0"
        )


def describe(qsl: DatasetQSL) -> dict[str, object]:
    """The run.json ``dataset`` block."""
    return {
        "name": qsl.name,
        "total_sample_count": qsl.total_sample_count,
        "performance_sample_count": qsl.performance_sample_count,
        "tokenizer": None if qsl.tokenizer is None else qsl.tokenizer.name,
    }


__all__ = [
    "FORMATS",
    "DatasetOptions",
    "build_qsl",
    "describe",
    "prompt_shape_of",
    "sniff_format",
    "synthetic_text",
]
