"""Write a tiny random-weight llama GGUF with a byte-level tokenizer, and its tokenizer.json.

For testing token counting against a real llama.cpp server (llama-cpp-python)
without downloading a model: 256 byte tokens (GPT-2's byte-to-character
mapping; one merge, of two control bytes) plus an end-of-text token, so any text is one token per
byte and a generated token that is the first byte of a multi-byte character
is text the server cannot show yet. Needs ``numpy`` and ``gguf`` (not
infermeter).

    python benchmarks/client/tiny_gguf.py OUT_DIR      # OUT_DIR/tiny.gguf, OUT_DIR/tokenizer.json
"""

from __future__ import annotations

import json
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


def write_gguf(path: Path, seed: int = 0) -> list[str]:
    import gguf

    tokens = [*byte_chars(), EOS, "".join(MERGE)]
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(N_CTX)
    writer.add_embedding_length(N_EMBD)
    writer.add_feed_forward_length(N_FF)
    writer.add_block_count(N_LAYER)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types([1] * 256 + [3, 1])  # bytes, a control token, the merge
    writer.add_token_merges([" ".join(MERGE)])
    writer.add_bos_token_id(256)
    writer.add_eos_token_id(256)
    writer.add_add_bos_token(False)
    rng = np.random.default_rng(seed)

    def weight(*shape: int) -> np.ndarray:
        return rng.normal(0.0, 0.5, size=shape).astype(np.float32)

    vocab = len(tokens)
    writer.add_tensor("token_embd.weight", weight(vocab, N_EMBD))
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    writer.add_tensor("output.weight", weight(vocab, N_EMBD))
    for i in range(N_LAYER):
        blk = f"blk.{i}."
        writer.add_tensor(blk + "attn_norm.weight", np.ones(N_EMBD, np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(blk + name + ".weight", weight(N_EMBD, N_EMBD))
        writer.add_tensor(blk + "ffn_norm.weight", np.ones(N_EMBD, np.float32))
        writer.add_tensor(blk + "ffn_gate.weight", weight(N_FF, N_EMBD))
        writer.add_tensor(blk + "ffn_up.weight", weight(N_FF, N_EMBD))
        writer.add_tensor(blk + "ffn_down.weight", weight(N_EMBD, N_FF))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return tokens


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
