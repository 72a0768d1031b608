"""SLO figures, the sustainable-rate search and the tuning verdict in a real pytest session.

Two configs on a simulator with injected timings and a capacity (the same saturation point for
both): the verdict must rank them, and say that the two cannot be told apart, not crown one.
Then, on the simulator's own timing: a chunk-gap bound that an EAGLE config's chunks miss or
meet, and a faster config that fails its accuracy floor, which the verdict must not crown.
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


CHUNK_GAP = """
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.bench import Workload
from pytest_sglang.bench.slo import Slo

EAGLE = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b",
                     speculative_algorithm="EAGLE", speculative_num_steps=2,
                     speculative_eagle_topk=1)

@pytest.mark.parametrize("bound", ["median_chunk_gap_ms<=1", "median_chunk_gap_ms<=60000"])
@pytest.mark.parametrize("sglang_server", [EAGLE], indirect=True)
def test_chunks(sglang_bench, bound):
    workload = Workload.fixed_concurrency(2, num_requests=4, output_tokens=24)
    assert sglang_bench(workload, slo=Slo.parse(bound)).completed == 4
"""


def test_a_chunk_gap_bound_decides_slo_attainment_and_goodput(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At a real time scale an EAGLE config's chunks come a decode step apart (several ms):
    every request misses a 1 ms median chunk-gap bound, and meets a 60 s one."""
    use_simulator_env(
        monkeypatch, {"SGLANG_SIM_STARTUP_SCALE": "0", "SGLANG_SIM_TIME_SCALE": "1"}, drop=EXACT
    )
    pytester.makepyfile(CHUNK_GAP)
    summary = pytester.path / "summary.json"
    result = pytester.runpytest(f"--sglang-summary={summary}")
    result.assert_outcomes(passed=2)
    rows = {r["slo"]: r for r in json.loads(summary.read_text())["benchmarks"]}
    tight, loose = rows["median_chunk_gap_ms<=1"], rows["median_chunk_gap_ms<=60000"]
    assert tight["median_chunk_gap_ms"] > 1  # the bound really is below what the run did
    assert (tight["slo_attainment"], tight["goodput"], tight["output_goodput"]) == (0.0, 0.0, 0.0)
    assert loose["slo_attainment"] == 1.0
    assert loose["goodput"] > 0 and loose["output_goodput"] > 0


FASTER_BUT_WORSE = """
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.bench import Workload
from pytest_sglang.quality import Task

BASE = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")
# an FP8 KV cache on a build that decodes twice as fast and answers far worse
FP8 = BASE.model_copy(update=dict(
    kv_cache_dtype="fp8_e4m3",
    env={"SGLANG_SIM_SPEED_FACTOR": "2", "SGLANG_SIM_ACCURACY": "0.5"},
))

@pytest.mark.parametrize("sglang_server", [BASE, FP8], indirect=True)
def test_speed(sglang_bench):
    sglang_bench(Workload.single_stream(48), rounds=2)

@pytest.mark.parametrize("sglang_server", [BASE, FP8], indirect=True)
def test_accuracy(sglang_quality):
    sglang_quality.accuracy(Task.arithmetic(100), min_accuracy=0.7)
"""


def test_the_tuning_verdict_never_crowns_a_faster_config_that_fails_quality(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Quality and speed from one session: the FP8 config is about twice as fast single-stream
    and misses the accuracy floor (44 % expected against 70 %); the base config (85 %) wins."""
    use_simulator_env(
        monkeypatch, {"SGLANG_SIM_STARTUP_SCALE": "0", "SGLANG_SIM_TIME_SCALE": "0.2"}, drop=EXACT
    )
    pytester.makepyfile(FASTER_BUT_WORSE)
    summary = pytester.path / "summary.json"
    result = pytester.runpytest(f"--sglang-summary={summary}", "--sglang-objective=single-stream")
    result.assert_outcomes(passed=3, failed=1)
    data = json.loads(summary.read_text())
    [fp8] = [cid for cid, holds in data["quality_holds"].items() if not holds]
    assert fp8.startswith("kv-fp8_e4m3") and data["quality_holds"]["base"] is True
    speed = {
        r["config_id"]: r["output_throughput"]
        for r in data["benchmarks"]
        if r["workload"] == "single-stream"
    }
    assert speed[fp8] > speed["base"]  # the faster one (about 2x), so the verdict passed it over
    [verdict] = [v for v in data["tuning"] if v["objective"] == "single-stream"]
    assert verdict["winner"] == "base"
    assert [r["config_id"] for r in verdict["ranking"]] == ["base", fp8]
    assert verdict["ranking"][1]["note"] == "fails quality"
    assert verdict["sentence"] == (
        f"single-stream: base is the only config with a value whose quality holds "
        f"({fp8} fails quality)"
    )
    result.stdout.fnmatch_lines(["*accuracy *% on * is below the floor 70.0% (*/100, 95% CI *"])
    result.stdout.fnmatch_lines(
        [
            "*sglang tuning*",
            "[[]single-stream[]] single-stream",
            f"  single-stream: base is the only config with a value whose quality holds ({fp8} "
            "fails quality)",
            "  1. base *",
            f"  2. {fp8} *(fails quality)",
        ]
    )
