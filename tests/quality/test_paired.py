"""The paired test (McNemar exact), the per-item record that pairs two runs, the noise floor's
rule and hint, and the simulator's near ties that give a reference a floor below 100 %."""

from __future__ import annotations

import math
import random

import pytest

from pytest_sglang.baseline.gates import Gate
from pytest_sglang.quality.gate import decide_rate
from pytest_sglang.quality.noise import deterministic_hint, judge_floor
from pytest_sglang.quality.pairing import (
    discordant,
    pack_outcomes,
    stored_outcomes,
    unpack_outcomes,
)
from pytest_sglang.quality.stats import (
    least_significant,
    mcnemar_upper_tail,
    min_detectable_drop,
    paired_drop_test,
    paired_min_detectable_drop,
)
from pytest_sglang.sim.quality import QualityModel

GATE = Gate("accuracy", 1.0, "higher")


def test_mcnemar_exact_known_values() -> None:
    # 6 worse, 1 better: sum_{i>=6} C(7, i) / 2^7 = (7 + 1) / 128
    assert mcnemar_upper_tail(6, 1) == 8 / 128 == 0.0625
    assert mcnemar_upper_tail(5, 0) == 1 / 32
    assert mcnemar_upper_tail(0, 0) == 1.0
    assert mcnemar_upper_tail(0, 9) == 1.0
    # P(X >= 60), X ~ Binomial(100, 1/2)
    assert mcnemar_upper_tail(60, 40) == pytest.approx(0.028443966820490392, rel=1e-12)
    # exact at sizes where floats of 2^m would overflow
    assert 0 < mcnemar_upper_tail(1100, 1000) < 0.02
    brute = sum(math.comb(20, i) for i in range(13, 21)) / 2**20
    assert mcnemar_upper_tail(13, 7) == pytest.approx(brute, rel=1e-15)
    with pytest.raises(ValueError):
        mcnemar_upper_tail(-1, 2)


def test_paired_test_and_its_detectable_drop() -> None:
    test = paired_drop_test(6, 1)
    assert (test.method, test.discordant, test.p) == ("mcnemar", (6, 1), 0.0625)
    assert least_significant(0.05) == 5 and least_significant(0.01) == 7
    # independent runs (discordance 2p(1-p)): the same as the unpaired test's
    assert paired_min_detectable_drop(2 * 0.85 * 0.15, 500) == pytest.approx(
        min_detectable_drop(0.85, 500), abs=1e-3
    )
    # few items change: a far smaller drop is seen
    assert paired_min_detectable_drop(0.0255, 500) == pytest.approx(0.0177, abs=5e-4)
    # nothing changes: the least drop the exact test can call at all, 5 items
    assert paired_min_detectable_drop(0.0, 500) == 5 / 500


def test_paired_decision_says_which_test() -> None:
    small = decide_rate(GATE, 58, 64, 63, 64, pairs=(6, 1))
    assert small.verdict == "ok" and small.p_value == 0.0625
    assert "McNemar exact, 7 discordant: 6 worse/1 better, 58/64 vs 63/64" in small.reason
    # 10 items newly wrong, none newly right: unpaired, two points at 500 items is noise;
    # paired, ten answers changed one way is not
    unpaired = decide_rate(GATE, 415, 500, 425, 500)
    paired = decide_rate(GATE, 415, 500, 425, 500, pairs=(10, 0))
    assert unpaired.verdict == "ok" and "unpaired z test" in unpaired.reason
    assert paired.verdict == "regression" and paired.p_value == 2**-10
    assert "at 2.0% of items discordant" in paired.reason
    better = decide_rate(GATE, 440, 500, 425, 500, pairs=(0, 15))
    assert better.verdict == "improvement" and "0 worse/15 better" in better.reason
    with pytest.raises(ValueError, match="same items"):
        decide_rate(GATE, 1, 2, 1, 3, pairs=(0, 0))


def test_paired_false_alarms_stay_below_alpha() -> None:
    """Two runs of an equally good config on the same items, 5 % of the answers re-drawn: the
    paired test fires at most about alpha."""
    rng = random.Random(34)
    n, trials, alarms = 500, 300, 0
    for _ in range(trials):
        base = [rng.random() < 0.85 for _ in range(n)]
        cur = [rng.random() < 0.85 if rng.random() < 0.05 else b for b in base]
        v = decide_rate(GATE, sum(cur), n, sum(base), n, pairs=discordant(base, cur))
        alarms += v.verdict == "regression"
    assert alarms / trials <= 0.07


def test_outcomes_pack_compactly_and_pair_only_the_same_items() -> None:
    rng = random.Random(5)
    outcomes = tuple(rng.random() < 0.8 for _ in range(500))
    packed = pack_outcomes(outcomes)
    assert len(packed) == 125 and unpack_outcomes(packed, 500) == outcomes
    assert pack_outcomes((True, False, True)) == "a" and unpack_outcomes("a", 3) == (
        True,
        False,
        True,
    )
    assert pack_outcomes(()) == "" and unpack_outcomes("zz", 5) is None
    stored = {"items_digest": "abc", "outcomes": packed, "total": 500, "correct": 400}
    assert stored_outcomes(stored, "abc", 500) == outcomes
    assert stored_outcomes(stored, "other", 500) is None  # other items
    assert stored_outcomes(stored, "abc", 499) is None
    assert stored_outcomes({"correct": 400, "total": 500}, "abc", 500) is None  # an older run
    assert discordant((True, True, False, False), (True, False, True, False)) == (1, 1)
    with pytest.raises(ValueError, match="not the same items"):
        discordant((True,), ())


def test_noise_floor_rule() -> None:
    gate = Gate("exact_match_rate", 1.0, "higher")
    floor = [True] * 40 + [False] * 24
    within = floor[:]
    within[0], within[50] = False, True  # one lost, one gained: the same agreement
    judged = judge_floor(gate, within, floor)
    assert judged.verdict == "within"
    assert judged.reason.startswith(
        "agreement 40/64 vs reference self-agreement 40/64: within the noise floor "
        "(McNemar exact, 2 discordant: 1 worse/1 better, p=0.75)"
    )
    below = [False] * 64
    judged = judge_floor(gate, below, floor)
    assert judged.verdict == "below" and "below the noise floor" in judged.reason
    assert judged.p_value == 2**-40


def test_deterministic_inference_hint_names_the_backend() -> None:
    assert "(attention backend triton supports it)" in deterministic_hint("triton", False)
    refused = deterministic_hint("torch_native", False)
    assert "refuses it with attention backend torch_native" in refused
    assert "ascend, fa3, fa4, flashinfer, intel_xpu, triton" in refused
    assert "--enable-deterministic-inference" in deterministic_hint(None, False)
    assert "even with --enable-deterministic-inference" in deterministic_hint("fa3", True)


def _pass(model: QualityModel, prompts: list[str]) -> list[int | None]:
    return [model.tie_position(p) for p in prompts]


def test_simulator_near_ties_vary_between_runs_reproducibly() -> None:
    prompts = [f"prompt number {i}" for i in range(2000)]
    model = QualityModel({}, seed=3, noise=0.4)
    first, second = _pass(model, prompts), _pass(model, prompts)
    disagree = sum(a != b for a, b in zip(first, second)) / len(prompts)
    assert 0.15 <= disagree <= 0.25  # 40 % near ties, each agreeing half the time
    again = QualityModel({}, seed=3, noise=0.4)
    assert _pass(again, prompts) == first  # reproducible from the seed
    metrics = QualityModel({"enable_metrics": True}, seed=3, noise=0.4)
    assert 0.15 <= sum(a != b for a, b in zip(first, _pass(metrics, prompts))) / 2000 <= 0.25
    moved = QualityModel({"port": 31000}, seed=3, noise=0.4)
    assert _pass(QualityModel({"port": 30000}, seed=3, noise=0.4), prompts) == _pass(moved, prompts)
    steady = QualityModel({"enable_deterministic_inference": True}, seed=3, noise=0.4)
    assert _pass(steady, prompts) == [None] * 2000
    assert _pass(QualityModel({}, seed=3), prompts) == [None] * 2000
