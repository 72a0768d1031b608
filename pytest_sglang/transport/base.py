"""The transport contract: run a command, follow a command's output, move a file, forward a port.

Quoting happens here and nowhere else: callers write ``t.run("cat -- %s", path)`` and every
argument is ``shlex.quote``-d before it reaches a shell. ``run`` never raises on a non-zero exit
status (that is a result, not an error); it raises :class:`~pytest_sglang.errors.TransportError`
subclasses only when the command could not be run at all, or ran past its timeout. ``stream``
starts a long-running command (``journalctl -f``, ``tail -F``) whose stdout is read as it
arrives, so a caller waits on events instead of polling with a command per look.
"""

from __future__ import annotations

import shlex
from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import TracebackType

from ..errors import TransportError

__all__ = ["CommandResult", "CommandStream", "LinkWatch", "PortForward", "Transport"]


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


class CommandStream(ABC):
    """The stdout of a command that keeps running, read as it arrives.

    ``read`` never raises on the command's or the connection's end: it returns None from then
    on, and ``end`` says which it was, so a follower can decide to reopen from where it was.
    """

    #: The command as given (for messages).
    command: str = ""
    #: Why the stream ended ("" while it runs): the command exited, or the connection dropped.
    end: str = ""

    @abstractmethod
    def read(self, timeout: float) -> bytes | None:
        """What arrived, waiting up to ``timeout`` s for something: ``b""`` when nothing came
        in time, None once the stream has ended."""

    @abstractmethod
    def close(self) -> None:
        """Stop reading and end the command (idempotent)."""

    def __enter__(self) -> CommandStream:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class LinkWatch(ABC):
    """Round trips over a host's connection, timed while a benchmark runs, never reconnecting.

    ``stop`` returns ``(sent, seconds)`` of each (``perf_counter``); one still unanswered counts
    with the time it has waited so far, so a link that is cut at the end still shows.
    """

    @abstractmethod
    def stop(self) -> list[tuple[float, float]]: ...


class PortForward(ABC):
    """A local TCP port that reaches ``remote_host:remote_port`` as seen from the host."""

    local_port: int

    @abstractmethod
    def close(self) -> None: ...


class Transport(ABC):
    """One host, reached somehow. Subclasses implement the ``_``-prefixed primitives."""

    #: Human-readable name of the host for error messages (``ssh://root@llm-two:22``).
    name: str = "?"
    #: Commands run or streamed and files moved so far: each is one round trip to the host
    #: (what ``benchmarks/lifecycle_latency.py`` prints per deployment).
    round_trips: int = 0

    def run(self, command: str, *args: object, timeout: float = 60.0) -> CommandResult:
        """Run ``command % quoted(args)`` through ``sh -c`` on the host."""
        if args:
            command = command % tuple(shlex.quote(str(a)) for a in args)
        self.round_trips += 1
        return self._run(command, timeout=timeout)

    def stream(self, command: str, *args: object, stdin: bytes = b"") -> CommandStream:
        """Start ``command % quoted(args)`` through ``sh -c`` and follow its stdout (stderr is
        discarded); ``stdin`` is what the command reads before its end of input.
        TransportError when it cannot be started."""
        if args:
            command = command % tuple(shlex.quote(str(a)) for a in args)
        self.round_trips += 1
        return self._stream(command, stdin)

    #: Connections opened so far: one more during a benchmark means it reconnected meanwhile.
    connects: int = 0

    def watch_link(self) -> LinkWatch | None:
        """Start timing round trips over the open connection (the stall check of a benchmark
        reads them); None where there is no connection to time (this machine)."""
        return None

    def _stream(self, command: str, stdin: bytes = b"") -> CommandStream:
        """Transports that cannot follow a command say so; callers fall back to polling."""
        raise NotImplementedError(f"{type(self).__name__} cannot stream a command")

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
