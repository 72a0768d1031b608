"""The load generator against a real simulator process (loopback HTTP, real SSE streams)."""

from __future__ import annotations

import pytest

from pytest_sglang.bench import RandomPrompts, Workload, run_workload
from pytest_sglang.bench.loadgen import complete_prompts


@pytest.mark.parametrize("api", ["chat", "completions", "generate"])
def test_single_stream_counts_tokens_from_the_server(fast_sim: str, api: str) -> None:
    w = Workload.single_stream(64, prompt_tokens=20, requests=2, api=api)
    r = run_workload(fast_sim, w, model="qwen3-8b")
    assert (r.completed, r.failed) == (2, 0), r.errors
    assert r.total_output_tokens == 128
    # chat adds the template's tokens: 4 per message + 3 for the generation prompt
    assert r.total_input_tokens == 2 * (20 + (7 if api == "chat" else 0))
    assert r.output_throughput > 0
    assert r.median_ttft_ms is not None and r.median_itl_ms is not None
    # EAGLE steps 2: the accept length is reported and above 1 (several tokens per chunk)
    assert r.accept_length is not None and r.accept_length > 1.5
    assert r.accept_length_source == ("generate meta_info" if api == "generate" else "server_info")
    assert r.itl_token_counts == "server"


@pytest.mark.parametrize("api", ["chat", "completions", "generate"])
def test_per_token_itl_is_the_chunk_gap_over_the_tokens_per_chunk(eagle_sim: str, api: str) -> None:
    w = Workload.single_stream(64, requests=2, api=api)
    # per request, the per-token ITLs add up to first chunk -> last chunk, over every token after
    # the first: TPOT's numerator and denominator, but for the stream's tail after the last chunk
    # (held by its own figure, not by timing: a loaded machine stretches that tail alone)
    for rec in complete_prompts(eagle_sim, w, model="qwen3-8b"):
        assert rec.ok, rec.error
        assert len(rec.itls) == rec.completion_tokens - 1 == 63
        assert sum(rec.itls) == pytest.approx(sum(rec.chunk_gaps), rel=1e-9)
        assert rec.e2e is not None and rec.ttft is not None
        assert sum(rec.itls) <= rec.e2e - rec.ttft
    r = run_workload(eagle_sim, w, model="qwen3-8b")
    assert (r.completed, r.failed) == (2, 0), r.errors
    # the chunk gap is a decode step, which hands out about accept_length tokens
    assert r.accept_length is not None and r.accept_length > 1.5
    ratio = r.mean_chunk_gap_ms / r.mean_itl_ms
    assert ratio == pytest.approx(r.accept_length, rel=0.15)
    assert r.median_chunk_gap_ms > 1.5 * r.median_itl_ms


def test_fixed_concurrency(fast_sim: str) -> None:
    w = Workload.fixed_concurrency(
        8, num_requests=24, output_tokens=16, prompts=RandomPrompts((5, 50), seed=2)
    )
    r = run_workload(fast_sim, w, model="qwen3-8b")
    assert (r.completed, r.failed) == (24, 0), r.errors
    assert r.total_output_tokens == 24 * 16


def test_request_rate_with_max_concurrency(fast_sim: str) -> None:
    w = Workload.rate(200, num_requests=30, output_tokens=8, max_concurrency=4, seed=7)
    r = run_workload(fast_sim, w, model="qwen3-8b")
    assert (r.completed, r.failed) == (30, 0), r.errors
    assert r.total_output_tokens == 240
    assert r.duration > 0


def test_prompt_file_workload(fast_sim: str, tmp_path) -> None:
    path = tmp_path / "prompts.jsonl"
    path.write_text('{"prompt": "one two three"}\n{"prompt": "four five"}\n')
    from pytest_sglang.bench import JsonlPrompts

    w = Workload.fixed_concurrency(
        2, num_requests=4, output_tokens=4, api="generate", prompts=JsonlPrompts(path)
    )
    r = run_workload(fast_sim, w)
    assert r.completed == 4
    assert r.total_input_tokens == 3 + 2 + 3 + 2


def test_timing_matches_injected_ttft_and_itl(simulator) -> None:
    url = simulator(env={"SGLANG_SIM_TTFT_MS": "60", "SGLANG_SIM_ITL_MS": "20"})
    r = run_workload(
        url, Workload.fixed_concurrency(4, num_requests=8, output_tokens=10), model="qwen3-8b"
    )
    assert r.completed == 8, r.errors
    assert 40 < r.median_ttft_ms < 200
    assert 10 < r.median_itl_ms < 60
    # no speculative decoding: one token a chunk, counted from the final usage (the chat
    # stream carries no usage per chunk then), so per-token ITL is the chunk gap
    assert r.itl_token_counts == "even spread"
    assert r.median_itl_ms == pytest.approx(r.median_chunk_gap_ms, rel=0.01)


def test_server_dying_mid_run_is_counted_not_raised(simulator) -> None:
    url = simulator(env={"SGLANG_SIM_TIME_SCALE": "0.2", "SGLANG_SIM_FAULT": "crash-after=3"})
    w = Workload.fixed_concurrency(
        2,
        num_requests=8,
        output_tokens=64,
        warmup_requests=0,
        request_timeout_s=10,
        total_timeout_s=30,
    )
    r = run_workload(url, w, model="qwen3-8b")
    assert r.completed + r.failed == 8
    assert r.failed >= 1
    assert set(r.failures) <= {
        "connection",
        "truncated stream",
        "timeout",
        "HTTP 500",
        "server error",
        "aborted",
        "run deadline",
    }


def test_a_server_with_an_api_key_is_measured_with_it(simulator) -> None:
    """SGLang with ``--api-key`` answers 401 to a request without the bearer token (but not to
    its probes, /health and /metrics); the load generator sends the key it is given."""
    import requests

    url = simulator(
        "--api-key", "sk-bench-1", "--enable-metrics", env={"SGLANG_SIM_TIME_SCALE": "0"}
    )
    refused = requests.get(url + "/v1/models", timeout=5)
    assert (refused.status_code, refused.json()) == (401, {"error": "Unauthorized"})
    wrong = {"Authorization": "Bearer sk-bench-2"}
    assert requests.get(url + "/v1/models", headers=wrong, timeout=5).status_code == 401
    right = {"Authorization": "Bearer sk-bench-1"}
    assert requests.get(url + "/v1/models", headers=right, timeout=5).status_code == 200
    for probe in ("/health", "/metrics"):
        assert requests.get(url + probe, timeout=5).status_code == 200, probe
    workload = Workload.fixed_concurrency(2, num_requests=4, output_tokens=8)
    without = run_workload(url, workload, model="qwen3-8b")
    assert without.completed == 0 and set(without.failures) == {"HTTP 401"}
    measured = run_workload(url, workload, model="qwen3-8b", api_key="sk-bench-1")
    assert measured.completed == 4 and measured.failed == 0, measured.errors
    assert measured.server_metrics, "the scrape of /metrics around the run"


def test_sweep_is_one_fixed_concurrency_workload_per_level() -> None:
    levels = Workload.sweep([16, 1, 4], rounds=2, output_tokens=8, api="generate")
    assert [str(w) for w in levels] == ["concurrency-1", "concurrency-4", "concurrency-16"]
    assert [(w.concurrency, w.num_requests) for w in levels] == [(1, 2), (4, 8), (16, 32)]
    assert all(w.output_tokens == 8 and w.api == "generate" for w in levels)


@pytest.mark.parametrize("levels", [[], [0, 2], [2, 2], [1.5]])
def test_bad_sweep_levels_are_one_line_errors(levels: list[object]) -> None:
    from pytest_sglang.errors import ConfigError

    with pytest.raises(ConfigError, match=r"Workload.sweep\(concurrencies=.*distinct integer"):
        Workload.sweep(levels)  # type: ignore[arg-type]


def test_sweep_gives_readable_test_ids(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from pytest_sglang.bench import Workload

        @pytest.mark.parametrize("workload", Workload.sweep([1, 8]), ids=str)
        def test_level(workload):
            assert workload.kind == "concurrency"
        """
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_level?concurrency-1? PASSED*", "*concurrency-8? PASSED*"])


def test_sweep_runs_every_level(fast_sim: str) -> None:
    results = [
        run_workload(fast_sim, w, model="qwen3-8b")
        for w in Workload.sweep([1, 4], rounds=2, output_tokens=8)
    ]
    assert [(r.completed, r.failed) for r in results] == [(2, 0), (8, 0)]
    assert [r.total_output_tokens for r in results] == [16, 64]


def test_server_metrics_cover_the_measured_requests_only(simulator) -> None:
    # steps without topk is refused by real 0.5.23 (and so by the simulator): give all three
    eagle = (
        *("--speculative-algorithm", "EAGLE", "--speculative-num-steps", "2"),
        *("--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "3"),
    )
    url = simulator("--enable-metrics", *eagle, env={"SGLANG_SIM_TIME_SCALE": "0"})
    # 64 tokens: enough decode steps (> 40) for the simulator to log and set its gauges
    w = Workload.fixed_concurrency(4, num_requests=8, output_tokens=64, warmup_requests=2)
    r = run_workload(url, w, model="qwen3-8b")
    assert (r.completed, r.failed) == (8, 0), r.errors
    m = r.server_metrics
    # counters are deltas over the measured phase: warmup requests and pool warming excluded
    assert m["generation_tokens_delta"] == r.total_output_tokens == 512
    assert m["prompt_tokens_delta"] == r.total_input_tokens
    assert m["num_requests_delta"] == 8
    assert m["spec_verify_calls_delta"] > 0
    assert m["spec_accept_length"] > 1.0  # a gauge: its value after the run
    assert m["time_to_first_token_seconds_mean"] >= 0
    assert r.as_dict()["server_metrics"] == m


def test_no_server_metrics_without_enable_metrics(fast_sim: str) -> None:
    r = run_workload(fast_sim, Workload.single_stream(4), model="qwen3-8b")
    assert r.completed == 1
    assert r.server_metrics == {} and r.as_dict()["server_metrics"] == {}


def test_sharegpt_workload_asks_for_the_dataset_lengths(fast_sim: str) -> None:
    from pathlib import Path

    from pytest_sglang.bench import ShareGPTPrompts

    data = Path(__file__).resolve().parents[1] / "data" / "sharegpt_sample.json"
    w = Workload.fixed_concurrency(
        3, num_requests=3, output_tokens=500, prompts=ShareGPTPrompts(data, dataset_output_len=True)
    )
    r = run_workload(fast_sim, w, model="qwen3-8b")
    assert (r.completed, r.failed) == (3, 0), r.errors
    # the three usable conversations' replies: 16 + 6 + 14 tokens, counted by the server
    assert r.total_output_tokens == 36


def test_constant_rate_spaces_the_starts(simulator) -> None:
    url = simulator(env={"SGLANG_SIM_TTFT_MS": "5", "SGLANG_SIM_ITL_MS": "5"})
    w = Workload.rate(50, num_requests=20, output_tokens=4, burstiness=float("inf"))
    r = run_workload(url, w, model="qwen3-8b")
    assert (r.completed, r.failed) == (20, 0), r.errors
    # 19 gaps of 20 ms, then one request of 5 + 3 * 5 ms: the run lasts about 0.4 s
    assert 0.38 < r.duration < 2.0
