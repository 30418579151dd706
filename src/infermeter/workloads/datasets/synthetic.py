"""Synthetic samples from the corpus infermeter ships: prompts, images, SQuAD-like.

Each sample is made on demand from ``(seed, index)``, so any size costs no
memory until loaded and the same seed gives the same dataset everywhere.
"""

from __future__ import annotations

import functools
from importlib import resources

import numpy as np

from infermeter.workloads.datasets.base import Sample
from infermeter.workloads.datasets.lengths import LengthSpec
from infermeter.workloads.datasets.tokenizer import Tokenizer, WordTokenizer

IMAGE_SHAPE = (3, 224, 224)
IMAGENET_CLASSES = 1000


@functools.cache
def corpus_words() -> tuple[str, ...]:
    """The words of the shipped corpus, in order."""
    path = resources.files("infermeter.workloads").joinpath("data/corpus.txt")
    return tuple(path.read_text(encoding="utf-8").split())


@functools.cache
def corpus_tokenizer() -> WordTokenizer:
    """A word tokenizer whose vocabulary is the corpus words."""
    return WordTokenizer(corpus_words())


def _words(rng: np.random.Generator, count: int) -> list[str]:
    words = corpus_words()
    start = int(rng.integers(len(words)))
    return [words[(start + i) % len(words)] for i in range(count)]


def _text_of_tokens(
    tokenizer: Tokenizer, rng: np.random.Generator, n_tokens: int
) -> tuple[str, list[int]]:
    # Tokenizers split words differently, so grow the word count until the
    # text has enough tokens, then cut the ids to exactly n_tokens.
    count = n_tokens
    while True:
        ids = tokenizer.encode(" ".join(_words(rng, count)))
        if len(ids) >= n_tokens:
            ids = ids[:n_tokens]
            return tokenizer.decode(ids), ids
        count = count * 2 + 1


class SyntheticPrompts:
    """LLM prompts with drawn input/output lengths; optional shared prefixes."""

    def __init__(
        self,
        count: int,
        *,
        input_len: LengthSpec,
        output_len: LengthSpec,
        seed: int = 0,
        tokenizer: Tokenizer | None = None,
        shared_prefix_tokens: int = 0,
        num_prefixes: int = 1,
    ) -> None:
        self.name = "synthetic-prompts"
        self._count = count
        self.input_len = input_len
        self.output_len = output_len
        self.seed = seed
        self.tokenizer: Tokenizer = tokenizer or corpus_tokenizer()
        self.shared_prefix_tokens = shared_prefix_tokens
        self.num_prefixes = max(1, num_prefixes)

    def __len__(self) -> int:
        return self._count

    @functools.lru_cache(maxsize=64)  # noqa: B019 - few prefixes, source lives for the run
    def _prefix(self, group: int) -> tuple[str, tuple[int, ...]]:
        rng = np.random.default_rng([self.seed, 1 << 30, group])
        text, ids = _text_of_tokens(self.tokenizer, rng, self.shared_prefix_tokens)
        return text, tuple(ids)

    def read(self, index: int) -> Sample:
        rng = np.random.default_rng([self.seed, index])
        n_in = self.input_len.draw(rng)
        n_out = self.output_len.draw(rng)
        prefix_text: str = ""
        prefix_ids: tuple[int, ...] = ()
        if self.shared_prefix_tokens:
            prefix_text, prefix_ids = self._prefix(index % self.num_prefixes)
        body_len = max(1, n_in - len(prefix_ids))
        text, ids = _text_of_tokens(self.tokenizer, rng, body_len)
        prompt = f"{prefix_text} {text}" if prefix_text else text
        return Sample(
            index=index,
            prompt=prompt,
            input_ids=np.asarray([*prefix_ids, *ids], dtype=np.int64),
            output_tokens=n_out,
            reference=" ".join(_words(rng, n_out)),
        )


class SyntheticConversations:
    """Multi-turn chats: turn t's prompt is the turns before it plus a new message.

    Sample ``index`` is turn ``index // conversations`` of conversation
    ``index % conversations``; messages are made from ``(seed, conversation,
    turn)``, so turn t + 1 repeats turn t's text exactly (a prefix-cache hit).
    """

    def __init__(
        self,
        count: int,
        *,
        turns: int,
        input_len: LengthSpec,
        output_len: LengthSpec,
        seed: int = 0,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        self.name = "synthetic-conversations"
        self.turns = max(1, turns)
        self.conversations = max(1, -(-count // self.turns))
        self._count = self.conversations * self.turns
        self.input_len = input_len
        self.output_len = output_len
        self.seed = seed
        self.tokenizer: Tokenizer = tokenizer or corpus_tokenizer()

    def __len__(self) -> int:
        return self._count

    def _turn(self, conversation: int, turn: int) -> tuple[str, list[int], int, str]:
        """(user text, its ids, reply length, reply text) of one turn."""
        rng = np.random.default_rng([self.seed, 1 << 31, conversation, turn])
        text, ids = _text_of_tokens(
            self.tokenizer, rng, max(1, self.input_len.draw(rng))
        )
        n_out = max(1, self.output_len.draw(rng))
        return text, ids, n_out, " ".join(_words(rng, n_out))

    def read(self, index: int) -> Sample:
        turn, conversation = divmod(index, self.conversations)
        messages: list[tuple[str, str]] = []
        ids: list[int] = []
        for k in range(turn + 1):
            text, user_ids, n_out, reply = self._turn(conversation, k)
            messages.append(("user", text))
            ids += user_ids
            if k < turn:
                messages.append(("assistant", reply))
                ids += self.tokenizer.encode(reply)
        return Sample(
            index=index,
            prompt=" ".join(content for _, content in messages),
            input_ids=np.asarray(ids, dtype=np.int64),
            messages=tuple(messages),
            output_tokens=n_out,
            reference=reply,
        )


class SyntheticImages:
    """ImageNet-like inputs: normalised CHW float32 noise with a drawn label."""

    def __init__(
        self, count: int, *, seed: int = 0, shape: tuple[int, ...] = IMAGE_SHAPE
    ) -> None:
        self.name = "synthetic-images"
        self._count = count
        self.seed = seed
        self.shape = shape

    def __len__(self) -> int:
        return self._count

    def read(self, index: int) -> Sample:
        rng = np.random.default_rng([self.seed, index])
        image = rng.standard_normal(self.shape, dtype=np.float32)
        label = int(rng.integers(IMAGENET_CLASSES))
        return Sample(index=index, image=image, reference=label)


class SyntheticSquad:
    """SQuAD-like question/context pairs whose answer is a span of the context."""

    def __init__(self, count: int, *, seed: int = 0, context_words: int = 120) -> None:
        self.name = "synthetic-squad"
        self._count = count
        self.seed = seed
        self.context_words = context_words
        self.tokenizer = corpus_tokenizer()

    def __len__(self) -> int:
        return self._count

    def read(self, index: int) -> Sample:
        rng = np.random.default_rng([self.seed, index])
        context = _words(rng, self.context_words)
        start = int(rng.integers(self.context_words - 4))
        answer = " ".join(context[start : start + int(rng.integers(1, 4))])
        question = "What follows " + " ".join(context[max(0, start - 3) : start]) + "?"
        prompt = f"{question} {' '.join(context)}"
        ids = np.asarray(self.tokenizer.encode(prompt), dtype=np.int64)
        return Sample(index=index, prompt=prompt, input_ids=ids, reference=(answer,))


class SyntheticCaptions:
    """Short scene descriptions as prompts (text to image, text to video).

    The caption is also the reference (what CLIP score compares an image with).
    """

    def __init__(self, count: int, *, seed: int = 0, words: int = 12) -> None:
        self.name = "synthetic-captions"
        self._count = count
        self.seed = seed
        self.words = words

    def __len__(self) -> int:
        return self._count

    def read(self, index: int) -> Sample:
        rng = np.random.default_rng([self.seed, index])
        caption = f"A picture of {' '.join(_words(rng, self.words))}."
        return Sample(index=index, prompt=caption, reference=caption)
