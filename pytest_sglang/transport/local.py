"""The machine pytest runs on, as a :class:`~pytest_sglang.transport.base.Transport`.

Used when the SGLang host is this machine (``local://``) and by tests of code above the
transport. Commands run through ``sh -c`` in their own process group so that a timeout kills
the command and everything it started, not just the shell.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import subprocess
import tempfile
import threading

from ..errors import CommandTimeout, TransportError
from .base import CommandResult, CommandStream, PortForward, Transport

__all__ = ["LocalCommandStream", "LocalPortForward", "LocalTransport"]

#: How long to wait for the pipes to drain after the process group was killed.
_DRAIN_SECONDS = 5.0


class LocalPortForward(PortForward):
    """Nothing to forward on this machine: the local port is the remote port."""

    def __init__(self, port: int) -> None:
        self.local_port = port

    def close(self) -> None:
        pass


class LocalTransport(Transport):
    """Run commands and move files on this machine."""

    def __init__(self, *, display_name: str = "local://localhost") -> None:
        self.name = display_name

    def _run(self, command: str, *, timeout: float) -> CommandResult:
        try:
            proc = subprocess.Popen(
                ["sh", "-c", command],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # own process group: a timeout kills all of it
            )
        except OSError as exc:
            raise TransportError(f"{self.name}: cannot start sh: {exc}", host=self.name) from exc
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._kill_group(proc)
            raise CommandTimeout(
                f"{self.name}: command ran past its {timeout:g}s timeout and was killed: "
                f"{_short(command)}",
                host=self.name,
            ) from None
        except BaseException:  # KeyboardInterrupt: do not leave the command running
            self._kill_group(proc)
            raise
        return CommandResult(
            command=command,
            rc=proc.returncode,
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
        )

    def _stream(self, command: str, stdin: bytes = b"") -> CommandStream:
        try:
            proc = subprocess.Popen(
                ["sh", "-c", command],
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            raise TransportError(f"{self.name}: cannot start sh: {exc}", host=self.name) from exc
        if stdin:
            threading.Thread(target=_feed, args=(proc, stdin), daemon=True).start()
        return LocalCommandStream(proc, command)

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        try:
            proc.communicate(timeout=_DRAIN_SECONDS)
        except subprocess.TimeoutExpired:
            # A grandchild left the group (setsid) and holds the pipes; stop waiting for it.
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
            proc.wait(timeout=_DRAIN_SECONDS)

    def put(self, data: bytes, path: str, *, mode: int = 0o644) -> None:
        """Write a temp file in the target directory (created 0600), chmod, fsync, rename."""
        directory = os.path.dirname(os.path.abspath(path))
        try:
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.")
        except OSError as exc:
            raise TransportError(
                f"{self.name}: cannot write {path}: {exc.strerror or exc}", host=self.name
            ) from exc
        try:
            with os.fdopen(fd, "wb") as handle:
                os.fchmod(handle.fileno(), mode)
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise TransportError(
                f"{self.name}: cannot write {path}: {exc.strerror or exc}", host=self.name
            ) from exc

    def get(self, path: str) -> bytes:
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, f"{self.name}: no such file", path) from None
        except OSError as exc:
            raise TransportError(
                f"{self.name}: cannot read {path}: {exc.strerror or exc}", host=self.name
            ) from exc

    def forward(self, remote_port: int, remote_host: str = "127.0.0.1") -> PortForward:
        return LocalPortForward(remote_port)


class LocalCommandStream(CommandStream):
    """A local command's stdout, read as it arrives (``select`` on the pipe: no polling)."""

    def __init__(self, proc: subprocess.Popen[bytes], command: str) -> None:
        self.proc = proc
        self.command = command
        self.end = ""

    def read(self, timeout: float) -> bytes | None:
        if self.end:
            return None
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], max(0.0, timeout))
        if not ready:
            return b""
        data = os.read(fd, 65536)
        if not data:
            self.end = "the command exited"
            self.proc.wait()
            return None
        return data

    def close(self) -> None:
        if not self.end:
            self.end = "closed"
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=_DRAIN_SECONDS)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    """Write a command's input and close it (in a thread: a pipe holds only 64 KiB)."""
    assert proc.stdin is not None
    with contextlib.suppress(OSError):
        proc.stdin.write(data)
    with contextlib.suppress(OSError):
        proc.stdin.close()


def _short(command: str, limit: int = 200) -> str:
    """A command for an error message: one line, bounded (it may be long or multi-line)."""
    flat = " ".join(command.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
