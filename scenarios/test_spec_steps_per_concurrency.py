"""The seeds' question per load: which ``--speculative-num-steps`` at each concurrency level?

The seed config (EAGLE steps 1..4, Qwen3.5-122B-A10B, TP 4: ``seed.CONFIGS``) is benchmarked at
concurrency 1, 8 and 32 on chat prompts of the kind it will serve (``data/chat_prompts.jsonl``,
``JsonlPrompts``) that stop where their answer ends (``ignore_eos=False``): acceptance depends
on the text generated, and random words or decoding past the end would skew it
(:mod:`pytest_sglang.bench.spec_text`). Each level is a workload of its own, so the tuning
verdict ranks the four step counts per level by goodput (requests/s that met the seeds' SLO of
test_seed_tuning.py: p99 TTFT <= 1 s, median chunk gap <= 30 ms), and
:func:`~pytest_sglang.best_per_workload` puts the best per level in one table
(the terminal's "sglang best per workload: goodput" section). Why goodput and not tokens/s: at
a fixed level raw throughput barely separates 3 and 4 steps at 32 (1498 vs 1490 tok/s), while
4 steps makes a request wait 1.5 s for its first token, queued behind the 14 its workspace
admits; the SLO says what a user would accept.

The answer changes with the load: at concurrency 1 more draft steps win (more tokens per verify
step for almost the cost of one); at 32 fewer win, because a verify step's cost grows with batch
x draft tokens and the speculative workspace caps how many requests run at once (docs/
prefix-tuning.md, "Which --speculative-num-steps per concurrency level"). Marked ``tuning``
(the simulator serves in real time; about 2.5 minutes with the four start-ups): ``make test`` and
``pytest scenarios -m tuning`` run it, ``make scenarios`` leaves it out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from seed import CONFIGS

from pytest_sglang import (
    JsonlPrompts,
    SglangBench,
    Workload,
    bench_results,
    best_per_workload,
    tuning_verdicts,
)

pytestmark = pytest.mark.tuning

PROMPTS = JsonlPrompts(Path(__file__).parent / "data" / "chat_prompts.jsonl")
#: One workload per level, two rounds each (``rounds x level`` requests a round): at most 256
#: tokens a request, each ending where its answer does.
SLO = "p99_ttft_ms<=1000,median_chunk_gap_ms<=30"
LEVELS = Workload.sweep(
    [1, 8, 32], rounds=3, output_tokens=256, prompts=PROMPTS, ignore_eos=False, api="chat"
)


@pytest.mark.parametrize("workload", LEVELS, ids=str)
@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_concurrency_level(sglang_bench: SglangBench, workload: Workload) -> None:
    result = sglang_bench(workload, rounds=2, slo=SLO)
    assert result.failed == 0, result.errors
    assert not sglang_bench.benchmark.extra_info.get("speculative_text"), "measured off its text"


def best_steps(results: list[dict[str, Any]]) -> dict[str, int]:
    """The winning step count per concurrency level (workload name), by goodput, among this
    module's configs and workloads."""
    steps = {c.id: c.speculative_num_steps for c in CONFIGS}
    names = {w.name for w in LEVELS}
    mine = [r for r in results if r.get("config_id") in steps and r.get("workload") in names]
    best: dict[str, int] = {}
    for verdict in tuning_verdicts(mine, "goodput"):
        if verdict.objective == "goodput" and verdict.winner in steps:
            best[verdict.workload] = int(steps[verdict.winner] or 0)
    return best


# on the last config's deployment: tests are grouped by config, so this runs after the others
@pytest.mark.parametrize("sglang_server", CONFIGS[-1:], indirect=True)
def test_best_steps_per_concurrency(request: pytest.FixtureRequest, sglang_server: object) -> None:
    results = bench_results(request.config)
    measured = {(r["config_id"], r.get("workload")) for r in results}
    if len(measured & {(c.id, w.name) for c in CONFIGS for w in LEVELS}) < 12:
        pytest.skip("needs every config's run at every level in this session")
    best = best_steps(results)
    table = best_per_workload(tuning_verdicts(results, "goodput"), "goodput")
    shown = "\n".join(line for line, _ in table.lines())
    assert set(best) == {w.name for w in LEVELS}, shown
    assert best["concurrency-1"] >= 3, shown
    assert best["concurrency-32"] <= 2, shown
