"""The significance test behind a gate: a one-sided two-sample t-test, in pure Python.

The question is "is the mean of this run's rounds worse than the mean of the stored rounds?"
with few values (this run's rounds, plus the rounds of up to N stored runs). The test:

- **Pooled-variance (Student) t-test** by default. Both sides measure the same workload on the
  same fingerprinted hardware and software, so equal noise is exactly the null hypothesis; pooling
  lends the current run the history's degrees of freedom, which is what gives 3-5 rounds enough
  power (``benchmarks/gate_noise.py``: Welch's test with the current run's own 2 degrees of
  freedom catches a 5 % slowdown at 3 rounds only ~60-88 % of the time; pooled: ~96 %).
- **Welch's t-test** when the current rounds are clearly noisier than the history (variance
  ratio above :data:`UNEQUAL_RATIO`): then equal variances is not a safe assumption, and Welch
  with its Welch-Satterthwaite degrees of freedom is the standard fallback.
- **Small samples**: with no variance on either side (one round against one stored round) the
  ``floor`` relative noise is assumed with a normal distribution; every variance is also floored
  there, so near-identical rounds (a deterministic simulator, a cached result) cannot make a 1 %
  wobble "significant".

Why no scipy: the Student t tail is twenty lines with the regularized incomplete beta function
(Numerical Recipes' continued fraction), and the plugin should not pull a large dependency into
every CI image for it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["TestResult", "mean", "one_sided_t_test", "student_t_sf", "variance"]


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def variance(values: Sequence[float]) -> float | None:
    """Sample variance (n - 1), or None for fewer than two values."""
    if len(values) < 2:
        return None
    m = mean(values)
    return math.fsum((v - m) ** 2 for v in values) / (len(values) - 1)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-14:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(ln_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def student_t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (``inf``: the normal)."""
    if math.isinf(df):
        return 0.5 * math.erfc(t / math.sqrt(2.0))
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


#: Current/history variance ratio above which equal variances is not assumed (Welch instead).
UNEQUAL_RATIO = 4.0


@dataclass(frozen=True)
class TestResult:
    """``p``: probability of a difference at least this large in the tested direction by chance."""

    t: float
    df: float
    p: float
    se: float
    method: str


def one_sided_t_test(
    current: Sequence[float],
    baseline: Sequence[float],
    *,
    worse_if_lower: bool,
    floor: float = 0.01,
) -> TestResult:
    """Test "current is worse than baseline" (lower when ``worse_if_lower``, else higher).

    ``floor`` is the least relative noise (of the baseline mean) ever assumed per value.
    """
    if not current or not baseline:
        raise ValueError("one_sided_t_test needs values on both sides")
    m_c, m_b = mean(current), mean(baseline)
    n_c, n_b = len(current), len(baseline)
    v_c, v_b = variance(current), variance(baseline)
    least = (floor * abs(m_b)) ** 2
    loss = (m_b - m_c) if worse_if_lower else (m_c - m_b)
    if v_c is not None and v_b is not None and v_c > UNEQUAL_RATIO * max(v_b, least):
        a, b = max(v_c, least) / n_c, max(v_b, least) / n_b
        df = (a + b) ** 2 / (a * a / (n_c - 1) + b * b / (n_b - 1))
        method = "welch"
    else:
        df = float(n_c + n_b - 2)
        if df > 0:
            pooled = ((n_c - 1) * (v_c or 0.0) + (n_b - 1) * (v_b or 0.0)) / df
        else:
            pooled, df = least, math.inf
        if pooled < least:
            pooled = least
        a, b = pooled / n_c, pooled / n_b
        method = "pooled" if not math.isinf(df) else "floor"
    se = math.sqrt(a + b)
    if se == 0.0:  # only when the baseline mean is 0 and nothing varies
        return TestResult(
            t=0.0, df=math.inf, p=0.5 if loss == 0 else float(loss < 0), se=0.0, method=method
        )
    t = loss / se
    df = max(df, 1.0)
    return TestResult(t=t, df=df, p=student_t_sf(t, df), se=se, method=method)
