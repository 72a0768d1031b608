"""The proportions statistics and the quality gate's decision, including its power."""

from __future__ import annotations

import random

import pytest

from pytest_sglang.baseline.gates import Gate, parse_gate, parse_gate_option
from pytest_sglang.quality.gate import decide_rate
from pytest_sglang.quality.stats import drop_test, fisher_lower_tail, min_detectable_drop, wilson
from pytest_sglang.quality.verdict import (
    FASTER_BUT_FAILS,
    fastest_holding,
    quality_holds,
    quality_marks,
)

GATE = Gate("accuracy", 1.0, "higher")


def test_wilson_interval_matches_published_values() -> None:
    low, high = wilson(81, 263)  # Newcombe (1998), example: 0.2553-0.3662
    assert low == pytest.approx(0.2553, abs=5e-4) and high == pytest.approx(0.3662, abs=5e-4)
    assert wilson(0, 10)[0] == pytest.approx(0.0) and wilson(10, 10)[1] == pytest.approx(1.0)
    assert wilson(0, 0) == (0.0, 1.0)


def test_fisher_exact_tail() -> None:
    # the tea-tasting table [[3, 1], [1, 3]]: one-sided p = 0.2429
    assert fisher_lower_tail(1, 4, 3, 4) == pytest.approx(0.2429, abs=1e-4)
    assert drop_test(497, 500, 500, 500).method == "fisher"
    assert drop_test(400, 500, 430, 500).method == "z"


def test_min_detectable_drop() -> None:
    assert min_detectable_drop(0.85, 500) == pytest.approx(0.0562, abs=1e-3)
    assert min_detectable_drop(0.85, 2000) < min_detectable_drop(0.85, 500) / 1.9


def test_accuracy_gate_spec_is_points_and_direction_aware() -> None:
    assert parse_gate("accuracy", "-1%") == GATE
    with pytest.raises(ValueError, match="higher is better"):
        parse_gate("accuracy", "+1%")
    assert parse_gate_option("exact_match_rate:off").threshold_pct == 0.0


def test_decision() -> None:
    same = decide_rate(GATE, 425, 500, 425, 500)
    assert same.verdict == "ok" and "within 1 points" in same.reason
    drop = decide_rate(GATE, 395, 500, 425, 500)
    assert drop.verdict == "regression" and drop.delta_pct == pytest.approx(-6.0)
    assert "p=0.0068 < 0.05, unpaired z test, 395/500 vs 425/500" in drop.reason
    small = decide_rate(GATE, 420, 500, 425, 500)
    assert small.verdict == "ok" and "not significant" in small.reason
    assert decide_rate(GATE, 460, 500, 425, 500).verdict == "improvement"


def test_the_stated_drop_is_caught_at_the_stated_power_and_no_change_rarely_fires() -> None:
    """At 500 items, p = 0.85: the 6-point drop of the simulator's FP8 KV cache is above the
    5.6-point minimum detectable drop, so it is caught >= 80 % of the time; no change fires
    about alpha = 5 % (independent samples; benchmarks/quality_gate_noise.py measures more)."""
    rng = random.Random(21)

    def draw(p: float) -> int:
        return sum(rng.random() < p for _ in range(500))

    trials = 400
    alarms = sum(
        decide_rate(GATE, draw(0.85), 500, draw(0.85), 500).verdict == "regression"
        for _ in range(trials)
    )
    caught = sum(
        decide_rate(GATE, draw(0.79), 500, draw(0.85), 500).verdict == "regression"
        for _ in range(trials)
    )
    assert alarms / trials <= 0.08
    assert caught / trials >= 0.75


def test_quality_next_to_speed() -> None:
    quality = [
        {"config_id": "base", "holds": True},
        {"config_id": "fp8", "holds": False},
        {"config_id": "spec", "holds": True},
        {"config_id": "spec", "holds": True},
        {"config_id": "slow-bad", "holds": False},
    ]
    bench = [
        {"config_id": "base", "output_throughput": 100.0},
        {"config_id": "fp8", "output_throughput": 140.0},
        {"config_id": "spec", "output_throughput": 120.0},
        {"config_id": "slow-bad", "output_throughput": 90.0},
        {"config_id": "unmeasured", "output_throughput": 200.0},
    ]
    assert quality_holds(quality) == {"base": True, "fp8": False, "spec": True, "slow-bad": False}
    assert fastest_holding(quality, bench) == "spec"
    assert quality_marks(quality, bench) == {"fp8": FASTER_BUT_FAILS}
