"""The metrics math: definitions as bench_serving's, token counts from the server only."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest

from pytest_sglang.bench.metrics import RequestRecord, compute_metrics, percentile
from pytest_sglang.bench.workload import JsonlPrompts, RandomPrompts, ShareGPTPrompts, Workload
from pytest_sglang.errors import ConfigError


def ok(ttft: float, itls: list[float], e2e: float, out: int, prompt: int = 10) -> RequestRecord:
    return RequestRecord(ttft=ttft, itls=itls, e2e=e2e, completion_tokens=out, prompt_tokens=prompt)


def test_percentile_interpolates_like_numpy() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 50) == 2.5
    assert percentile(values, 90) == pytest.approx(3.7)
    assert percentile(values, 99) == pytest.approx(3.97)
    assert percentile([5.0], 99) == 5.0
    with pytest.raises(ValueError):
        percentile([], 50)


def test_throughputs_and_latencies() -> None:
    records = [
        ok(0.1, [0.01, 0.03], 0.5, out=41),
        ok(0.3, [0.02], 0.7, out=11, prompt=20),
        RequestRecord().fail("HTTP 503", "HTTP 503: busy"),
    ]
    m = compute_metrics(records, duration=2.0)
    assert (m.completed, m.failed) == (2, 1)
    assert m.failures == {"HTTP 503": 1}
    assert m.errors == ["HTTP 503: busy"]
    assert m.total_output_tokens == 52
    assert m.output_throughput == 26.0
    assert m.total_throughput == (52 + 30) / 2.0
    assert m.request_throughput == 1.0
    d = m.as_dict()
    assert d["mean_ttft_ms"] == pytest.approx(200.0)
    assert d["median_ttft_ms"] == pytest.approx(200.0)
    assert d["median_itl_ms"] == pytest.approx(20.0)
    assert d["median_e2e_latency_ms"] == pytest.approx(600.0)
    # TPOT: (e2e - ttft) / (tokens - 1): 0.4/40 = 10 ms and 0.4/10 = 40 ms
    assert d["mean_tpot_ms"] == pytest.approx(25.0)
    assert m.p99_tpot_ms == pytest.approx(39.7)
    for key in (
        "output_throughput",
        "total_throughput",
        "request_throughput",
        "p90_itl_ms",
        "p99_e2e_latency_ms",
        "completed",
        "failed",
        "accept_length",
        "duration",
    ):
        assert key in d


def test_no_completed_requests_gives_none_latencies_and_zero_throughput() -> None:
    m = compute_metrics([RequestRecord().fail("timeout", "t")], duration=1.0)
    assert m.output_throughput == 0.0
    assert m.as_dict()["median_ttft_ms"] is None
    assert m.accept_length is None


def test_accept_length_prefers_request_meta_info_and_is_exact_with_verify_counts() -> None:
    a = ok(0.1, [], 1.0, out=30)
    a.accept_length, a.verify_ct = 3.0, 10
    b = ok(0.1, [], 1.0, out=10)
    b.accept_length, b.verify_ct = 2.0, 5
    m = compute_metrics([a, b], 1.0, server_accept_length=9.9)
    assert m.accept_length == pytest.approx(40 / 15)
    assert m.accept_length_source == "generate meta_info"
    m = compute_metrics([ok(0.1, [], 1.0, out=3)], 1.0, server_accept_length=2.5)
    assert (m.accept_length, m.accept_length_source) == (2.5, "server_info")


def test_workload_names_and_validation(tmp_path) -> None:
    assert Workload.single_stream(256).name == "single-stream"
    assert Workload.fixed_concurrency(64).name == "concurrency-64"
    assert Workload.rate(8).name == "rate-8"
    assert Workload.rate(0.5).name == "rate-0.5"
    with pytest.raises(ConfigError, match="concurrency=0"):
        Workload.fixed_concurrency(0)
    with pytest.raises(ConfigError, match="request_rate"):
        Workload.rate(float("inf"))
    with pytest.raises(ConfigError, match="length"):
        RandomPrompts((10, 5))


def test_prompts_are_seeded_and_of_exact_word_length(tmp_path) -> None:
    fixed = RandomPrompts(17, seed=3).prompts(5)
    assert [len(p.split()) for p in fixed] == [17] * 5
    assert fixed == RandomPrompts(17, seed=3).prompts(5)
    assert fixed != RandomPrompts(17, seed=4).prompts(5)
    ranged = RandomPrompts((4, 9), seed=1).prompts(50)
    assert {len(p.split()) for p in ranged} <= set(range(4, 10))
    assert len({len(p.split()) for p in ranged}) > 1
    delays = Workload.rate(10, 200, seed=5).arrival_delays()
    assert delays == Workload.rate(10, 200, seed=5).arrival_delays()
    assert 0.05 < sum(delays) / len(delays) < 0.2


def test_jsonl_prompts(tmp_path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "a b c"}\n\n{"prompt": "d e"}\n')
    assert JsonlPrompts(path).prompts(3) == ["a b c", "d e", "a b c"]
    path.write_text('{"prompt": "a"}\n{"text": 1}\n')
    with pytest.raises(ConfigError, match=r"p.jsonl:2: needs a non-empty string field 'prompt'"):
        JsonlPrompts(path).prompts(1)
    path.write_text("{oops\n")
    with pytest.raises(ConfigError, match=r"p.jsonl:1: not JSON"):
        JsonlPrompts(path).prompts(1)
    with pytest.raises(ConfigError, match="cannot read"):
        JsonlPrompts(tmp_path / "missing.jsonl").prompts(1)


# What prometheus_client (SGLang's exporter) writes: counters typed without ``_total``,
# ``_created`` timestamps, histograms, two ranks of one gauge, and non-SGLang collectors.
SCRAPE = """\
# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 123.0
# TYPE sglang:generation_tokens counter
sglang:generation_tokens_total{model_name="m",tp_rank="0"} %(gen)s
sglang:generation_tokens_created{model_name="m",tp_rank="0"} 1.7e+09
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{model_name="m",dp_rank="0"} %(accept0)s
sglang:spec_accept_length{model_name="m",dp_rank="1"} 3.0
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 3.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} %(count)s
sglang:time_to_first_token_seconds_sum{model_name="m"} %(sum)s
sglang:time_to_first_token_seconds_count{model_name="m"} %(count)s
sglang:num_requests_total{model_name="m"} %(count)s
not a metric line
sglang:broken_gauge{model_name="m"} NaN
"""


def test_prometheus_run_delta_flattens_sglang_series() -> None:
    from pytest_sglang.bench.prometheus import parse_prometheus, run_delta

    before = parse_prometheus(SCRAPE % dict(gen=100, accept0=2.0, count=4, sum=0.2))
    after = parse_prometheus(SCRAPE % dict(gen=612, accept0=2.5, count=12, sum=1.0))
    assert run_delta(before, after) == {
        "generation_tokens_delta": 512.0,  # counter: the run's increase
        "num_requests_delta": 8.0,  # untyped *_total: a counter too
        "spec_accept_length": 2.75,  # gauge: after the run, mean of the ranks
        "time_to_first_token_seconds_count_delta": 8.0,
        "time_to_first_token_seconds_sum_delta": 0.8,
        "time_to_first_token_seconds_mean": pytest.approx(0.1),
    }
    assert parse_prometheus("<html>not found</html>") == {}


def test_result_dict_carries_server_metrics() -> None:
    m = compute_metrics([ok(0.1, [0.01], 0.2, out=2)], duration=1.0)
    assert m.as_dict()["server_metrics"] == {}
    m.server_metrics = {"generation_tokens_delta": 2.0}
    assert m.as_dict()["server_metrics"] == {"generation_tokens_delta": 2.0}


SHAREGPT = Path(__file__).resolve().parents[1] / "data" / "sharegpt_sample.json"


def test_sharegpt_prompts_sampled_as_bench_serving_does() -> None:
    source = ShareGPTPrompts(SHAREGPT, seed=1)
    prompts = source.prompts(6)
    # usable: a1, b2 (after its system turn) and e5; c3's prompt is too short, d4 has no reply,
    # f6 and g7 have no turns; requests cycle through the usable ones in seeded order
    assert set(prompts) == {
        "What is the capital city of France and why is it famous",
        "List three prime numbers greater than ten please",
        "Write a haiku about a quiet GPU at night",
    }
    assert prompts[:3] == prompts[3:]
    assert prompts == ShareGPTPrompts(SHAREGPT, seed=1).prompts(6)
    assert source.output_lengths(3) is None
    with_lengths = ShareGPTPrompts(SHAREGPT, seed=1, dataset_output_len=True)
    replies = {
        "What is the capital city of France and why is it famous": 16,
        "List three prime numbers greater than ten please": 6,
        "Write a haiku about a quiet GPU at night": 14,
    }
    assert with_lengths.output_lengths(3) == [replies[p] for p in prompts[:3]]
    assert (
        ShareGPTPrompts(SHAREGPT, max_prompt_tokens=8).prompts(2)
        == ["List three prime numbers greater than ten please"] * 2
    )
    assert ShareGPTPrompts(SHAREGPT).label == "sharegpt-sharegpt_sample.json"


def test_sharegpt_output_lengths_reach_the_workload() -> None:
    w = Workload.fixed_concurrency(
        2,
        num_requests=4,
        output_tokens=99,
        prompts=ShareGPTPrompts(SHAREGPT, dataset_output_len=True),
    )
    lengths = {prompt: n for prompt, n in w.requests()}
    assert len(w.requests()) == 4 and set(lengths.values()) == {6, 14, 16}
    fixed = Workload.fixed_concurrency(2, num_requests=4, output_tokens=99)
    assert [n for _, n in fixed.requests()] == [99] * 4


def test_sharegpt_bad_files_name_the_file(tmp_path) -> None:
    path = tmp_path / "conv.json"
    path.write_text("{oops")
    with pytest.raises(ConfigError, match=r"ShareGPT file .*conv.json: not JSON"):
        ShareGPTPrompts(path).prompts(1)
    path.write_text('{"conversations": []}')
    with pytest.raises(ConfigError, match="expected a JSON list of conversations, got dict"):
        ShareGPTPrompts(path).prompts(1)
    path.write_text('[{"conversations": [{"from": "human", "value": "hi"}]}]')
    with pytest.raises(ConfigError, match="no usable conversation"):
        ShareGPTPrompts(path).prompts(1)
    with pytest.raises(ConfigError, match="cannot read"):
        ShareGPTPrompts(tmp_path / "missing.json").prompts(1)


def test_arrival_shapes() -> None:
    constant = Workload.rate(20, 10, burstiness=math.inf)
    assert constant.arrival_delays() == [0.05] * 10
    assert constant.arrivals == "constant"
    assert constant.describe()["arrivals"] == "constant"
    assert Workload.rate(20, 10).arrivals == "poisson"
    assert Workload.fixed_concurrency(4).arrivals == "all at once"
    bursty = Workload.rate(10, 4000, burstiness=0.25, seed=3)
    smooth = Workload.rate(10, 4000, burstiness=8, seed=3)
    assert bursty.arrivals == "gamma(0.25)"
    for w in (bursty, smooth):
        gaps = w.arrival_delays()
        assert 0.09 < sum(gaps) / len(gaps) < 0.11  # the mean rate holds
    spread = {w.burstiness: statistics.pstdev(w.arrival_delays()) for w in (bursty, smooth)}
    assert spread[0.25] > 0.15 > 0.05 > spread[8]  # Poisson's would be 0.1
    with pytest.raises(ConfigError, match=r"burstiness=0 \(needs > 0"):
        Workload.rate(10, 4, burstiness=0)


def test_sharegpt_file_is_read_once_per_source(tmp_path) -> None:
    path = tmp_path / "conv.json"
    path.write_bytes(SHAREGPT.read_bytes())
    w = Workload.fixed_concurrency(
        2, num_requests=4, prompts=ShareGPTPrompts(path, dataset_output_len=True)
    )
    first = w.requests()
    path.unlink()  # later rounds (and the lengths) come from the parse already done
    assert w.requests() == first


def _sse(payload: dict[str, object]) -> bytes:
    import json

    return json.dumps(payload).encode()


def test_generate_itl_spreads_each_chunk_gap_over_its_tokens() -> None:
    from pytest_sglang.bench.loadgen import _Stream

    record = RequestRecord(start=0.0)
    stream = _Stream(record, "generate")
    # first token at 50 ms, then chunks of 3, 2 and 3 tokens 30, 20 and 30 ms apart (EAGLE)
    for now, ids, total in ((0.05, 1, 1), (0.08, 3, 4), (0.10, 2, 6), (0.13, 3, 9)):
        meta = {"completion_tokens": total, "prompt_tokens": 5, "finish_reason": None}
        stream.feed(_sse({"text": "x" * total, "output_ids": [0] * ids, "meta_info": meta}), now)
    stream.feed(b"[DONE]", 0.13)
    stream.close(0.13)
    assert record.ttft == pytest.approx(0.05)
    assert record.chunk_gaps == pytest.approx([0.03, 0.02, 0.03])
    assert record.itls == pytest.approx([0.01] * 8)  # 10 ms per token, one value per token
    m = compute_metrics([record], duration=1.0).as_dict()
    assert m["median_itl_ms"] == pytest.approx(10.0)
    assert m["median_chunk_gap_ms"] == pytest.approx(30.0)
    assert m["itl_token_counts"] == "server" and m["metrics_version"] == 2


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_openai_itl_counts_tokens_from_continuous_usage(api: str) -> None:
    from pytest_sglang.bench.loadgen import _Stream

    def chunk(text: str, total: int | None) -> bytes:
        choice = {"text": text} if api == "completions" else {"delta": {"content": text}}
        usage = None if total is None else {"prompt_tokens": 7, "completion_tokens": total}
        return _sse({"choices": [choice], "usage": usage})

    record = RequestRecord(start=0.0)
    stream = _Stream(record, api)
    for now, total in ((0.05, 1), (0.09, 5), (0.11, 7)):
        stream.feed(chunk("abc", total), now)
    stream.feed(b"[DONE]", 0.11)
    stream.close(0.11)
    assert record.itls == pytest.approx([0.01] * 6)
    assert record.chunk_gaps == pytest.approx([0.04, 0.02])
    assert (record.prompt_tokens, record.completion_tokens) == (7, 7)


def test_only_a_final_count_spreads_the_gaps_evenly() -> None:
    from pytest_sglang.bench.loadgen import _Stream

    record = RequestRecord(start=0.0)
    stream = _Stream(record, "chat")
    for now in (0.05, 0.08, 0.11):
        stream.feed(_sse({"choices": [{"delta": {"content": "ab"}}], "usage": None}), now)
    stream.feed(_sse({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 7}}), 0.11)
    stream.feed(b"[DONE]", 0.11)
    stream.close(0.11)
    # 6 tokens after the first over 2 gaps of 30 ms: 10 ms per token, one value per chunk
    assert record.itls == pytest.approx([0.01, 0.01])
    assert compute_metrics([record], 1.0).itl_token_counts == "even spread"
