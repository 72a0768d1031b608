"""The simulator's arrival clock over real loopback sockets: a request is dated by its first bytes."""

from __future__ import annotations

import asyncio
import time

from pytest_sglang.sim.arrival import ArrivalClock


class Recorder(asyncio.Protocol):
    """Stands in for aiohttp's protocol: keeps what it was told, in order."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.transport: asyncio.BaseTransport | None = None
        self.data = asyncio.Queue[bytes]()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.calls.append("made")

    def data_received(self, data: bytes) -> None:
        self.calls.append("data")
        self.data.put_nowait(data)

    def eof_received(self) -> bool | None:
        self.calls.append("eof")
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.calls.append("lost")


async def _scenario() -> None:
    clock = ArrivalClock()
    inner: list[Recorder] = []

    def make() -> Recorder:
        inner.append(Recorder())
        return inner[-1]

    server = await asyncio.get_running_loop().create_server(
        clock.protocol_factory(make), "127.0.0.1", 0
    )
    port = server.sockets[0].getsockname()[1]
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        sent = time.monotonic()
        writer.write(b"POST /generate HTTP/1.1\r\n")
        await writer.drain()
        await inner[0].data.get()
        await asyncio.sleep(0.05)
        second = time.monotonic()
        writer.write(b"body")  # more bytes of the same request: they must not move its stamp
        await writer.drain()
        await inner[0].data.get()
        transport = inner[0].transport
        stamp = clock.take(transport)
        # dated by the first bytes, not by the later ones or by when the handler asked
        assert sent <= stamp < second
        # bytes read while the request is handled belong to it; after the response, forgotten
        writer.write(b"more body")
        await writer.drain()
        await inner[0].data.get()
        clock.forget(transport)
        asked = time.monotonic()
        assert clock.take(transport) >= asked  # nothing pending: now
        # the next request on the connection gets its own stamp
        writer.write(b"GET /health HTTP/1.1\r\n")
        await writer.drain()
        await inner[0].data.get()
        received = time.monotonic()
        await asyncio.sleep(0.05)
        assert asked < clock.take(transport) <= received
    finally:
        writer.close()
        await writer.wait_closed()
        await asyncio.sleep(0.05)
        server.close()
        await server.wait_closed()
    assert inner[0].calls[0] == "made" and inner[0].calls[-1] == "lost"
    assert not clock._pending  # the closed connection left nothing behind


def test_requests_are_dated_by_their_first_bytes() -> None:
    asyncio.run(_scenario())
