"""The simulated scheduler: continuous batching on asyncio, timed by :mod:`.perf`.

Why batch per step instead of timing each request alone: per-request speed must fall as
concurrency rises, as in SGLang, where one decode step serves every running request. One loop
admits waiting requests (a prefill step, so TTFT grows with prompt length and with queueing),
then runs decode steps whose duration comes from the performance model for the current batch
size; each step hands every running request its accepted tokens (fractional accept lengths are
carried over, so the average is exact). At ``SGLANG_SIM_TIME_SCALE=0`` a step only yields to the
event loop, which keeps the cost per token at a few microseconds.

With ``SGLANG_SIM_TTFT_MS`` / ``SGLANG_SIM_ITL_MS`` set, each request instead runs on its own
absolute timetable (token k at arrival + TTFT + (k-1) * ITL), which is exact regardless of load.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .knobs import SimSettings
from .logs import rank_log
from .perf import accept_length, decode_step_ms, prefill_ms
from .post_init import Resolved
from .quality import diverged_id
from .tokenizer import EOS_TOKEN_ID, token_id

__all__ = ["Request", "Scheduler"]

#: Without ignore_eos, a request "chooses" to stop after this many tokens plus a prompt-derived
#: offset in [0, NATURAL_SPREAD): deterministic, so greedy output is reproducible.
NATURAL_MIN = 24
NATURAL_SPREAD = 232
#: The event loop's timer granularity (epoll waits in whole milliseconds, rounded up).
TIMER_SLACK_S = 0.001


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
    _credit: float = 0.0
    _accept_len: float = 1.0
    event: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def natural_length(self) -> int:
        if self.script:
            return len(self.script)
        return NATURAL_MIN + self.seed % NATURAL_SPREAD

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
        self.waiting: deque[Request] = deque()
        #: Requests on their own exact timetable (SGLANG_SIM_TTFT_MS/ITL_MS), not in a batch.
        self.timed: set[Request] = set()
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
        self.finished_requests += 0 if req.is_warmup else 1
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
        return self.num_running + len(self.waiting)

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
        """
        self.timed.add(req)
        try:
            await self._timetable(req)
        finally:
            self.timed.discard(req)
        self._done(req)

    async def _timetable(self, req: Request) -> None:
        start = req.arrived if req.arrived is not None else time.monotonic()
        ttft = (self.settings.ttft_ms or 0.0) / 1000.0
        itl = (self.settings.itl_ms or 0.0) / 1000.0
        await self._sleep_until(start + ttft)
        k = 0
        while not req.finished and not req.aborted:
            self.generation_tokens_total += req._emit(1)
            k += 1
            if not req.finished:
                await self._sleep_until(start + ttft + k * itl)

    # ------------------------------------------------------------------ main loop
    async def run(self) -> None:
        """Serve forever: admit + prefill, else one decode step for the running batch."""
        deadline = time.monotonic()
        scale = self.settings.time_scale / 1000.0
        model, tp, spec = self.resolved.model, self.tp, self.resolved.spec
        speed = self.settings.speed_factor
        while True:
            if not self.running and not self.waiting:
                self._wake.clear()
                await self._wake.wait()
                deadline = time.monotonic()
            new: list[Request] = []
            while self.waiting and len(self.running) + len(new) < self.max_running:
                req = self.waiting.popleft()
                if not req.aborted:
                    new.append(req)
            if new:
                tokens = sum(r.prompt_tokens for r in new)
                ms = prefill_ms(model, tp, tokens, self.resolved.gpu) / speed
                deadline = await self._sleep_until(deadline + ms * scale)
                self._log_prefill(new, tokens, ms)
                for r in new:
                    self.generation_tokens_total += r._emit(1)
                    if spec.algorithm is not None:
                        r.verify_ct += 1
                        self.spec_verify_ct += 1
                        self.spec_tokens += 1
                self.running.extend(new)
            elif self.running:
                ms = decode_step_ms(model, tp, spec, len(self.running), self.resolved.gpu) / speed
                deadline = await self._sleep_until(deadline + ms * scale)
                self._decode_step(ms)
            self._reap()

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
        return sum(r.prompt_tokens + len(r.output_ids) for r in self.running)

    def _log_prefill(self, new: list[Request], tokens: int, ms: float) -> None:
        usage = self._used_tokens() / self.max_total_tokens
        throughput = tokens / (ms / 1000.0) if ms > 0 else 0.0
        rank_log(
            f"Prefill batch, #new-seq: {len(new)}, #new-token: {tokens}, #cached-token: 0, "
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
