"""The startup messages SGLang 0.5.23 prints, as patterns taken from its source, and who prints them.

Each entry: a regex for the message (after the ``[time TPn]`` prefix), which ranks print it
("all": every TP rank's scheduler; "rank0": rank 0 only, ``log_info_on_rank0`` or a
``tp_rank == 0`` guard; "main": the launcher/tokenizer process, no prefix), and the source
file in the 0.5.23 package. Lines of the simulator that match no pattern, or come from the wrong
ranks, are format or placement differences. Used by the tests and by
benchmarks/conformance_agreement.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NUM = r"-?\d+(?:\.\d+)?"


@dataclass(frozen=True)
class Format:
    pattern: re.Pattern[str]
    ranks: str
    source: str


def _f(regex: str, ranks: str, source: str) -> Format:
    return Format(re.compile(regex + r"$"), ranks, source)


REAL_FORMATS: tuple[Format, ...] = (
    _f(
        r"Using default HuggingFace chat template with detected content format: \w+",
        "main",
        "parser/template_manager.py",
    ),
    _f(r"Init parallel begin\.", "all", "distributed/bootstrap.py"),
    _f(rf"Init parallel ends\. elapsed={NUM} s", "all", "distributed/bootstrap.py"),
    _f(rf"Load weight begin\. avail mem={NUM} GB", "all", "model_executor/model_runner.py"),
    _f(
        rf"Load weight end\. elapsed={NUM} s, type=\w+, (?:quant=[^,]+(?:, \w+=[^,]+)*, )?"
        rf"avail mem={NUM} GB, mem usage={NUM} GB\.",
        "all",
        "model_executor/model_runner.py",
    ),
    _f(
        rf"KV Cache is allocated\. dtype: torch\.\w+, #tokens: \d+, K size: {NUM} GB, "
        rf"V size: {NUM} GB",
        "all",
        "mem_cache/memory_pool.py",
    ),
    _f(rf"Memory pool end\. avail mem={NUM} GB", "all", "mem_cache/kv_cache_configurator.py"),
    _f(
        rf"Capture target prefill CUDA graph begin\. backend=\w+, num_tokens=\[[\d, ]*\], "
        rf"avail mem={NUM} GB",
        "all",
        "model_executor/model_runner_components/cuda_graph_setup.py",
    ),
    _f(
        rf"Capture target prefill CUDA graph end\. elapsed={NUM} s, mem usage={NUM} GB, "
        rf"avail mem={NUM} GB\.",
        "all",
        "model_executor/model_runner_components/cuda_graph_setup.py",
    ),
    _f(
        rf"Capture target (?:decode|verify) CUDA graph begin\. backend=\w+, "
        rf"num_tokens_per_req=\d+, avail mem={NUM} GB",
        "all",
        "model_executor/model_runner_components/cuda_graph_setup.py",
    ),
    _f(
        rf"Capture target (?:decode|verify) CUDA graph end\. bs=\[[\d, ]*\], elapsed={NUM} s, "
        rf"mem usage={NUM} GB, avail mem={NUM} GB\.",
        "all",
        "model_executor/model_runner_components/cuda_graph_setup.py",
    ),
    _f(
        rf"Capture draft (?:decode|extend) CUDA graph begin\. backend=\w+, "
        rf"num_tokens_per_req=\d+, bs=\[[\d, ]*\], avail mem={NUM} GB",
        "rank0",
        "speculative/eagle_worker_v2.py",
    ),
    _f(
        rf"Capture draft (?:decode|extend) CUDA graph end\. elapsed={NUM} s, "
        rf"mem usage={NUM} GB, avail mem={NUM} GB\.",
        "rank0",
        "speculative/eagle_worker_v2.py",
    ),
    _f(
        rf"max_total_num_tokens=\d+, chunked_prefill_size=-?\d+, max_prefill_tokens=\d+, "
        rf"max_running_requests=\d+, context_len=\d+, available_gpu_mem={NUM} GB",
        "rank0",
        "managers/scheduler.py",
    ),
    _f(r'INFO:     \S+ - "[A-Z]+ \S+ HTTP/1\.1" \d{3} .*', "main", "uvicorn access log"),
    _f(r"INFO:     Started server process \[\d+\]", "main", "uvicorn"),
    _f(r"INFO:     Waiting for application startup\.", "main", "uvicorn"),
    _f(r"INFO:     Application startup complete\.", "main", "uvicorn"),
    _f(r"INFO:     Uvicorn running on http://\S+ \(Press CTRL\+C to quit\)", "main", "uvicorn"),
    _f(
        rf"Prefill batch, #new-seq: \d+, #new-token: \d+, #cached-token: \d+, "
        rf"token usage: {NUM}, #running-req: \d+, #queue-req: \d+, #pending-token: \d+, "
        rf"cuda graph: (?:True|False), input throughput \(token/s\): {NUM}",
        "rank0",
        "managers/scheduler_components/metrics_reporter.py",
    ),
    _f(
        rf"Decode batch, #running-req: \d+, #token: \d+, token usage: {NUM}, "
        rf"(?:accept len: {NUM}, accept rate: {NUM}, )?cuda graph: (?:True|False), "
        rf"gen throughput \(token/s\): {NUM}, #queue-req: \d+",
        "rank0",
        "managers/scheduler_components/metrics_reporter.py",
    ),
    _f(r"The server is fired up and ready to roll!", "main", "entrypoints/http_server.py"),
)

LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?( TP(\d+))?\] (.*)$")


def check_startup(stderr: str, tp: int, until: str = "server_args=") -> tuple[int, list[str]]:
    """Startup lines (after the one starting with ``until``, up to the ready line) that match a
    real format and come from the right ranks.

    Returns (matching lines, differences). A message that rank 0 alone prints but the
    simulator prints on every rank counts once per extra rank.
    """
    started = False
    seen: dict[str, set[int | None]] = {}
    good = 0
    misses: list[str] = []
    for raw in stderr.splitlines():
        match = LINE.match(raw)
        if not match:
            continue
        rank = int(match.group(2)) if match.group(2) else None
        message = match.group(3)
        if not started:
            started = message.startswith(until)
            continue
        fmt = next((f for f in REAL_FORMATS if f.pattern.match(message)), None)
        if fmt is None:
            misses.append(f"no 0.5.23 format: {message[:110]}")
            continue
        if fmt.ranks == "main" and rank is not None:
            misses.append(f"printed by a rank, real by the main process: {message[:80]}")
        elif fmt.ranks == "rank0" and rank not in (0, None):
            misses.append(f"printed by TP{rank}, real by rank 0 only: {message[:80]}")
        elif fmt.ranks == "all" and tp > 1 and rank is None:
            misses.append(f"printed without a rank, real by every rank: {message[:80]}")
        else:
            good += 1
            seen.setdefault(fmt.source, set()).add(rank)
        if message.startswith("The server is fired up"):
            break
    return good, misses
