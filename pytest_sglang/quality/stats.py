"""Statistics for proportions: Wilson intervals, one-sided tests of a drop, and their power.

Why these: an accuracy or exact-match rate is k right out of n, a binomial proportion, so the
t-test of the performance gates (:mod:`pytest_sglang.baseline.stats`) does not fit it. The
rules:

- **Wilson score interval** for one rate: unlike the normal (Wald) interval it stays inside
  [0, 1] and keeps its coverage at 0/n, n/n and small n.
- **The drop test** (:func:`drop_test`), one-sided, H1: the current rate is lower than the
  baseline's. Pooled two-proportion z-test when every expected cell count is at least 5,
  else Fisher's exact test (hypergeometric tail), which holds at any size: 500/500 against
  497/500 is a fair question for Fisher and a poor one for z.
- **Minimum detectable drop** (:func:`min_detectable_drop`): the drop that test catches with the
  given power at ``alpha``, n items on each side (normal approximation):
  ``(z_{1-alpha} + z_power) * sqrt(2 p (1 - p) / n)``; at p = 0.85, n = 500, alpha 0.05,
  power 0.8: 5.6 points.
- **The paired test** (:func:`paired_drop_test`): when both runs answered the same items and
  each item's outcome is known, only the *discordant* items carry evidence (right before and
  wrong now: "worse"; wrong before and right now: "better"). McNemar's exact test, one-sided:
  under no change each discordant item is worse or better with probability 1/2, so
  ``p = P(X >= worse)`` for ``X ~ Binomial(worse + better, 1/2)`` (6 worse and 1 better:
  ``8/128 = 0.0625``). It is exact at any size and needs no expected-count rule.
- **Its minimum detectable drop** (:func:`paired_min_detectable_drop`) depends on how many
  items change at all (the discordance ``psi``), not on the rate:
  ``d`` solving ``sqrt(n) d = z_{1-alpha} sqrt(psi) + z_power sqrt(psi - d^2)`` (Connor, 1987),
  and never below the least drop the exact test can call significant (5 items at alpha 0.05).

Why both: the items of both runs are the same questions, so the two samples are positively
correlated (a config that changes a few answers leaves the rest alone). The unpaired test treats
them as independent and over-states the noise of the difference: its false alarms stay below
``alpha`` but it misses drops the paired test sees (``benchmarks/quality_gate_noise.py``). The
unpaired test stays for what cannot be paired: a stored run without per-item outcomes, or
another item set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

__all__ = [
    "DropTest",
    "drop_test",
    "fisher_lower_tail",
    "least_significant",
    "mcnemar_upper_tail",
    "min_detectable_drop",
    "paired_drop_test",
    "paired_min_detectable_drop",
    "wilson",
]

_NORMAL = NormalDist()


def wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials."""
    if n <= 0:
        return (0.0, 1.0)
    z = _NORMAL.inv_cdf(0.5 + confidence / 2)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_lower_tail(k1: int, n1: int, k2: int, n2: int) -> float:
    """P(X <= k1) for X the successes of sample 1 given both margins (hypergeometric): the
    one-sided Fisher exact p-value of "sample 1's rate is lower"."""
    total = k1 + k2
    low = max(0, total - n2)
    denom = _log_choose(n1 + n2, total)
    return min(
        1.0,
        math.fsum(
            math.exp(_log_choose(n1, x) + _log_choose(n2, total - x) - denom)
            for x in range(low, k1 + 1)
        ),
    )


@dataclass(frozen=True)
class DropTest:
    """``p``: probability of a drop at least this large by chance when nothing changed."""

    p: float
    method: str
    z: float | None = None
    #: The paired test's discordant items: (worse, better); None for the unpaired tests.
    discordant: tuple[int, int] | None = None


def drop_test(k_cur: int, n_cur: int, k_base: int, n_base: int) -> DropTest:
    """One-sided test of "the current rate k_cur/n_cur is below the baseline's"."""
    if n_cur <= 0 or n_base <= 0:
        raise ValueError("drop_test needs items on both sides")
    pooled = (k_cur + k_base) / (n_cur + n_base)
    expected = min(pooled * n_cur, (1 - pooled) * n_cur, pooled * n_base, (1 - pooled) * n_base)
    if expected < 5:
        return DropTest(fisher_lower_tail(k_cur, n_cur, k_base, n_base), "fisher")
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_cur + 1 / n_base))
    z = (k_base / n_base - k_cur / n_cur) / se
    return DropTest(1 - _NORMAL.cdf(z), "z", z)


def min_detectable_drop(
    p: float, n_cur: int, n_base: int | None = None, *, alpha: float = 0.05, power: float = 0.8
) -> float:
    """The drop (as a fraction, 0.056 = 5.6 points) caught with ``power`` at ``alpha``."""
    n_base = n_cur if n_base is None else n_base
    if n_cur <= 0 or n_base <= 0:
        return 1.0
    p = min(max(p, 1.0 / (n_cur + n_base)), 1 - 1.0 / (n_cur + n_base))
    z = _NORMAL.inv_cdf(1 - alpha) + _NORMAL.inv_cdf(power)
    return min(1.0, z * math.sqrt(p * (1 - p) * (1 / n_cur + 1 / n_base)))


def mcnemar_upper_tail(worse: int, better: int) -> float:
    """P(X >= worse) for X ~ Binomial(worse + better, 1/2): the one-sided exact McNemar p-value
    of "the current run is worse", given its discordant items. Exact integer arithmetic."""
    if worse < 0 or better < 0:
        raise ValueError("discordant counts cannot be negative")
    m = worse + better
    if m == 0:
        return 1.0
    tail: int = sum(math.comb(m, i) for i in range(worse, m + 1))
    return tail / (1 << m)


def paired_drop_test(worse: int, better: int) -> DropTest:
    """One-sided McNemar exact test of "the current run is worse" on the same items: ``worse``
    items right in the baseline and wrong now, ``better`` the other way round."""
    return DropTest(mcnemar_upper_tail(worse, better), "mcnemar", discordant=(worse, better))


def least_significant(alpha: float) -> int:
    """The fewest discordant items, all worse, that the exact test calls significant."""
    k = 1
    while 0.5**k >= alpha:
        k += 1
    return k


def paired_min_detectable_drop(
    discordance: float, n: int, *, alpha: float = 0.05, power: float = 0.8
) -> float:
    """The drop (as a fraction) the paired test catches with ``power`` at ``alpha`` on ``n``
    items of which a fraction ``discordance`` differ between the runs (normal approximation of
    McNemar's test), but at least :func:`least_significant` items."""
    if n <= 0:
        return 1.0
    psi = min(max(discordance, 0.0), 1.0)
    za, zb = _NORMAL.inv_cdf(1 - alpha), _NORMAL.inv_cdf(power)
    root = math.sqrt(max(0.0, n + zb * zb - za * za))
    d = math.sqrt(psi) * (math.sqrt(n) * za + zb * root) / (n + zb * zb)
    return min(1.0, max(d, least_significant(alpha) / n))
