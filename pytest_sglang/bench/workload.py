"""What a benchmark sends: prompts and the arrival pattern, as small frozen dataclasses.

Why frozen dataclasses with factories (:meth:`Workload.single_stream`,
:meth:`Workload.fixed_concurrency`, :meth:`Workload.rate`, :meth:`Workload.sweep`): a workload
is a value that appears in test ids, in ``extra_info`` and in the summary; it must be hashable,
printable and impossible to change between rounds. Prompts are random words (one word is one
token on the simulator's tokenizer and on common BPE vocabularies), seeded so every round and
every config sees the same text.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import ConfigError
from ..sim.tokenizer import VOCAB

__all__ = ["API", "JsonlPrompts", "PromptSource", "RandomPrompts", "Workload"]

API = Literal["chat", "generate"]
Kind = Literal["single-stream", "concurrency", "rate"]

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

    @property
    def label(self) -> str:
        low, high = self.bounds
        return f"random-{low}" if low == high else f"random-{low}-{high}"


@dataclass(frozen=True)
class JsonlPrompts:
    """Prompts from a JSON Lines file: one object per line with a string field ``key``.

    Requests cycle through the file when the workload asks for more prompts than it has.
    """

    path: Path
    key: str = "prompt"

    def prompts(self, count: int) -> list[str]:
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

    @property
    def label(self) -> str:
        return Path(self.path).name


PromptSource = RandomPrompts | JsonlPrompts


@dataclass(frozen=True)
class Workload:
    """One benchmark run: which requests, how they arrive, and the bounds on waiting for them.

    ``concurrency`` caps requests in flight (all of them start at once when ``request_rate`` is
    None); ``request_rate`` sends Poisson arrivals at that mean rate per second (seeded by
    ``seed``). ``warmup_requests`` go first and are not measured. ``request_timeout_s`` bounds
    one request; ``total_timeout_s`` bounds the whole run: what is still running then is
    cancelled and counted as failed.
    """

    kind: Kind
    num_requests: int
    output_tokens: int
    prompts: PromptSource = field(default_factory=RandomPrompts)
    concurrency: int | None = None
    request_rate: float | None = None
    api: API = "chat"
    temperature: float = 0.0
    ignore_eos: bool = True
    warmup_requests: int = 1
    seed: int = 0
    request_timeout_s: float = 300.0
    total_timeout_s: float = 1800.0

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
        if self.api not in ("chat", "generate"):
            problems.append(f"api={self.api!r} (use 'chat' or 'generate')")
        if self.warmup_requests < 0:
            problems.append(f"warmup_requests={self.warmup_requests} (needs >= 0)")
        if not (self.request_timeout_s > 0 and self.total_timeout_s > 0):
            problems.append("request_timeout_s and total_timeout_s must be > 0")
        if problems:
            raise ConfigError("invalid Workload: " + "; ".join(problems))

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
        **options: object,
    ) -> Workload:
        """Poisson arrivals at ``request_rate`` per second, optionally capped in flight."""
        return cls(
            kind="rate",
            num_requests=num_requests,
            output_tokens=output_tokens,
            request_rate=request_rate,
            concurrency=max_concurrency,
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

    # -- derived ------------------------------------------------------------------------------

    def __str__(self) -> str:
        return self.name

    @property
    def name(self) -> str:
        """Short name for tables and ``extra_info``: single-stream, concurrency-64, rate-8."""
        if self.kind == "single-stream":
            return "single-stream"
        if self.kind == "concurrency":
            return f"concurrency-{self.concurrency}"
        return f"rate-{self.request_rate:g}"

    def arrival_delays(self) -> list[float]:
        """Seconds between consecutive request starts (all zero without a rate)."""
        if self.request_rate is None:
            return [0.0] * self.num_requests
        rng = random.Random(self.seed)
        return [rng.expovariate(self.request_rate) for _ in range(self.num_requests)]

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
            "api": self.api,
            "temperature": self.temperature,
            "ignore_eos": self.ignore_eos,
            "warmup_requests": self.warmup_requests,
            "seed": self.seed,
        }
