"""The tuning verdict from benchmark results: ranking, margins, noise and the Pareto frontier."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_sglang.report.tuning import (
    best_per_workload,
    frontier,
    tuning_html,
    tuning_verdicts,
    verdict_lines,
)


def _search(config_id: str, best: float | None, low: float | None, high: float | None) -> dict:
    probes = [
        {"level": 4.0, "passed": True, "output_throughput": 400.0, "latency_ms": 100.0},
    ]
    if best is not None:
        probes.append(
            {"level": best, "passed": True, "output_throughput": best * 100, "latency_ms": 600.0}
        )
    return {
        "config_id": config_id,
        "workload": "max-rate",
        "slo": "p99_ttft_ms<=1000",
        "max_rate": best,
        "search_status": "found" if best is not None else "unmet",
        "search": {"bracket": [low, high], "probes": probes},
        "config": {"tp_size": 4},
    }


def _stream(config_id: str, rounds: list[float]) -> dict[str, Any]:
    return {
        "config_id": config_id,
        "workload": "single-stream",
        "output_throughput": rounds[-1],
        "output_throughput_rounds": rounds,
        "config": {"tp_size": 2},
    }


def test_max_rate_winner_margin_and_bracket() -> None:
    results = [_search("s3", 10.0, 10.0, 11.0), _search("s1", 16.0, 16.0, 17.6)]
    [verdict] = [v for v in tuning_verdicts(results) if v.objective == "max-rate"]
    assert verdict.winner == "s1"
    assert verdict.margin_pct == pytest.approx(60.0)
    assert verdict.distinguishable is True
    assert verdict.margin_ci_pct == pytest.approx((16 / 11 * 100 - 100, 17.6 / 10 * 100 - 100))
    assert "s1 wins, 16 req/s vs s3 10" in verdict.sentence
    # s1's 16 req/s probe beats s3's best on both axes; the shared 4 req/s probe ties
    assert verdict.frontier == ["s1", "s3"]
    results[0]["search"]["probes"] = results[0]["search"]["probes"][1:]
    [verdict] = [v for v in tuning_verdicts(results) if v.objective == "max-rate"]
    assert verdict.frontier == ["s1"]


def test_overlapping_brackets_are_not_distinguishable() -> None:
    results = [_search("a", 10.0, 10.0, 11.5), _search("b", 10.5, 10.5, 12.0)]
    [verdict] = [v for v in tuning_verdicts(results) if v.objective == "max-rate"]
    assert verdict.winner == "b" and verdict.distinguishable is False
    assert "not distinguishable from a" in verdict.sentence


def test_a_config_that_never_meets_the_slo_is_ranked_last_and_says_so() -> None:
    results = [_search("slow", None, None, 2.0), _search("fast", 8.0, 8.0, 9.0)]
    [verdict] = [v for v in tuning_verdicts(results) if v.objective == "max-rate"]
    assert [r.config_id for r in verdict.ranking] == ["fast", "slow"]
    assert verdict.ranking[1].value is None
    assert "SLO not met even at 2 req/s" in "\n".join(verdict_lines([verdict]))


def test_a_faster_config_that_fails_quality_never_wins() -> None:
    results = [_search("s1", 16.0, 16.0, 17.6), _search("s3", 10.0, 10.0, 11.0)]
    results += [_search("s2", 12.0, 12.0, 13.0)]
    holds = {"s1": False, "s2": True}  # s3 had no quality eval: taken as holding
    [verdict] = [v for v in tuning_verdicts(results, quality=holds) if v.objective == "max-rate"]
    assert verdict.winner == "s2"
    assert [r.config_id for r in verdict.ranking] == ["s2", "s3", "s1"]
    assert verdict.ranking[-1].note == "fails quality"
    assert verdict.sentence.startswith("max-rate: s2 wins, 12 req/s vs s3 10")
    assert verdict.sentence.endswith("; s1 is faster but fails quality")
    only = [results[0], results[2]]
    [verdict] = [v for v in tuning_verdicts(only, quality=holds) if v.objective == "max-rate"]
    assert verdict.winner == "s2"
    assert "only config with a value whose quality holds (s1 fails quality)" in verdict.sentence
    [verdict] = [
        v
        for v in tuning_verdicts(only, quality={"s1": False, "s2": False})
        if v.objective == "max-rate"
    ]
    assert verdict.winner is None
    assert verdict.sentence == "max-rate: no config whose quality holds has a value"


def test_rounds_give_a_welch_interval_and_noise_is_called_noise() -> None:
    clear = tuning_verdicts([_stream("s4", [257, 256, 258]), _stream("s3", [219, 220, 218])])
    [one] = [v for v in clear if v.objective == "single-stream"]
    assert one.winner == "s4" and one.distinguishable is True
    low, high = one.margin_ci_pct or (0.0, 0.0)
    assert 0 < low < one.margin_pct < high  # type: ignore[operator]
    noisy = tuning_verdicts([_stream("a", [100, 110, 90]), _stream("b", [101, 95, 108])])
    [two] = [v for v in noisy if v.objective == "single-stream"]
    assert two.distinguishable is False and "not distinguishable" in two.sentence


def test_stated_objective_comes_first_and_per_gpu_divides_by_gpus() -> None:
    results = [_stream("a", [100.0]), _stream("b", [80.0]), _search("a", 5, 5, 6)]
    verdicts = tuning_verdicts(results, "per-gpu")
    assert verdicts[0].objective == "per-gpu"
    assert verdicts[0].ranking[0].value == pytest.approx(50.0)  # 100 tok/s on TP 2
    assert "no interval (one round)" in verdicts[0].sentence
    with pytest.raises(ValueError, match="unknown objective"):
        tuning_verdicts(results, "fastest")


def test_frontier_keeps_only_undominated_points() -> None:
    points = [("a", 100.0, 50.0), ("b", 200.0, 80.0), ("c", 150.0, 90.0), ("d", 50.0, 40.0)]
    assert frontier(points) == [("a", 100.0, 50.0), ("b", 200.0, 80.0), ("d", 50.0, 40.0)]


def test_html_names_the_winner_and_the_frontier() -> None:
    verdicts = tuning_verdicts([_search("s3", 10.0, 10.0, 11.0), _search("s1", 16.0, 16.0, 17.6)])
    page = tuning_html(verdicts)
    assert "s1 wins" in page and "<table>" in page and "yes" in page


def test_plot_draws_one_chart_of_the_curves() -> None:
    pytest.importorskip("matplotlib")
    from pytest_sglang.report.tuning_plot import plot_tuning

    results = [_search("s3", 10.0, 10.0, 11.0), _search("s1", 16.0, 16.0, 17.6)]
    [verdict] = [v for v in tuning_verdicts(results) if v.objective == "max-rate"]
    png = plot_tuning(verdict, results)
    assert png is not None and png.startswith(b"\x89PNG")


def test_only_results_of_one_workload_are_ranked_together() -> None:
    """Two configs measured with different answer lengths share the name single-stream but
    are two workloads: no ranking puts them side by side."""
    short, long = (
        {**_stream("production-s3", [300, 301, 299]), "workload_key": "a" * 16},
        {**_stream("eagle-s3-k1-tp4", [280, 281, 279]), "workload_key": "b" * 16},
    )
    assert [v for v in tuning_verdicts([short, long]) if v.objective == "single-stream"] == []
    peer = {**_stream("eagle-s3-k1-tp4", [290, 291, 289]), "workload_key": "a" * 16}
    other = {**_stream("production-s2", [270, 271, 269]), "workload_key": "b" * 16}
    verdicts = [
        v for v in tuning_verdicts([short, long, peer, other]) if v.objective == "single-stream"
    ]
    assert {(v.workload_key, v.winner) for v in verdicts} == {
        ("a" * 16, "production-s3"),
        ("b" * 16, "eagle-s3-k1-tp4"),
    }
    lines = verdict_lines(verdicts)
    assert "[single-stream] single-stream (aaaaaaaaaaaa)" in lines
    assert "single-stream (bbbbbbbbbbbb)" in tuning_html(verdicts)


def test_one_config_under_two_names_is_ranked_once_within_its_workload() -> None:
    """``production-s3`` and ``eagle-s3-k1-tp4`` with one digest are one config: ranked once,
    under both names, and only against configs measured with the same workload."""

    def run(config_id: str, digest: str, key: str, rounds: list[float]) -> dict[str, Any]:
        return {**_stream(config_id, rounds), "config_digest": digest, "workload_key": key * 16}

    results = [
        run("production-s3", "d3", "a", [300, 301, 299]),
        run("eagle-s1-k1-tp4", "d1", "a", [200, 201, 199]),
        run("eagle-s3-k1-tp4", "d3", "a", [310, 311, 309]),  # the same config, measured again
        run("eagle-s2-k1-tp4", "d2", "b", [900, 901, 899]),  # another workload: not ranked here
        run("eagle-s1-k1-tp4", "d1", "b", [100, 101, 99]),
    ]
    verdicts = {
        v.workload_key[0]: v for v in tuning_verdicts(results) if v.objective == "single-stream"
    }
    a, b = verdicts["a"], verdicts["b"]
    assert [r.label for r in a.ranking] == ["production-s3 = eagle-s3-k1-tp4", "eagle-s1-k1-tp4"]
    assert a.ranking[0].names == ["production-s3", "eagle-s3-k1-tp4"]
    assert a.ranking[0].samples == [310, 311, 309]  # the config's last result
    assert a.winner == "production-s3"
    assert a.sentence.startswith("single-stream: production-s3 = eagle-s3-k1-tp4 wins, 310 tok/s")
    assert [r.label for r in b.ranking] == ["eagle-s2-k1-tp4", "eagle-s1-k1-tp4"]
    assert "  1. production-s3 = eagle-s3-k1-tp4" in "\n".join(verdict_lines([a]))
    assert "<td>production-s3 = eagle-s3-k1-tp4</td>" in tuning_html([a])
    # quality failed under either name: the config fails it
    [failed] = [
        v
        for v in tuning_verdicts(results[:3], quality={"eagle-s3-k1-tp4": False})
        if v.objective == "single-stream"
    ]
    assert failed.winner == "eagle-s1-k1-tp4"
    assert failed.ranking[-1].note == "fails quality"


def test_a_search_under_two_names_is_one_curve_and_one_frontier_entry() -> None:
    pytest.importorskip("matplotlib")
    from pytest_sglang.report.tuning_plot import plot_tuning

    results = [
        {**_search("production-s3", 10.0, 10.0, 11.0), "config_digest": "d3"},
        {**_search("s1", 16.0, 16.0, 17.6), "config_digest": "d1"},
        {**_search("s3", 10.5, 10.5, 11.5), "config_digest": "d3"},
    ]
    [verdict] = [v for v in tuning_verdicts(results) if v.objective == "max-rate"]
    assert [r.label for r in verdict.ranking] == ["s1", "production-s3 = s3"]
    assert verdict.frontier == ["production-s3", "s1"]
    png = plot_tuning(verdict, results)
    assert png is not None and png.startswith(b"\x89PNG")


def _level(config_id: str, level: int, goodput: list[float]) -> dict[str, Any]:
    return {
        "config_id": config_id,
        "workload": f"concurrency-{level}",
        "workload_spec": {"kind": "concurrency", "concurrency": level},
        "goodput": goodput[-1],
        "goodput_rounds": goodput,
    }


def test_goodput_ranks_each_concurrency_level_and_one_table_gives_the_best_per_level() -> None:
    results = [
        _level("s1", 1, [3.0, 3.1]),
        _level("s4", 1, [5.0, 5.2]),
        _level("s1", 32, [20.0, 21.0]),
        _level("s4", 32, [9.0, 10.0]),
    ]
    verdicts = tuning_verdicts(results, "goodput")
    winners = {v.workload: v.winner for v in verdicts if v.objective == "goodput"}
    assert winners == {"concurrency-1": "s4", "concurrency-32": "s1"}
    rows = [line for line, _ in best_per_workload(verdicts, "goodput").lines()]
    assert rows[0].split() == ["workload", "best", "goodput", "runner-up", "margin", "sure"]
    assert rows[1].split()[:3] == ["concurrency-1", "s4", "5.1"]
    assert rows[2].split()[:3] == ["concurrency-32", "s1", "20.5"]
    assert rows[2].split()[-1] == "yes"
    # one sweep is its own verdict: no table
    assert not best_per_workload(verdicts[:1], "goodput").rows
