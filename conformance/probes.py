"""Hand-written probes of 0.5.23's per-architecture and ModelConfig rules, run through the real
package (the harness's stubs), written to tests/data/real_probes_0.5.23.json.

Why apart from the matrices: each probe is chosen from the source's condition of one rule the
coverage table (conformance/source_coverage.py) lists as modelled (OLMo 2, Gemma 2/3, MiniMax-M2 and
Llama 4's overrides, the multimodal, hybrid-SWA and Gemma dtype notes, ``_verify_quantization``,
``_handle_eagle_family``'s mixed-chunk and MTP draft-path notes, its backend and DP
attention refusals, ``_handle_ngram``'s DP attention refusal), to check
that the port logs and refuses what the real package does. The models are minimal config.json
files (the fields the rules read); the wide matrix's models are reused for the quantized
checkpoints. tests/sim/test_model_rules.py replays them through the simulator and the predictor.

    ~/.cache/pytest-sglang/real-0.5.23/bin/python conformance/probes.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "real_probes_0.5.23.json")
PROFILES = ("b200x8", "a100x8", "h200x8")
MODELS: dict[str, dict[str, Any]] = {
    "OLMo-2-7B": {
        "architectures": ["Olmo2ForCausalLM"],
        "model_type": "olmo2",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "intermediate_size": 11008,
        "max_position_embeddings": 4096,
        "vocab_size": 100352,
        "torch_dtype": "bfloat16",
    },
    "gemma-3-4b": {
        "architectures": ["Gemma3ForCausalLM"],
        "model_type": "gemma3_text",
        "hidden_size": 2560,
        "num_hidden_layers": 34,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "intermediate_size": 10240,
        "max_position_embeddings": 131072,
        "sliding_window": 1024,
        "vocab_size": 262208,
        "torch_dtype": "bfloat16",
    },
    "MiniMax-M2x": {
        "architectures": ["MiniMaxM2ForCausalLM"],
        "model_type": "minimax_m2",
        "hidden_size": 3072,
        "num_hidden_layers": 62,
        "num_attention_heads": 48,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 1536,
        "num_local_experts": 256,
        "num_experts_per_tok": 8,
        "max_position_embeddings": 196608,
        "vocab_size": 200064,
        "torch_dtype": "bfloat16",
    },
    "Llama-4-Scout": {
        "architectures": ["Llama4ForConditionalGeneration"],
        "model_type": "llama4",
        "text_config": {
            "model_type": "llama4_text",
            "hidden_size": 5120,
            "num_hidden_layers": 48,
            "num_attention_heads": 40,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "num_local_experts": 16,
            "max_position_embeddings": 10485760,
            "vocab_size": 202048,
        },
        "vision_config": {"model_type": "llama4_vision_model"},
        "torch_dtype": "bfloat16",
    },
    "gemma-2-9b": {
        "architectures": ["Gemma2ForCausalLM"],
        "model_type": "gemma2",
        "hidden_size": 3584,
        "num_hidden_layers": 42,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 256,
        "intermediate_size": 14336,
        "max_position_embeddings": 8192,
        "sliding_window": 4096,
        "vocab_size": 256000,
        "torch_dtype": "float32",
    },
    "Llama-3.2-1B": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 8192,
        "max_position_embeddings": 131072,
        "vocab_size": 128256,
        "torch_dtype": "bfloat16",
    },
    "command-a-moe": {
        "architectures": ["Cohere2MoeForCausalLM"],
        "model_type": "cohere2_moe",
        "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16",
    },
    "R1-fp8": {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",
        "hidden_size": 7168,
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "n_routed_experts": 256,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 2048,
        "intermediate_size": 18432,
        "max_position_embeddings": 163840,
        "vocab_size": 129280,
        "torch_dtype": "bfloat16",
        "quantization_config": {
            "quant_method": "fp8",
            "fmt": "e4m3",
            "activation_scheme": "dynamic",
            "weight_block_size": [128, 128],
        },
    },
}
ARGVS: dict[str, list[str]] = {
    "olmo": ["--model-path", "{models}/OLMo-2-7B"],
    "olmo_flashinfer": ["--model-path", "{models}/OLMo-2-7B", "--attention-backend", "flashinfer"],
    "gemma": ["--model-path", "{models}/gemma-3-4b"],
    "minimax": ["--model-path", "{models}/MiniMax-M2x", "--tp-size", "4"],
    "minimax_mofp4": [
        "--model-path",
        "{models}/MiniMax-M2x",
        "--tp-size",
        "4",
        "--quantization",
        "modelopt_fp4",
    ],
    "llama4": ["--model-path", "{models}/Llama-4-Scout", "--tp-size", "4"],
    "llama4_fp8": [
        "--model-path",
        "{models}/Llama-4-Scout",
        "--tp-size",
        "4",
        "--quantization",
        "fp8",
    ],
    "llama4_ngram": [
        "--model-path",
        "{models}/Llama-4-Scout",
        "--tp-size",
        "4",
        "--speculative-algorithm",
        "NGRAM",
    ],
    "gemma2_fp32": ["--model-path", "{models}/gemma-2-9b"],
    "gemma2_fp32_dtype": ["--model-path", "{models}/gemma-2-9b", "--dtype", "float16"],
    "standalone_mixed": [
        "--model-path",
        "{models}/Llama-3.2-1B",
        "--speculative-algorithm",
        "STANDALONE",
        "--speculative-draft-model-path",
        "{models}/Llama-3.2-1B",
        "--enable-mixed-chunk",
    ],
    "eagle_mixed": [
        "--model-path",
        "{models}/R1-fp8",
        "--tp-size",
        "8",
        "--speculative-algorithm",
        "EAGLE",
        "--enable-mixed-chunk",
    ],
    "r1_mtp_draft_path": [
        "--model-path",
        "{models}/R1-fp8",
        "--tp-size",
        "8",
        "--speculative-algorithm",
        "NEXTN",
        "--speculative-draft-model-path",
        "{models}/R1-fp8",
    ],
    "command_a": ["--model-path", "{models}/command-a-moe", "--tp-size", "4"],
    "standalone_dp_attention": [
        "--model-path",
        "{models}/Llama-3.2-1B",
        "--speculative-algorithm",
        "STANDALONE",
        "--speculative-draft-model-path",
        "{models}/Llama-3.2-1B",
        "--tp-size",
        "2",
        "--dp-size",
        "2",
        "--enable-dp-attention",
    ],
    "ngram_dp_attention": [
        "--model-path",
        "{models}/Llama-3.2-1B",
        "--speculative-algorithm",
        "NGRAM",
        "--tp-size",
        "2",
        "--dp-size",
        "2",
        "--enable-dp-attention",
    ],
    "standalone_trtllm_mha_topk4": [
        "--model-path",
        "{models}/Llama-3.2-1B",
        "--speculative-algorithm",
        "STANDALONE",
        "--speculative-draft-model-path",
        "{models}/Llama-3.2-1B",
        "--speculative-num-steps",
        "3",
        "--speculative-eagle-topk",
        "4",
        "--speculative-num-draft-tokens",
        "8",
        "--attention-backend",
        "trtllm_mha",
    ],
    "standalone_trtllm_mha_topk_unset": [
        "--model-path",
        "{models}/Llama-3.2-1B",
        "--speculative-algorithm",
        "STANDALONE",
        "--speculative-draft-model-path",
        "{models}/Llama-3.2-1B",
        "--speculative-num-steps",
        "3",
        "--attention-backend",
        "trtllm_mha",
    ],
    "standalone_paged_tree_torch_native": [
        "--model-path",
        "{models}/Llama-3.2-1B",
        "--speculative-algorithm",
        "STANDALONE",
        "--speculative-draft-model-path",
        "{models}/Llama-3.2-1B",
        "--speculative-num-steps",
        "3",
        "--speculative-eagle-topk",
        "4",
        "--speculative-num-draft-tokens",
        "8",
        "--attention-backend",
        "torch_native",
        "--page-size",
        "16",
    ],
    "r1_awq": ["--model-path", "{models}/R1-fp8", "--tp-size", "8", "--quantization", "awq"],
    "r1_modelopt_fp4": [
        "--model-path",
        "{models}/R1-fp8",
        "--tp-size",
        "8",
        "--quantization",
        "modelopt_fp4",
    ],
    "r1_quark": [
        "--model-path",
        "{models}/R1-fp8",
        "--tp-size",
        "8",
        "--quantization",
        "quark_mxfp4",
    ],
}
KEYS = ("attention_backend", "moe_runner_backend", "disable_hybrid_swa_memory", "page_size")


def run_profile(key: str) -> dict[str, Any]:
    """Every probe on one wide-matrix profile, in this (fresh) process."""
    sys.path.insert(0, HERE)
    import harness

    profile = next(p for p in harness.WIDE_PROFILES if p.key == key)
    work = tempfile.mkdtemp(prefix="probes-")
    harness.install(profile, os.path.join(work, "bin"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    models = os.path.join(work, "models")
    for name, config in MODELS.items():
        os.makedirs(os.path.join(models, name))
        with open(os.path.join(models, name, "config.json"), "w") as handle:
            json.dump(config, handle)
    result: dict[str, Any] = {}
    for name, argv in ARGVS.items():
        entry = harness.run_config([a.replace("{models}", models) for a in argv])
        resolved = entry.get("server_args") or {}
        result[name] = {
            "exit_code": entry["exit_code"],
            "log_before_server_args": entry["log_before_server_args"],
            "last_line": entry.get("last_line"),
            "resolved": {k: resolved.get(k) for k in KEYS} if entry["exit_code"] == 0 else {},
        }
    return result


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--profile":
        print(json.dumps(run_profile(sys.argv[2])))
        return
    runs = {
        key: subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--profile", key],
            stdout=subprocess.PIPE,
            text=True,
        )
        for key in PROFILES
    }
    probes = {key: json.loads(run.communicate()[0]) for key, run in runs.items()}
    golden = {"sglang_version": "0.5.23", "models": MODELS, "argv": ARGVS, "probes": probes}
    with open(OUT, "w") as handle:
        json.dump(golden, handle, indent=1, sort_keys=True)
        handle.write("\n")
    print(f"probes written to {OUT}")


if __name__ == "__main__":
    main()
