"""Model identity from the model's own config.json, in the plugin's predictor: a model is what its
config.json says, whatever its directory is called; without one, its name stands in, with one note.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang import ServerConfig
from pytest_sglang.lifecycle.deployer import DeployerSettings
from pytest_sglang.lifecycle.deployers import make_deployer
from pytest_sglang.lifecycle.launch_plan import make_launch_plan
from pytest_sglang.lifecycle.spec import HostSpec
from pytest_sglang.model_identity import (
    identity_from_config,
    identity_from_text,
    read_model_identity,
)
from pytest_sglang.transport.base import CommandResult
from pytest_sglang.transport.local import LocalTransport

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
    "num_key_value_heads": 128,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "num_nextn_predict_layers": 1,
    "vocab_size": 129280,
    "max_position_embeddings": 163840,
    "rope_scaling": {
        "type": "yarn",
        "factor": 40,
        "original_max_position_embeddings": 4096,
    },
    "quantization_config": {"quant_method": "fp8", "fmt": "e4m3"},
}
#: The fields that matter of https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json
LLAMA_31_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0},
}


def model_dir(root: Path, name: str, config: dict[str, Any] | None) -> str:
    """A model directory called ``name`` holding ``config`` as its config.json (none if None)."""
    path = root / name
    path.mkdir(parents=True)
    if config is not None:
        (path / "config.json").write_text(json.dumps(config))
    return str(path)


def auto_spec(config: ServerConfig, version: str = "0.5.23") -> tuple[Any, ...]:
    r = config.resolved(version)
    return (r.speculative_num_steps, r.speculative_eagle_topk, r.speculative_num_draft_tokens)


def test_config_json_facts_are_read_as_sglang_reads_them() -> None:
    ds = identity_from_config("/m/x", DEEPSEEK_V3)
    assert (ds.architecture, ds.model_type, ds.quantization) == (
        "DeepseekV3ForCausalLM",
        "deepseek_v3",
        "fp8",
    )
    # yarn keeps the original length out of the factor: 163840, not 40 x 163840
    assert ds.context_length == 163840 and ds.num_layers == 61
    assert ds.mla and ds.is_moe and ds.nextn_layers == 1 and ds.experts_per_token == 8
    assert ds.from_config and ds.note is None
    llama = identity_from_config("/m/y", LLAMA_31_8B)
    assert llama.context_length == 131072  # llama3 rope: no factor
    assert not llama.mla and not llama.is_moe and llama.nextn_layers == 0
    scaled = identity_from_config(
        "/m/z", {**LLAMA_31_8B, "rope_scaling": {"type": "linear", "factor": 2.0}}
    )
    assert scaled.context_length == 262144
    qwen2 = identity_from_config(
        "/m/q",
        {
            "architectures": ["Qwen2ForCausalLM"],
            "sliding_window": 131072,
            "use_sliding_window": False,
        },
    )
    assert qwen2.sliding_window is None and qwen2.context_length == 2048  # no key: SGLang's 2048
    nested = identity_from_config(
        "/m/vl",
        {
            "architectures": ["Qwen3_5MoeForConditionalGeneration"],
            "text_config": {
                "max_position_embeddings": 262144,
                "mtp_num_hidden_layers": 1,
                "num_experts": 256,
            },
        },
    )
    assert nested.context_length == 262144 and nested.nextn_layers == 1 and nested.is_moe


def test_a_v3_architecture_under_a_neutral_name_resolves_as_its_architecture(
    tmp_path: Path,
) -> None:
    """Before: the name says nothing, so 0.5.12's default (5, 4, 8) and no self-draft; SGLang
    reads ``DeepseekV3ForCausalLM`` and runs (3, 1, 4) with the model as its own MTP draft."""
    path = model_dir(tmp_path, "house-model", DEEPSEEK_V3)
    config = ServerConfig(model_path=path, speculative_algorithm="NEXTN")
    assert auto_spec(config, "0.5.12") == (3, 1, 4)
    resolved = config.resolved("0.5.23")
    assert resolved.speculative_algorithm == "EAGLE"
    assert resolved.speculative_draft_model_path == path
    expected = config.expected_journal("0.5.23")
    assert expected.server_args["speculative_draft_model_path"] == path
    assert expected.notes == {}


def test_a_config_of_one_family_under_the_name_of_another(tmp_path: Path) -> None:
    """Before: "Qwen3" in the name gave Qwen's (3, 1, 4); the config says Llama: (5, 4, 8)."""
    path = model_dir(tmp_path, "Qwen3-8B-distilled", LLAMA_31_8B)
    assert auto_spec(ServerConfig(model_path=path, speculative_algorithm="EAGLE")) == (5, 4, 8)
    # and the other way round: a DeepSeek-looking name over a Llama config is Llama
    other = model_dir(tmp_path, "DeepSeek-R1-Distill-8B", LLAMA_31_8B)
    resolved = ServerConfig(model_path=other, speculative_algorithm="EAGLE").resolved()
    assert resolved.speculative_num_steps == 5 and resolved.speculative_draft_model_path is None


def test_a_directory_without_config_json_gets_one_note(tmp_path: Path) -> None:
    path = model_dir(tmp_path, "Llama-3.1-8B", None)
    expected = ServerConfig(model_path=path).expected_journal()
    assert expected.notes == {
        "model": f"model {path}: no readable config.json (No such file or directory); its "
        "identity is inferred from the directory name"
    }
    # the fallback is today's name inference: Llama by its name
    assert auto_spec(ServerConfig(model_path=path, speculative_algorithm="EAGLE")) == (5, 4, 8)
    plan = make_launch_plan(
        "h",
        ServerConfig(model_path=path),
        sglang_version="0.5.23",
        launcher=("/py",),
        launcher_env={},
    )
    assert plan.notes == (expected.notes["model"],)
    assert "no such directory on this machine" in read_model_identity("/nowhere/Qwen3-8B").note
    (Path(path) / "config.json").write_text("{not json")
    assert "(not JSON: " in (read_model_identity(path).note or "")
    nameless = identity_from_text(path, json.dumps({"model_type": "llama"}))
    assert "(it names no architectures)" in (nameless.note or "")


class HostOnlyModel(LocalTransport):
    """A host that has ``/host/models/house-model/config.json`` (this machine does not)."""

    def __init__(self) -> None:
        super().__init__()
        self.commands: list[str] = []

    def _run(self, command: str, *, timeout: float) -> CommandResult:
        self.commands.append(command)
        if command == "cat /host/models/house-model/config.json":
            return CommandResult(command, 0, json.dumps(DEEPSEEK_V3), "")
        if command.startswith("cat "):
            path = command.removeprefix("cat ")
            return CommandResult(command, 1, "", f"cat: {path}: No such file or directory\n")
        return super()._run(command, timeout=timeout)


def test_the_deployer_reads_config_json_on_the_host_once(tmp_path: Path) -> None:
    said: list[str] = []
    spec = HostSpec(
        name="gpu",
        kind="ssh",
        launch="/py -m sglang.launch_server",
        sglang_version="0.5.12",
        deployer="process",
    )
    transport = HostOnlyModel()
    deployer = make_deployer(spec, transport, DeployerSettings(say=said.append))
    config = ServerConfig(model_path="/host/models/house-model", speculative_algorithm="EAGLE")
    plan = deployer.launch_plan(config)
    assert plan.model is not None and plan.model.architecture == "DeepseekV3ForCausalLM"
    assert plan.resolved.speculative_num_steps == 3  # 0.5.12's default would be 5
    assert plan.notes == () and said == []
    deployer.launch_plan(config.replace(tp_size=2))
    reads = [c for c in transport.commands if c.startswith("cat ")]
    assert reads == ["cat /host/models/house-model/config.json"]  # once
    assert sum(c.startswith("nvidia-smi") for c in transport.commands) == 1  # the GPU, once
    missing = deployer.launch_plan(ServerConfig(model_path="/host/models/Llama-3-8B"))
    note = (
        "model /host/models/Llama-3-8B: no readable config.json (No such file or directory on "
        "gpu); its identity is inferred from the directory name"
    )
    assert missing.notes == (note,) and said == [f"[sglang] gpu: {note}"]


@pytest.mark.parametrize("name", ["Qwen3-8B", "Llama-3.1-8B", "DeepSeek-V3", "gpt-oss-120b"])
def test_the_name_fallback_keeps_the_earlier_inference(name: str) -> None:
    """Name-only directories (the conformance goldens') resolve as before."""
    triple = {"Llama-3.1-8B": (5, 4, 8)}.get(name, (3, 1, 4))
    config = ServerConfig(model_path=f"/nowhere/{name}", speculative_algorithm="EAGLE")
    assert auto_spec(config) == triple
