"""The simulator's quality stand-in and the diverge-after fault, over real HTTP."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from helpers import EAGLE_FLAGS

from pytest_sglang.quality.evals import collect_outputs, compare_outputs, run_accuracy
from pytest_sglang.quality.tasks import Task
from pytest_sglang.sim.quality import QualityModel, accuracy_of

FAST = {"SGLANG_SIM_TIME_SCALE": "0"}
PROMPTS = [f"tell me about item {i} of the list" for i in range(24)]


def test_accuracy_model_is_stated_per_config() -> None:
    assert accuracy_of({}) == 0.85
    assert accuracy_of({"kv_cache_dtype": "fp8_e4m3"}) == pytest.approx(0.79)
    assert accuracy_of({"kv_cache_dtype": "fp8_e5m2"}) == pytest.approx(0.77)
    assert accuracy_of({"quantization": "fp8"}) == pytest.approx(0.82)
    assert accuracy_of({"speculative_algorithm": "EAGLE"}) == 0.85
    task = Task.arithmetic(2000)
    good, worse = QualityModel({}), QualityModel({"kv_cache_dtype": "fp8_e4m3"})
    right = [bool(good.script(i.prompt, 1)[-1] - (1 << 24) == int(i.answer)) for i in task.items]
    right_fp8 = [
        bool(worse.script(i.prompt, 1)[-1] - (1 << 24) == int(i.answer)) for i in task.items
    ]
    assert abs(sum(right) / 2000 - 0.85) < 0.03 and abs(sum(right_fp8) / 2000 - 0.79) < 0.03
    # the worse config is wrong on a superset of the better one's mistakes
    assert all(r for r, f in zip(right, right_fp8) if f)
    # another seed, other items
    assert [good.script(i.prompt, 1) for i in task.items[:50]] != [
        QualityModel({}, seed=1).script(i.prompt, 1) for i in task.items[:50]
    ]


def test_greedy_outputs_repeat_and_the_fault_changes_only_speculative_ones(
    simulator: Callable[..., str],
) -> None:
    plain = simulator(env=FAST)
    first = collect_outputs(plain, PROMPTS, output_tokens=24)
    again = collect_outputs(plain, PROMPTS, output_tokens=24, concurrency=3)
    assert compare_outputs(first, again).exact_match_rate == 1.0
    assert all(len(o.ids) == 24 and not o.error for o in first)

    faulty = {**FAST, "SGLANG_SIM_FAULT": "diverge-after=5"}
    spec = collect_outputs(simulator(*EAGLE_FLAGS, env=faulty), PROMPTS, output_tokens=24)
    result = compare_outputs(first, spec)
    assert result.exact_match_rate == 0.0 and result.first_divergence == 5
    assert result.pairs[0]["position"] == 5 and len(result.pairs) == len(PROMPTS)
    not_spec = collect_outputs(simulator(env=faulty), PROMPTS, output_tokens=24)
    assert compare_outputs(first, not_spec).exact_match_rate == 1.0


def test_accuracy_over_http_matches_the_model(simulator: Callable[..., str]) -> None:
    task = Task.arithmetic(200)
    url = simulator("--kv-cache-dtype", "fp8_e4m3", env=FAST)
    result = run_accuracy(url, task, concurrency=8)
    model = QualityModel({"kv_cache_dtype": "fp8_e4m3"})
    expected = sum(model.script(i.prompt, 0)[-1] - (1 << 24) == int(i.answer) for i in task.items)
    assert result.correct == expected and result.failed == 0
    low, high = result.ci
    assert low < result.accuracy < high


def test_chat_outputs_carry_their_text_in_order(fast_sim: str) -> None:
    outputs = collect_outputs(fast_sim, PROMPTS, model="qwen3-8b", output_tokens=12, api="chat")
    assert all(len(o.text.split()) == 12 and not o.ids and not o.error for o in outputs)
    again = collect_outputs(fast_sim, PROMPTS, model="qwen3-8b", output_tokens=12, api="chat")
    assert [o.text for o in again] == [o.text for o in outputs]
    result = run_accuracy(fast_sim, Task.arithmetic(200), model="qwen3-8b", api="chat")
    assert result.failed == 0 and 0.75 <= result.accuracy <= 0.93
