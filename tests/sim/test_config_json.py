"""The simulator reads the model's config.json as SGLang does: architecture, context length and
the MLA/MoE/NextN facts follow the file, not the directory's name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import requests

from conftest import StartSim
from pytest_sglang.sim.perf import GpuSpec
from pytest_sglang.sim.post_init import PIECEWISE_MLA, resolve_args
from pytest_sglang.sim.startup import compute_capacity

#: The fields that matter of https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json
LLAMA_2_7B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
}
#: The fields that matter of https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json
DEEPSEEK_V3: dict[str, Any] = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "first_k_dense_replace": 3,
    "num_attention_heads": 128,
    "kv_lora_rank": 512,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "num_nextn_predict_layers": 1,
    "vocab_size": 129280,
    "max_position_embeddings": 163840,
    "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096},
    "quantization_config": {"quant_method": "fp8"},
}


def model_dir(root: Path, name: str, config: dict[str, Any]) -> str:
    path = root / name
    path.mkdir()
    (path / "config.json").write_text(json.dumps(config))
    return str(path)


def test_max_model_len_follows_config_json(tmp_path: Path, start_sim: StartSim) -> None:
    """Before: a name without a known family gave 32768; config.json says 4096."""
    path = model_dir(tmp_path, "chat-7b", LLAMA_2_7B)
    sim = start_sim(["--model-path", path])
    (card,) = requests.get(sim.url + "/v1/models", timeout=5).json()["data"]
    assert card["max_model_len"] == 4096
    info = requests.get(sim.url + "/model_info", timeout=5).json()
    assert info["model_type"] == "llama" and info["architectures"] == ["LlamaForCausalLM"]
    assert "context_len=4096" in sim.stderr()


def test_context_length_flag_wins_over_config_json(tmp_path: Path) -> None:
    path = model_dir(tmp_path, "chat-7b", LLAMA_2_7B)
    gpu = GpuSpec()
    assert compute_capacity(resolve_args({"model_path": path}, "0.5.23", gpu)).context_len == 4096
    given = resolve_args({"model_path": path, "context_length": 2048}, "0.5.23", gpu)
    assert compute_capacity(given).context_len == 2048


def test_a_v3_architecture_under_a_neutral_name_runs_as_its_architecture(tmp_path: Path) -> None:
    """MLA prefill, MTP self-draft and (3, 1, 4) come from the architecture, not the name; its
    sizes from the config's shapes (671B total, 37B active; FP8 from quantization_config)."""
    path = model_dir(tmp_path, "house-model", DEEPSEEK_V3)
    args = {"model_path": path, "speculative_algorithm": "NEXTN", "tp_size": 8}
    resolved = resolve_args(args, "0.5.12", GpuSpec(memory_gb=141.0, capability=(9, 0)))
    assert PIECEWISE_MLA in resolved.warnings
    assert resolved.args["speculative_draft_model_path"] == path
    steps = [
        resolved.args[f"speculative_{k}"] for k in ("num_steps", "eagle_topk", "num_draft_tokens")
    ]
    assert steps == [3, 1, 4]
    model = resolved.model
    assert model.architecture == "DeepseekV3ForCausalLM" and model.layers == 61
    assert 660 < model.total_b < 680 and 30 < model.active_b < 40 and model.bytes_per_param == 1.0
