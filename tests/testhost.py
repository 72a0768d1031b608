"""A real systemd + journald + OpenSSH "remote host" for the test suite, booted with systemd-nspawn.

Why: the deploy code talks to systemd over SSH; mocking either would test our assumptions, not
the hosts. This boots the host's own image as a container in about 1.5 s:

- root fs: an overlay whose read-only lower layer is the host's ``/`` and whose upper layer is a
  tmpfs, so the container never writes into the host's ``/``. Because the lower layer is ``/``,
  the project's venv (and the pyenv interpreter it links to) is visible inside the container at
  the same path: ``<repo>/.venv/bin/python -m pytest_sglang.sim`` runs there as it does here.
  Paths that live on another filesystem than ``/`` (the overlay does not descend into mounts)
  are bind-mounted read-only at the same path.
- network: its own namespace (``ct_ip``) joined to the root namespace (``host_ip``) by a veth
  pair ``vh-<name>``/``host0``; nothing else is reachable. A blackhole route for its subnet
  (:data:`FALLBACK_METRIC`) stays when the veth is taken down (a test's link cut): without it
  the kernel drops the veth's route with the link, and a reconnect during the cut went out by
  the default route to whatever answers ``ct_ip`` there (an HTTP proxy did, seen in the SSH
  banner). With it, nothing leaves this machine: what the open connections send is dropped
  here, and a new connect fails at once (EINVAL) instead of waiting for an answer.
- PID 1 is the real ``systemd``; the image's enabled units (postgresql, getty, timers, ...) are
  masked except sshd, which gets a fresh ed25519 host key and the client key made here.

Several hosts run side by side when their names and subnets differ. A per-name ``flock`` guards
each name, so ``up()`` may clear the leftovers of a crashed run of the same name without ever
touching a host that a live process (another pytest, an xdist worker) still uses.

:class:`TestHostFactory` (behind the ``systemd_host*`` fixtures in conftest.py) lets each pytest
process (and each xdist worker) claim a free *slot* with a lock file; its hosts use names
``sgl<slot>-<label>`` and subnets ``10.200.<16 + 8*slot + n>.0/24``, so concurrent sessions on
one machine never touch each other's hosts, and a slot's new holder clears what a dead holder
left behind.

This mirrors ``shared/recipes/systemd-test-host.sh`` (up/down); it installs nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pytest

__all__ = [
    "STATE_ROOT",
    "SystemdTestHost",
    "TestHostBusy",
    "TestHostError",
    "TestHostFactory",
    "fallback_route",
    "missing_prerequisites",
    "nspawn_pids",
]

#: Units the host image enables that must not start in the container (all but sshd).
_WANTS_DIRS = ("multi-user", "timers", "getty", "sysinit")
_KEEP_UNITS = {"ssh.service", "sshd.service"}
#: Metric of the blackhole route behind each test host's subnet: above any the kernel gives.
FALLBACK_METRIC = 65535


class TestHostError(RuntimeError):
    """The test host could not be booted; the message says which step failed."""

    __test__ = False  # not a test class, despite the name


class TestHostBusy(TestHostError):
    """Another live process holds the lock for this host name."""


def missing_prerequisites() -> list[str]:
    """What this machine lacks to boot a test host (empty when it can)."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (systemd-nspawn, mounts and network namespaces need it)")
    for tool in ("systemd-nspawn", "ip", "ssh", "ssh-keygen", "mount", "umount"):
        if shutil.which(tool) is None:
            missing.append(f"the {tool!r} command")
    if not os.access("/usr/sbin/sshd", os.X_OK):
        missing.append("/usr/sbin/sshd (openssh-server)")
    if not os.access("/usr/lib/systemd/systemd", os.X_OK):
        missing.append("/usr/lib/systemd/systemd")
    return missing


def _quiet(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run a cleanup command; failures are expected (nothing to clean) and ignored."""
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


def _checked(*argv: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if proc.returncode != 0:
        raise TestHostError(
            f"{' '.join(argv)} failed (rc={proc.returncode}): {proc.stderr.strip()}"
        )


def _mounts() -> list[tuple[str, str]]:
    """(source, mount point) of every mount of this mount namespace, in mount order."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        point = left.split()[4].replace("\\040", " ")
        source = right.split()[1] if len(right.split()) > 1 else ""
        out.append((source, point))
    return out


def fallback_route(host_ip: str) -> list[str]:
    """``ip route`` words of the blackhole behind the veth's route of the test host whose
    root-namespace end is ``host_ip`` (module docstring)."""
    subnet = ipaddress.ip_interface(f"{host_ip}/24").network
    return ["blackhole", str(subnet), "metric", str(FALLBACK_METRIC)]


def nspawn_pids(machine: str) -> list[int]:
    """PIDs of systemd-nspawn processes started for ``--machine=<machine>`` (a stale run's, or
    the running host's: a benchmark reads its container's processes from them)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"systemd-nspawn") and f"--machine={machine}".encode() in argv:
            pids.append(int(entry.name))
    return pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop(pid: int, grace: float) -> None:
    """SIGTERM (nspawn turns it into an orderly container halt), then SIGKILL after ``grace``."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while _alive(pid) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


class SystemdTestHost:
    """One booted container: ``ssh root@<ip>`` with :attr:`key_path` and :attr:`known_hosts_path`.

    ``name`` is at most 12 characters (the veth is ``vh-<name>``, and interface names are limited
    to 15). ``host_ip``/``ct_ip`` are the root-namespace and container ends of a /24.
    """

    user = "root"
    port = 22

    def __init__(
        self,
        name: str,
        host_ip: str,
        ct_ip: str,
        state_dir: str | os.PathLike[str],
        *,
        boot_timeout: float = 60.0,
        init_args: tuple[str, ...] = (),
        extra_paths: tuple[str, ...] = (),
    ) -> None:
        if not name or len(name) > 12 or not name.replace("-", "").isalnum():
            raise ValueError(f"test host name {name!r}: use 1-12 characters [A-Za-z0-9-]")
        self.name = name
        self.host_ip = host_ip
        self.ct_ip = ct_ip
        self.ip = ct_ip
        self.state_dir = Path(state_dir)
        self.boot_timeout = boot_timeout
        self.init_args = init_args
        self.extra_paths = extra_paths
        self.key_path = self.state_dir / "id_ed25519"
        self.known_hosts_path = self.state_dir / "known_hosts"
        self.host_key_pub = ""  # "ssh-ed25519 AAAA..." of the container's sshd
        self.system_state = ""  # what `systemctl is-system-running --wait` said
        self.boot_seconds = 0.0  # nspawn start -> boot finished
        self._ct = self.state_dir / "ct"  # tmpfs mount point: upper/, work/, root/
        self._root = self._ct / "root"  # overlay mount point, the container's /
        self._veth = f"vh-{name}"
        self._lock_file: IO[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        return f"SystemdTestHost({self.name!r}, ip={self.ip!r})"

    # -- lifecycle ---------------------------------------------------------------------------

    def up(self) -> None:
        """Build netns + overlay, boot, and wait until sshd answers and the boot has finished.

        On failure everything built so far is torn down before the error propagates.
        """
        self._lock()
        try:
            self._clean_stale()
            self._up()
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        """Halt the container and remove mounts, netns, veth and state. Idempotent.

        A name whose lock another live process holds is left alone: that host is not ours.
        """
        if self._lock_file is None:
            try:
                self._lock()
            except TestHostBusy:
                return
        if self._proc is not None:
            _stop(self._proc.pid, grace=10.0)
            self._proc = None
        self._clean_stale()
        self._unlock()

    def __enter__(self) -> SystemdTestHost:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    # -- helpers for tests -------------------------------------------------------------------

    def ssh_args(self, *, connect_timeout: int = 5) -> list[str]:
        """The ``ssh`` argv prefix (BatchMode, strict host keys) up to and including the target."""
        return [
            "ssh",
            "-i",
            str(self.key_path),
            "-o",
            f"UserKnownHostsFile={self.known_hosts_path}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            f"ConnectTimeout={connect_timeout}",
            "-o",
            "LogLevel=ERROR",
            "-p",
            str(self.port),
            f"{self.user}@{self.ip}",
        ]

    def ssh(
        self, cmd: str, *, timeout: float = 30.0, input: str | None = None, check: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """Run ``cmd`` on the host with the OpenSSH client (independent of our transports)."""
        proc = subprocess.run(
            [*self.ssh_args(), cmd],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=None if input is not None else subprocess.DEVNULL,
            check=False,
        )
        if check and proc.returncode != 0:
            raise TestHostError(
                f"{self.name}: ssh {cmd!r} failed (rc={proc.returncode}): {proc.stderr.strip()}"
            )
        return proc

    # -- internals ---------------------------------------------------------------------------

    def _lock(self) -> None:
        lock_path = self.state_dir.parent / f".{self.name}.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock_path, "a")  # noqa: SIM115 - held for the host's lifetime
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise TestHostBusy(f"test host {self.name!r} is in use (lock {lock_path})") from None
        self._lock_file = handle

    def _unlock(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def _clean_stale(self) -> None:
        """Remove whatever a run of this name left behind: nspawn, mounts, netns, veth, state."""
        for pid in nspawn_pids(self.name):
            _stop(pid, grace=10.0)
        # Innermost first: the overlay (and anything nspawn leaked) sits on the tmpfs.
        tmpfs_points = {p for src, p in _mounts() if src == f"ct-{self.name}"}
        tmpfs_points.add(str(self._ct))
        for _src, point in reversed(_mounts()):
            ours = any(point == t or point.startswith(t + "/") for t in tmpfs_points)
            if ours and _quiet("umount", point).returncode != 0:
                _quiet("umount", "-l", point)
        _quiet("ip", "netns", "del", self.name)  # also destroys the veth pair
        _quiet("ip", "link", "del", self._veth)
        if self.host_ip:  # a dead holder's host is cleared by name: its slot clears the routes
            _quiet("ip", "route", "del", *fallback_route(self.host_ip))
        if self.state_dir.exists() and not any(
            p == str(self._ct) or p.startswith(str(self._ct) + "/") for _s, p in _mounts()
        ):
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def _up(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._ct.mkdir()
        _checked(
            "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ci", "-f", str(self.key_path)
        )

        # network namespace + veth: the container answers on ct_ip.
        _checked("ip", "netns", "add", self.name)
        # One command: a "host0" must never exist in the root namespace (hosts boot in parallel).
        _checked(*f"ip link add {self._veth} type veth peer name host0 netns {self.name}".split())
        _checked("ip", "addr", "add", f"{self.host_ip}/24", "dev", self._veth)
        _checked("ip", "link", "set", self._veth, "up")
        _checked("ip", "route", "replace", *fallback_route(self.host_ip))
        _checked("ip", "-n", self.name, "addr", "add", f"{self.ct_ip}/24", "dev", "host0")
        _checked("ip", "-n", self.name, "link", "set", "host0", "up")
        _checked("ip", "-n", self.name, "link", "set", "lo", "up")

        # overlay root: lower = host / (read-only), upper/work on a tmpfs.
        _checked("mount", "-t", "tmpfs", "-o", "size=2g,mode=755", f"ct-{self.name}", str(self._ct))
        for sub in ("upper", "work", "root"):
            (self._ct / sub).mkdir()
        _checked(
            "mount",
            "-t",
            "overlay",
            "overlay",
            "-o",
            f"lowerdir=/,upperdir={self._ct}/upper,workdir={self._ct}/work",
            str(self._root),
        )
        self._customise()
        self._boot()

    def _customise(self) -> None:
        """Writes that land in the tmpfs upper layer: identity, sshd config, keys, masks."""
        root = self._root
        machine_id = subprocess.run(
            ["systemd-id128", "new"], capture_output=True, text=True, check=True, timeout=10
        ).stdout
        (root / "etc/machine-id").write_text(machine_id)  # same id as the host: journal warnings
        (root / "etc/hostname").write_text(f"{self.name}\n")
        # The host's .bashrc runs `pyenv init` (+0.15 s per ssh command and pyenv's python3).
        (root / "root/.bashrc").write_text("")
        ssh_dir = root / "root/.ssh"
        ssh_dir.mkdir(mode=0o700, exist_ok=True)
        ssh_dir.chmod(0o700)
        auth = ssh_dir / "authorized_keys"
        auth.write_text(self.key_path.with_suffix(".pub").read_text())
        auth.chmod(0o600)
        for old in (root / "etc/ssh").glob("ssh_host_*"):
            old.unlink()
        host_key = root / "etc/ssh/ssh_host_ed25519_key"
        _checked(
            "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", self.name, "-f", str(host_key)
        )
        conf_dir = root / "etc/ssh/sshd_config.d"
        conf_dir.mkdir(exist_ok=True)
        (conf_dir / "10-ci.conf").write_text(
            "HostKey /etc/ssh/ssh_host_ed25519_key\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            "PermitRootLogin prohibit-password\n"
            "UseDNS no\n"
        )
        self.host_key_pub = " ".join(host_key.with_suffix(".pub").read_text().split()[:2])
        self.known_hosts_path.write_text(f"{self.ct_ip} {self.host_key_pub}\n")
        for wants in _WANTS_DIRS:
            for unit in Path(f"/etc/systemd/system/{wants}.target.wants").glob("*"):
                if unit.name not in _KEEP_UNITS:
                    masked = root / "etc/systemd/system" / unit.name
                    masked.unlink(missing_ok=True)
                    masked.symlink_to("/dev/null")

    def _binds(self) -> list[str]:
        """``--bind-ro`` for paths the overlay of ``/`` does not show (they are on other mounts)."""
        root_dev = os.stat("/").st_dev
        wanted = {
            str(Path(__file__).resolve().parent.parent),  # the repository (and its .venv)
            str(Path(sys.executable).resolve().parent.parent),  # the interpreter's prefix
            *self.extra_paths,
        }
        # /tmp is a fresh tmpfs inside the container, so a checkout under /tmp needs a bind too.
        return [
            f"--bind-ro={p}"
            for p in sorted(wanted)
            if p != "/"
            and os.path.exists(p)
            and (os.stat(p).st_dev != root_dev or p == "/tmp" or p.startswith("/tmp/"))
        ]

    def _boot(self) -> None:
        # --keep-unit + --register=no: the host has no systemd/dbus/machined to talk to.
        # SIGTERM to nspawn => SIGRTMIN+3 to the container's systemd (an orderly halt).
        log = open(self.state_dir / "nspawn.log", "wb")  # noqa: SIM115 - handed to the child
        with log:
            self._proc = subprocess.Popen(
                [
                    "systemd-nspawn",
                    "--boot",
                    f"--directory={self._root}",
                    f"--machine={self.name}",
                    "--register=no",
                    "--keep-unit",
                    f"--network-namespace-path=/run/netns/{self.name}",
                    "--console=pipe",
                    "--link-journal=no",
                    *self._binds(),
                    *self.init_args,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        (self.state_dir / "nspawn.pid").write_text(f"{self._proc.pid}\n")
        started = time.monotonic()
        deadline = started + self.boot_timeout
        last = ""
        while True:
            if self._proc.poll() is not None:
                raise TestHostError(
                    f"{self.name}: systemd-nspawn exited rc={self._proc.returncode} during boot: "
                    f"{self._log_tail()}"
                )
            try:
                probe = self.ssh("true", timeout=max(1.0, min(5.0, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                probe = None
            if probe is not None and probe.returncode == 0:
                break
            last = probe.stderr.strip() if probe is not None else "ssh probe timed out"
            if time.monotonic() > deadline:
                raise TestHostError(
                    f"{self.name}: sshd on {self.ip} not reachable after {self.boot_timeout:.0f}s "
                    f"({last}); see {self.state_dir / 'nspawn.log'}"
                )
            time.sleep(0.1)
        remaining = max(5.0, deadline - time.monotonic())
        try:
            state = self.ssh(
                f"timeout {remaining:.0f} systemctl is-system-running --wait",
                timeout=remaining + 5,
            )
        except subprocess.TimeoutExpired:
            raise TestHostError(f"{self.name}: boot did not finish in {remaining:.0f}s") from None
        self.system_state = state.stdout.strip()
        if self.system_state not in ("running", "degraded"):
            failed = self.ssh("systemctl --failed --no-legend --plain").stdout.strip()
            raise TestHostError(
                f"{self.name}: system state {self.system_state!r} after boot; failed: {failed}"
            )
        self.boot_seconds = time.monotonic() - started

    def _log_tail(self) -> str:
        try:
            lines = (self.state_dir / "nspawn.log").read_text(errors="replace").splitlines()
        except OSError:
            return "no nspawn.log"
        return " | ".join(lines[-5:]) or "empty nspawn.log"


#: Where hosts keep keys, known_hosts, logs and locks (on the host's disk, outside any repo).
STATE_ROOT = Path(os.environ.get("SGLANG_TESTHOST_DIR", "/tmp/pytest-sglang-testhost"))
_SLOTS = 28  # 16 + 8*27 + 7 = 239: third octets stay inside 10.200.16.0 - 10.200.239.255
_PER_SLOT = 8


def _addresses(slot: int, index: int) -> tuple[str, str]:
    """(host_ip, ct_ip) of host ``index`` of ``slot``: its own /24."""
    octet = 16 + _PER_SLOT * slot + index
    return f"10.200.{octet}.1", f"10.200.{octet}.2"


def _unavailable(reason: str) -> None:
    """Skip, or fail under CI=true (where these tests must run)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the systemd test host must run here)", pytrace=False)
    pytest.skip(reason)


class TestHostFactory:
    """Boots test hosts by label, once each per session, and tears all of them down."""

    __test__ = False

    def __init__(self, root: Path) -> None:
        self.root = root
        self.hosts: dict[str, SystemdTestHost] = {}
        self._slot: int | None = None
        self._slot_lock: IO[str] | None = None

    def _claim_slot(self) -> int:
        if self._slot is not None:
            return self._slot
        self.root.mkdir(parents=True, exist_ok=True)
        for slot in range(_SLOTS):
            handle = open(self.root / f".slot-{slot}.lock", "a")  # noqa: SIM115 - held all session
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            self._slot, self._slot_lock = slot, handle
            self._clear_slot(slot)
            return slot
        raise RuntimeError(f"all {_SLOTS} test host slots under {self.root} are in use")

    def _clear_slot(self, slot: int) -> None:
        """Remove hosts a dead holder of ``slot`` left behind (killed pytest, SIGKILL, reboot)."""
        prefix = f"sgl{slot}-"
        names = {p.name for p in self.root.glob(f"{prefix}*") if p.is_dir()}
        netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        names.update(w for w in netns.split() if w.startswith(prefix))
        for name in sorted(names):
            SystemdTestHost(name, "", "", self.root / name).down()
        for index in range(_PER_SLOT):
            _quiet("ip", "route", "del", *fallback_route(_addresses(slot, index)[0]))

    def reserve(self, label: str, index: int) -> tuple[str, str, str, Path]:
        """(name, host_ip, ct_ip, state_dir) for host ``index`` (0-7) of this session's slot.

        For tests that drive a :class:`SystemdTestHost` themselves: ``__call__`` never hands out
        the last index (7), so such tests use it.
        """
        if not 0 <= index < _PER_SLOT:
            raise RuntimeError(f"at most {_PER_SLOT} test hosts per session")
        slot = self._claim_slot()
        name = f"sgl{slot}-{label}"
        host_ip, ct_ip = _addresses(slot, index)
        return name, host_ip, ct_ip, self.root / name

    def __call__(self, label: str = "a") -> SystemdTestHost:
        """The booted host for ``label`` (1-6 characters [a-z0-9]), booting it on first use."""
        if label in self.hosts:
            return self.hosts[label]
        if not (1 <= len(label) <= 6 and label.isalnum()):
            raise ValueError(f"test host label {label!r}: use 1-6 characters [a-z0-9]")
        missing = missing_prerequisites()
        if missing:
            _unavailable("systemd test host unavailable: needs " + ", ".join(missing))
        if len(self.hosts) >= _PER_SLOT - 1:
            raise RuntimeError(f"at most {_PER_SLOT - 1} test hosts per session")
        host = SystemdTestHost(*self.reserve(label, len(self.hosts)), boot_timeout=60.0)
        host.up()  # on failure up() has already cleaned up; the error names the failed step
        self.hosts[label] = host
        return host

    def close(self) -> None:
        """Tear down every host (idempotent; also runs from atexit after a crash/Ctrl-C)."""
        while self.hosts:
            _label, host = self.hosts.popitem()
            host.down()
        if self._slot_lock is not None:
            self._slot_lock.close()
            self._slot_lock = None
            self._slot = None
