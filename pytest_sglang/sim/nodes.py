"""Multi-node: ``--nnodes N --node-rank R --dist-init-addr HOST:PORT``, as 0.5.23 runs it.

Every node's schedulers join the first node's rendezvous at ``dist_init_addr`` (torch's store,
which the first node's ``scheduler_TP0`` listens on) while "Init parallel" runs: the first node
waits there until all N have joined, then serves the API as usual. The other nodes (followers)
run no tokenizer or HTTP API: once their schedulers are up they start a health server on their
own ``--host``/``--port`` (``Dummy health check server started in background thread at ...``:
``/health`` answers 200, nothing else is served) and block until the schedulers exit, which
happens when the first node stops (its ShutdownReq broadcast). SIGTERM on a follower only logs
that it waits for that broadcast (``engine.py`` ``_launch_subprocesses``).

Modelled here with one TCP connection per follower to the first node's rendezvous port: the
first node counts them; a follower stops when that connection closes (the first node ended).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import Any

from aiohttp import web

from .logs import log

__all__ = ["Rendezvous", "rendezvous", "serve_follower"]

#: How often a follower tries the first node's rendezvous port until it answers.
_RETRY_S = 0.2


class Rendezvous:
    """This node's place in a multi-node server: ``rank``, ``nnodes``, and (followers) the
    connection to the first node."""

    def __init__(self, rank: int, nnodes: int) -> None:
        self.rank = rank
        self.nnodes = nnodes
        self.reader: asyncio.StreamReader | None = None
        #: Kept: a writer that is garbage collected closes its connection.
        self.writer: asyncio.StreamWriter | None = None
        self.server: asyncio.Server | None = None
        self.peers: list[asyncio.StreamWriter] = []


def _address(args: dict[str, Any]) -> tuple[str, int]:
    host, _, port = str(args.get("dist_init_addr") or "127.0.0.1:5000").rpartition(":")
    return host or "127.0.0.1", int(port)


async def rendezvous(args: dict[str, Any]) -> Rendezvous | None:
    """Join the multi-node group (None for one node): the first node listens and waits for
    every other; the others connect (retrying until the first node listens)."""
    nnodes = int(args.get("nnodes") or 1)
    if nnodes <= 1:
        return None
    node = Rendezvous(int(args.get("node_rank") or 0), nnodes)
    host, port = _address(args)
    if node.rank == 0:
        joined = asyncio.Event()

        async def on_join(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            node.peers.append(writer)
            if len(node.peers) >= nnodes - 1:
                joined.set()

        node.server = await asyncio.start_server(on_join, host, port, reuse_address=True)
        await joined.wait()
        return node
    while node.reader is None:
        with contextlib.suppress(OSError):
            node.reader, node.writer = await asyncio.open_connection(host, port)
            break
        await asyncio.sleep(_RETRY_S)
    return node


async def _ok(_request: web.Request) -> web.Response:
    return web.Response(status=200)


async def serve_follower(node: Rendezvous, args: dict[str, Any]) -> None:
    """A follower once its schedulers are up: the health server, then wait for the first node
    to end (SIGTERM alone only says so)."""
    assert node.reader is not None
    app = web.Application()
    for path in ("/health", "/health_generate"):
        app.router.add_get(path, _ok)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    host = str(args.get("host") or "127.0.0.1")
    port = int(args.get("port") or 30000)
    await web.TCPSite(runner, host, port, reuse_address=True).start()
    log(f"Dummy health check server started in background thread at {host}:{port}")

    def on_sigterm() -> None:
        log(
            f"SIGTERM received on node_rank {node.rank}; waiting for the rank-0 ShutdownReq "
            "broadcast to stop the schedulers."
        )

    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_sigterm)
    await node.reader.read()  # b"" once the first node is gone
    log(f"Scheduler or DataParallelController {node.rank} terminated with 0")
    log(f"Dummy health check server stopped at {host}:{port}")
