"""The sglang_bench fixture in a real pytest session against the simulator (pytester)."""

from __future__ import annotations

import json

import pytest

TEST = """
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.bench import Workload

CFG = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b",
                   speculative_algorithm="EAGLE", speculative_num_steps=2,
                   speculative_eagle_topk=1)

@pytest.mark.parametrize("sglang_server", [CFG], indirect=True)
def test_decode(sglang_bench):
    result = sglang_bench(Workload.single_stream(32), rounds=2)
    assert result.completed == 1

@pytest.mark.parametrize("sglang_server", [CFG], indirect=True)
def test_twice(sglang_bench):
    sglang_bench(Workload.fixed_concurrency(2, num_requests=2, output_tokens=4))
    sglang_bench(Workload.fixed_concurrency(2, num_requests=2, output_tokens=4))
"""


pytestmark = pytest.mark.usefixtures("fast_simulator")


def test_fixture_fills_extra_info_and_the_summary_table(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TEST)
    out = pytester.path / "bench.json"
    result = pytester.runpytest(
        "-p", "pytest_sglang.bench.pytest_plugin", f"--benchmark-json={out}"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*sglang_bench can run one workload per test*",
            "*sglang benchmarks*",
            "*config*workload*out tok/s*TTFT p50 ms*ITL p50 ms*accept*failed*",
            "*eagle-s2-k1*single-stream*",
        ]
    )
    data = json.loads(out.read_text())
    [bench] = [b for b in data["benchmarks"] if b["name"].startswith("test_decode")]
    info = bench["extra_info"]
    for key in (
        "output_throughput",
        "total_throughput",
        "request_throughput",
        "mean_ttft_ms",
        "median_ttft_ms",
        "p90_ttft_ms",
        "p99_ttft_ms",
        "median_itl_ms",
        "p99_itl_ms",
        "median_tpot_ms",
        "median_e2e_latency_ms",
        "completed",
        "failed",
        "accept_length",
        "duration",
        "workload",
        "config_id",
        "config",
        "host",
    ):
        assert key in info, key
    assert info["workload"] == "single-stream"
    assert info["config_id"] == "eagle-s2-k1"
    assert info["host"] == "local"
    assert info["config"]["speculative_num_draft_tokens"] == 3
    assert info["completed"] == 1 and info["failed"] == 0
    assert info["rounds"] == 2 and len(info["output_throughput_rounds"]) == 2
    assert bench["stats"]["rounds"] == 2
