"""The seeds' speculative-num-steps sweep, as configs (deployment comes with the fixtures)."""

from __future__ import annotations

import pytest

from pytest_sglang import ServerConfig, sweep

SEED = ServerConfig(
    model_path="/shared/models/Qwen3.5-122B-A10B",
    served_model_name="qwen3.5-122b",
    tp_size=4,
    host="0.0.0.0",
    port=30000,
    speculative_algorithm="EAGLE",
    speculative_num_steps=1,
    speculative_eagle_topk=1,
)

CONFIGS = sweep(SEED, speculative_num_steps=[1, 2, 3, 4])


@pytest.mark.parametrize("config", CONFIGS)
def test_resolved_draft_tokens(config: ServerConfig) -> None:
    resolved = config.resolved()
    assert resolved.speculative_num_draft_tokens == config.speculative_num_steps + 1  # type: ignore[operator]
    assert resolved.max_running_requests == 48
