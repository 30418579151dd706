"""Output length metrics of LLM benchmarks.

tokens_per_sample = Σ n_tokens_i / N (MLPerf rounds it to 1 decimal);
gen_len = Σ len(text_i) in characters; gen_num = N.
"""

from __future__ import annotations

from collections.abc import Sequence


def tokens_per_sample(token_counts: Sequence[int]) -> float:
    """Mean generated tokens per sample, rounded to 1 decimal as MLPerf does."""
    if not token_counts:
        return 0.0
    return round(sum(token_counts) / len(token_counts), 1)


def gen_len(texts: Sequence[str]) -> int:
    """Total generated characters over all samples."""
    return sum(len(t) for t in texts)
