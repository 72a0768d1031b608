"""SLO figures, the sustainable-rate search and the tuning verdict in a real pytest session.

Two configs on a simulator with injected timings and a capacity (the same saturation point for
both): the verdict must rank them, and say that the two cannot be told apart, not crown one.
"""

from __future__ import annotations

import json

import pytest
from helpers import use_simulator_env

TEST = """
import math
import pytest
from pytest_sglang import ServerConfig, sweep
from pytest_sglang.bench import Workload

BASE = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b",
                    speculative_algorithm="EAGLE", speculative_num_steps=1,
                    speculative_eagle_topk=1)
CONFIGS = sweep(BASE, speculative_num_steps=[1, 3])
SEARCH = Workload.max_rate("p99_ttft_ms<=60", low=8, high=64, output_tokens=8,
                           burstiness=math.inf, precision=0.3, probe_time_s=1)

@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_stream(sglang_bench):
    result = sglang_bench(Workload.single_stream(8), rounds=2, slo="p99_ttft_ms<=1000")
    assert result.completed == 1

@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_rate(sglang_bench):
    found = sglang_bench(SEARCH)
    assert found.best is not None
"""

EXACT = {
    "SGLANG_SIM_TTFT_MS": "20",
    "SGLANG_SIM_ITL_MS": "5",
    "SGLANG_SIM_CAPACITY": "2",
    "SGLANG_SIM_STARTUP_SCALE": "0",
}


@pytest.fixture(autouse=True)
def exact_simulator(monkeypatch: pytest.MonkeyPatch) -> None:
    use_simulator_env(monkeypatch, drop=("SGLANG_SIM_FAULT",))
    for name, value in EXACT.items():
        monkeypatch.setenv(name, value)


def test_slo_figures_search_and_verdict_reach_every_output(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TEST)
    bench = pytester.path / "bench.json"
    summary = pytester.path / "summary.json"
    html_page = pytester.path / "summary.html"
    # in a child process: the HTML summary's plot imports numpy, which cannot be imported twice
    # in one process (an in-process run would unload it at the end)
    result = pytester.runpytest_subprocess(
        f"--benchmark-json={bench}",
        f"--sglang-summary={summary}",
        f"--sglang-html={html_page}",
        "--sglang-gate",
        "goodput:-5%",
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "*sglang tuning*",
            "[[]max-rate[]] max-rate under p99_ttft_ms<=60",
            "*not distinguishable from eagle-s*",
            "[[]single-stream[]] single-stream",
        ]
    )
    data = json.loads(bench.read_text())
    streams = [b["extra_info"] for b in data["benchmarks"] if b["name"].startswith("test_stream")]
    for info in streams:
        assert info["slo"] == "p99_ttft_ms<=1000"
        assert info["slo_attainment"] == 1.0
        assert info["goodput"] > 0 and info["output_goodput"] > 0
        assert len(info["goodput_rounds"]) == 2
    searches = [b["extra_info"] for b in data["benchmarks"] if b["name"].startswith("test_rate")]
    for info in searches:
        assert info["workload"] == "max-rate"
        assert info["search_status"] in ("found", "above range")
        assert info["max_rate"] == info["search"]["bracket"][0]
        assert all("level" in p and "passed" in p for p in info["search"]["probes"])
    tuning = json.loads(summary.read_text())["tuning"]
    [by_rate] = [v for v in tuning if v["objective"] == "max-rate"]
    assert by_rate["distinguishable"] is False
    assert {r["config_id"] for r in by_rate["ranking"]} == {"eagle-s1-k1", "eagle-s3-k1"}
    page = html_page.read_text()
    assert "Tuning verdict" in page and "not distinguishable" in page
