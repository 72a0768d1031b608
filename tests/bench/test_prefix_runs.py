"""Workloads that share prefixes, run against a real simulator process over loopback HTTP, and
the cache figures: per request as the server reports them, per run, per turn, in the fixture's
outputs (pytester)."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import socket
from pathlib import Path

import pytest

from pytest_sglang.bench import Workload, run_workload
from pytest_sglang.bench.identity import identify
from pytest_sglang.bench.loadgen import FlushFailed, _Stream, generate
from pytest_sglang.bench.metrics import RequestRecord, compute_metrics
from pytest_sglang.sim.tokenizer import CHAT_TOKENS_GENERATION_PROMPT, CHAT_TOKENS_PER_MESSAGE


def test_shared_prefix_sends_its_groups_and_reports_the_cache(fast_sim: str) -> None:
    w = Workload.shared_prefix(3, 4, 40, 8, 6, concurrency=4, api="generate")
    r = run_workload(fast_sim, w, model="qwen3-8b")
    assert (r.completed, r.failed) == (12, 0), r.errors
    assert r.total_input_tokens == 12 * (40 + 8)
    assert r.total_output_tokens == 12 * 6
    # /generate always carries meta_info.cached_tokens: a figure, whatever the cache held
    assert r.total_cached_tokens is not None and 0 <= r.total_cached_tokens <= r.total_input_tokens
    assert r.cache_hit_rate is not None and 0.0 <= r.cache_hit_rate <= 1.0
    assert r.as_dict()["cache_hit_rate"] == r.cache_hit_rate
    assert r.per_turn == [] and "per_turn" not in r.as_dict()


@pytest.mark.parametrize("api", ["chat", "completions", "generate"])
def test_each_turn_sends_the_history_and_the_server_s_replies(fast_sim: str, api: str) -> None:
    question, output = 6, 5
    w = Workload.multi_turn(2, 3, question, output, concurrency=2, api=api)
    r = run_workload(fast_sim, w, model="qwen3-8b")
    assert (r.completed, r.failed) == (6, 0), r.errors
    assert [row["turn"] for row in r.per_turn] == [1, 2, 3]
    assert all(row["requests"] == row["completed"] == 2 for row in r.per_turn)
    for row in r.per_turn:
        t = row["turn"]
        # every earlier question and reply, then the new question (one token per word)
        expected = t * question + (t - 1) * output
        if api == "chat":
            expected += (2 * t - 1) * CHAT_TOKENS_PER_MESSAGE + CHAT_TOKENS_GENERATION_PROMPT
        assert row["mean_prompt_tokens"] == expected, (api, row)
        assert row["median_ttft_ms"] is not None
    assert json.loads(json.dumps(r.as_dict()))["per_turn"] == r.per_turn


def test_conversations_are_bounded_and_think_between_turns(fast_sim: str) -> None:
    w = Workload.multi_turn(
        4, 3, 4, 4, concurrency=2, think_time_s=0.15, api="generate", warmup_requests=0
    )
    raw = asyncio.run(generate(fast_sim, w, model="qwen3-8b"))
    records = raw.records
    assert len(records) == 12 and all(r.ok for r in records), [r.error for r in records]
    spans: dict[int, tuple[float, float]] = {}
    for s in range(4):
        turns = sorted((r for r in records if r.session == s), key=lambda r: r.turn)
        assert [r.turn for r in turns] == [0, 1, 2]
        for before, after in itertools.pairwise(turns):
            assert after.start - (before.start + (before.e2e or 0.0)) >= 0.14
        spans[s] = (turns[0].start, turns[-1].start + (turns[-1].e2e or 0.0))
    # never more than two conversations open at once (the others wait for a place)
    for s, (begin, _) in spans.items():
        open_then = [o for o, (b, e) in spans.items() if o != s and b <= begin < e]
        assert len(open_then) <= 1, spans
    assert raw.duration >= 2 * 2 * 0.15


def test_a_failed_turn_ends_its_conversation(simulator) -> None:
    url = simulator(env={"SGLANG_SIM_TTFT_MS": "20", "SGLANG_SIM_ITL_MS": "100"})
    w = Workload.multi_turn(2, 3, 4, 8, api="generate", warmup_requests=0, request_timeout_s=0.3)
    r = run_workload(url, w, model="qwen3-8b")
    assert (r.completed, r.failed) == (0, 6)
    assert r.failures == {"timeout": 2, "conversation ended": 4}
    assert [row["requests"] for row in r.per_turn] == [2, 2, 2]


def test_a_trace_is_replayed_on_its_timestamps(fast_sim: str, tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    rows = [
        {"timestamp": ts, "input_length": 40, "output_length": 4, "hash_ids": [7, ts]}
        for ts in (0, 400, 800)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    w = Workload.trace(path, time_scale=0.5, block_size=16, api="generate", warmup_requests=0)
    raw = asyncio.run(generate(fast_sim, w, model="qwen3-8b"))
    starts = sorted(r.start for r in raw.records)
    assert all(r.ok and r.prompt_tokens == 40 for r in raw.records)
    # 0.4 s apart in the trace, 0.2 s at time_scale 0.5 (each start is timed from the first)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert all(0.1 <= g <= 0.35 for g in gaps), gaps
    assert 0.3 <= starts[-1] - starts[0] <= 0.55, starts


def test_cached_tokens_are_read_as_real_sglang_reports_them() -> None:
    """The shapes of 0.5.23's streams: ``meta_info.cached_tokens`` on /generate, and
    ``usage.prompt_tokens_details`` on the OpenAI APIs (null without --enable-cache-report)."""
    usage = {"prompt_tokens": 100, "completion_tokens": 2, "total_tokens": 102}
    chat = [
        {"choices": [{"index": 0, "delta": {"content": "a "}}], "usage": None},
        {"choices": [{"index": 0, "delta": {"content": "b "}, "finish_reason": "length"}]},
        {"choices": [], "usage": {**usage, "prompt_tokens_details": {"cached_tokens": 64}}},
    ]
    bare = [*chat[:2], {"choices": [], "usage": {**usage, "prompt_tokens_details": None}}]
    meta = {"prompt_tokens": 100, "completion_tokens": 2, "cached_tokens": 96}
    native = [
        {"text": "a ", "output_ids": [1], "meta_info": {**meta, "completion_tokens": 1}},
        {
            "text": "a b ",
            "output_ids": [2],
            "meta_info": {**meta, "finish_reason": {"type": "length"}},
        },
    ]
    told: list[int | None] = []
    for api, events in (("chat", chat), ("chat", bare), ("generate", native)):
        stream = _Stream(RequestRecord(), api)
        for i, event in enumerate(events):
            stream.feed(json.dumps(event).encode(), float(i))
        stream.feed(b"[DONE]", 3.0)
        stream.close(4.0)
        told.append(stream.record.cached_tokens)
    assert told == [64, None, 96]


def test_the_run_s_hit_rate_is_cached_over_prompt_tokens_of_those_that_say() -> None:
    def record(prompt: int, cached: int | None, reason: str = "") -> RequestRecord:
        r = RequestRecord(ttft=0.01, e2e=0.1, prompt_tokens=prompt, completion_tokens=2)
        r.cached_tokens = cached
        r.reason = reason
        return r

    result = compute_metrics(
        [record(100, 50), record(300, 250), record(100, None), record(100, 100, "timeout")], 1.0
    )
    assert (result.total_cached_tokens, result.cache_hit_rate) == (300, 0.75)
    silent = compute_metrics([record(100, None)], 1.0)
    assert (silent.total_cached_tokens, silent.cache_hit_rate) == (None, None)


def test_the_server_s_own_cache_figures_come_from_metrics(simulator) -> None:
    url = simulator("--enable-metrics", env={"SGLANG_SIM_TIME_SCALE": "0"})
    w = Workload.shared_prefix(2, 3, 30, 5, 4, concurrency=3, api="generate")
    r = run_workload(url, w, model="qwen3-8b")
    assert r.completed == 6, r.errors
    assert r.server_metrics["prompt_tokens_delta"] == r.total_input_tokens
    assert r.server_cache_hit_rate is not None and 0.0 <= r.server_cache_hit_rate <= 1.0


def test_flush_cache_empties_the_cache_before_the_measured_requests(fast_sim: str) -> None:
    w = Workload.shared_prefix(2, 2, 16, 4, 4, concurrency=2, api="generate", flush_cache=True)
    r = run_workload(fast_sim, w, model="qwen3-8b")
    assert (r.completed, r.failed) == (4, 0), r.errors
    assert identify(w).digest != identify(dataclasses.replace(w, flush_cache=False)).digest
    assert "flush_cache" not in Workload.shared_prefix(2, 2, 16, 4, 4).canonical()
    with socket.socket() as sock:  # a port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # a round that was to start cold and cannot is an error, not a figure
    with pytest.raises(FlushFailed, match="did not flush its prefix cache"):
        run_workload(f"http://127.0.0.1:{port}", dataclasses.replace(w, warmup_requests=0))


TEST = """
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.bench import Workload

PLAIN = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b", name="plain")
REPORTING = PLAIN.replace(name="reporting", extra_args=("--enable-cache-report",))


@pytest.mark.parametrize("sglang_server", [PLAIN, REPORTING], indirect=True)
def test_shared_prefix_chat(sglang_bench):
    result = sglang_bench(Workload.shared_prefix(2, 3, 24, 6, 4, concurrency=3), rounds=1)
    assert result.completed == 6


@pytest.mark.parametrize("sglang_server", [PLAIN], indirect=True)
def test_conversations(sglang_bench):
    workload = Workload.multi_turn(2, 2, 6, 4, concurrency=2, api="generate")
    result = sglang_bench(workload, rounds=2)
    assert result.completed == 4
"""


def test_the_fixture_keeps_cache_figures_and_says_once_what_chat_lacks(
    pytester: pytest.Pytester, fast_simulator: None
) -> None:
    pytester.makepyfile(TEST)
    out = pytester.path / "bench.json"
    store = pytester.path / "baselines"
    result = pytester.runpytest(
        "-p",
        "pytest_sglang.bench.pytest_plugin",
        f"--benchmark-json={out}",
        f"--sglang-baseline-dir={store}",
        "--sglang-baseline-save",
        "--sglang-gate=cache_hit_rate:-5%",
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*config*workload*out tok/s*accept*cache hit*failed*",
            "*plain*multi-turn-concurrency-2*%*",
        ]
    )
    note = "plain: no cache hit rate on the chat API: SGLang reports cached tokens there only "
    notes = [line for line in result.stdout.lines if line.startswith(note)]
    assert len(notes) == 1, result.stdout.str()
    assert "--enable-cache-report" in notes[0]
    assert not any(line.startswith("reporting: no cache") for line in result.stdout.lines)
    benches = {b["name"]: b["extra_info"] for b in json.loads(out.read_text())["benchmarks"]}
    plain = benches["test_shared_prefix_chat[plain]"]
    assert plain["workload"] == "shared-prefix-concurrency-3"
    assert plain["cache_hit_rate"] is None and "cache_report" in plain
    assert plain["workload_canonical"]["workload"]["prompts"]["source"] == "shared-prefix"
    reporting = benches["test_shared_prefix_chat[reporting]"]
    assert "cache_report" not in reporting
    talk = benches["test_conversations[plain]"]
    assert talk["workload"] == "multi-turn-concurrency-2"
    assert 0.0 <= talk["cache_hit_rate"] <= 1.0
    assert [row["turn"] for row in talk["per_turn"]] == [1, 2]
    assert talk["per_turn"][1]["mean_prompt_tokens"] == 6 + 4 + 6
    # stored per round with the baseline: what a later run's gate compares
    saved = [json.loads(p.read_text()) for p in store.rglob("*.json")]
    runs = [
        b["extra_info"]
        for data in saved
        for b in data["benchmarks"]
        if b["extra_info"].get("workload") == "multi-turn-concurrency-2"
    ]
    assert runs and len(runs[0]["rounds_values"]["cache_hit_rate"]) == 2
