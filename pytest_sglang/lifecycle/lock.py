"""An exclusive per-host lock, held on the host, so two sessions never reconfigure it at once.

Where and how: ``/run/lock/pytest-sglang.json`` holds the holder record (user, machine, pid,
session id, since). Every read-modify-write of it runs on the host under ``flock(1)`` on
``/run/lock/pytest-sglang.guard`` (a file that is never removed, so the flock is always on the
same inode), which makes acquire, heartbeat, break and release atomic compare-and-swap steps even
between CI machines that cannot see each other. ``/run`` is a tmpfs: a host that reboots comes
back unlocked, which is right, because the reboot ended whatever the holder was doing there.

Stale holders: the holder refreshes the record's mtime (a heartbeat, on the host's clock) every
``heartbeat_s`` from a background thread on its own connection. A record whose holder ran on this
machine with a pid that is gone (pytest was SIGKILLed) is broken at once; any other record is
broken once its heartbeat is older than ``stale_after_s`` (the holder lost its connection or its
machine). Breaking is a compare-and-swap on the holder's session id, so two waiters can never both
win. Each xdist worker can lease one host the same way.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..errors import DeployError, TransportError

if TYPE_CHECKING:
    from ..transport.base import CommandResult, Transport

__all__ = ["HostLock", "HostLockError", "LockHolder"]

LOCK_FILE = "/run/lock/pytest-sglang.json"
_HELD = 3  # exit status of the scripts: someone else holds the lock
_NO_DIR = 70  # /run/lock cannot be written
_GUARD_BUSY = 75  # the guard flock was not obtained in time

# $1: our holder record (JSON), $2: the session id we may replace (breaking a stale lock) or "".
_ACQUIRE = r"""
d=/run/lock; f=$d/pytest-sglang.json
mkdir -p "$d" 2>/dev/null; exec 9>>"$d/pytest-sglang.guard" || exit 70
flock -w 20 9 || exit 75
if [ -s "$f" ]; then
  if [ -z "$2" ] || ! grep -qF "\"session\": \"$2\"" "$f"; then
    cat "$f"; echo; echo "AGE $(( $(date +%s) - $(stat -c %Y "$f") ))"; exit 3
  fi
fi
printf '%s\n' "$1" > "$f.tmp" && mv -f "$f.tmp" "$f"
"""
# $1: our session id, $2: our record. Refresh the mtime; recreate after a reboot; 3 when lost.
_HEARTBEAT = r"""
d=/run/lock; f=$d/pytest-sglang.json
mkdir -p "$d" 2>/dev/null; exec 9>>"$d/pytest-sglang.guard" || exit 70
flock -w 20 9 || exit 75
if [ ! -s "$f" ]; then printf '%s\n' "$2" > "$f.tmp" && mv -f "$f.tmp" "$f"; exit 0; fi
grep -qF "\"session\": \"$1\"" "$f" || exit 3
touch "$f"
"""
# $1: our session id. Remove the record only if it is still ours.
_RELEASE = r"""
d=/run/lock; f=$d/pytest-sglang.json
exec 9>>"$d/pytest-sglang.guard" || exit 70
flock -w 20 9 || exit 75
if [ -s "$f" ] && grep -qF "\"session\": \"$1\"" "$f"; then rm -f "$f"; fi
exit 0
"""


class HostLockError(DeployError):
    """The host is locked by another live session (or the lock cannot be taken at all)."""


@dataclass(frozen=True)
class LockHolder:
    """Who holds (or wants) a host: enough to find that session and its owner."""

    user: str
    machine: str
    pid: int
    session: str
    since: str

    @classmethod
    def current(cls, session: str | None = None) -> LockHolder:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = str(os.getuid())
        return cls(
            user=user,
            machine=socket.gethostname(),
            pid=os.getpid(),
            session=session or uuid.uuid4().hex,
            since=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LockHolder:
        return cls(
            user=str(data.get("user", "?")),
            machine=str(data.get("machine", "?")),
            pid=int(data.get("pid", 0) or 0),
            session=str(data.get("session", "")),
            since=str(data.get("since", "?")),
        )

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def dumps(self) -> str:
        # sort_keys + default separators: the scripts grep for '"session": "<id>"'.
        return json.dumps(self.as_json(), sort_keys=True)

    def describe(self) -> str:
        who = f"{self.user}@{self.machine} pid {self.pid}"
        return f"{who} (session {self.session[:8]}) since {self.since}"

    def gone(self) -> bool:
        """True when the holder ran on this machine and its process no longer exists."""
        if self.machine != socket.gethostname() or self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False


def _parse_held(stdout: str) -> tuple[LockHolder | None, float]:
    holder: LockHolder | None = None
    age = 0.0
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            with contextlib.suppress(ValueError, TypeError):
                holder = LockHolder.from_json(json.loads(line))
        elif line.startswith("AGE "):
            with contextlib.suppress(ValueError):
                age = float(line[4:])
    return holder, age


class HostLock:
    """Acquire with :meth:`acquire`, give back with :meth:`release` (idempotent)."""

    def __init__(
        self,
        transport: Transport,
        host: str,
        holder: LockHolder,
        *,
        timeout: float = 300.0,
        stale_after_s: float = 90.0,
        heartbeat_s: float = 15.0,
        poll_s: float = 1.0,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.transport = transport
        self.host = host
        self.holder = holder
        self.timeout = timeout
        self.stale_after_s = stale_after_s
        self.heartbeat_s = heartbeat_s
        self.poll_s = poll_s
        self.say = say or (lambda _message: None)
        self.held = False
        self.lost = False
        self._io = threading.Lock()  # the heartbeat thread shares the transport
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _script(self, script: str, *args: str, timeout: float = 40.0) -> CommandResult:
        with self._io:
            return self.transport.run(
                "sh -c %s sh" + " %s" * len(args), script, *args, timeout=timeout
            )

    def _fail_setup(self, result: CommandResult) -> HostLockError:
        if result.rc == 127 or "flock: not found" in result.stderr:
            why = "the host has no flock(1) (install util-linux)"
        elif result.rc == _NO_DIR:
            why = "/run/lock is not writable for this user"
        elif result.rc == _GUARD_BUSY:
            why = "the lock guard stayed busy for 20 s"
        else:
            tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
            why = f"rc={result.rc}: {tail}"
        return HostLockError(f"host {self.host!r}: cannot take the host lock {LOCK_FILE}: {why}")

    def acquire(self) -> None:
        """Take the lock, waiting up to ``timeout`` s for a live holder; breaks stale ones."""
        if self.held:
            return
        deadline = time.monotonic() + self.timeout
        announced: str | None = None
        replace = ""
        while True:
            try:
                result = self._script(_ACQUIRE, self.holder.dumps(), replace)
            except TransportError as exc:
                raise HostLockError(
                    f"host {self.host!r}: cannot take the host lock: {exc}"
                ) from exc
            replace = ""
            if result.ok:
                self.held = True
                self._start_heartbeat()
                return
            if result.rc != _HELD:
                raise self._fail_setup(result)
            other, age = _parse_held(result.stdout)
            if other is None:
                raise HostLockError(
                    f"host {self.host!r}: the lock record {LOCK_FILE} is unreadable; "
                    "remove it if no session is running there"
                )
            why = ""
            if other.gone():
                why = f"its process {other.pid} on {other.machine} is gone"
            elif age > self.stale_after_s:
                why = f"no heartbeat for {age:.0f}s"
            if why:
                self.say(
                    f"[sglang] {self.host}: breaking the stale host lock of {other.describe()} "
                    f"({why})"
                )
                replace = other.session
                continue
            if time.monotonic() >= deadline:
                raise HostLockError(
                    f"host {self.host!r} is locked by {other.describe()}; gave up after "
                    f"{self.timeout:.0f}s (--sglang-lock-timeout); a lock whose holder is gone is "
                    f"broken {self.stale_after_s:.0f}s after its last heartbeat"
                )
            if announced != other.session:
                announced = other.session
                self.say(
                    f"[sglang] {self.host}: locked by {other.describe()}; waiting up to "
                    f"{self.timeout:.0f}s"
                )
            time.sleep(min(self.poll_s, max(0.0, deadline - time.monotonic())))

    def _start_heartbeat(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._beat, name=f"sglang-lock-{self.host}", daemon=True
        )
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                result = self._script(_HEARTBEAT, self.holder.session, self.holder.dumps())
            except Exception:  # the connection is down: retry on the next beat
                continue
            if result.rc == _HELD:
                # Another session broke our lock (we looked stale, e.g. SSH was down for longer
                # than stale_after_s) and owns the host now: nothing here is ours to restore.
                self.held = False
                self.lost = True
                self.say(
                    f"[sglang] {self.host}: lost the host lock to another session; not touching "
                    "the host again"
                )
                return

    def release(self) -> None:
        """Give the lock back (only if it is still ours); never raises."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self.held:
            self.held = False
            with contextlib.suppress(Exception):
                self._script(_RELEASE, self.holder.session, timeout=30)
        with contextlib.suppress(Exception):  # also after a failed acquire: no dangling session
            self.transport.close()
