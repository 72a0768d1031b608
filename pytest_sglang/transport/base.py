"""The transport contract: run a command, move a file, forward a port.

Quoting happens here and nowhere else: callers write ``t.run("cat -- %s", path)`` and every
argument is ``shlex.quote``-d before it reaches a shell. ``run`` never raises on a non-zero exit
status (that is a result, not an error); it raises :class:`~pytest_sglang.errors.TransportError`
subclasses only when the command could not be run at all, or ran past its timeout.
"""

from __future__ import annotations

import shlex
from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import TracebackType

from ..errors import TransportError

__all__ = ["CommandResult", "PortForward", "Transport"]


@dataclass(frozen=True)
class CommandResult:
    """What a finished command returned."""

    command: str
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0


class PortForward(ABC):
    """A local TCP port that reaches ``remote_host:remote_port`` as seen from the host."""

    local_port: int

    @abstractmethod
    def close(self) -> None: ...


class Transport(ABC):
    """One host, reached somehow. Subclasses implement the ``_``-prefixed primitives."""

    #: Human-readable name of the host for error messages (``ssh://root@llm-two:22``).
    name: str = "?"

    def run(self, command: str, *args: object, timeout: float = 60.0) -> CommandResult:
        """Run ``command % quoted(args)`` through ``sh -c`` on the host."""
        if args:
            command = command % tuple(shlex.quote(str(a)) for a in args)
        return self._run(command, timeout=timeout)

    def check_output(self, command: str, *args: object, timeout: float = 60.0) -> str:
        """Run a command and return its stdout; a non-zero status raises TransportError."""
        __tracebackhide__ = True
        result = self.run(command, *args, timeout=timeout)
        if not result.ok:
            detail = (result.stderr or result.stdout).strip().splitlines()
            last = detail[-1] if detail else "no output"
            raise TransportError(
                f"{self.name}: command failed (rc={result.rc}): {result.command!s}: {last}",
                host=self.name,
            )
        return result.stdout

    @abstractmethod
    def _run(self, command: str, *, timeout: float) -> CommandResult: ...

    @abstractmethod
    def put(self, data: bytes, path: str, *, mode: int = 0o644) -> None:
        """Write ``data`` to ``path`` on the host atomically, with ``mode``."""

    @abstractmethod
    def get(self, path: str) -> bytes:
        """Read a file from the host; FileNotFoundError if it does not exist."""

    @abstractmethod
    def forward(self, remote_port: int, remote_host: str = "127.0.0.1") -> PortForward:
        """Open a local port that reaches ``remote_host:remote_port`` from the host's side."""

    def close(self) -> None:  # noqa: B027 - optional for transports without state
        """Release connections; the transport may be reused afterwards (it reconnects)."""

    def __enter__(self) -> Transport:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
