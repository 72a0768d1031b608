"""The performance model reproduces the seeds' table and reacts like a real server."""

from __future__ import annotations

import itertools

import pytest

from pytest_sglang.sim.perf import (
    SpecConfig,
    accept_length,
    decode_tok_per_s,
    effective_max_running_requests,
    parse_model,
    prefill_ms,
)

SEED = parse_model("/shared/models/Qwen3.5-122B-A10B")


def eagle(steps: int) -> SpecConfig:
    return SpecConfig("EAGLE", steps, 1, steps + 1)


@pytest.mark.parametrize(("steps", "seed_tok_s"), [(1, 123), (2, 186), (3, 234)])
def test_seed_table_within_5_percent(steps: int, seed_tok_s: float) -> None:
    assert decode_tok_per_s(SEED, 4, eagle(steps)) == pytest.approx(seed_tok_s, rel=0.05)


def test_diminishing_returns_with_optimum_at_4_or_more() -> None:
    speeds = [decode_tok_per_s(SEED, 4, eagle(k)) for k in range(1, 11)]
    gains = [b - a for a, b in itertools.pairwise(speeds)]
    assert all(g2 < g1 for g1, g2 in itertools.pairwise(gains))
    assert speeds.index(max(speeds)) + 1 >= 4


@pytest.mark.parametrize(("steps", "expected"), [(2, 21), (3, 17)])
def test_effective_max_running_requests_matches_seeds(steps: int, expected: int) -> None:
    assert effective_max_running_requests(SEED, 4, eagle(steps), 48) == expected


def test_acceptance_falls_with_temperature() -> None:
    greedy = accept_length(eagle(3), 0.0)
    assert accept_length(eagle(3), 0.7) < greedy
    assert decode_tok_per_s(SEED, 4, eagle(3), temperature=1.0) < decode_tok_per_s(
        SEED, 4, eagle(3)
    )
    assert accept_length(SpecConfig(), 0.0) == 1.0


def test_per_request_speed_falls_with_concurrency() -> None:
    speeds = [decode_tok_per_s(SEED, 4, eagle(3), concurrency=c) for c in (1, 8, 32, 48)]
    assert speeds == sorted(speeds, reverse=True)
    assert speeds[-1] * 48 > speeds[0]  # but aggregate throughput still grows


def test_ttft_grows_with_prompt_length() -> None:
    assert prefill_ms(SEED, 4, 8000) > prefill_ms(SEED, 4, 1000) > prefill_ms(SEED, 4, 10)


def test_model_sizes_from_path() -> None:
    assert (SEED.total_b, SEED.active_b, SEED.is_moe) == (122.0, 10.0, True)
    llama = parse_model("meta-llama/Llama-3.1-8B-Instruct")
    assert (llama.total_b, llama.active_b, llama.bytes_per_param) == (8.0, 8.0, 2.0)
    big = parse_model("meta-llama/Llama-3.1-70B-Instruct")
    no_spec = SpecConfig()
    assert decode_tok_per_s(llama, 1, no_spec) > decode_tok_per_s(big, 4, no_spec)
    assert decode_tok_per_s(big, 4, no_spec) > decode_tok_per_s(big, 2, no_spec)
