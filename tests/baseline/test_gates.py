"""Gate specs, the t-test and the decision rule (pure functions: tables of cases)."""

from __future__ import annotations

import argparse
import math
import random

import pytest

from pytest_sglang.baseline.gates import (
    DEFAULT_GATES,
    Gate,
    decide,
    merge_gates,
    parse_gate,
    parse_gate_option,
)
from pytest_sglang.baseline.stats import one_sided_t_test, student_t_sf


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("output_throughput:5%", Gate("output_throughput", 5.0, "higher")),
        ("output_throughput:-5%", Gate("output_throughput", 5.0, "higher")),
        ("median_ttft_ms:+10%", Gate("median_ttft_ms", 10.0, "lower")),
        ("p99_itl_ms:+-20%", Gate("p99_itl_ms", 20.0, "lower")),
        ("p99_itl_ms:±2.5%", Gate("p99_itl_ms", 2.5, "lower")),
        ("accept_length:-3%", Gate("accept_length", 3.0, "higher")),
        ("median_itl_ms:off", Gate("median_itl_ms", 0.0, "lower")),
    ],
)
def test_gate_specs(text: str, expected: Gate) -> None:
    assert parse_gate_option(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("output_throughput", "write METRIC:THRESHOLD"),
        ("tokens:5%", "unknown metric 'tokens'"),
        ("output_throughput:+5%", "higher is better"),
        ("median_ttft_ms:-5%", "lower is better"),
        ("median_ttft_ms:5", "'5' is not a threshold"),
        ("median_ttft_ms:0%", "must be above 0%"),
    ],
)
def test_bad_gate_specs_name_the_metric(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse_gate_option(text)


def test_marker_layer_overrides_metric_by_metric() -> None:
    merged = merge_gates(DEFAULT_GATES, [parse_gate("median_ttft_ms", "off")])
    assert not merged["median_ttft_ms"].enabled
    assert merged["output_throughput"] == DEFAULT_GATES["output_throughput"]


@pytest.mark.parametrize(
    ("t", "df", "p"),
    [(2.015, 5, 0.05), (2.821, 9, 0.01), (12.706, 1, 0.025), (1.645, math.inf, 0.05)],
)
def test_student_t_tail_matches_tables(t: float, df: float, p: float) -> None:
    assert student_t_sf(t, df) == pytest.approx(p, rel=2e-3)
    assert student_t_sf(-t, df) == pytest.approx(1 - p, rel=2e-3)


def test_one_round_against_one_round_uses_the_noise_floor() -> None:
    result = one_sided_t_test([90.0], [100.0], worse_if_lower=True, floor=0.01)
    assert result.method == "floor"
    assert result.p < 1e-6  # 10 % at 1 % noise per value


def test_much_noisier_current_run_falls_back_to_welch() -> None:
    base = [100.0, 100.5, 99.5, 100.2, 99.8]
    result = one_sided_t_test([80.0, 120.0, 95.0], base, worse_if_lower=True)
    assert result.method == "welch"
    assert result.p > 0.05


THROUGHPUT = DEFAULT_GATES["output_throughput"]
TTFT = Gate("median_ttft_ms", 10.0, "lower")


@pytest.mark.parametrize(
    ("gate", "current", "baseline", "verdict"),
    [
        (THROUGHPUT, [80.0, 81.0, 79.0], [100.0, 101.0, 99.0, 100.0], "regression"),
        (THROUGHPUT, [120.0, 121.0, 119.0], [100.0, 101.0, 99.0, 100.0], "improvement"),
        (THROUGHPUT, [99.0, 100.0, 101.0], [100.0, 101.0, 99.0, 100.0], "ok"),
        # 6 % worse, but the values are all over the place: not significant
        (THROUGHPUT, [60.0, 130.0, 92.0], [100.0, 101.0, 99.0, 100.0], "ok"),
        (TTFT, [130.0, 131.0, 129.0], [100.0, 101.0, 99.0], "regression"),
        (TTFT, [70.0, 71.0, 69.0], [100.0, 101.0, 99.0], "improvement"),
    ],
)
def test_decide_is_direction_aware(
    gate: Gate, current: list[float], baseline: list[float], verdict: str
) -> None:
    result = decide(gate, current, baseline)
    assert result.verdict == verdict, result.reason
    assert (result.delta_pct < 0) == (result.current < result.baseline)
    assert result.baseline == pytest.approx(sum(baseline) / len(baseline))


def test_defaults_rarely_cry_wolf_and_catch_five_percent() -> None:
    """A small replay of benchmarks/gate_noise.py (3 rounds, 2 % noise, 10 stored runs)."""
    rng = random.Random(7)

    def draw(factor: float) -> list[float]:
        return [100.0 * factor * (1 + rng.gauss(0, 0.02)) for _ in range(3)]

    trials, alarms, caught = 300, 0, 0
    for _ in range(trials):
        base = [v for _ in range(10) for v in draw(1.0)]
        alarms += decide(THROUGHPUT, draw(1.0), base).verdict == "regression"
        caught += decide(THROUGHPUT, draw(0.95), base).verdict == "regression"
    assert alarms / trials <= 0.03
    assert caught / trials >= 0.85
