"""The seeds' setup: Qwen3.5-122B-A10B at TP 4 with EAGLE (topk 1), steps swept 1..4."""

from __future__ import annotations

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

#: One config per step count; the same objects serve every scenario, deployed once each.
CONFIGS = sweep(SEED, speculative_num_steps=[1, 2, 3, 4])
