"""Faults on the real systemd host: an SSH drop mid-deploy and mid-benchmark, the host
"restarting" (sshd down, every session cut, /run wiped, the service stopped), a full disk on
upload and a crash-looping production service. Each ends in a one-line error (or a recovery)
and a restored host.

The sessions run in this process through :class:`SglangSession` (what the plugin drives), over
real SSH to the nspawn host; faults are injected from a second connection.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from testhost import SystemdTestHost

from pytest_sglang.bench import Workload
from pytest_sglang.bench.loadgen import run_workload
from pytest_sglang.config import ServerConfig
from pytest_sglang.errors import ServerStartError, SglangError
from pytest_sglang.lifecycle.journal import READY_LINE
from pytest_sglang.lifecycle.lock import LOCK_FILE, HostLockError, LockHolder
from pytest_sglang.session import SglangSession

from .conftest import EXTRA, OURS, SERVICE, UNIT, snapshot, write_inventory

CONFIG = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")

# Kill the sshd process of every established SSH connection except the one running this.
CUT_SESSIONS = r"""
me=$(echo "$SSH_CONNECTION" | awk '{print $2}')
ss -Htnp state established '( sport = :22 )' | while read -r _ _ local peer users; do
  port=${peer##*:}
  [ "$port" = "$me" ] && continue
  pid=$(echo "$users" | sed -n 's/.*pid=\([0-9]*\).*/\1/p')
  [ -n "$pid" ] && kill -9 "$pid" && echo "cut $pid"
done
true
"""


class Cutter:
    """Cuts every other SSH session once ``ready()`` holds (or after ``delay`` s) from its own
    connection, in a thread; records how many sessions it cut, so a test can assert that the
    fault really landed instead of passing whether or not it did."""

    def __init__(
        self, transport: Any, *, ready: Callable[[], bool] | None = None, delay: float = 0.0
    ) -> None:
        self.transport = transport
        self.ready = ready
        self.delay = delay
        self.cut = 0
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            time.sleep(self.delay)
            if self.ready is not None:
                _when(self.ready)
            out = self.transport.run("sh -c %s", CUT_SESSIONS).stdout
            self.cut = out.count("cut ")
        except BaseException as exc:  # reported by landed()
            self.error = exc

    def __enter__(self) -> Cutter:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._thread.join(timeout=60)

    def landed(self) -> int:
        """The number of sessions cut; fails the test if the cut never happened."""
        assert not self._thread.is_alive(), "the cutter never finished"
        assert self.error is None, f"the cutter failed: {self.error!r}"
        assert self.cut >= 1, "the fault never landed: no SSH session was cut"
        return self.cut


#: Every session a test here opened: given back at the test's end whatever happened in it, so
#: that a test failing mid-way never leaves the host locked (held by this live process, a lock
#: is never broken) for the tests after it.
_OPENED: list[SglangSession] = []


@pytest.fixture(autouse=True)
def _sessions_given_back(production: dict[str, str]) -> Iterator[None]:
    """After the test, before ``production`` puts the host's files back its own way."""
    yield
    while _OPENED:
        _OPENED.pop().restore_all()


def _session(
    host: SystemdTestHost, tmp: Path, lock_heartbeat: float = 15.0, **env: str
) -> SglangSession:
    inv = write_inventory(host, tmp / "hosts.toml", **env)
    said: list[str] = []
    session = SglangSession(
        ["testhost"],
        inventory=inv,
        ssh_config=None,
        ready_timeout=60,
        progress=said.append,
        lock_timeout=10,
        lock_heartbeat=lock_heartbeat,
        drain_timeout=0,
    )
    session.said = said  # type: ignore[attr-defined]
    _OPENED.append(session)
    return session


def _when(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "the fault point was never reached"
        time.sleep(0.05)


def _one_line(exc: BaseException) -> str:
    message = str(exc)
    assert message and "\n" not in message.split("\n--- journal excerpt")[0], message
    assert "Traceback" not in message
    return message


def _finish(session: SglangSession, transport: Any, production: dict[str, str]) -> list[str]:
    """Restore at the end of the session; if the host could not be reached then, the next
    session's ``--sglang-restore`` must do it. Either way the host ends as it was."""
    problems = session.restore_all()
    if problems:
        assert all("\n" not in p for p in problems)
        again = _session_like(session)
        assert any("restored" in line for line in again.restore_hosts())
    assert snapshot(transport) == production
    return problems


def _session_like(session: SglangSession) -> SglangSession:
    _OPENED.append(
        SglangSession(["testhost"], inventory=session.inventory, ssh_config=None, ready_timeout=60)
    )
    return _OPENED[-1]


def test_ssh_drop_mid_deploy(
    tmp_path: Path,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production: dict[str, str],
) -> None:
    """The connection drops right after the unit is written, while the server starts: the
    deployment fails with one line about the connection, and the host is given back."""
    session = _session(systemd_host, tmp_path, SGLANG_SIM_STARTUP_SCALE="0.3")
    host = session.host("testhost")
    deployed = lambda: "pytest-sglang" in systemd_transport.run("cat %s", OURS).stdout  # noqa: E731
    with Cutter(systemd_transport, ready=deployed) as cutter, pytest.raises(SglangError) as err:
        host.deployment(CONFIG)
    cutter.landed()
    message = _one_line(err.value)
    assert "SSH" in message or "connection" in message, message
    _finish(session, systemd_transport, production)


# The journal reader (deploy/journal_tail.py) runs on the host while readiness waits; the
# bracket keeps pgrep from matching the shell that runs it.
STREAMING = "pgrep -f 'sd_journal_[w]ait'"


def _unit_messages(transport: Any, after: str) -> list[str]:
    """The service's journal messages after ``after``, read by this test (filtered here:
    systemd 252's ``journalctl -u --after-cursor`` skips the unit's first entry when the
    cursor's own entry is not the unit's)."""
    out = transport.check_output("journalctl -o json --all --no-pager --after-cursor=%s", after)
    records = [json.loads(line) for line in out.splitlines() if line.strip()]
    return [
        r.get("MESSAGE", "")
        for r in records
        if r.get("_SYSTEMD_UNIT") == SERVICE or (r.get("_PID") == "1" and r.get("UNIT") == SERVICE)
    ]


def test_ssh_drop_mid_stream_resumes_after_the_last_line(
    tmp_path: Path,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production: dict[str, str],
) -> None:
    """The connection drops while the journal stream waits for the server (still loading):
    the stream is reopened after the last entry it delivered, the deployment becomes ready, and
    its journal holds every line of the start, in order, exactly once."""
    session = _session(systemd_host, tmp_path, SGLANG_SIM_STARTUP_SCALE="0.3")
    host = session.host("testhost")
    streaming = lambda: systemd_transport.run(STREAMING).ok  # noqa: E731
    with Cutter(systemd_transport, ready=streaming) as cutter:
        deployment = host.deployment(CONFIG)
    cutter.landed()
    deployer = deployment.deployer
    assert deployer is not None
    lines = deployment.journal.lines
    assert any(READY_LINE in line for line in lines)
    host_lines = _unit_messages(systemd_transport, deployer._deploy_cursor)  # type: ignore[attr-defined]
    assert lines == host_lines[: len(lines)], "a line was lost or read twice across the drop"
    _finish(session, systemd_transport, production)


def test_host_lost_mid_stream_is_a_transport_failure(
    tmp_path: Path,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production: dict[str, str],
) -> None:
    """sshd goes away and every connection is cut while the stream waits: the deployment fails
    at once as a lost host (SSH/infrastructure), never as "not ready in time"."""
    session = _session(systemd_host, tmp_path, SGLANG_SIM_STARTUP_SCALE="0.3")
    host = session.host("testhost")

    def host_goes_away() -> None:
        _when(lambda: systemd_transport.run(STREAMING).ok)
        systemd_transport.run(
            "systemctl stop ssh.socket ssh.service 2>/dev/null; sh -c %s", CUT_SESSIONS
        )

    away = threading.Thread(target=host_goes_away)
    away.start()
    started = time.monotonic()
    try:
        with pytest.raises(ServerStartError) as err:
            host.deployment(CONFIG)
        away.join()
        assert time.monotonic() - started < 30, "the loss was not noticed at once"
        assert err.value.reason == "SSH/infrastructure", err.value.reason
        assert "lost the host while waiting for readiness" in _one_line(err.value)
    finally:
        away.join()
        systemd_transport.run("systemctl start ssh.service")
    _when(lambda: systemd_transport.run("systemctl is-active --quiet ssh.service").ok)
    _finish(session, systemd_transport, production)


def test_ssh_drop_mid_benchmark(
    tmp_path: Path,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production: dict[str, str],
) -> None:
    """The connection drops 0.8 s into a 16-request benchmark (about 2.6 s at 20 ms a token):
    the requests cut with the port forward are counted as failures with a reason, the others
    complete over the reconnected forward, and nothing hangs or raises."""
    session = _session(systemd_host, tmp_path, SGLANG_SIM_ITL_MS="20")
    deployment = session.host("testhost").deployment(CONFIG)
    with Cutter(systemd_transport, delay=0.8) as cutter:
        result = run_workload(
            deployment.base_url,
            Workload.fixed_concurrency(4, num_requests=16, output_tokens=32),
            model="qwen3-8b",
        )
    cutter.landed()
    assert result.completed + result.failed == 16
    assert result.failed >= 1, "the cut failed no request"
    assert result.completed >= 4, "the requests before the cut should have completed"
    assert result.errors and all("\n" not in e for e in result.errors), result.errors
    _finish(session, systemd_transport, production)


def test_host_restart_mid_session(
    tmp_path: Path,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production: dict[str, str],
) -> None:
    session = _session(systemd_host, tmp_path)
    session.host("testhost").deployment(CONFIG)
    # What a reboot does to us: sshd away for a while, every connection cut, /run wiped,
    # the server gone. The test's own connection survives to bring sshd back.
    systemd_transport.run(
        "systemctl stop ssh.socket ssh.service 2>/dev/null; sh -c %s; "
        "rm -f /run/lock/pytest-sglang.json; systemctl stop -- %s",
        CUT_SESSIONS,
        SERVICE,
    )
    restarter = threading.Timer(2.0, lambda: systemd_transport.run("systemctl start ssh.service"))
    restarter.start()
    try:
        with pytest.raises(SglangError) as err:
            session.host("testhost").deployment(CONFIG.replace(served_model_name="other"))
        _one_line(err.value)
    finally:
        restarter.join()
    _when(lambda: systemd_transport.run("systemctl is-active --quiet ssh.service").ok)
    _finish(session, systemd_transport, production)


def test_full_disk_on_upload(
    tmp_path: Path,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production: dict[str, str],
) -> None:
    full = "/opt/rel-full"
    systemd_transport.check_output(
        "mkdir -p %s && mount -t tmpfs -o size=8k tmpfs %s && echo original > %s/k.json",
        full,
        full,
        full,
    )
    before = systemd_transport.check_output("sha256sum %s/k.json", full)
    try:
        session = _session(systemd_host, tmp_path)
        big = CONFIG.replace(files={f"{full}/k.json": {"content": "x" * 64 * 1024}})
        with pytest.raises(SglangError) as err:
            session.host("testhost").deployment(big)
        message = _one_line(err.value)
        assert "space" in message.lower() or "k.json" in message
        _finish(session, systemd_transport, production)
        assert systemd_transport.check_output("sha256sum %s/k.json", full) == before
        assert systemd_transport.check_output("ls -A %s", full).split() == ["k.json"]
    finally:
        systemd_transport.run("umount %s; rmdir %s", full, full)


def test_crash_looping_production_service_is_given_back_as_it_was(
    tmp_path: Path,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production: dict[str, str],
) -> None:
    looping = (
        "[Service]\nExecStart=/bin/sh -c 'sleep 0.2; exit 3'\nRestart=always\nRestartSec=0.3\n"
    )
    systemd_transport.put(looping.encode(), UNIT, mode=0o644)
    systemd_transport.check_output("systemctl daemon-reload && systemctl restart %s", SERVICE)
    before = systemd_transport.check_output("sha256sum %s", UNIT)
    session = _session(systemd_host, tmp_path)
    deployment = session.host("testhost").deployment(
        CONFIG.replace(files={EXTRA: {"content": "{}"}})
    )
    assert deployment.get("/health").status_code == 200
    assert session.restore_all() == []
    assert systemd_transport.check_output("sha256sum %s", UNIT) == before
    n0 = int(systemd_transport.check_output("systemctl show -p NRestarts --value %s", SERVICE))
    _when(
        lambda: (
            int(systemd_transport.check_output("systemctl show -p NRestarts --value %s", SERVICE))
            > n0
        ),
        timeout=20,
    )  # looping again, as before


def test_a_lost_host_lock_keeps_the_session_off_the_host(
    tmp_path: Path,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production: dict[str, str],
) -> None:
    """SSH was down long enough for another session to break our lock and take the host: the
    heartbeat notices, no test uses the host and the session's end restores nothing of it."""
    session = _session(systemd_host, tmp_path, lock_heartbeat=0.2)
    host = session.host("testhost")
    host.prepare()  # the session's own lock, as a deployment takes it (heartbeat every 0.2 s)
    lock = host._lock
    assert lock is not None and lock.held
    other = LockHolder("ci", "elsewhere", 4242, "other-session", "2026-01-01T00:00:00Z")
    systemd_transport.check_output(
        "printf '%%s\\n' %s > %s", other.dumps(), LOCK_FILE
    )  # the other session broke the lock and owns the host now
    _when(lambda: lock.lost, timeout=5.0)  # a 15 s default heartbeat would not make it
    assert not lock.held
    assert any("lost the host lock to another session" in line for line in session.said)
    with pytest.raises(HostLockError) as lost:
        host.deployment(CONFIG)
    assert "another session broke this session's host lock" in _one_line(lost.value)
    assert session.restore_all() == []
    assert snapshot(systemd_transport) == production
    # its lock record is left alone
    assert '"session": "other-session"' in systemd_transport.check_output("cat %s", LOCK_FILE)
    systemd_transport.run("rm -f -- %s", LOCK_FILE)
