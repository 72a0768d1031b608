"""A run's figures, named and defined as in bench_serving's results file (sglang-facts.md
section 6); docs/metrics.md has the table, and how AIPerf and vLLM's ``bench serve`` differ.

Why token counts come only from the server (the final ``usage`` chunk, or ``meta_info.
completion_tokens`` on ``/generate``): a chunk may carry several tokens (speculative decoding
hands out 2-4 at once), so counting chunks would under-count exactly the configs being compared.
Definitions, as bench_serving's:

- ``output_throughput`` = completion tokens of completed requests / ``duration``;
  ``total_throughput`` adds their prompt tokens; ``request_throughput`` = completed / duration.
  Prompt tokens are the server's count (a chat template's tokens included), not the dataset's.
- TTFT: request start to the first chunk with generated text. TPOT: (E2E - TTFT) /
  (completion tokens - 1), for requests with more than one token. E2E: request start to the
  end of the stream.
- ITL (``*_itl_ms``) is per token, as bench_serving's ``sglang`` backend computes it: each
  chunk after the first spreads its gap (since the previous chunk) over the tokens it carried,
  one value per token. The count per chunk is the change of the server's running count
  (``usage`` on every chunk with ``continuous_usage_stats``, asked for under speculative
  decoding; ``meta_info.completion_tokens`` on ``/generate``); otherwise the gaps are spread
  evenly over the final count (``itl_token_counts`` says which). Under speculative decoding
  the gap between chunks is 2-4x the per-token figure; it is kept as ``*_chunk_gap_ms``, what
  a streaming reader waits between two pieces of text.
- Request start is the moment just before the request's bytes are written to its (already
  open, pooled) connection. Why not when the client decided to send it, as bench_serving does:
  when 256 requests start together, the client spends milliseconds serialising the ones ahead
  of the last; that is the client's queue, not the server's latency, and it would make TTFT
  depend on the client's CPU.
- ``server_metrics``: the server's own Prometheus figures for the run when it exposes
  ``/metrics`` (flat names, see :mod:`.prometheus`), else empty.
- ``cache_hit_rate``: cached prompt tokens / prompt tokens of the completed requests whose
  server reported cached tokens (bench_serving's ``--cache-report`` hit rate, as a fraction);
  ``server_cache_hit_rate`` the same from the server's own counters over the run.
- Latencies are in milliseconds; percentiles interpolate linearly (numpy's default).

``METRICS_VERSION`` numbers these definitions; baselines store it, and a baseline of another
version is not compared (version 1 had ``*_itl_ms`` as the gap between chunks).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "METRICS_VERSION",
    "BenchResult",
    "RequestRecord",
    "cache_figures",
    "compute_metrics",
    "per_turn",
    "percentile",
    "server_cache_hit_rate",
]

MAX_ERROR_SAMPLES = 10
#: The version of the definitions above; bump it when a figure's meaning changes.
METRICS_VERSION = 2


@dataclass
class RequestRecord:
    """One measured request. ``error`` empty means it completed; ``reason`` classifies a failure."""

    start: float = 0.0
    ttft: float | None = None
    #: per-token inter-token latencies, s (each chunk's gap spread over its tokens)
    itls: list[float] = field(default_factory=list)
    #: gaps between consecutive chunks with text, s
    chunk_gaps: list[float] = field(default_factory=list)
    #: where the per-chunk token counts came from: "server" or "even spread"
    itl_counts: str = "server"
    e2e: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    accept_length: float | None = None
    verify_ct: int | None = None
    reason: str = ""
    error: str = ""
    #: What was generated (chat: the content deltas; /generate: the cumulative text), and on
    #: /generate the token ids: what quality evals read (:mod:`pytest_sglang.quality`).
    text: str = ""
    output_ids: list[int] = field(default_factory=list)
    #: The longest silence between two events of the stream (s), and when it began
    #: (``perf_counter``): what the stall check reads, whatever the ITL definitions are.
    longest_gap: float = 0.0
    longest_gap_at: float = 0.0
    #: When the last event arrived (``perf_counter``; 0.0 before the first).
    last_event: float = 0.0
    #: Prompt tokens the server found in its prefix cache (``meta_info.cached_tokens`` on
    #: /generate, ``usage.prompt_tokens_details.cached_tokens`` on the OpenAI APIs); None when
    #: the server did not say (the OpenAI APIs without ``--enable-cache-report``).
    cached_tokens: int | None = None
    #: The request's session (a conversation, or the request alone) and its turn in it (0-based).
    session: int = 0
    turn: int = 0

    @property
    def ok(self) -> bool:
        return not self.reason

    def arrived(self, now: float) -> None:
        """An event of the stream arrived at ``now``: keeps the longest gap between events."""
        if self.last_event and now - self.last_event > self.longest_gap:
            self.longest_gap, self.longest_gap_at = now - self.last_event, self.last_event
        self.last_event = now

    def fail(self, reason: str, error: str) -> RequestRecord:
        """Mark as failed; the first failure wins (it is the cause, later ones are effects)."""
        if not self.reason:
            self.reason = reason
            self.error = error
        return self


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation, like ``numpy.percentile``."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass
class BenchResult:
    """Every figure of one run; :meth:`as_dict` gives the flat bench_serving-style mapping."""

    duration: float
    completed: int
    failed: int
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float
    input_throughput: float
    output_throughput: float
    total_throughput: float
    concurrency: float
    latencies: dict[str, float | None]
    accept_length: float | None
    accept_length_source: str
    failures: dict[str, int]
    errors: list[str]
    server_metrics: dict[str, float] = field(default_factory=dict)
    itl_token_counts: str = "server"
    #: Cached prompt tokens of the completed requests that report them, and their share of
    #: those requests' prompt tokens (None: no request reported its cached tokens).
    total_cached_tokens: int | None = None
    cache_hit_rate: float | None = None
    #: The server's own share for the run, from /metrics: cached / prompt token counters.
    server_cache_hit_rate: float | None = None
    #: Per turn of multi-turn conversations (empty for single requests): see :func:`per_turn`.
    per_turn: list[dict[str, Any]] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        # mean_ttft_ms etc. read like bench_serving's attributes
        latencies = self.__dict__.get("latencies", {})
        if name in latencies:
            return latencies[name]
        raise AttributeError(name)

    def as_dict(self) -> dict[str, Any]:
        """Every figure by its bench_serving name (what baselines store and reports show)."""
        out: dict[str, Any] = {
            "duration": self.duration,
            "completed": self.completed,
            "failed": self.failed,
            "total_input_tokens": self.total_input_tokens,
            "total_output_tokens": self.total_output_tokens,
            "request_throughput": self.request_throughput,
            "input_throughput": self.input_throughput,
            "output_throughput": self.output_throughput,
            "total_throughput": self.total_throughput,
            "concurrency": self.concurrency,
        }
        out.update(self.latencies)
        out["accept_length"] = self.accept_length
        out["accept_length_source"] = self.accept_length_source
        out["failures"] = dict(self.failures)
        out["errors"] = list(self.errors)
        out["server_metrics"] = dict(self.server_metrics)
        out["itl_token_counts"] = self.itl_token_counts
        out["total_cached_tokens"] = self.total_cached_tokens
        out["cache_hit_rate"] = self.cache_hit_rate
        out["server_cache_hit_rate"] = self.server_cache_hit_rate
        if self.per_turn:
            out["per_turn"] = [dict(row) for row in self.per_turn]
        out["metrics_version"] = METRICS_VERSION
        return out


def _summary(prefix: str, values_s: Sequence[float]) -> dict[str, float | None]:
    ms = [v * 1000.0 for v in values_s]
    if not ms:
        return {f"{stat}_{prefix}_ms": None for stat in ("mean", "median", "p90", "p99")}
    return {
        f"mean_{prefix}_ms": sum(ms) / len(ms),
        f"median_{prefix}_ms": percentile(ms, 50),
        f"p90_{prefix}_ms": percentile(ms, 90),
        f"p99_{prefix}_ms": percentile(ms, 99),
    }


def request_accept_length(records: Sequence[RequestRecord]) -> float | None:
    """Accept length over the run from per-request ``/generate`` meta_info.

    Exact when the server reports ``spec_verify_ct`` (sum of tokens / sum of verify steps),
    else the token-weighted mean of each request's ``spec_accept_length``.
    """
    done = [r for r in records if r.ok and r.accept_length is not None]
    if not done:
        return None
    if all(r.verify_ct for r in done):
        verify = sum(r.verify_ct or 0 for r in done)
        return sum(r.completion_tokens for r in done) / verify
    weight = sum(r.completion_tokens for r in done)
    if weight <= 0:
        return sum(r.accept_length or 0.0 for r in done) / len(done)
    return sum((r.accept_length or 0.0) * r.completion_tokens for r in done) / weight


def cache_figures(records: Sequence[RequestRecord]) -> tuple[int | None, float | None]:
    """(cached prompt tokens, cache hit rate) of the completed requests that report their
    cached tokens: sum cached / sum prompt tokens, as bench_serving's ``--cache-report``;
    (None, None) when none does."""
    told = [r for r in records if r.ok and r.cached_tokens is not None]
    if not told:
        return None, None
    cached = sum(r.cached_tokens or 0 for r in told)
    prompt = sum(r.prompt_tokens for r in told)
    return cached, (cached / prompt if prompt > 0 else 0.0)


def per_turn(records: Sequence[RequestRecord]) -> list[dict[str, Any]]:
    """One row per turn (1-based) of multi-turn conversations: requests, completed, mean
    prompt tokens, TTFT (median, p99 ms), mean E2E ms and the cache figures of that turn over
    every conversation. Empty when every request is a session of its own."""
    if not any(r.turn for r in records):
        return []
    rows: list[dict[str, Any]] = []
    for turn in sorted({r.turn for r in records}):
        mine = [r for r in records if r.turn == turn]
        ok = [r for r in mine if r.ok]
        ttfts = [r.ttft * 1000.0 for r in ok if r.ttft is not None]
        e2es = [r.e2e * 1000.0 for r in ok if r.e2e is not None]
        cached, rate = cache_figures(ok)
        rows.append(
            {
                "turn": turn + 1,
                "requests": len(mine),
                "completed": len(ok),
                "mean_prompt_tokens": sum(r.prompt_tokens for r in ok) / len(ok) if ok else None,
                "median_ttft_ms": percentile(ttfts, 50) if ttfts else None,
                "p99_ttft_ms": percentile(ttfts, 99) if ttfts else None,
                "mean_e2e_latency_ms": sum(e2es) / len(e2es) if e2es else None,
                "total_cached_tokens": cached,
                "cache_hit_rate": rate,
            }
        )
    return rows


def server_cache_hit_rate(server_metrics: dict[str, float]) -> float | None:
    """The server's prefix-cache hit rate over the run: ``sglang:cached_tokens_total`` over
    ``sglang:prompt_tokens_total``, both as deltas of the run (a server that hit nothing has
    no cached-tokens series yet: 0). None without the prompt counter."""
    prompt = server_metrics.get("prompt_tokens_delta")
    if not prompt or prompt <= 0:
        return None
    return server_metrics.get("cached_tokens_delta", 0.0) / prompt


def compute_metrics(
    records: Sequence[RequestRecord],
    duration: float,
    *,
    server_accept_length: float | None = None,
) -> BenchResult:
    """The run's figures from its requests; ``duration`` is the measured wall time in seconds.

    ``server_accept_length`` is the /server_info figure, used when the requests themselves do
    not report one (the OpenAI endpoints do not).
    """
    ok = [r for r in records if r.ok]
    bad = [r for r in records if not r.ok]
    duration = max(duration, 1e-9)
    input_tokens = sum(r.prompt_tokens for r in ok)
    output_tokens = sum(r.completion_tokens for r in ok)
    ttfts = [r.ttft for r in ok if r.ttft is not None]
    itls = [itl for r in ok for itl in r.itls]
    gaps = [gap for r in ok for gap in r.chunk_gaps]
    e2es = [r.e2e for r in ok if r.e2e is not None]
    tpots = [
        (r.e2e - r.ttft) / (r.completion_tokens - 1)
        for r in ok
        if r.e2e is not None and r.ttft is not None and r.completion_tokens > 1
    ]
    latencies: dict[str, float | None] = {}
    latencies.update(_summary("ttft", ttfts))
    latencies.update(_summary("itl", itls))
    latencies.update(_summary("chunk_gap", gaps))
    latencies.update(_summary("tpot", tpots))
    latencies.update(_summary("e2e_latency", e2es))
    cached, hit_rate = cache_figures(ok)
    accept = request_accept_length(records)
    source = "generate meta_info" if accept is not None else ""
    if accept is None and server_accept_length is not None:
        accept, source = server_accept_length, "server_info"
    return BenchResult(
        duration=duration,
        completed=len(ok),
        failed=len(bad),
        total_input_tokens=input_tokens,
        total_output_tokens=output_tokens,
        request_throughput=len(ok) / duration,
        input_throughput=input_tokens / duration,
        output_throughput=output_tokens / duration,
        total_throughput=(input_tokens + output_tokens) / duration,
        concurrency=sum(e2es) / duration,
        latencies=latencies,
        accept_length=accept,
        accept_length_source=source,
        failures=dict(Counter(r.reason for r in bad)),
        errors=[r.error for r in bad][:MAX_ERROR_SAMPLES],
        itl_token_counts=_itl_token_counts(ok),
        total_cached_tokens=cached,
        cache_hit_rate=hit_rate,
        per_turn=per_turn(records),
    )


def _itl_token_counts(records: Sequence[RequestRecord]) -> str:
    """``server`` (every chunk's count streamed), ``even spread`` or ``mixed``."""
    kinds = {r.itl_counts for r in records if r.chunk_gaps}
    return kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "server")
