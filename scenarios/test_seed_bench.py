"""The seeds' measurement, automated: single-request greedy decode tok/s per EAGLE step count.

On the built-in simulator (``local``, realistic TIME_SCALE=1) each config's decode rate (1000 /
mean TPOT, as the seeds measured it: tokens per second after the first) must be within
NOISE_BOUND of the figure the simulator's performance model states for that config
(``pytest_sglang.sim.perf.decode_tok_per_s``): this checks that the simulator serves in real time
what its model says, for every step count, steps 4 included. On a real host the figures are
recorded in ``extra_info`` and the table only.

The model against the seeds is a separate, deterministic check (tests/sim/test_perf.py): fitted
to 123 / 186 / 234 tok/s for steps 1 / 2 / 3, the model states 126.1 / 181.2 / 229.4 (+2.6 /
-2.6 / -2.0 %) and predicts 270.1 for steps 4, which the seeds did not measure. Comparing with
the seeds' figures here, as this test did before, spent up to 2.9 % of a 5 % bound on the
model's own error (-3.4 % seen at steps 3, -3.9 % under CPU load).

Why NOISE_BOUND = 5 % over OUTPUT_TOKENS = 512, with the model's error out of the bound. The
noise is the simulator's scheduling under CPU contention: a first token that leaves late while
the later ones keep the simulator's absolute timetable shortens the measured span (TPOT = (E2E -
TTFT) / (tokens - 1)), and the scheduler catches up at most 50 ms of a late step, so that part of
the error is at most 50 ms / span: 5.3 % at steps 4 with 256 tokens (0.94 s), 2.6 % with 512.
The server's own timing (Prometheus e2e - TTFT of the same request) has the same effect and
agreed with the client's TPOT within 0.8 %, so it would not remove it. Measured on a 2-core
machine: with 256 tokens, -1.4 .. -0.2 % idle and -2.4 .. +3.1 % with 2 to 5 busy-looping
processes competing (load average up to 9); with 512 tokens, -0.5 .. -0.05 % idle and
-0.6 .. +0.3 % with 4 to 6 busy loops (3 runs of scenarios/, 3 rounds each, and 16 rounds run
directly). Part of it is deterministic: a request ends on a whole verify step, 139 at steps 3
where 511 / 3.69 = 138.3 would be exact (-0.5 %). A 10 % slower simulator
(``SGLANG_SIM_SPEED_FACTOR=0.9``) fails, and so does a 10 % faster one.

A small concurrency sweep on one config shows per-request speed falling as the batch grows.
"""

from __future__ import annotations

import pytest
from seed import CONFIGS

from pytest_sglang import SglangBench, Workload
from pytest_sglang.sim import SpecConfig, decode_tok_per_s

#: The seeds' single-stream figures (tok/s), for the record; the model was fitted to them.
SEED_TOK_S = {1: 123.0, 2: 186.0, 3: 234.0}
#: Tokens per request: long enough that a late first token moves the rate little (docstring).
OUTPUT_TOKENS = 512
#: Allowed deviation of the measured decode rate from the model's figure (measurement noise).
NOISE_BOUND = 0.05


@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_single_stream_decode(sglang_bench: SglangBench) -> None:
    result = sglang_bench(Workload.single_stream(OUTPUT_TOKENS))
    assert result.failed == 0, result.errors
    assert result.total_output_tokens == OUTPUT_TOKENS
    deployment = sglang_bench.deployment
    steps = deployment.config.speculative_num_steps
    assert steps is not None
    if deployment.host != "local":
        return
    args = deployment.server_args
    spec = SpecConfig(
        str(args["speculative_algorithm"]),
        int(args["speculative_num_steps"]),
        int(args["speculative_eagle_topk"]),
        int(args["speculative_num_draft_tokens"]),
    )
    model_tok_s = decode_tok_per_s(str(args["model_path"]), int(args["tp_size"]), spec)
    assert result.mean_tpot_ms
    decode_tok_s = 1000.0 / result.mean_tpot_ms
    deviation = decode_tok_s / model_tok_s - 1
    sglang_bench.benchmark.extra_info.update(
        model_tok_s=model_tok_s, decode_tok_s=decode_tok_s, model_deviation=deviation
    )
    seed = SEED_TOK_S.get(steps)
    seed_note = f"; seeds {seed:g}, model {model_tok_s / seed - 1:+.1%} off them" if seed else ""
    assert abs(deviation) <= NOISE_BOUND, (
        f"steps {steps}: {decode_tok_s:.1f} tok/s, the model states {model_tok_s:.1f} "
        f"({deviation:+.1%}, bound {NOISE_BOUND:.0%}){seed_note}"
    )


@pytest.mark.parametrize("concurrency", [1, 4, 16])
@pytest.mark.parametrize("sglang_server", CONFIGS[1:2], indirect=True)
def test_concurrency_sweep(sglang_bench: SglangBench, concurrency: int) -> None:
    workload = Workload.fixed_concurrency(concurrency, num_requests=concurrency, output_tokens=32)
    result = sglang_bench(workload)
    assert result.failed == 0, result.errors
    assert result.completed == concurrency
