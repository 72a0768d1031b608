"""What a benchmark sends: prompts and the arrival pattern, as small frozen dataclasses.

Why frozen dataclasses with factories (:meth:`Workload.single_stream`,
:meth:`Workload.fixed_concurrency`, :meth:`Workload.rate`, :meth:`Workload.sweep`): a workload
is a value that appears in test ids, in ``extra_info`` and in the summary; it must be hashable,
printable and impossible to change between rounds. Prompts are random words (one word is one
token on the simulator's tokenizer and on common BPE vocabularies), seeded so every round and
every config sees the same text.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import ConfigError
from ..sim.tokenizer import VOCAB
from .datasets import ConversationPrompts, LongContextPrompts, MooncakeTrace, SharedPrefixPrompts
from .identity import CANONICAL_VERSION, file_sha256, text_sha256
from .slo import Slo

__all__ = [
    "API",
    "ConversationPrompts",
    "JsonlPrompts",
    "LongContextPrompts",
    "MooncakeTrace",
    "PromptList",
    "PromptSource",
    "RandomPrompts",
    "ShareGPTPrompts",
    "SharedPrefixPrompts",
    "SloSearch",
    "Workload",
]

#: chat: /v1/chat/completions; completions: /v1/completions (bench_serving's ``sglang-oai``);
#: generate: SGLang's native /generate (bench_serving's default ``sglang`` backend).
API = Literal["chat", "completions", "generate"]
Kind = Literal["single-stream", "concurrency", "rate", "trace"]

#: The default levels of :meth:`Workload.sweep`: powers of two up to 64.
DEFAULT_SWEEP = (1, 2, 4, 8, 16, 32, 64)

#: Common English words: one token each on the simulator (its own vocabulary) and, with a
#: leading space, on most BPE vocabularies, so a prompt of N words is close to N tokens anywhere.
WORDS: tuple[str, ...] = VOCAB


@dataclass(frozen=True)
class RandomPrompts:
    """Random-word prompts of ``length`` tokens, or a length drawn from ``(low, high)``."""

    length: int | tuple[int, int] = 128
    seed: int = 0

    def __post_init__(self) -> None:
        low, high = self.bounds
        if low < 1 or high < low:
            raise ConfigError(
                f"RandomPrompts length={self.length!r}: give a length >= 1 or a range "
                "(low, high) with 1 <= low <= high"
            )

    @property
    def bounds(self) -> tuple[int, int]:
        """(shortest, longest) prompt length in words; equal for a fixed length."""
        if isinstance(self.length, tuple):
            return int(self.length[0]), int(self.length[1])
        return int(self.length), int(self.length)

    def prompts(self, count: int) -> list[str]:
        """``count`` prompts; the same seed gives the same prompts."""
        rng = random.Random(self.seed)
        low, high = self.bounds
        out: list[str] = []
        for _ in range(count):
            n = rng.randint(low, high)
            out.append(" ".join(rng.choice(WORDS) for _ in range(n)))
        return out

    def output_lengths(self, count: int) -> list[int] | None:
        """None: every request asks for the workload's ``output_tokens``."""
        return None

    @property
    def label(self) -> str:
        """A readable name for tables, e.g. ``random-512`` or ``random-100-900``."""
        low, high = self.bounds
        return f"random-{low}" if low == high else f"random-{low}-{high}"

    def canonical(self) -> dict[str, object]:
        """What makes these prompts these prompts (see :meth:`Workload.canonical`)."""
        low, high = self.bounds
        return {"source": "random", "length": [low, high], "seed": self.seed}


@dataclass(frozen=True)
class JsonlPrompts:
    """Prompts from a JSON Lines file: one object per line with a string field ``key``.

    Requests cycle through the file when the workload asks for more prompts than it has.
    """

    path: Path
    key: str = "prompt"

    def prompts(self, count: int) -> list[str]:
        """``count`` prompts: the file's, in order, from the start again when it runs out."""
        texts = self._read()
        return [texts[i % len(texts)] for i in range(count)]

    def _read(self) -> list[str]:
        try:
            lines = Path(self.path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"prompt file {self.path}: cannot read it: {exc}") from exc
        texts: list[str] = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ConfigError(
                    f"prompt file {self.path}:{number}: not JSON ({exc.args[0]})"
                ) from exc
            value = row.get(self.key) if isinstance(row, dict) else None
            if not isinstance(value, str) or not value:
                raise ConfigError(
                    f"prompt file {self.path}:{number}: needs a non-empty string field {self.key!r}"
                )
            texts.append(value)
        if not texts:
            raise ConfigError(f"prompt file {self.path}: no prompts in it")
        return texts

    def output_lengths(self, count: int) -> list[int] | None:
        """None: every request asks for the workload's ``output_tokens``."""
        return None

    @property
    def label(self) -> str:
        """The file's name."""
        return Path(self.path).name

    def canonical(self) -> dict[str, object]:
        """The file's content digest, not its name: a renamed file is the same workload, an
        edited one is not."""
        return {"source": "jsonl", "sha256": file_sha256(Path(self.path)), "key": self.key}


@dataclass(frozen=True)
class ShareGPTPrompts:
    """Conversations from a ShareGPT-format JSON file, sampled as SGLang's bench_serving does.

    The file is a JSON list of ``{"conversations": [{"from": "human", "value": ...},
    {"from": "gpt", "value": ...}, ...]}``. Each conversation gives one request: its first
    human turn is the prompt and the reply that follows is the reference completion.
    Conversations are shuffled with ``seed`` and filtered as bench_serving filters them
    (prompt and reply of at least 4 tokens, prompt at most ``max_prompt_tokens``, prompt plus
    reply at most ``max_total_tokens``); tokens are counted as whitespace-separated words, which
    is exact on the simulator and close on BPE vocabularies (no tokenizer download needed).

    ``dataset_output_len=True`` makes each request ask for as many tokens as its reference
    reply had (bench_serving's default without ``--sharegpt-output-len``); otherwise every
    request asks for the workload's ``output_tokens``.
    """

    path: Path
    seed: int = 0
    dataset_output_len: bool = False
    max_prompt_tokens: int = 1024
    max_total_tokens: int = 2048

    def prompts(self, count: int) -> list[str]:
        """``count`` first-turn prompts: the dataset's, in order, again from the start."""
        pairs = self._pairs
        return [pairs[i % len(pairs)][0] for i in range(count)]

    def output_lengths(self, count: int) -> list[int] | None:
        """The dataset's answer lengths with ``dataset_output_len``, else None."""
        if not self.dataset_output_len:
            return None
        pairs = self._pairs
        return [pairs[i % len(pairs)][1] for i in range(count)]

    @functools.cached_property
    def _pairs(self) -> list[tuple[str, int]]:
        """(prompt, reply tokens) of every usable conversation, in seeded order; read once per
        source (the usual ShareGPT file is ~650 MB, and every round asks for prompts and
        lengths)."""
        try:
            data = json.loads(Path(self.path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"ShareGPT file {self.path}: cannot read it: {exc}") from exc
        except ValueError as exc:
            raise ConfigError(f"ShareGPT file {self.path}: not JSON ({exc.args[0]})") from exc
        if not isinstance(data, list):
            raise ConfigError(
                f"ShareGPT file {self.path}: expected a JSON list of conversations, "
                f"got {type(data).__name__}"
            )
        pairs: list[tuple[str, int]] = []
        for entry in data:
            turn = _first_exchange(entry)
            if turn is None:
                continue
            prompt, reply = turn
            prompt_len, reply_len = len(prompt.split()), len(reply.split())
            if prompt_len < 4 or reply_len < 4:
                continue
            if (
                prompt_len > self.max_prompt_tokens
                or prompt_len + reply_len > self.max_total_tokens
            ):
                continue
            pairs.append((prompt, reply_len))
        if not pairs:
            raise ConfigError(
                f"ShareGPT file {self.path}: no usable conversation (needs a human turn followed "
                "by a reply, each of at least 4 tokens, within the length limits)"
            )
        random.Random(self.seed).shuffle(pairs)
        return pairs

    @property
    def label(self) -> str:
        """``sharegpt-<file name>``."""
        return f"sharegpt-{Path(self.path).name}"

    def canonical(self) -> dict[str, object]:
        """The file's content digest and every setting of the sampling."""
        return {
            "source": "sharegpt",
            "sha256": file_sha256(Path(self.path)),
            "seed": self.seed,
            "dataset_output_len": self.dataset_output_len,
            "max_prompt_tokens": self.max_prompt_tokens,
            "max_total_tokens": self.max_total_tokens,
        }


def _first_exchange(entry: object) -> tuple[str, str] | None:
    """The first human turn of a ShareGPT conversation and the reply after it."""
    turns = entry.get("conversations") if isinstance(entry, dict) else None
    if not isinstance(turns, list):
        return None
    for ask, answer in itertools.pairwise(turns):
        if not (isinstance(ask, dict) and isinstance(answer, dict)):
            continue
        if ask.get("from") in ("human", "user") and answer.get("from") in ("gpt", "assistant"):
            prompt, reply = ask.get("value"), answer.get("value")
            if isinstance(prompt, str) and isinstance(reply, str):
                return prompt, reply
    return None


@dataclass(frozen=True)
class PromptList:
    """Given prompts, in order (an eval's questions); ``name`` labels them in results."""

    texts: tuple[str, ...]
    name: str = "prompts"

    def __post_init__(self) -> None:
        if not self.texts:
            raise ConfigError(f"PromptList {self.name!r}: no prompts")

    def prompts(self, count: int) -> list[str]:
        return [self.texts[i % len(self.texts)] for i in range(count)]

    def output_lengths(self, count: int) -> list[int] | None:
        """None: every request asks for the workload's ``output_tokens``."""
        return None

    @property
    def label(self) -> str:
        return self.name

    def canonical(self) -> dict[str, object]:
        """The texts' digest; ``name`` is only a label."""
        return {"source": "list", "sha256": text_sha256(json.dumps(list(self.texts)))}


PromptSource = (
    RandomPrompts
    | JsonlPrompts
    | ShareGPTPrompts
    | PromptList
    | SharedPrefixPrompts
    | ConversationPrompts
    | MooncakeTrace
    | LongContextPrompts
)


@dataclass(frozen=True)
class Workload:
    """One benchmark run: which requests, how they arrive, and the bounds on waiting for them.

    ``concurrency`` caps requests in flight (all of them start at once when ``request_rate`` is
    None); ``request_rate`` sends arrivals at that mean rate per second (seeded by ``seed``),
    spaced as bench_serving spaces them: gamma-distributed gaps of shape ``burstiness``
    (1.0: Poisson; below 1: burstier; ``math.inf``: evenly spaced, a constant rate).
    ``warmup_requests`` go first and are not measured; ``flush_cache`` then empties the
    server's prefix cache (``/flush_cache``, bench_serving's ``--flush-cache``), so that every
    round starts from the same cold cache rather than the prompts of the rounds before it.
    ``request_timeout_s`` bounds one
    request; ``total_timeout_s`` bounds the whole run: what is still running then is cancelled
    and counted as failed.
    """

    kind: Kind
    num_requests: int
    output_tokens: int
    prompts: PromptSource = field(default_factory=RandomPrompts)
    concurrency: int | None = None
    request_rate: float | None = None
    burstiness: float = 1.0
    api: API = "chat"
    temperature: float = 0.0
    ignore_eos: bool = True
    warmup_requests: int = 1
    seed: int = 0
    request_timeout_s: float = 300.0
    total_timeout_s: float = 1800.0
    flush_cache: bool = False

    def __post_init__(self) -> None:
        problems: list[str] = []
        if self.num_requests < 1:
            problems.append(f"num_requests={self.num_requests} (needs >= 1)")
        if self.output_tokens < 1:
            problems.append(f"output_tokens={self.output_tokens} (needs >= 1)")
        if self.concurrency is not None and self.concurrency < 1:
            problems.append(f"concurrency={self.concurrency} (needs >= 1)")
        if self.request_rate is not None and not (
            self.request_rate > 0 and math.isfinite(self.request_rate)
        ):
            problems.append(f"request_rate={self.request_rate} (needs a finite rate > 0)")
        if not self.burstiness > 0:
            problems.append(
                f"burstiness={self.burstiness} (needs > 0; math.inf for a constant rate)"
            )
        if self.api not in ("chat", "completions", "generate"):
            problems.append(f"api={self.api!r} (use 'chat', 'completions' or 'generate')")
        if self.warmup_requests < 0:
            problems.append(f"warmup_requests={self.warmup_requests} (needs >= 0)")
        if not (self.request_timeout_s > 0 and self.total_timeout_s > 0):
            problems.append("request_timeout_s and total_timeout_s must be > 0")
        problems += self._shape_problems()
        if problems:
            raise ConfigError("invalid Workload: " + "; ".join(problems))

    def _shape_problems(self) -> list[str]:
        """What the conversation and trace sources need of the rest (they set the requests'
        count and, for a trace, the arrivals)."""
        source = self.prompts
        if isinstance(source, ConversationPrompts) and self.num_requests != source.total:
            return [
                f"num_requests={self.num_requests} with {source.label} (needs "
                f"{source.total}: conversations x turns; Workload.multi_turn sets it)"
            ]
        if (self.kind == "trace") != isinstance(source, MooncakeTrace):
            return ["a trace replays on its own timestamps: build it with Workload.trace(path)"]
        if self.kind == "trace" and self.request_rate is not None:
            return [
                "request_rate with a trace (its timestamps are the arrivals; time_scale "
                "speeds them up or slows them down)"
            ]
        return []

    # -- the three shapes ---------------------------------------------------------------------

    @classmethod
    def single_stream(
        cls,
        output_tokens: int = 256,
        *,
        prompt_tokens: int = 32,
        requests: int = 1,
        **options: object,
    ) -> Workload:
        """The seeds' measurement: one request at a time, greedy, exactly ``output_tokens``."""
        options.setdefault("prompts", RandomPrompts(prompt_tokens))
        return cls(
            kind="single-stream",
            num_requests=requests,
            output_tokens=output_tokens,
            concurrency=1,
            **options,  # type: ignore[arg-type]
        )

    @classmethod
    def fixed_concurrency(
        cls,
        concurrency: int,
        num_requests: int | None = None,
        output_tokens: int = 128,
        **options: object,
    ) -> Workload:
        """``concurrency`` requests in flight at all times (default: 4 rounds' worth)."""
        return cls(
            kind="concurrency",
            num_requests=num_requests if num_requests is not None else 4 * concurrency,
            output_tokens=output_tokens,
            concurrency=concurrency,
            **options,  # type: ignore[arg-type]
        )

    @classmethod
    def rate(
        cls,
        request_rate: float,
        num_requests: int = 64,
        output_tokens: int = 128,
        *,
        max_concurrency: int | None = None,
        burstiness: float = 1.0,
        **options: object,
    ) -> Workload:
        """Arrivals at ``request_rate`` per second (Poisson unless ``burstiness`` says
        otherwise), optionally capped in flight."""
        return cls(
            kind="rate",
            num_requests=num_requests,
            output_tokens=output_tokens,
            request_rate=request_rate,
            concurrency=max_concurrency,
            burstiness=burstiness,
            **options,  # type: ignore[arg-type]
        )

    @classmethod
    def sweep(
        cls,
        concurrencies: Sequence[int] = DEFAULT_SWEEP,
        *,
        rounds: int = 4,
        output_tokens: int = 128,
        **options: object,
    ) -> list[Workload]:
        """One fixed-concurrency workload per level, ``rounds * level`` requests each.

        For ``@pytest.mark.parametrize("workload", Workload.sweep([1, 8, 64]), ids=str)``: the
        test ids are the workloads' names (``concurrency-1``, ``concurrency-8``, ...). Why a list
        of workloads rather than one run that steps through levels: each level then gets its own
        pytest-benchmark entry, baseline and line in the table, and a failing level fails alone.
        """
        levels = list(concurrencies)
        bad = [c for c in levels if not isinstance(c, int) or isinstance(c, bool) or c < 1]
        if not levels or bad or len(set(levels)) != len(levels) or rounds < 1:
            raise ConfigError(
                f"Workload.sweep(concurrencies={levels!r}, rounds={rounds}): give distinct "
                "integer levels >= 1, e.g. [1, 4, 16, 64], and rounds >= 1"
            )
        return [
            cls.fixed_concurrency(c, rounds * c, output_tokens, **options) for c in sorted(levels)
        ]

    @classmethod
    def shared_prefix(
        cls,
        num_groups: int = 64,
        prompts_per_group: int = 16,
        system_prompt_len: int = 2048,
        question_len: int = 128,
        output_len: int = 256,
        *,
        concurrency: int | None = None,
        request_rate: float | None = None,
        range_ratio: float = 1.0,
        ordered: bool = False,
        **options: object,
    ) -> Workload:
        """bench_serving's ``generated-shared-prefix`` dataset (its ``--gsp-*`` knobs and
        defaults, :class:`~.datasets.SharedPrefixPrompts`): ``num_groups * prompts_per_group``
        requests, each a group's system prompt and a question of its own.

        Arrivals as :meth:`fixed_concurrency` with ``concurrency``, as :meth:`rate` with
        ``request_rate`` (``concurrency`` then caps requests in flight), else all at once
        (bench_serving's default, an infinite rate). ``seed`` seeds the text too.
        """
        source = SharedPrefixPrompts(
            num_groups,
            prompts_per_group,
            system_prompt_len,
            question_len,
            output_len,
            range_ratio=range_ratio,
            ordered=ordered,
            seed=int(options.get("seed", 0)),  # type: ignore[call-overload]
        )
        return cls._arriving(source, source.total, output_len, concurrency, request_rate, options)

    @classmethod
    def multi_turn(
        cls,
        conversations: int = 8,
        turns: int = 4,
        question_len: int | tuple[int, int] = 64,
        output_tokens: int = 64,
        *,
        concurrency: int | None = None,
        request_rate: float | None = None,
        think_time_s: float | tuple[float, float] = 0.0,
        system_prompt_len: int = 0,
        **options: object,
    ) -> Workload:
        """``conversations`` conversations of ``turns`` turns (:class:`~.datasets.
        ConversationPrompts`): each turn sends the history and a new question, ``think_time_s``
        after the previous reply ended. At most ``concurrency`` conversations are open at once
        (a conversation holds its place while it thinks); with ``request_rate``, conversations
        start at that mean rate. Every turn is one measured request."""
        source = ConversationPrompts(
            conversations,
            turns,
            question_len,
            system_prompt_len,
            think_time_s,
            seed=int(options.get("seed", 0)),  # type: ignore[call-overload]
        )
        return cls._arriving(
            source, source.total, output_tokens, concurrency, request_rate, options
        )

    @classmethod
    def long_context(
        cls,
        context_len: int | tuple[int, int] = (8192, 32768),
        num_requests: int = 8,
        output_tokens: int = 128,
        *,
        question_len: int = 32,
        documents: int = 0,
        concurrency: int | None = 1,
        request_rate: float | None = None,
        **options: object,
    ) -> Workload:
        """Long prompts (:class:`~.datasets.LongContextPrompts`): a document of
        ``context_len`` tokens and a question; ``documents=k`` shares ``k`` documents among
        all the questions. One at a time by default."""
        source = LongContextPrompts(
            context_len,
            question_len,
            documents,
            seed=int(options.get("seed", 0)),  # type: ignore[call-overload]
        )
        return cls._arriving(
            source, num_requests, output_tokens, concurrency, request_rate, options
        )

    @classmethod
    def trace(
        cls,
        path: str | Path,
        *,
        time_scale: float = 1.0,
        block_size: int = 512,
        num_requests: int | None = None,
        max_concurrency: int | None = None,
        **options: object,
    ) -> Workload:
        """Replay a Mooncake-format trace (:class:`~.datasets.MooncakeTrace`) on its timestamps
        times ``time_scale``: its first ``num_requests`` requests (all by default), each asking
        for its ``output_length``, at most ``max_concurrency`` in flight when given."""
        source = MooncakeTrace(
            Path(path),
            block_size,
            time_scale,
            seed=int(options.get("seed", 0)),  # type: ignore[call-overload]
        )
        count = num_requests if num_requests is not None else len(source.requests)
        options.setdefault("output_tokens", 16)  # the warmup request's; the trace sets the rest
        return cls(
            kind="trace",
            num_requests=count,
            prompts=source,
            concurrency=max_concurrency,
            **options,  # type: ignore[arg-type]
        )

    @classmethod
    def _arriving(
        cls,
        source: PromptSource,
        num_requests: int,
        output_tokens: int,
        concurrency: int | None,
        request_rate: float | None,
        options: dict[str, object],
    ) -> Workload:
        """The workload of ``source`` at a rate, or at a fixed concurrency (all at once when
        neither is given)."""
        if "prompts" in options:
            raise ConfigError("this workload makes its own prompts; give its knobs, not prompts=")
        if request_rate is not None:
            return cls.rate(
                request_rate,
                num_requests,
                output_tokens,
                max_concurrency=concurrency,
                prompts=source,
                **options,  # type: ignore[arg-type]
            )
        return cls.fixed_concurrency(
            concurrency or num_requests, num_requests, output_tokens, prompts=source, **options
        )

    @classmethod
    def max_rate(
        cls,
        slo: Slo | str,
        *,
        low: float = 0.5,
        high: float = 64.0,
        output_tokens: int = 128,
        **options: object,
    ) -> SloSearch:
        """The highest request rate (req/s) at which ``slo`` holds for ``fraction`` of requests.

        Arrivals are Poisson (``burstiness=math.inf``: constant), seeded by ``seed``. Search
        options: ``precision`` (0.1), ``fraction`` (0.99), ``probe_requests`` (64),
        ``min_probe_requests`` (8), ``probe_time_s`` (10: a probe sends about rate x this many
        requests, within those counts), ``budget_s`` (120); the rest shape each probe, as
        :meth:`rate` takes them. Run it with ``sglang_bench(Workload.max_rate(...))``.
        """
        return _search("rate", slo, low, high, output_tokens, options)

    @classmethod
    def max_concurrency(
        cls,
        slo: Slo | str,
        *,
        low: int = 1,
        high: int = 256,
        output_tokens: int = 128,
        **options: object,
    ) -> SloSearch:
        """The most requests in flight at which ``slo`` holds; options as :meth:`max_rate`."""
        return _search("concurrency", slo, low, high, output_tokens, options)

    # -- derived ------------------------------------------------------------------------------

    def __str__(self) -> str:
        return self.name

    @property
    def name(self) -> str:
        """Short name for tables and ``extra_info``: single-stream, concurrency-64, rate-8;
        prefixed by the prompts' shape when they share prefixes (shared-prefix-concurrency-16,
        multi-turn-rate-2, trace-1x, long-context-single-stream)."""
        if self.kind == "single-stream":
            base = "single-stream"
        elif self.kind == "concurrency":
            base = f"concurrency-{self.concurrency}"
        elif self.kind == "trace":
            assert isinstance(self.prompts, MooncakeTrace)
            return f"trace-{self.prompts.time_scale:g}x"
        else:
            base = f"rate-{self.request_rate:g}"
        shape = getattr(self.prompts, "shape", "")
        return f"{shape}-{base}" if shape else base

    @property
    def shares_prefixes(self) -> bool:
        """Whether requests share prefixes by design: what the cache figures are about."""
        if isinstance(self.prompts, LongContextPrompts):
            return self.prompts.documents > 0
        return bool(getattr(self.prompts, "shape", ""))

    @property
    def arrivals(self) -> str:
        """How requests arrive: ``all at once`` (fixed concurrency), ``poisson``, ``constant``,
        ``gamma(burstiness)`` or ``trace``."""
        if self.kind == "trace":
            return "trace"
        if self.request_rate is None:
            return "all at once"
        if math.isinf(self.burstiness):
            return "constant"
        return "poisson" if self.burstiness == 1.0 else f"gamma({self.burstiness:g})"

    def arrival_delays(self) -> list[float]:
        """Seconds between consecutive session starts (all zero without a rate); a session is
        a request, or a conversation of several (:meth:`session_turns`)."""
        sessions = len(self.session_turns())
        if isinstance(self.prompts, MooncakeTrace):
            offsets = self.prompts.offsets(sessions)
            return [b - a for a, b in itertools.pairwise(offsets)] + [0.0]
        if self.request_rate is None:
            return [0.0] * sessions
        if math.isinf(self.burstiness):
            return [1.0 / self.request_rate] * sessions
        rng = random.Random(self.seed)
        if self.burstiness == 1.0:
            return [rng.expovariate(self.request_rate) for _ in range(sessions)]
        scale = 1.0 / (self.request_rate * self.burstiness)
        return [rng.gammavariate(self.burstiness, scale) for _ in range(sessions)]

    def session_turns(self) -> list[int]:
        """The number of requests of each session, in order: one each, or a conversation's
        turns (sent one after the other, each with the history before it)."""
        if isinstance(self.prompts, ConversationPrompts):
            return self.prompts.session_turns()
        return [1] * self.num_requests

    def think_times(self) -> list[float]:
        """Seconds each request waits after the previous turn of its session ended (0 for a
        session's first request)."""
        if isinstance(self.prompts, ConversationPrompts):
            return self.prompts.think_times()
        return [0.0] * self.num_requests

    def requests(self) -> list[tuple[str, int]]:
        """(prompt, output tokens) of every measured request, in order."""
        prompts = self.prompts.prompts(self.num_requests)
        lengths = self.prompts.output_lengths(self.num_requests)
        if lengths is None:
            lengths = [self.output_tokens] * self.num_requests
        return list(zip(prompts, lengths))

    def canonical(self) -> dict[str, object]:
        """Every parameter that changes the figures, in one JSON-ready form.

        Why: the short :attr:`name` (``single-stream``) says nothing of the output length, the
        API or the prompts, and two workloads that share it must never share a baseline or a
        ranking. Timeouts are left out (they bound a run, they do not shape it); the arrival
        parameters (``burstiness``) only count when there is a rate.
        """
        rated = self.request_rate is not None
        return {
            "version": CANONICAL_VERSION,
            "kind": self.kind,
            "num_requests": self.num_requests,
            "output_tokens": self.output_tokens,
            "prompts": self.prompts.canonical(),
            "concurrency": self.concurrency,
            "request_rate": self.request_rate,
            "burstiness": (
                ("inf" if math.isinf(self.burstiness) else self.burstiness) if rated else None
            ),
            "api": self.api,
            "temperature": self.temperature,
            "ignore_eos": self.ignore_eos,
            "warmup_requests": self.warmup_requests,
            "seed": self.seed,
            # only when set: the workloads from before it keep their digests
            **({"flush_cache": True} if self.flush_cache else {}),
        }

    def describe(self) -> dict[str, object]:
        """A JSON-ready description for ``extra_info``."""
        return {
            "name": self.name,
            "kind": self.kind,
            "num_requests": self.num_requests,
            "output_tokens": self.output_tokens,
            "prompts": self.prompts.label,
            "concurrency": self.concurrency,
            "request_rate": self.request_rate,
            "arrivals": self.arrivals,
            "api": self.api,
            "temperature": self.temperature,
            "ignore_eos": self.ignore_eos,
            "warmup_requests": self.warmup_requests,
            "seed": self.seed,
            **({"flush_cache": True} if self.flush_cache else {}),
        }


SearchKind = Literal["rate", "concurrency"]
_SEARCH_OPTIONS = (
    "precision",
    "fraction",
    "probe_requests",
    "min_probe_requests",
    "probe_time_s",
    "budget_s",
)


@dataclass(frozen=True)
class SloSearch:
    """The question "how much load does this config sustain within ``slo``?", as a value.

    Made by :meth:`Workload.max_rate` / :meth:`Workload.max_concurrency`; run by
    ``sglang_bench(search)`` (:mod:`.search` does the probing). Each probe is an ordinary
    workload shaped like ``shape`` (prompts, output tokens, arrivals, seed) at one level; it
    passes when at least ``fraction`` of its requests meet every bound. The search brackets the
    threshold between ``low`` and ``high`` (doubling, or quadrupling after a probe that is
    clearly under), then bisects until the bracket is within ``precision`` (relative: 0.1 means
    the reported level is within 10 % below the true threshold; for concurrency at least 1).
    Bounds: ``probe_requests`` and ``probe_time_s`` per probe, ``budget_s`` for the search.
    """

    kind: SearchKind
    slo: Slo
    shape: Workload
    low: float
    high: float
    precision: float = 0.1
    fraction: float = 0.99
    probe_requests: int = 64
    min_probe_requests: int = 8
    probe_time_s: float = 10.0
    budget_s: float = 120.0

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not (0 < self.low < self.high and math.isfinite(self.high)):
            problems.append(f"low={self.low:g}, high={self.high:g} (needs 0 < low < high)")
        if self.kind == "concurrency" and not (
            float(self.low).is_integer() and float(self.high).is_integer()
        ):
            problems.append("low and high must be whole numbers of requests in flight")
        if not 0 < self.precision < 1:
            problems.append(f"precision={self.precision:g} (a relative bracket in (0, 1))")
        if not 0 < self.fraction <= 1:
            problems.append(
                f"fraction={self.fraction:g} (the share of requests that must meet the SLO, "
                "in (0, 1])"
            )
        if not 1 <= self.min_probe_requests <= self.probe_requests:
            problems.append(
                f"probe_requests={self.probe_requests}, min_probe_requests="
                f"{self.min_probe_requests} (needs 1 <= min <= probe_requests)"
            )
        if not (self.probe_time_s > 0 and self.budget_s >= self.probe_time_s):
            problems.append(
                f"probe_time_s={self.probe_time_s:g}, budget_s={self.budget_s:g} "
                "(needs 0 < probe_time_s <= budget_s)"
            )
        if problems:
            raise ConfigError(f"invalid SLO search ({self.slo}): " + "; ".join(problems))

    def __str__(self) -> str:
        return self.name

    @property
    def name(self) -> str:
        """``max-rate`` or ``max-concurrency``: the test-id and table name."""
        return f"max-{self.kind}"

    def probe(self, level: float) -> Workload:
        """The workload of one probe at ``level`` (requests/s, or requests in flight)."""
        shape = self.shape
        if self.kind == "concurrency":
            c = int(level)
            count = max(self.min_probe_requests, min(self.probe_requests, 4 * c))
            return Workload(
                kind="concurrency",
                num_requests=count,
                output_tokens=shape.output_tokens,
                prompts=shape.prompts,
                concurrency=c,
                api=shape.api,
                temperature=shape.temperature,
                ignore_eos=shape.ignore_eos,
                warmup_requests=0,
                seed=shape.seed,
                request_timeout_s=shape.request_timeout_s,
                total_timeout_s=2 * self.probe_time_s + shape.request_timeout_s,
                flush_cache=shape.flush_cache,
            )
        count = max(
            self.min_probe_requests, min(self.probe_requests, round(level * self.probe_time_s))
        )
        return Workload(
            kind="rate",
            num_requests=int(count),
            output_tokens=shape.output_tokens,
            prompts=shape.prompts,
            request_rate=level,
            concurrency=shape.concurrency,
            burstiness=shape.burstiness,
            api=shape.api,
            temperature=shape.temperature,
            ignore_eos=shape.ignore_eos,
            warmup_requests=0,
            seed=shape.seed,
            request_timeout_s=shape.request_timeout_s,
            total_timeout_s=2 * self.probe_time_s + shape.request_timeout_s,
            flush_cache=shape.flush_cache,
        )

    def canonical(self) -> dict[str, object]:
        """The search's every setting and its probes' shape (see :meth:`Workload.canonical`):
        two searches that differ in any of them answer different questions."""
        settings = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("kind", "slo", "shape")
        }
        return {
            "version": CANONICAL_VERSION,
            "search": self.kind,
            "slo": str(self.slo),
            **settings,
            "shape": self.shape.canonical(),
        }

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "kind": self.kind,
            "slo": str(self.slo),
            "low": self.low,
            "high": self.high,
            "precision": self.precision,
            "fraction": self.fraction,
            "probe_requests": self.probe_requests,
            "probe_time_s": self.probe_time_s,
            "budget_s": self.budget_s,
            "shape": self.shape.describe(),
        }


def _search(
    kind: SearchKind,
    slo: Slo | str,
    low: float,
    high: float,
    output_tokens: int,
    options: dict[str, object],
) -> SloSearch:
    """Split the search's own options from the probes' shape and build the value."""
    if isinstance(options.get("prompts"), (ConversationPrompts, MooncakeTrace)):
        raise ConfigError(
            f"Workload.max_{kind}: a search sizes its own probes, which conversations and "
            "traces do not allow; search with other prompts (SharedPrefixPrompts, "
            "LongContextPrompts, ...)"
        )
    tuning = {k: options.pop(k) for k in _SEARCH_OPTIONS if k in options}
    if kind == "rate":
        shape = Workload.rate(1.0, 1, output_tokens, **options)  # type: ignore[arg-type]
    else:
        shape = Workload.fixed_concurrency(1, 1, output_tokens, **options)
    return SloSearch(
        kind,
        slo if isinstance(slo, Slo) else Slo.parse(slo),
        shape,
        low,
        high,
        **tuning,  # type: ignore[arg-type]
    )
