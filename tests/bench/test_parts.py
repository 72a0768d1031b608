"""A topology's per-part figures: each server's own ``/metrics`` over a run, and the line."""

from __future__ import annotations

from pytest_sglang.bench.parts import per_part_line, server_figures
from pytest_sglang.bench.prometheus import parse_prometheus


def _scrape(count: float, seconds: float, ttft: float, tokens: float) -> str:
    return "\n".join(
        [
            "# TYPE sglang:e2e_request_latency_seconds histogram",
            f'sglang:e2e_request_latency_seconds_count{{model_name="m"}} {count}',
            f'sglang:e2e_request_latency_seconds_sum{{model_name="m"}} {seconds}',
            "# TYPE sglang:time_to_first_token_seconds histogram",
            f'sglang:time_to_first_token_seconds_count{{model_name="m"}} {count}',
            f'sglang:time_to_first_token_seconds_sum{{model_name="m"}} {ttft}',
            f'sglang:generation_tokens_total{{model_name="m"}} {tokens}',
        ]
    )


def test_each_parts_own_figures_over_the_run() -> None:
    """The counters are cumulative (warm-ups, earlier runs): only after - before counts; a
    part scraped once (it came up mid-run, or lost its /metrics) has no figures."""
    before = {
        "prefill-1": parse_prometheus(_scrape(2, 0.2, 0.2, 2)),
        "decode-1": parse_prometheus(_scrape(2, 1.0, 0.1, 64)),
    }
    after = {
        "prefill-1": parse_prometheus(_scrape(10, 1.0, 1.0, 10)),
        "decode-1": parse_prometheus(_scrape(10, 9.0, 0.5, 320)),
        "decode-2": parse_prometheus(_scrape(5, 5.0, 0.5, 100)),
    }
    figures = server_figures(before, after)
    assert sorted(figures) == ["decode-1", "prefill-1"]
    assert figures["prefill-1"] == {
        "requests": 8.0,
        "mean_request_s": 0.1,
        "mean_ttft_s": 0.1,
        "generation_tokens": 8.0,
    }
    assert figures["decode-1"]["mean_request_s"] == 1.0
    row = {
        "config_id": "qwen-pd1x1-cache-aware",
        "workload": "concurrency-4",
        "per_part": {"decode-1": {"success": 8}, "prefill-1": {"success": 7, "failure": 1}},
        "per_part_server": figures,
    }
    assert per_part_line(row) == (
        "qwen-pd1x1-cache-aware concurrency-4: requests by part: decode-1 8 (1.00 s each on it, "
        "TTFT 0.05 s), prefill-1 7 (1 failed; 0.10 s each on it, TTFT 0.10 s)"
    )
    assert per_part_line({"config_id": "x", "workload": "w"}) == ""
