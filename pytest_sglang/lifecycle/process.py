"""Deploy a config as a background process: the embedded ``local`` simulator, or a host
without systemd.

The server runs in its own session (``setsid``) with stdin from /dev/null and stdout+stderr
appended to ``server.log`` in a per-deployer state directory. That log is the "journal": a
cursor is a byte offset (as a string). The state follows systemd's vocabulary so callers need
not care which backend ran the server; like the unit's ``SuccessExitStatus=SIGKILL``, a death by
SIGKILL/SIGTERM/SIGINT/SIGHUP/SIGPIPE counts as a clean stop (SGLang kills itself on shutdown).

Port rule: a config without ``port`` gets a free one in its launch plan (``picks_port``),
unless the launcher already carries ``--port``. Environment: the host's ``env``, then the
caller's ``SGLANG_SIM_*`` variables (so ``SGLANG_SIM_SPEED_FACTOR=0.9 pytest scenarios/`` runs a
slower build), ``PYTHONUNBUFFERED=1``, then the config's ``env``.

Crash safety: like the systemd deployer, the files a config overwrites are recorded and copied
into a backup on the host (:mod:`.backup`) before they change, together with the server's
process group and state directory. A session killed before restoring leaves that record; the
next session (or ``--sglang-restore``) stops the orphaned server (only if that process group
still runs in the recorded directory) and puts the files back. On the embedded ``local`` host
each deployer keeps its own record, named by its session's pid and a number (one process can
run several deployers at once: a test's own beside the session's server), and recovers those of
dead sessions.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import posixpath
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..cmdline import shell_assignments
from ..errors import DeployError, RestoreError, TransportError
from .backup import HostBackup
from .deployer import Deployer, DeployerSettings, JournalEntry, ServiceState
from .follow import JournalFollower, StreamFollower
from .spec import HostSpec
from .unit import EXIT_MARKER

if TYPE_CHECKING:
    from ..transport.base import Transport
    from .launch_plan import LaunchPlan

__all__ = ["ProcessDeployer"]

#: Numbers the local deployers of this process: each has its own backup directory, so that one
#: restoring (which removes its directory) never removes another's record and copies.
_LOCAL_DEPLOYERS = itertools.count(1)
_CLEAN_SIGNALS = {signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE}
#: Where backups live, under the user's state directory on the host.
_BACKUP_SUBDIR = ".local/state/pytest-sglang/process"
# Stops an orphaned server group ($1) only if its leader still runs in its state dir ($2): a
# recycled process-group id belongs to somebody else.
_STOP_ORPHAN = """
[ "$(readlink "/proc/$1/cwd" 2>/dev/null)" = "$2" ] || exit 0
kill -TERM "-$1" 2>/dev/null
i=0
while [ $i -lt 100 ] && [ -d "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status"; do
  sleep 0.1; i=$((i + 1))
done
kill -KILL "-$1" 2>/dev/null
exit 0
"""

# Remote wrapper: runs the server, records its pid and its exit status (128+N for signal N).
_WRAPPER = f"""#!/bin/sh
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
echo "{EXIT_MARKER} status=$rc" >>server.log
"""

# $1 the state dir, then the argv: start the wrapper in its own session and wait (on the host:
# one round trip) until it has written its pid file, which takes milliseconds; 3: it never did.
_START = """d=$1; shift
rm -f -- "$d/pid" "$d/status"
setsid sh "$d/run.sh" "$@" </dev/null >/dev/null 2>&1 &
i=0
while [ ! -s "$d/pid" ]; do
  [ "$i" -ge 100 ] && exit 3
  sleep 0.05; i=$((i + 1))
done
"""

# $1 the state dir: the server's pid, its exit status (none while it runs) and 1 if the pid runs.
_STATE = """p=$(cat "$1/pid" 2>/dev/null); s=$(cat "$1/status" 2>/dev/null); a=0
[ -n "$p" ] && kill -0 "$p" 2>/dev/null && a=1
printf '%s\\n%s\\n%s\\n' "$p" "$s" "$a"
"""


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

    picks_port = True

    def __init__(
        self,
        spec: HostSpec,
        transport: Transport,
        settings: DeployerSettings | None = None,
        *,
        stop_timeout: float = 30.0,
    ) -> None:
        super().__init__(spec, transport, settings)
        self.stop_timeout = stop_timeout
        self.local = spec.kind == "local"
        self._state_dir: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._killed_by_us = False
        self._started = False
        self._backup: HostBackup | None = None
        self._leftovers: list[HostBackup] = []
        self._exit_watch: threading.Thread | None = None

    def launcher_env(self) -> dict[str, str]:
        env = dict(self.spec.env)
        env.update({k: v for k, v in os.environ.items() if k.startswith("SGLANG_SIM_")})
        env.update(self.spec.launcher_env)  # a named launcher's own (a simulator's release)
        env["PYTHONUNBUFFERED"] = "1"
        return env

    # -- backup -----------------------------------------------------------------------------
    def _backup_root(self) -> str:
        if self.local:
            state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local/state")
            return f"{state}/pytest-sglang/process"
        home = self.transport.check_output('printf "%%s" "$HOME"').strip() or "/tmp"
        return f"{home}/{_BACKUP_SUBDIR}"

    @property
    def backup(self) -> HostBackup:
        """This deployer's backup: per deployer on ``local`` (sessions there run side by side,
        and a session can run several deployers), per host elsewhere (the host lock makes this
        session the only one)."""
        if self._backup is None:
            name = f"local-{os.getpid()}-{next(_LOCAL_DEPLOYERS)}" if self.local else self.spec.name
            self._backup = HostBackup(
                self.transport, f"{self._backup_root()}/{name}", host=self.spec.name
            )
        return self._backup

    def pending_intent(self) -> dict[str, Any] | None:
        """The record of an earlier session that never restored (on ``local``: of every
        session whose process is gone; the first is returned, all are restored)."""
        if not self.local:
            dead = [] if self.backup.manifest is not None else [self.backup.directory]
        else:
            root = Path(self._backup_root())
            dead = [
                str(directory)
                for directory in (sorted(root.glob("local-*")) if root.is_dir() else [])
                if _dead_session(directory.name)
            ]
        self._leftovers = []
        for directory in dead:
            leftover = HostBackup(self.transport, directory, host=self.spec.name)
            leftover.manifest = leftover.read()
            if leftover.manifest is not None:
                self._leftovers.append(leftover)
        return self._leftovers[0].manifest if self._leftovers else None

    def _record_server(self) -> None:
        """Name the running server's process group and state dir in the intent record."""
        manifest = self.backup.begin(
            self.settings.owner, changes={"files": [], "restarts": []}, service={}
        )
        pgid = self._proc.pid if self._proc is not None else self._remote_pgid()
        manifest["service"] = {"state_dir": self.state_dir, "pgid": pgid}
        self.backup.save()

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

    # -- deploy -----------------------------------------------------------------------------
    def deploy(self, plan: LaunchPlan) -> str:
        self.preflight(plan)
        self.stop()
        if plan.files:
            self.backup.begin(
                self.settings.owner, changes={"files": list(plan.files), "restarts": []}, service={}
            )
            self.backup.back_up(list(plan.files))
            for dest, spec in plan.files.items():
                self.backup.write(dest, spec.data(), spec.mode)
        cursor = str(self._log_size())
        self._killed_by_us = False
        if self.local:
            self._start_local(plan.argv, dict(plan.env))
        else:
            self._start_remote(plan.argv, dict(plan.env))
        self._started = True
        self._record_server()
        self._deployed(plan)
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
        self._exit_watch = threading.Thread(
            target=_log_exit, args=(self._proc, self.log_path), daemon=True
        )
        self._exit_watch.start()

    def _start_remote(self, argv: list[str], env: dict[str, str]) -> None:
        self.transport.put(shell_assignments(env).encode(), f"{self.state_dir}/env.sh", mode=0o600)
        self.transport.put(_WRAPPER.encode(), f"{self.state_dir}/run.sh", mode=0o700)
        command = "sh -c %s sh %s" + " %s" * len(argv)
        result = self.transport.run(command, _START, self.state_dir, *argv)
        if result.rc == 3:
            raise DeployError(f"host {self.spec.name!r}: the server wrapper did not start in 5 s")
        if not result.ok:
            raise DeployError(f"host {self.spec.name!r}: cannot start the server (rc={result.rc})")

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

    def follow(self, after: str) -> JournalFollower:
        """``tail -F`` of the log from byte ``after`` (inotify: each line as it is written);
        the exit record (written when the server ends) wakes the reader like systemd's."""
        try:
            stream = self.transport.stream(
                "exec tail -c +%s -F -- %s 2>/dev/null", int(after or 0) + 1, self.log_path
            )
        except NotImplementedError:
            return super().follow(after)
        return StreamFollower(stream, str(int(after or 0)), _log_entry)

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
        out = self.transport.run("sh -c %s sh %s", _STATE, d).stdout.split("\n")
        pid = int(out[0].strip() or 0) if out else 0
        status = out[1].strip() if len(out) > 1 else ""
        if status:
            rc = int(status)
            return (
                _state_from_exit("killed", rc - 128) if rc > 128 else _state_from_exit("exited", rc)
            )
        if pid and len(out) > 2 and out[2].strip() == "1":
            return ServiceState("active", "running", pid, "", 0, 0, "success")
        # Gone without a status: the wrapper itself was killed (our SIGKILL, or from outside).
        return _state_from_exit("killed", int(signal.SIGKILL))

    def stop(self) -> None:
        """SIGTERM to the server's main process, SIGKILL to its whole process group after it
        ended or after ``stop_timeout`` seconds (systemd's ``KillMode=mixed``)."""
        if self.local:
            self._stop_local()
        elif self._started:
            self._stop_remote()

    def _stop_local(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            # The main process only, as systemd's KillMode=mixed does: SGLang's server stops its
            # scheduler and detokenizer itself; a SIGTERM to the whole group makes it log
            # "Subprocess scheduler_0 ... crashed" and "SIGQUIT received", which read as a crash.
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                self._killed_by_us = True
                _killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        _killpg(proc.pid, signal.SIGKILL)  # leftovers of the group (KillMode=mixed)
        if self._exit_watch is not None:
            self._exit_watch.join(timeout=5)  # its record lands before the next cursor
            self._exit_watch = None

    def _remote_pgid(self) -> int:
        out = self.transport.run("cat %s 2>/dev/null", f"{self.state_dir}/pgid").stdout.strip()
        return int(out) if out.isdigit() else 0

    def _stop_remote(self) -> None:
        pgid = self._remote_pgid()
        if not pgid:
            return
        # The wrapper (the group's leader) passes SIGTERM on to the server's main process alone,
        # as systemd's KillMode=mixed does (see _stop_local); the group gets SIGKILL at the end.
        self.transport.run("kill -TERM %s 2>/dev/null", pgid)
        deadline = time.monotonic() + self.stop_timeout
        while time.monotonic() < deadline:
            if self.state().exited:
                break
            time.sleep(0.1)
        # `kill -SIG -PGID`: dash, the usual /bin/sh, refuses `kill -- -PGID`
        self.transport.run("kill -KILL -%s 2>/dev/null", pgid)

    def restore(self) -> None:
        """Stop the server, remove its state directory (its log, and the environment file that
        may hold secrets) and put back files the configs overwrote (idempotent); then do the
        same for what dead sessions left (found by ``pending_intent``)."""
        self.stop()
        try:
            if self._state_dir is not None:
                if self._log is not None:
                    self._log.close()
                    self._log = None
                self._remove_state_dir(self._state_dir)
                self._state_dir = None
                self._started = False
            if self._backup is not None and self._backup.manifest is not None:
                self._backup.restore_files(self._backup.manifest)
                self._backup.finish()
            for leftover in self._leftovers:
                manifest = leftover.manifest
                if manifest is None:
                    continue  # restored already
                server = manifest.get("service") or {}
                if server.get("pgid") and server.get("state_dir"):
                    leftover.check(
                        "stopping the orphaned server",
                        "sh -c %s sh %s %s",
                        _STOP_ORPHAN,
                        server["pgid"],
                        server["state_dir"],
                        timeout=30,
                    )
                    self._remove_state_dir(server["state_dir"])
                leftover.restore_files(manifest)
                leftover.finish()
            self._leftovers = []
        except (DeployError, TransportError) as exc:
            raise RestoreError(
                f"host {self.spec.name!r}: restore incomplete ({exc}); the originals are kept "
                "in the backup; the next session (or 'pytest --sglang-restore --sglang-host "
                f"{self.spec.name}') restores them"
            ) from exc

    def _remove_state_dir(self, path: str) -> None:
        """``rm -rf`` a server state directory, only one this deployer makes (a record could
        name any path)."""
        if posixpath.basename(path).startswith(("pytest-sglang-", "pytest-sglang.")):
            self.transport.check_output("rm -rf -- %s", path)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
        super().close()


def _log_entry(line: bytes, cursor: str) -> JournalEntry:
    """One log line; its cursor is the byte offset after it."""
    return JournalEntry(
        cursor=str(int(cursor) + len(line) + 1),
        message=line.rstrip(b"\r").decode("utf-8", "replace"),
        realtime_us=time.time_ns() // 1000,
    )


def _log_exit(proc: subprocess.Popen[bytes], log_path: str) -> None:
    """Wait for the local server to end, then append the exit record systemd's ExecStopPost
    would log, so that a follower of the log learns of the death at once."""
    rc = proc.wait()
    code, status = ("killed", -rc) if rc < 0 else ("exited", rc)
    with contextlib.suppress(OSError), open(log_path, "ab") as log:
        log.write(f"{EXIT_MARKER} code={code} status={status}\n".encode())


def _dead_session(name: str) -> bool:
    """Whether ``local-<pid>-<n>`` (or an earlier release's ``local-<pid>``) names a session
    that is gone (not this one, not a live one)."""
    pid = name.removeprefix("local-").split("-")[0]
    return pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _killpg(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
