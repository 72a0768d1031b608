"""Prompt sources whose requests share prefixes: what a prefix cache is measured with.

Why generated here and not downloaded: a benchmark must be the same text on every round,
config and machine, from a seed, with nothing fetched. Four shapes, each a frozen value like
the other prompt sources of :mod:`.workload` (``prompts``, ``output_lengths``, ``label``,
``canonical``), with a ``shape`` that names the workload (``shared-prefix-concurrency-16``):

- :class:`SharedPrefixPrompts`: bench_serving's ``generated-shared-prefix`` dataset, with its
  knobs and its structure (sglang 0.5.23, ``sglang/benchmark/datasets/
  generated_shared_prefix.py``): ``num_groups`` system prompts of ``system_prompt_len`` tokens,
  ``prompts_per_group`` questions of ``question_len`` tokens each, the prompt
  ``f"{system}\\n\\n{question}"``, lengths drawn as its ``compute_random_lens`` draws them
  (``range_ratio``), the requests group by group and then shuffled unless ``ordered``;
- :class:`ConversationPrompts`: multi-turn conversations; the load generator sends each turn
  with the conversation's history (the questions and the server's own replies) before it;
- :class:`MooncakeTrace`: a Mooncake-format JSONL trace replayed on its timestamps, each
  request's prompt built from its ``hash_ids`` so that equal ids are equal token blocks;
- :class:`LongContextPrompts`: long prompts (a document and a question), optionally a few
  documents shared by all questions.

Words are one token each on the simulator's tokenizer (and, with their leading space, on
common BPE vocabularies), so a length in tokens is a count of words; ``"\\n\\n"`` is no token
on the simulator and one on BPE vocabularies.
"""

from __future__ import annotations

import functools
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..errors import ConfigError
from ..sim.tokenizer import VOCAB
from .identity import file_sha256

__all__ = [
    "ConversationPrompts",
    "LongContextPrompts",
    "MooncakeTrace",
    "SharedPrefixPrompts",
    "TraceRequest",
]

#: The words prompts are made of (one token each on the simulator).
WORDS: tuple[str, ...] = VOCAB
#: Between a shared prefix and what follows it (bench_serving's separator).
SEPARATOR = "\n\n"


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choices(WORDS, k=count))


def _bounds(value: int | tuple[int, int]) -> tuple[int, int]:
    if isinstance(value, tuple):
        return int(value[0]), int(value[1])
    return int(value), int(value)


def _check_range(owner: str, name: str, value: int | tuple[int, int], low_min: int = 1) -> None:
    low, high = _bounds(value)
    if low < low_min or high < low:
        raise ConfigError(
            f"{owner} {name}={value!r}: give a length >= {low_min} or a range (low, high) with "
            f"{low_min} <= low <= high"
        )


def _random_len(rng: random.Random, full: int, range_ratio: float) -> int:
    """bench_serving's ``compute_random_lens`` for one value: uniform in
    ``[max(int(full * range_ratio), 1), full]``."""
    if full <= 0:
        return 0
    return rng.randint(max(int(full * range_ratio), 1), full)


@dataclass(frozen=True)
class SharedPrefixPrompts:
    """bench_serving's ``generated-shared-prefix`` dataset (``--dataset-name
    generated-shared-prefix``), knob for knob: ``num_groups`` (``--gsp-num-groups``),
    ``prompts_per_group`` (``--gsp-prompts-per-group``), ``system_prompt_len``
    (``--gsp-system-prompt-len``), ``question_len`` (``--gsp-question-len``), ``output_len``
    (``--gsp-output-len``), ``range_ratio`` (``--gsp-range-ratio``: each length is drawn in
    ``[ratio * len, len]``; 1.0, the default, keeps them exact) and ``ordered``
    (``--gsp-ordered``: group by group, not shuffled). Defaults are bench_serving's.

    Drawn in bench_serving's order, seeded by ``seed``: the system prompts' lengths, the
    questions' lengths, the output lengths (from one generator, as bench_serving's numpy), the
    system prompts, the questions (group by group), one draw a word (from another, as its
    Python ``random``); then the requests, group by group, shuffled unless ``ordered``. With
    exact lengths (``range_ratio`` 1) and bench_serving's ``--seed``, the requests go out in
    bench_serving's order (``benchmarks/peer_bench_serving.py`` checks it). The same
    structure, not the same text: its words are random token ids of the model's tokenizer,
    ours are words of :data:`WORDS`. A workload of more requests than
    ``num_groups * prompts_per_group`` cycles through them.
    """

    shape: ClassVar[str] = "shared-prefix"

    num_groups: int = 64
    prompts_per_group: int = 16
    system_prompt_len: int = 2048
    question_len: int = 128
    output_len: int = 256
    range_ratio: float = 1.0
    ordered: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        problems = [
            f"{name}={getattr(self, name)} (needs >= {least})"
            for name, least in (
                ("num_groups", 1),
                ("prompts_per_group", 1),
                ("system_prompt_len", 0),
                ("question_len", 1),
                ("output_len", 1),
            )
            if getattr(self, name) < least
        ]
        if not 0 < self.range_ratio <= 1:
            problems.append(f"range_ratio={self.range_ratio} (needs 0 < ratio <= 1)")
        if problems:
            raise ConfigError("invalid SharedPrefixPrompts: " + "; ".join(problems))

    @property
    def total(self) -> int:
        """Number of prompts: groups x prompts per group."""
        return self.num_groups * self.prompts_per_group

    @functools.cached_property
    def _rows(self) -> list[tuple[int, str, int]]:
        """(group, prompt, output length) of every request, in sending order."""
        # Two generators, as bench_serving has (numpy's for the lengths, Python's for the text
        # and the shuffle): the words take one draw each (``choices``, as its ``gen_prompt_ids``)
        # and then the shuffle, so with exact lengths (range_ratio 1) and the same seed the
        # requests go out in the order bench_serving's ``--seed`` sends them.
        lengths, rng = random.Random(self.seed), random.Random(self.seed)
        groups, per = self.num_groups, self.prompts_per_group
        system_lens = [
            _random_len(lengths, self.system_prompt_len, self.range_ratio) for _ in range(groups)
        ]
        question_lens = [
            _random_len(lengths, self.question_len, self.range_ratio) for _ in range(groups * per)
        ]
        output_lens = [
            _random_len(lengths, self.output_len, self.range_ratio) for _ in range(groups * per)
        ]
        systems = [_words(rng, n) for n in system_lens]
        questions = [_words(rng, n) for n in question_lens]
        rows = [
            (slot // per, _join(systems[slot // per], questions[slot]), output_lens[slot])
            for slot in range(groups * per)
        ]
        if not self.ordered:
            rng.shuffle(rows)
        return rows

    def groups(self, count: int) -> list[int]:
        """The group (the shared system prompt's index) of each of ``count`` requests."""
        rows = self._rows
        return [rows[i % len(rows)][0] for i in range(count)]

    def prompts(self, count: int) -> list[str]:
        """``count`` prompts in sending order (group by group, shuffled unless ``ordered``)."""
        rows = self._rows
        return [rows[i % len(rows)][1] for i in range(count)]

    def output_lengths(self, count: int) -> list[int] | None:
        """Each prompt's drawn output length, as bench_serving draws them."""
        rows = self._rows
        return [rows[i % len(rows)][2] for i in range(count)]

    @property
    def label(self) -> str:
        """A readable name, e.g. ``shared-prefix-64x16``."""
        return f"shared-prefix-{self.num_groups}x{self.prompts_per_group}"

    def canonical(self) -> dict[str, object]:
        """Every knob that shapes the prompts (the baseline key's part)."""
        return {
            "source": "shared-prefix",
            "num_groups": self.num_groups,
            "prompts_per_group": self.prompts_per_group,
            "system_prompt_len": self.system_prompt_len,
            "question_len": self.question_len,
            "output_len": self.output_len,
            "range_ratio": self.range_ratio,
            "ordered": self.ordered,
            "seed": self.seed,
            # the order of draws (bench_serving's since this key): a new digest, so a baseline
            # of the earlier order is not compared with this one
            "draws": "bench_serving",
        }


def _join(prefix: str, rest: str) -> str:
    return f"{prefix}{SEPARATOR}{rest}" if prefix else rest


@dataclass(frozen=True)
class ConversationPrompts:
    """``conversations`` conversations of ``turns`` turns each: the questions of every turn.

    The load generator sends turn ``t`` of a conversation as its history (every earlier
    question and the server's reply to it, as it streamed) followed by the new question: on
    chat as messages, on completions and ``/generate`` as the text ``q1 + reply1 + "\\n\\n" +
    q2 ...``, so each turn's prompt starts with the tokens the server has just seen. Between
    two turns a conversation waits ``think_time_s`` (a float, or a range drawn per turn). With
    ``system_prompt_len``, one system prompt of that many tokens, the same in every
    conversation, opens each first question. Questions are ``question_len`` tokens (or drawn
    in a range), seeded by ``seed``; :meth:`prompts` gives them conversation by conversation.
    """

    shape: ClassVar[str] = "multi-turn"

    conversations: int = 8
    turns: int = 4
    question_len: int | tuple[int, int] = 64
    system_prompt_len: int = 0
    think_time_s: float | tuple[float, float] = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        problems: list[str] = []
        if self.conversations < 1:
            problems.append(f"conversations={self.conversations} (needs >= 1)")
        if self.turns < 1:
            problems.append(f"turns={self.turns} (needs >= 1)")
        if self.system_prompt_len < 0:
            problems.append(f"system_prompt_len={self.system_prompt_len} (needs >= 0)")
        low, high = self._think
        if not (0 <= low <= high and math.isfinite(high)):
            problems.append(
                f"think_time_s={self.think_time_s!r} (seconds >= 0, or a range (low, high))"
            )
        if problems:
            raise ConfigError("invalid ConversationPrompts: " + "; ".join(problems))
        _check_range("ConversationPrompts", "question_len", self.question_len)

    @property
    def _think(self) -> tuple[float, float]:
        if isinstance(self.think_time_s, tuple):
            return float(self.think_time_s[0]), float(self.think_time_s[1])
        return float(self.think_time_s), float(self.think_time_s)

    @property
    def total(self) -> int:
        """Number of turns over all conversations."""
        return self.conversations * self.turns

    @functools.cached_property
    def _drawn(self) -> tuple[list[str], list[float]]:
        """The questions (conversation by conversation) and the pause before each."""
        rng = random.Random(self.seed)
        system = _words(rng, self.system_prompt_len)
        low, high = _bounds(self.question_len)
        think_low, think_high = self._think
        questions: list[str] = []
        pauses: list[float] = []
        for _ in range(self.conversations):
            for turn in range(self.turns):
                text = _words(rng, rng.randint(low, high))
                questions.append(_join(system, text) if turn == 0 else text)
                pause = 0.0 if turn == 0 else rng.uniform(think_low, think_high)
                pauses.append(pause)
        return questions, pauses

    def prompts(self, count: int) -> list[str]:
        """The new question of each turn, conversation by conversation."""
        return self._drawn[0][:count]

    def output_lengths(self, count: int) -> list[int] | None:
        """None: every turn asks for the workload's ``output_tokens``."""
        return None

    def session_turns(self) -> list[int]:
        """How many turns each conversation has, in order."""
        return [self.turns] * self.conversations

    def think_times(self) -> list[float]:
        """The pause before each turn after the first, in seconds."""
        return list(self._drawn[1])

    @property
    def label(self) -> str:
        """A readable name, e.g. ``multi-turn-8x4``."""
        return f"multi-turn-{self.conversations}x{self.turns}"

    def canonical(self) -> dict[str, object]:
        """Every knob that shapes the conversations (the baseline key's part)."""
        return {
            "source": "multi-turn",
            "conversations": self.conversations,
            "turns": self.turns,
            "question_len": list(_bounds(self.question_len)),
            "system_prompt_len": self.system_prompt_len,
            "think_time_s": list(self._think),
            "seed": self.seed,
        }


@dataclass(frozen=True)
class TraceRequest:
    """One line of a Mooncake trace: arrival (ms), lengths, and the hashes of its blocks."""

    timestamp: float
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]


_TRACE_FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")


def _trace_line(path: Path, number: int, line: str) -> TraceRequest:
    where = f"trace file {path}:{number}"
    try:
        row: Any = json.loads(line)
    except ValueError as exc:
        raise ConfigError(f"{where}: not JSON ({exc.args[0]}); fix or delete the line") from None
    if not isinstance(row, dict):
        raise ConfigError(
            f"{where}: a JSON object with {', '.join(_TRACE_FIELDS)} is needed, got "
            f"{type(row).__name__}"
        )
    missing = [name for name in _TRACE_FIELDS if name not in row]
    if missing:
        raise ConfigError(
            f"{where}: field {missing[0]!r} is missing (a Mooncake trace line has "
            f"{', '.join(_TRACE_FIELDS)})"
        )

    def bad(name: str, wanted: str) -> ConfigError:
        return ConfigError(f"{where}: field {name!r} must be {wanted}, got {row[name]!r}")

    stamp = row["timestamp"]
    if (
        isinstance(stamp, bool)
        or not isinstance(stamp, (int, float))
        or not (math.isfinite(stamp) and stamp >= 0)
    ):
        raise bad("timestamp", "a time in milliseconds >= 0")
    for name in ("input_length", "output_length"):
        value = row[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad(name, "a whole number of tokens >= 1")
    hashes = row["hash_ids"]
    if not isinstance(hashes, list) or any(
        isinstance(h, bool) or not isinstance(h, int) for h in hashes
    ):
        raise bad("hash_ids", "a list of integers (one per block)")
    return TraceRequest(float(stamp), row["input_length"], row["output_length"], tuple(hashes))


@dataclass(frozen=True)
class MooncakeTrace:
    """A Mooncake-format trace (JSON Lines: ``timestamp`` in ms, ``input_length``,
    ``output_length``, ``hash_ids``), replayed on its timestamps.

    Requests go in timestamp order (as bench_serving sorts them), each at its offset from the
    first times ``time_scale`` (1.0: as recorded; 0.5: twice as fast; bench_serving's
    ``--mooncake-slowdown-factor``), and ask for ``output_length`` tokens. A request's prompt
    is its blocks' words: block ``h`` is ``block_size`` words drawn from ``(seed, h)`` alone, so
    two requests with the same leading ``hash_ids`` share that prefix token for token, and a
    block's words are the same wherever it appears. The prompt is cut to ``input_length``
    words; a request longer than its blocks gets words of its own after them. Mooncake's block
    is 512 tokens. bench_serving builds these prompts otherwise (each hash id followed by 128
    copies of "hi"), which shares prefixes at other lengths than the trace's.

    A line that is not such an object is refused with one line naming the file, the line and
    the field.
    """

    shape: ClassVar[str] = "trace"

    path: Path
    block_size: int = 512
    time_scale: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.block_size < 1:
            raise ConfigError(f"MooncakeTrace block_size={self.block_size}: needs >= 1")
        if not (self.time_scale > 0 and math.isfinite(self.time_scale)):
            raise ConfigError(
                f"MooncakeTrace time_scale={self.time_scale}: needs a finite factor > 0 "
                "(1.0 replays as recorded, 0.5 twice as fast)"
            )

    @functools.cached_property
    def requests(self) -> list[TraceRequest]:
        """The trace's requests in timestamp order (read once per source)."""
        path = Path(self.path)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"trace file {path}: cannot read it: {exc}") from None
        rows = [_trace_line(path, n, line) for n, line in enumerate(lines, 1) if line.strip()]
        if not rows:
            raise ConfigError(f"trace file {path}: no requests in it")
        return sorted(rows, key=lambda r: r.timestamp)

    def _take(self, count: int) -> list[TraceRequest]:
        rows = self.requests
        if count > len(rows):
            raise ConfigError(
                f"trace file {self.path}: {count} requests asked for, the trace has {len(rows)}"
            )
        return rows[:count]

    @functools.cached_property
    def _texts(self) -> list[str]:
        """The prompts built so far, in order (every round asks for them again: a trace of
        1000 requests of ~8k tokens takes ~3 s to build)."""
        return []

    def prompts(self, count: int) -> list[str]:
        """``count`` prompts built from the trace's block hashes (equal hashes, equal blocks)."""
        rows = self._take(count)
        texts = self._texts
        blocks: dict[int, list[str]] = {}

        def block(h: int) -> list[str]:
            if h not in blocks:
                rng = random.Random(f"mooncake:{self.seed}:{h}")
                blocks[h] = rng.choices(WORDS, k=self.block_size)
            return blocks[h]

        for index in range(len(texts), count):
            row = rows[index]
            words: list[str] = []
            for h in row.hash_ids:
                if len(words) >= row.input_length:
                    break
                words.extend(block(h))
            if len(words) < row.input_length:
                own = random.Random(f"mooncake:{self.seed}:request:{index}")
                words.extend(own.choices(WORDS, k=row.input_length - len(words)))
            texts.append(" ".join(words[: row.input_length]))
        return texts[:count]

    def output_lengths(self, count: int) -> list[int] | None:
        """The trace's output lengths."""
        return [row.output_length for row in self._take(count)]

    def offsets(self, count: int) -> list[float]:
        """Seconds from the first request's start to each request's, scaled."""
        rows = self._take(count)
        first = rows[0].timestamp
        return [(row.timestamp - first) / 1000.0 * self.time_scale for row in rows]

    @property
    def label(self) -> str:
        """``trace-<file name>``."""
        return f"trace-{Path(self.path).name}"

    def canonical(self) -> dict[str, object]:
        """The file's content digest and how it is replayed."""
        return {
            "source": "mooncake-trace",
            "sha256": file_sha256(Path(self.path)),
            "block_size": self.block_size,
            "time_scale": self.time_scale,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class LongContextPrompts:
    """Long prompts: a document of ``context_len`` tokens (or drawn in a range) followed by a
    question of ``question_len`` tokens.

    ``documents=0`` gives every request a document of its own (prefill of long inputs, no
    sharing); ``documents=k`` draws ``k`` documents and request ``i`` asks its own question
    about document ``i % k`` (many questions on a few long documents: what the prefix cache
    is for).
    """

    shape: ClassVar[str] = "long-context"

    context_len: int | tuple[int, int] = (8192, 32768)
    question_len: int = 32
    documents: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        _check_range("LongContextPrompts", "context_len", self.context_len)
        if self.question_len < 0 or self.documents < 0:
            raise ConfigError(
                f"LongContextPrompts question_len={self.question_len}, documents="
                f"{self.documents}: need >= 0 (documents=0: a document per request)"
            )

    def prompts(self, count: int) -> list[str]:
        """``count`` prompts: a long document and a question each."""
        rng = random.Random(self.seed)
        low, high = _bounds(self.context_len)
        shared = [_words(rng, rng.randint(low, high)) for _ in range(self.documents)]
        out: list[str] = []
        for i in range(count):
            document = shared[i % len(shared)] if shared else _words(rng, rng.randint(low, high))
            out.append(_join(document, _words(rng, self.question_len)))
        return out

    def output_lengths(self, count: int) -> list[int] | None:
        """None: every request asks for the workload's ``output_tokens``."""
        return None

    @property
    def label(self) -> str:
        """A readable name from the document lengths."""
        low, high = _bounds(self.context_len)
        span = f"{low}" if low == high else f"{low}-{high}"
        shared = f"-{self.documents}docs" if self.documents else ""
        return f"long-context-{span}{shared}"

    def canonical(self) -> dict[str, object]:
        """Every knob that shapes the prompts (the baseline key's part)."""
        return {
            "source": "long-context",
            "context_len": list(_bounds(self.context_len)),
            "question_len": self.question_len,
            "documents": self.documents,
            "seed": self.seed,
        }
