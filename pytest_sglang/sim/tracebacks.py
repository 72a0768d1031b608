"""Where SGLang 0.5.23 raises for the refusals the simulator plays beyond the speculative
handler's: the frames of the traceback the real server prints (file under site-packages, line,
function, source line), read off the real package's tracebacks (the conformance goldens).

Why a table: a user reading the simulator's traceback should see the frames real SGLang would
show (the hook that raised, and through which pipeline step), and the goldens compare them.
"""

from __future__ import annotations

__all__ = ["Frame", "frames"]

Frame = tuple[str, int, str, str]

SITE = "/usr/local/lib/python3.12/dist-packages/"

_LAUNCH: list[Frame] = [
    ("sglang/launch_server.py", 84, "<module>", "run_server(server_args)"),
    ("sglang/launch_server.py", 29, "run_server", "server_args.resolve_once()"),
    ("sglang/srt/server_args.py", 277, "resolve_once", "run_resolution_pipeline(self)"),
]
_RUN_HOOK: Frame = (
    "sglang/srt/arg_groups/resolution_hooks.py",
    139,
    "run_hook",
    "step(server_args)",
)
_PIPELINE = "sglang/srt/arg_groups/pipeline.py"
_GET_CONFIG: list[Frame] = [
    ("sglang/srt/utils/common.py", 4570, "wrapper", "result = func(*args, **kwargs)"),
    (
        "sglang/srt/utils/hf_transformers/config.py",
        387,
        "get_config",
        "meta = load_pointer_adapter(model, revision)",
    ),
    (
        "sglang/srt/configs/model_config.py",
        353,
        "load_pointer_adapter",
        "meta = load_pointer_head(model_path, revision)",
    ),
    ("sglang/srt/configs/model_config.py", 328, "load_pointer_head", "path = cached_file("),
    (
        "transformers/utils/hub.py",
        370,
        "cached_file",
        "file = cached_files(path_or_repo_id=path_or_repo_id, filenames=[filename], **kwargs)",
    ),
    ("transformers/utils/hub.py", 595, "cached_files", 'raise OSError(f"{e}") from e'),
]
#: ModelConfig first built, by apply_inkling_prefill_cuda_graph_default: where a refusal that
#: ModelConfig's constructor raises is reached from.
_MODEL_CONFIG_BUILT: list[Frame] = [
    (
        _PIPELINE,
        185,
        "run_resolution_pipeline",
        "run_hook(apply_inkling_prefill_cuda_graph_default, server_args)",
    ),
    _RUN_HOOK,
    (
        "sglang/srt/arg_groups/cuda_graph_hook.py",
        363,
        "apply_inkling_prefill_cuda_graph_default",
        "arch = model_config_of(server_args).hf_config.architectures[0]",
    ),
    (
        "sglang/srt/arg_groups/model_override_base.py",
        213,
        "model_config_of",
        "model_config = ModelConfig.from_server_args(server_args)",
    ),
    ("sglang/srt/configs/model_config.py", 955, "from_server_args", "return ModelConfig("),
]
_ATTENTION_HOOK: Frame = (
    _PIPELINE,
    242,
    "run_resolution_pipeline",
    "run_hook(handle_attention_backend_compatibility, server_args)",
)

_TABLE: dict[str, list[Frame]] = {
    # the first model read (apply_muse_spark_env_defaults) of a path that is no directory
    "missing_model": [
        (_PIPELINE, 122, "run_resolution_pipeline", "apply_muse_spark_env_defaults(server_args)"),
        (
            "sglang/srt/arg_groups/muse_spark_hook.py",
            43,
            "apply_muse_spark_env_defaults",
            "hf_config = get_config(",
        ),
        *_GET_CONFIG,
    ],
    # the draft's config read when the speculative handler resolves the algorithm's alias
    "missing_draft": [
        (
            _PIPELINE,
            306,
            "run_resolution_pipeline",
            "run_hook(handle_speculative_decoding, server_args)",
        ),
        _RUN_HOOK,
        (
            "sglang/srt/arg_groups/speculative_hook.py",
            154,
            "handle_speculative_decoding",
            "speculative_algorithm=_resolve_speculative_algorithm_alias(",
        ),
        (
            "sglang/srt/arg_groups/speculative_hook.py",
            93,
            "_resolve_speculative_algorithm_alias",
            "cfg = get_config(",
        ),
        *_GET_CONFIG,
    ],
    # ModelConfig is first built by apply_inkling_prefill_cuda_graph_default
    "longer_context": [
        *_MODEL_CONFIG_BUILT,
        (
            "sglang/srt/configs/model_config.py",
            884,
            "__init__",
            "self._derive_context_length(context_length)",
        ),
        ("sglang/srt/configs/model_config.py", 1314, "_derive_context_length", "raise ValueError("),
    ],
    # _verify_quantization, right after the context length (model_config.py:891)
    "quantization_mismatch": [
        *_MODEL_CONFIG_BUILT,
        ("sglang/srt/configs/model_config.py", 891, "__init__", "self._verify_quantization()"),
        ("sglang/srt/configs/model_config.py", 2143, "_verify_quantization", "raise ValueError("),
    ],
    # handle_model_specific_adjustments' OLMo 2 branch
    "olmo2_flashinfer": [
        (
            _PIPELINE,
            225,
            "run_resolution_pipeline",
            "run_hook(handle_model_specific_adjustments, server_args)",
        ),
        _RUN_HOOK,
        (
            "sglang/srt/arg_groups/model_hook.py",
            690,
            "handle_model_specific_adjustments",
            'assert attention_backend != "flashinfer", (',
        ),
    ],
    "dp_not_dividing_tp": [
        (
            _PIPELINE,
            274,
            "run_resolution_pipeline",
            "run_hook(handle_data_parallelism, server_args)",
        ),
        _RUN_HOOK,
        (
            "sglang/srt/arg_groups/parallel_hook.py",
            326,
            "handle_data_parallelism",
            "assert cfg.tp_size % cfg.attn_dp_size == 0",
        ),
    ],
    "trtllm_mla_gpu": [
        _ATTENTION_HOOK,
        _RUN_HOOK,
        (
            "sglang/srt/arg_groups/attention_hook.py",
            190,
            "handle_attention_backend_compatibility",
            "run_post_process_pass(server_args, _mla_kv_cache_dtype_checks)",
        ),
        (
            "sglang/srt/arg_groups/overrides.py",
            99,
            "run_post_process_pass",
            "declared = fn(ResolvedView(server_args, overlay=_declaration_overlay(server_args)))",
        ),
        (
            "sglang/srt/arg_groups/overrides.py",
            1211,
            "_mla_kv_cache_dtype_checks",
            "raise ValueError(",
        ),
    ],
    "trtllm_mha_gpu": [
        _ATTENTION_HOOK,
        _RUN_HOOK,
        (
            "sglang/srt/arg_groups/attention_hook.py",
            203,
            "handle_attention_backend_compatibility",
            "raise ValueError(",
        ),
    ],
}


def frames(error: str) -> list[Frame]:
    """The whole traceback of ``error`` (a key of the table), from ``launch_server`` down."""
    return [(SITE + f, line, fn, code) for f, line, fn, code in [*_LAUNCH, *_TABLE[error]]]
