"""HTTP API shapes, readiness order, the openai client, /generate SSE, and real-time speed."""

from __future__ import annotations

import json
import time
from typing import Any

import openai
import requests

from conftest import SEED_ARGS, Sim, StartSim
from pytest_sglang.sim.tokenizer import (
    CHAT_TOKENS_GENERATION_PROMPT,
    CHAT_TOKENS_PER_MESSAGE,
    count_tokens,
)


def sse_events(resp: requests.Response) -> list[dict]:  # type: ignore[type-arg]
    events = []
    for raw in resp.iter_lines():
        if not raw:
            continue
        line = raw.decode()
        assert line.startswith("data: ")
        if line == "data: [DONE]":
            events.append({"done": True})
        else:
            events.append(json.loads(line[6:]))
    return events


def test_openai_chat_non_streaming(seed_sim: Sim) -> None:
    client = openai.OpenAI(base_url=seed_sim.url + "/v1", api_key="none", max_retries=0)

    def ask() -> Any:
        return client.chat.completions.create(
            model="qwen3.5-122b",
            messages=[
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "a b c"},
            ],
            max_tokens=12,
            temperature=0,
            extra_body={"ignore_eos": True},
        )

    reply = ask()
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage is not None
    assert reply.usage.completion_tokens == 12
    assert count_tokens(reply.choices[0].message.content or "") == 12
    assert reply.usage.prompt_tokens == 5 + 2 * CHAT_TOKENS_PER_MESSAGE + (
        CHAT_TOKENS_GENERATION_PROMPT
    )
    again = ask()
    assert again.choices[0].message.content == reply.choices[0].message.content


def test_openai_chat_streaming_with_usage(seed_sim: Sim) -> None:
    client = openai.OpenAI(base_url=seed_sim.url + "/v1", api_key="none", max_retries=0)
    stream = client.chat.completions.create(
        model="whatever-name",
        messages=[{"role": "user", "content": "one two three four"}],
        max_tokens=50,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"ignore_eos": True},
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].model == "whatever-name"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert finish == ["length"]
    usage = chunks[-1].usage
    assert usage is not None and chunks[-1].choices == []
    assert usage.completion_tokens == 50 == count_tokens(text)
    assert usage.total_tokens == usage.prompt_tokens + 50


def test_streams_usage_on_every_chunk_with_continuous_usage_stats(seed_sim: Sim) -> None:
    client = openai.OpenAI(base_url=seed_sim.url + "/v1", api_key="none", max_retries=0)
    stream = client.completions.create(
        model="m",
        prompt="one two three",
        max_tokens=40,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True, "continuous_usage_stats": True},
        extra_body={"ignore_eos": True},
    )
    chunks = list(stream)
    texts = [c for c in chunks if c.choices and c.choices[0].text]
    assert texts and all(c.usage is not None for c in texts)
    counts = [c.usage.completion_tokens for c in texts if c.usage is not None]
    assert counts == sorted(counts) and counts[-1] == 40
    # each chunk's count grows by the tokens in its text (EAGLE: several per chunk)
    grown = [b - a for a, b in zip([0, *counts], counts)]
    assert grown == [count_tokens(c.choices[0].text) for c in texts]
    assert max(grown) > 1
    assert chunks[-1].choices == [] and chunks[-1].usage is not None


def test_completions_and_natural_stop(seed_sim: Sim) -> None:
    client = openai.OpenAI(base_url=seed_sim.url + "/v1", api_key="none", max_retries=0)
    reply = client.completions.create(
        model="qwen3.5-122b", prompt="hello world", max_tokens=100000, temperature=0
    )
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None and reply.usage.prompt_tokens == 2
    assert 0 < reply.usage.completion_tokens < 300


def test_generate_sse_has_spec_meta_info(seed_sim: Sim) -> None:
    body = {
        "input_ids": list(range(40)),
        "sampling_params": {"max_new_tokens": 64, "temperature": 0, "ignore_eos": True},
        "stream": True,
    }
    with requests.post(seed_sim.url + "/generate", json=body, stream=True, timeout=30) as resp:
        assert resp.status_code == 200
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        events = sse_events(resp)
    assert events[-1] == {"done": True}
    final = events[-2]
    meta = final["meta_info"]
    assert meta["finish_reason"] == {"type": "length", "length": 64}
    assert meta["prompt_tokens"] == 40 and meta["completion_tokens"] == 64
    assert meta["spec_accept_length"] == 64 / meta["spec_verify_ct"]
    assert 2.0 < meta["spec_accept_length"] <= 3.0
    assert count_tokens(final["text"]) == 64
    assert sum(len(e["output_ids"]) for e in events[:-1]) == 64
    assert all(e["meta_info"]["finish_reason"] is None for e in events[:-2])


def test_info_endpoints(seed_sim: Sim) -> None:
    url = seed_sim.url
    models = requests.get(url + "/v1/models", timeout=5).json()
    card = models["data"][0]
    assert models["object"] == "list"
    assert (card["id"], card["owned_by"], card["max_model_len"]) == (
        "qwen3.5-122b",
        "sglang",
        262144,
    )
    missing = requests.get(url + "/v1/models/nope", timeout=5)
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "model_not_found"
    info = requests.get(url + "/model_info", timeout=5).json()
    assert info["served_model_name"] == "qwen3.5-122b" and info["is_generation"] is True
    old = requests.get(url + "/get_model_info", timeout=5).json()
    assert old["model_path"] == "/shared/models/Qwen3.5-122B-A10B"
    for path in ("/server_info", "/get_server_info"):
        server = requests.get(url + path, timeout=5).json()
        assert server["tp_size"] == 4 and server["speculative_num_draft_tokens"] == 3
        assert server["max_running_requests"] == 48
        state = server["internal_states"][0]
        assert state["avg_spec_accept_length"] > 1.0  # warmup counted
        assert "memory_usage" in state and "last_gen_throughput" in state
    assert requests.get(url + "/ping", timeout=5).status_code == 200
    flush = requests.post(url + "/flush_cache", timeout=5)
    assert flush.status_code == 200 and flush.text.startswith("Cache flushed.")
    metrics = requests.get(url + "/metrics", timeout=5)
    assert metrics.status_code == 200
    assert (
        'sglang:num_requests_total{engine_type="unified",model_name="qwen3.5-122b"' in metrics.text
    )


def test_metrics_absent_without_flag_and_bad_request(start_sim: StartSim) -> None:
    sim = start_sim(["--model-path", "Qwen/Qwen2.5-0.5B-Instruct"])
    assert requests.get(sim.url + "/metrics", timeout=5).status_code == 404
    bad = requests.post(sim.url + "/v1/chat/completions", json={"messages": []}, timeout=5)
    assert bad.status_code == 400 and "messages" in bad.json()["message"]


def test_readiness_order(start_sim: StartSim) -> None:
    """Port closed while loading; /v1/models 200 while /health 503; then /health 200."""
    sim = start_sim(
        ["--model-path", "Qwen/Qwen2.5-0.5B-Instruct", "--disable-cuda-graph"],
        env={"SGLANG_SIM_STARTUP_SCALE": "0.5"},
        ready=False,
    )
    refused = False
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            status = requests.get(sim.url + "/v1/models", timeout=2).status_code
            break
        except requests.ConnectionError:
            refused = True
            time.sleep(0.02)
    assert refused, "the port must refuse connections while the model loads"
    assert status == 200
    assert requests.get(sim.url + "/health", timeout=2).status_code == 503
    assert requests.get(sim.url + "/model_info", timeout=2).status_code == 200
    sim.wait_ready()
    assert "The server is fired up and ready to roll!" in sim.stderr()


def test_skip_server_warmup_is_up_immediately(start_sim: StartSim) -> None:
    sim = start_sim(["--model-path", "m-1B", "--skip-server-warmup"])
    assert '"POST /generate' not in sim.stdout()


def test_real_time_decode_speed_matches_seed(start_sim: StartSim) -> None:
    """At TIME_SCALE=1 one greedy request decodes at the seeds' speed (steps 2: 186 tok/s)."""
    sim = start_sim(SEED_ARGS, env={"SGLANG_SIM_TIME_SCALE": "1"})
    body = {
        "text": "tell me a story",
        "sampling_params": {"max_new_tokens": 200, "temperature": 0, "ignore_eos": True},
        "stream": True,
    }
    stamps: list[tuple[float, int]] = []
    with requests.post(sim.url + "/generate", json=body, stream=True, timeout=30) as resp:
        total = 0
        for raw in resp.iter_lines():
            if raw and raw != b"data: [DONE]":
                total += len(json.loads(raw[6:])["output_ids"])
                stamps.append((time.monotonic(), total))
    (t0, n0), (t1, n1) = stamps[0], stamps[-1]
    speed = (n1 - n0) / (t1 - t0)
    assert n1 == 200
    assert 186 * 0.85 < speed < 186 * 1.1
    decode = [x for x in sim.stderr().splitlines() if "Decode batch, #running-req: 1," in x]
    assert decode and " TP0] " in decode[0]
    assert "accept len: " in decode[0] and "gen throughput (token/s): " in decode[0]
