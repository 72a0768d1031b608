"""The seeds' tuning session: EAGLE speculative-num-steps 1..4 on Qwen3.5-122B-A10B, TP 4.

Each config is deployed once, becomes ready (health, not a sleep), and its startup journal must
prove the flags took effect: draft tokens = steps + 1 under topk 1, with SGLang's adjustment
warning, and max_running_requests = 48.
"""

from __future__ import annotations

import re

import pytest
from seed import CONFIGS

from pytest_sglang import ADJUST_DRAFT_TOKENS_WARNING, Deployment


@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_flags_took_effect(sglang_server: Deployment) -> None:
    steps = sglang_server.config.speculative_num_steps
    assert steps is not None
    assert sglang_server.server_args["speculative_num_steps"] == steps
    assert sglang_server.server_args["speculative_num_draft_tokens"] == steps + 1
    assert sglang_server.server_args["max_running_requests"] == 48
    sglang_server.journal.expect(re.escape(ADJUST_DRAFT_TOKENS_WARNING))


@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_serves_the_model(sglang_server: Deployment) -> None:
    models = sglang_server.get("/v1/models").json()
    assert [m["id"] for m in models["data"]] == ["qwen3.5-122b"]
    reply = sglang_server.post(
        "/v1/chat/completions",
        json={
            "model": "qwen3.5-122b",
            "messages": [{"role": "user", "content": "The capital city of France is"}],
            "max_tokens": 8,
            "temperature": 0,
        },
    ).json()
    assert reply["usage"]["completion_tokens"] <= 8
    assert reply["choices"][0]["message"]["content"]
