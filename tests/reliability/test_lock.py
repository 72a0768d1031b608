"""The host lock on the real test host: exclusive, waits and names the holder, breaks stale
holders (dead pid on this machine, missing heartbeat) and never releases someone else's lock."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

from pytest_sglang.lifecycle.lock import LOCK_FILE, HostLock, HostLockError, LockHolder


@pytest.fixture(autouse=True)
def no_lock_left(systemd_transport: Any) -> Any:
    systemd_transport.run("rm -f -- %s", LOCK_FILE)
    yield
    systemd_transport.run("rm -f -- %s", LOCK_FILE)


def _holder_on_host(transport: Any) -> dict[str, Any] | None:
    result = transport.run("cat -- %s", LOCK_FILE)
    return json.loads(result.stdout) if result.ok and result.stdout.strip() else None


def _eventually(condition: Callable[[], object], timeout: float = 10.0) -> None:
    """Wait for the heartbeat (every 0.2 s over SSH) to have done its work; a loaded machine
    may take longer than one beat."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the heartbeat never did it"
        time.sleep(0.1)


def test_a_second_session_waits_then_fails_naming_the_holder(
    new_transport: Callable[[], Any], systemd_transport: Any
) -> None:
    first = HostLock(new_transport(), "testhost", LockHolder.current(), timeout=5)
    first.acquire()
    assert _holder_on_host(systemd_transport)["session"] == first.holder.session
    said: list[str] = []
    second = HostLock(
        new_transport(), "testhost", LockHolder.current(), timeout=1.0, poll_s=0.2, say=said.append
    )
    with pytest.raises(HostLockError) as err:
        second.acquire()
    message = str(err.value)
    assert "\n" not in message
    for part in (first.holder.user, first.holder.machine, str(first.holder.pid), "since"):
        assert part in message
    assert "--sglang-lock-timeout" in message
    assert any("waiting up to" in line for line in said)
    second.release()  # not held: must not remove the first one's record
    assert _holder_on_host(systemd_transport)["session"] == first.holder.session
    first.release()
    assert _holder_on_host(systemd_transport) is None
    second.acquire()  # free now
    second.release()


def test_a_holder_whose_process_is_gone_is_broken_at_once(
    new_transport: Callable[[], Any], systemd_transport: Any
) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    ghost = LockHolder.current()
    ghost = LockHolder(ghost.user, ghost.machine, dead.pid, "deadbeef" * 4, ghost.since)
    systemd_transport.put((ghost.dumps() + "\n").encode(), LOCK_FILE, mode=0o644)
    said: list[str] = []
    lock = HostLock(new_transport(), "testhost", LockHolder.current(), timeout=0, say=said.append)
    lock.acquire()
    assert _holder_on_host(systemd_transport)["session"] == lock.holder.session
    assert any("breaking the stale host lock" in line and "is gone" in line for line in said)
    lock.release()


def test_a_holder_elsewhere_without_heartbeat_is_broken_after_stale_after(
    new_transport: Callable[[], Any], systemd_transport: Any
) -> None:
    other = LockHolder("ci", "another-machine", 4242, "c0ffee" * 5, "2025-01-01T00:00:00+00:00")
    systemd_transport.put((other.dumps() + "\n").encode(), LOCK_FILE, mode=0o644)
    blocked = HostLock(new_transport(), "testhost", LockHolder.current(), timeout=0)
    with pytest.raises(HostLockError, match="ci@another-machine pid 4242"):
        blocked.acquire()  # fresh heartbeat: a live holder elsewhere
    systemd_transport.check_output("touch -d '-10 minutes' -- %s", LOCK_FILE)
    said: list[str] = []
    lock = HostLock(
        new_transport(),
        "testhost",
        LockHolder.current(),
        timeout=0,
        stale_after_s=60,
        say=said.append,
    )
    lock.acquire()
    assert any("no heartbeat for" in line for line in said)
    lock.release()


def test_the_heartbeat_keeps_the_lock_fresh_and_recreates_it_after_a_reboot(
    new_transport: Callable[[], Any], systemd_transport: Any
) -> None:
    lock = HostLock(new_transport(), "testhost", LockHolder.current(), heartbeat_s=0.2)
    lock.acquire()
    systemd_transport.check_output("touch -d '-10 minutes' -- %s", LOCK_FILE)

    def age() -> int:
        return int(
            systemd_transport.check_output(
                "echo $(( $(date +%%s) - $(stat -c %%Y %s) ))", LOCK_FILE
            )
        )

    _eventually(lambda: age() < 60)
    systemd_transport.check_output("rm -f -- %s", LOCK_FILE)  # /run wiped by a reboot
    _eventually(lambda: (_holder_on_host(systemd_transport) or {}).get("session"))
    assert _holder_on_host(systemd_transport)["session"] == lock.holder.session
    lock.release()
    assert not lock.lost
