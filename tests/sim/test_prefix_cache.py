"""The prefix cache over real HTTP: what each API reports as cached, the flags that change it
(``--page-size``, ``--disable-radix-cache``, ``--enable-cache-report``, ``--max-total-tokens``,
``--schedule-policy``, ``--chunked-prefill-size``), and what it saves in TTFT."""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import Any

import pytest
import requests

from conftest import Sim, StartSim

MODEL = ["--model-path", "/models/tiny-llama"]


def words(tag: str, count: int) -> str:
    """``count`` distinct words, none in the simulator's vocabulary (one token each)."""
    return " ".join(f"{tag}{i}" for i in range(count))


def generate(sim: Sim, text: str, max_new: int = 8, **extra: Any) -> dict[str, Any]:
    body = {"text": text, "sampling_params": {"max_new_tokens": max_new, "temperature": 0}}
    resp = requests.post(sim.url + "/generate", json={**body, **extra}, timeout=60)
    resp.raise_for_status()
    return dict(resp.json()["meta_info"])


def chat(sim: Sim, messages: list[dict[str, str]], **extra: Any) -> dict[str, Any]:
    body = {"model": "m", "messages": messages, "max_tokens": 6, "temperature": 0, **extra}
    resp = requests.post(sim.url + "/v1/chat/completions", json=body, timeout=60)
    resp.raise_for_status()
    return dict(resp.json())


@pytest.mark.parametrize(("page", "expected"), [(1, 100), (16, 96)])
def test_a_shared_prefix_is_cached_to_whole_pages(
    start_sim: StartSim, page: int, expected: int
) -> None:
    sim = start_sim([*MODEL, "--page-size", str(page)])
    shared = words("s", 100)
    first = generate(sim, shared + " a b c")
    second = generate(sim, shared + " d e f")
    assert first["cached_tokens"] == 0 and first["cached_tokens_details"] is None
    assert second["cached_tokens"] == expected  # the shared 100 tokens, whole pages of them
    assert second["cached_tokens_details"] == {"device": expected, "host": 0}
    # the same prompt again: all of it but the one token every prefill computes, whole pages
    assert generate(sim, shared + " a b c")["cached_tokens"] == 102 // page * page


def test_disable_radix_cache_caches_nothing(start_sim: StartSim) -> None:
    sim = start_sim([*MODEL, "--disable-radix-cache", "--enable-cache-report"])
    prompt = words("s", 100)
    for _ in range(2):
        meta = generate(sim, prompt)
        assert meta["cached_tokens"] == 0 and meta["cached_tokens_details"] is None
        usage = chat(sim, [{"role": "user", "content": prompt}])["usage"]
        assert usage["prompt_tokens_details"] == {"cached_tokens": 0}


def test_openai_usage_reports_cached_tokens_only_with_cache_report(start_sim: StartSim) -> None:
    plain = start_sim(MODEL)
    history = [{"role": "user", "content": words("s", 50)}]
    for _ in range(2):
        assert chat(plain, history)["usage"]["prompt_tokens_details"] is None

    sim = start_sim([*MODEL, "--enable-cache-report"])
    first = chat(sim, history)
    assert first["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}
    # the next turn sends the reply back: prompt and reply are cached, but the reply's last
    # token (stopped by length: its KV was never computed)
    turn = [
        *history,
        {"role": "assistant", "content": first["choices"][0]["message"]["content"]},
        {"role": "user", "content": "go on"},
    ]
    second = chat(sim, turn)
    cached = first["usage"]["prompt_tokens"] + first["usage"]["completion_tokens"] - 1
    assert second["usage"]["prompt_tokens_details"] == {"cached_tokens": cached}

    body = {"model": "m", "prompt": words("p", 50), "max_tokens": 4, "temperature": 0}
    for cached_prompt in (0, 49):  # a plain prompt shares no prefix with a chat template
        completion = requests.post(sim.url + "/v1/completions", json=body, timeout=60).json()
        assert completion["usage"]["prompt_tokens_details"] == {"cached_tokens": cached_prompt}

    resp = requests.post(
        sim.url + "/v1/chat/completions",
        json={
            "model": "m",
            "messages": turn,
            "max_tokens": 4,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        stream=True,
        timeout=60,
    )
    events = [
        json.loads(line[6:])
        for line in (raw.decode() for raw in resp.iter_lines() if raw)
        if line != "data: [DONE]"
    ]
    assert events[-1]["choices"] == []
    assert events[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] >= cached


@pytest.mark.parametrize(("flags", "stop_cached"), [([], 1), (["--disable-overlap-schedule"], 0)])
def test_a_reply_that_stopped_is_cached_with_its_stop_token_under_overlap(
    start_sim: StartSim, flags: list[str], stop_cached: int
) -> None:
    sim = start_sim([*MODEL, "--enable-cache-report", *flags])
    history = [{"role": "user", "content": words("s", 30)}]
    first = chat(sim, history, max_tokens=1000)
    assert first["choices"][0]["finish_reason"] == "stop"
    reply = first["choices"][0]["message"]["content"]
    turn = [*history, {"role": "assistant", "content": reply}, {"role": "user", "content": "ok"}]
    usage = first["usage"]
    # the template closes the reply with <|im_end|>, the stop token: under the overlap
    # scheduler its KV was computed before the stop was seen, and is cached
    expected = usage["prompt_tokens"] + usage["completion_tokens"] + stop_cached
    assert chat(sim, turn)["usage"]["prompt_tokens_details"] == {"cached_tokens": expected}


def test_a_full_pool_evicts_the_least_recently_used_prefix(start_sim: StartSim) -> None:
    sim = start_sim([*MODEL, "--max-total-tokens", "400"])
    one, two, three = words("a", 150), words("b", 150), words("c", 150)
    generate(sim, one)
    generate(sim, two)
    assert generate(sim, one)["cached_tokens"] == 149  # one is now used more recently than two
    generate(sim, three)  # 150 more tokens do not fit beside both: the least recent goes
    assert generate(sim, one)["cached_tokens"] == 149
    assert generate(sim, two)["cached_tokens"] == 0


def test_the_same_requests_report_the_same_cached_tokens(start_sim: StartSim) -> None:
    def conversation(sim: Sim) -> list[int]:
        history: list[dict[str, str]] = [{"role": "system", "content": words("sys", 40)}]
        cached = []
        for turn in range(4):
            history.append({"role": "user", "content": words(f"q{turn}-", 10)})
            reply = chat(sim, history)
            cached.append(reply["usage"]["prompt_tokens_details"]["cached_tokens"])
            history.append(
                {"role": "assistant", "content": reply["choices"][0]["message"]["content"]}
            )
        return cached

    first = conversation(start_sim([*MODEL, "--enable-cache-report"]))
    again = conversation(start_sim([*MODEL, "--enable-cache-report"]))
    assert first == again
    assert first[0] == 0 and all(b > a for a, b in itertools.pairwise(first))


@pytest.mark.parametrize(("policy", "first"), [("fcfs", "fresh"), ("lpm", "hit")])
def test_lpm_admits_the_cached_prompt_before_an_earlier_fresh_one(
    start_sim: StartSim, policy: str, first: str
) -> None:
    sim = start_sim(
        [*MODEL, "--max-running-requests", "1", "--schedule-policy", policy, "--enable-metrics"],
        env={"SGLANG_SIM_TIME_SCALE": "1", "SGLANG_SIM_SPEED_FACTOR": "0.2"},
    )
    shared = words("s", 100)
    generate(sim, shared)
    blocker = requests.post(
        sim.url + "/generate",
        json={
            "text": "x y",
            "sampling_params": {"max_new_tokens": 10, "ignore_eos": True},
            "stream": True,
        },
        stream=True,
        timeout=60,
    )
    events = blocker.iter_lines()  # kept: dropping the iterator closes the stream (an abort)
    next(events)  # the blocker is running: the next two wait behind it
    done: dict[str, dict[str, Any]] = {}

    def send(name: str, text: str) -> None:
        done[name] = generate(sim, text, max_new=2)

    threads = [
        threading.Thread(target=send, args=("fresh", words("f", 100))),
        threading.Thread(target=send, args=("hit", shared + " more")),
    ]
    for thread in threads:
        thread.start()
        time.sleep(0.1)
    for thread in threads:
        thread.join(timeout=60)
    assert [line for line in events if line][-1] == b"data: [DONE]"  # it ran to its end
    order = sorted(done, key=lambda name: done[name]["prefill_finished_time"])
    assert order[0] == first
    assert done["hit"]["cached_tokens"] == 100


def test_a_cached_prompt_has_a_shorter_ttft(start_sim: StartSim) -> None:
    sim = start_sim([*MODEL, "--enable-metrics"], env={"SGLANG_SIM_TIME_SCALE": "1"})
    prompt = words("s", 4000)
    cold = generate(sim, prompt, max_new=1)
    warm = generate(sim, prompt, max_new=1)
    assert warm["cached_tokens"] == 3999
    assert warm["first_token_latency"] < cold["first_token_latency"] / 5


def test_a_long_prompt_is_prefilled_in_chunks_each_cached(start_sim: StartSim) -> None:
    sim = start_sim([*MODEL, "--chunked-prefill-size", "64"])
    prompt = words("s", 200)
    assert generate(sim, prompt)["cached_tokens"] == 0
    new_tokens = [
        int(line.split("#new-token: ")[1].split(",")[0])
        for line in sim.stderr().splitlines()
        if "Prefill batch" in line and "#cached-token: 0" in line
    ]
    assert new_tokens[-4:] == [64, 64, 64, 8]
    assert generate(sim, prompt)["cached_tokens"] == 199


def _queue_behind_a_blocker(sim: Sim, prompts: list[str]) -> list[dict[str, Any]]:
    """Send ``prompts`` in order while one streamed request holds the only running slot, then
    abort it: the whole queue is waiting before the first of them is scheduled, so the policy
    alone decides the order. Each reply's meta_info gains ``ttft`` (s, from its send)."""
    blocker = requests.post(
        sim.url + "/generate",
        json={
            "text": "x y",
            "sampling_params": {"max_new_tokens": 4000, "ignore_eos": True},
            "stream": True,
        },
        stream=True,
        timeout=60,
    )
    next(blocker.iter_lines())  # running: what follows waits behind it
    done: dict[int, dict[str, Any]] = {}

    def send(index: int, text: str) -> None:
        sent = time.time()
        meta = generate(sim, text, max_new=8)
        done[index] = {**meta, "ttft": meta["prefill_finished_time"] - sent}

    threads = [threading.Thread(target=send, args=(i, p)) for i, p in enumerate(prompts)]
    for thread in threads:
        thread.start()
        time.sleep(0.02)
    time.sleep(0.2)
    blocker.close()  # an abort: the slot is free and the queue is served
    for thread in threads:
        thread.join(timeout=120)
    return [done[i] for i in range(len(prompts))]


@pytest.mark.parametrize("pool", ["small", "large"])
def test_lpm_keeps_the_hit_rate_under_memory_pressure_where_fcfs_loses_it(
    start_sim: StartSim, pool: str
) -> None:
    """Eight groups of four requests sharing a 200-token system prompt, sent group after group
    in turn (g0, g1, ..., g7, g0, ...). With a pool that holds every prefix, fcfs and lpm hit
    the same; with one that holds four, fcfs evicts each group's prefix before its next request
    comes, while lpm serves a group's requests one after another while its prefix is cached."""
    groups, per_group, prefix_len = 8, 4, 200
    prompts = [
        words(f"g{g}w", prefix_len) + " " + words(f"g{g}q{q}w", 10)
        for q in range(per_group)
        for g in range(groups)
    ]
    total = "1000" if pool == "small" else "20000"
    figures = {}
    for policy in ("fcfs", "lpm"):
        flags = ["--max-total-tokens", total, "--max-running-requests", "1"]
        sim = start_sim(
            [*MODEL, *flags, "--schedule-policy", policy, "--enable-metrics"],
            env={"SGLANG_SIM_TIME_SCALE": "1", "SGLANG_SIM_SPEED_FACTOR": "0.5"},
        )
        metas = _queue_behind_a_blocker(sim, prompts)
        cached = sum(m["cached_tokens"] for m in metas)
        ttfts = sorted(m["ttft"] for m in metas)
        figures[policy] = (  # hit rate, mean and max TTFT (s)
            cached / sum(m["prompt_tokens"] for m in metas),
            sum(ttfts) / len(ttfts),
            ttfts[-1],
        )
        sim.stop()
    ceiling = (per_group - 1) * groups * prefix_len / (len(prompts) * (prefix_len + 10))
    assert figures["lpm"][0] == pytest.approx(ceiling, rel=0.02), figures
    if pool == "large":
        assert figures["fcfs"][0] == pytest.approx(ceiling, rel=0.02), figures
    else:
        assert figures["fcfs"][0] < 0.1 * ceiling, figures
        assert figures["lpm"][1] < figures["fcfs"][1], figures  # mean TTFT
