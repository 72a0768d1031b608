"""Deprecated spellings SGLang rewrites, and the fixed choices its parser accepts.

Why one module for both the plugin and the simulator: a deprecated value that SGLang accepts is
not what it logs. 0.5.23's ``handle_deprecated_args`` (``sglang/srt/arg_groups/serving_hook.py``)
rewrites ``--tool-call-parser glm45`` to ``glm`` and warns, so a journal check that expected the
spelling given would fail a healthy server; and a value outside a flag's ``choices`` never starts
at all (argparse exits 2). :func:`rename_deprecated` is that hook's value rewrites, played by
:func:`pytest_sglang.resolution.resolve` and the simulator's resolution alike;
:func:`choice_error` is argparse's choices check, run by ``ServerConfig`` before anything touches
a host.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from .versions import CATALOG_VERSION, cli_catalog

__all__ = [
    "ATTENTION_BACKEND_ALIASES",
    "TOOL_CALL_PARSER_ALIASES",
    "choice_error",
    "choices_of",
    "rename_deprecated",
]

#: ``deprecated_tool_call_parsers`` of 0.5.23's ``handle_deprecated_args``
TOOL_CALL_PARSER_ALIASES = {"qwen25": "qwen", "glm45": "glm"}
#: its attention-backend aliases, and the fields they apply to (in the order it warns)
ATTENTION_BACKEND_ALIASES = {"compressed": "dsv4", "tokenspeed_mla": "cutedsl_mla"}
ATTENTION_BACKEND_FIELDS = (
    "attention_backend",
    "decode_attention_backend",
    "prefill_attention_backend",
    "speculative_draft_attention_backend",
)

TOOL_CALL_PARSER_WARNING = "The tool_call_parser '{old}' is deprecated. Please use '{new}' instead."
ATTENTION_ALIAS_WARNING = "--{flag}={old} is deprecated; use '{new}' instead."
TOKENSPEED_KV_WARNING = "tokenspeed_mla required FP8 KV; setting --kv-cache-dtype=fp8_e4m3."
FAST_IMAGE_WARNING = (
    "--disable-fast-image-processor is deprecated; use --image-processor-backend=pil instead."
)
FUSION_WARNING = (
    "--enable-flashinfer-allreduce-fusion is deprecated. "
    "Please use --flashinfer-allreduce-fusion-backend=auto instead."
)
GRPC_MODE_WARNING = (
    "--grpc-mode is deprecated and will be removed in a future version. Use --smg-grpc-mode for "
    "the legacy SMG gRPC server, or --grpc-port for the native gRPC server."
)
#: ``--port``'s default: the legacy gRPC port is derived from it
DEFAULT_PORT = 30000


def rename_deprecated(args: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """0.5.23's ``handle_deprecated_args``: the values it rewrites and the warnings it logs.

    ``args`` maps ``ServerArgs`` field names to what was given; a missing field has its default.
    Returns only the fields that change, and the warnings in the order SGLang logs them (this
    hook runs before every other that warns, so they lead the startup log).
    """
    changes: dict[str, Any] = {}
    warnings: list[str] = []
    if args.get("disable_fast_image_processor") and args.get("image_processor_backend", "auto") in (
        "auto",
        "pil",
    ):
        # another backend with the flag is a conflict SGLang refuses; left to the host to say
        warnings.append(FAST_IMAGE_WARNING)
        changes["image_processor_backend"] = "pil"
    parser = args.get("tool_call_parser")
    if parser in TOOL_CALL_PARSER_ALIASES:
        new = TOOL_CALL_PARSER_ALIASES[parser]
        warnings.append(TOOL_CALL_PARSER_WARNING.format(old=parser, new=new))
        changes["tool_call_parser"] = new
    if args.get("enable_flashinfer_allreduce_fusion"):
        if args.get("flashinfer_allreduce_fusion_backend") is None:
            warnings.append(FUSION_WARNING)
            changes["flashinfer_allreduce_fusion_backend"] = "auto"
        changes["enable_flashinfer_allreduce_fusion"] = False
    for field in ATTENTION_BACKEND_FIELDS:
        old = args.get(field)
        if old in ATTENTION_BACKEND_ALIASES:
            new = ATTENTION_BACKEND_ALIASES[old]
            warnings.append(
                ATTENTION_ALIAS_WARNING.format(flag=field.replace("_", "-"), old=old, new=new)
            )
            changes[field] = new
    if changes.get("prefill_attention_backend") == "cutedsl_mla":
        changes["prefill_attention_backend"] = "trtllm_mla"  # cutedsl_mla is decode-only
    if "tokenspeed_mla" in (args.get("attention_backend"), args.get("decode_attention_backend")):
        if args.get("kv_cache_dtype", "auto") != "fp8_e4m3":
            warnings.append(TOKENSPEED_KV_WARNING)
            changes["kv_cache_dtype"] = "fp8_e4m3"
        if (
            args.get("speculative_algorithm") is not None
            and args.get("speculative_attention_mode", "prefill") == "prefill"
        ):
            changes["speculative_attention_mode"] = "decode"
    if args.get("grpc_mode") and not args.get("smg_grpc_mode"):
        warnings.append(GRPC_MODE_WARNING)
        changes["smg_grpc_mode"] = True
        if args.get("grpc_port") is None:
            changes["grpc_port"] = int(args.get("port") or DEFAULT_PORT) + 10000
    return changes, warnings


@cache
def _choices_by_flag() -> dict[str, tuple[Any, ...]]:
    return {
        flag: tuple(arg["choices"])
        for arg in cli_catalog()
        if arg.get("choices")
        for flag in arg["flags"]
    }


@cache
def _types_by_flag() -> dict[str, str | None]:
    return {flag: arg["type"] for arg in cli_catalog() for flag in arg["flags"]}


def choices_of(flag: str) -> tuple[Any, ...] | None:
    """The fixed choices the catalog's parser gives ``flag``, or None when it takes any value."""
    return _choices_by_flag().get(flag)


def choice_error(flag: str, value: object) -> str | None:
    """Why argparse refuses ``value`` for ``flag`` (one line), or None when it accepts it.

    The value is converted as the parser converts it first (``--log-requests-level 2`` is the
    int 2), so a word it cannot convert counts as outside the choices, as argparse has it.
    """
    choices = choices_of(flag)
    if choices is None:
        return None
    converted: object = value
    if _types_by_flag().get(flag) == "int" and isinstance(value, str):
        try:
            converted = int(value)
        except ValueError:
            converted = value
    if converted in choices:
        return None
    listed = ", ".join(str(c) for c in choices)
    return (
        f"{flag} {value!r} is not one of its choices in SGLang {CATALOG_VERSION}; "
        f"use one of: {listed}"
    )
