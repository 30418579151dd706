"""Write a random-weight Llama-style Hugging Face model folder for a real server.

For measuring infermeter against a real continuous-batching server
(``transformers serve --continuous-batching``) without downloading a model: the
byte-level tokenizer of ``tiny_gguf.py`` (any text is one token per byte), a
chat template, and random weights (performance only; outputs mean nothing).
The end-of-text token's output row is zero, so greedy decoding almost never
stops early and requests run to their ``max_tokens``. Needs ``torch`` and
``transformers`` (not infermeter).

    python benchmarks/client/tiny_hf_model.py OUT_DIR [--hidden 1024 --layers 8]
    transformers serve --continuous-batching --device cuda OUT_DIR
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tiny_gguf import EOS, MERGE, byte_chars, write_tokenizer_json

CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)


def write_model(out: Path, hidden: int, layers: int, seed: int) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokens = [*byte_chars(), EOS, "".join(MERGE)]
    heads = max(1, hidden // 128)
    config = LlamaConfig(
        vocab_size=len(tokens),
        hidden_size=hidden,
        intermediate_size=hidden * 8 // 3 // 64 * 64,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=max(1, heads // 4),
        max_position_embeddings=8192,
        bos_token_id=256,
        eos_token_id=256,
        torch_dtype="bfloat16",
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    with torch.no_grad():
        model.lm_head.weight[256].zero_()  # end-of-text: never the greedy pick
    model.save_pretrained(out)
    write_tokenizer_json(out / "tokenizer.json", tokens)
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "eos_token": EOS,
                "bos_token": EOS,
                "add_bos_token": False,
                "model_max_length": 8192,
                "chat_template": CHAT_TEMPLATE,
            }
        ),
        encoding="utf-8",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    write_model(args.out, args.hidden, args.layers, args.seed)
    print(args.out)


if __name__ == "__main__":
    main()
