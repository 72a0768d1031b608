"""The startup sequence: SGLang's milestones in order, with realistic figures and durations.

Why it matters: deployers wait for readiness and then verify the startup journal, so the
milestones (sglang-facts.md section 3) must appear in SGLang's order, with the 0.5.18+ texts,
per TP rank, and take about as long as on the seeds' host (90-120 s to ready for the seed model at
TP 4 with ``SGLANG_SIM_STARTUP_SCALE=1``). Faults that strike during startup (``oom`` at KV
allocation, ``cuda-graph`` at capture, ``slow-start``) are raised here.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import Any

from .faults import CUDA_GRAPH_SOLUTIONS, die, scheduler_exception
from .knobs import SimSettings
from .logs import all_ranks, log, rank_log, raw_stderr
from .perf import effective_max_running_requests
from .post_init import Resolved

__all__ = ["GRAPH_PHASES", "Capacity", "StartupReport", "compute_capacity", "run_startup"]

LOAD_GB_PER_S_PER_GPU = 0.6  # checkpoint read + shard + copy, per GPU
# Per captured batch size. 0.5.23 captures 67 sizes for the seed model on the default GPU
# profile (1-8, every 2 up to 32, every 4-8 up to 256, every 16 up to 512), a target verify
# graph and the draft's for each: fitted so the seed config at TP 4 is ready in the seeds'
# 90-120 s (measured at SGLANG_SIM_STARTUP_SCALE=0.05: steps 1 ~90 s, steps 3 ~118 s, steps 4
# ~127 s). Before, with 0.9 / 1.6 s (set for a shorter list), steps 3 took ~360 s.
GRAPH_CAPTURE_S_PER_BS = 0.2  # one captured batch size of the target model
DRAFT_GRAPH_CAPTURE_S_PER_BS = 0.3  # draft decode graphs cover every step: slower (issue #10088)
KV_HEAD_BYTES = 1024  # kv_heads * head_dim per layer (GQA, e.g. 8 x 128)
#: The CUDA graph phases 0.5.23 reports under ``startup_time.cuda_graph`` and
#: ``memory_usage.graph`` (model_executor/graph_memory_usage.py): always all six, 0.0 when a
#: phase captured nothing, so that readers see one schema.
GRAPH_PHASES = (
    "decode",
    "draft_decode",
    "draft_extend",
    "draft_prefill",
    "prefill",
    "target_verify",
)


@dataclass(frozen=True)
class Capacity:
    """Memory figures the startup log and the scheduler agree on."""

    weights_gb: float
    avail_before_load_gb: float
    avail_after_load_gb: float
    kv_gb: float
    max_total_num_tokens: int
    max_running_requests: int
    context_len: int
    avail_after_graph_gb: float


@dataclass(frozen=True)
class StartupReport:
    """What the scheduler hands the HTTP server once started, as 0.5.23's
    ``Scheduler.get_init_info`` and ``memory_usage`` report it: ``startup_time`` (seconds per
    phase, :data:`GRAPH_PHASES` under ``cuda_graph``) and the GB each graph phase captured."""

    startup_time: dict[str, Any]
    graph_memory_gb: dict[str, float]


def _context_len(resolved: Resolved) -> int:
    """``--context-length``, else what the model's config.json gives (``get_context_length``),
    else the family's usual length by the directory's name."""
    if resolved.args.get("context_length"):
        return int(resolved.args["context_length"])
    identity = resolved.model.identity
    if identity is not None and identity.context_length is not None:
        return identity.context_length
    lowered = resolved.model.path.lower()
    if "qwen3.5" in lowered:
        return 262144
    if "llama-3" in lowered or "deepseek" in lowered:
        return 131072
    return 32768


def compute_capacity(resolved: Resolved) -> Capacity:
    """Weights, KV pool and request limits for the resolved config on the simulated GPU."""
    args, model, gpu = resolved.args, resolved.model, resolved.gpu
    tp = int(args.get("tp_size") or 1)
    weights = model.weights_gb / tp
    draft_gb = 0.0
    if resolved.spec.algorithm in ("EAGLE", "EAGLE3", "STANDALONE"):
        draft_gb = max(0.5, model.weights_gb * 0.012) / tp
    avail0 = gpu.memory_gb - 1.6
    static = gpu.memory_gb * float(args["mem_fraction_static"])
    kv_gb = static - weights - draft_gb - 1.0
    kv_bytes = 2.0 if args.get("kv_cache_dtype") in (None, "auto", "bf16", "bfloat16") else 1.0
    per_token = model.layers * 2 * KV_HEAD_BYTES * kv_bytes / tp
    tokens = int(max(0.0, kv_gb) * 1e9 / per_token)
    if args.get("max_total_tokens"):
        tokens = min(tokens, int(args["max_total_tokens"]))
    context = _context_len(resolved)
    requested = args.get("max_running_requests")
    if requested is None:
        requested = min(max(int(tokens / context * 512), 2048), 4096)
    mrr = effective_max_running_requests(model, tp, resolved.spec, int(requested), gpu)
    graph_gb = 0.02 * len(resolved.cuda_graph_bs) * (2 if resolved.spec.algorithm else 1)
    after_graph = gpu.memory_gb - static - graph_gb
    return Capacity(
        weights_gb=weights,
        avail_before_load_gb=avail0,
        avail_after_load_gb=avail0 - weights,
        kv_gb=max(0.0, kv_gb),
        max_total_num_tokens=tokens,
        max_running_requests=mrr,
        context_len=context,
        avail_after_graph_gb=after_graph,
    )


async def _pause(seconds: float, settings: SimSettings) -> float:
    scaled = seconds * settings.startup_scale
    if scaled > 0:
        await asyncio.sleep(scaled)
    return seconds


_ENGINE_FRAMES = [
    (
        "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py",
        3412,
        "run_scheduler_process",
        "scheduler = Scheduler(",
    ),
    (
        "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py",
        402,
        "__init__",
        "self.init_model_worker()",
    ),
    (
        "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/tp_worker.py",
        261,
        "__init__",
        "self.model_runner = ModelRunner(",
    ),
]


def _fatal_startup(error: str, tp: int, extra_frames: list[tuple[str, int, str, str]]) -> None:
    scheduler_exception(_ENGINE_FRAMES + extra_frames, error, tp)
    rank_log(
        "Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 "
        "(SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T` to check for "
        "OOM killer events.",
        0,
        1,
    )
    die(during_startup=True)


@dataclass
class _Progress:
    """What the milestones so far took and left: simulated seconds, free GB, per-phase figures."""

    settings: SimSettings
    tp: int
    avail: float
    total: float = 0.0
    graphs: dict[str, float] = field(default_factory=lambda: dict.fromkeys(GRAPH_PHASES, 0.0))
    memory: dict[str, float] = field(default_factory=lambda: dict.fromkeys(GRAPH_PHASES, 0.0))
    times: dict[str, Any] = field(default_factory=dict)

    async def pause(self, seconds: float) -> None:
        """Wait ``seconds`` (scaled) and count them towards ``scheduler_e2e``."""
        self.total += await _pause(seconds, self.settings)


async def run_startup(
    resolved: Resolved, settings: SimSettings, capacity: Capacity
) -> StartupReport:
    """Log every milestone up to the scheduler's summary line.

    Returns the scheduler's ``startup_time`` as 0.5.23 reports it in /server_info
    (observability/startup_time.py): ``load_weight``, ``kv_cache_allocation``, each CUDA graph
    phase and ``scheduler_e2e``, in simulated seconds (what the real server would take, whatever
    ``SGLANG_SIM_STARTUP_SCALE`` shortens it to); and each graph phase's memory.
    """
    args = resolved.args
    tp = int(args.get("tp_size") or 1)
    progress = _Progress(settings, tp, capacity.avail_before_load_gb)
    progress.times = {"cuda_graph": progress.graphs, "load_weight": 0.0}
    log("Using default HuggingFace chat template with detected content format: string")
    await _init_parallel(progress)
    await _load_weights(progress, resolved, capacity)
    await _allocate_kv_cache(progress, resolved, capacity)
    await _capture_prefill_graphs(progress, resolved)
    await _capture_target_graphs(progress, resolved)
    if resolved.spec.algorithm in ("EAGLE", "EAGLE3", "STANDALONE"):
        await _start_draft_worker(progress, resolved, capacity)
    rank_log(
        f"max_total_num_tokens={capacity.max_total_num_tokens}, "
        f"chunked_prefill_size={args['chunked_prefill_size']}, "
        f"max_prefill_tokens={args.get('max_prefill_tokens')}, "
        f"max_running_requests={capacity.max_running_requests}, "
        f"context_len={capacity.context_len}, available_gpu_mem={progress.avail:.2f} GB",
        0,
        tp,
    )
    progress.times["scheduler_e2e"] = progress.total
    return StartupReport(progress.times, progress.memory)


async def _init_parallel(progress: _Progress) -> None:
    """The distributed initialisation 0.5.23 brackets on every device (distributed/bootstrap.py)."""
    tp, settings = progress.tp, progress.settings
    all_ranks("Init parallel begin.", tp)
    init_s = 0.4 + 0.9 * (tp - 1)
    await progress.pause(init_s)
    all_ranks(f"Init parallel ends. elapsed={init_s:.2f} s", tp)
    if settings.fault.kind == "slow-start":
        # An extra, unscaled delay: a slow disk or a cold page cache.
        await asyncio.sleep(settings.fault.value)
        progress.total += settings.fault.value


async def _load_weights(progress: _Progress, resolved: Resolved, capacity: Capacity) -> None:
    """The target model's checkpoint shards read onto each GPU (``load_weight``)."""
    args, model, tp = resolved.args, resolved.model, progress.tp
    all_ranks(f"Load weight begin. avail mem={progress.avail:.2f} GB", tp)
    shards = max(1, math.ceil(model.weights_gb / 5.0))
    raw_stderr(
        f"Loading safetensors checkpoint shards:   0% Completed | 0/{shards} [00:00<?, ?it/s]\n"
    )
    load_s = capacity.weights_gb / LOAD_GB_PER_S_PER_GPU
    await progress.pause(load_s)
    progress.times["load_weight"] = load_s
    minutes, secs = divmod(int(load_s), 60)
    raw_stderr(
        f"Loading safetensors checkpoint shards: 100% Completed | {shards}/{shards} "
        f"[{minutes:02d}:{secs:02d}<00:00, {load_s / shards:.2f}s/it]\n"
    )
    quant = f"quant={args['quantization']}, " if args.get("quantization") else ""
    progress.avail -= capacity.weights_gb
    all_ranks(
        f"Load weight end. elapsed={load_s:.2f} s, type={model.architecture}, {quant}"
        f"avail mem={progress.avail:.2f} GB, mem usage={capacity.weights_gb:.2f} GB.",
        tp,
    )


def _kv_dtype(args: dict[str, Any]) -> str:
    """The KV pool's torch dtype as the allocation line names it."""
    if args.get("kv_cache_dtype") in (None, "auto"):
        return "torch.bfloat16"
    return "torch.float8_e4m3fn"


async def _allocate_kv_cache(progress: _Progress, resolved: Resolved, capacity: Capacity) -> None:
    """The KV pool (``kv_cache_allocation``); the ``oom`` fault and an empty pool die here."""
    args, tp = resolved.args, progress.tp
    if progress.settings.fault.kind == "oom" or capacity.max_total_num_tokens <= 0:
        await progress.pause(0.5)
        _fatal_startup(
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            f"Current value: mem_fraction_static={args['mem_fraction_static']}",
            tp,
            [
                (
                    "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/"
                    "pool_configurator.py",
                    188,
                    "configure",
                    "raise RuntimeError(",
                )
            ],
        )
    half = capacity.kv_gb / 2
    all_ranks(
        f"KV Cache is allocated. dtype: {_kv_dtype(args)}, "
        f"#tokens: {capacity.max_total_num_tokens}, K size: {half:.2f} GB, V size: {half:.2f} GB",
        tp,
    )
    progress.avail -= capacity.kv_gb
    await progress.pause(1.0)
    progress.times["kv_cache_allocation"] = 1.0
    all_ranks(f"Memory pool end. avail mem={progress.avail:.2f} GB", tp)


async def _capture_prefill_graphs(progress: _Progress, resolved: Resolved) -> None:
    """0.5.23 captures the prefill graphs first (model_runner_components/cuda_graph_setup.py)."""
    prefill_graph = resolved.args.get("cuda_graph_config", {}).get("prefill", {})
    if not resolved.cuda_graph_bs or prefill_graph.get("backend") in (None, "disabled"):
        return
    tp = progress.tp
    tokens = prefill_graph.get("bs") or []
    all_ranks(
        f"Capture target prefill CUDA graph begin. backend={prefill_graph['backend']}, "
        f"num_tokens={tokens}, avail mem={progress.avail:.2f} GB",
        tp,
    )
    seconds = 0.05 * len(tokens)
    await progress.pause(seconds)
    progress.graphs["prefill"] = seconds
    progress.memory["prefill"] = 0.01 * len(tokens)
    progress.avail -= 0.01 * len(tokens)
    all_ranks(
        f"Capture target prefill CUDA graph end. elapsed={seconds:.2f} s, "
        f"mem usage={0.01 * len(tokens):.2f} GB, avail mem={progress.avail:.2f} GB.",
        tp,
    )


async def _capture_target_graphs(progress: _Progress, resolved: Resolved) -> None:
    """The target's decode (or, under speculation, verify) graphs; the ``cuda-graph`` fault."""
    bs, spec, tp = resolved.cuda_graph_bs, resolved.spec, progress.tp
    if not bs:
        return
    phase = "target verify" if spec.algorithm else "target decode"
    per_req = spec.draft_tokens if spec.algorithm else 1
    all_ranks(
        f"Capture {phase} CUDA graph begin. backend=full, num_tokens_per_req={per_req}, "
        f"avail mem={progress.avail:.2f} GB",
        tp,
    )
    if progress.settings.fault.kind == "cuda-graph":
        await progress.pause(2.0)
        _fatal_startup(
            "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate "
            f"2.00 GiB. GPU 0 has a total capacity of {resolved.gpu.memory_gb:.2f} GiB of "
            "which 1.12 GiB is free.\n" + CUDA_GRAPH_SOLUTIONS,
            tp,
            [
                (
                    "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/"
                    "cuda_graph_runner.py",
                    512,
                    "__init__",
                    "raise Exception(",
                )
            ],
        )
    capture = GRAPH_CAPTURE_S_PER_BS * len(bs) * (1.3 if spec.algorithm else 1.0)
    await progress.pause(capture)
    progress.graphs["target_verify" if spec.algorithm else "decode"] = capture
    progress.memory["target_verify" if spec.algorithm else "decode"] = 0.02 * len(bs)
    progress.avail -= 0.02 * len(bs)
    all_ranks(
        f"Capture {phase} CUDA graph end. bs={bs}, elapsed={capture:.2f} s, "
        f"mem usage={0.02 * len(bs):.2f} GB, avail mem={progress.avail:.2f} GB.",
        tp,
    )


async def _start_draft_worker(progress: _Progress, resolved: Resolved, capacity: Capacity) -> None:
    """The EAGLE-family draft model: its weights, its KV pool, then its graphs."""
    model, tp = resolved.model, progress.tp
    draft_gb = max(0.5, model.weights_gb * 0.012) / tp
    all_ranks(f"Load weight begin. avail mem={progress.avail:.2f} GB", tp)
    load = draft_gb / LOAD_GB_PER_S_PER_GPU + 1.0
    await progress.pause(load)
    progress.avail -= draft_gb
    draft_type = model.architecture.replace("For", "MTPFor", 1)
    all_ranks(
        f"Load weight end. elapsed={load:.2f} s, type={draft_type}, "
        f"avail mem={progress.avail:.2f} GB, mem usage={draft_gb:.2f} GB.",
        tp,
    )
    half = capacity.kv_gb / 2
    all_ranks(
        f"KV Cache is allocated. dtype: {_kv_dtype(resolved.args)}, "
        f"#tokens: {capacity.max_total_num_tokens}, "
        f"K size: {half / model.layers:.2f} GB, V size: {half / model.layers:.2f} GB",
        tp,
    )
    if resolved.cuda_graph_bs:
        await _capture_draft_graphs(progress, resolved)


async def _capture_draft_graphs(progress: _Progress, resolved: Resolved) -> None:
    """The draft worker's graphs, logged by rank 0 only (log_info_on_rank0); the draft decode
    graph exists only with more than one step (eagle_worker_v2.py)."""
    bs, spec, tp = resolved.cuda_graph_bs, resolved.spec, progress.tp
    phases = [
        ("draft decode", spec.topk, DRAFT_GRAPH_CAPTURE_S_PER_BS * max(1, spec.num_steps) / 2),
        ("draft extend", spec.draft_tokens, GRAPH_CAPTURE_S_PER_BS * 0.8),
    ]
    for phase, per_req, factor in phases:
        if phase == "draft decode" and spec.num_steps <= 1:
            continue
        rank_log(
            f"Capture {phase} CUDA graph begin. backend=full, num_tokens_per_req={per_req}, "
            f"bs={bs}, avail mem={progress.avail:.2f} GB",
            0,
            tp,
        )
        seconds = factor * len(bs)
        await progress.pause(seconds)
        progress.graphs[phase.replace(" ", "_")] = seconds
        progress.memory[phase.replace(" ", "_")] = 0.01 * len(bs)
        progress.avail -= 0.01 * len(bs)
        rank_log(
            f"Capture {phase} CUDA graph end. elapsed={seconds:.2f} s, "
            f"mem usage={0.01 * len(bs):.2f} GB, avail mem={progress.avail:.2f} GB.",
            0,
            tp,
        )
