"""The simulated scheduler: continuous batching on asyncio, timed by :mod:`.perf`.

Why batch per step instead of timing each request alone: per-request speed must fall as
concurrency rises, as in SGLang, where one decode step serves every running request. One loop
admits waiting requests (a prefill step, so TTFT grows with prompt length and with queueing),
then runs decode steps whose duration comes from the performance model for the current batch
size; each step hands every running request its accepted tokens (fractional accept lengths are
carried over, so the average is exact). At ``SGLANG_SIM_TIME_SCALE=0`` a step only yields to the
event loop, which keeps the cost per token at a few microseconds.

Admission is SGLang 0.5.23's ``PrefillAdder`` in outline: the waiting queue is ordered by
``--schedule-policy`` (:mod:`.policy`), each request is matched against the prefix cache
(:mod:`.kvcache`, :mod:`.radix`) and only its uncached tokens are prefilled (and timed); a
prefill batch takes at most ``--chunked-prefill-size`` tokens (a longer prompt is split into
chunks, one per step, each inserted into the cache once computed) and stops past
``--max-prefill-tokens`` without chunking, or when the pool cannot hold the next prompt even
after evicting unlocked prefixes. A request's KV goes into the tree after its prefill and again
when it finishes.

With ``SGLANG_SIM_TTFT_MS`` / ``SGLANG_SIM_ITL_MS`` set, each request instead runs on its own
absolute timetable (token k at arrival + TTFT + (k-1) * ITL), which is exact regardless of load.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .knobs import SimSettings
from .kvcache import KvPool, ReqKv, token_array
from .logs import rank_log
from .perf import accept_length, decode_step_ms, prefill_ms
from .policy import SchedulePolicy
from .post_init import Resolved
from .quality import diverged_id
from .radix import Node
from .tokenizer import EOS_TOKEN_ID, token_id

__all__ = ["Request", "Scheduler"]

#: Without ignore_eos, a request "chooses" to stop after this many tokens plus a prompt-derived
#: offset in [0, NATURAL_SPREAD): deterministic, so greedy output is reproducible.
NATURAL_MIN = 24
NATURAL_SPREAD = 232
#: The event loop's timer granularity (epoll waits in whole milliseconds, rounded up).
TIMER_SLACK_S = 0.001
#: Speculative algorithms whose prefix cache is keyed by bigrams (``is_eagle()`` in 0.5.23).
BIGRAM_ALGORITHMS = ("EAGLE", "EAGLE3", "FROZEN_KV_MTP")
#: ``--max-prefill-tokens``' default in 0.5.23.
MAX_PREFILL_TOKENS = 16384


@dataclass(eq=False)
class Request:
    """One generation request and its output so far."""

    prompt_tokens: int
    max_new_tokens: int
    ignore_eos: bool
    temperature: float
    seed: int
    rid: str = field(default_factory=lambda: uuid.uuid4().hex)
    is_warmup: bool = False
    output_ids: list[int] = field(default_factory=list)
    pending: int = 0  # ids at the end of output_ids not yet taken by the HTTP handler
    finished: bool = False
    finish_reason: dict[str, Any] | None = None
    aborted: bool = False
    verify_ct: int = 0
    accepted: int = 0
    created: float = field(default_factory=time.time)
    arrived: float | None = None  # time.monotonic() when the HTTP request was received
    first_token_at: float = 0.0
    finished_at: float = 0.0
    #: The quality stand-in's answer (:mod:`.quality`): these ids first, then the stop.
    script: tuple[int, ...] = ()
    #: ``diverge-after=N`` under speculative decoding: ids from position N on are changed.
    diverge_after: int | None = None
    #: the prompt's token ids (:mod:`.tokenizer`); None: served, never matched nor cached
    prompt_ids: Sequence[int] | None = None
    #: the prompt tokens its prefill found cached (``meta_info.cached_tokens``)
    cached_tokens: int = 0
    #: PD decode: its prompt's KV cache came from a prefill server, so it is not computed here
    transferred: bool = False
    _credit: float = 0.0
    _accept_len: float = 1.0
    event: asyncio.Event = field(default_factory=asyncio.Event)
    kv: ReqKv = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.kv = ReqKv(token_array(self.prompt_ids))

    @property
    def natural_length(self) -> int:
        if self.script:
            return len(self.script)
        return NATURAL_MIN + self.seed % NATURAL_SPREAD

    def cache_ids(self, overlap: bool) -> array[int] | None:
        """The ids whose KV a finished request leaves in the cache (0.5.23's
        ``owned_kv_len``): the prompt and the output but its last id, whose KV is never
        computed. A stop's last id is the stop token, which the simulator leaves out of
        ``output_ids``; under the overlap scheduler (the default) the next step was already
        under way when the stop was seen, so the stop token's KV is computed and cached too
        (a request that ends by length is known in advance and left out of that step)."""
        if self.kv.ids is None:
            return None
        out = list(self.output_ids)
        if (self.finish_reason or {}).get("type") != "stop":
            out = out[:-1]
        elif overlap:
            out.append(EOS_TOKEN_ID)
        return self.kv.ids + array("q", out) if out else self.kv.ids

    def token_at(self, pos: int) -> int:
        """The id at output position ``pos``: the script's, else the prompt-seeded one."""
        tid = self.script[pos] if pos < len(self.script) else token_id(self.seed, pos)
        if self.diverge_after is not None and pos >= self.diverge_after:
            tid = diverged_id(self.seed, pos, tid)
        return tid

    @property
    def completion_tokens(self) -> int:
        return len(self.output_ids)

    def take(self) -> list[int]:
        """The ids produced since the last call (for one streamed chunk)."""
        if not self.pending:
            return []
        new = self.output_ids[-self.pending :]
        self.pending = 0
        return new

    def _emit(self, count: int) -> int:
        """Append up to ``count`` tokens; returns how many were added."""
        limit = self.max_new_tokens
        if not self.ignore_eos:
            limit = min(limit, self.natural_length)
        count = max(0, min(count, limit - len(self.output_ids)))
        start = len(self.output_ids)
        for pos in range(start, start + count):
            self.output_ids.append(self.token_at(pos))
        self.pending += count
        if not self.first_token_at and count:
            self.first_token_at = time.time()
        if len(self.output_ids) >= limit:
            self.finished = True
            self.finished_at = time.time()
            if len(self.output_ids) >= self.max_new_tokens:
                self.finish_reason = {"type": "length", "length": self.max_new_tokens}
            else:
                self.finish_reason = {"type": "stop", "matched": EOS_TOKEN_ID}
        self.event.set()
        return count


class Scheduler:
    """Admits, prefills and decodes requests; counts what /server_info and /metrics report."""

    def __init__(
        self,
        resolved: Resolved,
        settings: SimSettings,
        max_running: int,
        max_total_tokens: int,
        on_request: Callable[[Request], None] | None = None,
    ) -> None:
        self.resolved = resolved
        self.settings = settings
        self.max_running = max(1, max_running)
        self.max_total_tokens = max(1, max_total_tokens)
        self.on_request = on_request
        self.tp = int(resolved.args.get("tp_size") or 1)
        self.log_interval = max(1, int(resolved.args.get("decode_log_interval") or 40))
        args = resolved.args
        self.pool = KvPool(
            self.max_total_tokens,
            int(args.get("page_size") or 1),
            radix=not args.get("disable_radix_cache"),
            bigram=resolved.spec.algorithm in BIGRAM_ALGORITHMS,
        )
        self.policy = SchedulePolicy(
            str(args.get("schedule_policy") or "fcfs"), self.pool, settings.seed
        )
        chunk = int(args.get("chunked_prefill_size") or 0)
        #: ``--chunked-prefill-size``: the most prompt tokens one prefill step computes (None: off)
        self.chunk_size: int | None = chunk if chunk > 0 else None
        self.max_prefill_tokens = int(args.get("max_prefill_tokens") or MAX_PREFILL_TOKENS)
        #: the overlap scheduler (on unless ``--disable-overlap-schedule``): what a stop caches
        self.overlap = not args.get("disable_overlap_schedule")
        self.waiting: list[Request] = []
        #: the request whose prompt is being prefilled chunk by chunk
        self.chunked: Request | None = None
        #: the last admission stopped for want of memory; retried once a request finishes
        self._blocked = False
        #: Requests on their own exact timetable (SGLANG_SIM_TTFT_MS/ITL_MS), not in a batch.
        self.timed: set[Request] = set()
        #: Those waiting for a place on a timetable (SGLANG_SIM_CAPACITY), in arrival order.
        self.timed_waiting: deque[Request] = deque()
        self._timed_free = asyncio.Condition()
        self.running: list[Request] = []
        self._wake = asyncio.Event()
        # Cumulative statistics since start (warmup included, as in SGLang).
        self.spec_verify_ct = 0
        self.spec_tokens = 0
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self.requests_total = 0
        self.finished_requests = 0
        self.last_gen_throughput = 0.0
        self.last_accept_len = 0.0
        self.ttft_sum = 0.0
        self.e2e_sum = 0.0
        # The prefix cache's figures: the last prefill batch's hit rate, and since start the
        # cached prompt tokens of finished requests and the prefilled / cached tokens.
        self.last_cache_hit_rate = 0.0
        self.cached_tokens_total = 0
        self.prefill_input_tokens = 0
        self.prefill_hit_tokens = 0
        #: every finished request's TTFT and end-to-end latency, s (the /metrics histograms)
        self.ttft_samples: list[float] = []
        self.e2e_samples: list[float] = []
        self._steps = 0
        self._window_tokens = 0
        self._window_ms = 0.0
        self._window_verify = 0
        self._window_spec_tokens = 0

    # ------------------------------------------------------------------ intake
    def submit(self, req: Request) -> None:
        """Queue a request (the crash-after fault may fire here)."""
        if self.on_request is not None:
            self.on_request(req)
        req._accept_len = accept_length(self.resolved.spec, req.temperature)
        self.requests_total += 1
        self.prompt_tokens_total += req.prompt_tokens
        if self.settings.fixed_timing:
            asyncio.get_running_loop().create_task(self._run_fixed(req))
            return
        self.waiting.append(req)
        self._wake.set()

    def _done(self, req: Request) -> None:
        self._release(req)
        self.finished_requests += 0 if req.is_warmup else 1
        self.cached_tokens_total += req.cached_tokens
        if req.first_token_at:
            self.ttft_sum += req.first_token_at - req.created
            self.ttft_samples.append(req.first_token_at - req.created)
        e2e = (req.finished_at or time.time()) - req.created
        self.e2e_sum += e2e
        self.e2e_samples.append(e2e)

    @property
    def num_running(self) -> int:
        """Requests being decoded: the batch, or those on exact timetables."""
        return len(self.running) + len(self.timed)

    @property
    def busy(self) -> int:
        chunked = 0 if self.chunked is None else 1
        return self.num_running + len(self.waiting) + len(self.timed_waiting) + chunked

    @property
    def avg_spec_accept_length(self) -> float | None:
        if self.resolved.spec.algorithm is None or not self.spec_verify_ct:
            return None
        return self.spec_tokens / self.spec_verify_ct

    # ------------------------------------------------------------------ timing
    async def _sleep_until(self, deadline: float) -> float:
        """Wake at ``deadline`` (``time.monotonic``), not up to a millisecond after it.

        The event loop's epoll wait rounds its timeout up to whole milliseconds, so a plain
        ``sleep`` wakes 0-1 ms late (0.5 ms on average): every injected TTFT would be late by
        that much. Sleep to a millisecond before the deadline, then yield until it passes.
        The clock is ``time.monotonic``, not ``loop.time()``: uvloop's loop time is cached per
        loop turn in whole milliseconds.
        """
        now = time.monotonic()
        if deadline > now:
            if deadline - now > TIMER_SLACK_S:
                await asyncio.sleep(deadline - now - TIMER_SLACK_S)
            while time.monotonic() < deadline:
                await asyncio.sleep(0)
            return deadline
        await asyncio.sleep(0)
        # Fell behind (busy CPU): do not burst to catch up more than a little.
        return max(deadline, now - 0.05)

    async def _run_fixed(self, req: Request) -> None:
        """Exact TTFT/ITL injection: token k at arrival + TTFT + (k-1) * ITL.

        Arrival is when the HTTP layer received the request (``req.arrived``), not when this
        task first runs: parsing the body and a loop turn would otherwise add to every TTFT.
        Under ``SGLANG_SIM_CAPACITY`` a request waits for a free place first; its timetable
        then starts when it gets one.
        """
        capacity = self.settings.capacity
        start = req.arrived if req.arrived is not None else time.monotonic()
        if capacity and (len(self.timed) >= capacity or self.timed_waiting):
            self.timed_waiting.append(req)
            async with self._timed_free:
                await self._timed_free.wait_for(
                    lambda: self.timed_waiting[0] is req and len(self.timed) < capacity
                )
                self.timed_waiting.popleft()
                self.timed.add(req)
                self._timed_free.notify_all()  # the next in line may fit too
            start = time.monotonic()
        self.timed.add(req)
        try:
            prefix, node = self.pool.match(req.kv)
            self._admit(req, prefix, node, req.prompt_tokens - prefix)
            self._count_prefill(req.prompt_tokens - prefix, prefix)
            await self._timetable(req, start)
        finally:
            self.timed.discard(req)
            if capacity:
                async with self._timed_free:
                    self._timed_free.notify_all()
        self._done(req)

    async def _timetable(self, req: Request, start: float) -> None:
        ttft = (self.settings.ttft_ms or 0.0) / 1000.0
        itl = (self.settings.itl_ms or 0.0) / 1000.0
        await self._sleep_until(start + ttft)
        self._prefilled(req, req.prompt_tokens - req.kv.extend_end)
        k = 0
        while not req.finished and not req.aborted:
            if k:
                self.pool.alloc(req.kv, 1)
            self.generation_tokens_total += req._emit(1)
            k += 1
            if not req.finished:
                await self._sleep_until(start + ttft + k * itl)

    # ------------------------------------------------------------------ prefix cache
    def _admit(self, req: Request, prefix: int, node: Node, tokens: int) -> None:
        """``req`` starts on its cached ``prefix``: lock it and take slots for ``tokens``."""
        self.pool.admit(req.kv, prefix, node)
        self.pool.alloc(req.kv, self.pool.ceil_page(tokens))
        req.cached_tokens = prefix

    def _prefilled(self, req: Request, tokens: int) -> bool:
        """``tokens`` more of the prompt were computed: cache them; whether the prompt is done."""
        kv = req.kv
        kv.extend_end += tokens
        if kv.ids is not None:
            self.pool.checkpoint(kv, kv.ids[: kv.extend_end])
        return kv.extend_end >= req.prompt_tokens

    def _release(self, req: Request) -> None:
        """Give the request's KV back; a finished one first leaves its sequence in the cache."""
        kv = req.kv
        ids = req.cache_ids(self.overlap) if req.finished and not req.aborted else None
        if ids is not None and self.pool.caching and kv.node is not None:
            self.pool.alloc(kv, len(ids) - kv.kv_len)  # the slot of a stop's last step
            self.pool.checkpoint(kv, ids)
            assert kv.ids is not None
            self.pool.split_at(kv.ids)
        self.pool.release(kv)
        self._blocked = False

    def _count_prefill(self, tokens: int, hits: int) -> None:
        self.prefill_input_tokens += tokens
        self.prefill_hit_tokens += hits
        total = tokens + hits
        self.last_cache_hit_rate = hits / total if total else 0.0

    def flush_cache(self) -> bool:
        """``/flush_cache``: drop every cached prefix, only while no request is in flight."""
        if self.busy:
            return False
        self.pool.flush()
        return True

    # ------------------------------------------------------------------ admission
    def _schedule_prefill(self) -> list[tuple[Request, int]]:
        """The next prefill batch as (request, prompt tokens computed now), or [] to decode.

        The continuing chunk first, then waiting requests in the policy's order while the
        batch has room: ``--max-running-requests``, ``--chunked-prefill-size`` tokens (a longer
        prompt is cut at a page boundary and continues next step), ``--max-prefill-tokens``
        without chunking (the first request always goes), and the pool (free + evictable
        slots; with nothing running the head request goes regardless, as it must to progress).
        """
        pool, page = self.pool, self.pool.page_size
        if self.chunked is None and (
            not self.waiting or self._blocked or len(self.running) >= self.max_running
        ):
            return []
        rem_chunk, rem_input = self.chunk_size, self.max_prefill_tokens
        batch: list[tuple[Request, int]] = []
        if self.chunked is not None:
            req, kv = self.chunked, self.chunked.kv
            take = req.prompt_tokens - kv.extend_end
            if rem_chunk is not None and pool.ceil_page(take) > rem_chunk:
                take = (kv.extend_end + rem_chunk) // page * page - kv.extend_end
                take = take if take > 0 else min(rem_chunk, req.prompt_tokens - kv.extend_end)
            pool.alloc(kv, pool.ceil_page(take))
            batch.append((req, take))
            rem_input -= pool.ceil_page(take)
            rem_chunk = None if rem_chunk is None else rem_chunk - pool.ceil_page(take)
            if self._blocked:
                return batch
        self.policy.order(self.waiting)
        taken: set[Request] = set()
        for req in self.waiting:
            if req.aborted:
                taken.add(req)
                continue
            idle = not batch and not self.running
            if not idle and (
                rem_input <= 0
                or (rem_chunk is not None and rem_chunk <= 0)
                or len(self.running) + len(batch) >= self.max_running
            ):
                break
            prefix, node = pool.match(req.kv)
            extend = req.prompt_tokens - prefix
            take = extend
            if rem_chunk is not None and pool.ceil_page(extend) > rem_chunk:
                take = (prefix + rem_chunk) // page * page - prefix
                if take <= 0:
                    if not idle:
                        break
                    take = extend
            elif rem_chunk is None and batch and pool.ceil_page(extend) >= rem_input:
                break
            pool.admit(req.kv, prefix, node)
            if not idle and not pool.fits(pool.ceil_page(take)):
                pool.release(req.kv)
                self._blocked = True
                break
            pool.alloc(req.kv, pool.ceil_page(take))
            req.cached_tokens = prefix
            taken.add(req)
            batch.append((req, take))
            rem_input -= pool.ceil_page(take)
            if rem_chunk is not None:
                rem_chunk -= pool.ceil_page(take)
        if taken:
            self.waiting = [r for r in self.waiting if r not in taken]
        return batch

    # ------------------------------------------------------------------ main loop
    async def run(self) -> None:
        """Serve forever: admit + prefill, else one decode step for the running batch."""
        deadline = time.monotonic()
        scale = self.settings.time_scale / 1000.0
        model, tp, spec = self.resolved.model, self.tp, self.resolved.spec
        speed = self.settings.speed_factor
        while True:
            if not self.running and not self.waiting and self.chunked is None:
                self._wake.clear()
                await self._wake.wait()
                deadline = time.monotonic()
            batch = self._schedule_prefill()
            if batch:
                tokens = sum(take for _, take in batch)
                hits = sum(r.cached_tokens for r, _ in batch if r is not self.chunked)
                computed = sum(take for r, take in batch if not r.transferred)
                ms = prefill_ms(model, tp, computed, self.resolved.gpu) / speed if computed else 0
                deadline = await self._sleep_until(deadline + ms * scale)
                self._count_prefill(tokens, hits)
                self._log_prefill(batch, tokens, hits, ms)
                self._finish_prefill(batch, spec.algorithm is not None)
            elif self.running:
                ms = decode_step_ms(model, tp, spec, len(self.running), self.resolved.gpu) / speed
                deadline = await self._sleep_until(deadline + ms * scale)
                self._decode_step(ms)
            self._reap()

    def _finish_prefill(self, batch: list[tuple[Request, int]], spec_on: bool) -> None:
        """Cache what the prefill computed; a request whose prompt is done gets its first token
        and joins the running batch, an unfinished one continues next step."""
        self.chunked = None
        for r, take in batch:
            done = self._prefilled(r, take)
            if not done:
                if r.aborted:
                    self._done(r)
                else:
                    self.chunked = r
                continue
            self.generation_tokens_total += r._emit(1)
            if spec_on:
                r.verify_ct += 1
                self.spec_verify_ct += 1
                self.spec_tokens += 1
            self.running.append(r)

    def _decode_step(self, ms: float) -> None:
        produced = 0
        spec_on = self.resolved.spec.algorithm is not None
        for r in self.running:
            if r.finished or r.aborted:
                continue
            r._credit += r._accept_len
            want = int(r._credit)
            r._credit -= want
            got = r._emit(want)
            self.pool.alloc(r.kv, got)
            produced += got
            if spec_on:
                r.verify_ct += 1
                r.accepted += max(0, got - 1)
                self.spec_verify_ct += 1
                self.spec_tokens += got
                self._window_verify += 1
                self._window_spec_tokens += got
        self.generation_tokens_total += produced
        self._window_tokens += produced
        self._window_ms += ms
        self._steps += 1
        if self._steps % self.log_interval == 0:
            self._log_decode()

    def _reap(self) -> None:
        if any(r.finished or r.aborted for r in self.running):
            keep: list[Request] = []
            for r in self.running:
                if r.finished or r.aborted:
                    self._done(r)
                else:
                    keep.append(r)
            self.running = keep

    # ------------------------------------------------------------------ log lines
    def _used_tokens(self) -> int:
        """SGLang's ``num_used_tokens``: the pool less free and evictable slots."""
        return self.pool.used

    def _log_prefill(
        self, batch: list[tuple[Request, int]], tokens: int, hits: int, ms: float
    ) -> None:
        usage = self._used_tokens() / self.max_total_tokens
        throughput = tokens / (ms / 1000.0) if ms > 0 else 0.0
        rank_log(
            f"Prefill batch, #new-seq: {len(batch)}, #new-token: {tokens}, #cached-token: {hits}, "
            f"token usage: {usage:.2f}, #running-req: {len(self.running)}, "
            f"#queue-req: {len(self.waiting)}, #pending-token: 0, cuda graph: False, "
            f"input throughput (token/s): {throughput:.2f}",
            0,
            self.tp,
        )

    def _log_decode(self) -> None:
        seconds = self._window_ms / 1000.0
        self.last_gen_throughput = self._window_tokens / seconds if seconds > 0 else 0.0
        spec_part = ""
        spec = self.resolved.spec
        if spec.algorithm is not None and self._window_verify:
            accept = self._window_spec_tokens / self._window_verify
            rate = (accept - 1) / max(1, spec.draft_tokens - 1)
            self.last_accept_len = accept
            spec_part = f"accept len: {accept:.2f}, accept rate: {rate:.2f}, "
        used = self._used_tokens()
        rank_log(
            f"Decode batch, #running-req: {len(self.running)}, #token: {used}, "
            f"token usage: {used / self.max_total_tokens:.2f}, {spec_part}"
            f"cuda graph: {bool(self.resolved.cuda_graph_bs)}, "
            f"gen throughput (token/s): {self.last_gen_throughput:.2f}, "
            f"#queue-req: {len(self.waiting)}",
            0,
            self.tp,
        )
        self._window_tokens = 0
        self._window_ms = 0.0
        self._window_verify = 0
        self._window_spec_tokens = 0
