"""``python -m pytest_sglang.sim [launch_server flags]`` (console script ``sglang-sim``).

The process plays ``python -m sglang.launch_server``: parse the real flag set, resolve, log the
startup milestones, open the port only once "loaded", warm up, serve, and die the way SGLang dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any

from aiohttp import ClientSession, ClientTimeout, web

from .cli import catalog_for, parse_args
from .disagg import disagg_of
from .faults import die, kill_self, replay, scheduler_exception
from .knobs import SimSettings
from .logs import log, setup_logging
from .nodes import rendezvous, serve_follower
from .post_init import ResolutionError, Resolved, format_server_args, resolve_args
from .scheduler import Request, Scheduler
from .server import ARRIVAL_CLOCK, ServerState, build_app
from .startup import compute_capacity, run_startup

__all__ = ["main"]

WARMUP_TEXT = "The capital city of France is"
SIGTERM_POLL_S = 5.0


def _crash_hook(settings: SimSettings, tp: int) -> Callable[[Request], None]:
    """crash-after=N: the scheduler raises when request N+1 arrives."""
    limit = int(settings.fault.value)
    count = {"n": 0}

    def on_request(req: Request) -> None:
        if req.is_warmup:
            return
        count["n"] += 1
        if count["n"] > limit:
            scheduler_exception(
                [
                    (
                        "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py",
                        3450,
                        "run_scheduler_process",
                        "scheduler.event_loop_normal()",
                    ),
                    (
                        "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py",
                        1210,
                        "event_loop_normal",
                        "result = self.run_batch(batch)",
                    ),
                ],
                "RuntimeError: CUDA error: an illegal memory access was encountered",
                tp,
            )
            die(during_startup=False)

    return on_request


async def _warmup(port: int, state: ServerState, settings: SimSettings) -> None:
    """SGLang's ``_wait_and_warmup``: poll /model_info, one /generate, then status Up. As in
    SGLang, a warmup that cannot be made (its request raised) ends the server with
    ``Initialization failed. warmup error: <traceback>``: a background task that died silently
    would leave a server that never gets ready, which a client waits for until its deadline."""
    try:
        ok, status = await _warmup_request(port, state, settings)
    except Exception:  # as SGLang's: any failure of the warmup's own requests
        log(f"Initialization failed. warmup error: {traceback.format_exc().rstrip()}")
        kill_self()
        return
    if not ok:
        log(f"Initialization failed. warmup error: status {status}")
        kill_self()
    state.status = "Up"
    log("The server is fired up and ready to roll!")


async def _warmup_request(port: int, state: ServerState, settings: SimSettings) -> tuple[bool, int]:
    """Wait for /model_info, then send the warmup /generate: (answered 200, its status)."""
    await asyncio.sleep(1.0 * settings.startup_scale)
    base = f"http://127.0.0.1:{port}"
    info = "/model_info"  # 0.5.9+ (every simulated version)
    key = state.args.get("api_key")  # as _execute_server_warmup: its own requests carry it
    auth = {"Authorization": f"Bearer {key}"} if key else {}
    async with ClientSession(timeout=ClientTimeout(total=600), headers=auth) as session:
        for _ in range(120):
            try:
                async with session.get(base + info) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            await asyncio.sleep(1.0 * settings.startup_scale)
        body = {"text": WARMUP_TEXT, "sampling_params": {"temperature": 0, "max_new_tokens": 8}}
        async with session.post(
            base + "/generate", json=body, headers={"X-Sglang-Sim-Warmup": "1"}
        ) as resp:
            await resp.read()
            return resp.status == 200, resp.status


async def _serve(argv: list[str], settings: SimSettings) -> None:
    resolved = _resolved_or_exit(argv, settings)
    capacity = compute_capacity(resolved)
    node = await rendezvous(resolved.args)  # the other nodes of a multi-node server, if any
    startup_time = await run_startup(resolved, settings, capacity)
    if node is not None and node.rank > 0:
        await serve_follower(node, resolved.args)
        return
    tp = int(resolved.args.get("tp_size") or 1)
    hook = _crash_hook(settings, tp) if settings.fault.kind == "crash-after" else None
    scheduler = Scheduler(
        resolved,
        settings,
        capacity.max_running_requests,
        capacity.max_total_num_tokens,
        hook,
    )
    state = ServerState(
        resolved.args,
        settings.version,
        scheduler,
        capacity.max_total_num_tokens,
        capacity.context_len,
        startup_time,
        launch_command=" ".join(argv),
    )
    loop = asyncio.get_running_loop()
    sched_task = loop.create_task(scheduler.run())
    sched_task.add_done_callback(
        lambda t: None if t.cancelled() or not t.exception() else _scheduler_died(t.exception(), tp)
    )
    state.disagg = disagg_of(resolved.args)
    if state.disagg is not None and state.disagg.mode == "prefill":
        await state.disagg.start_bootstrap(str(resolved.args.get("host") or "127.0.0.1"))
    port = await _listen(state, resolved)
    stop = _stop_on_sigterm(state)
    if settings.fault.kind == "hang":
        pass  # port open, never ready: no warmup, /health stays 503
    elif resolved.args.get("skip_server_warmup"):
        state.status = "Up"
        log("The server is fired up and ready to roll!")
    else:
        warmup_task = loop.create_task(_warmup(port, state, settings))
        state.background.append(warmup_task)
    await stop.wait()
    deadline = time.monotonic() + 60.0
    while scheduler.busy and time.monotonic() < deadline:
        log(f"Gracefully exiting... Remaining number of requests {scheduler.busy}.")
        await asyncio.sleep(min(SIGTERM_POLL_S * max(settings.time_scale, 0.02), 1.0))
    kill_self()


def _resolved_or_exit(argv: list[str], settings: SimSettings) -> Resolved:
    """Parse and resolve as ``launch_server`` does, logging the warnings and the
    ``server_args=`` line; a refusal prints SGLang's traceback and exits 1."""
    parsed = parse_args(argv, settings.version)
    if settings.ignore_flag and settings.ignore_flag in parsed:
        defaults = {e["dest"]: e["default"] for e in catalog_for(settings.version)}
        parsed[settings.ignore_flag] = defaults.get(settings.ignore_flag)
    try:
        resolved = resolve_args(parsed, settings.version, settings.gpu)
    except ResolutionError as exc:
        for warning in exc.warnings:
            log(warning)
        sys.stderr.write(exc.traceback_text())
        raise SystemExit(1) from None
    for warning in resolved.warnings:
        log(warning)
    log(format_server_args(resolved.args, settings.version))
    return resolved


async def _listen(state: ServerState, resolved: Resolved) -> int:
    """Open the HTTP port as uvicorn does (its log lines, its bind error); the port."""
    app = build_app(state)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    host = str(resolved.args.get("host") or "127.0.0.1")
    port = int(resolved.args.get("port") or 30000)
    log(f"INFO:     Started server process [{os.getpid()}]")
    log("INFO:     Waiting for application startup.")
    log("INFO:     Application startup complete.")
    try:
        # aiohttp's protocol behind the arrival clock's (see sim/arrival.py); TCPSite would
        # hand the socket to aiohttp's protocol directly
        assert runner.server is not None
        factory = app[ARRIVAL_CLOCK].protocol_factory(runner.server)
        loop = asyncio.get_running_loop()
        await loop.create_server(factory, host, port, reuse_address=True, backlog=1024)
    except OSError as exc:
        log(
            f"ERROR:    [Errno {exc.errno}] error while attempting to bind on address "
            f"('{host}', {port}): {exc.strerror}"
        )
        kill_self()
    log(f"INFO:     Uvicorn running on http://{host}:{port} (Press CTRL+C to quit)")
    return port


def _stop_on_sigterm(state: ServerState) -> asyncio.Event:
    """SIGTERM drains: new requests are refused, the event is set."""
    stop = asyncio.Event()

    def on_sigterm() -> None:
        frame: FrameType | None = sys._getframe()
        log(f"SIGTERM received. signum=15 frame={frame!r}. Draining requests and shutting down...")
        state.shutting_down = True
        stop.set()

    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_sigterm)
    return stop


def _scheduler_died(exc: BaseException | None, tp: int) -> None:
    scheduler_exception([], f"{type(exc).__name__}: {exc}", tp)
    die(during_startup=False)


def main(argv: list[str] | None = None) -> None:
    """Run the simulator with ``argv`` (default: ``sys.argv[1:]``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--help" in args or "-h" in args:
        # real SGLang imports torch before argparse can answer: 5-15 s on a GPU host
        time.sleep(float(os.environ.get("SGLANG_SIM_HELP_DELAY_S") or 0))
    settings = SimSettings.from_env(argv=args)
    setup_logging()
    if settings.fault.kind == "replay":
        replay(settings.fault.path)  # returns only for a log of a server that came up
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    _run_event_loop(_serve(args, settings))


def _run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run on uvloop where it is installed, as SGLang's HTTP server does.

    Measured (benchmarks/bench_accuracy.py, TTFT 50 ms injected, 16 streams): the client's median
    TTFT is 50.1-50.6 ms on uvloop against 50.9-51.2 ms on the default loop, whose Python-level
    callback dispatch delays a burst of first chunks.
    """
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    uvloop.run(main)


if __name__ == "__main__":
    main()
