"""SGLang's ServerArgs post-init, played by the simulator on the parsed command line.

Why here and not in :mod:`pytest_sglang.resolution`: the simulator stands in for SGLang, so it
implements the rules independently (sglang-facts.md section 2); the project's own
``ServerConfig.resolved()`` is then tested *against* it. Which release changed what is read from
the one version table, :data:`pytest_sglang.versions.CHANGES`. Values a real GPU would compute
(mem_fraction_static, chunked_prefill_size, attention_backend, CUDA-graph batch sizes) get
realistic figures for the simulated GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..versions import has
from .fields import DICT_FIELDS, EXTRA_DEFAULTS, REPR_FIELDS, RESOLVED_DEFAULTS
from .perf import GpuSpec, ModelSpec, SpecConfig, parse_model

__all__ = ["Resolved", "format_server_args", "resolve_args"]

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
    """``auto_choose_speculative_params`` (runs when --speculative-num-steps is unset)."""
    if algorithm == "STANDALONE":
        return (3, 1, 4)
    if model.architecture in ("LlamaForCausalLM", "Grok1ForCausalLM"):
        return (5, 4, 8)
    if model.architecture in ("DeepseekV3ForCausalLM", "GptOssForCausalLM", "Glm4MoeForCausalLM"):
        return (3, 1, 4)
    return (3, 1, 4) if has("auto_spec_params_3_1_4", version) else (5, 4, 8)


def _graph_bs(max_bs: int) -> list[int]:
    """SGLang's capture list: 1, 2, 4, 8, then steps of 8 up to 256, then 16."""
    sizes = [1, 2, 4, *range(8, 257, 8), *range(272, 1025, 16)]
    return [s for s in sizes if s <= max_bs] or [1]


def resolve_args(parsed: dict[str, Any], version: str, gpu: GpuSpec | None = None) -> Resolved:
    """Apply SGLang's post-init rules; returns the args as the server_args line logs them."""
    gpu = gpu or GpuSpec()
    args = dict(parsed)
    warnings: list[str] = []
    for key, value in RESOLVED_DEFAULTS.items():
        if args.get(key) is None:
            args[key] = value
    model = parse_model(args["model_path"], args.get("quantization"))
    if args.get("served_model_name") is None:
        args["served_model_name"] = args["model_path"]
    if args.get("attention_backend") is None:
        args["attention_backend"] = "flashinfer"
        warnings.append("Attention backend not specified. Use flashinfer backend by default.")
    algo = args.get("speculative_algorithm")
    spec = SpecConfig()
    if algo is not None:
        algo = algo.upper()
        if algo == "NEXTN":
            algo = "EAGLE"
        args["speculative_algorithm"] = algo
        if algo == "NGRAM":
            if args.get("speculative_num_draft_tokens") is None:
                args["speculative_num_draft_tokens"] = 12
                warnings.append(NGRAM_WARNING)
            warnings.append(
                "The mixed chunked prefill are disabled because of using ngram speculative "
                "decoding."
            )
            draft = int(args["speculative_num_draft_tokens"])
            spec = SpecConfig("NGRAM", max(1, draft - 1), 1, draft)
        else:
            if args.get("max_running_requests") is None:
                args["max_running_requests"] = 48
                warnings.append(MAX_RUNNING_WARNING)
            if args.get("speculative_num_steps") is None:
                if (
                    args.get("speculative_eagle_topk") is not None
                    or args.get("speculative_num_draft_tokens") is not None
                ):
                    raise AssertionError
                steps, topk, draft = _auto_spec(model, algo, version)
                args["speculative_num_steps"] = steps
                args["speculative_eagle_topk"] = topk
                args["speculative_num_draft_tokens"] = draft
            steps = int(args["speculative_num_steps"])
            if args.get("speculative_eagle_topk") is None:
                args["speculative_eagle_topk"] = 1
            topk = int(args["speculative_eagle_topk"])
            if topk == 1 and args.get("speculative_num_draft_tokens") != steps + 1:
                args["speculative_num_draft_tokens"] = steps + 1
                warnings.append(ADJUST_WARNING)
            if args.get("speculative_num_draft_tokens") is None:
                args["speculative_num_draft_tokens"] = steps * topk + 1
            if has("spec_v2_non_overlap_warning", version) and args.get("disable_overlap_schedule"):
                warnings.append(
                    "Non-overlap (synchronous) spec v2 is used for eagle/eagle3/standalone "
                    "speculative decoding."
                )
            warnings.append(
                "Mixed chunked prefill is disabled because of using eagle speculative decoding."
            )
            spec = SpecConfig(algo, steps, topk, int(args["speculative_num_draft_tokens"]))
    spec_on = spec.algorithm is not None
    if args.get("mem_fraction_static") is None:
        reserved_gb = 6.0 + (3.0 if spec_on else 0.0) + 0.5 * args.get("tp_size", 1)
        args["mem_fraction_static"] = round(1.0 - reserved_gb / gpu.memory_gb, 3)
    if args.get("chunked_prefill_size") is None:
        args["chunked_prefill_size"] = 8192 if gpu.memory_gb >= 60 else 4096
    if args.get("page_size") is None:
        args["page_size"] = 1
    max_bs = args.get("cuda_graph_max_bs_decode")
    if max_bs is None:
        max_bs = 256 if args.get("tp_size", 1) < 4 else 512
        if args.get("max_running_requests") is not None:
            max_bs = min(max_bs, int(args["max_running_requests"]))
        args["cuda_graph_max_bs_decode"] = max_bs
    graph_bs = [] if args.get("disable_cuda_graph") else _graph_bs(int(max_bs))
    return Resolved(args, warnings, model, spec, gpu, graph_bs)


def format_server_args(args: dict[str, Any], version: str) -> str:
    """The ``server_args=...`` message in the version's format, every field in SGLang's order."""
    values = dict(EXTRA_DEFAULTS)
    values.update(args)
    if has("server_args_dict", version):
        body = ", ".join(f"{name!r}: {values.get(name)!r}" for name in DICT_FIELDS)
        return "server_args={" + body + "}"
    body = ", ".join(f"{name}={values.get(name)!r}" for name in REPR_FIELDS)
    return "server_args=ServerArgs(" + body + ")"
