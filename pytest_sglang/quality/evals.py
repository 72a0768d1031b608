"""Running the evals on a deployed server: outputs through the load generator, then scores.

Why through the load generator (:func:`pytest_sglang.bench.loadgen.complete_prompts`): the same
client, streams, timeouts and failure classification as the benchmarks, with bounded
concurrency; a request that fails is a wrong answer (and counted as failed), never a crash.
Both evals send greedy requests (temperature 0) to ``/generate`` by default, which returns the
token ids, so a divergence is located by token, not by word.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..bench.loadgen import complete_prompts
from ..bench.metrics import RequestRecord
from ..bench.workload import API, PromptList, RandomPrompts, Workload
from .pairing import pack_outcomes
from .stats import wilson
from .tasks import Task, extract_answer, score

__all__ = [
    "DEFAULT_EQUIVALENCE_PROMPTS",
    "AccuracyResult",
    "EquivalenceResult",
    "Output",
    "collect_outputs",
    "compare_outputs",
    "prompts_digest",
    "run_accuracy",
]

#: The fixed prompt set of an equivalence check when the test gives none: 64 seeded
#: random-word prompts of 32 words (the benchmarks' prompts, another seed).
DEFAULT_EQUIVALENCE_PROMPTS: tuple[str, ...] = tuple(RandomPrompts(32, seed=2121).prompts(64))
#: Divergent pairs kept in a result (the attachment); the counts cover all of them.
MAX_PAIRS = 50


@dataclass(frozen=True)
class Output:
    """One greedy completion: its text, its token ids (on /generate) and any failure."""

    prompt: str
    text: str
    ids: tuple[int, ...] = ()
    error: str = ""


def prompts_digest(prompts: Sequence[str], output_tokens: int, api: str) -> str:
    h = hashlib.sha256(f"{output_tokens}\0{api}".encode())
    for prompt in prompts:
        h.update(b"\0" + prompt.encode())
    return h.hexdigest()[:12]


def _workload(
    prompts: Sequence[str], output_tokens: int, concurrency: int, api: API, ignore_eos: bool
) -> Workload:
    return Workload(
        kind="concurrency",
        num_requests=len(prompts),
        output_tokens=output_tokens,
        prompts=PromptList(tuple(prompts), name="quality"),
        concurrency=max(1, min(concurrency, len(prompts))),
        api=api,
        temperature=0.0,
        ignore_eos=ignore_eos,
        warmup_requests=0,
    )


def _output(prompt: str, record: RequestRecord) -> Output:
    return Output(prompt, record.text, tuple(record.output_ids), record.error)


def collect_outputs(
    base_url: str,
    prompts: Sequence[str],
    *,
    model: str = "default",
    output_tokens: int = 64,
    concurrency: int = 16,
    api: API = "generate",
    ignore_eos: bool = True,
    api_key: str | None = None,
) -> list[Output]:
    """Each prompt's greedy output, in prompt order."""
    workload = _workload(prompts, output_tokens, concurrency, api, ignore_eos)
    records = complete_prompts(base_url, workload, model=model, api_key=api_key)
    return [_output(p, r) for p, r in zip(prompts, records)]


# -- equivalence --------------------------------------------------------------------------------


def _units(out: Output) -> Sequence[Any]:
    return out.ids if out.ids else out.text.split()


def first_divergence(reference: Output, current: Output) -> int | None:
    """The first token position where the outputs differ (None: identical). Token ids when
    both have them, else whitespace-separated words."""
    a, b = _units(reference), _units(current)
    if reference.ids and current.ids:
        a, b = reference.ids, current.ids
    elif reference.ids or current.ids:
        a, b = reference.text.split(), current.text.split()
    for pos, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return pos
    return None if len(a) == len(b) else min(len(a), len(b))


@dataclass
class EquivalenceResult:
    """A config's greedy outputs against a reference config's, prompt by prompt.

    The noise floor (:mod:`.noise`): ``floor_matched`` of ``total`` prompts on which the
    reference agreed with itself on a second pass (None: not measured), and ``floor_verdict``:
    "reference" (this config is the reference: its figure is the floor), "within" or "below"
    the floor, or "not measured"; ``floor_reason`` says it in one sentence.
    """

    reference: str
    total: int
    matched: int
    failed: int
    first_divergence: int | None
    median_divergence: float | None
    pairs: list[dict[str, Any]] = field(default_factory=list)
    prompts_digest: str = ""
    #: Per prompt: identical to the reference's output.
    outcomes: tuple[bool, ...] = ()
    floor_matched: int | None = None
    floor_verdict: str = "not measured"
    floor_reason: str = ""
    floor_p_value: float | None = None

    @property
    def exact_match_rate(self) -> float:
        """Share of prompts whose output matched the reference's exactly."""
        return self.matched / self.total if self.total else 0.0

    @property
    def noise_floor(self) -> float | None:
        """The reference's self-agreement rate (None: not measured)."""
        if self.floor_matched is None or not self.total:
            return None
        return self.floor_matched / self.total

    def as_dict(self) -> dict[str, Any]:
        """The figures as stored and reported (rate, Wilson interval, divergences, floor)."""
        low, high = wilson(self.matched, self.total)
        return {
            "kind": "equivalence",
            "reference": self.reference,
            "exact_match_rate": self.exact_match_rate,
            "ci_low": low,
            "ci_high": high,
            "matched": self.matched,
            "total": self.total,
            "failed": self.failed,
            "first_divergence": self.first_divergence,
            "median_divergence": self.median_divergence,
            "prompts_digest": self.prompts_digest,
            "items_digest": self.prompts_digest,
            "outcomes": pack_outcomes(self.outcomes),
            "noise_floor": self.noise_floor,
            "floor_matched": self.floor_matched,
            "floor_verdict": self.floor_verdict,
            "floor_reason": self.floor_reason,
            "floor_p_value": self.floor_p_value,
            "divergent_pairs": list(self.pairs),
        }


def compare_outputs(
    reference: Sequence[Output], current: Sequence[Output], *, reference_id: str = "reference"
) -> EquivalenceResult:
    """Exact-match rate, first divergent token, and the divergent pairs (the first
    :data:`MAX_PAIRS`). A failed request on either side counts as a mismatch."""
    if len(reference) != len(current):
        raise ValueError(f"{len(current)} outputs against {len(reference)} reference outputs")
    matched = failed = 0
    positions: list[int] = []
    pairs: list[dict[str, Any]] = []
    outcomes: list[bool] = []
    for index, (ref, cur) in enumerate(zip(reference, current)):
        if ref.error or cur.error:
            failed += 1
            position: int | None = 0
        else:
            position = first_divergence(ref, cur)
        outcomes.append(position is None)
        if position is None:
            matched += 1
            continue
        positions.append(position)
        if len(pairs) < MAX_PAIRS:
            pairs.append(
                {
                    "index": index,
                    "prompt": cur.prompt,
                    "position": position,
                    "reference": ref.error or ref.text,
                    "current": cur.error or cur.text,
                }
            )
    ordered = sorted(positions)
    median = None
    if ordered:
        mid = len(ordered) // 2
        median = float(ordered[mid]) if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return EquivalenceResult(
        reference=reference_id,
        total=len(current),
        matched=matched,
        failed=failed,
        first_divergence=ordered[0] if ordered else None,
        median_divergence=median,
        pairs=pairs,
        outcomes=tuple(outcomes),
    )


# -- accuracy -------------------------------------------------------------------------------


@dataclass
class AccuracyResult:
    """k right of n on a task, with its Wilson interval, and the items it got wrong."""

    task: str
    task_digest: str
    correct: int
    total: int
    failed: int
    duration_s: float
    wrong: list[dict[str, Any]] = field(default_factory=list)
    #: Per item, in task order: answered right (what pairs two runs, :mod:`.pairing`).
    outcomes: tuple[bool, ...] = ()

    @property
    def accuracy(self) -> float:
        """Share of items answered correctly."""
        return self.correct / self.total if self.total else 0.0

    @property
    def ci(self) -> tuple[float, float]:
        """The accuracy's 95 % Wilson interval."""
        return wilson(self.correct, self.total)

    def as_dict(self) -> dict[str, Any]:
        """The figures as stored and reported (accuracy, interval, counts, per-item outcomes)."""
        low, high = self.ci
        return {
            "kind": "accuracy",
            "task": self.task,
            "task_digest": self.task_digest,
            "accuracy": self.accuracy,
            "ci_low": low,
            "ci_high": high,
            "correct": self.correct,
            "total": self.total,
            "failed": self.failed,
            "duration_s": self.duration_s,
            "items_digest": self.task_digest,
            "outcomes": pack_outcomes(self.outcomes),
            "wrong": list(self.wrong),
        }


def run_accuracy(
    base_url: str,
    task: Task,
    *,
    model: str = "default",
    concurrency: int = 32,
    api: API = "generate",
    api_key: str | None = None,
) -> AccuracyResult:
    """Ask every item once at temperature 0 (stopping at the model's end of answer) and score."""
    began = time.perf_counter()
    outputs = collect_outputs(
        base_url,
        task.prompts,
        model=model,
        output_tokens=task.max_tokens,
        concurrency=concurrency,
        api=api,
        ignore_eos=False,
        api_key=api_key,
    )
    correct = failed = 0
    wrong: list[dict[str, Any]] = []
    outcomes: list[bool] = []
    for index, (item, out) in enumerate(zip(task.items, outputs)):
        right = not out.error and score(item, out.text, task.extract)
        outcomes.append(right)
        if out.error:
            failed += 1
        elif right:
            correct += 1
            continue
        if len(wrong) < MAX_PAIRS:
            wrong.append(
                {
                    "index": index,
                    "expected": item.answer or item.pattern,
                    "extracted": extract_answer(out.text, task.extract),
                    "output": out.error or out.text[-400:],
                }
            )
    return AccuracyResult(
        task=task.name,
        task_digest=task.digest,
        correct=correct,
        total=len(task.items),
        failed=failed,
        duration_s=time.perf_counter() - began,
        wrong=wrong,
        outcomes=tuple(outcomes),
    )
