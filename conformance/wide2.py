"""The fresh held-out extension of the wide matrix: models and GPU profiles nobody here tuned on.

Why a second held-out part: the wide matrix's own held-out part (:mod:`wide`) has been measured
and its misses printed, so it no longer says how the simulator and the predictor fare on a
config nobody here has seen. This extension is decided and committed before any of its goldens
is compared with anything, and **every** config in it is held out: its figures are reported apart
from the wide matrix's, and no rule is ever tuned on them.

What it holds, chosen by the rules of :mod:`wide` (reach the per-architecture overrides, the
MoE/attention/speculative hooks and the refusals):

- models read from their published config.json that neither matrix has: Qwen3-235B-A22B (MoE
  without MTP), DeepSeek-V3.1 (DeepseekV3 architecture under a new name, MLA with MTP, FP8),
  GLM-4.6 (MoE with NextN), Phi-4 (dense, Phi3 architecture), Gemma-3-1B (sliding windows),
  ERNIE-4.5-21B-A3B (MoE), MiniMax-M2 (MoE, FP8), Llama-3.1-8B with its EAGLE3 head, and an
  EAGLE3 head for Qwen3-235B;
- GPU profiles neither matrix has: H20 (sm90, 96 GB), A100 40 GB (sm80, the 35-60 GB tier),
  L4 (sm89, under 35 GB), B300 (sm103), and B200 for the new models;
- every new model's configs on every profile of the extension, and the wide matrix's own configs
  on the B300 profile (a GPU generation nothing was tuned on).

Plain data, importable by the harness (real-SGLang venv) and by the tests (project venv).
"""

from __future__ import annotations

from typing import Any

from stubs import GpuProfile
from wide import WIDE_CONFIGS, WIDE_MODELS, _draft, _eagle3, _m, _spec, _tp

__all__ = ["OLD_CONFIGS_ON", "WIDE2_CONFIGS", "WIDE2_MODELS", "WIDE2_PROFILES", "configs_for"]

WIDE2_PROFILES = (
    GpuProfile("h20x8", "NVIDIA H20", 8, 97871, (9, 0), 78),
    GpuProfile("a100x4_40g", "NVIDIA A100-SXM4-40GB", 4, 40960, (8, 0), 108),
    GpuProfile("l4x4", "NVIDIA L4", 4, 23034, (8, 9), 58),
    GpuProfile("b300x8", "NVIDIA B300 SXM6 AC", 8, 275040, (10, 3), 148),
    GpuProfile("b200x8", "NVIDIA B200", 8, 183359, (10, 0), 148),
)
#: profiles on which the wide matrix's own configs run too
OLD_CONFIGS_ON = frozenset({"b300x8"})

_FP8_BLOCK = {
    "quant_method": "fp8",
    "fmt": "e4m3",
    "activation_scheme": "dynamic",
    "weight_block_size": [128, 128],
}
_YARN_V3 = {
    "type": "yarn",
    "factor": 40,
    "original_max_position_embeddings": 4096,
    "beta_fast": 32,
    "beta_slow": 1,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
}
_GEMMA_LAYERS = (["sliding_attention"] * 5 + ["full_attention"]) * 4 + ["sliding_attention"] * 2

#: name -> (transformers config class, published config.json values)
NEW_MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "Qwen3-235B-A22B": (
        "Qwen3MoeConfig",
        {
            "architectures": ["Qwen3MoeForCausalLM"],
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "num_hidden_layers": 94,
            "num_attention_heads": 64,
            "num_key_value_heads": 4,
            "head_dim": 128,
            "moe_intermediate_size": 1536,
            "num_experts": 128,
            "num_experts_per_tok": 8,
            "max_position_embeddings": 40960,
            "rope_theta": 1000000.0,
            "vocab_size": 151936,
            "dtype": "bfloat16",
        },
    ),
    "DeepSeek-V3.1": (
        "DeepseekV3Config",
        {
            "architectures": ["DeepseekV3ForCausalLM"],
            "max_position_embeddings": 163840,
            "num_nextn_predict_layers": 1,
            "rope_scaling": _YARN_V3,
            "quantization_config": {**_FP8_BLOCK, "scale_fmt": "ue8m0"},
            "dtype": "bfloat16",
        },
    ),
    "GLM-4.6": (
        "Glm4MoeConfig",
        {
            "architectures": ["Glm4MoeForCausalLM"],
            "hidden_size": 5120,
            "intermediate_size": 12288,
            "num_hidden_layers": 92,
            "num_attention_heads": 96,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "moe_intermediate_size": 1536,
            "n_routed_experts": 160,
            "n_shared_experts": 1,
            "num_experts_per_tok": 8,
            "first_k_dense_replace": 3,
            "num_nextn_predict_layers": 1,
            "partial_rotary_factor": 0.5,
            "max_position_embeddings": 202752,
            "rope_theta": 1000000,
            "attention_bias": True,
            "use_qk_norm": True,
            "vocab_size": 151552,
            "dtype": "bfloat16",
        },
    ),
    "phi-4": (
        "Phi3Config",
        {
            "architectures": ["Phi3ForCausalLM"],
            "hidden_size": 5120,
            "intermediate_size": 17920,
            "num_hidden_layers": 40,
            "num_attention_heads": 40,
            "num_key_value_heads": 10,
            "max_position_embeddings": 16384,
            "original_max_position_embeddings": 16384,
            "rope_theta": 250000,
            "vocab_size": 100352,
            "dtype": "bfloat16",
        },
    ),
    "gemma-3-1b-it": (
        "Gemma3TextConfig",
        {
            "architectures": ["Gemma3ForCausalLM"],
            "hidden_size": 1152,
            "intermediate_size": 6912,
            "num_hidden_layers": 26,
            "num_attention_heads": 4,
            "num_key_value_heads": 1,
            "head_dim": 256,
            "sliding_window": 512,
            "layer_types": _GEMMA_LAYERS,
            "query_pre_attn_scalar": 256,
            "max_position_embeddings": 32768,
            "rope_theta": 1000000,
            "rope_local_base_freq": 10000,
            "vocab_size": 262144,
            "dtype": "bfloat16",
        },
    ),
    "ERNIE-4.5-21B-A3B-PT": (
        "Ernie4_5_MoeConfig",
        {
            "architectures": ["Ernie4_5_MoeForCausalLM"],
            "hidden_size": 2560,
            "intermediate_size": 12288,
            "num_hidden_layers": 28,
            "num_attention_heads": 20,
            "num_key_value_heads": 4,
            "moe_num_experts": 64,
            "moe_k": 6,
            "moe_intermediate_size": 1536,
            "moe_num_shared_experts": 2,
            "moe_layer_start_index": 1,
            "max_position_embeddings": 131072,
            "rope_theta": 500000,
            "vocab_size": 103424,
            "tie_word_embeddings": True,
            "use_bias": False,
            "dtype": "bfloat16",
        },
    ),
    "MiniMax-M2": (
        "MiniMaxM2Config",
        {
            "architectures": ["MiniMaxM2ForCausalLM"],
            "hidden_size": 3072,
            "intermediate_size": 1536,
            "num_hidden_layers": 62,
            "num_attention_heads": 48,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "num_local_experts": 256,
            "num_experts_per_tok": 8,
            "rotary_dim": 64,
            "max_position_embeddings": 196608,
            "rope_theta": 5000000,
            "scoring_func": "sigmoid",
            "use_routing_bias": True,
            "use_qk_norm": True,
            "qk_norm_type": "per_layer",
            "vocab_size": 200064,
            "quantization_config": _FP8_BLOCK,
            "dtype": "bfloat16",
        },
    ),
    "Llama-3.1-8B-Instruct": (
        "LlamaConfig",
        {
            "architectures": ["LlamaForCausalLM"],
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
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
    "sglang-EAGLE3-LLaMA3.1-Instruct-8B": (
        "LlamaConfig",
        _eagle3(4096, 14336, 32, 8, 128256, 2048),
    ),
    "Qwen3-235B-A22B-EAGLE3": ("LlamaConfig", _eagle3(4096, 12288, 64, 4, 151936, 40960)),
}

#: the wide matrix's models (its configs run on :data:`OLD_CONFIGS_ON`) and the new ones
WIDE2_MODELS: dict[str, tuple[str, dict[str, Any]]] = {**WIDE_MODELS, **NEW_MODELS}

Q235 = _m("Qwen3-235B-A22B")
V31 = _m("DeepSeek-V3.1")
G46 = _m("GLM-4.6")
PHI = _m("phi-4")
GEM = _m("gemma-3-1b-it")
ERN = _m("ERNIE-4.5-21B-A3B-PT")
MM2 = _m("MiniMax-M2")
L8 = _m("Llama-3.1-8B-Instruct")
L8_DRAFT = _draft("sglang-EAGLE3-LLaMA3.1-Instruct-8B")

#: the new models' configs: name -> argv (every one on every profile of the extension)
WIDE2_CONFIGS: dict[str, list[str]] = {
    "q235_tp8": Q235 + _tp(8),
    "q235_tp4_ep4": Q235 + _tp(4) + ["--ep-size", "4"],
    "q235_dp_attn": Q235 + _tp(8) + ["--dp-size", "8", "--enable-dp-attention"],
    "q235_fp8": Q235 + _tp(4) + ["--quantization", "fp8"],
    "q235_ngram": Q235 + _tp(8) + _spec("NGRAM"),
    "q235_eagle3": Q235 + _tp(8) + _spec("EAGLE3") + _draft("Qwen3-235B-A22B-EAGLE3"),
    "q235_trtllm_mha": Q235 + _tp(8) + ["--attention-backend", "trtllm_mha"],
    "q235_ctx_over": Q235 + _tp(8) + ["--context-length", "131072"],
    "q235_deepep": Q235 + _tp(8) + ["--moe-a2a-backend", "deepep"],
    "v31_tp8": V31 + _tp(8),
    "v31_nextn_auto": V31 + _tp(8) + _spec("NEXTN"),
    "v31_eagle_s3k1": V31 + _tp(8) + _spec("EAGLE", 3, 1, 4),
    "v31_dp_attn": V31 + _tp(8) + ["--dp-size", "4", "--enable-dp-attention"],
    "v31_flashinfer": V31 + _tp(8) + ["--attention-backend", "flashinfer"],
    "v31_trtllm_mla_p32": V31 + _tp(8) + ["--attention-backend", "trtllm_mla", "--page-size", "32"],
    "v31_ngram": V31 + _tp(8) + _spec("NGRAM"),
    "v31_kv_e5m2": V31 + _tp(8) + ["--kv-cache-dtype", "fp8_e5m2"],
    "v31_fa3": V31 + _tp(8) + ["--attention-backend", "fa3"],
    "v31_parsers": V31
    + _tp(8)
    + ["--tool-call-parser", "deepseekv31", "--reasoning-parser", "deepseek-v3"],
    "g46_tp8": G46 + _tp(8),
    "g46_nextn_auto": G46 + _tp(8) + _spec("NEXTN"),
    "g46_eagle_s3k1": G46 + _tp(8) + _spec("EAGLE", 3, 1, 4),
    "g46_ep8": G46 + _tp(8) + ["--ep-size", "8"],
    "g46_dp_attn": G46 + _tp(8) + ["--dp-size", "2", "--enable-dp-attention"],
    "g46_kv_fp8": G46 + _tp(8) + ["--kv-cache-dtype", "fp8_e4m3"],
    "g46_parsers": G46 + _tp(8) + ["--tool-call-parser", "glm45", "--reasoning-parser", "glm45"],
    "g46_trtllm_mha": G46 + _tp(8) + ["--attention-backend", "trtllm_mha"],
    "g46_ngram": G46 + _tp(8) + _spec("NGRAM"),
    "phi4_tp1": PHI,
    "phi4_tp2": PHI + _tp(2),
    "phi4_eagle_no_draft": PHI + _spec("EAGLE", 3, 1, 4),
    "phi4_ngram_d16": PHI + _spec("NGRAM", None, None, 16),
    "phi4_ctx_over": [*PHI, "--context-length", "32768"],
    "phi4_triton": [*PHI, "--attention-backend", "triton"],
    "phi4_kv_e5m2": [*PHI, "--kv-cache-dtype", "fp8_e5m2"],
    "phi4_torch_native": [*PHI, "--attention-backend", "torch_native"],
    "phi4_limits": [
        *PHI,
        "--mem-fraction-static",
        "0.8",
        "--chunked-prefill-size",
        "4096",
        "--max-running-requests",
        "64",
    ],
    "gemma_tp1": GEM,
    "gemma_flashinfer": [*GEM, "--attention-backend", "flashinfer"],
    "gemma_triton": [*GEM, "--attention-backend", "triton"],
    "gemma_fa3": [*GEM, "--attention-backend", "fa3"],
    "gemma_ngram": GEM + _spec("NGRAM"),
    "gemma_no_swa": [*GEM, "--disable-hybrid-swa-memory"],
    "gemma_ctx": [*GEM, "--context-length", "8192"],
    "gemma_trtllm_mha": [*GEM, "--attention-backend", "trtllm_mha"],
    "ernie_tp1": ERN,
    "ernie_tp2": ERN + _tp(2),
    "ernie_ep2": ERN + _tp(2) + ["--ep-size", "2"],
    "ernie_dp_attn": ERN + _tp(2) + ["--dp-size", "2", "--enable-dp-attention"],
    "ernie_moe_triton": ERN + _tp(2) + ["--moe-runner-backend", "triton"],
    "ernie_fp8": [*ERN, "--quantization", "fp8"],
    "ernie_nextn": ERN + _spec("NEXTN"),
    "mm2_tp4": MM2 + _tp(4),
    "mm2_tp8_ep8": MM2 + _tp(8) + ["--ep-size", "8"],
    "mm2_dp_attn": MM2 + _tp(8) + ["--dp-size", "8", "--enable-dp-attention"],
    "mm2_kv_fp8": MM2 + _tp(4) + ["--kv-cache-dtype", "fp8_e4m3"],
    "mm2_parsers": MM2
    + _tp(4)
    + ["--tool-call-parser", "minimax-m2", "--reasoning-parser", "minimax-append-think"],
    "mm2_ngram": MM2 + _tp(4) + _spec("NGRAM"),
    "mm2_eagle_no_draft": MM2 + _tp(4) + _spec("EAGLE", 3, 1, 4),
    "l8_tp1": L8,
    "l8_eagle3_auto": L8 + _spec("EAGLE3") + L8_DRAFT,
    "l8_eagle3_s3k4": L8 + _spec("EAGLE3", 3, 4, 8) + L8_DRAFT,
    "l8_eagle3_page16": L8 + _spec("EAGLE3", 5, 4, 8) + L8_DRAFT + ["--page-size", "16"],
    "l8_eagle3_adjust": L8 + _spec("EAGLE3", 2, 1, 5) + L8_DRAFT,
    "l8_fp8": [*L8, "--quantization", "fp8"],
    "l8_trtllm_mha_p16": [*L8, "--attention-backend", "trtllm_mha", "--page-size", "16"],
    "l8_flashmla": [*L8, "--attention-backend", "flashmla"],
    "l8_dp3_tp2": L8 + _tp(2) + ["--dp-size", "3", "--enable-dp-attention"],
    "l8_ngram_page16": L8 + _spec("NGRAM") + ["--page-size", "16"],
    "l8_missing_draft": L8 + _spec("EAGLE3") + _draft("no-such-eagle3-head"),
}


def configs_for(profile: str) -> dict[str, list[str]]:
    """The configs run on ``profile``: the new models' everywhere, the wide matrix's own on
    :data:`OLD_CONFIGS_ON` (prefixed ``wide.``)."""
    configs = dict(WIDE2_CONFIGS)
    if profile in OLD_CONFIGS_ON:
        configs.update({f"wide.{name}": argv for name, argv in WIDE_CONFIGS.items()})
    return configs
