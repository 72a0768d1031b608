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
- Prompt token ids (what the prefix cache matches): ``text_ids(text)`` gives each word its id,
  the same one generation gives it (a :data:`VOCAB` word its index, a number ``NUMBER_BASE + n``,
  ``####`` :data:`MARK_ID`) and any other word a stable hash at or above :data:`HASHED_BASE`; so
  a reply sent back as the next turn's history has the ids it was generated with. A chat prompt
  (``chat_prompt_ids``) is, per message, ``<|im_start|>``, the role's id, ``"\n"``, the content's
  ids and ``<|im_end|>``, then ``<|im_start|>``, ``assistant``'s id and ``"\n"`` (Qwen's ids
  for the special tokens): the counts above, and a turn's prompt then its reply are a prefix of
  the next turn's prompt.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "CHAT_TOKENS_GENERATION_PROMPT",
    "CHAT_TOKENS_PER_MESSAGE",
    "EOS_TOKEN_ID",
    "HASHED_BASE",
    "MARK_ID",
    "NUMBER_BASE",
    "VOCAB",
    "chat_prompt_ids",
    "chat_prompt_tokens",
    "count_tokens",
    "prompt_seed",
    "text_ids",
    "token_id",
    "token_text",
]

CHAT_TOKENS_PER_MESSAGE = 4
CHAT_TOKENS_GENERATION_PROMPT = 3
EOS_TOKEN_ID = 151645
#: Ids at or above this one render as the number ``id - NUMBER_BASE``; ``MARK_ID`` as ``####``.
NUMBER_BASE = 1 << 24
MARK_ID = NUMBER_BASE - 1
#: The chat template's special tokens: ``<|im_start|>``, ``<|im_end|>`` (the stop), ``"\n"``.
IM_START_ID = 151644
IM_END_ID = EOS_TOKEN_ID
NEWLINE_ID = 198
#: Prompt words outside the vocabulary hash to ids in [HASHED_BASE, MARK_ID).
HASHED_BASE = 1 << 18
#: Numbers of more digits than this hash like words (their id would not fit 31 bits).
_NUMBER_DIGITS = 9
#: Hashed words remembered for the next prompt, at most (a prompt of fresh words still works).
_KNOWN_MAX = 1 << 18

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


#: Word -> id: the vocabulary, the answer mark, then hashed words as they are met.
_KNOWN: dict[str, int] = {word: index for index, word in enumerate(VOCAB)}
_KNOWN["####"] = MARK_ID


def _word_id(word: str) -> int:
    if word.isascii() and word.isdigit() and len(word) <= _NUMBER_DIGITS:
        tid = NUMBER_BASE + int(word)
    else:
        tid = HASHED_BASE + prompt_seed(word) % (MARK_ID - HASHED_BASE)
    if len(_KNOWN) < _KNOWN_MAX:
        _KNOWN[word] = tid
    return tid


def text_ids(text: str) -> list[int]:
    """The token ids of ``text``: one per whitespace-separated word (``count_tokens``)."""
    words = text.split()
    try:
        return list(map(_KNOWN.__getitem__, words))  # every word met before: no Python loop
    except KeyError:
        known = _KNOWN.get
        return [tid if (tid := known(word)) is not None else _word_id(word) for word in words]


def _content_ids(content: Any) -> list[int]:
    if content is None:
        return []
    if isinstance(content, str):
        return text_ids(content)
    ids: list[int] = []
    for part in content:
        if isinstance(part, Mapping) and isinstance(part.get("text"), str):
            ids += text_ids(part["text"])
    return ids


def chat_prompt_ids(messages: Iterable[Mapping[str, Any]]) -> list[int]:
    """A chat request's prompt ids after the (fixed) chat template; ``chat_prompt_tokens`` long."""
    ids: list[int] = []
    for message in messages:
        role = text_ids(str(message.get("role") or ""))[:1] or [NEWLINE_ID]
        ids += [IM_START_ID, role[0], NEWLINE_ID]
        ids += _content_ids(message.get("content"))
        ids.append(IM_END_ID)
    return [*ids, IM_START_ID, text_ids("assistant")[0], NEWLINE_ID]
