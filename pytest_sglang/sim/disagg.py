"""Prefill/decode disaggregation: ``--disaggregation-mode prefill|decode``.

What the router in PD mode (``sglang_router.launch_router --pd-disaggregation --prefill URL
BOOTSTRAP_PORT --decode URL``, 0.3.2) does, as captured: it sends each request to one prefill
and one decode server, both with the same ``bootstrap_host`` (the prefill server's host),
``bootstrap_port`` and ``bootstrap_room``, and answers with the decode server's response.

Modelled here: a prefill server listens on ``--disaggregation-bootstrap-port`` (default 8998)
as SGLang's bootstrap server does; a request with a ``bootstrap_room`` is prefilled and produces
its first token only, after which its KV cache is "sent": the room is marked done. A decode
server asks the prefill server's bootstrap port for the room (``GET /kv/{room}``, answered once
the prefill is done), then decodes the request without computing its prompt again (the prompt's
tokens arrived with the KV cache). A request without a room (warmup, a client that bypasses the
router) is served as by a plain server. Real transfer backends (mooncake, nixl) need RDMA or GPU
memory: none runs on a CPU, so this is what the plugin's PD topologies are tested against.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from aiohttp import ClientSession, ClientTimeout, web

from .logs import log

__all__ = ["Disagg", "disagg_of"]

#: How long a decode server waits for a room's KV before the request fails.
TRANSFER_TIMEOUT_S = 600.0
DEFAULT_BOOTSTRAP_PORT = 8998


class Disagg:
    """This server's part in PD disaggregation: its ``mode`` and, on a prefill server, the
    rooms whose prefill is done."""

    def __init__(self, mode: str, bootstrap_port: int) -> None:
        self.mode = mode
        self.bootstrap_port = bootstrap_port
        self._rooms: dict[str, asyncio.Event] = {}
        self._runner: web.AppRunner | None = None

    def _room(self, room: Any) -> asyncio.Event:
        return self._rooms.setdefault(str(room), asyncio.Event())

    def sent(self, room: Any) -> None:
        """A prefill server: the room's KV cache is sent (its prefill is done)."""
        self._room(room).set()

    async def start_bootstrap(self, host: str) -> None:
        """A prefill server's bootstrap port: ``GET /kv/{room}`` answers once it is sent."""
        app = web.Application()
        app.router.add_get("/kv/{room}", self._serve_room)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, self.bootstrap_port, reuse_address=True).start()
        log(f"Bootstrap server started at {host}:{self.bootstrap_port}")

    async def _serve_room(self, request: web.Request) -> web.Response:
        event = self._room(request.match_info["room"])
        try:
            await asyncio.wait_for(event.wait(), TRANSFER_TIMEOUT_S)
        except asyncio.TimeoutError:
            return web.Response(status=504)
        self._rooms.pop(request.match_info["room"], None)
        return web.json_response({"status": "sent"})

    async def receive(self, body: dict[str, Any]) -> None:
        """A decode server: wait for the request's KV cache from its prefill server; a
        ValueError says why it cannot arrive."""
        host = body.get("bootstrap_host")
        port = body.get("bootstrap_port") or DEFAULT_BOOTSTRAP_PORT
        room = body.get("bootstrap_room")
        if not host:
            raise ValueError("bootstrap_host is required in decode mode")
        url = f"http://{host}:{port}/kv/{room}"
        timeout = ClientTimeout(total=TRANSFER_TIMEOUT_S)
        try:
            async with ClientSession(timeout=timeout) as session, session.get(url) as resp:
                if resp.status != 200:
                    raise ValueError(f"KV transfer from {host}:{port} failed: {resp.status}")
        except (OSError, asyncio.TimeoutError) as exc:
            raise ValueError(f"KV transfer from {host}:{port} failed: {exc!r}") from None

    async def close(self) -> None:
        if self._runner is not None:
            with contextlib.suppress(Exception):
                await self._runner.cleanup()


def disagg_of(args: dict[str, Any]) -> Disagg | None:
    """This server's disaggregation mode, None for a plain server."""
    mode = str(args.get("disaggregation_mode") or "null")
    if mode not in ("prefill", "decode"):
        return None
    port = int(args.get("disaggregation_bootstrap_port") or DEFAULT_BOOTSTRAP_PORT)
    return Disagg(mode, port)
