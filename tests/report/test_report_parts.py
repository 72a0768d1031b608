"""Sweeps, tables, categories and environment files, from plain data (no session needed)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pytest_sglang.report.allure_output import CATEGORIES, perf_samples
from pytest_sglang.report.environment import HostFacts, environment_properties
from pytest_sglang.report.records import BenchRecord
from pytest_sglang.report.sweeps import find_sweeps
from pytest_sglang.report.tables import bench_csv, comparison_table, sweep_table


def record(
    test: str = "t.py::test_decode",
    host: str = "local",
    config_id: str = "c",
    tuned: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    tok_s: float = 100.0,
) -> BenchRecord:
    return BenchRecord(
        nodeid=f"{test}[{config_id}]",
        test=test,
        host=host,
        config_id=config_id,
        tuned=tuned or {"model_path": "/m"},
        params=params or {},
        info={"workload": "single-stream", "output_throughput": tok_s, "median_ttft_ms": 20.0},
    )


def test_a_config_field_sweep_is_ordered_by_value() -> None:
    runs = [
        record(config_id=f"s{n}", tuned={"model_path": "/m", "speculative_num_steps": n})
        for n in (3, 1, 2)
    ]
    (sweep,) = find_sweeps(runs)
    assert sweep.parameter == "speculative_num_steps"
    assert [p.value for p in sweep.points] == [1, 2, 3]
    assert sweep.numeric


def test_a_test_parameter_sweep() -> None:
    runs = [record(params={"concurrency": c}) for c in (1, 4, 16)]
    (sweep,) = find_sweeps(runs)
    assert sweep.parameter == "concurrency"
    assert [p.label for p in sweep.points] == ["1", "4", "16"]


def test_several_changes_at_once_are_labelled_by_config() -> None:
    runs = [
        record(config_id="a", tuned={"model_path": "/m", "tp_size": 1, "mem_fraction_static": 0.8}),
        record(config_id="b", tuned={"model_path": "/m", "tp_size": 2, "mem_fraction_static": 0.9}),
    ]
    (sweep,) = find_sweeps(runs)
    assert sweep.parameter == "config"
    assert [p.value for p in sweep.points] == ["a", "b"]
    assert not sweep.numeric


@pytest.mark.parametrize(
    "runs",
    [
        [record()],  # one point
        [record(), record()],  # the same point twice
        [record(host="a"), record(host="b")],  # one point on two hosts
        [record(test="t.py::a", config_id="x"), record(test="t.py::b", config_id="y")],
    ],
)
def test_not_a_sweep(runs: list[BenchRecord]) -> None:
    assert find_sweeps(runs) == []


def test_tables_escape_everything() -> None:
    evil = "<script>alert(1)</script>"
    page = comparison_table([{"nodeid": evil, "verdict": "regression", "delta_pct": -12.345}])
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert '<tr class="regression">' in page and "-12.35" in page
    runs = [record(config_id=evil, params={"concurrency": c}) for c in (1, 2)]
    assert "<script>" not in sweep_table(find_sweeps(runs)[0])


def test_bench_csv_has_the_flat_figures() -> None:
    text = bench_csv({"output_throughput": 1.5, "errors": ["x"], "config": {}, "failed": 0})
    assert text.splitlines() == ["output_throughput,failed", "1.5,0"]


def test_environment_properties_escape_and_join_hosts() -> None:
    facts = [
        HostFacts("gpu-a", "4x NVIDIA H100", "550.54", "0.5.23", "/m/a"),
        HostFacts("gpu-b", "8x NVIDIA H200", "550.54", "0.5.23", "/m\\b"),
    ]
    lines = environment_properties(facts).splitlines()
    assert "host=gpu-a; gpu-b" in lines
    assert "gpus=gpu-a: 4x NVIDIA H100; gpu-b: 8x NVIDIA H200" in lines
    assert "driver=550.54" in lines
    assert "model=/m/a; /m\\\\b" in lines


def test_the_environment_names_where_each_hosts_load_came_from() -> None:
    """The same server read through the SSH forward is a fraction of its speed: the Allure
    environment and the HTML summary say which path each host's figures took."""
    from pytest_sglang.report.html_summary import render_summary
    from pytest_sglang.report.records import load_paths

    a, b = record(host="gpu-a"), record(host="gpu-b")
    a.info["bench_from"], b.info["bench_from"] = "host", "forward"
    facts = [
        HostFacts("gpu-a", "4x NVIDIA H100", "550.54", "0.5.23", "/m/a"),
        HostFacts("gpu-b", "8x NVIDIA H200", "550.54", "0.5.23", "/m/b"),
    ]
    paths = load_paths([a, b, record(host="gpu-c")])
    assert paths == {"gpu-a": "host", "gpu-b": "forward"}
    assert "bench_from=gpu-a: host; gpu-b: forward" in environment_properties(facts, (), paths)
    assert "bench_from=host" in environment_properties(facts[:1], (), {"gpu-a": "host"})
    assert "bench_from" not in environment_properties(facts)
    page = render_summary(
        facts=facts, deployments=[], sweeps=[], plots={}, comparisons=[], records=[a, b]
    )
    assert "SGLang 0.5.23; /m/a; load from: host</li>" in page
    assert "/m/b; load from: forward</li>" in page


def test_perf_samples_skip_missing_figures() -> None:
    samples = perf_samples([record()])
    assert {s["key"] for s in samples} == {"sglang.output_throughput", "sglang.median_ttft_ms"}


# The one-line messages the plugin produces (see readiness.py, journal.py, transport/ssh.py,
# deploy/*.py), as allure-pytest records them, and the category each must land in.
MESSAGES = [
    (
        "Failed: local eagle-s1: not ready in time (900s; stuck at phase 'CUDA graphs'); raise "
        "--sglang-ready-timeout if the host is just slow",
        "Not ready in time",
    ),
    (
        "Failed: local eagle-s1: out of memory after 3.2s: Not enough memory. Please try to "
        "increase --mem-fraction-static",
        "Deploy failed",
    ),
    (
        "Failed: llm-two eagle-s1: CUDA graph capture after 40.1s: Capture cuda graph failed",
        "Deploy failed",
    ),
    (
        "Failed: local eagle-s1: crashed (process exited with status 1) after 2.0s; last line: x",
        "Deploy failed",
    ),
    (
        "Failed: local eagle-s1: warmup failed after 9.0s: Initialization failed. warmup error",
        "Deploy failed",
    ),
    (
        "Failed: host 'local' (SGLang 0.5.18) has no flag --cuda-graph-max-bs-decode; remove it "
        "from config x or use a host with an SGLang that has it",
        "Deploy failed",
    ),
    (
        "Failed: local eagle-s1: 1 value(s) in server_args differ from the request (after "
        "SGLang's resolution rules): tp_size requested 4, logged 2",
        "Journal assertion",
    ),
    (
        "pytest_sglang.errors.JournalError: local eagle-s1: no journal line since the restart "
        "matches 'x'",
        "Journal assertion",
    ),
    (
        "Failed: llm-two: authentication failed (publickey refused); check identity/user",
        "SSH/infrastructure",
    ),
    (
        "Failed: llm-two: host key CHANGED: the server offered ssh-ed25519 SHA256:x but "
        "known_hosts has SHA256:y; if",
        "SSH/infrastructure",
    ),
    (
        "Failed: llm-two eagle-s1: lost the host while waiting for readiness: x",
        "SSH/infrastructure",
    ),
    (
        "Failed: output_throughput regression: 12.0% worse > 5% and significant",
        "Performance regression",
    ),
]


@pytest.mark.parametrize(("message", "category"), MESSAGES)
def test_categories_match_the_plugins_messages(message: str, category: str) -> None:
    # Allure 2 matches the whole message (Java), Allure 3 searches it (JavaScript): both agree
    full = [c["name"] for c in CATEGORIES if re.fullmatch(c["messageRegex"], message + "\n...")]
    found = [c["name"] for c in CATEGORIES if re.search(c["messageRegex"], message)]
    assert full == found == [category]


def test_a_first_runs_comparisons_are_one_sentence_not_a_table_of_dashes() -> None:
    from pytest_sglang.report.html_summary import render_summary

    missing = [
        {"nodeid": f"t.py::test_decode[s{n}]", "metric": m, "verdict": "missing", "reason": "x"}
        for n in (1, 2)
        for m in ("output_throughput", "median_ttft_ms")
    ]
    table = comparison_table(missing)
    # no figure column when no row has a figure: the reason stays in view
    assert "baseline</th>" not in table and "p-value" not in table and "reason</th>" in table
    page = render_summary(
        facts=[], deployments=[], sweeps=[], plots={}, comparisons=missing, records=[]
    )
    (sentence,) = re.findall(r'<p class="sglang-missing-baselines">(.*?)</p>', page)
    assert sentence == (
        "No baseline yet for 2 benchmark(s); record them with <code>--sglang-baseline-save</code>: "
        "<code>test_decode[s1]</code>, <code>test_decode[s2]</code>."
    )
    assert "sglang-comparisons" not in page
    compared = {**missing[0], "verdict": "ok", "baseline": 1.0, "current": 1.0, "delta_pct": 0.0}
    page = render_summary(
        facts=[], deployments=[], sweeps=[], plots={}, comparisons=[compared, *missing[2:]],
        records=[],
    )  # fmt: skip
    assert 'class="sglang-comparisons"' in page and "baseline</th>" in page
    assert "No baseline yet for 1 benchmark(s)" in page


def test_a_sweep_over_a_wide_range_is_plotted_on_a_log_axis() -> None:
    from pytest_sglang.report.plots import _log_axis

    assert _log_axis([1.0, 4.0, 16.0, 64.0])
    assert not _log_axis([1.0, 2.0, 3.0, 4.0])  # speculative_num_steps: linear
    assert not _log_axis([0.0, 8.0])


def test_html_tables_show_test_names_with_the_node_id_on_hover() -> None:
    from pytest_sglang.report.tables import deployments_table

    nodeid = "scenarios/test_seed_bench.py::test_concurrency_sweep[eagle-s2-k1-tp4-16]"
    page = comparison_table([{"nodeid": nodeid, "metric": "output_throughput", "verdict": "ok"}])
    assert (
        f'<td class="text" title="{nodeid}">test_concurrency_sweep[eagle-s2-k1-tp4-16]</td>' in page
    )
    ready = {"host": "local", "config_id": "c", "outcome": "ready", "ready_s": 1.0}
    assert "reason" not in deployments_table([ready])  # no failure: no empty why-columns
    failed = {**ready, "outcome": "failed", "reason": "oom", "message": "CUDA out of memory"}
    assert '<th class="text">reason</th>' in deployments_table([ready, failed])


def test_disturbed_rounds_are_in_the_benchmarks_table() -> None:
    """A round the stall check repeated shows in the HTML with its reason; a run kept out of
    the gates (disturbed twice) is marked; without any, the table has no such column."""
    from pytest_sglang.report.tables import benchmarks_table

    clean, cut = record(config_id="a"), record(config_id="b")
    cut.info.update(
        disturbed=["round 1: disturbed: network stall of 3.1 s at 1.5 s (repeated)"], gated=False
    )
    assert "disturbed" not in benchmarks_table([clean])
    table = benchmarks_table([clean, cut])
    assert "disturbed</th>" in table
    assert '<tr class="failed">' in table and table.count('<tr class="failed">') == 1
    assert "network stall of 3.1 s at 1.5 s (repeated)</td>" in table


def test_runs_of_different_workloads_are_not_one_sweep() -> None:
    """A test that builds its workload from its config: the configs measured with 64-token
    answers and with 128-token ones are two sweeps, never one."""
    runs = [
        record(config_id=f"s{n}", tuned={"model_path": "/m", "speculative_num_steps": n})
        for n in (1, 2, 3, 4)
    ]
    for run, key in zip(runs, ("a", "b", "a", "b")):
        run.info["workload_key"] = key * 16
    sweeps = find_sweeps(runs)
    assert [[p.record.config_id for p in s.points] for s in sweeps] == [["s1", "s3"], ["s2", "s4"]]
    varied = [record(params={"concurrency": c}) for c in (1, 4)]
    for run, key in zip(varied, ("a", "b")):
        run.info["workload_key"] = key * 16
    (sweep,) = find_sweeps(varied)  # the parameter is the axis, the workload follows it
    assert sweep.parameter == "concurrency"


def test_one_config_under_two_names_is_one_sweep_point() -> None:
    """Two names of one digest measured by one test: one point (the last run), both names."""
    tuned = {"model_path": "/m", "speculative_num_steps": 3}
    runs = [
        record(config_id="production-s3", tuned=tuned, tok_s=300.0),
        record(config_id="s1", tuned={"model_path": "/m", "speculative_num_steps": 1}),
        record(config_id="s3", tuned=tuned, tok_s=310.0),
    ]
    for run, digest in zip(runs, ("d3", "d1", "d3")):
        run.info["config_digest"] = digest
    (sweep,) = find_sweeps(runs)
    assert [(p.value, p.config) for p in sweep.points] == [(1, "s1"), (3, "production-s3 = s3")]
    assert sweep.points[1].record.metric("output_throughput") == 310.0
    assert '<td class="text">production-s3 = s3</td>' in sweep_table(sweep)


def test_cache_figures_show_where_a_run_has_them() -> None:
    """The prefix-cache hit rates get their columns in the HTML tables and their samples in
    Allure's performance file when a run has them; runs without them keep the tables as they
    were."""
    from pytest_sglang.report.tables import benchmarks_table

    plain, cached = record(config_id="a"), record(config_id="b")
    cached.info.update(cache_hit_rate=0.625, server_cache_hit_rate=None)
    assert "cache hit rate" not in benchmarks_table([plain])
    table = benchmarks_table([plain, cached])
    assert "cache hit rate</th>" in table and "server cache hit rate" not in table
    assert "<td>0.625</td>" in table
    runs = [record(params={"concurrency": c}) for c in (1, 4)]
    runs[1].info.update(cache_hit_rate=0.5)
    (sweep,) = find_sweeps(runs)
    assert "cache hit rate</th>" in sweep_table(sweep)
    samples = {s["key"]: s for s in perf_samples([cached])}
    hit = samples["sglang.cache_hit_rate"]
    assert (hit["value"], hit["better"], hit["groupTitle"]) == (
        0.625,
        "higher",
        "SGLang prefix cache",
    )
    assert "sglang.server_cache_hit_rate" not in samples
