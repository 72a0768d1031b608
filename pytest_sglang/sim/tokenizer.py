"""The simulator's tokenizer: one token per whitespace-separated word. Exact and trivial on purpose.

Why: the load generator must build prompts of an exact token length and check the server's
``usage`` counts, without shipping a real tokenizer. The rules:

- ``count_tokens(text)`` = ``len(text.split())``: one token per whitespace-separated word.
- Chat prompts: ``chat_prompt_tokens(messages)`` = sum over messages of
  ``count_tokens(content) + CHAT_TOKENS_PER_MESSAGE`` (the template's role header and end-of-turn
  markers), plus ``CHAT_TOKENS_GENERATION_PROMPT`` for the assistant header that opens the reply.
  Content given as a list of parts counts the words of its ``text`` parts.
- ``/generate`` also accepts ``input_ids``: its length is the prompt length.
- Ids from :data:`NUMBER_BASE` up are numbers (``NUMBER_BASE + 42`` is ``"42 "``) and
  ``MARK_ID`` is ``"#### "``: the quality stand-in (:mod:`.quality`) writes answers with them.
- Generated text: every token is one word followed by a space (``"alpha "``), drawn
  deterministically from the prompt, the request's seed and the position, so greedy output is the
  same for the same prompt. Token ids are the word's index in :data:`VOCAB`.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "CHAT_TOKENS_GENERATION_PROMPT",
    "CHAT_TOKENS_PER_MESSAGE",
    "EOS_TOKEN_ID",
    "MARK_ID",
    "NUMBER_BASE",
    "VOCAB",
    "chat_prompt_tokens",
    "count_tokens",
    "prompt_seed",
    "token_id",
    "token_text",
]

CHAT_TOKENS_PER_MESSAGE = 4
CHAT_TOKENS_GENERATION_PROMPT = 3
EOS_TOKEN_ID = 151645
#: Ids at or above this one render as the number ``id - NUMBER_BASE``; ``MARK_ID`` as ``####``.
NUMBER_BASE = 1 << 24
MARK_ID = NUMBER_BASE - 1

VOCAB: tuple[str, ...] = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "that",
    "with",
    "as",
    "by",
    "at",
    "from",
    "his",
    "an",
    "were",
    "are",
    "which",
    "this",
    "be",
    "has",
    "had",
    "or",
    "it",
    "not",
    "first",
    "one",
    "their",
    "its",
    "new",
    "after",
    "but",
    "who",
    "they",
    "have",
    "her",
    "she",
    "two",
    "been",
    "other",
    "when",
    "there",
    "all",
    "during",
    "into",
    "school",
    "time",
    "may",
    "years",
    "more",
    "most",
    "only",
    "over",
    "city",
    "some",
    "world",
    "would",
    "where",
    "later",
    "up",
    "such",
    "used",
    "many",
    "can",
    "state",
    "about",
    "national",
    "out",
    "known",
    "university",
    "united",
    "then",
    "made",
    "also",
    "team",
    "people",
    "three",
    "between",
    "high",
    "part",
    "under",
    "while",
    "film",
    "both",
    "year",
    "like",
    "well",
    "long",
    "being",
    "however",
    "series",
    "several",
    "season",
    "through",
    "age",
    "against",
    "small",
    "war",
    "early",
    "government",
    "large",
    "system",
    "main",
    "around",
    "second",
    "including",
    "home",
    "group",
    "same",
    "each",
    "name",
    "number",
    "four",
    "area",
    "music",
    "since",
    "called",
    "band",
    "found",
    "major",
    "public",
    "place",
    "century",
    "south",
    "north",
    "west",
    "east",
    "back",
    "before",
    "model",
    "token",
    "server",
    "speed",
    "light",
    "river",
    "stone",
    "quick",
    "brown",
    "signal",
    "vector",
    "graph",
    "matrix",
    "kernel",
    "cache",
    "queue",
    "batch",
    "stream",
    "sample",
    "draft",
    "verify",
    "accept",
    "decode",
    "prefill",
    "memory",
    "engine",
)


def count_tokens(text: str) -> int:
    """Tokens in ``text``: one per whitespace-separated word."""
    return len(text.split())


def _content_words(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return count_tokens(content)
    total = 0
    for part in content:
        if isinstance(part, Mapping) and isinstance(part.get("text"), str):
            total += count_tokens(part["text"])
    return total


def chat_prompt_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """Prompt tokens of a chat request after applying the (fixed) chat template."""
    total = CHAT_TOKENS_GENERATION_PROMPT
    for message in messages:
        total += _content_words(message.get("content")) + CHAT_TOKENS_PER_MESSAGE
    return total


def prompt_seed(text: str) -> int:
    """A stable 32-bit seed for a prompt (same prompt -> same greedy output)."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def token_id(seed: int, position: int) -> int:
    """The id of the generated token at ``position`` (deterministic)."""
    return (seed * 2654435761 + position * 40503 + (position * position) % 97) % len(VOCAB)


def token_text(tid: int) -> str:
    """A generated token's text: one word (or an answer's number or mark) and a space."""
    if tid >= NUMBER_BASE:
        return f"{tid - NUMBER_BASE} "
    if tid == MARK_ID:
        return "#### "
    return VOCAB[tid % len(VOCAB)] + " "
