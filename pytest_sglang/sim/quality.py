"""The simulator's stand-in for answer quality: right answers with a stated, config-dependent
probability, and the ``diverge-after=N`` fault.

Why a stand-in: the quality gates (:mod:`pytest_sglang.quality`) must be testable offline, so
the simulator has to be right or wrong on the built-in arithmetic task
(:mod:`pytest_sglang.quality.arithmetic`) the way a model is, and its greedy output must be a
function of the prompt alone. The rules:

- A prompt whose last question is a built-in problem is answered with a few words of "working"
  and ``#### N``. ``N`` is right when ``u < accuracy(config)``, where ``u`` in [0, 1) is a hash
  of ``SGLANG_SIM_SEED`` and the prompt (not of the config): deterministic per seed, and a
  config with lower accuracy is wrong on a superset of the items a better one gets wrong, as
  a slightly worse model mostly is. A wrong ``N`` is off by 1-3.
- ``accuracy(config)`` = :data:`BASE_ACCURACY` (0.85; ``SGLANG_SIM_ACCURACY`` sets it, as
  ``SGLANG_SIM_SPEED_FACTOR`` sets speed: a build that answers worse) minus
  :data:`KV_CACHE_DROP` for an FP8 KV cache (``--kv-cache-dtype fp8_e4m3``: 0.06,
  ``fp8_e5m2``: 0.08) minus
  :data:`QUANTIZATION_DROP` (0.03) for any ``--quantization``; speculative decoding costs
  nothing (it is lossless). Any other prompt gets the usual prompt-seeded words.
- ``SGLANG_SIM_FAULT=diverge-after=N``: with speculative decoding on, every output token from
  position N on (0-based) is replaced by a different one, deterministically; without
  speculative decoding the fault does nothing. Answers longer than N tokens then go wrong too.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..quality.arithmetic import solve
from .tokenizer import MARK_ID, NUMBER_BASE, VOCAB, token_id

if TYPE_CHECKING:
    from .knobs import SimSettings
    from .scheduler import Request

__all__ = [
    "BASE_ACCURACY",
    "KV_CACHE_DROP",
    "QUANTIZATION_DROP",
    "QualityModel",
    "accuracy_of",
    "diverged_id",
]

BASE_ACCURACY = 0.85
KV_CACHE_DROP: dict[str, float] = {"fp8_e4m3": 0.06, "fp8_e5m2": 0.08}
QUANTIZATION_DROP = 0.03
#: Words of "working" before ``#### N``: 6 to 6 + WORKING_SPREAD - 1.
WORKING_MIN = 6
WORKING_SPREAD = 8


def accuracy_of(args: Mapping[str, Any], base: float = BASE_ACCURACY) -> float:
    """The probability that the simulator answers a built-in problem right under ``args``."""
    accuracy = base - KV_CACHE_DROP.get(str(args.get("kv_cache_dtype") or ""), 0.0)
    if args.get("quantization"):
        accuracy -= QUANTIZATION_DROP
    return max(0.0, accuracy)


def _unit(seed: int, text: str) -> float:
    """A uniform draw in [0, 1) from (seed, text)."""
    return zlib.crc32(f"{seed}\0{text}".encode("utf-8", "surrogatepass")) / 2**32


def diverged_id(seed: int, position: int, original: int) -> int:
    """The token the ``diverge-after`` fault puts at ``position``: never the original."""
    if original >= NUMBER_BASE:
        return original + 1
    other = token_id(seed ^ 0x5BD1E995, position)
    return other if other != original else (other + 1) % len(VOCAB)


class QualityModel:
    """Per server: the scripted answers and whether outputs diverge (see the module doc)."""

    def __init__(
        self,
        args: Mapping[str, Any],
        seed: int = 0,
        diverge_after: int | None = None,
        base: float = BASE_ACCURACY,
    ) -> None:
        self.accuracy = accuracy_of(args, base)
        self.seed = seed
        spec_on = bool(args.get("speculative_algorithm"))
        self.diverge_after = diverge_after if spec_on else None

    def script(self, prompt_text: str, request_seed: int) -> tuple[int, ...]:
        """The token ids of the answer to a built-in problem in ``prompt_text``, or () for a
        prompt that holds none. ``prompt_text`` is the prompt as the server read it (for chat,
        the JSON of the messages: the problem's words survive JSON quoting)."""
        answer = solve(prompt_text)
        if answer is None:
            return ()
        u = _unit(self.seed, prompt_text)
        if u >= self.accuracy:
            off = 1 + int(u * 1000) % 3
            answer = answer + off if answer < off or int(u * 10000) % 2 else answer - off
        working = WORKING_MIN + request_seed % WORKING_SPREAD
        words = tuple(token_id(request_seed, pos) for pos in range(working))
        return (*words, MARK_ID, NUMBER_BASE + answer)

    @classmethod
    def of(cls, args: Mapping[str, Any], settings: SimSettings) -> QualityModel:
        """The model for a server started with ``args`` and these knobs."""
        fault = settings.fault
        diverge = int(fault.value) if fault.kind == "diverge-after" else None
        return cls(args, settings.seed, diverge, settings.accuracy)

    def prepare(self, req: Request, prompt_text: str) -> None:
        """Give a new request its scripted answer and the fault, before it is scheduled."""
        req.script = self.script(prompt_text, req.seed)
        req.diverge_after = self.diverge_after
