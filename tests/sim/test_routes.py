"""The simulator's routes against SGLang 0.5.23's (srt/entrypoints/http_server.py), over HTTP.

The routes clients, operators and this plugin use, with the methods the real server registers:
a method the real one refuses is refused here too (405), and the answers have the real shapes
(/generate's batch form, the profiler's texts, /metrics' histogram buckets).
"""

from __future__ import annotations

import re

import pytest
import requests

from conftest import Sim

#: (method, path, JSON body) for each route as 0.5.23 registers it
REAL_ROUTES = [
    ("GET", "/v1/models", None),
    ("GET", "/v1/models/qwen3.5-122b", None),
    ("POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
    ("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 2}),
    ("POST", "/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 2}}),
    ("PUT", "/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 2}}),
    ("GET", "/health", None),
    ("GET", "/health_generate", None),
    ("GET", "/ready", None),
    ("GET", "/ping", None),
    ("GET", "/get_model_info", None),
    ("GET", "/model_info", None),
    ("GET", "/get_server_info", None),
    ("GET", "/server_info", None),
    ("GET", "/metrics", None),
    ("GET", "/flush_cache", None),
    ("POST", "/flush_cache", None),
    ("GET", "/start_profile", None),
    ("POST", "/start_profile", None),
    ("GET", "/stop_profile", None),
    ("POST", "/stop_profile", None),
]
#: methods the real server answers with 405
REFUSED = [("POST", "/ping"), ("GET", "/generate"), ("DELETE", "/flush_cache"), ("PUT", "/health")]
TTFT_BUCKETS = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400]
E2E_BUCKETS = [*TTFT_BUCKETS, 600, 1200, 1800, 2400]


@pytest.mark.parametrize(("method", "path", "body"), REAL_ROUTES)
def test_real_route_answers(seed_sim: Sim, method: str, path: str, body: object) -> None:
    resp = requests.request(method, seed_sim.url + path, json=body, timeout=30)
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize(("method", "path"), REFUSED)
def test_method_the_real_server_refuses(seed_sim: Sim, method: str, path: str) -> None:
    assert requests.request(method, seed_sim.url + path, timeout=5).status_code == 405


def test_profiler_answers_without_profiling(seed_sim: Sim) -> None:
    assert requests.post(seed_sim.url + "/start_profile", timeout=5).text == "Start profiling.\n"
    stop = requests.get(seed_sim.url + "/stop_profile", timeout=5)
    assert stop.text == "Stop profiling. This will take some time.\n"


def test_generate_batch_input_answers_a_list_in_order(seed_sim: Sim) -> None:
    body = {"text": ["one two", "three four five six"], "sampling_params": {"max_new_tokens": 4}}
    out = requests.post(seed_sim.url + "/generate", json=body, timeout=30).json()
    assert isinstance(out, list) and len(out) == 2
    assert [o["meta_info"]["completion_tokens"] for o in out] == [4, 4]
    assert out[0]["meta_info"]["prompt_tokens"] < out[1]["meta_info"]["prompt_tokens"]
    ids = {"input_ids": [[1, 2, 3], [4, 5]], "sampling_params": {"max_new_tokens": 2}}
    by_ids = requests.post(seed_sim.url + "/generate", json=ids, timeout=30).json()
    assert [o["meta_info"]["prompt_tokens"] for o in by_ids] == [3, 2]


def _buckets(text: str, name: str) -> list[tuple[str, float]]:
    pattern = rf'^sglang:{name}_bucket{{.*le="([^"]+)"}} (\S+)$'
    return [(m.group(1), float(m.group(2))) for m in re.finditer(pattern, text, re.M)]


def test_metrics_histograms_have_the_real_buckets(seed_sim: Sim) -> None:
    body = {"text": "hello", "sampling_params": {"max_new_tokens": 4}}
    requests.post(seed_sim.url + "/generate", json=body, timeout=30).raise_for_status()
    text = requests.get(seed_sim.url + "/metrics", timeout=5).text
    for name, bounds in (
        ("time_to_first_token_seconds", TTFT_BUCKETS),
        ("e2e_request_latency_seconds", E2E_BUCKETS),
    ):
        buckets = _buckets(text, name)
        assert [le for le, _ in buckets] == [str(float(b)) for b in bounds] + ["+Inf"]
        counts = [c for _, c in buckets]
        assert counts == sorted(counts) and counts[-1] >= 1
        count = re.search(rf"^sglang:{name}_count{{.*}} (\S+)$", text, re.M)
        assert count is not None and float(count.group(1)) == counts[-1]
        assert f"# TYPE sglang:{name} histogram" in text
