"""Quality gates: a rate (k of n) against the last stored run's, with a proportions test.

Why the same baselines: a quality figure is a property of (config, host fingerprint) like a
speed figure, so it lives in the same store (:mod:`pytest_sglang.baseline.store`), as a
pytest-benchmark entry whose ``extra_info`` carries ``correct`` and ``total``, under the
"workload" ``quality-<task>-<digest>`` (accuracy) or ``equivalence-<reference>-<digest>``.

Why the last run and not the pooled history: at temperature 0 a deterministic server gives the
same answers on the same items every run, so pooling runs would count the same items again and
fake a larger sample. The decision (:func:`decide_rate`) mirrors the speed gates: a regression
needs a drop beyond the threshold, in percentage points (``accuracy:-1%`` = one point), AND a
one-sided test below ``alpha``: McNemar's exact test on the discordant items
(:func:`.stats.paired_drop_test`) when both runs' per-item outcomes over the same items are
known (:mod:`.pairing`), else the unpaired proportions test (:func:`.stats.drop_test`). Every
row says which test it used and the minimum drop that test detects at 80 % power.
"""

from __future__ import annotations

from ..baseline.gates import Gate, Verdict
from .stats import (
    DropTest,
    drop_test,
    min_detectable_drop,
    paired_drop_test,
    paired_min_detectable_drop,
)

__all__ = [
    "DEFAULT_QUALITY_GATES",
    "decide_rate",
    "describe_test",
    "floor_line",
    "regression_line",
]

#: Used when neither ``--sglang-gate`` nor a marker names the metric.
DEFAULT_QUALITY_GATES: dict[str, Gate] = {
    "accuracy": Gate("accuracy", 1.0, "higher"),
    "exact_match_rate": Gate("exact_match_rate", 1.0, "higher"),
}
POWER = 0.8


def describe_test(test: DropTest, k_cur: int, n_cur: int, k_base: int, n_base: int) -> str:
    """Which test, on what evidence: "McNemar exact, 7 discordant: 6 worse/1 better, 424/500 vs
    429/500" or "unpaired z test, 394/500 vs 431/500"."""
    counts = f"{k_cur}/{n_cur} vs {k_base}/{n_base}"
    if test.discordant is not None:
        worse, better = test.discordant
        return (
            f"McNemar exact, {worse + better} discordant: {worse} worse/{better} better, {counts}"
        )
    return f"unpaired {test.method} test, {counts}"


def decide_rate(
    gate: Gate,
    k_cur: int,
    n_cur: int,
    k_base: int,
    n_base: int,
    *,
    alpha: float = 0.05,
    pairs: tuple[int, int] | None = None,
) -> Verdict:
    """Compare k_cur/n_cur with k_base/n_base under ``gate`` (delta in points). ``pairs``: the
    discordant items (worse, better) when both runs answered the same items, which selects the
    paired test; without it the unpaired one."""
    if pairs is not None and n_cur != n_base:
        raise ValueError(f"paired counts need the same items: {n_cur} against {n_base}")
    cur, base = k_cur / n_cur, k_base / n_base
    points = (cur - base) * 100.0
    if pairs is not None:
        worse = paired_drop_test(*pairs)
        better = paired_drop_test(pairs[1], pairs[0])
        psi = (pairs[0] + pairs[1]) / n_cur
        mdd = paired_min_detectable_drop(psi, n_cur, alpha=alpha, power=POWER) * 100.0
        power = (
            f"detectable drop at {POWER:.0%} power: {mdd:.1f} points at {psi:.1%} of items "
            "discordant"
        )
    else:
        worse = drop_test(k_cur, n_cur, k_base, n_base)
        better = drop_test(k_base, n_base, k_cur, n_cur)
        mdd = min_detectable_drop(base, n_cur, n_base, alpha=alpha, power=POWER) * 100.0
        power = f"detectable drop at {POWER:.0%} power: {mdd:.1f} points"
    n = describe_test(worse, k_cur, n_cur, k_base, n_base)
    if -points > gate.threshold_pct:
        if worse.p < alpha:
            return Verdict(
                "regression",
                base,
                cur,
                points,
                worse.p,
                f"{-points:.1f} points lower > {gate.threshold_pct:g} and significant "
                f"(p={worse.p:.2g} < {alpha:g}, {n}; {power})",
            )
        return Verdict(
            "ok",
            base,
            cur,
            points,
            worse.p,
            f"{-points:.1f} points lower but not significant (p={worse.p:.2g} >= {alpha:g}, "
            f"{n}; {power}); more items give the test more power",
        )
    if points > gate.threshold_pct and better.p < alpha:
        if better.discordant is None:  # the paired description already counts both ways
            n = describe_test(better, k_cur, n_cur, k_base, n_base)
        return Verdict(
            "improvement", base, cur, points, better.p, f"{points:.1f} points higher ({n})"
        )
    return Verdict(
        "ok", base, cur, points, worse.p, f"within {gate.threshold_pct:g} points ({n}; {power})"
    )


def regression_line(metric: str, verdict: Verdict, where: str) -> str:
    """The one line a quality regression fails its test with."""
    return (
        f"quality regression vs {where}: {metric} {verdict.baseline:.1%} -> {verdict.current:.1%} "
        f"({verdict.delta_pct:+.1f} points), {verdict.reason}"
    )


def floor_line(
    metric: str, value: float, floor: float | None, subject: str, counts: str
) -> str | None:
    """The one line a figure below the test's own floor (``min_accuracy``, ``min_rate``) fails
    its test with; None when there is no floor or the figure reaches it. ``subject`` says what
    was measured ("on arithmetic-500", "vs ref"), ``counts`` the evidence behind the figure."""
    if floor is None or value >= floor:
        return None
    return f"{metric} {value:.1%} {subject} is below the floor {floor:.1%} ({counts})"
