"""The bodies of /server_info, /model_info and a request's ``meta_info``, as SGLang 0.5.23 builds
them (held to the real server's recorded shapes, tests/data/real_sglang_answers.json).

Why a module of its own: these answers are long and are all read off one place each in the real
source, so they are kept next to each other with the source they copy, and the routes in
:mod:`.server` only call them. The server_args part of /server_info comes from the one table
of 0.5.23's ServerArgs fields (:data:`.fields.DICT_FIELDS`, the order of ``resolved_dict()``),
so that a field the real server reports cannot be missing here while present in the log line.
"""

from __future__ import annotations

import time
from typing import Any

from .fields import DICT_FIELDS, EXTRA_DEFAULTS
from .scheduler import Request

__all__ = [
    "WATERMARK_SECRETS",
    "embedding_plan",
    "metrics_meta_info",
    "resolved_server_args",
    "retraction_backup",
    "weight_versions",
]

#: ``redact_watermark_secrets`` (sampling/watermarking/core.py) answers these keys of any
#: dict with ``"<redacted>"``, set or not.
WATERMARK_SECRETS = ("watermark_config", "watermark_key", "watermark_key_b")


def resolved_server_args(args: dict[str, Any], scheduler: dict[str, Any]) -> dict[str, Any]:
    """``ServerArgs.resolved_dict()`` as /server_info reports it: every field of
    :data:`DICT_FIELDS`, with what the scheduler resolves once started (``scheduler``: e.g.
    ``pp_max_micro_batch_size``, ``disaggregation_decode_retraction_backup``) applied, and the
    watermark secrets redacted. Argparse-only keys (``config``) are not fields and stay out."""
    values = dict(EXTRA_DEFAULTS)
    values.update(args)
    values.update(scheduler)
    out = {name: values.get(name) for name in DICT_FIELDS}
    out.update(dict.fromkeys(WATERMARK_SECRETS, "<redacted>"))
    return out


def retraction_backup(args: dict[str, Any]) -> str:
    """``disaggregation_decode_retraction_backup`` once the KV pool exists
    (mem_cache/kv_cache_builder.py ``resolve_decode_retraction_backup``): ``host_pool`` only on
    a decode server without radix cache, KV offload or priority preemption, else
    ``cpu_tensor``; an explicit choice is kept."""
    chosen = args.get("disaggregation_decode_retraction_backup")
    if chosen is not None:
        return str(chosen)
    preemption = bool(args.get("enable_priority_scheduling")) and not args.get(
        "disable_priority_preemption"
    )
    host_pool = (
        args.get("disaggregation_mode") == "decode"
        and int(args.get("dcp_size") or 1) <= 1
        and not args.get("disaggregation_decode_enable_radix_cache")
        and not args.get("disaggregation_decode_enable_offload_kvcache")
        and not preemption
    )
    return "host_pool" if host_pool else "cpu_tensor"


def embedding_plan(args: dict[str, Any]) -> dict[str, Any]:
    """/model_info's ``embedding`` for a decoder model (configs/embedding_model_spec.py):
    the ``none`` spec unless ``--is-embedding`` asks for decoder pooling, combined with the
    resolved prefill graph and cache settings (``resolved_embedding_plan``)."""
    embed = bool(args.get("is_embedding"))
    prefill = (args.get("cuda_graph_config") or {}).get("prefill") or {}
    backend = prefill.get("backend")
    return {
        "family": "explicit_decoder_embedding" if embed else "none",
        "task": "embed" if embed else "none",
        "execution": "decoder_pooling" if embed else "none",
        "attention": "causal" if embed else "none",
        "pooling": "model_defined",
        "normalize": embed,
        "postprocessor": "model_defined" if embed else "none",
        "tokenizer_special_tokens": "model_default",
        "supports_dimensions": False,
        "supports_token_embeddings": False,
        "supports_multimodal": False,
        "requires_embedding_flag": embed,
        "auto_enable_embedding": False,
        "bcg_eligibility": "standard" if embed else "disabled",
        "safe_disable_kv_cache": False,
        "safe_disable_radix_cache": False,
        "safe_disable_chunked_prefill": False,
        "enabled": embed,
        "matryoshka_dimensions": [],
        "bcg": {
            "prefill_backend": backend,
            "enabled": backend == "breakable",
            "capture_token_budget": prefill.get("max_bs"),
            "capture_batch_sizes": list(prefill.get("bs") or []),
        },
        "cache": {
            "kv_cache_disabled": bool(args.get("prefill_only_disable_kv_cache")),
            "radix_cache_disabled": bool(args.get("disable_radix_cache")),
            "chunked_prefill_disabled": args.get("chunked_prefill_size") == -1,
        },
    }


def weight_versions(version: str, completion_tokens: int) -> list[dict[str, Any]]:
    """``meta_info.weight_versions`` (utils/weight_versions.py): the spans of output tokens
    each weight version produced; without a weight update, one span over the whole output."""
    return [{"version": version, "start": 0, "end": completion_tokens}]


def metrics_meta_info(req: Request, final: bool, now: float | None = None) -> dict[str, Any]:
    """The timing fields ``--enable-metrics`` adds to ``meta_info`` (observability/
    req_time_stats.py, both ``convert_to_output_meta_info``): the scheduler's on every chunk,
    the tokenizer's when the request finishes. Wall-clock timestamps and seconds."""
    now = time.time() if now is None else now
    entered = req.created
    prefilled = req.first_token_at or now
    meta: dict[str, Any] = {
        "storage_prefetch_wait": 0.0,
        "storage_staging_wait": 0.0,
        "forward_entry_time": entered,
        "prefill_finished_time": prefilled,
        "queue_time": 0.0,
    }
    if not final:
        return meta
    finished = req.finished_at or now
    meta.update(
        request_received_ts=req.created,
        first_token_latency=prefilled - req.created,
        api_server_dispatch_finish_ts=req.created,
        response_sent_to_client_ts=now,
        request_finished_ts=finished,
    )
    decode_s = finished - prefilled
    if req.completion_tokens > 1 and decode_s > 0:
        meta["decode_throughput"] = (req.completion_tokens - 1) / decode_s
    return meta
