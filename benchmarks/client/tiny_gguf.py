"""Write a tiny random-weight llama GGUF with a byte-level tokenizer, and its tokenizer.json.

For testing token counting against a real llama.cpp server (llama-cpp-python)
without downloading a model: 256 byte tokens (GPT-2's byte-to-character
mapping; one merge, of two control bytes) plus an end-of-text token, so any text is one token per
byte and a generated token that is the first byte of a multi-byte character
is text the server cannot show yet. Needs only ``numpy`` (the GGUF is
written here, not by the ``gguf`` package).

    python benchmarks/client/tiny_gguf.py OUT_DIR      # OUT_DIR/tiny.gguf, OUT_DIR/tokenizer.json
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np

N_EMBD, N_FF, N_LAYER, N_HEAD, N_CTX = 64, 128, 2, 4, 512
EOS = "<|endoftext|>"
# llama.cpp wants at least one merge: join the bytes 0x01 and 0x02, which no
# text here contains, so every token stays one byte.
MERGE = ("\u0101", "\u0102")


def byte_chars() -> list[str]:
    """GPT-2's printable stand-in character for each byte value."""
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    chars = keep[:]
    extra = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    table = dict(zip(keep, chars, strict=True))
    return [chr(table[b]) for b in range(256)]


# GGUF value types (the format's own numbering) and the one tensor type used.
_U32, _I32, _F32, _BOOL, _STR, _ARRAY = 4, 5, 6, 7, 8, 9
_TENSOR_F32 = 0
_ALIGN = 32  # GGUF's default alignment of the tensor data


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def _value(kind: int, value: object) -> bytes:
    if kind == _STR:
        return _string(str(value))
    fmt = {_U32: "<I", _I32: "<i", _F32: "<f", _BOOL: "<?"}[kind]
    return struct.pack(fmt, value)


def _kv(key: str, kind: int, value: object) -> bytes:
    if kind == _ARRAY:
        item_kind, items = value  # type: ignore[misc]
        body = struct.pack("<IQ", item_kind, len(items))
        body += b"".join(_value(item_kind, v) for v in items)
        return _string(key) + struct.pack("<I", _ARRAY) + body
    return _string(key) + struct.pack("<I", kind) + _value(kind, value)


def _pad(size: int) -> int:
    return -size % _ALIGN


def write_gguf(path: Path, seed: int = 0) -> list[str]:
    """A GGUF v3 file (the format as llama.cpp reads it; no ``gguf`` package needed)."""
    tokens = [*byte_chars(), EOS, "".join(MERGE)]
    kvs = [
        _kv("general.architecture", _STR, "llama"),
        _kv("llama.context_length", _U32, N_CTX),
        _kv("llama.embedding_length", _U32, N_EMBD),
        _kv("llama.feed_forward_length", _U32, N_FF),
        _kv("llama.block_count", _U32, N_LAYER),
        _kv("llama.attention.head_count", _U32, N_HEAD),
        _kv("llama.attention.head_count_kv", _U32, N_HEAD),
        _kv("llama.rope.dimension_count", _U32, N_EMBD // N_HEAD),
        _kv("llama.attention.layer_norm_rms_epsilon", _F32, 1e-5),
        _kv("tokenizer.ggml.model", _STR, "gpt2"),
        _kv("tokenizer.ggml.pre", _STR, "gpt-2"),
        _kv("tokenizer.ggml.tokens", _ARRAY, (_STR, tokens)),
        # bytes, a control token (end of text), the merge
        _kv("tokenizer.ggml.token_type", _ARRAY, (_I32, [1] * 256 + [3, 1])),
        _kv("tokenizer.ggml.merges", _ARRAY, (_STR, [" ".join(MERGE)])),
        _kv("tokenizer.ggml.bos_token_id", _U32, 256),
        _kv("tokenizer.ggml.eos_token_id", _U32, 256),
        _kv("tokenizer.ggml.add_bos_token", _BOOL, False),
    ]
    tensors = _tensors(len(tokens), np.random.default_rng(seed))
    infos, offset = [], 0
    for name, data in tensors:
        dims = data.shape[::-1]  # GGUF lists the fastest-varying dimension first
        infos.append(
            _string(name)
            + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, _TENSOR_F32, offset)
        )
        offset += data.nbytes + _pad(data.nbytes)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    head += b"".join(kvs) + b"".join(infos)
    with path.open("wb") as out:
        out.write(head + bytes(_pad(len(head))))
        for _, data in tensors:
            out.write(data.tobytes() + bytes(_pad(data.nbytes)))
    return tokens


def _tensors(vocab: int, rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    """The llama graph's weights: random matrices, unit norms."""

    def weight(*shape: int) -> np.ndarray:
        return rng.normal(0.0, 0.5, size=shape).astype(np.float32)

    def ones() -> np.ndarray:
        return np.ones(N_EMBD, dtype=np.float32)

    out = [
        ("token_embd.weight", weight(vocab, N_EMBD)),
        ("output_norm.weight", ones()),
        ("output.weight", weight(vocab, N_EMBD)),
    ]
    for i in range(N_LAYER):
        blk = f"blk.{i}."
        out.append((blk + "attn_norm.weight", ones()))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            out.append((blk + name + ".weight", weight(N_EMBD, N_EMBD)))
        out += [
            (blk + "ffn_norm.weight", ones()),
            (blk + "ffn_gate.weight", weight(N_FF, N_EMBD)),
            (blk + "ffn_up.weight", weight(N_FF, N_EMBD)),
            (blk + "ffn_down.weight", weight(N_EMBD, N_FF)),
        ]
    return out


def write_tokenizer_json(path: Path, tokens: list[str]) -> None:
    """The same vocabulary for the ``tokenizers`` package (byte-level BPE, no merges)."""
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": 256,
                "content": EOS,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
        ],
        "normalizer": None,
        "pre_tokenizer": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": True,
        },
        "post_processor": None,
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": True,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "vocab": {t: i for i, t in enumerate(tokens)},
            "merges": [" ".join(MERGE)],
        },
    }
    path.write_text(json.dumps(doc), encoding="utf-8")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tokens = write_gguf(out / "tiny.gguf")
    write_tokenizer_json(out / "tokenizer.json", tokens)
    print(out / "tiny.gguf")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tiny-model"))
