"""Deploy a config as a background process: the embedded ``local`` simulator, or a host
without systemd.

The server runs in its own session (``setsid``) with stdin from /dev/null and stdout+stderr
appended to ``server.log`` in a per-deployer state directory. That log is the "journal": a
cursor is a byte offset (as a string). The state follows systemd's vocabulary so callers need
not care which backend ran the server; like the unit's ``SuccessExitStatus=SIGKILL``, a death by
SIGKILL/SIGTERM/SIGINT/SIGHUP/SIGPIPE counts as a clean stop (SGLang kills itself on shutdown).

Port rule: when the config has no ``port``, the deployer picks a free loopback port at each
deploy and appends ``--port N`` to the argv (unless the argv already carries ``--port``);
``base_url`` then points at it. Environment: the host's ``env``, then the caller's
``SGLANG_SIM_*`` variables (so ``SGLANG_SIM_SPEED_FACTOR=0.9 pytest scenarios/`` runs a slower
build), then the config's ``env``, plus ``PYTHONUNBUFFERED=1``.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import tempfile
import time
from typing import IO, TYPE_CHECKING

from ..errors import DeployError, TransportError
from .base import Deployer, JournalEntry, ServiceState, launch_argv

if TYPE_CHECKING:
    from ..config import ServerConfig
    from ..hosts import HostSpec
    from ..transport.base import PortForward, Transport

__all__ = ["ProcessDeployer", "free_port"]

_CLEAN_SIGNALS = {signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE}
_LOCAL_ADDRS = ("", "0.0.0.0", "127.0.0.1", "localhost", "::", "::1")

# Remote wrapper: runs the server, records its pid and its exit status (128+N for signal N).
_WRAPPER = """#!/bin/sh
cd "$(dirname "$0")" || exit 1
set -a; . ./env.sh; set +a
rm -f status
echo "$$" > pgid
"$@" </dev/null >>server.log 2>&1 &
child=$!
echo "$child" > pid
trap 'kill -TERM "$child" 2>/dev/null' TERM INT HUP
while :; do
  wait "$child"; rc=$?
  kill -0 "$child" 2>/dev/null || break
done
echo "$rc" > status.tmp && mv status.tmp status
"""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _state_from_exit(code: str, status: int) -> ServiceState:
    clean = (code == "exited" and status == 0) or (code == "killed" and status in _CLEAN_SIGNALS)
    return ServiceState(
        active_state="inactive" if clean else "failed",
        sub_state="dead" if clean else "failed",
        main_pid=0,
        exec_main_code=code,
        exec_main_status=status,
        n_restarts=0,
        result="success" if clean else ("exit-code" if code == "exited" else "signal"),
    )


_NEVER_RAN = ServiceState("inactive", "dead", 0, "", 0, 0, "success")


class ProcessDeployer(Deployer):
    """Runs the server as a background process; ``restore`` stops it and puts back any
    ``files`` the configs overwrote."""

    def __init__(self, spec: HostSpec, transport: Transport, *, stop_timeout: float = 30.0):
        super().__init__(spec, transport)
        self.stop_timeout = stop_timeout
        self.local = spec.kind == "local"
        self._state_dir: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._port: int | None = None
        self._killed_by_us = False
        self._started = False
        self._file_backup: dict[str, tuple[bytes, int] | None] = {}
        self._forwards: dict[tuple[str, int], PortForward] = {}
        self._last_argv: list[str] | None = None
        self._last_env: dict[str, str] | None = None

    def launcher_env(self) -> dict[str, str]:
        env = dict(self.spec.env)
        env.update({k: v for k, v in os.environ.items() if k.startswith("SGLANG_SIM_")})
        return env

    # -- state directory --------------------------------------------------------------------
    @property
    def state_dir(self) -> str:
        if self._state_dir is None:
            if self.local:
                self._state_dir = tempfile.mkdtemp(prefix="pytest-sglang-")
            else:
                out = self.transport.check_output("mktemp -d /tmp/pytest-sglang.XXXXXX")
                self._state_dir = out.strip()
        return self._state_dir

    @property
    def log_path(self) -> str:
        return f"{self.state_dir}/server.log"

    def _log_size(self) -> int:
        if self.local:
            try:
                return os.path.getsize(self.log_path)
            except FileNotFoundError:
                return 0
        out = self.transport.run("wc -c < %s 2>/dev/null || echo 0", self.log_path).stdout
        return int(out.strip() or 0)

    # -- files ------------------------------------------------------------------------------
    def _put_files(self, config: ServerConfig) -> None:
        for dest, spec in config.files.items():
            data = spec.data()
            if dest not in self._file_backup:
                try:
                    old = self.transport.get(dest)
                    mode = int(self.transport.check_output("stat -c %%a %s", dest).strip(), 8)
                    self._file_backup[dest] = (old, mode)
                except FileNotFoundError:
                    self._file_backup[dest] = None
            self.transport.run("mkdir -p -- %s", os.path.dirname(dest))
            self.transport.put(data, dest, mode=spec.mode)

    # -- deploy -----------------------------------------------------------------------------
    def deploy(self, config: ServerConfig) -> str:
        self.preflight(config)
        self.stop()
        argv = launch_argv(self.spec) + config.to_argv(self.sglang_version())
        if "--port" not in argv and not any(a.startswith("--port=") for a in argv):
            self._port = config.port or free_port()
            if config.port is None:
                argv += ["--port", str(self._port)]
        else:
            self._port = config.port
        env = {**self.launcher_env(), **config.env, "PYTHONUNBUFFERED": "1"}
        self._put_files(config)
        cursor = str(self._log_size())
        self._killed_by_us = False
        if self.local:
            self._start_local(argv, env)
        else:
            self._start_remote(argv, env)
        self._started = True
        self._last_argv, self._last_env = argv, env
        return cursor

    def _start_local(self, argv: list[str], env: dict[str, str]) -> None:
        if self._log is None:
            self._log = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the child
        try:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **env},
                cwd=self.state_dir,
            )
        except OSError as exc:
            raise DeployError(
                f"host {self.spec.name!r}: cannot start {argv[0]}: {exc.strerror}; "
                f"check 'launch' in {self.spec.source}"
            ) from None
        with open(f"{self.state_dir}/pid", "w") as fh:
            fh.write(f"{self._proc.pid}\n")

    def _start_remote(self, argv: list[str], env: dict[str, str]) -> None:
        env_sh = "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items())
        self.transport.put(env_sh.encode(), f"{self.state_dir}/env.sh", mode=0o600)
        self.transport.put(_WRAPPER.encode(), f"{self.state_dir}/run.sh", mode=0o700)
        self.transport.run("rm -f -- %s %s", f"{self.state_dir}/pid", f"{self.state_dir}/status")
        command = "setsid sh %s" + " %s" * len(argv) + " </dev/null >/dev/null 2>&1 &"
        result = self.transport.run(command, f"{self.state_dir}/run.sh", *argv)
        if not result.ok:
            raise DeployError(f"host {self.spec.name!r}: cannot start the server (rc={result.rc})")
        for _ in range(100):  # the wrapper writes the pid file within milliseconds
            if self.transport.run("test -s %s", f"{self.state_dir}/pid").ok:
                return
            time.sleep(0.05)
        raise DeployError(f"host {self.spec.name!r}: the server wrapper did not start in 5 s")

    # -- journal ----------------------------------------------------------------------------
    def read_journal(self, after: str) -> tuple[list[JournalEntry], str]:
        offset = int(after or 0)
        if self.local:
            try:
                with open(self.log_path, "rb") as fh:
                    fh.seek(offset)
                    data = fh.read()
            except FileNotFoundError:
                data = b""
        else:
            try:
                data = self.transport.get(self.log_path)[offset:]
            except FileNotFoundError:
                data = b""
        if not self.state().exited:
            data = data[: data.rfind(b"\n") + 1]  # a partial last line waits for its end
        now_us = time.time_ns() // 1000
        entries: list[JournalEntry] = []
        position = offset
        for raw in data.splitlines(keepends=True):
            position += len(raw)
            text = raw.rstrip(b"\r\n").decode("utf-8", "replace")
            entries.append(JournalEntry(cursor=str(position), message=text, realtime_us=now_us))
        return entries, str(position)

    # -- state / stop -----------------------------------------------------------------------
    def state(self) -> ServiceState:
        if self.local:
            return self._local_state()
        return self._remote_state()

    def _local_state(self) -> ServiceState:
        if self._proc is None:
            return _NEVER_RAN
        rc = self._proc.poll()
        if rc is None:
            return ServiceState("active", "running", self._proc.pid, "", 0, 0, "success")
        if rc < 0:
            return _state_from_exit("killed", -rc)
        return _state_from_exit("exited", rc)

    def _remote_state(self) -> ServiceState:
        if not self._started:
            return _NEVER_RAN
        d = self.state_dir
        out = self.transport.run(
            "cat %s 2>/dev/null; echo; cat %s 2>/dev/null; echo", f"{d}/pid", f"{d}/status"
        ).stdout.split("\n")
        pid = int(out[0].strip() or 0) if out else 0
        status = out[1].strip() if len(out) > 1 else ""
        if status:
            rc = int(status)
            return (
                _state_from_exit("killed", rc - 128) if rc > 128 else _state_from_exit("exited", rc)
            )
        if pid and self.transport.run("kill -0 %s", pid).ok:
            return ServiceState("active", "running", pid, "", 0, 0, "success")
        # Gone without a status: the wrapper itself was killed (our SIGKILL, or from outside).
        return _state_from_exit("killed", int(signal.SIGKILL))

    def stop(self) -> None:
        """SIGTERM to the whole process group, SIGKILL after ``stop_timeout`` seconds."""
        if self.local:
            self._stop_local()
        elif self._started:
            self._stop_remote()

    def _stop_local(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            _killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                self._killed_by_us = True
                _killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        _killpg(proc.pid, signal.SIGKILL)  # leftovers of the group (KillMode=mixed)

    def _stop_remote(self) -> None:
        d = self.state_dir
        pgid = self.transport.run("cat %s 2>/dev/null", f"{d}/pgid").stdout.strip()
        if not pgid:
            return
        self.transport.run("kill -TERM -- -%s 2>/dev/null", pgid)
        deadline = time.monotonic() + self.stop_timeout
        while time.monotonic() < deadline:
            if self.state().exited:
                break
            time.sleep(0.1)
        self.transport.run("kill -KILL -- -%s 2>/dev/null", pgid)

    def base_url(self, config: ServerConfig) -> str:
        port = config.port or self._port
        if port is None:
            raise DeployError(f"host {self.spec.name!r}: no port known; deploy a config first")
        host = config.host or "127.0.0.1"
        remote = "127.0.0.1" if host in _LOCAL_ADDRS else host
        if self.local:
            return f"http://{remote}:{port}"
        key = (remote, port)
        if key not in self._forwards:
            self._forwards[key] = self.transport.forward(port, remote)
        return f"http://127.0.0.1:{self._forwards[key].local_port}"

    def restore(self) -> None:
        """Stop the server and put back files the configs overwrote (idempotent)."""
        self.stop()
        for dest, saved in list(self._file_backup.items()):
            try:
                if saved is None:
                    self.transport.run("rm -f -- %s", dest)
                else:
                    self.transport.put(saved[0], dest, mode=saved[1])
            except TransportError as exc:
                raise DeployError(f"host {self.spec.name!r}: cannot restore {dest}: {exc}") from exc
            del self._file_backup[dest]

    def close(self) -> None:
        for forward in self._forwards.values():
            forward.close()
        self._forwards.clear()
        if self._log is not None:
            self._log.close()
            self._log = None
        super().close()


def _killpg(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
