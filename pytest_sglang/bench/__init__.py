"""The benchmark engine: workloads, an asyncio load generator and bench_serving-style metrics.

Why our own load generator instead of shelling out to ``bench_serving``: it needs no SGLang
install or tokenizer on the client side, it runs in-process inside a pytest test with hard
bounds (a request timeout and a run deadline), and it turns every bad response into a counted
failure with a reason instead of a crash. Metric names follow bench_serving's results file so
the numbers can be compared with it.

- :mod:`.workload` (what to send, incl. concurrency sweeps), :mod:`.datasets` (prompts that share
  prefixes: shared-prefix groups, conversations, traces, long contexts), :mod:`.identity` (a
  workload's canonical form and digest: what a baseline is keyed by), :mod:`.slo` (latency
  targets and goodput);
- :mod:`.loadgen` (sending it, timing each stream), :mod:`.route` (where the load runs from:
  the GPU host, here straight to the server, or through the SSH forward), :mod:`.agent` and
  :mod:`.remote` (the generator on the GPU host, over SSH), :mod:`.stalls` (was a run disturbed
  by the path?);
- :mod:`.metrics` (the run's figures), :mod:`.prometheus` (the server's own ``/metrics`` figures
  for the run), :mod:`.parts` (a topology's figures per server: the router's counts and each
  server's own), :mod:`.search` (the highest sustainable load under an SLO), :mod:`.spec_text`
  (speculative decoding measured on the text it will meet);
- :mod:`.pytest_plugin` (the ``sglang_bench`` fixture and the terminal table).
"""

from __future__ import annotations

from .loadgen import run_workload, run_workload_async
from .metrics import BenchResult, RequestRecord, compute_metrics
from .workload import (
    ConversationPrompts,
    JsonlPrompts,
    LongContextPrompts,
    MooncakeTrace,
    RandomPrompts,
    SharedPrefixPrompts,
    ShareGPTPrompts,
    Workload,
)

__all__ = [
    "BenchResult",
    "ConversationPrompts",
    "JsonlPrompts",
    "LongContextPrompts",
    "MooncakeTrace",
    "RandomPrompts",
    "RequestRecord",
    "ShareGPTPrompts",
    "SharedPrefixPrompts",
    "Workload",
    "compute_metrics",
    "run_workload",
    "run_workload_async",
]
