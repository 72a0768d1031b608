"""The load generator: asyncio + aiohttp streams against SGLang's OpenAI and /generate endpoints.

Why it never raises for a bad response: a benchmark of a config that half-works is a result
(``failed=12, failures={"HTTP 503": 12}``), not a crash. Every request has a timeout, the run
has a deadline after which whatever is still in flight is cancelled and counted, and every
stream is parsed defensively (HTTP errors, error events, malformed JSON, a stream cut before
``[DONE]``, a missing usage chunk). Timing uses ``time.perf_counter`` at chunk arrival, from
just before the request's bytes are written (an aiohttp trace hook), on a connection pool
opened before the measured requests (:func:`warm_pool`).

Why aiohttp and not httpx, measured (benchmarks/client_ceiling.py on a shared 2-core machine,
simulator at full speed, 256 streams x 128 tokens, one SSE chunk per token, best of 3): this
module streamed 26-38k tok/s at 25-40 client CPU microseconds per token; a minimal httpx 0.28
client (no per-request bookkeeping at all) 12-13k tok/s at 73-114 us/token. With 256 streams
that all receive a chunk at the same instant (a paced server, as in a real decode step), httpx
needed 590-945 us/token against 77-104 us here: its connection pool does not scale to hundreds
of concurrent streams. AIPerf 0.13 (aiohttp inside, plus a multi-process records pipeline)
streamed 9-14k tok/s at 98-130 us/token on the same runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import aiohttp

from .metrics import BenchResult, RequestRecord, compute_metrics, server_cache_hit_rate
from .prometheus import Sample, parse_prometheus, run_delta

if TYPE_CHECKING:  # a type only: on a GPU host this module runs without the package around it
    from .workload import Workload

__all__ = [
    "FlushFailed",
    "RawRun",
    "complete_prompts",
    "fetch_prometheus",
    "fetch_server_accept_length",
    "finish",
    "flush_cache",
    "generate",
    "run_workload",
    "run_workload_async",
    "warm_pool",
]

MAX_EVENT_BYTES = 16 * 1024 * 1024
INFO_TIMEOUT_S = 5.0
#: Connections opened ahead of the measured phase (one per request that can be in flight).
MAX_WARM_CONNECTIONS = 1024
JSON_HEADERS = {"Content-Type": "application/json"}


#: One earlier turn of a conversation: (what was asked, what the server replied).
Turn = tuple[str, str]
#: Between a reply and the next question in a conversation sent as text.
TURN_SEPARATOR = "\n\n"


def _history_text(history: Sequence[Turn], prompt: str) -> str:
    """A conversation as one text: each question followed by its reply as it streamed (the
    tokens the server has just seen, in order), then the new question.

    A reply continues its question's text; where neither side has whitespace at the seam (a
    reply whose first token carries no leading space), one space keeps the question's last
    word and the reply's first apart, as they were two tokens when the server produced them.
    """
    parts: list[str] = []
    for ask, reply in history:
        seam = " " if ask and reply and not (ask[-1].isspace() or reply[0].isspace()) else ""
        parts.append(f"{ask}{seam}{reply}{TURN_SEPARATOR}")
    return "".join(parts) + prompt


def _body(
    workload: Workload,
    prompt: str,
    model: str,
    output_tokens: int,
    per_chunk_usage: bool = True,
    history: Sequence[Turn] = (),
) -> tuple[str, dict[str, Any]]:
    if workload.api == "generate":
        return "/generate", {
            "text": _history_text(history, prompt),
            "sampling_params": {
                "max_new_tokens": output_tokens,
                "temperature": workload.temperature,
                "ignore_eos": workload.ignore_eos,
            },
            "stream": True,
        }
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": output_tokens,
        "temperature": workload.temperature,
        "ignore_eos": workload.ignore_eos,
        "stream": True,
        # usage on every chunk tells how many tokens each carried (per-token ITL)
        "stream_options": {"include_usage": True, "continuous_usage_stats": per_chunk_usage},
    }
    if workload.api == "completions":
        return "/v1/completions", {**body, "prompt": _history_text(history, prompt)}
    messages = [
        message
        for ask, reply in history
        for message in ({"role": "user", "content": ask}, {"role": "assistant", "content": reply})
    ]
    messages.append({"role": "user", "content": prompt})
    return "/v1/chat/completions", {**body, "messages": messages}


def _cached_tokens(counts: dict[str, Any]) -> int | None:
    """Cached prompt tokens from ``meta_info`` (``cached_tokens``) or an OpenAI ``usage``
    (``prompt_tokens_details.cached_tokens``, null without ``--enable-cache-report``)."""
    value = counts.get("cached_tokens")
    if value is None:
        details = counts.get("prompt_tokens_details")
        value = details.get("cached_tokens") if isinstance(details, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _auth_headers(api_key: str | None) -> dict[str, str]:
    """What a server started with ``--api-key`` wants on every request (SGLang answers 401
    without it, except on /health and /metrics)."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


async def _events(response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """The ``data:`` payloads of an SSE stream, whatever the chunking of the TCP reads."""
    buffer = b""
    async for piece in response.content.iter_any():
        buffer += piece
        while True:
            cut = buffer.find(b"\n\n")
            if cut < 0:
                break
            event, buffer = buffer[:cut], buffer[cut + 2 :]
            for line in event.splitlines():
                if line.startswith(b"data:"):
                    yield line[5:].strip()
        if len(buffer) > MAX_EVENT_BYTES:
            raise ValueError(f"an SSE event exceeds {MAX_EVENT_BYTES} bytes")
    rest = buffer.strip()
    if rest.startswith(b"data:"):
        yield rest[5:].strip()


def _error_text(payload: Any) -> str | None:
    if isinstance(payload, dict) and "error" in payload:
        err = payload["error"]
        message = err.get("message") if isinstance(err, dict) else err
        return str(message)[:200]
    return None


class _Stream:
    """Parses one response's events into a :class:`RequestRecord`.

    Per-token ITL needs each chunk's token count: the change of the running count the server
    streams (``usage.completion_tokens`` on every OpenAI chunk with ``continuous_usage_stats``,
    ``meta_info.completion_tokens`` on ``/generate``). A server that gives only the final count
    gets the chunk gaps spread evenly over it at the end (:meth:`close`).
    """

    def __init__(self, record: RequestRecord, api: str) -> None:
        self.record = record
        self.api = api
        self.last: float | None = None
        self.done = False
        self.usage_seen = False
        self.finish: str | None = None
        self.text_len = 0
        #: the server's running completion-token count after the previous chunk
        self.counted = 0
        #: chunk gaps whose token count the server did not give
        self.uncounted: list[float] = []

    def text_arrived(self, now: float, tokens: int | None) -> None:
        """A chunk with generated text; ``tokens`` it carried (None: the server did not say)."""
        r = self.record
        if r.ttft is None:
            r.ttft = now - r.start
        elif self.last is not None:
            if tokens == 0:  # text but no new token (bench_serving skips such chunks too)
                return
            gap = now - self.last
            r.chunk_gaps.append(gap)
            if tokens == 1:
                r.itls.append(gap)
            elif tokens is None:
                self.uncounted.append(gap)
            else:
                r.itls.extend([gap / tokens] * tokens)
        self.last = now

    def _count(self, counts: dict[str, Any], total: int) -> int:
        """Record the server's running counts; the tokens this chunk added to them."""
        self.usage_seen = True
        self.record.prompt_tokens = counts.get("prompt_tokens") or 0
        self.record.completion_tokens = total
        cached = _cached_tokens(counts)
        if cached is not None:
            self.record.cached_tokens = cached
        new, self.counted = total - self.counted, total
        return new

    def feed(self, data: bytes, now: float) -> None:
        if data == b"[DONE]":
            self.done = True
            return
        payload = json.loads(data)
        problem = _error_text(payload)
        if problem is not None:
            raise _Failed("server error", f"server error event: {problem}")
        if not isinstance(payload, dict):
            raise ValueError(f"event is not a JSON object: {data[:80]!r}")
        if self.api == "generate":
            self._generate(payload, now)
        else:
            self._openai(payload, now)

    def _openai(self, payload: dict[str, Any], now: float) -> None:
        usage = payload.get("usage")
        tokens = None
        if usage:  # on every chunk with continuous_usage_stats, else only on the last
            total = usage.get("completion_tokens")
            if isinstance(total, int):
                tokens = self._count(usage, total)
        for choice in payload.get("choices") or []:
            delta = choice.get("delta") or {}
            if choice.get("text") or delta.get("content") or delta.get("reasoning_content"):
                self.text_arrived(now, tokens)
            if choice.get("text") or delta.get("content"):
                self.record.text += str(choice.get("text") or delta["content"])
            if choice.get("finish_reason"):
                self.finish = str(choice["finish_reason"])

    def _generate(self, payload: dict[str, Any], now: float) -> None:
        if "output_ids" in payload:
            arrived = bool(payload["output_ids"])
            if isinstance(payload["output_ids"], list):  # the new ids of this chunk
                self.record.output_ids.extend(payload["output_ids"])
        else:  # older servers: only the cumulative text tells that tokens arrived
            arrived = len(str(payload.get("text") or "")) > self.text_len
        self.record.text = str(payload.get("text") or "")
        self.text_len = len(self.record.text)
        meta = payload.get("meta_info")
        if not isinstance(meta, dict):
            raise ValueError("a /generate event has no meta_info")
        total = meta.get("completion_tokens")
        tokens = self._count(meta, total) if isinstance(total, int) else None
        if arrived:
            self.text_arrived(now, tokens)
        reason = meta.get("finish_reason")
        if isinstance(reason, dict):
            self.finish = str(reason.get("type"))
            if meta.get("spec_accept_length") is not None:
                self.record.accept_length = float(meta["spec_accept_length"])
                verify = meta.get("spec_verify_ct")
                self.record.verify_ct = int(verify) if verify else None

    def close(self, now: float) -> None:
        r = self.record
        if not self.done:
            raise _Failed("truncated stream", "the stream ended before data: [DONE]")
        if self.finish == "abort":
            raise _Failed("aborted", "the server aborted the request (finish_reason abort)")
        if not self.usage_seen:
            raise _Failed(
                "no usage",
                "no token counts in the stream (usage chunk / meta_info.completion_tokens)",
            )
        r.e2e = now - r.start
        if self.uncounted:
            # no per-chunk counts: the tokens after the first chunk spread evenly over the gaps
            per_chunk = (r.completion_tokens - 1) / len(self.uncounted)
            r.itls.extend(g / per_chunk if per_chunk > 0 else g for g in self.uncounted)
            r.itl_counts = "even spread"


class _Failed(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class _SendClock:
    """``trace_request_ctx`` of one request: restamps ``record.start`` as its bytes go out."""

    __slots__ = ("record", "written")

    def __init__(self, record: RequestRecord) -> None:
        self.record = record
        self.written = False


async def _on_chunk_sent(
    session: aiohttp.ClientSession,
    context: SimpleNamespace,
    params: aiohttp.TraceRequestChunkSentParams,
) -> None:
    """Called by aiohttp just before a request body chunk (with the head) is written."""
    clock = context.trace_request_ctx
    if isinstance(clock, _SendClock) and not clock.written:
        clock.written = True
        clock.record.start = time.perf_counter()


def _send_clock() -> aiohttp.TraceConfig:
    trace = aiohttp.TraceConfig()
    trace.on_request_chunk_sent.append(_on_chunk_sent)
    return trace


async def _exchange(
    session: aiohttp.ClientSession,
    base_url: str,
    workload: Workload,
    prompt: str,
    model: str,
    output_tokens: int,
    record: RequestRecord,
    per_chunk_usage: bool,
    history: Sequence[Turn],
) -> None:
    path, body = _body(workload, prompt, model, output_tokens, per_chunk_usage, history)
    parser = _Stream(record, workload.api)
    payload = json.dumps(body).encode()
    async with session.post(
        base_url + path,
        data=payload,
        headers=JSON_HEADERS,
        trace_request_ctx=_SendClock(record),
    ) as response:
        if response.status != 200:
            text = (await response.text(errors="replace"))[:200].strip()
            raise _Failed(f"HTTP {response.status}", f"HTTP {response.status}: {text}")
        async for data in _events(response):
            now = time.perf_counter()
            record.arrived(now)
            parser.feed(data, now)
        parser.close(time.perf_counter())


async def _one(
    session: aiohttp.ClientSession,
    base_url: str,
    workload: Workload,
    prompt: str,
    model: str,
    output_tokens: int,
    per_chunk_usage: bool = True,
    history: Sequence[Turn] = (),
) -> RequestRecord:
    record = RequestRecord(start=time.perf_counter())
    exchange = _exchange(
        session, base_url, workload, prompt, model, output_tokens, record, per_chunk_usage, history
    )
    try:
        await asyncio.wait_for(
            exchange,
            workload.request_timeout_s,
        )
    except _Failed as exc:
        record.fail(exc.reason, str(exc))
    except (asyncio.TimeoutError, TimeoutError):
        record.fail("timeout", f"no complete response within {workload.request_timeout_s:g} s")
    except (ValueError, UnicodeDecodeError) as exc:
        record.fail("malformed SSE", f"malformed stream: {str(exc)[:200]}")
    except aiohttp.ClientPayloadError as exc:
        record.fail("truncated stream", f"the stream was cut: {str(exc)[:200]}")
    except (aiohttp.ClientError, OSError) as exc:
        record.fail("connection", f"{type(exc).__name__}: {str(exc)[:200]}")
    return record


async def warm_pool(session: aiohttp.ClientSession, base_url: str, connections: int) -> None:
    """Open ``connections`` keep-alive connections with cheap GETs (no tokens generated).

    A burst of N requests on a cold pool would pay N TCP handshakes inside the measured
    phase; the handshakes are not the server's latency. Errors are ignored: the measured
    requests report whatever is wrong with the server.
    """

    async def one() -> None:
        try:
            async with session.get(
                base_url + "/v1/models", timeout=aiohttp.ClientTimeout(total=INFO_TIMEOUT_S)
            ) as response:
                await response.read()
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
            pass

    await asyncio.gather(*(one() for _ in range(min(connections, MAX_WARM_CONNECTIONS))))


#: How long SGLang may wait for requests in flight before it flushes (bench_serving's).
FLUSH_TIMEOUT_S = 60.0


class FlushFailed(RuntimeError):
    """The server did not flush its prefix cache when the workload asked for it."""


async def flush_cache(session: aiohttp.ClientSession, base_url: str) -> None:
    """Empty the server's prefix cache (``POST /flush_cache``, as bench_serving's
    ``--flush-cache``; SGLang refuses while requests run, so it may wait ``FLUSH_TIMEOUT_S``).

    Why an error and not a counted failure: a round that was to start cold and did not is
    another workload, and its figures would be compared as this one's."""
    try:
        async with session.post(
            base_url + "/flush_cache",
            params={"timeout": str(FLUSH_TIMEOUT_S)},
            timeout=aiohttp.ClientTimeout(total=FLUSH_TIMEOUT_S + INFO_TIMEOUT_S),
        ) as response:
            text = (await response.text(errors="replace")).strip()
            if response.status == 200:
                return
            raise FlushFailed(
                f"the server did not flush its prefix cache (HTTP {response.status}: "
                f"{text[:200]}); the workload asks for flush_cache=True"
            )
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
        raise FlushFailed(
            f"the server did not flush its prefix cache ({type(exc).__name__}: "
            f"{str(exc)[:200]}); the workload asks for flush_cache=True"
        ) from None


async def fetch_prometheus(session: aiohttp.ClientSession, base_url: str) -> Sample | None:
    """The server's ``sglang:`` Prometheus series, or None without ``--enable-metrics``."""
    try:
        async with session.get(
            base_url + "/metrics", timeout=aiohttp.ClientTimeout(total=INFO_TIMEOUT_S)
        ) as response:
            if response.status != 200:
                return None
            text = await response.text(errors="replace")
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
        return None
    return parse_prometheus(text) or None


async def _server_info(session: aiohttp.ClientSession, base_url: str) -> dict[str, Any] | None:
    """/server_info (or the older /get_server_info) as a dict; None when neither answers."""
    for path in ("/server_info", "/get_server_info"):
        try:
            async with session.get(
                base_url + path, timeout=aiohttp.ClientTimeout(total=INFO_TIMEOUT_S)
            ) as response:
                if response.status != 200:
                    continue
                info = await response.json(content_type=None)
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError, OSError):
            continue
        return info if isinstance(info, dict) else None
    return None


@dataclass(frozen=True)
class RunProgress:
    """Where a run stands: requests finished of all, output tokens of those completed."""

    done: int
    total: int
    output_tokens: int
    elapsed_s: float

    @classmethod
    def of(cls, records: list[RequestRecord], total: int, elapsed_s: float) -> RunProgress:
        """Where a run stands after ``records`` (finished so far, wherever the load runs)."""
        tokens = sum(r.completion_tokens for r in records if r.ok)
        return cls(len(records), total, tokens, elapsed_s)

    @property
    def tokens_per_s(self) -> float:
        return self.output_tokens / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the pace so far; None before the first request finished."""
        if not self.done:
            return None
        return self.elapsed_s * (self.total - self.done) / self.done


ProgressSink = Callable[[RunProgress], None]
#: How often a run reports its progress (seconds).
PROGRESS_EVERY_S = 1.0


async def _report_progress(
    records: list[RequestRecord], total: int, began: float, progress: ProgressSink
) -> None:
    """Every :data:`PROGRESS_EVERY_S` until cancelled: what finished so far (the run itself is
    untouched: this reads the records the requests append)."""
    while True:
        await asyncio.sleep(PROGRESS_EVERY_S)
        progress(RunProgress.of(records, total, time.perf_counter() - began))


@dataclass
class RawRun:
    """What a run measured, before any figure is computed: its requests as they finished, its
    wall time, and what the server said about itself before and after.

    The boundary between generating load and computing figures: the generator may run on the
    GPU host (:mod:`.agent`) and send this back, and :func:`finish` computes the same figures
    from it wherever it was measured. ``began`` is the ``perf_counter`` of the measured
    phase's start on the generator's clock (records' times are on the same clock).
    """

    records: list[RequestRecord]
    duration: float
    began: float = 0.0
    scrape_before: Sample | None = None
    scrape_after: Sample | None = None
    accept: float | None = None


def finish(raw: RawRun) -> BenchResult:
    """The run's figures (:func:`~.metrics.compute_metrics`, plus the server's own deltas)."""
    result = compute_metrics(raw.records, raw.duration, server_accept_length=raw.accept)
    if raw.scrape_before and raw.scrape_after:
        result.server_metrics = run_delta(raw.scrape_before, raw.scrape_after)
        result.server_cache_hit_rate = server_cache_hit_rate(result.server_metrics)
    return result


async def fetch_server_accept_length(session: aiohttp.ClientSession, base_url: str) -> float | None:
    """``internal_states[0].avg_spec_accept_length`` from /server_info (None when absent)."""
    info = await _server_info(session, base_url)
    states = info.get("internal_states") if info else None
    if isinstance(states, list) and states and isinstance(states[0], dict):
        value = states[0].get("avg_spec_accept_length")
        return float(value) if isinstance(value, (int, float)) else None
    return None


async def _chunks_carry_several_tokens(session: aiohttp.ClientSession, base_url: str) -> bool:
    """Whether the OpenAI streams need usage on every chunk to count tokens per chunk.

    Yes under speculative decoding (``speculative_algorithm`` in /server_info's server args),
    or when the server does not say. Without it every chunk is one decode step of one token,
    and the final usage spread over the chunks gives the same per-token ITL, without parsing
    a usage object per chunk (a quarter more client CPU per token at 256 streams,
    benchmarks/client_ceiling.py).
    """
    info = await _server_info(session, base_url)
    return (
        info is None or "speculative_algorithm" not in info or bool(info["speculative_algorithm"])
    )


async def run_workload_async(
    base_url: str,
    workload: Workload,
    *,
    model: str = "default",
    progress: ProgressSink | None = None,
    observe: Callable[[RequestRecord], bool] | None = None,
    api_key: str | None = None,
) -> BenchResult:
    """Run ``workload`` against ``base_url``; bounded by ``workload.total_timeout_s``.

    ``progress`` is called about once a second with a :class:`RunProgress` (for a live line).
    ``observe`` sees each measured request as it finishes; when it returns True the run stops
    there (the rest is cancelled and not counted): how a probe of the sustainable-rate search
    ends as soon as its outcome is certain.
    """
    raw = await generate(
        base_url, workload, model=model, on_record=observe, progress=progress, api_key=api_key
    )
    return finish(raw)


async def generate(
    base_url: str,
    workload: Workload,
    *,
    model: str = "default",
    on_record: Callable[[RequestRecord], bool | None] | None = None,
    progress: ProgressSink | None = None,
    api_key: str | None = None,
) -> RawRun:
    """Send ``workload``'s requests and time them; ``on_record`` sees each as it finishes and
    stops the run by returning True; ``progress`` hears about once a second how far it got;
    ``api_key`` (the server's ``--api-key``) goes with every request as a bearer token."""
    base_url = base_url.rstrip("/")
    limit = workload.concurrency or workload.num_requests
    connector = aiohttp.TCPConnector(limit=max(limit, 1) + 2, force_close=False)
    # requests are bounded by wait_for; aiohttp's own 5-minute default would cut long runs
    unbounded = aiohttp.ClientTimeout(total=None, sock_connect=30)
    async with aiohttp.ClientSession(
        connector=connector,
        timeout=unbounded,
        trace_configs=[_send_clock()],
        headers=_auth_headers(api_key),
    ) as session:
        run = _Run(session, base_url, workload, model, limit, on_record)
        scrape_before = await run.prepare()
        began = time.perf_counter()
        reporter = (
            asyncio.ensure_future(_report_progress(run.records, len(run.requests), began, progress))
            if progress is not None
            else None
        )
        try:
            await run.drive(began)
        finally:
            if reporter is not None:
                reporter.cancel()
        duration = time.perf_counter() - began
        scrape_after = await fetch_prometheus(session, base_url) if scrape_before else None
        accept = None
        if workload.api != "generate" and any(r.ok for r in run.records):
            accept = await fetch_server_accept_length(session, base_url)
    return RawRun(run.records, duration, began, scrape_before, scrape_after, accept)


class _Run:
    """One run of a workload on an open client session: its requests, what finished, and the
    task that launches them (cancelled when ``on_record`` stops the run)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        workload: Workload,
        model: str,
        limit: int,
        on_record: Callable[[RequestRecord], bool | None] | None,
    ) -> None:
        self.session = session
        self.base_url = base_url
        self.workload = workload
        self.model = model
        self.limit = limit
        self.on_record = on_record
        self.requests = workload.requests()
        self.records: list[RequestRecord] = []
        self.gate = asyncio.Semaphore(limit)
        self.per_chunk = True
        self.stopped = False
        self.launcher: asyncio.Future[None] | None = None

    async def prepare(self) -> Sample | None:
        """Warm-up requests, the cache flush, the connection pool; the server's metrics before
        the run (None where it has none)."""
        workload, session, base_url = self.workload, self.session, self.base_url
        self.per_chunk = workload.api == "generate" or await _chunks_carry_several_tokens(
            session, base_url
        )
        for _ in range(workload.warmup_requests):
            await _one(
                session,
                base_url,
                workload,
                self.requests[0][0],
                self.model,
                min(workload.output_tokens, 16),
                self.per_chunk,
            )
        if workload.flush_cache:
            await flush_cache(session, base_url)
        # concurrently, and within the run's deadline: a server that stalls GETs costs little
        scrape_before: Sample | None = None
        with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
            _, scrape_before = await asyncio.wait_for(
                asyncio.gather(
                    warm_pool(session, base_url, self.limit), fetch_prometheus(session, base_url)
                ),
                min(INFO_TIMEOUT_S, workload.total_timeout_s),
            )
        return scrape_before

    async def drive(self, began: float) -> None:
        """Launch every session within the run's deadline; what did not finish by then is a
        failed record each."""
        workload = self.workload
        self.launcher = launcher = asyncio.ensure_future(self._launch())
        try:
            await asyncio.wait_for(launcher, workload.total_timeout_s)
        except asyncio.CancelledError:
            if not self.stopped:  # cancelled from outside, not by ``on_record``
                raise
        except (asyncio.TimeoutError, TimeoutError):
            missing = workload.num_requests - len(self.records)
            late = [
                RequestRecord(start=began).fail(
                    "run deadline",
                    f"not finished within the run's {workload.total_timeout_s:g} s deadline",
                )
                for _ in range(missing)
            ]
            self.records.extend(late)
            if self.on_record is not None:
                for record in late:
                    self.on_record(record)

    def _keep(self, record: RequestRecord) -> None:
        # kept as each finishes: at the run's deadline, what finished still counts
        self.records.append(record)
        if self.on_record is not None and self.on_record(record) and not self.stopped:
            self.stopped = True
            assert self.launcher is not None
            self.launcher.cancel()

    async def _gated(self, index: int, turns: list[tuple[str, int, float]]) -> None:
        # one session: a request, or a conversation's turns, each sent with the history
        # before it; the session holds its place under ``concurrency`` while it thinks
        async with self.gate:
            history: list[Turn] = []
            for turn, (prompt, output_tokens, pause) in enumerate(turns):
                if turn and pause > 0:
                    await asyncio.sleep(pause)
                record = await _one(
                    self.session,
                    self.base_url,
                    self.workload,
                    prompt,
                    self.model,
                    output_tokens,
                    self.per_chunk,
                    history,
                )
                record.session, record.turn = index, turn
                self._keep(record)
                if not record.ok:
                    for later in range(turn + 1, len(turns)):
                        self._keep(_ended(index, later, record))
                    return
                if turn + 1 < len(turns):
                    history.append((prompt, record.text))

    async def _launch(self) -> None:
        tasks: list[asyncio.Task[None]] = []
        try:
            # the first session goes at once, the others after their gaps (bench_serving's
            # order); each start is timed from the launch, so late wake-ups do not add up
            first = time.perf_counter()
            offset = 0.0
            sessions = _sessions(self.workload, self.requests)
            gaps = [0.0, *self.workload.arrival_delays()]
            for index, (turns, gap) in enumerate(zip(sessions, gaps)):
                offset += gap
                wait = first + offset - time.perf_counter()
                if wait > 0:
                    await asyncio.sleep(wait)
                tasks.append(asyncio.ensure_future(self._gated(index, turns)))
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()


def _sessions(
    workload: Workload, requests: list[tuple[str, int]]
) -> list[list[tuple[str, int, float]]]:
    """The requests grouped by session (``workload.session_turns()``), each with the pause
    before it (``workload.think_times()``)."""
    pauses = workload.think_times()
    out: list[list[tuple[str, int, float]]] = []
    at = 0
    for count in workload.session_turns():
        out.append([(p, n, pauses[at + k]) for k, (p, n) in enumerate(requests[at : at + count])])
        at += count
    return out


def _ended(session: int, turn: int, cause: RequestRecord) -> RequestRecord:
    """A turn never sent because an earlier turn of its conversation failed (its history would
    be missing a reply)."""
    record = RequestRecord(start=time.perf_counter(), session=session, turn=turn)
    return record.fail(
        "conversation ended",
        f"not sent: turn {cause.turn + 1} of its conversation failed ({cause.reason})",
    )


def run_workload(
    base_url: str,
    workload: Workload,
    *,
    model: str = "default",
    progress: ProgressSink | None = None,
    observe: Callable[[RequestRecord], bool] | None = None,
    api_key: str | None = None,
) -> BenchResult:
    """Synchronous :func:`run_workload_async` on a fresh event loop (for pytest tests)."""
    return asyncio.run(
        run_workload_async(
            base_url, workload, model=model, progress=progress, observe=observe, api_key=api_key
        )
    )


async def complete_prompts_async(
    base_url: str, workload: Workload, *, model: str = "default", api_key: str | None = None
) -> list[RequestRecord]:
    """Each of the workload's requests once, at most ``workload.concurrency`` in flight, no
    warmup and no arrival gaps; the records (with their text) in request order.

    For quality evals (:mod:`pytest_sglang.quality`): the same requests, streams and failure
    classification as a benchmark, where what matters is each request's output, not its timing.
    """
    base_url = base_url.rstrip("/")
    requests = workload.requests()
    limit = max(workload.concurrency or len(requests), 1)
    connector = aiohttp.TCPConnector(limit=limit + 2)
    unbounded = aiohttp.ClientTimeout(total=None, sock_connect=30)
    async with aiohttp.ClientSession(
        connector=connector, timeout=unbounded, headers=_auth_headers(api_key)
    ) as session:
        gate = asyncio.Semaphore(limit)

        async def gated(prompt: str, output_tokens: int) -> RequestRecord:
            async with gate:
                return await _one(session, base_url, workload, prompt, model, output_tokens)

        tasks = [asyncio.ensure_future(gated(p, n)) for p, n in requests]
        try:
            done = await asyncio.wait_for(asyncio.gather(*tasks), workload.total_timeout_s)
        except (asyncio.TimeoutError, TimeoutError):
            return [
                t.result()
                if t.done() and not t.cancelled()
                else RequestRecord().fail(
                    "run deadline",
                    f"not finished within the run's {workload.total_timeout_s:g} s deadline",
                )
                for t in tasks
            ]
    return list(done)


def complete_prompts(
    base_url: str, workload: Workload, *, model: str = "default", api_key: str | None = None
) -> list[RequestRecord]:
    """Synchronous :func:`complete_prompts_async` on a fresh event loop."""
    return asyncio.run(complete_prompts_async(base_url, workload, model=model, api_key=api_key))
