"""Quality gates: a rate (k of n) against the last stored run's, with a proportions test.

Why the same baselines: a quality figure is a property of (config, host fingerprint) like a
speed figure, so it lives in the same store (:mod:`pytest_sglang.baseline.store`), as a
pytest-benchmark entry whose ``extra_info`` carries ``correct`` and ``total``, under the
"workload" ``quality-<task>-<digest>`` (accuracy) or ``equivalence-<reference>-<digest>``.

Why the last run and not the pooled history: at temperature 0 a deterministic server gives the
same answers on the same items every run, so pooling runs would count the same items again and
fake a larger sample. The decision (:func:`decide_rate`) mirrors the speed gates: a regression
needs a drop beyond the threshold, in percentage points (``accuracy:-1%`` = one point), AND a
one-sided proportions test (:func:`.stats.drop_test`) below ``alpha``. Every row states the
minimum drop the test detects at 80 % power with these item counts.
"""

from __future__ import annotations

from ..baseline.gates import Gate, Verdict
from .stats import drop_test, min_detectable_drop

__all__ = ["DEFAULT_QUALITY_GATES", "decide_rate", "floor_line", "regression_line"]

#: Used when neither ``--sglang-gate`` nor a marker names the metric.
DEFAULT_QUALITY_GATES: dict[str, Gate] = {
    "accuracy": Gate("accuracy", 1.0, "higher"),
    "exact_match_rate": Gate("exact_match_rate", 1.0, "higher"),
}
POWER = 0.8


def decide_rate(
    gate: Gate, k_cur: int, n_cur: int, k_base: int, n_base: int, *, alpha: float = 0.05
) -> Verdict:
    """Compare k_cur/n_cur with k_base/n_base under ``gate`` (delta in points)."""
    cur, base = k_cur / n_cur, k_base / n_base
    points = (cur - base) * 100.0
    worse = drop_test(k_cur, n_cur, k_base, n_base)
    mdd = min_detectable_drop(base, n_cur, n_base, alpha=alpha, power=POWER) * 100.0
    n = f"{worse.method} test, {k_cur}/{n_cur} vs {k_base}/{n_base}"
    power = f"detectable drop at {POWER:.0%} power: {mdd:.1f} points"
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
    better = drop_test(k_base, n_base, k_cur, n_cur)
    if points > gate.threshold_pct and better.p < alpha:
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
