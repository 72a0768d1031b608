"""Port forwarding over an SSH connection, like ``ssh -L 127.0.0.1:<ephemeral>:host:port``.

A listening socket on 127.0.0.1 accepts connections; each one gets its own ``direct-tcpip``
channel on the transport's connection and a relay thread that copies both ways (half-closes
included) until either side is done. ``close()`` stops accepting, cuts open relays and joins
the threads with a bound, so a test never hangs on a forward.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from typing import TYPE_CHECKING

import paramiko

from ..errors import TransportError
from .base import PortForward

if TYPE_CHECKING:
    from .ssh import SshTransport

__all__ = ["SshPortForward"]

_CHUNK = 65536
_POLL = 0.2  # how often the accept and relay loops notice close()


class SshPortForward(PortForward):
    """127.0.0.1:<ephemeral> whose connections are relayed through ``direct-tcpip`` channels."""

    def __init__(self, owner: SshTransport, remote_host: str, remote_port: int) -> None:
        self._owner = owner
        self.remote_host = remote_host
        self.remote_port = remote_port
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.local_port: int = self._listener.getsockname()[1]
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._live: set[socket.socket | paramiko.Channel] = set()
        self._threads: set[threading.Thread] = set()
        self._acceptor = threading.Thread(
            target=self._accept_loop, name=f"sglang-forward-{self.local_port}", daemon=True
        )
        self._acceptor.start()

    def __repr__(self) -> str:
        return (
            f"SshPortForward(127.0.0.1:{self.local_port} -> "
            f"{self._owner.name} {self.remote_host}:{self.remote_port})"
        )

    def __enter__(self) -> SshPortForward:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                ready, _, _ = select.select([self._listener], [], [], _POLL)
                if not ready:
                    continue
                conn, _ = self._listener.accept()
            except (OSError, ValueError):  # closed under us
                return
            worker = threading.Thread(target=self._relay, args=(conn,), daemon=True)
            with self._lock:
                if self._closed.is_set():
                    conn.close()
                    return
                self._threads.add(worker)
            worker.start()

    def _relay(self, conn: socket.socket) -> None:
        chan: paramiko.Channel | None = None
        try:
            try:
                chan = self._owner._open_tunnel(
                    self.remote_host, self.remote_port, conn.getpeername()
                )
            except (TransportError, OSError):
                return  # the client sees the connection closed, as with ssh -L
            with self._lock:
                if self._closed.is_set():
                    return
                self._live.update((conn, chan))
            self._pump(conn, chan)
        finally:
            if chan is not None:
                # On a dropped connection paramiko raises from close(); the channel is gone anyway.
                with contextlib.suppress(EOFError, OSError, paramiko.SSHException):
                    chan.close()
            conn.close()
            with self._lock:
                self._live.discard(conn)
                if chan is not None:
                    self._live.discard(chan)
                self._threads.discard(threading.current_thread())

    def _pump(self, conn: socket.socket, chan: paramiko.Channel) -> None:
        """Copy both ways until both sides are done; half-closes are passed on."""
        open_ends: list[socket.socket | paramiko.Channel] = [conn, chan]
        while open_ends and not self._closed.is_set():
            try:
                ready, _, _ = select.select(open_ends, [], [], _POLL)
                for end in ready:
                    data = end.recv(_CHUNK)
                    if end is conn:
                        if data:
                            chan.sendall(data)
                        else:
                            chan.shutdown_write()
                            open_ends.remove(conn)
                    elif data:
                        conn.sendall(data)
                    else:
                        conn.shutdown(socket.SHUT_WR)
                        open_ends.remove(chan)
            except (OSError, EOFError, ValueError, paramiko.SSHException):
                return

    def close(self) -> None:
        """Stop accepting, cut open relays and wait (bounded) for their threads."""
        with self._lock:
            if self._closed.is_set():
                return
            self._closed.set()
            live, threads = list(self._live), list(self._threads)
        self._listener.close()
        for end in live:
            end.close()
        self._acceptor.join(timeout=2.0)
        for worker in threads:
            worker.join(timeout=2.0)
        self._owner._forwards.discard(self)
