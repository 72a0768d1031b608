"""Shared-prefix traffic: lpm or fcfs, the radix cache on or off, which chunked-prefill size?

Groups of requests that share a long system prompt (bench_serving's generated-shared-prefix,
``Workload.shared_prefix``) arrive at several rates; each config is production with one change.
The tuning verdict ranks them by goodput (requests/s meeting p99 TTFT within the SLO) per rate.
docs/prefix-tuning.md has the question, the figures and the reading.
"""

from __future__ import annotations

import pytest

from pytest_sglang import SglangBench, Workload, bench_results, production, tuning_verdicts

pytestmark = pytest.mark.tuning

#: Production and one change each; named for what they change.
CONFIGS = [
    production(),  # fcfs, radix cache on, the server's default chunked-prefill size
    production(extra_args=("--schedule-policy", "lpm")).replace(name="production-lpm"),
    production(extra_args=("--disable-radix-cache",)).replace(name="production-no-radix"),
    production(chunked_prefill_size=512).replace(name="production-chunk512"),
]
SLO = "p99_ttft_ms<=500"
#: A rate the server meets with any of them, and one where the prefill work decides.
LOW, HIGH = 8.0, 32.0


def traffic(rate: float) -> Workload:
    """Eight groups of four requests, each a 2048-token system prompt of its group and a
    128-token question; ``/generate`` reports each request's cached tokens (the OpenAI APIs
    only with ``--enable-cache-report``, which would be a change of its own)."""
    return Workload.shared_prefix(
        num_groups=8,
        prompts_per_group=4,
        system_prompt_len=2048,
        question_len=128,
        output_len=32,
        request_rate=rate,
        api="generate",
        flush_cache=True,
    )


@pytest.mark.parametrize("rate", [LOW, HIGH])
@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_shared_prefix_traffic(sglang_bench: SglangBench, rate: float) -> None:
    result = sglang_bench(traffic(rate), rounds=1, slo=SLO)
    assert result.failed == 0, result.errors


# on the last config's deployment: tests are grouped by config, so this runs after the others
@pytest.mark.parametrize("sglang_server", CONFIGS[-1:], indirect=True)
def test_the_verdict_per_rate(request: pytest.FixtureRequest, sglang_server: object) -> None:
    results = bench_results(request.config)
    measured = {(r["config_id"], r.get("workload")) for r in results}
    if len(measured) < 2 * len(CONFIGS):
        pytest.skip("needs every config's runs at both rates in this session")
    verdicts = {
        v.workload: v for v in tuning_verdicts(results, "goodput") if v.objective == "goodput"
    }
    high = verdicts[traffic(HIGH).name]
    goodput = {r.config_id: r.value or 0.0 for r in high.ranking}
    # without the cache every request prefills its 2048-token system prompt again
    assert goodput["production-no-radix"] < 0.5 * goodput["production"], high.sentence
    # 512-token chunks spread the first prefill of each group over four steps
    assert goodput["production-chunk512"] < goodput["production"], high.sentence
    assert high.winner in ("production", "production-lpm"), high.sentence
