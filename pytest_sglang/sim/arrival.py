"""When a request arrived: stamped as its first bytes are read from the socket.

Why not in the first middleware: between aiohttp reading a request and its first middleware
running, the connection's handler task has to be resumed and the request object built; measured
(benchmarks/bench_accuracy.py with server-side stamps on the same clock) that took 0.36 ms at the
median for evenly spaced requests and 0.63 ms for a burst of 16, and an injected TTFT timed from
the middleware ran late by as much. Each connection's protocol is wrapped so that the first
``data_received`` of a request notes the time; the middleware takes that stamp, and the bytes
read while the request is handled (its body) are forgotten when its response is done, so they
cannot date the next request on the connection. Clients do not pipeline requests; a pipelined
request would be stamped when its handler runs, as before.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

__all__ = ["ArrivalClock"]


class ArrivalClock:
    """Per-connection arrival stamps of the request being received (``time.monotonic``)."""

    def __init__(self) -> None:
        self._pending: dict[Any, float] = {}

    def protocol_factory(
        self, inner: Callable[[], asyncio.BaseProtocol]
    ) -> Callable[[], asyncio.Protocol]:
        """A ``loop.create_server`` factory: ``inner``'s protocols, stamped as they read."""

        def make() -> asyncio.Protocol:
            return _Stamping(inner(), self._pending)

        return make

    def take(self, transport: Any) -> float:
        """The arrival of the request now being handled on ``transport`` (now when unknown)."""
        now = time.monotonic()
        stamp = self._pending.pop(transport, None) if transport is not None else None
        return stamp if stamp is not None and stamp <= now else now

    def forget(self, transport: Any) -> None:
        """The response is done: bytes read so far belonged to the request just answered."""
        if transport is not None:
            self._pending.pop(transport, None)


class _Stamping(asyncio.Protocol):
    """Forwards every protocol call to aiohttp's handler; notes the first read of a request."""

    def __init__(self, inner: asyncio.BaseProtocol, pending: dict[Any, float]) -> None:
        self.inner = inner
        self.pending = pending
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.transport not in self.pending:
            self.pending[self.transport] = time.monotonic()
        self.inner.data_received(data)  # type: ignore[attr-defined]

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()  # type: ignore[attr-defined,no-any-return]

    def connection_lost(self, exc: Exception | None) -> None:
        self.pending.pop(self.transport, None)
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()
