"""The shared-prefix tuning question (docs/prefix-tuning.md) asked of the real server on CPU.

A reduced ``scenarios/test_prefix_tuning.py``: the tier's production (the tiny model on CPU),
with lpm and without the radix cache, on bench_serving's generated-shared-prefix traffic at two
rates, run as a pytest session of its own against the real 0.5.23. The tuning verdict must rank
every rate's sweep, and the cache figures must be the real server's: a hit rate with the radix
cache, none without it.
"""

from __future__ import annotations

import re

import pytest

from conftest import RealSglang, local_real_entry

SCENARIO = """
import pytest

from pytest_sglang import Workload, bench_results, production, tuning_verdicts

CONFIGS = [
    production(),
    production(extra_args=("--schedule-policy", "lpm")).replace(name="production-lpm"),
    production(extra_args=("--disable-radix-cache",)).replace(name="production-no-radix"),
]
RATES = [2.0, 8.0]


def traffic(rate):
    return Workload.shared_prefix(
        num_groups=4, prompts_per_group=4, system_prompt_len=1024, question_len=64,
        output_len=16, request_rate=rate, api="generate", flush_cache=True,
    )


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_traffic(sglang_bench, rate):
    result = sglang_bench(traffic(rate), rounds=1, slo="p99_ttft_ms<=2000")
    assert result.failed == 0, result.errors


@pytest.mark.parametrize("sglang_server", CONFIGS[-1:], indirect=True)
def test_verdicts(request, sglang_server):
    verdicts = tuning_verdicts(bench_results(request.config), "goodput")
    ranked = {v.workload for v in verdicts if v.objective == "goodput"}
    assert ranked == {traffic(rate).name for rate in RATES}, ranked
"""

#: A row of the "sglang benchmarks" table: config, workload, then figures ending in the cache
#: hit rate and the failed count.
ROW = re.compile(r"^(production\S*)\s+(shared-prefix-rate-\S+)\s.*?\s(\d+\.\d)%\s+0/16$", re.M)


def test_the_tuning_question_on_the_real_server(
    pytester: pytest.Pytester, real_sglang: RealSglang
) -> None:
    pytester.makepyfile(test_prefix_tuning=SCENARIO)
    inventory = pytester.path / "hosts.toml"
    inventory.write_text(local_real_entry("real", real_sglang, real_sglang.production_line()))
    result = pytester.runpytest_subprocess(
        "--sglang-inventory", str(inventory), "--sglang-host", "real", "-p", "no:cacheprovider",
        timeout=900,
    )  # fmt: skip
    out = result.stdout.str()
    print(out[out.find("sglang tuning") - 40 :])  # the verdicts and the table, for pytest -s
    result.assert_outcomes(passed=7)
    hit = {(m[1], m[2]): float(m[3]) for m in ROW.finditer(out)}
    assert len(hit) == 6, out[-3000:]
    for (config, workload), rate in hit.items():
        if config == "production-no-radix":
            assert rate == 0.0, (config, workload)
        else:  # 12 of 16 requests reuse a group's system prompt: up to 12 * 1024 / (16 * 1088)
            assert 0.0 < rate <= 70.6, (config, workload, rate)
    assert "[goodput] shared-prefix-rate-2" in out and "[goodput] shared-prefix-rate-8" in out
