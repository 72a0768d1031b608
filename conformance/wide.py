"""The wide conformance matrix: model families, GPU profiles and flags outside the first matrix.

Why a second matrix: the first one (``matrix.py``) is the project's own, and the simulator was
written against it; its figures do not say how the simulator and the predictor fare on a user's
first run. This one widens it to model families read from their published ``config.json``
(MoE with and without MTP/NextN, MLA with and without MTP, MXFP4 with sliding windows,
DeepseekV3-architecture models under other names, EAGLE/EAGLE3 heads, standalone draft models,
hybrid/mamba, dense), to seven GPU profiles (sm80, sm89, sm90 x2, sm100 x2, sm120), and to flag
combinations that reach SGLang 0.5.23's model- and architecture-specific hooks
(``arg_groups/model_overrides/``, ``mamba_hook.py``, ``moe_hook.py``, ``attention_hook.py``).

A part of it is **held out** (:func:`held_out`), decided before any golden was looked at: the
simulator and the predictor are never tuned on it, and its figures are reported apart. Held
out: every config of the families in :data:`HELD_OUT_MODELS`, every config on the profiles in
:data:`HELD_OUT_PROFILES`, and of the rest the (profile, config) pairs whose seeded hash falls
in the lowest :data:`HELD_OUT_FRACTION`.

Plain data, importable by the harness (real-SGLang venv) and by the tests (project venv).
"""

from __future__ import annotations

import hashlib
from typing import Any

from stubs import GpuProfile

__all__ = [
    "HELD_OUT_FRACTION",
    "HELD_OUT_MODELS",
    "HELD_OUT_PROFILES",
    "HELD_OUT_SEED",
    "WIDE_CONFIGS",
    "WIDE_MODELS",
    "WIDE_PROFILES",
    "held_out",
    "model_of",
]

WIDE_PROFILES = (
    GpuProfile("a100x8", "NVIDIA A100-SXM4-80GB", 8, 81920, (8, 0), 108),
    GpuProfile("l40sx4", "NVIDIA L40S", 4, 46068, (8, 9), 142),
    GpuProfile("h100x8", "NVIDIA H100 80GB HBM3", 8, 81559, (9, 0), 132),
    GpuProfile("h200x8", "NVIDIA H200", 8, 143771, (9, 0), 132),
    GpuProfile("b200x8", "NVIDIA B200", 8, 183359, (10, 0), 148),
    GpuProfile("gb200x4", "NVIDIA GB200", 4, 189471, (10, 0), 152),
    GpuProfile("rtx6000x4", "NVIDIA RTX PRO 6000 Blackwell Server Edition", 4, 97887, (12, 0), 188),
)

#: families whose every config is held out: a DeepseekV3-architecture model under another name
#: (Moonlight), a hybrid mamba family (Nemotron-H) and a MoE with sliding-window history
#: (Mixtral); their siblings in kind (Kimi-K2, Qwen3-Next, Qwen3-MoE) are in the tuned part
HELD_OUT_MODELS = frozenset(
    {"Moonlight-16B-A3B-Instruct", "NVIDIA-Nemotron-Nano-9B-v2", "Mixtral-8x7B-Instruct-v0.1"}
)
#: a GPU profile held out entirely (sm89, PCIe, no FA3)
HELD_OUT_PROFILES = frozenset({"l40sx4"})
HELD_OUT_SEED = "goldens-0.5.23-wide"
HELD_OUT_FRACTION = 0.2

_GPT_OSS_LAYERS = ["sliding_attention", "full_attention"]
_YARN_DS = {
    "type": "yarn",
    "factor": 40,
    "original_max_position_embeddings": 4096,
    "beta_fast": 32,
    "beta_slow": 1,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
}
_FP8_BLOCK = {
    "quant_method": "fp8",
    "fmt": "e4m3",
    "activation_scheme": "dynamic",
    "weight_block_size": [128, 128],
}
_NEMOTRON_PATTERN = "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-"


def _gpt_oss(layers: int, experts: int) -> dict[str, Any]:
    return {
        "architectures": ["GptOssForCausalLM"],
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "num_hidden_layers": layers,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "num_local_experts": experts,
        "num_experts_per_tok": 4,
        "sliding_window": 128,
        "layer_types": _GPT_OSS_LAYERS * (layers // 2),
        "max_position_embeddings": 131072,
        "rope_theta": 150000,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 32.0,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "truncate": False,
            "original_max_position_embeddings": 4096,
        },
        "vocab_size": 201088,
        "swiglu_limit": 7.0,
        "quantization_config": {
            "quant_method": "mxfp4",
            "modules_to_not_convert": [
                "model.layers.*.self_attn",
                "model.layers.*.mlp.router",
                "model.embed_tokens",
                "lm_head",
            ],
        },
        "dtype": "bfloat16",
    }


def _eagle3(
    hidden: int, inter: int, heads: int, kv: int, vocab: int, ctx: int, head_dim: int = 128
) -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLMEagle3"],
        "hidden_size": hidden,
        "intermediate_size": inter,
        "num_hidden_layers": 1,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "vocab_size": vocab,
        "draft_vocab_size": 32000,
        "max_position_embeddings": ctx,
        "dtype": "bfloat16",
    }


#: name -> (transformers config class, published config.json values)
WIDE_MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    # MoE without MTP
    "Qwen3-30B-A3B": (
        "Qwen3MoeConfig",
        {
            "architectures": ["Qwen3MoeForCausalLM"],
            "hidden_size": 2048,
            "intermediate_size": 6144,
            "num_hidden_layers": 48,
            "num_attention_heads": 32,
            "num_key_value_heads": 4,
            "head_dim": 128,
            "moe_intermediate_size": 768,
            "num_experts": 128,
            "num_experts_per_tok": 8,
            "max_position_embeddings": 40960,
            "rope_theta": 1000000.0,
            "vocab_size": 151936,
            "use_sliding_window": False,
            "dtype": "bfloat16",
        },
    ),
    "Mixtral-8x7B-Instruct-v0.1": (
        "MixtralConfig",
        {
            "architectures": ["MixtralForCausalLM"],
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "num_local_experts": 8,
            "num_experts_per_tok": 2,
            "max_position_embeddings": 32768,
            "rope_theta": 1000000.0,
            "sliding_window": None,
            "vocab_size": 32000,
            "dtype": "bfloat16",
        },
    ),
    # MoE with MTP/NextN
    "GLM-4.5-Air": (
        "Glm4MoeConfig",
        {
            "architectures": ["Glm4MoeForCausalLM"],
            "hidden_size": 4096,
            "intermediate_size": 10944,
            "num_hidden_layers": 46,
            "num_attention_heads": 96,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "moe_intermediate_size": 1408,
            "n_routed_experts": 128,
            "n_shared_experts": 1,
            "num_experts_per_tok": 8,
            "first_k_dense_replace": 1,
            "num_nextn_predict_layers": 1,
            "partial_rotary_factor": 0.5,
            "max_position_embeddings": 131072,
            "rope_theta": 1000000,
            "attention_bias": True,
            "vocab_size": 151552,
            "dtype": "bfloat16",
        },
    ),
    # MLA without MTP
    "DeepSeek-V2-Lite-Chat": (
        "DeepseekV2Config",
        {
            "architectures": ["DeepseekV2ForCausalLM"],
            "hidden_size": 2048,
            "intermediate_size": 10944,
            "num_hidden_layers": 27,
            "num_attention_heads": 16,
            "num_key_value_heads": 16,
            "kv_lora_rank": 512,
            "q_lora_rank": None,
            "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64,
            "v_head_dim": 128,
            "moe_intermediate_size": 1408,
            "n_routed_experts": 64,
            "n_shared_experts": 2,
            "num_experts_per_tok": 6,
            "first_k_dense_replace": 1,
            "max_position_embeddings": 163840,
            "rope_scaling": _YARN_DS,
            "vocab_size": 102400,
            "dtype": "bfloat16",
        },
    ),
    # MLA with MTP
    "DeepSeek-R1-0528": (
        "DeepseekV3Config",
        {
            "architectures": ["DeepseekV3ForCausalLM"],
            "max_position_embeddings": 163840,
            "num_nextn_predict_layers": 1,
            "rope_scaling": _YARN_DS,
            "quantization_config": _FP8_BLOCK,
            "dtype": "bfloat16",
        },
    ),
    # DeepseekV3 architecture under other names
    "Kimi-K2-Instruct": (
        "DeepseekV3Config",
        {
            "architectures": ["DeepseekV3ForCausalLM"],
            "hidden_size": 7168,
            "intermediate_size": 18432,
            "moe_intermediate_size": 2048,
            "num_hidden_layers": 61,
            "num_attention_heads": 64,
            "num_key_value_heads": 64,
            "n_routed_experts": 384,
            "n_shared_experts": 1,
            "num_experts_per_tok": 8,
            "first_k_dense_replace": 1,
            "kv_lora_rank": 512,
            "q_lora_rank": 1536,
            "n_group": 1,
            "topk_group": 1,
            "routed_scaling_factor": 2.827,
            "num_nextn_predict_layers": 0,
            "max_position_embeddings": 131072,
            "rope_theta": 50000.0,
            "rope_scaling": {
                "type": "yarn",
                "factor": 32.0,
                "original_max_position_embeddings": 4096,
                "beta_fast": 1.0,
                "beta_slow": 1.0,
                "mscale": 1.0,
                "mscale_all_dim": 1.0,
            },
            "vocab_size": 163840,
            "quantization_config": _FP8_BLOCK,
            "dtype": "bfloat16",
        },
    ),
    "Moonlight-16B-A3B-Instruct": (
        "DeepseekV3Config",
        {
            "architectures": ["DeepseekV3ForCausalLM"],
            "hidden_size": 2048,
            "intermediate_size": 11264,
            "moe_intermediate_size": 1408,
            "num_hidden_layers": 27,
            "num_attention_heads": 16,
            "num_key_value_heads": 16,
            "n_routed_experts": 64,
            "n_shared_experts": 2,
            "num_experts_per_tok": 6,
            "first_k_dense_replace": 1,
            "kv_lora_rank": 512,
            "q_lora_rank": None,
            "n_group": 1,
            "topk_group": 1,
            "routed_scaling_factor": 2.446,
            "num_nextn_predict_layers": 0,
            "max_position_embeddings": 8192,
            "rope_theta": 50000.0,
            "rope_scaling": None,
            "vocab_size": 163840,
            "dtype": "bfloat16",
        },
    ),
    # MXFP4 with sliding windows
    "gpt-oss-120b": ("GptOssConfig", _gpt_oss(36, 128)),
    "gpt-oss-20b": ("GptOssConfig", _gpt_oss(24, 32)),
    # hybrid / mamba
    "Qwen3-Next-80B-A3B-Instruct": (
        "Qwen3NextConfig",
        {
            "architectures": ["Qwen3NextForCausalLM"],
            "hidden_size": 2048,
            "intermediate_size": 5120,
            "num_hidden_layers": 48,
            "num_attention_heads": 16,
            "num_key_value_heads": 2,
            "head_dim": 256,
            "linear_conv_kernel_dim": 4,
            "linear_key_head_dim": 128,
            "linear_num_key_heads": 16,
            "linear_num_value_heads": 32,
            "linear_value_head_dim": 128,
            "moe_intermediate_size": 512,
            "shared_expert_intermediate_size": 512,
            "num_experts": 512,
            "num_experts_per_tok": 10,
            "full_attention_interval": 4,
            "partial_rotary_factor": 0.25,
            "max_position_embeddings": 262144,
            "rope_theta": 10000000,
            "mtp_num_hidden_layers": 1,
            "vocab_size": 151936,
            "dtype": "bfloat16",
        },
    ),
    "NVIDIA-Nemotron-Nano-9B-v2": (
        "NemotronHConfig",
        {
            "architectures": ["NemotronHForCausalLM"],
            "hidden_size": 4480,
            "intermediate_size": 15680,
            "num_hidden_layers": 56,
            "num_attention_heads": 40,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "mamba_num_heads": 128,
            "mamba_head_dim": 80,
            "ssm_state_size": 128,
            "n_groups": 8,
            "conv_kernel": 4,
            "hybrid_override_pattern": _NEMOTRON_PATTERN,
            "max_position_embeddings": 131072,
            "vocab_size": 131072,
            "dtype": "bfloat16",
        },
    ),
    # dense
    "Llama-3.3-70B-Instruct": (
        "LlamaConfig",
        {
            "architectures": ["LlamaForCausalLM"],
            "hidden_size": 8192,
            "intermediate_size": 28672,
            "num_hidden_layers": 80,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
            "max_position_embeddings": 131072,
            "rope_theta": 500000.0,
            "rope_scaling": {
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
            "dtype": "bfloat16",
        },
    ),
    "Qwen2.5-7B-Instruct": (
        "Qwen2Config",
        {
            "architectures": ["Qwen2ForCausalLM"],
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "num_hidden_layers": 28,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "max_position_embeddings": 32768,
            "sliding_window": 131072,
            "use_sliding_window": False,
            "rope_theta": 1000000.0,
            "vocab_size": 152064,
            "tie_word_embeddings": False,
            "dtype": "bfloat16",
        },
    ),
    "Mistral-7B-Instruct-v0.3": (
        "MistralConfig",
        {
            "architectures": ["MistralForCausalLM"],
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "max_position_embeddings": 32768,
            "sliding_window": None,
            "rope_theta": 1000000.0,
            "vocab_size": 32768,
            "dtype": "bfloat16",
        },
    ),
    # standalone draft models
    "Llama-3.2-1B-Instruct": (
        "LlamaConfig",
        {
            "architectures": ["LlamaForCausalLM"],
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "num_hidden_layers": 16,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 64,
            "vocab_size": 128256,
            "max_position_embeddings": 131072,
            "rope_theta": 500000.0,
            "rope_scaling": {
                "rope_type": "llama3",
                "factor": 32.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
            "tie_word_embeddings": True,
            "dtype": "bfloat16",
        },
    ),
    "Qwen3-0.6B": (
        "Qwen3Config",
        {
            "architectures": ["Qwen3ForCausalLM"],
            "hidden_size": 1024,
            "intermediate_size": 3072,
            "num_hidden_layers": 28,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 151936,
            "max_position_embeddings": 40960,
            "tie_word_embeddings": True,
            "dtype": "bfloat16",
        },
    ),
    # EAGLE / EAGLE3 draft heads
    "sglang-EAGLE3-LLaMA3.3-Instruct-70B": (
        "LlamaConfig",
        _eagle3(8192, 28672, 64, 8, 128256, 131072),
    ),
    "EAGLE3-gpt-oss-120b-bf16": ("LlamaConfig", _eagle3(2880, 17280, 64, 8, 201088, 131072, 64)),
    "Qwen3-30B-A3B-EAGLE3": ("LlamaConfig", _eagle3(2048, 6144, 32, 4, 151936, 40960)),
    "EAGLE-LLaMA3-Instruct-70B": (
        "LlamaConfig",
        {
            "architectures": ["LlamaForCausalLMEagle"],
            "hidden_size": 8192,
            "intermediate_size": 28672,
            "num_hidden_layers": 1,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
            "max_position_embeddings": 8192,
            "dtype": "bfloat16",
        },
    ),
}


def _m(name: str) -> list[str]:
    return ["--model-path", "{models}/" + name]


def _tp(n: int) -> list[str]:
    return ["--tp-size", str(n)]


def _spec(
    algo: str, steps: int | None = None, topk: int | None = None, draft: int | None = None
) -> list[str]:
    argv = ["--speculative-algorithm", algo]
    if steps is not None:
        argv += ["--speculative-num-steps", str(steps)]
    if topk is not None:
        argv += ["--speculative-eagle-topk", str(topk)]
    if draft is not None:
        argv += ["--speculative-num-draft-tokens", str(draft)]
    return argv


def _draft(name: str) -> list[str]:
    return ["--speculative-draft-model-path", "{models}/" + name]


QM = _m("Qwen3-30B-A3B")
MX = _m("Mixtral-8x7B-Instruct-v0.1")
GLM = _m("GLM-4.5-Air")
DV2 = _m("DeepSeek-V2-Lite-Chat")
R1 = _m("DeepSeek-R1-0528")
KIMI = _m("Kimi-K2-Instruct")
MOON = _m("Moonlight-16B-A3B-Instruct")
OSS = _m("gpt-oss-120b")
OSS20 = _m("gpt-oss-20b")
QN = _m("Qwen3-Next-80B-A3B-Instruct")
NEMO = _m("NVIDIA-Nemotron-Nano-9B-v2")
L70 = _m("Llama-3.3-70B-Instruct")
L1B = _m("Llama-3.2-1B-Instruct")
Q25 = _m("Qwen2.5-7B-Instruct")
MIS = _m("Mistral-7B-Instruct-v0.3")

#: name -> argv; every config runs on every profile (the parser and resolution do not check the
#: GPU count against TP; the launcher does later)
WIDE_CONFIGS: dict[str, list[str]] = {
    # Qwen3-30B-A3B: MoE without MTP
    "qmoe_tp1": QM,
    "qmoe_tp2": QM + _tp(2),
    "qmoe_tp4_ep4": QM + _tp(4) + ["--ep-size", "4"],
    "qmoe_eagle3_auto": QM + _spec("EAGLE3") + _draft("Qwen3-30B-A3B-EAGLE3"),
    "qmoe_eagle3_s3": QM + _tp(2) + _spec("EAGLE3", 3, 1, 4) + _draft("Qwen3-30B-A3B-EAGLE3"),
    "qmoe_standalone": QM + _spec("STANDALONE") + _draft("Qwen3-0.6B"),
    "qmoe_ngram_d8": QM + _spec("NGRAM", None, None, 8),
    "qmoe_fp8_kv_fp8": [*QM, "--quantization", "fp8", "--kv-cache-dtype", "fp8_e4m3"],
    "qmoe_dp_attn": QM + _tp(2) + ["--dp-size", "2", "--enable-dp-attention"],
    "qmoe_moe_triton": QM + _tp(2) + ["--moe-runner-backend", "triton"],
    "qmoe_flashinfer": [*QM, "--attention-backend", "flashinfer"],
    "qmoe_nextn_no_mtp": QM + _spec("NEXTN", 3, 1, 4),
    "qmoe_quant_int3": [*QM, "--quantization", "int3"],
    # Mixtral: MoE (held out)
    "mixtral_tp2": MX + _tp(2),
    "mixtral_tp8_fp8": MX + _tp(8) + ["--quantization", "fp8"],
    "mixtral_triton": MX + _tp(4) + ["--attention-backend", "triton"],
    "mixtral_ngram": MX + _tp(2) + _spec("NGRAM"),
    # GLM-4.5-Air: MoE with MTP
    "glm_tp4": GLM + _tp(4),
    "glm_tp8": GLM + _tp(8),
    "glm_nextn_auto": GLM + _tp(4) + _spec("NEXTN"),
    "glm_eagle_s3": GLM + _tp(4) + _spec("EAGLE", 3, 1, 4),
    "glm_eagle_topk2": GLM + _tp(4) + _spec("EAGLE", 2, 2, 4),
    "glm_kv_fp8": GLM + _tp(4) + ["--kv-cache-dtype", "fp8_e4m3"],
    "glm_parsers": GLM + _tp(4) + ["--tool-call-parser", "glm45", "--reasoning-parser", "glm45"],
    "glm_fp8": GLM + _tp(4) + ["--quantization", "fp8"],
    # DeepSeek-V2-Lite: MLA without MTP
    "dv2_tp1": DV2,
    "dv2_tp2": DV2 + _tp(2),
    "dv2_dp_attn": DV2 + _tp(2) + ["--dp-size", "2", "--enable-dp-attention"],
    "dv2_triton": [*DV2, "--attention-backend", "triton"],
    "dv2_flashinfer": [*DV2, "--attention-backend", "flashinfer"],
    "dv2_kv_fp8": [*DV2, "--kv-cache-dtype", "fp8_e4m3"],
    "dv2_chunk4096": [*DV2, "--chunked-prefill-size", "4096"],
    "dv2_nextn": DV2 + _spec("NEXTN"),
    # DeepSeek-R1-0528: MLA with MTP, FP8 blocks
    "r1_tp8": R1 + _tp(8),
    "r1_nextn_auto": R1 + _tp(8) + _spec("NEXTN"),
    "r1_nextn_s2k1": R1 + _tp(8) + _spec("EAGLE", 2, 1, 3),
    "r1_dp_attn": R1 + _tp(8) + ["--dp-size", "8", "--enable-dp-attention"],
    "r1_trtllm_mla": R1 + _tp(8) + ["--attention-backend", "trtllm_mla"],
    "r1_flashmla": R1 + _tp(8) + ["--attention-backend", "flashmla"],
    "r1_kv_fp8": R1 + _tp(8) + ["--kv-cache-dtype", "fp8_e4m3"],
    "r1_ep8": R1 + _tp(8) + ["--ep-size", "8"],
    "r1_deepep": R1 + _tp(8) + ["--moe-a2a-backend", "deepep"],
    "r1_mrr128": R1 + _tp(8) + ["--max-running-requests", "128", "--mem-fraction-static", "0.85"],
    # Kimi-K2: DeepseekV3 architecture, no MTP layers
    "kimi_tp8": KIMI + _tp(8),
    "kimi_nextn_auto": KIMI + _tp(8) + _spec("NEXTN"),
    "kimi_dp_attn": KIMI + _tp(8) + ["--dp-size", "8", "--enable-dp-attention"],
    "kimi_parsers": KIMI + _tp(8) + ["--tool-call-parser", "kimi_k2", "--reasoning-parser", "kimi"],
    "kimi_kv_fp8": KIMI + _tp(8) + ["--kv-cache-dtype", "fp8_e4m3"],
    # Moonlight: DeepseekV3 architecture (held out)
    "moon_tp1": MOON,
    "moon_tp2": MOON + _tp(2),
    "moon_nextn": MOON + _spec("NEXTN"),
    "moon_dp_attn": MOON + _tp(2) + ["--dp-size", "2", "--enable-dp-attention"],
    # gpt-oss: MXFP4, sliding windows
    "oss_tp1": OSS,
    "oss_tp2": OSS + _tp(2),
    "oss_tp8": OSS + _tp(8),
    "oss_eagle3_auto": OSS + _tp(2) + _spec("EAGLE3") + _draft("EAGLE3-gpt-oss-120b-bf16"),
    "oss_eagle3_s3": OSS + _tp(2) + _spec("EAGLE3", 3, 1, 4) + _draft("EAGLE3-gpt-oss-120b-bf16"),
    "oss_triton": OSS + _tp(2) + ["--attention-backend", "triton"],
    "oss_trtllm_mha": OSS + _tp(2) + ["--attention-backend", "trtllm_mha"],
    "oss_kv_fp8": OSS + _tp(2) + ["--kv-cache-dtype", "fp8_e4m3"],
    "oss_moe_triton": OSS + _tp(2) + ["--moe-runner-backend", "triton"],
    "oss_parsers": [*OSS, "--tool-call-parser", "gpt-oss", "--reasoning-parser", "gpt-oss"],
    "oss_kv_fp8_bad": [*OSS, "--kv-cache-dtype", "fp8"],
    "oss20_tp1": OSS20,
    "oss20_ngram": OSS20 + _spec("NGRAM"),
    "oss20_chunk_off": [*OSS20, "--chunked-prefill-size", "-1"],
    # Qwen3-Next: hybrid linear attention, MTP
    "qnext_tp4": QN + _tp(4),
    "qnext_tp2": QN + _tp(2),
    "qnext_nextn_auto": QN + _tp(4) + _spec("NEXTN"),
    "qnext_nextn_s3": QN + _tp(4) + _spec("NEXTN", 3, 1, 4),
    "qnext_kv_fp8": QN + _tp(4) + ["--kv-cache-dtype", "fp8_e4m3"],
    "qnext_no_radix": QN + _tp(4) + ["--disable-radix-cache"],
    "qnext_mamba_extra": QN + _tp(4) + ["--mamba-radix-cache-strategy", "extra_buffer"],
    "qnext_mamba_fp32": QN + _tp(4) + ["--mamba-ssm-dtype", "float32"],
    # Nemotron-H: hybrid mamba (held out)
    "nemo_tp1": NEMO,
    "nemo_tp2": NEMO + _tp(2),
    "nemo_no_radix": [*NEMO, "--disable-radix-cache"],
    "nemo_kv_fp8": [*NEMO, "--kv-cache-dtype", "fp8_e4m3"],
    # dense
    "l70_tp4": L70 + _tp(4),
    "l70_tp8": L70 + _tp(8),
    "l70_eagle3_auto": L70
    + _tp(4)
    + _spec("EAGLE3")
    + _draft("sglang-EAGLE3-LLaMA3.3-Instruct-70B"),
    "l70_eagle3_s5k4": L70
    + _tp(4)
    + _spec("EAGLE3", 5, 4, 8)
    + _draft("sglang-EAGLE3-LLaMA3.3-Instruct-70B"),
    "l70_eagle1": L70 + _tp(4) + _spec("EAGLE", 3, 1, 4) + _draft("EAGLE-LLaMA3-Instruct-70B"),
    "l70_standalone": L70 + _tp(4) + _spec("STANDALONE") + _draft("Llama-3.2-1B-Instruct"),
    "l70_standalone_s2": L70
    + _tp(4)
    + _spec("STANDALONE", 2, 1, 3)
    + _draft("Llama-3.2-1B-Instruct"),
    "l70_ngram": L70 + _tp(4) + _spec("NGRAM"),
    "l70_fp8_kv_e5m2": L70 + _tp(4) + ["--quantization", "fp8", "--kv-cache-dtype", "fp8_e5m2"],
    "l70_flashinfer": L70 + _tp(4) + ["--attention-backend", "flashinfer"],
    "l70_parsers": L70 + _tp(4) + ["--tool-call-parser", "llama3"],
    "l1b_tp1": L1B,
    "l1b_torch_native": [*L1B, "--attention-backend", "torch_native"],
    "q25_tp1": Q25,
    "q25_tp2_kv_fp8": Q25 + _tp(2) + ["--kv-cache-dtype", "fp8_e4m3"],
    "q25_triton_mixed": [*Q25, "--attention-backend", "triton", "--enable-mixed-chunk"],
    "q25_chunk2048": [*Q25, "--chunked-prefill-size", "2048", "--max-prefill-tokens", "8192"],
    "q25_parsers": [*Q25, "--tool-call-parser", "qwen25"],
    "mistral_tp1": MIS,
    "mistral_fa3": [*MIS, "--attention-backend", "fa3"],
    "mistral_context": [*MIS, "--context-length", "16384"],
    # command lines the parser or resolution may refuse, reaching different checks
    "qmoe_dflash_no_draft": QM + _spec("DFLASH"),
    "qmoe_flashmla_not_mla": [*QM, "--attention-backend", "flashmla"],
    "qmoe_dp3_tp2": QM + _tp(2) + ["--dp-size", "3", "--enable-dp-attention"],
    "qmoe_steps0": QM + _spec("EAGLE3", 0, 1, 1) + _draft("Qwen3-30B-A3B-EAGLE3"),
    "qmoe_missing_draft": QM + _spec("EAGLE3") + _draft("no-such-draft"),
    "oss_eagle3_no_draft": OSS + _spec("EAGLE3", 3, 1, 4),
    "oss_fa3": OSS + _tp(2) + ["--attention-backend", "fa3"],
    "oss_mxfp4_moe_bf16": [*OSS, "--moe-runner-backend", "flashinfer_mxfp4"],
    "qnext_mamba_f64": QN + _tp(4) + ["--mamba-ssm-dtype", "float64"],
    "qnext_mixed_chunk": QN + _tp(4) + ["--enable-mixed-chunk"],
    "l70_tool_parser_bad": L70 + _tp(4) + ["--tool-call-parser", "llama4x"],
    "l70_mxfp4": L70 + _tp(4) + ["--quantization", "mxfp4"],
    "l70_eagle_topk0": L70
    + _tp(4)
    + _spec("EAGLE3", 3, 0, 4)
    + _draft("sglang-EAGLE3-LLaMA3.3-Instruct-70B"),
    "mistral_context_over": [*MIS, "--context-length", "300000"],
    "mistral_dtype_int8": [*MIS, "--dtype", "int8"],
    "missing_model": _m("no-such-model"),
    "dv2_trtllm_mha": [*DV2, "--attention-backend", "trtllm_mha"],
    "nemo_ngram": NEMO + _spec("NGRAM"),
    "moon_kv_fp8_e5m2_flashmla": [
        *MOON,
        "--kv-cache-dtype",
        "fp8_e5m2",
        "--attention-backend",
        "flashmla",
    ],
    "mixtral_eagle_no_draft": MX + _tp(2) + _spec("EAGLE", 3, 1, 4),
}


def model_of(argv: list[str]) -> str:
    """The target model's name in a config's argv (its ``--model-path``)."""
    return argv[argv.index("--model-path") + 1].rsplit("/", 1)[-1]


def held_out(profile: str, config: str) -> bool:
    """Whether (``profile``, ``config``) is in the held-out part (never tuned on)."""
    if profile in HELD_OUT_PROFILES or model_of(WIDE_CONFIGS[config]) in HELD_OUT_MODELS:
        return True
    digest = hashlib.sha256(f"{HELD_OUT_SEED}/{profile}/{config}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < HELD_OUT_FRACTION
