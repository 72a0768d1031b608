"""SGLang's argument resolution (``ServerArgs.resolve_once``), played by the simulator.

Why here and not in :mod:`pytest_sglang.resolution`: the simulator stands in for SGLang, so it
implements the rules independently; the project's own ``ServerConfig.resolved()`` is then tested
*against* it, and both are held to goldens taken from the real 0.5.23 package
(tests/data/conformance/, made by ``make conformance``). The rules are ported from 0.5.23's
``sglang/srt/arg_groups/`` (memory_hook.py, speculative_hook.py, overrides.py, parallel_hook.py,
cuda_graph_hook.py), in its pipeline order, so the warnings come out in the order the real
server logs them. The model's architecture, depth, experts and context length come from its
config.json where the simulator can read it (:mod:`pytest_sglang.model_identity`, shared with the
plugin: reading a file is data, not a rule), else from the family its directory's name suggests
(:mod:`.perf`); docs/simulator.md lists what still differs.
The deprecated spellings ``handle_deprecated_args`` rewrites are one table shared with the
plugin (:func:`pytest_sglang.aliases.rename_deprecated`): it is data read off the real source,
not a rule the plugin could get wrong in a way the simulator should catch.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import gpu_rules
from ..aliases import rename_deprecated
from ..model_config_rules import verify_quantization
from ..model_identity import (
    AUTO_SPEC_3_1_4_ARCHITECTURES,
    AUTO_SPEC_5_4_8_ARCHITECTURES,
    SELF_DRAFT_ARCHITECTURES,
    ModelIdentity,
    missing_among_models,
    read_model_identity,
)
from ..versions import has
from . import model_rules, tracebacks
from .fields import DICT_FIELDS, EXTRA_DEFAULTS, REPR_FIELDS, RESOLVED_DEFAULTS
from .perf import GpuSpec, ModelSpec, SpecConfig, parse_model

__all__ = ["ResolutionError", "Resolved", "format_server_args", "resolve_args"]

ADJUST_WARNING = (
    "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
    "speculative_eagle_topk == 1"
)
MAX_RUNNING_WARNING = (
    "Max running requests is reset to 48 for speculative decoding. You can override this by "
    "explicitly setting --max-running-requests."
)
NGRAM_WARNING = (
    "speculative_num_draft_tokens is set to 12 by default for ngram speculative decoding. You can "
    "override this by explicitly setting --speculative-num-draft-tokens."
)
NGRAM_MIXED_WARNING = (
    "The mixed chunked prefill are disabled because of using ngram speculative decoding."
)
NON_OVERLAP_WARNING = (
    "Non-overlap (synchronous) spec v2 is used for eagle/eagle3/standalone speculative decoding."
)
PIECEWISE_MLA = "Piecewise CUDA graph is enabled, use MLA for prefill."
ALLREDUCE_FUSION = "Auto-enabling FlashInfer AllReduce Fusion (auto) for {arch}"
ATTENTION_DEFAULT = "Attention backend not specified. Use {backend} backend by default."
FA3_FP8_WARNING = (
    "FlashAttention3 only supports fp8_e4m3 if using FP8; Setting attention backend to triton."
)
DP_CHUNK_WARNING = "DP attention is enabled. chunked prefill size is adjusted from {old} to {new}."

MIXED_CHUNK_SPEC_WARNING = (
    "Mixed chunked prefill is disabled: {algo} speculative decoding does not support it."
)
#: ``SpeculativeAlgorithm.supports_mixed_chunk``
MIXED_CHUNK_ALGORITHMS = frozenset({"EAGLE", "EAGLE3", "DFLASH", "DSPARK"})
MTP_DRAFT_WARNING = "DeepSeek MTP does not require setting speculative_draft_model_path."
#: self-drafting architectures that take a draft path without the MTP note
MTP_NO_DRAFT_NOTE = frozenset({"MistralLarge3ForCausalLM", "PixtralForConditionalGeneration"})
#: ``SpeculativeAlgorithm`` members of 0.5.23 (``from_string`` upper-cases; NEXTN is an alias)
SPEC_ALGORITHMS = frozenset(
    {"DFLASH", "UNO", "DSPARK", "EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE", "NGRAM"}
)
EAGLE_FAMILY = frozenset({"EAGLE", "EAGLE3", "STANDALONE"})
#: ``_FLASHINFER_ALLREDUCE_FUSION_ARCHS`` members among the simulated families
ALLREDUCE_FUSION_ARCHS = frozenset(
    {"DeepseekV3ForCausalLM", "Qwen3_5MoeForConditionalGeneration", "Qwen3MoeForCausalLM"}
)
#: multimodal families and their vision tower (layers, hidden size) for the VLM reduction
VISION_TOWERS = {"Qwen3_5MoeForConditionalGeneration": (24, 1152)}
HYBRID_MAMBA_ARCHS = frozenset({"Qwen3_5MoeForConditionalGeneration"})

_SITE = "/usr/local/lib/python3.12/dist-packages/"
#: where SGLang 0.5.23 is when resolution raises (file, line, function, source line)
_PIPELINE_FRAMES = [
    (_SITE + "sglang/launch_server.py", 84, "<module>", "run_server(server_args)"),
    (_SITE + "sglang/launch_server.py", 29, "run_server", "server_args.resolve_once()"),
    (_SITE + "sglang/srt/server_args.py", 277, "resolve_once", "run_resolution_pipeline(self)"),
    (
        _SITE + "sglang/srt/arg_groups/pipeline.py",
        306,
        "run_resolution_pipeline",
        "run_hook(handle_speculative_decoding, server_args)",
    ),
    (_SITE + "sglang/srt/arg_groups/resolution_hooks.py", 139, "run_hook", "step(server_args)"),
]
_EAGLE_FRAMES = [
    (
        _SITE + "sglang/srt/arg_groups/speculative_hook.py",
        284,
        "handle_speculative_decoding",
        "algo.handle_server_args(server_args)",
    ),
    (
        _SITE + "sglang/srt/speculative/spec_info.py",
        264,
        "handle_server_args",
        "_handle_eagle_family(server_args)",
    ),
]


_HOOK = _SITE + "sglang/srt/arg_groups/speculative_hook.py"
_RAISE = "raise ValueError("


class ResolutionError(Exception):
    """Resolution raised: the exception line and the real frames of the traceback SGLang prints."""

    def __init__(self, line: str, frames: list[tuple[str, int, str, str]]) -> None:
        super().__init__(line)
        self.line = line
        self.frames = frames
        #: what resolution logged before it raised (the server prints these first)
        self.warnings: list[str] = []

    def traceback_text(self) -> str:
        """The traceback as Python prints it for an uncaught exception."""
        parts = ["Traceback (most recent call last):\n"]
        for filename, lineno, function, code in self.frames:
            parts.append(f'  File "{filename}", line {lineno}, in {function}\n    {code}\n')
        parts.append(self.line + "\n")
        return "".join(parts)


@dataclass
class Resolved:
    """The resolved ServerArgs plus what the rest of the simulator derives from them."""

    args: dict[str, Any]
    warnings: list[str]
    model: ModelSpec
    spec: SpecConfig
    gpu: GpuSpec
    cuda_graph_bs: list[int] = field(default_factory=list)


def _auto_spec(model: ModelSpec, algorithm: str, version: str) -> tuple[int, int, int]:
    """``_auto_choose_speculative_params`` (runs when --speculative-num-steps is unset): by
    ``architectures[0]`` of the model's config.json."""
    if algorithm == "STANDALONE":
        return (3, 1, 4)
    if model.architecture in AUTO_SPEC_5_4_8_ARCHITECTURES:
        return (5, 4, 8)
    if model.architecture in AUTO_SPEC_3_1_4_ARCHITECTURES:
        return (3, 1, 4)
    return (3, 1, 4) if has("auto_spec_params_3_1_4", version) else (5, 4, 8)


def decode_graph_bs(max_bs: int, speculative: bool) -> list[int]:
    """``generate_decode_cuda_graph_batch_sizes``: finer steps for small batches under spec."""
    if not speculative:
        sizes = [
            1,
            2,
            4,
            8,
            12,
            *range(16, 257, 8),
            *range(272, 512, 16),
            *range(512, max_bs + 1, 32),
        ]
    else:
        sizes = [
            *range(1, 9),
            *range(10, 33, 2),
            *range(40, 65, 4),
            *range(72, 257, 8),
            *range(272, max_bs + 1, 16),
        ]
    sizes = [s for s in sizes if s <= max_bs]
    if max_bs not in sizes:
        sizes.append(max_bs)
    return sizes


def prefill_graph_bs(max_bs: int) -> list[int]:
    """``generate_prefill_cuda_graph_batch_sizes``: captured token counts of the prefill phase."""
    sizes = [
        *range(4, 33, 4),
        *range(48, 257, 16),
        *range(288, 513, 32),
        *range(576, 1025, 64),
        *range(1280, 4097, 256),
        *range(4608, max_bs + 1, 512),
    ]
    return [s for s in sizes if s <= max_bs]


def _phase(backend: str, max_bs: int, bs: list[int]) -> dict[str, Any]:
    return {
        "backend": backend,
        "max_bs": max_bs,
        "bs": bs,
        "tc_compiler": "eager",
        "max_context_size": None,
        "full_prefill_max_req": None,
        "full_prefill_prefix_chunk_tokens": None,
        "max_seq_len": None,
    }


def _gpu_tier(gpu_mib: int, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, decode max_bs) by GPU memory, ``handle_gpu_memory_settings``."""
    if gpu_mib < 20 * 1024:
        return 2048, 8
    if gpu_mib < 35 * 1024:
        return 4096, 48 if tp < 4 else 160
    if gpu_mib < 60 * 1024:
        return 4096, 32 if tp < 4 else 160
    if gpu_mib < 160 * 1024:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def _vlm_factor(architecture: str) -> float:
    """``adjust_mem_fraction_for_vlm``: less static memory the bigger the vision tower."""
    layers, hidden = VISION_TOWERS[architecture]
    ratio = layers * hidden**2 / (24 * 1024**2)
    dynamic = max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
    return 0.95 * dynamic


def _attention_constraints(args: dict[str, Any], gpu: GpuSpec, warnings: list[str]) -> None:
    """``_mla_backend_page_constraints``, ``_mla_kv_cache_dtype_checks``, the TRT-LLM MHA GPU
    check and ``_attention_backend_fa3_fp8_fallback``, in 0.5.23's order (the page snaps and
    GPU checks are :mod:`pytest_sglang.gpu_rules`', shared with the predictor)."""
    backend = args.get("attention_backend")
    decode = args.get("decode_attention_backend")
    prefill = args.get("prefill_attention_backend")
    page, snaps = gpu_rules.snapped_page(backend, decode, prefill, args.get("page_size"))
    warnings.extend(snaps)
    args["page_size"] = 1 if page is None else page
    refusal = gpu_rules.gpu_refusal(backend, decode, prefill, gpu.capability[0])
    if refusal is not None:
        _field, value, line = refusal
        raise ResolutionError(line, tracebacks.frames(f"{value}_gpu"))
    if args.get("attention_backend") == "fa3" and args.get("kv_cache_dtype") == "fp8_e5m2":
        warnings.append(FA3_FP8_WARNING)
        args["attention_backend"] = "triton"


def _spec_frames(dispatch_line: int, handler: str) -> list[tuple[str, int, str, str]]:
    """The frames down to ``SpeculativeAlgorithm.handle_server_args`` dispatching to ``handler``."""
    return [
        *_PIPELINE_FRAMES,
        _EAGLE_FRAMES[0],
        (
            _SITE + "sglang/srt/speculative/spec_info.py",
            dispatch_line,
            "handle_server_args",
            f"{handler}(server_args)",
        ),
    ]


def _refuse_unsimulated_algorithm(algo: str, args: dict[str, Any]) -> None:
    """DFLASH and UNO: the simulator plays only their refusals of an incomplete command line."""
    hook = _SITE + "sglang/srt/arg_groups/speculative_hook.py"
    if algo == "DFLASH" and args.get("speculative_draft_model_path") is None:
        raise ResolutionError(
            "ValueError: DFLASH speculative decoding requires setting "
            "--speculative-draft-model-path.",
            [
                *_spec_frames(256, "_handle_dflash"),
                (hook, 325, "_handle_dflash", "raise ValueError("),
            ],
        )
    if algo == "UNO":
        frames = _spec_frames(258, "_handle_uno")
        if args.get("speculative_draft_model_path") is not None:
            raise ResolutionError(
                "ValueError: UNO reuses the target model and does not accept "
                "--speculative-draft-model-path.",
                [*frames, (hook, 455, "_handle_uno", "raise ValueError(")],
            )
        if args.get("uno_lora_path") is None:
            raise ResolutionError(
                "ValueError: UNO requires --uno-lora-path.",
                [
                    *frames,
                    (hook, 460, "_handle_uno", 'raise ValueError("UNO requires --uno-lora-path.")'),
                ],
            )


def _refuse_missing_model(path: str, draft: bool = False) -> None:
    """A model directory that is missing where its siblings' config.json can be read: SGLang
    takes the path for a hub repo id and transformers refuses it (``load_pointer_head``).

    Only there: the simulator also runs on made-up paths (a sweep planned away from the host,
    a test's model name), which SGLang would refuse too but which the simulator must serve.
    """
    if not missing_among_models(path):
        return
    raise ResolutionError(
        "OSError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': "
        f"'{path}'. Use `repo_type` argument if needed.",
        tracebacks.frames("missing_draft" if draft else "missing_model"),
    )


def _refuse_longer_context(args: dict[str, Any], derived: int | None, warnings: list[str]) -> None:
    """``ModelConfig._derive_context_length``: a --context-length above the model's own is
    refused, or, where the environment allows it, logged as the same message."""
    requested = args.get("context_length")
    if requested is None or derived is None or int(requested) <= derived:
        return
    message = (
        f"Warning: User-specified context_length ({requested}) is greater than the derived "
        f"context_length ({derived}). This may lead to incorrect model outputs or CUDA errors. "
        "Note that the derived context_length may differ from max_position_embeddings in the "
        "model's config."
    )
    if os.environ.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "").lower() in ("1", "true"):
        warnings.append(message)
        return
    raise ResolutionError(
        f"ValueError: {message} To allow overriding this maximum, set the env var "
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
        tracebacks.frames("longer_context"),
    )


def _verify_quantization(
    args: dict[str, Any], identity: ModelIdentity, warnings: list[str]
) -> None:
    """``ModelConfig._verify_quantization``: --quantization against the checkpoint's method
    (the rule is :mod:`pytest_sglang.model_config_rules`', shared with the predictor)."""
    check = verify_quantization(args.get("quantization"), identity.quantization)
    warnings.extend(check.messages)
    if check.error is not None:
        raise ResolutionError(check.error, tracebacks.frames("quantization_mismatch"))


def resolve_args(parsed: dict[str, Any], version: str, gpu: GpuSpec | None = None) -> Resolved:
    """Apply SGLang's resolution; returns the args as the server_args line logs them.

    Raises :class:`ResolutionError` where SGLang's resolution raises (exit status 1), carrying
    the warnings logged before it.
    """
    warnings: list[str] = []
    try:
        return _resolve(dict(parsed), version, gpu or GpuSpec(), warnings)
    except ResolutionError as exc:
        exc.warnings = list(warnings)
        raise


def _resolve(args: dict[str, Any], version: str, gpu: GpuSpec, warnings: list[str]) -> Resolved:
    """``run_resolution_pipeline``: the simulated handlers in 0.5.23's order."""
    _fill_resolved_defaults(args)
    identity = _handle_model_source_paths(args)
    _handle_deprecated_args(args, warnings)
    identity, model = _build_model_config(args, identity, gpu, warnings)
    arch = model.architecture
    mla = identity.mla
    tp = int(args.get("tp_size") or 1)
    _handle_missing_default_values(args)
    _handle_mamba_backend(args, arch)
    attn_dp = _handle_deprecated_dp_attention(args)
    algo = args.get("speculative_algorithm")
    if algo is not None:
        algo = "EAGLE" if algo.upper() == "NEXTN" else algo.upper()
    graphs_off = bool(args.get("disable_cuda_graph"))
    deepep = args.get("moe_a2a_backend") == "deepep"
    graph = _handle_gpu_memory_settings(args, gpu, tp, mla, algo is not None, deepep, warnings)
    _set_mem_fraction_static(args, gpu, graph, tp, mla, attn_dp, arch, deepep)

    def default_backend() -> str:
        return gpu_rules.default_attention(
            gpu.capability[0],
            mla,
            algo,
            args.get("speculative_eagle_topk"),
            model_rules.attention_sinks(identity),
        )

    # handle_model_specific_adjustments: the architecture's registered overrides, the DeepSeek
    # branch, the all-reduce fusion (model_rules)
    model_rules.registry_overrides(identity, args, gpu, warnings, default_backend)
    model_rules.deepseek_adjustments(identity, args, gpu, warnings, not graphs_off)
    refused = model_rules.olmo2_adjustments(identity, args, warnings)
    if refused is not None:
        raise ResolutionError(refused, tracebacks.frames("olmo2_flashinfer"))
    model_rules.allreduce_fusion(identity, args, gpu, warnings, attn_dp)
    _handle_attention_backend_compatibility(args, gpu, graph, warnings, default_backend)
    _disable_prefill_cuda_graph_for_deepseek_trtllm_mla(args, arch, graph, warnings)
    _handle_data_parallelism(args, tp, attn_dp, graph, warnings)
    # handle_moe_kernel_config and handle_a2a_moe
    model_rules.moe_runner_messages(args, warnings)
    model_rules.a2a_ep_size(args, warnings)
    spec = _handle_speculative_decoding(args, model, algo, version, warnings)

    if args.get("sampling_backend") is None:
        args["sampling_backend"] = "flashinfer"
    args["cuda_graph_config"] = copy.deepcopy(graph)
    graph_bs = [] if graph["decode"]["backend"] == "disabled" else list(graph["decode"]["bs"])
    return Resolved(args, warnings, model, spec, gpu, graph_bs)


def _fill_resolved_defaults(args: dict[str, Any]) -> None:
    """The values unset fields resolve to (and ``auto`` as one node resolves it)."""
    for key, value in RESOLVED_DEFAULTS.items():
        if args.get(key) is None:
            args[key] = copy.deepcopy(value)
    if (
        args.get("speculative_draft_model_path") is not None
        and args.get("speculative_draft_model_revision") is None
    ):
        args["speculative_draft_model_revision"] = "main"
    # "auto" as resolved on one node without a data-parallel router (every golden config)
    for key, resolved_auto in (
        ("load_balance_method", "round_robin"),
        ("encoder_transfer_backend", "zmq_to_scheduler"),
    ):
        if args.get(key) == "auto":
            args[key] = resolved_auto
    if args.get("speculative_draft_model_quantization") is None:
        args["speculative_draft_model_quantization"] = args.get("quantization")


def _handle_model_source_paths(args: dict[str, Any]) -> ModelIdentity:
    """``handle_model_source_paths``: the model's config.json read, a missing directory refused."""
    identity = read_model_identity(str(args["model_path"]))
    _refuse_missing_model(str(args["model_path"]))
    return identity


def _handle_deprecated_args(args: dict[str, Any], warnings: list[str]) -> None:
    """``handle_deprecated_args``: the first hook that warns, before any reads a renamed value."""
    renamed, deprecated = rename_deprecated(args)
    args.update(renamed)
    warnings.extend(deprecated)


def _build_model_config(
    args: dict[str, Any], identity: ModelIdentity, gpu: GpuSpec, warnings: list[str]
) -> tuple[ModelIdentity, ModelSpec]:
    """``ModelConfig``, first built after the deprecated args (``apply_inkling_prefill_...``)."""
    warnings.extend(model_rules.multimodal_note(identity, args))
    warnings.extend(model_rules.gemma_dtype_note(identity, args))
    _refuse_longer_context(args, identity.context_length, warnings)
    _verify_quantization(args, identity, warnings)
    warnings.extend(model_rules.model_config_messages(identity, args, gpu))
    model = parse_model(args["model_path"], args.get("quantization"), identity)
    if identity.architecture != model.architecture:  # by name: the cost model's family decides
        identity = dataclasses.replace(identity, architecture=model.architecture)
    return identity, model


def _handle_missing_default_values(args: dict[str, Any]) -> None:
    """``handle_missing_default_values``: the served name and tokenizer are the model path."""
    if args.get("served_model_name") is None:
        args["served_model_name"] = args["model_path"]
    if args.get("tokenizer_path") is None:
        args["tokenizer_path"] = args["model_path"]


def _handle_mamba_backend(args: dict[str, Any], arch: str) -> None:
    """``handle_mamba_backend``: a hybrid Mamba model's radix cache keeps an extra buffer."""
    if arch in HYBRID_MAMBA_ARCHS:
        args["mamba_radix_cache_strategy"] = "extra_buffer"
        args["uses_mamba_radix_cache"] = True


def _handle_deprecated_dp_attention(args: dict[str, Any]) -> int:
    """``handle_deprecated_dp_attention``: --dp-size under DP attention becomes attn_dp_size."""
    attn_dp = int(args.get("dp_size") or 1) if args.get("enable_dp_attention") else 1
    if attn_dp > 1:
        args["attn_dp_size"] = attn_dp
        args["dp_size"] = 1
    return attn_dp


def _handle_gpu_memory_settings(
    args: dict[str, Any],
    gpu: GpuSpec,
    tp: int,
    mla: bool,
    speculative: bool,
    deepep: bool,
    warnings: list[str],
) -> dict[str, Any]:
    """``handle_gpu_memory_settings``: chunked prefill and the CUDA-graph capture lists."""
    default_chunk, default_max_bs = _gpu_tier(gpu.memory_mib, tp)
    if args.get("chunked_prefill_size") is None:
        args["chunked_prefill_size"] = default_chunk
    chunk = int(args["chunked_prefill_size"])
    requested_max_bs = args.get("cuda_graph_max_bs_decode")
    max_bs = int(requested_max_bs) if requested_max_bs is not None else default_max_bs
    if requested_max_bs is None and args.get("max_running_requests") is not None:
        max_bs = min(max_bs, int(args["max_running_requests"]))
    prefill_max_bs = min(8192, chunk) if mla else chunk
    if args.get("max_total_tokens") is not None:
        prefill_max_bs = min(prefill_max_bs, int(args["max_total_tokens"]))
    graphs_off = bool(args.get("disable_cuda_graph"))
    decode_bs = decode_graph_bs(max_bs, speculative)
    graph = {
        "decode": _phase("disabled" if graphs_off else "full", max(decode_bs), decode_bs),
        "prefill": _phase(
            "disabled" if graphs_off else "breakable",
            prefill_max_bs,
            prefill_graph_bs(prefill_max_bs),
        ),
    }
    if deepep and not graphs_off:
        # apply_deepep_adjustments (handle_cuda_graph_config, before the memory settings size
        # the prefill graphs): the documented 2048 default's buckets, aligned to 8
        buckets = prefill_graph_bs(2048)
        aligned = sorted({(b + 7) // 8 * 8 for b in buckets})
        warnings.append(
            "Breakable prefill CUDA graph with DeepEP requires bucket sizes divisible by 8; "
            f"aligning {buckets} -> {aligned}."
        )
        graph["prefill"] = {**graph["prefill"], "max_bs": aligned[-1], "bs": aligned}
    return graph


def _set_mem_fraction_static(
    args: dict[str, Any],
    gpu: GpuSpec,
    graph: dict[str, Any],
    tp: int,
    mla: bool,
    attn_dp: int,
    arch: str,
    deepep: bool,
) -> None:
    """``handle_gpu_memory_settings``' mem_fraction_static: what activations and graphs leave."""
    if args.get("mem_fraction_static") is not None:
        return
    gpu_mib = gpu.memory_mib
    graphs_off = bool(args.get("disable_cuda_graph"))
    chunk = int(args["chunked_prefill_size"])
    activation = max(chunk if chunk > 0 else int(args.get("max_prefill_tokens") or 0), 2048)
    reserved = 512 + activation * 1.5 + tp / 8 * 1024
    if not graphs_off:
        reserved += graph["decode"]["max_bs"] * 2
        if attn_dp > 1:
            reserved += graph["decode"]["max_bs"] * attn_dp * 3
            if graph["decode"]["max_bs"] > 300:
                reserved += graph["decode"]["max_bs"] * attn_dp * 1.5
        reserved += 1.5 * 1024 if mla else len(graph["prefill"]["bs"]) * 8
        if deepep:
            reserved += 1024  # the prefill graphs' DeepEP bridge pool
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if deepep and not graphs_off:
        reserved += 2 * 1024  # DeepEP all-to-all buffers of the decode graphs
    fraction = round((gpu_mib - reserved) / gpu_mib, 3)
    if arch in VISION_TOWERS:
        fraction *= _vlm_factor(arch)
    args["mem_fraction_static"] = fraction


def _handle_attention_backend_compatibility(
    args: dict[str, Any],
    gpu: GpuSpec,
    graph: dict[str, Any],
    warnings: list[str],
    default_backend: Callable[[], str],
) -> None:
    """``handle_attention_backend_compatibility``: default, torch native, page sizes, GPU checks."""
    if args.get("prefill_attention_backend") is not None and args.get(
        "prefill_attention_backend"
    ) == args.get("decode_attention_backend"):
        args["attention_backend"] = args["prefill_attention_backend"]
    if args.get("attention_backend") is None:
        backend = default_backend()
        args["attention_backend"] = backend
        warnings.append(ATTENTION_DEFAULT.format(backend=backend))
    if args.get("attention_backend") == "torch_native":
        warnings.append("Cuda graph is disabled because of using torch native attention backend")
        for phase in ("decode", "prefill"):
            graph[phase] = {**graph[phase], "backend": "disabled"}
    _attention_constraints(args, gpu, warnings)


def _disable_prefill_cuda_graph_for_deepseek_trtllm_mla(
    args: dict[str, Any], arch: str, graph: dict[str, Any], warnings: list[str]
) -> None:
    """``disable_prefill_cuda_graph_for_deepseek_trtllm_mla``: no prefill graphs on TRT-LLM MLA."""
    if (
        arch == "DeepseekV3ForCausalLM"
        and graph["prefill"]["backend"] != "disabled"
        and (args.get("prefill_attention_backend") or args.get("attention_backend")) == "trtllm_mla"
    ):
        warnings.append(
            model_rules.DEEPSEEK_PREFILL_GRAPH.format(backend=graph["prefill"]["backend"])
        )
        graph["prefill"] = {**graph["prefill"], "backend": "disabled"}


def _handle_data_parallelism(
    args: dict[str, Any], tp: int, attn_dp: int, graph: dict[str, Any], warnings: list[str]
) -> None:
    """``handle_data_parallelism``: DP attention splits the chunk (and prefill graphs) per rank."""
    if attn_dp <= 1:
        return
    if tp % attn_dp:
        raise ResolutionError("AssertionError", tracebacks.frames("dp_not_dividing_tp"))
    old = int(args["chunked_prefill_size"])
    args["chunked_prefill_size"] = old // attn_dp
    warnings.append(DP_CHUNK_WARNING.format(old=old, new=args["chunked_prefill_size"]))
    # the prefill graphs re-clamped to the per-rank chunk, unless they are disabled
    capped = min(graph["prefill"]["max_bs"], int(args["chunked_prefill_size"]))
    if graph["prefill"]["backend"] != "disabled":
        graph["prefill"] = _phase(graph["prefill"]["backend"], capped, prefill_graph_bs(capped))


def _handle_speculative_decoding(
    args: dict[str, Any], model: ModelSpec, algo: str | None, version: str, warnings: list[str]
) -> SpecConfig:
    """``handle_speculative_decoding``: the name is checked only now, after earlier warnings."""
    if algo is None:
        return SpecConfig()
    if algo not in SPEC_ALGORITHMS:
        _refuse_unknown_algorithm(args["speculative_algorithm"])
    args["speculative_algorithm"] = algo
    _refuse_unsimulated_algorithm(algo, args)
    if algo == "NGRAM":
        return _handle_ngram(args, warnings)
    if algo in EAGLE_FAMILY:
        return _handle_eagle_family(args, model, algo, version, warnings)
    return SpecConfig()


def _refuse_unknown_algorithm(name: str) -> None:
    """``SpeculativeAlgorithm.from_string``: a name that is no member."""
    raise ResolutionError(
        f"ValueError: Unknown speculative algorithm name: {name}",
        [
            *_PIPELINE_FRAMES,
            (
                _SITE + "sglang/srt/arg_groups/speculative_hook.py",
                242,
                "handle_speculative_decoding",
                "algo = SpeculativeAlgorithm.from_string(cfg.speculative_algorithm)",
            ),
            (
                _SITE + "sglang/srt/speculative/spec_info.py",
                65,
                "from_string",
                'raise ValueError(f"Unknown speculative algorithm name: {name}")',
            ),
        ],
    )


def _handle_ngram(args: dict[str, Any], warnings: list[str]) -> SpecConfig:
    """``_handle_ngram``: 48 running requests, no mixed chunk, the draft tokens from the BFS."""
    if args.get("max_running_requests") is None:
        args["max_running_requests"] = 48
        warnings.append(MAX_RUNNING_WARNING)
    args["enable_mixed_chunk"] = False
    args["speculative_eagle_topk"] = int(args.get("speculative_ngram_max_bfs_breadth") or 10)
    if args.get("speculative_num_draft_tokens") is None:
        args["speculative_num_draft_tokens"] = 12
        warnings.append(NGRAM_WARNING)
    if args.get("speculative_num_steps") is None:
        args["speculative_num_steps"] = (
            int(args["speculative_num_draft_tokens"]) // args["speculative_eagle_topk"]
        )
    warnings.append(NGRAM_MIXED_WARNING)
    topk = int(args["speculative_eagle_topk"])
    page = int(args.get("page_size") or 1)
    if gpu_rules.ngram_paged_refused(topk, page, args.get("attention_backend")):
        raise ResolutionError(
            gpu_rules.NGRAM_PAGED_ERROR.format(topk=topk, page=page),
            [
                *_spec_frames(266, "_handle_ngram"),
                (
                    _SITE + "sglang/srt/arg_groups/speculative_hook.py",
                    1361,
                    "_handle_ngram",
                    "raise ValueError(",
                ),
            ],
        )
    if int(args.get("attn_dp_size") or 1) > 1:
        raise ResolutionError(
            "ValueError: Currently ngram speculative decoding does not support dp attention.",
            [*_spec_frames(266, "_handle_ngram"), (_HOOK, 1369, "_handle_ngram", _RAISE)],
        )
    draft = int(args["speculative_num_draft_tokens"])
    return SpecConfig("NGRAM", max(1, draft - 1), 1, draft)


def _handle_eagle_family(
    args: dict[str, Any], model: ModelSpec, algo: str, version: str, warnings: list[str]
) -> SpecConfig:
    """``_handle_eagle_family``: EAGLE, EAGLE3 and STANDALONE's draft model and step shape."""
    draft_path = args.get("speculative_draft_model_path")
    if algo == "STANDALONE" and int(args.get("attn_dp_size") or 1) > 1:
        raise ResolutionError(
            "ValueError: Currently standalone speculative decoding does not support dp attention.",
            [*_PIPELINE_FRAMES, *_EAGLE_FRAMES, (_HOOK, 1082, "_handle_eagle_family", _RAISE)],
        )
    if draft_path is not None:
        _refuse_missing_model(str(draft_path), draft=True)
    if args.get("max_running_requests") is None:
        args["max_running_requests"] = 48
        warnings.append(MAX_RUNNING_WARNING)
    if has("spec_v2_non_overlap_warning", version) and args.get("disable_overlap_schedule"):
        warnings.append(NON_OVERLAP_WARNING)
    if args.get("enable_mixed_chunk") and algo not in MIXED_CHUNK_ALGORITHMS:
        args["enable_mixed_chunk"] = False
        warnings.append(MIXED_CHUNK_SPEC_WARNING.format(algo=args["speculative_algorithm"]))
    if model.architecture in SELF_DRAFT_ARCHITECTURES:
        if args.get("speculative_draft_model_path") is None:
            args["speculative_draft_model_path"] = args["model_path"]
            args["speculative_draft_model_revision"] = args.get("revision")
        elif model.architecture not in MTP_NO_DRAFT_NOTE:
            warnings.append(MTP_DRAFT_WARNING)
    if args.get("speculative_num_steps") is None:
        if (
            args.get("speculative_eagle_topk") is not None
            or args.get("speculative_num_draft_tokens") is not None
        ):
            raise ResolutionError(
                "AssertionError",
                [
                    *_PIPELINE_FRAMES,
                    *_EAGLE_FRAMES,
                    (
                        _SITE + "sglang/srt/arg_groups/speculative_hook.py",
                        1162,
                        "_handle_eagle_family",
                        "and cfg.speculative_num_draft_tokens is None",
                    ),
                ],
            )
        steps, topk, draft = _auto_spec(model, algo, version)
        args["speculative_num_steps"] = steps
        args["speculative_eagle_topk"] = topk
        args["speculative_num_draft_tokens"] = draft
    steps = int(args["speculative_num_steps"])
    topk_value = args.get("speculative_eagle_topk")
    _refuse_eagle_backends(args, topk_value)
    if topk_value == 1 and args.get("speculative_num_draft_tokens") != steps + 1:
        warnings.append(ADJUST_WARNING)
        args["speculative_num_draft_tokens"] = steps + 1
    if topk_value is None:
        # 0.5.23 compares the unset topk with 1 here and dies (not a simulator choice)
        raise ResolutionError(
            "TypeError: '>' not supported between instances of 'NoneType' and 'int'",
            [
                *_PIPELINE_FRAMES,
                *_EAGLE_FRAMES,
                (
                    _SITE + "sglang/srt/arg_groups/speculative_hook.py",
                    1274,
                    "_handle_eagle_family",
                    "cfg.speculative_eagle_topk > 1",
                ),
            ],
        )
    if args.get("speculative_num_draft_tokens") is None:
        args["speculative_num_draft_tokens"] = steps * int(topk_value) + 1
    return SpecConfig(algo, steps, int(topk_value), int(args["speculative_num_draft_tokens"]))


def _refuse_eagle_backends(args: dict[str, Any], topk: Any) -> None:
    """``_handle_eagle_family``'s checks of the tree's breadth against the attention backends
    (:func:`pytest_sglang.gpu_rules.eagle_backend_refusal`, shared with the predictor): an
    unset topk on TRT-LLM MHA dies comparing None with 1 (line 1178), a tree on TRT-LLM MHA
    and a paged tree off FlashInfer/FA3/Triton are refused. Played before the draft-token
    adjustment, which logs only for a topk of 1, where neither refuses."""
    backends = (
        args.get("attention_backend"),
        args.get("decode_attention_backend"),
        args.get("prefill_attention_backend"),
    )
    frames = [*_PIPELINE_FRAMES, *_EAGLE_FRAMES]
    if topk is None:
        if "trtllm_mha" in (backends[2] or backends[0], backends[1] or backends[0]):
            raise ResolutionError(
                "TypeError: '>' not supported between instances of 'NoneType' and 'int'",
                [
                    *frames,
                    (_HOOK, 1178, "_handle_eagle_family", "if cfg.speculative_eagle_topk > 1:"),
                ],
            )
        return
    refusal = gpu_rules.eagle_backend_refusal(int(topk), int(args.get("page_size") or 1), *backends)
    if refusal is not None:
        which, line = refusal
        lineno = 1178 if which == "trtllm_mha_topk" else 1278
        raise ResolutionError(line, [*frames, (_HOOK, lineno, "_handle_eagle_family", _RAISE)])


def format_server_args(args: dict[str, Any], version: str) -> str:
    """The ``server_args=...`` message in the version's format, every field in SGLang's order."""
    values = dict(EXTRA_DEFAULTS)
    values.update(args)
    if has("server_args_dict", version):
        body = ", ".join(f"{name!r}: {values.get(name)!r}" for name in DICT_FIELDS)
        return "server_args={" + body + "}"
    body = ", ".join(f"{name}={values.get(name)!r}" for name in REPR_FIELDS)
    return "server_args=ServerArgs(" + body + ")"
