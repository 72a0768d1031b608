"""SGLang 0.5.23's model- and architecture-specific resolution rules, played by the simulator.

Why a module of its own: :mod:`.post_init` plays the pipeline's order and its generic rules;
what 0.5.23 decides per architecture and GPU generation lives in its override registry
(``arg_groups/model_overrides/*.py``, ``overrides.py``) and in ``ModelConfig``'s checks, and is
ported here, rule by rule, for the families the simulator knows from their config.json
(:mod:`pytest_sglang.model_identity`): the DeepSeek-V3 family (Kimi-K2, Moonlight, R1),
gpt-oss (MXFP4, sliding windows, attention sinks), the Qwen3 MoE family and its hybrid
linear-attention members, GLM-4.5. Each function says which 0.5.23 source it follows; the
messages are SGLang's own, in the order it logs them.
"""

from __future__ import annotations

from typing import Any

from .. import gpu_rules
from ..model_identity import ModelIdentity
from .perf import GpuSpec

__all__ = [
    "DEEPSEEK_FAMILY",
    "HYBRID_SWA_ARCHS",
    "a2a_ep_size",
    "allreduce_fusion",
    "attention_sinks",
    "deepseek_adjustments",
    "gemma_dtype_note",
    "model_config_messages",
    "moe_runner_messages",
    "multimodal_note",
    "olmo2_adjustments",
    "registry_overrides",
]

#: ``SWA_SINK_ARCHS`` members among the simulated families: hybrid SWA, attention sinks
HYBRID_SWA_ARCHS = frozenset({"GptOssForCausalLM"})
#: ``is_hybrid_swa_model``'s architectures (``configs/model_config.py``): building the model
#: config notes them, unless hybrid SWA memory is disabled (Beam and Laguna, whose membership
#: reads their layer types or sliding window, are left out)
HYBRID_SWA_NOTE_ARCHS = frozenset(
    {
        "MiMoV2ForCausalLM",
        "MiMoV2FlashForCausalLM",
        "Llama4ForConditionalGeneration",
        "DeepseekV4ForCausalLM",
        "DeepseekV4ForCausalLMNextN",
        "DeepseekV4ForCausalLMDSpark",
        "GptOssForCausalLM",
        "GraniteSWAForCausalLM",
        "GraniteMoeSWAForCausalLM",
        "IQuestQ1ForCausalLM",
        "IQuestQ1MTP",
        "MiMoV2MTP",
        "Step3p5ForCausalLM",
        "Step3p5MTP",
        "Step3p7ForConditionalGeneration",
        "Gemma4ForCausalLM",
        "Gemma4ForConditionalGeneration",
        "EmbeddingGemma2Model",
        "Gemma4UnifiedForConditionalGeneration",
        "DiffusionGemmaForBlockDiffusion",
        "MellumForCausalLM",
        "MuseGlimmerForCausalLM",
        "MuseGlimmerForConditionalGeneration",
        "InklingForConditionalGeneration",
        "InklingForConditionalGenerationMTP",
        "UnlimitedOCRForCausalLM",
    }
)
#: ``_FLASHINFER_ALLREDUCE_FUSION_ARCHS`` of 0.5.23 (``overrides.py``)
ALLREDUCE_FUSION_ARCHS = frozenset(
    {
        "DeepseekV3ForCausalLM",
        "DeepseekV32ForCausalLM",
        "DeepseekV4ForCausalLM",
        "GptOssForCausalLM",
        "GlmMoeDsaForCausalLM",
        "Glm4MoeForCausalLM",
        "Glm4MoeLiteForCausalLM",
        "MistralLarge3ForCausalLM",
        "Qwen3MoeForCausalLM",
        "Qwen3VLMoeForConditionalGeneration",
        "Qwen3NextForCausalLM",
        "Qwen4ExpForConditionalGeneration",
        "KimiK25ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "InternS2PreviewForConditionalGeneration",
        "Qwen3_5ForConditionalGeneration",
        "NemotronHForCausalLM",
        "NemotronHPuzzleForCausalLM",
        "NemotronH_Omni_Reasoning_V3",
    }
)
#: the architectures ``handle_model_specific_adjustments`` treats as DeepSeek (non-DSA ones)
DEEPSEEK_FAMILY = frozenset(
    {
        "DeepseekV3ForCausalLM",
        "KimiK25ForConditionalGeneration",
        "MistralLarge3ForCausalLM",
        "PixtralForConditionalGeneration",
    }
)
#: ``_qwen3_moe_family_overrides``' architectures
QWEN3_MOE_FAMILY = frozenset(
    {
        "Qwen3MoeForCausalLM",
        "Qwen3VLMoeForConditionalGeneration",
        "Qwen3NextForCausalLM",
        "Qwen3_5MoeForConditionalGeneration",
        "Qwen3_5ForConditionalGeneration",
        "Qwen4ExpForConditionalGeneration",
    }
)
#: ``_qwen3_5_hybrid_overrides``' architectures (hybrid linear attention)
QWEN3_5_HYBRID = gpu_rules.QWEN3_5_HYBRID
#: ``optimized_quantization_methods`` of ``ModelConfig._verify_quantization``
OPTIMIZED_QUANTIZATION = frozenset(
    {
        "fp8",
        "marlin",
        "modelopt_fp8",
        "modelopt_fp4",
        "modelopt_mixed",
        "nvfp4_online",
        "gptq_marlin_24",
        "gptq_marlin",
        "awq_marlin",
        "compressed_tensors",
        "compressed-tensors",
        "experts_int8",
        "w8a8_int8",
        "w8a8_fp8",
        "moe_wna16",
        "w4afp8",
        "petit_nvfp4",
        "quark",
        "modelslim",
        "humming",
        "quark_mxfp4",
        "auto-round",
        "minimax_m3_nvfp4",
    }
)
FLASHINFER_TRTLLM_MOE = (
    "FlashInfer TRTLLM MoE is enabled. --disable-shared-experts-fusion is automatically set."
)
DEEPSEEK_PREFILL_GRAPH = (
    "Disabling prefill CUDA graph ({backend}) by default for the DeepSeek-V3 arch on the "
    "trtllm_mla attention backend (a captured prefill graph forces a FlashAttention fallback "
    "that regresses prefill). Set the prefill cuda graph backend explicitly (e.g. "
    "--cuda-graph-backend-prefill breakable) to override."
)


def _sm(gpu: GpuSpec) -> int:
    return gpu.capability[0]


def attention_sinks(identity: ModelIdentity) -> bool:
    """``ModelConfig.has_attention_sinks``: FlashInfer cannot serve them (triton instead)."""
    return identity.architecture in HYBRID_SWA_ARCHS


#: ``ModelConfig.__init__``'s ``mm_disabled_models``: multimodal off unless asked for
MM_DISABLED = frozenset(
    {
        "Gemma3ForConditionalGeneration",
        "Llama4ForConditionalGeneration",
        "Step3VLForConditionalGeneration",
        "InklingForConditionalGeneration",
    }
)


def multimodal_note(identity: ModelIdentity, args: dict[str, Any]) -> list[str]:
    """``ModelConfig.__init__``'s first note (before the context length is derived): these
    multimodal architectures serve text only unless ``--enable-multimodal`` is given."""
    if (
        identity.architecture in MM_DISABLED
        and args.get("enable_multimodal") is None
        and args.get("model_impl", "auto") != "transformers"
    ):
        return [
            f"Multimodal is disabled for {identity.model_type}. To enable it, set "
            "--enable-multimodal."
        ]
    return []


#: dtypes ``_STR_DTYPE_TO_TORCH_DTYPE`` reads as something other than float32
_NOT_FP32 = frozenset({"float16", "half", "bfloat16"})


def gemma_dtype_note(identity: ModelIdentity, args: dict[str, Any]) -> list[str]:
    """``_get_and_verify_dtype`` (``ModelConfig.__init__``, after the multimodal note): a Gemma
    checkpoint stored in float32 (or naming no dtype) is served in bfloat16 under
    ``--dtype auto``. Read for a config without a nested text config only (whether a nested
    one inherits the outer dtype is transformers' business)."""
    text = identity.text_config or {}
    model_type = text.get("model_type")
    if (
        not identity.from_config
        or model_type != identity.model_type
        or not isinstance(model_type, str)
        or not model_type.startswith("gemma")
        or str(args.get("dtype") or "auto").lower() != "auto"
    ):
        return []
    dtype = text.get("dtype") or text.get("torch_dtype")
    if isinstance(dtype, str) and dtype in _NOT_FP32:
        return []
    version = "" if model_type == "gemma" else model_type[5]
    return [
        f"For Gemma {version}, we downcast float32 to bfloat16 instead of float16 by default. "
        "Please specify `dtype` if you want to use float16."
    ]


def olmo2_adjustments(
    identity: ModelIdentity, args: dict[str, Any], warnings: list[str]
) -> str | None:
    """``handle_model_specific_adjustments``' OLMo 2 branch: the backend its override chose is
    logged; FlashInfer is refused (returns the error line)."""
    if identity.architecture != gpu_rules.OLMO2:
        return None
    backend = args.get("attention_backend")
    if backend == "flashinfer":
        return gpu_rules.OLMO2_FLASHINFER_ERROR
    warnings.append(f"Using {backend} as attention backend for {identity.architecture}.")
    return None


def model_config_messages(identity: ModelIdentity, args: dict[str, Any], gpu: GpuSpec) -> list[str]:
    """What building ``ModelConfig`` logs (the first thing resolution logs about a model):
    ``_verify_quantization``'s not-optimized warning, then ``model_config_of``'s hybrid SWA note."""
    messages: list[str] = []
    quantization = args.get("quantization") or identity.quantization
    if (
        quantization
        and quantization not in OPTIMIZED_QUANTIZATION
        and not (quantization in ("mxfp4", "mxfp8") and _sm(gpu) == 10)
    ):
        messages.append(
            f"{quantization} quantization is not fully optimized yet. The speed can be slower "
            "than non-quantized models."
        )
    if identity.architecture in HYBRID_SWA_NOTE_ARCHS and not args.get("disable_hybrid_swa_memory"):
        messages.append(f"Hybrid SWA model detected. architectures=['{identity.architecture}']")
    return messages


def _attention_unset(args: dict[str, Any]) -> bool:
    return (
        args.get("attention_backend") is None
        and args.get("prefill_attention_backend") is None
        and args.get("decode_attention_backend") is None
    )


def registry_overrides(
    identity: ModelIdentity,
    args: dict[str, Any],
    gpu: GpuSpec,
    warnings: list[str],
    default_attention: Any,
) -> None:
    """``collect_model_override_declarations``: the architecture's registered overrides,
    applied to ``args`` with their messages. ``default_attention()`` is
    ``get_default_attn_backend`` as it would answer now (the Qwen3.5 hybrid rule asks it)."""
    arch = identity.architecture
    sm = _sm(gpu)
    deepseek = gpu_rules.deepseek_attention(arch, sm)
    if deepseek is not None and _attention_unset(args):
        # model_overrides/deepseek_v2.py: _deepseek_family_overrides
        args["attention_backend"] = deepseek
        warnings.append("Use trtllm_mla as attention backend on sm100 for DeepseekV3ForCausalLM")
    if arch == "GptOssForCausalLM":
        _gpt_oss(identity, args, gpu, warnings)
    if arch in gpu_rules.NEMOTRON_H:
        _nemotron_h(identity, args, gpu, warnings)
    _small_overrides(identity, args, gpu, warnings)
    if arch in QWEN3_5_HYBRID and sm == 10 and args.get("attention_backend") is None:
        # model_overrides/qwen3_5.py: trtllm_mha only where a page size above 1 is possible
        backend = "triton"
        if default_attention() == "trtllm_mha" and not (
            args.get("mamba_radix_cache_strategy") != "extra_buffer"
            and not args.get("disable_radix_cache")
            and args.get("speculative_algorithm") is None
        ):
            backend = "trtllm_mha"
        args["attention_backend"] = backend
        args["page_size"] = 64 if backend == "trtllm_mha" else 1
    if arch in QWEN3_MOE_FAMILY and sm == 10:
        # model_overrides/qwen3_moe.py
        quantization = _config_quantization(identity, args)
        if (
            quantization in ("fp8", "modelopt_fp4", "modelopt_mixed", None)
            and args.get("moe_a2a_backend", "none") == "none"
            and args.get("moe_runner_backend", "auto") == "auto"
        ):
            args["moe_runner_backend"] = "flashinfer_trtllm"
            warnings.append(f"Use flashinfer_trtllm as MoE runner backend on sm100 for {arch}")
    if arch == "Glm4MoeForCausalLM":
        # model_overrides/glm4_moe.py
        if sm == 10:
            quantization = _config_quantization(identity, args)
            if (
                quantization in ("modelopt_fp4", None)
                and args.get("moe_a2a_backend", "none") == "none"
                and args.get("moe_runner_backend", "auto") == "auto"
            ):
                args["moe_runner_backend"] = "flashinfer_trtllm"
                warnings.append(
                    "Use flashinfer_trtllm as MoE runner backend on sm100 for Glm4MoeForCausalLM"
                )
        warnings.append(
            "Enable TF32 matmul for Glm4MoeForCausalLM model to improve gate gemm performance."
        )
        args["enable_tf32_matmul"] = True


def _config_quantization(identity: ModelIdentity, args: dict[str, Any]) -> str | None:
    """The quantization an sm100 override settles on: the flag, else the config's method."""
    if args.get("quantization") is None and identity.quantization is not None:
        args["quantization"] = identity.quantization
    quantization = args.get("quantization")
    return str(quantization) if quantization is not None else None


def _gpt_oss(
    identity: ModelIdentity, args: dict[str, Any], gpu: GpuSpec, warnings: list[str]
) -> None:
    """model_overrides/gpt_oss.py on a CUDA GPU: attention backend, bf16 for MXFP4, MoE runner."""
    sm = _sm(gpu)
    if _attention_unset(args):
        args["attention_backend"] = gpu_rules.gpt_oss_attention(sm)
    mxfp4 = identity.quantization == "mxfp4"
    if mxfp4:
        args["dtype"] = "bfloat16"
    if args.get("moe_runner_backend", "auto") != "auto":
        return
    if sm == 10 and mxfp4:
        args["moe_runner_backend"] = "flashinfer_mxfp4"
        warnings.append(
            "Detected SM100 and MXFP4 quantization format for GPT-OSS model, enabling FlashInfer "
            "MXFP4 MOE kernel."
        )
    elif sm == 12 and mxfp4:
        args["moe_runner_backend"] = "flashinfer_mxfp4"
        warnings.append(
            "Detected SM120 and MXFP4 quantization format for GPT-OSS model, enabling FlashInfer "
            "CUTLASS MXFP4 MOE kernel."
        )
    elif int(args.get("ep_size") or 1) == 1 and args.get("quantization") is None:
        # the triton_kernels package is installed with SGLang; the driver is below 595
        args["moe_runner_backend"] = "triton_kernel"
        warnings.append("Detected GPT-OSS model, enabling triton_kernels MOE kernel.")


#: ``_gemma2_gemma3_overrides``' architectures
GEMMA2_GEMMA3 = frozenset(
    {
        "Gemma2ForCausalLM",
        "Gemma3ForCausalLM",
        "Gemma3ForConditionalGeneration",
        "Gemma3nForCausalLM",
        "Gemma3nForConditionalGeneration",
    }
)


def _small_overrides(
    identity: ModelIdentity, args: dict[str, Any], gpu: GpuSpec, warnings: list[str]
) -> None:
    """The registry's one-rule overrides on a CUDA GPU: Gemma 2/3 and OLMo 2 (no hybrid SWA
    memory; OLMo 2's attention backend), MiniMax-M2 (TF32, the sm100 ModelOpt FP4 MoE runner)
    and Llama 4 (attention backend by GPU, the sm100 FP8 MoE runner)."""
    arch = identity.architecture
    if arch in GEMMA2_GEMMA3 or arch == gpu_rules.OLMO2:
        if arch in GEMMA2_GEMMA3:
            warnings.append(f"Disable hybrid SWA memory for {arch} as it is not yet supported.")
        else:
            warnings.append(f"Disabling hybrid SWA memory for {arch} as it is not yet supported.")
        args["disable_hybrid_swa_memory"] = True
    if arch == gpu_rules.OLMO2 and args.get("attention_backend") is None:
        args["attention_backend"] = gpu_rules.olmo2_attention(gpu.capability)
    if arch == "MiniMaxM2ForCausalLM":
        args["enable_tf32_matmul"] = True
        warnings.append(
            "Enable TF32 matmul for MiniMaxM2ForCausalLM model to improve gate gemm performance."
        )
        quantization = args.get("quantization") or identity.quantization
        if (
            _sm(gpu) == 10
            and args.get("moe_runner_backend", "auto") == "auto"
            and quantization == "modelopt_fp4"
        ):
            args["moe_runner_backend"] = "flashinfer_trtllm_routed"
            warnings.append(
                "Use flashinfer_trtllm_routed as MoE runner backend on SM10X for "
                "MiniMaxM2ForCausalLM with modelopt_fp4."
            )
    if arch in gpu_rules.GEMMA4:
        _gemma4(identity, args, gpu, warnings)
    if arch in ("Cohere2VisionForConditionalGeneration", "Cohere2MoeForCausalLM"):
        quantization = args.get("quantization") or identity.quantization
        if args.get("moe_runner_backend", "auto") == "auto" and _sm(gpu) == 10 and not quantization:
            # a quantized checkpoint keeps its runner unless NVFP4-packed (not read here)
            warnings.append(
                "Command-A-Plus on SM10X: moe_runner_backend=flashinfer_trtllm "
                "(trtllm-gen fused MoE)."
            )
            args["moe_runner_backend"] = "flashinfer_trtllm"
    if arch in gpu_rules.LLAMA4:
        if args.get("attention_backend") is None:
            backend, platform = gpu_rules.llama4_attention(_sm(gpu))
            warnings.append(f"Use {backend} as attention backend on {platform} for Llama4 model")
            args["attention_backend"] = backend
        if (
            _sm(gpu) == 10
            and args.get("moe_runner_backend", "auto") == "auto"
            and args.get("quantization") in ("fp8", "modelopt_fp8")
        ):
            args["moe_runner_backend"] = "flashinfer_trtllm"
            warnings.append("Use flashinfer_trtllm as MoE runner backend on SM100 for Llama4")


def _gemma4(
    identity: ModelIdentity, args: dict[str, Any], gpu: GpuSpec, warnings: list[str]
) -> None:
    """model_overrides/gemma4.py: its attention backend (noted where none is set), and the
    sm100 TRT-LLM MoE runner for a ModelOpt FP4 checkpoint."""
    backend = gpu_rules.gemma4_attention(_sm(gpu))
    if _attention_unset(args):
        warnings.append(f"Use {backend} as default attention backend for Gemma4")
        args["attention_backend"] = backend
    elif args.get("attention_backend") is None:
        args["attention_backend"] = backend
    quantization = args.get("quantization") or identity.quantization
    if (
        _sm(gpu) == 10
        and args.get("moe_runner_backend", "auto") == "auto"
        and quantization == "modelopt_fp4"
    ):
        args["quantization"] = "modelopt_fp4"
        args["moe_runner_backend"] = "flashinfer_trtllm"
        warnings.append(
            "Use flashinfer_trtllm as MoE runner backend on SM100 for Gemma-4 (modelopt_fp4)"
        )


def _nemotron_h(
    identity: ModelIdentity, args: dict[str, Any], gpu: GpuSpec, warnings: list[str]
) -> None:
    """model_overrides/nemotron_h.py for an unquantized checkpoint without expert remapping
    (EPLB, redundant experts and ModelOpt checkpoints are not simulated): the MoE runner
    (TRT-LLM on sm100, else CUTLASS), then the attention backend on Blackwell."""
    arch = identity.architecture
    sm = _sm(gpu)
    quantization = args.get("quantization") or identity.quantization
    if quantization is None and args.get("moe_runner_backend", "auto") == "auto":
        if sm == 10 and args.get("moe_a2a_backend", "none") == "none":
            args["moe_runner_backend"] = "flashinfer_trtllm"
            warnings.append(f"Use flashinfer_trtllm as MoE runner backend on sm100 for {arch}")
        else:
            args["moe_runner_backend"] = "flashinfer_cutlass"
    if not _attention_unset(args):
        return
    algo = args.get("speculative_algorithm")
    algo = None if algo is None else str(algo).upper()
    backend = gpu_rules.nemotron_h_attention(arch, sm, algo, args.get("speculative_eagle_topk"))
    if backend is None:
        return
    args["attention_backend"] = backend
    if algo is None:
        return
    draft_algos: tuple[str, ...] = ("EAGLE", "NEXTN", "DSPARK")
    if backend == "trtllm_mha":
        if args.get("page_size") is None:
            args["page_size"] = 64
        if args.get("mamba_radix_cache_strategy", "auto") == "auto":
            args["mamba_radix_cache_strategy"] = "extra_buffer"
    else:
        draft_algos = ("EAGLE", "NEXTN", "DFLASH", "DSPARK")
    if args.get("speculative_draft_attention_backend") is None and algo in draft_algos:
        args["speculative_draft_attention_backend"] = (
            "trtllm_mha" if backend == "trtllm_mha" else "flashinfer"
        )


def deepseek_adjustments(
    identity: ModelIdentity,
    args: dict[str, Any],
    gpu: GpuSpec,
    warnings: list[str],
    prefill_graphs: bool,
) -> None:
    """``handle_model_specific_adjustments``' DeepSeek branch (V3/R1 and the same architecture
    under other names): the MLA prefill note, then ``_deepseek_moe_quant_resolution``."""
    arch = identity.architecture
    if arch not in DEEPSEEK_FAMILY:
        return
    if prefill_graphs:
        warnings.append("Piecewise CUDA graph is enabled, use MLA for prefill.")
    if _sm(gpu) != 10:
        return
    quantization = args.get("quantization")
    if quantization is None:
        if identity.quantization is None and arch == "DeepseekV3ForCausalLM":
            # no safetensors next to the config: no FP8 expert weights found
            warnings.append(
                "No FP8 expert weights found in checkpoint, keeping bf16 for DeepSeek-arch "
                "model on sm100"
            )
        else:
            quantization = args["quantization"] = identity.quantization
    if (
        args.get("moe_a2a_backend", "none") == "none"
        and args.get("moe_runner_backend", "auto") == "auto"
        and quantization in ("fp8", "modelopt_fp8", "modelopt_fp4", "modelopt_mixed", None)
    ):
        args["moe_runner_backend"] = "flashinfer_trtllm"
        warnings.append(
            "Use flashinfer_trtllm as MoE runner backend on sm100 for DeepseekV3ForCausalLM"
        )


def allreduce_fusion(
    identity: ModelIdentity, args: dict[str, Any], gpu: GpuSpec, warnings: list[str], attn_dp: int
) -> None:
    """``_flashinfer_allreduce_fusion_auto_enable``: supported architectures on sm90/sm100
    under TP without attention DP or an all-to-all MoE backend."""
    if (
        args.get("flashinfer_allreduce_fusion_backend") is None
        and identity.architecture in ALLREDUCE_FUSION_ARCHS
        and _sm(gpu) in (9, 10)
        and int(args.get("tp_size") or 1) > 1
        and attn_dp == 1
        and args.get("moe_a2a_backend", "none") == "none"
    ):
        args["flashinfer_allreduce_fusion_backend"] = "auto"
        warnings.append(
            f"Auto-enabling FlashInfer AllReduce Fusion (auto) for {identity.architecture}"
        )


def moe_runner_messages(args: dict[str, Any], warnings: list[str]) -> None:
    """``_moe_runner_fusion_disable``: the MoE runners that keep shared experts apart."""
    if args.get("moe_runner_backend") in ("flashinfer_trtllm", "experimental_sgl_trtllm"):
        warnings.append(FLASHINFER_TRTLLM_MOE)
        args["disable_shared_experts_fusion"] = True
    elif args.get("moe_runner_backend") == "flashinfer_trtllm_routed":
        warnings.append(
            "FlashInfer TRTLLM routed MoE is enabled. --disable-shared-experts-fusion is "
            "automatically set."
        )
        args["disable_shared_experts_fusion"] = True


#: ``_A2A_EP_SPANNING_BACKENDS``: all-to-all MoE backends whose experts span the TP group
A2A_EP_SPANNING = frozenset({"megamoe", "deepep", "deepep_v2", "mooncake", "nixl"})


def a2a_ep_size(args: dict[str, Any], warnings: list[str]) -> None:
    """``_a2a_ep_size``: the expert-parallel size follows TP under a spanning backend."""
    backend = args.get("moe_a2a_backend")
    if backend not in A2A_EP_SPANNING:
        return
    tp = int(args.get("tp_size") or 1)
    ep = int(args.get("ep_size") or 1)
    if ep != tp:
        warnings.append(
            f"{backend} MoE is enabled. The expert parallel size is adjusted from {ep} to the "
            f"tensor parallel size [{tp}]."
        )
    args["ep_size"] = tp
