"""The seeds' measurement, automated: single-request greedy decode tok/s per EAGLE step count.

On the built-in simulator (``local``, realistic TIME_SCALE=1) each config's tok/s must be within
5 % of the seeds' table (123 / 186 / 234 tok/s for steps 1 / 2 / 3); on a real host the figures
are recorded in ``extra_info`` and the table only. A small concurrency sweep on one config shows
per-request speed falling as the batch grows.
"""

from __future__ import annotations

import pytest
from seed import CONFIGS

from pytest_sglang.bench import Workload
from pytest_sglang.bench.pytest_plugin import SglangBench

SEED_TOK_S = {1: 123.0, 2: 186.0, 3: 234.0}


@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_single_stream_decode(sglang_bench: SglangBench) -> None:
    result = sglang_bench(Workload.single_stream(256))
    assert result.failed == 0, result.errors
    assert result.total_output_tokens == 256
    steps = sglang_bench.deployment.config.speculative_num_steps
    assert steps is not None
    if sglang_bench.deployment.host == "local" and steps in SEED_TOK_S:
        # The seeds' figure is the decode rate of one stream: tokens per second after the first.
        assert result.mean_tpot_ms
        decode_tok_s = 1000.0 / result.mean_tpot_ms
        expected = SEED_TOK_S[steps]
        assert decode_tok_s == pytest.approx(expected, rel=0.05), (
            f"steps {steps}: {decode_tok_s:.1f} tok/s, seeds measured {expected}"
        )


@pytest.mark.parametrize("concurrency", [1, 4, 16])
@pytest.mark.parametrize("sglang_server", CONFIGS[1:2], indirect=True)
def test_concurrency_sweep(sglang_bench: SglangBench, concurrency: int) -> None:
    workload = Workload.fixed_concurrency(concurrency, num_requests=concurrency, output_tokens=32)
    result = sglang_bench(workload)
    assert result.failed == 0, result.errors
    assert result.completed == concurrency
