"""The conformance matrix: GPU profiles, models, configs and tricky parser values.

Plain data, importable by both the harness (in the real-SGLang venv) and anyone reading the
goldens. Model paths are written as ``{models}/<name>``: the harness puts a directory holding
only ``config.json`` there; the goldens keep the placeholder so they do not depend on where
the harness ran.
"""

from __future__ import annotations

from typing import Any

from stubs import GpuProfile

__all__ = ["CONFIGS", "MODELS", "PROFILES", "TRICKY_VALUES", "expand"]

PROFILES = (
    GpuProfile("rtx6000x4", "NVIDIA RTX PRO 6000 Blackwell Server Edition", 4, 97887, (12, 0), 188),
    GpuProfile("h100x8", "NVIDIA H100 80GB HBM3", 8, 81559, (9, 0), 132),
    GpuProfile("h200x8", "NVIDIA H200", 8, 143771, (9, 0), 132),
)

#: name -> (transformers config class, overrides). Sizes are the published models'.
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "Qwen3.5-122B-A10B": (
        "Qwen3_5MoeConfig",
        {
            "architectures": ["Qwen3_5MoeForConditionalGeneration"],
            "text_config": {
                "hidden_size": 3072,
                "num_hidden_layers": 48,
                "num_attention_heads": 32,
                "num_key_value_heads": 2,
                "head_dim": 256,
                "moe_intermediate_size": 1024,
                "shared_expert_intermediate_size": 1024,
                "num_experts": 256,
                "num_experts_per_tok": 8,
                "max_position_embeddings": 262144,
                "mtp_num_hidden_layers": 1,
                "dtype": "bfloat16",
            },
            "dtype": "bfloat16",
        },
    ),
    "Qwen3-8B": (
        "Qwen3Config",
        {
            "architectures": ["Qwen3ForCausalLM"],
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "num_hidden_layers": 36,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 151936,
            "max_position_embeddings": 40960,
            "tie_word_embeddings": False,
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
    "DeepSeek-V3": (
        "DeepseekV3Config",
        {
            "architectures": ["DeepseekV3ForCausalLM"],
            "max_position_embeddings": 163840,
            "num_nextn_predict_layers": 1,
            "quantization_config": {
                "quant_method": "fp8",
                "fmt": "e4m3",
                "activation_scheme": "dynamic",
                "weight_block_size": [128, 128],
            },
            "dtype": "bfloat16",
        },
    ),
    # draft models
    "sglang-EAGLE3-Llama-3.1-Instruct-8B": (
        "LlamaConfig",
        {
            "architectures": ["LlamaForCausalLMEagle3"],
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 1,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
            "draft_vocab_size": 32000,
            "max_position_embeddings": 131072,
            "dtype": "bfloat16",
        },
    ),
    "EAGLE-LLaMA3.1-Instruct-8B": (
        "LlamaConfig",
        {
            "architectures": ["LlamaForCausalLMEagle"],
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 1,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
            "max_position_embeddings": 131072,
            "dtype": "bfloat16",
        },
    ),
    "Qwen3-8B-EAGLE3": (
        "LlamaConfig",
        {
            "architectures": ["LlamaForCausalLMEagle3"],
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "num_hidden_layers": 1,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 151936,
            "draft_vocab_size": 32000,
            "max_position_embeddings": 40960,
            "dtype": "bfloat16",
        },
    ),
}

Q35 = ["--model-path", "{models}/Qwen3.5-122B-A10B"]
Q3 = ["--model-path", "{models}/Qwen3-8B"]
LL = ["--model-path", "{models}/Llama-3.1-8B-Instruct"]
DS = ["--model-path", "{models}/DeepSeek-V3"]


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


def _tp(n: int) -> list[str]:
    return ["--tp-size", str(n)]


#: name -> argv. Every config runs on every profile; TP 8 on the 4-GPU profile is kept (the
#: parser and resolution do not check the GPU count; the launcher does later).
CONFIGS: dict[str, list[str]] = {
    # plain, per model family and TP
    "q35_tp4": Q35 + _tp(4),
    "q35_tp2": Q35 + _tp(2),
    "q35_tp8": Q35 + _tp(8),
    "q3_tp1": Q3,
    "q3_tp2": Q3 + _tp(2),
    "q3_tp4": Q3 + _tp(4),
    "q3_tp8": Q3 + _tp(8),
    "llama_tp1": LL,
    "llama_tp2": LL + _tp(2),
    "llama_tp8": LL + _tp(8),
    "ds_tp8": DS + _tp(8),
    "ds_tp4": DS + _tp(4),
    # speculative decoding: the seed sweep and its variations
    "q35_eagle_s1": Q35 + _tp(4) + _spec("EAGLE", 1, 1, 2),
    "q35_eagle_s2": Q35 + _tp(4) + _spec("EAGLE", 2, 1, 3),
    "q35_eagle_s3": Q35 + _tp(4) + _spec("EAGLE", 3, 1, 4),
    "q35_eagle_s4": Q35 + _tp(4) + _spec("EAGLE", 4, 1, 5),
    "q35_eagle_auto": Q35 + _tp(4) + _spec("EAGLE"),
    "q35_eagle_steps_only": Q35 + _tp(4) + _spec("EAGLE", 2),
    "q35_eagle_adjust": Q35 + _tp(4) + _spec("EAGLE", 3, 1, 8),
    "q35_eagle_topk4": Q35 + _tp(4) + _spec("EAGLE", 2, 4, 6),
    "q35_eagle_topk_only": Q35 + _tp(4) + _spec("EAGLE", None, 1),
    "q35_eagle_no_overlap": Q35 + _tp(4) + _spec("EAGLE", 2, 1, 3) + ["--disable-overlap-schedule"],
    "q35_eagle_mrr64": Q35 + _tp(4) + _spec("EAGLE", 2, 1, 3) + ["--max-running-requests", "64"],
    "q35_nextn": Q35 + _tp(4) + _spec("NEXTN", 3, 1, 4),
    "q35_eagle_lower": Q35 + _tp(4) + _spec("eagle", 2, 1, 3),
    "ds_nextn_auto": DS + _tp(8) + _spec("NEXTN"),
    "ds_nextn_s1": DS + _tp(8) + _spec("NEXTN", 1, 1, 2),
    "llama_eagle3_auto": LL
    + _spec("EAGLE3")
    + ["--speculative-draft-model-path", "{models}/sglang-EAGLE3-Llama-3.1-Instruct-8B"],
    "llama_eagle3_s5k4": LL
    + _spec("EAGLE3", 5, 4, 8)
    + ["--speculative-draft-model-path", "{models}/sglang-EAGLE3-Llama-3.1-Instruct-8B"],
    "llama_eagle1": LL
    + _spec("EAGLE", 3, 1, 4)
    + ["--speculative-draft-model-path", "{models}/EAGLE-LLaMA3.1-Instruct-8B"],
    "q3_eagle3": Q3
    + _spec("EAGLE3", 3, 1, 4)
    + ["--speculative-draft-model-path", "{models}/Qwen3-8B-EAGLE3"],
    "q3_eagle3_tp2_auto": Q3
    + _tp(2)
    + _spec("EAGLE3")
    + ["--speculative-draft-model-path", "{models}/Qwen3-8B-EAGLE3"],
    "q3_standalone_auto": Q3
    + _spec("STANDALONE")
    + ["--speculative-draft-model-path", "{models}/Qwen3-0.6B"],
    "q3_standalone_s4": Q3
    + _spec("STANDALONE", 4, 1, 5)
    + ["--speculative-draft-model-path", "{models}/Qwen3-0.6B"],
    "q3_ngram": Q3 + _spec("NGRAM"),
    "q3_ngram_d8": Q3 + _spec("NGRAM", None, None, 8),
    "llama_ngram_d16_mrr32": LL + _spec("NGRAM", None, None, 16) + ["--max-running-requests", "32"],
    "q35_ngram_tp4": Q35 + _tp(4) + _spec("NGRAM"),
    "q3_dflash_no_draft": [*Q3, *_spec("DFLASH")],
    "q3_uno_no_lora": [*Q3, *_spec("UNO")],
    "q3_medusa": Q3 + _spec("MEDUSA"),
    "q3_eagle3_no_draft": Q3 + _spec("EAGLE3", 3, 1, 4),
    # quantization and KV-cache dtypes
    "q3_fp8": [*Q3, "--quantization", "fp8"],
    "q3_kv_fp8_e4m3": [*Q3, "--kv-cache-dtype", "fp8_e4m3"],
    "llama_fp8_kv_e5m2": [*LL, "--quantization", "fp8", "--kv-cache-dtype", "fp8_e5m2"],
    "ds_kv_fp8": DS + _tp(8) + ["--kv-cache-dtype", "fp8_e4m3"],
    "q35_fp8_tp4": Q35 + _tp(4) + ["--quantization", "fp8"],
    "q3_fp16": [*Q3, "--dtype", "float16"],
    "q3_kv_bf16": [*Q3, "--kv-cache-dtype", "bf16"],
    # attention and sampling backends
    "q3_triton": [*Q3, "--attention-backend", "triton"],
    "q3_fa3": [*Q3, "--attention-backend", "fa3"],
    "llama_flashinfer": [*LL, "--attention-backend", "flashinfer"],
    "ds_flashmla": DS + _tp(8) + ["--attention-backend", "flashmla"],
    "q3_trtllm_mha": [*Q3, "--attention-backend", "trtllm_mha"],
    "q3_split_backends": [
        *Q3,
        "--prefill-attention-backend",
        "fa3",
        "--decode-attention-backend",
        "flashinfer",
    ],
    "q3_sampling_pytorch": [*Q3, "--sampling-backend", "pytorch"],
    # chunked prefill and scheduling
    "q3_chunk4096": [*Q3, "--chunked-prefill-size", "4096"],
    "q3_chunk_off": [*Q3, "--chunked-prefill-size", "-1"],
    "q3_mixed_chunk": [*Q3, "--enable-mixed-chunk"],
    "q35_chunk16k": Q35
    + _tp(4)
    + ["--chunked-prefill-size", "16384", "--max-prefill-tokens", "32768"],
    "q3_mixed_chunk_eagle3": Q3
    + _spec("EAGLE3", 3, 1, 4)
    + ["--speculative-draft-model-path", "{models}/Qwen3-8B-EAGLE3", "--enable-mixed-chunk"],
    # LoRA
    "llama_lora": [*LL, "--enable-lora", "--max-lora-rank", "16", "--lora-target-modules", "all"],
    "llama_lora_paths": [
        *LL,
        "--lora-paths",
        "sql={models}/lora-sql",
        "--max-loras-per-batch",
        "4",
    ],
    # metrics, API key, naming
    "q3_metrics": [*Q3, "--enable-metrics"],
    "q3_api_key": [*Q3, "--api-key", "sk-conformance"],
    "q3_named": [*Q3, "--enable-metrics", "--api-key", "k", "--served-model-name", "qwen3"],
    "q3_tokenizer": [*Q3, "--tokenizer-path", "{models}/Qwen3-0.6B"],
    # memory, context, pages, graphs
    "q3_mem080": [*Q3, "--mem-fraction-static", "0.8"],
    "q3_mrr128_tokens": [*Q3, "--max-running-requests", "128", "--max-total-tokens", "200000"],
    "q3_ctx8192": [*Q3, "--context-length", "8192"],
    "q3_ctx_1ki": [*Q3, "--context-length", "1Ki"],
    "q3_page64": [*Q3, "--page-size", "64"],
    "q3_no_graph": [*Q3, "--disable-cuda-graph"],
    "q3_graph_bs": [*Q3, "--cuda-graph-max-bs-decode", "64"],
    "q3_no_radix": [*Q3, "--disable-radix-cache"],
    "llama_tp4_dp2": LL + _tp(4) + ["--dp-size", "2"],
    "ds_dp_attention": DS + _tp(8) + ["--dp-size", "8", "--enable-dp-attention"],
    # refused
    "q3_mem_over_1": [*Q3, "--mem-fraction-static", "1.5"],
    "q3_unknown_flag": [*Q3, "--no-such-flag"],
    "q3_bad_int": [*Q3, "--tp-size", "two"],
    "q3_bad_choice": [*Q3, "--attention-backend", "nope"],
    "q3_missing_model": ["--tp-size", "1"],
}

#: (flag, value) pairs whose parse the goldens record: the custom value types of 0.5.23.
TRICKY_VALUES: list[tuple[str, str]] = [
    *(
        ("--context-length", v)
        for v in (
            "32768",
            "32k",
            "32K",
            "1Ki",
            "1K",
            "1m",
            "1M",
            "1Mi",
            "1.5k",
            "1_024",
            "0x10",
            "-1",
            "abc",
            "",
        )
    ),
    *(("--max-total-tokens", v) for v in ("200k", "2Ki", "1e5")),
    *(("--max-prefill-tokens", v) for v in ("16k", "16Ki")),
    *(("--cuda-graph-prefill-max-context", v) for v in ("8k", "8Ki")),
    *(
        ("--cuda-graph-config", v)
        for v in (
            '{"decode": {"max_bs": 64}}',
            '{"decode": {"bs": [1, 2, 4, 8]}}',
            '{"prefill": {"max_bs": 8}}',
            '{"max_bs": 64}',
            "decode.max_bs=64",
            "not json",
            "[]",
        )
    ),
    *(
        ("--cuda-graph-backend-decode", v)
        for v in ("full", "FULL", "breakable", "none", "piecewise", "x")
    ),
    *(("--cuda-graph-backend-prefill", v) for v in ("full", "piecewise", "Full")),
    *(("--quantization-param-path", v) for v in ("none", "None", "null", "", "/p")),
    *(("--json-model-override-args", v) for v in ('{"max_position_embeddings": 4096}', "not json")),
    *(("--preferred-sampling-params", v) for v in ('{"temperature": 0.6}', "[1]")),
    *(("--forward-hooks", v) for v in ('[{"name": "h"}]', '{"a": 1}', "nope")),
    *(("--extra-metric-labels", v) for v in ('{"team": "a"}',)),
]

#: multi-token values (nargs): flag -> list of argv tails
TRICKY_ARGV: dict[str, list[str]] = {
    "lora_name_eq_path": ["--lora-paths", "sql=/adapters/sql"],
    "lora_plain_path": ["--lora-paths", "/adapters/sql"],
    "lora_two": ["--lora-paths", "a=/x", "b=/y"],
    "lora_json": [
        "--lora-paths",
        '{"lora_name": "sql", "lora_path": "/adapters/sql", "pinned": true}',
    ],
    "lora_json_list": ["--lora-paths", '[{"lora_name": "a", "lora_path": "/x"}]'],
    "disable_cuda_graph": ["--disable-cuda-graph"],
    "enable_dp_attention": ["--enable-dp-attention"],
    "monokernel": ["--monokernel-backend", "flashinfer"],
    "tp_prefix": ["--tp", "4"],
    "tp_ambiguous_prefix": ["--t", "4"],
    "spec_algo_lower": ["--speculative-algorithm", "ngram"],
}


def expand(argv: list[str], models: str) -> list[str]:
    """``argv`` with the ``{models}`` placeholder replaced by the model root."""
    return [a.replace("{models}", models) for a in argv]
