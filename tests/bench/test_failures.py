"""Bad responses are failures with reasons; the run always finishes (real loopback HTTP peers)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterator

import pytest
from aiohttp import web

from pytest_sglang.bench import Workload, run_workload
from pytest_sglang.lifecycle.launch_plan import free_port

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

USAGE = (
    b'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}\n\n'
)
CONTENT = b'data: {"choices":[{"index":0,"delta":{"content":"hi "},"finish_reason":null}],"usage":null}\n\n'


@pytest.fixture
def peer() -> Iterator[Callable[[Handler], str]]:
    """``peer(handler)`` -> base URL of an aiohttp server on loopback running ``handler``."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    runners: list[web.AppRunner] = []

    def serve(handler: Handler) -> str:
        async def start() -> str:
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", handler)
            runner = web.AppRunner(app, handle_signals=False)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            runners.append(runner)
            port = runner.addresses[0][1]
            return f"http://127.0.0.1:{port}"

        return asyncio.run_coroutine_threadsafe(start(), loop).result(10)

    yield serve
    for runner in runners:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(30)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


def stream_of(*events: bytes, pause: float = 0.0) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        if request.method == "GET":
            return web.json_response({"internal_states": [{}]})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for event in events:
            await resp.write(event)
            if pause:
                await asyncio.sleep(pause)
        return resp

    return handler


def run(url: str, **options: object) -> object:
    options.setdefault("warmup_requests", 0)
    options.setdefault("request_timeout_s", 5.0)
    w = Workload.fixed_concurrency(2, num_requests=4, output_tokens=2, **options)
    return run_workload(url, w)


def test_well_formed_stream_completes(peer) -> None:
    r = run(peer(stream_of(CONTENT, CONTENT, USAGE, b"data: [DONE]\n\n")))
    assert (r.completed, r.failed) == (4, 0)
    assert r.total_output_tokens == 8


def test_http_error(peer) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"message": "overloaded"}, status=503)

    r = run(peer(handler))
    assert (r.completed, r.failed) == (0, 4)
    assert r.failures == {"HTTP 503": 4}
    assert "overloaded" in r.errors[0]


def test_truncated_stream(peer) -> None:
    r = run(peer(stream_of(CONTENT, CONTENT)))
    assert r.failures == {"truncated stream": 4}


def test_malformed_sse(peer) -> None:
    r = run(peer(stream_of(CONTENT, b"data: {not json\n\n", b"data: [DONE]\n\n")))
    assert r.failures == {"malformed SSE": 4}


def test_error_event(peer) -> None:
    r = run(
        peer(stream_of(CONTENT, b'data: {"error":{"message":"boom"}}\n\n', b"data: [DONE]\n\n"))
    )
    assert r.failures == {"server error": 4}
    assert "boom" in r.errors[0]


def test_missing_usage_is_a_failure_not_a_chunk_count(peer) -> None:
    r = run(peer(stream_of(CONTENT, CONTENT, b"data: [DONE]\n\n")))
    assert r.failures == {"no usage": 4}


def test_request_timeout(peer) -> None:
    r = run(
        peer(stream_of(CONTENT, CONTENT, USAGE, b"data: [DONE]\n\n", pause=2.0)),
        request_timeout_s=0.5,
    )
    assert r.failures == {"timeout": 4}


def test_connection_reset_mid_stream(peer) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(CONTENT)
        assert request.transport is not None
        request.transport.abort()
        return resp

    r = run(peer(handler))
    assert r.failed == 4
    assert set(r.failures) <= {"connection", "truncated stream"}


def test_nothing_listening(peer) -> None:
    r = run(f"http://127.0.0.1:{free_port()}")
    assert r.failures == {"connection": 4}


def test_run_deadline_bounds_a_hanging_server(peer) -> None:
    async def hang(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(4)
        return web.Response()

    began = time.monotonic()
    r = run(peer(hang), request_timeout_s=60, total_timeout_s=1.0)
    assert time.monotonic() - began < 10
    assert r.failures == {"run deadline": 4}


def test_requests_done_before_the_run_deadline_still_count(peer) -> None:
    calls = {"n": 0}
    done = stream_of(CONTENT, CONTENT, USAGE, b"data: [DONE]\n\n")

    async def first_hangs(request: web.Request) -> web.StreamResponse:
        if request.method == "POST":
            calls["n"] += 1
            if calls["n"] == 1:
                await asyncio.sleep(6)
        return await done(request)

    r = run(peer(first_hangs), request_timeout_s=60, total_timeout_s=2.0)
    assert (r.completed, r.failed) == (3, 1)
    assert r.failures == {"run deadline": 1}
