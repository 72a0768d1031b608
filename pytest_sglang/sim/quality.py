"""The simulator's stand-in for answer quality: right answers with a stated, config-dependent
probability, the ``diverge-after=N`` fault, and near ties that make greedy outputs vary.

Why a stand-in: the quality gates (:mod:`pytest_sglang.quality`) must be testable offline, so
the simulator has to be right or wrong on the built-in arithmetic task
(:mod:`pytest_sglang.arithmetic`) the way a model is, and its greedy output must be a
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
- ``SGLANG_SIM_NOISE=F`` (default 0): a fraction F of prompts are *near ties*, as near-tie
  logits and batch-dependent kernels make them on a real server (which prompts: a draw from
  ``SGLANG_SIM_SEED`` and the prompt). A near tie's greedy output takes one of two branches
  from a prompt-derived position in 0-7 on (the second branch: the ``diverge-after`` tokens),
  and which one is drawn per run from the seed, the server's flags (without its ports, host
  and random seed) and how many times this server has seen the prompt: so a second pass of the
  same server, or a server whose flags differ only by ``--enable-metrics``, agrees on a near
  tie half the time, and all of it is reproducible from the seed. The server flag
  ``--enable-deterministic-inference`` turns it off, as on SGLang.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..arithmetic import solve
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
#: A near tie's branch point: output position 0 to TIE_SPREAD - 1.
TIE_SPREAD = 8


def _flags_salt(args: Mapping[str, Any]) -> int:
    """The server's flags as a number, without what differs between two deployments of one
    config (ports, host, the drawn random seed)."""
    kept = {k: v for k, v in args.items() if "port" not in k and k not in ("host", "random_seed")}
    return zlib.crc32(json.dumps(kept, sort_keys=True, default=str).encode())


def accuracy_of(args: Mapping[str, Any], base: float = BASE_ACCURACY) -> float:
    """The probability that the simulator answers a built-in problem right under ``args``."""
    accuracy = base - KV_CACHE_DROP.get(str(args.get("kv_cache_dtype") or ""), 0.0)
    if args.get("quantization"):
        accuracy -= QUANTIZATION_DROP
    return max(0.0, accuracy)


def _unit(seed: int, text: str) -> float:
    """A uniform draw in [0, 1) from (seed, text)."""
    return zlib.crc32(f"{seed}\0{text}".encode("utf-8", "surrogatepass")) / 2**32


def _mixed(*parts: object) -> float:
    """A uniform draw in [0, 1) from ``parts``, well mixed (unlike CRC-32, whose linearity
    would flip the same bit for every prompt of a length when only the salt changes)."""
    text = "\0".join(str(p) for p in parts).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") / 2**64


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
        noise: float = 0.0,
    ) -> None:
        self.accuracy = accuracy_of(args, base)
        self.seed = seed
        spec_on = bool(args.get("speculative_algorithm"))
        self.diverge_after = diverge_after if spec_on else None
        self.noise = 0.0 if args.get("enable_deterministic_inference") else noise
        self.salt = _flags_salt(args) if self.noise else 0
        #: Near ties: how many times this server has seen each (hashed) prompt.
        self.seen: dict[int, int] = {}

    def tie_position(self, prompt_text: str) -> int | None:
        """Where this run's output of a near-tie prompt leaves the first branch, or None (not a
        near tie, or the first branch this time). Counts the prompt as seen."""
        if not self.noise or _mixed(self.seed, "tie", prompt_text) >= self.noise:
            return None
        key = zlib.crc32(prompt_text.encode("utf-8", "surrogatepass"))
        run = self.seen.get(key, 0)
        self.seen[key] = run + 1
        if _mixed(self.seed, self.salt, run, prompt_text) < 0.5:
            return None
        return key % TIE_SPREAD

    def right(self, prompt_text: str) -> bool:
        """Whether the answer to the built-in problem in ``prompt_text`` is right (the draw
        alone: :meth:`script` says whether there is a problem at all)."""
        return _unit(self.seed, prompt_text) < self.accuracy

    def script(self, prompt_text: str, request_seed: int) -> tuple[int, ...]:
        """The token ids of the answer to a built-in problem in ``prompt_text``, or () for a
        prompt that holds none. ``prompt_text`` is the prompt as the server read it (for chat,
        the JSON of the messages: the problem's words survive JSON quoting)."""
        answer = solve(prompt_text)
        if answer is None:
            return ()
        u = _unit(self.seed, prompt_text)
        if not self.right(prompt_text):
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
        return cls(args, settings.seed, diverge, settings.accuracy, settings.noise)

    def prepare(self, req: Request, prompt_text: str) -> None:
        """Give a new request its scripted answer, the fault and its near tie, before it is
        scheduled."""
        req.script = self.script(prompt_text, req.seed)
        points = [p for p in (self.diverge_after, self.tie_position(prompt_text)) if p is not None]
        req.diverge_after = min(points) if points else None
