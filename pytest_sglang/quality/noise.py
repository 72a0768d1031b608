"""The noise floor of output equivalence: how often the reference agrees with itself.

Why: greedy decoding is reproducible only where the kernels are. On a real server two
deployments that differ only by ``--enable-metrics`` can agree on far fewer than all greedy
outputs (near-tie logits, batch-dependent reductions), so a mismatch against the reference does
not by itself say "the config changed the answers". The reference answering the same prompts a
second time measures what agreement is reachable at all: its *self-agreement*, the floor. The
rule (:func:`judge_floor`): a config fails only when its agreement with the reference is
significantly below that floor (the exact_match_rate gate's threshold in points AND McNemar's
exact test on the prompts, paired: the same prompts, the reference's first pass against its
second and against the config).

When the reference is not self-consistent the message points to SGLang's
``--enable-deterministic-inference`` (:func:`deterministic_hint`), which SGLang 0.5.23 accepts
only with the attention backends in :data:`DETERMINISTIC_BACKENDS` (it refuses torch_native,
the CPU backend).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..baseline.gates import Gate
from .gate import decide_rate
from .pairing import discordant
from .stats import mcnemar_upper_tail

__all__ = [
    "DETERMINISTIC_BACKENDS",
    "FloorJudgement",
    "deterministic_hint",
    "judge_floor",
    "resolved_backend",
]

#: The attention backends SGLang 0.5.23 runs ``--enable-deterministic-inference`` with.
DETERMINISTIC_BACKENDS = ("ascend", "fa3", "fa4", "flashinfer", "intel_xpu", "triton")


@dataclass(frozen=True)
class FloorJudgement:
    """``verdict``: "within" or "below" the floor; ``p_value``: McNemar's one-sided p."""

    verdict: str
    p_value: float
    reason: str


def deterministic_hint(attention_backend: str | None, deterministic: bool) -> str:
    """One line on making the reference reproducible, for this deployment's attention backend
    (its resolved ``attention_backend``; None when unknown)."""
    if deterministic:
        return (
            "greedy outputs vary between passes even with --enable-deterministic-inference: "
            "check the kernels this build uses"
        )
    allowed = ", ".join(DETERMINISTIC_BACKENDS)
    if attention_backend in DETERMINISTIC_BACKENDS:
        return (
            "greedy outputs vary between passes: --enable-deterministic-inference makes them "
            f"reproducible (attention backend {attention_backend} supports it)"
        )
    if attention_backend:
        return (
            "greedy outputs vary between passes: --enable-deterministic-inference would make "
            f"them reproducible, but SGLang refuses it with attention backend "
            f"{attention_backend} (it allows {allowed}; set --attention-backend too)"
        )
    return (
        "greedy outputs vary between passes: --enable-deterministic-inference makes them "
        f"reproducible where the attention backend is one of {allowed}"
    )


def resolved_backend(server_args: dict[str, Any], resolved: Any) -> tuple[str | None, bool]:
    """(attention backend, deterministic inference on) of a deployment: what its server logged,
    else what the launch plan resolved."""
    backend = server_args.get("attention_backend") or getattr(resolved, "attention_backend", None)
    deterministic = bool(server_args.get("enable_deterministic_inference"))
    return (str(backend) if backend else None, deterministic)


def judge_floor(
    gate: Gate,
    agreement: Sequence[bool],
    floor: Sequence[bool],
    *,
    alpha: float = 0.05,
) -> FloorJudgement:
    """The config's per-prompt agreement with the reference against the reference's agreement
    with itself (both against the reference's first pass, so the prompts pair up)."""
    n = len(agreement)
    k, f = sum(agreement), sum(floor)
    worse, better = discordant(floor, agreement)
    verdict = decide_rate(gate, k, n, f, n, alpha=alpha, pairs=(worse, better))
    p = mcnemar_upper_tail(worse, better)
    below = verdict.verdict == "regression"
    where = "below the noise floor" if below else "within the noise floor"
    return FloorJudgement(
        "below" if below else "within",
        p,
        f"agreement {k}/{n} vs reference self-agreement {f}/{n}: {where} (McNemar exact, "
        f"{worse + better} discordant: {worse} worse/{better} better, p={p:.2g})",
    )
