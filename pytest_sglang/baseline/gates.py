"""Gates: which metrics are compared, which way is worse, and by how much a change may go.

Why direction-aware: pytest-benchmark's ``--benchmark-compare-fail`` treats bigger as worse,
which is right for times and wrong for throughput. Every metric here knows its direction
(``*_throughput``, ``accept_length`` and ``cache_hit_rate`` are higher-is-better, ``*_ms``
latencies lower-is-better).

Spec syntax (``--sglang-gate`` and the ``sglang_gate`` marker)::

    output_throughput:5%      the metric's own direction, 5 % threshold
    output_throughput:-5%     "a drop of more than 5 % fails" (must agree with the direction)
    median_ttft_ms:+10%       "a rise of more than 10 % fails"
    p99_itl_ms:+-20%          same as 20% (also written ±20%)
    median_itl_ms:off         not compared
    accuracy:-1%              quality (pytest_sglang.quality): a drop of more than 1 point fails

The decision rule (see :func:`decide`): a regression needs BOTH a change beyond the threshold in
the worse direction AND a one-sided t-test p-value (:mod:`.stats`) below ``alpha`` (default
0.05). An improvement is the mirror image and is reported, never failed.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .stats import mean, one_sided_t_test

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_GATES",
    "DEFAULT_NOISE_FLOOR",
    "Gate",
    "Verdict",
    "decide",
    "direction_of",
    "is_quality_metric",
    "known_metric",
    "parse_gate",
    "parse_gate_option",
]

DEFAULT_ALPHA = 0.05
#: Least relative noise assumed per value (see stats.welch_one_sided).
DEFAULT_NOISE_FLOOR = 0.01

_LATENCY = re.compile(r"^(mean|median|p90|p99)_(ttft|itl|chunk_gap|tpot|e2e_latency)_ms$")
#: Rates in [0, 1] measured by :mod:`pytest_sglang.quality`; their thresholds are percentage
#: points and their test is a proportions test (:mod:`pytest_sglang.quality.gate`), not this one.
QUALITY_METRICS = frozenset({"accuracy", "exact_match_rate"})
_HIGHER = {
    *QUALITY_METRICS,
    "output_throughput",
    "total_throughput",
    "request_throughput",
    "input_throughput",
    "accept_length",
    "goodput",
    "output_goodput",
    "slo_attainment",
    "max_rate",
    "max_concurrency",
    # prefix-cache hit rates (pytest_sglang.bench.metrics): a drop is worse
    "cache_hit_rate",
    "server_cache_hit_rate",
}


def known_metric(metric: str) -> bool:
    return metric in _HIGHER or bool(_LATENCY.match(metric))


def is_quality_metric(metric: str) -> bool:
    return metric in QUALITY_METRICS


def direction_of(metric: str) -> str:
    """``"higher"`` (higher is better) or ``"lower"`` (lower is better)."""
    if metric in _HIGHER:
        return "higher"
    if _LATENCY.match(metric):
        return "lower"
    raise ValueError(f"unknown metric {metric!r}")


@dataclass(frozen=True)
class Gate:
    """One metric's gate: ``threshold_pct`` of change in the worse direction; 0 = off."""

    metric: str
    threshold_pct: float
    direction: str

    @property
    def enabled(self) -> bool:
        return self.threshold_pct > 0


#: Compared by default. Throughput is the headline figure; TTFT medians are noisier (a few
#: milliseconds, scheduler wake-ups), so they get a wider band. ``median_itl_ms`` is the
#: per-token ITL (bench_serving's); ``median_chunk_gap_ms`` can be gated too, off by default.
DEFAULT_GATES: dict[str, Gate] = {
    "output_throughput": Gate("output_throughput", 2.5, "higher"),
    "median_ttft_ms": Gate("median_ttft_ms", 10.0, "lower"),
    "median_itl_ms": Gate("median_itl_ms", 5.0, "lower"),
}

_SPEC = re.compile(r"^(?P<sign>\+-|±|\+|-)?(?P<num>\d+(?:\.\d+)?)%$")
_METRIC_HINT = "e.g. output_throughput, median_ttft_ms, p99_itl_ms, accept_length, accuracy"


def parse_gate(metric: str, spec: str) -> Gate:
    """Parse the threshold part (``5%``, ``-5%``, ``+10%``, ``+-20%``, ``off``) for ``metric``.

    Raises ValueError with a one-line message naming the metric.
    """
    metric = metric.strip()
    if not known_metric(metric):
        raise ValueError(f"unknown metric {metric!r} in gate; use a bench metric ({_METRIC_HINT})")
    direction = direction_of(metric)
    text = str(spec).strip().replace(" ", "")
    if text.lower() == "off":
        return Gate(metric, 0.0, direction)
    m = _SPEC.match(text)
    if not m:
        raise ValueError(
            f"gate for {metric}: {spec!r} is not a threshold; write e.g. 5%, -5%, +10%, +-20% "
            "or off"
        )
    sign, value = m.group("sign"), float(m.group("num"))
    if value <= 0:
        raise ValueError(f"gate for {metric}: {spec!r} must be above 0% (or 'off')")
    wrong = (sign == "+" and direction == "higher") or (sign == "-" and direction == "lower")
    if wrong:
        better = "higher" if direction == "higher" else "lower"
        raise ValueError(
            f"gate for {metric}: {better} is better for this metric, so {spec!r} would fail "
            f"improvements; write {'-' if direction == 'higher' else '+'}{m.group('num')}% or "
            f"{m.group('num')}%"
        )
    return Gate(metric, value, direction)


def parse_gate_option(text: str) -> Gate:
    """argparse ``type=`` for ``--sglang-gate METRIC:+-N%``."""
    metric, sep, spec = text.partition(":")
    if not sep or not metric.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r}: write METRIC:THRESHOLD, e.g. output_throughput:-5% or median_ttft_ms:+10%"
        )
    try:
        return parse_gate(metric, spec)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def merge_gates(*layers: Mapping[str, Gate] | Sequence[Gate]) -> dict[str, Gate]:
    """Later layers override earlier ones metric by metric (defaults < options < marker)."""
    out: dict[str, Gate] = {}
    for layer in layers:
        gates = layer.values() if isinstance(layer, Mapping) else layer
        for gate in gates:
            out[gate.metric] = gate
    return out


@dataclass(frozen=True)
class Verdict:
    """The outcome for one metric; ``delta_pct`` is signed (current vs baseline)."""

    verdict: str
    baseline: float
    current: float
    delta_pct: float
    p_value: float
    reason: str


def decide(
    gate: Gate,
    current: Sequence[float],
    baseline: Sequence[float],
    *,
    alpha: float = DEFAULT_ALPHA,
    floor: float = DEFAULT_NOISE_FLOOR,
) -> Verdict:
    """Compare the current rounds with the baseline rounds under ``gate``."""
    cur, base = mean(current), mean(baseline)
    delta = (cur - base) / abs(base) * 100.0 if base else 0.0
    worse_if_lower = gate.direction == "higher"
    loss = -delta if worse_if_lower else delta  # > 0: worse
    worse = one_sided_t_test(current, baseline, worse_if_lower=worse_if_lower, floor=floor)
    n = f"n={len(current)} vs {len(baseline)}"
    if loss > gate.threshold_pct:
        if worse.p < alpha:
            return Verdict(
                "regression",
                base,
                cur,
                delta,
                worse.p,
                f"{abs(delta):.1f}% worse > {gate.threshold_pct:g}% and significant "
                f"(p={worse.p:.2g} < {alpha:g}, {n})",
            )
        return Verdict(
            "ok",
            base,
            cur,
            delta,
            worse.p,
            f"{abs(delta):.1f}% worse but not significant (p={worse.p:.2g} >= {alpha:g}, {n}); "
            "more rounds give the test more power",
        )
    better_p = 1.0 - worse.p
    if -loss > gate.threshold_pct and better_p < alpha:
        return Verdict(
            "improvement",
            base,
            cur,
            delta,
            better_p,
            f"{abs(delta):.1f}% better (p={better_p:.2g}, {n})",
        )
    return Verdict("ok", base, cur, delta, worse.p, f"within {gate.threshold_pct:g}% ({n})")
