"""Prefix blocks and a bounded LRU of them: a replica's prefix (KV) cache.

A prompt is cut into blocks of ``block_size`` tokens; block ``i``'s hash
chains blocks ``0..i``, so a block matches only with everything before it, as
in paged prefix caches (vLLM, SGLang). The simulator's replicas keep one
cache each; the client's KV-aware router keeps its own prediction of them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

DEFAULT_BLOCK_SIZE = 16  # vLLM's default KV block size, in tokens


def block_hashes(tokens: Sequence[object], block_size: int) -> tuple[int, ...]:
    """Chained hashes of the full ``block_size`` blocks of ``tokens``.

    A trailing partial block is left out: caches share whole blocks only.
    """
    out: list[int] = []
    parent = 0
    for start in range(0, len(tokens) - block_size + 1, block_size):
        parent = hash((parent, tuple(tokens[start : start + block_size])))
        out.append(parent)
    return tuple(out)


class PrefixCache:
    """A bounded LRU set of block hashes."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._blocks)

    def overlap(self, blocks: Sequence[int]) -> int:
        """Leading blocks present (a prefix match stops at the first miss)."""
        n = 0
        for h in blocks:
            if h not in self._blocks:
                break
            n += 1
        return n

    def touch(self, blocks: Sequence[int]) -> None:
        """Insert or refresh ``blocks``; evict the least recently used past capacity."""
        cache = self._blocks
        for h in blocks:
            if h in cache:
                cache.move_to_end(h)
            else:
                cache[h] = None
        while len(cache) > self.capacity:
            cache.popitem(last=False)
