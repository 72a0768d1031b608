"""SLOs, goodput and the sustainable-load search, on a simulator with a known saturation point.

With ``SGLANG_SIM_TTFT_MS`` / ``ITL_MS`` and ``SGLANG_SIM_CAPACITY`` the simulator serves each
request in exactly TTFT + (tokens - 1) x ITL and at most CAPACITY at once: with constant
arrivals no request waits below CAPACITY / service time requests per second, and above it the
queue (and every TTFT) grows with each arrival. So the highest rate meeting a TTFT bound with
room to spare is that figure, and the search must land within its stated precision of it.

How close a probe can see: above saturation each arrival waits 1/SATURATION - 1/rate longer
than the one before, so a probe of N requests exposes the overload once N times that exceeds
the bound's slack over the injected TTFT: 64 requests and 60 ms of slack notice 20.4 req/s.
The slack and the 95 % that must meet the bound absorb a busy machine's late wake-ups below it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import pytest

from pytest_sglang.bench import Workload
from pytest_sglang.bench.loadgen import run_workload
from pytest_sglang.bench.metrics import BenchResult, RequestRecord
from pytest_sglang.bench.search import ProbeDisturbed, ProbeRunner, run_search, search_over
from pytest_sglang.bench.slo import Slo, slo_figures
from pytest_sglang.errors import ConfigError

TTFT_MS, ITL_MS, TOKENS, CAPACITY = 50, 10, 16, 4
#: requests per second the injected server sustains: 4 / 0.2 s
SATURATION = CAPACITY / ((TTFT_MS + (TOKENS - 1) * ITL_MS) / 1000)
EXACT = {
    "SGLANG_SIM_TTFT_MS": str(TTFT_MS),
    "SGLANG_SIM_ITL_MS": str(ITL_MS),
    "SGLANG_SIM_CAPACITY": str(CAPACITY),
}


def test_search_finds_the_known_saturation_rate_within_its_precision(simulator) -> None:
    url = simulator(env=EXACT)
    search = Workload.max_rate(
        "p99_ttft_ms<=110",
        low=4,
        high=64,
        output_tokens=TOKENS,
        burstiness=math.inf,
        precision=0.1,
        fraction=0.95,
        probe_time_s=3.2,
        budget_s=60,
    )
    found = run_search(url, search, model="qwen3-8b")
    assert found.status == "found", found.describe()
    low, high = found.bracket
    assert low is not None and high is not None and high / low - 1 <= 0.1
    # the threshold lies in the bracket, allowing the client's few ms of timing jitter
    assert low <= SATURATION * 1.05 and high >= SATURATION * 0.95, found.describe()
    assert found.best == low
    levels = [p.level for p in found.probes]
    # up from ``low`` by doubling, or quadrupling after a probe clearly under (TTFT 50 ms is
    # just under half the bound: which one a probe is depends on the machine's jitter) ...
    climb = levels[: next(i for i, p in enumerate(found.probes) if not p.passed) + 1]
    assert climb[0] == 4 and all(b / a in (2, 4) for a, b in itertools.pairwise(climb)), levels
    over = [p for p in found.probes if not p.passed]
    assert over and all(p.early_stop == "over" for p in over if p.level >= 32)
    assert all(p.completed < p.requests for p in over if p.level >= 32)


def test_a_config_that_misses_the_slo_at_the_lowest_rate_is_unmet_not_zero(simulator) -> None:
    url = simulator(env=EXACT)
    search = Workload.max_rate("p99_ttft_ms<=30", low=2, high=16, output_tokens=TOKENS)
    found = run_search(url, search, model="qwen3-8b")
    assert found.status == "unmet"
    assert found.best is None
    assert len(found.probes) == 1 and found.probes[0].early_stop == "over"
    assert "not met even at 2 req/s" in found.describe()


def test_a_clearly_passing_probe_quadruples_the_next_level(simulator) -> None:
    url = simulator(env=EXACT)
    search = Workload.max_rate(
        "p99_ttft_ms<=200",
        low=4,
        high=16,
        output_tokens=TOKENS,
        burstiness=math.inf,
        probe_time_s=1,
    )
    found = run_search(url, search, model="qwen3-8b")
    assert [p.level for p in found.probes] == [4, 16]  # 50 ms is within half of 200
    assert found.status == "above range" and found.best == 16


def test_concurrency_search_finds_the_capacity(simulator) -> None:
    url = simulator(env=EXACT)
    search = Workload.max_concurrency(
        "p99_ttft_ms<=120", low=1, high=32, output_tokens=TOKENS, probe_requests=24
    )
    found = run_search(url, search, model="qwen3-8b")
    assert found.status == "found", found.describe()
    assert found.best == CAPACITY, [(p.level, p.passed) for p in found.probes]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("p99_ttft_ms<=-5", "the bound must be a finite number of ms above 0"),
        ("p99_latency_ms<=100", "unknown metric"),
        ("p95_ttft_ms<=100", "unknown metric"),
        ("p99_ttft_ms<=fast", "is not a number of ms"),
        ("", "give at least one bound"),
        ("p99_ttft_ms<=1,p99_ttft_ms<=2", "given twice"),
    ],
)
def test_bad_slos_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        Slo.parse(text)
    assert "\n" not in str(info.value)


def test_impossible_search_settings_are_one_line_errors() -> None:
    with pytest.raises(ConfigError, match=r"fraction=1\.5") as info:
        Workload.max_rate("p99_ttft_ms<=100", fraction=1.5)
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="needs 0 < low < high"):
        Workload.max_rate("p99_ttft_ms<=100", low=8, high=4)


def _record(ttft: float, gaps: list[float], tokens: int) -> RequestRecord:
    e2e = ttft + sum(gaps)
    return RequestRecord(ttft=ttft, itls=gaps, e2e=e2e, completion_tokens=tokens)


def test_goodput_counts_requests_meeting_every_bound() -> None:
    slo = Slo(p99_ttft_ms=100, median_itl_ms=20)
    fine = _record(0.05, [0.01] * 9, 10)
    slow_start = _record(0.2, [0.01] * 9, 10)
    slow_gaps = _record(0.05, [0.03] * 9, 10)
    failed = _record(0.05, [0.01] * 9, 10).fail("timeout", "late")
    figures = slo_figures(slo, [fine, slow_start, slow_gaps, failed], duration=2.0)
    assert figures == {
        "slo": "p99_ttft_ms<=100,median_itl_ms<=20",
        "slo_attainment": 0.25,
        "goodput": 0.5,
        "output_goodput": 5.0,
    }
    assert Slo.parse(str(slo)) == slo


def test_itl_bounds_are_per_token_and_chunk_gap_bounds_per_chunk() -> None:
    """Under speculative decoding a chunk of 4 tokens 20 ms after the previous one is 5 ms per
    token (bench_serving's ITL) but 20 ms of waiting for the reader (the chunk gap)."""
    record = RequestRecord(
        ttft=0.05, e2e=0.11, completion_tokens=13, itls=[0.005] * 12, chunk_gaps=[0.02] * 3
    )
    assert Slo.parse("median_itl_ms<=10").met_by(record)
    assert not Slo.parse("median_chunk_gap_ms<=10").met_by(record)
    assert Slo.parse("p99_chunk_gap_ms<=20").met_by(record)


def _disturbing_runner(url: str, disturbed: dict[float, int]) -> tuple[list[float], ProbeRunner]:
    """Probes sent to ``url``; the first ``disturbed[rate]`` runs at a rate are disturbed."""
    levels: list[float] = []

    def run(workload: Workload, observe: Callable[[RequestRecord], bool]) -> BenchResult:
        rate = float(workload.request_rate or 0)
        levels.append(rate)
        if disturbed.get(rate, 0) > 0:
            disturbed[rate] -= 1
            raise ProbeDisturbed("network stall of 3.0 s at 1.0 s")
        return run_workload(url, workload, model="qwen3-8b", observe=observe)

    return levels, run


def test_a_disturbed_probe_is_repeated_and_twice_ends_the_search(simulator) -> None:
    """A probe the network disturbed is run again (and says so); disturbed twice, the search
    ends with the reason instead of placing the threshold on a stall."""
    url = simulator(env=EXACT)
    search = Workload.max_rate(
        "p99_ttft_ms<=110", low=4, high=8, output_tokens=TOKENS, probe_time_s=1, budget_s=30
    )
    levels, run = _disturbing_runner(url, {4.0: 1})
    found = search_over(run, search)
    first = found.probes[0]
    assert levels[1:3] == [4.0, 4.0] and first.passed, levels
    assert first.repeated == "network stall of 3.0 s at 1.0 s"
    assert all(p.repeated == "" for p in found.probes[1:])
    _, run = _disturbing_runner(url, {4.0: 2})
    with pytest.raises(ProbeDisturbed) as err:
        search_over(run, search)
    assert str(err.value) == (
        "the probe at 4 req/s was disturbed twice: network stall of 3.0 s at 1.0 s"
    )


def test_a_disturbed_warm_up_does_not_end_the_search(simulator) -> None:
    """The warm-up request before the first probe measures nothing: a stall there is no reason
    to give up the search (its probes run and are judged as usual)."""
    url = simulator(env=EXACT)
    search = Workload.max_rate(
        "p99_ttft_ms<=110", low=4, high=8, output_tokens=TOKENS, probe_time_s=1, budget_s=30
    )
    levels, run = _disturbing_runner(url, {0.0: 1})  # the warm-up is one stream, no rate
    found = search_over(run, search)
    assert levels[:2] == [0.0, 4.0] and found.probes[0].passed, levels
    assert all(p.repeated == "" for p in found.probes)
