"""Fixtures for the reliability tests: transports, inventories and host snapshots."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers import (
    FAST_SIM,
    PRODUCTION_UNIT,
    SIM_LAUNCH,
    file_states,
    host_entry,
    save_inventory,
    ssh_transport,
)
from testhost import SystemdTestHost

if TYPE_CHECKING:
    from pytest_sglang.transport.ssh import SshTransport

SERVICE = "sglang-rel.service"
UNIT = f"/etc/systemd/system/{SERVICE}"
DROPIN = f"/etc/systemd/system/{SERVICE}.d/override.conf"
#: The session's own drop-in: present only while a session runs.
OURS = f"/etc/systemd/system/{SERVICE}.d/zz-pytest-sglang.conf"
ENV_FILE = "/etc/pytest-sglang/sglang-rel.env"
EXTRA = "/opt/rel-kernels/E=8.json"
WATCHED = (UNIT, DROPIN, OURS, ENV_FILE, EXTRA, "/etc/pytest-sglang", "/var/lib/pytest-sglang")
ORIGINAL_UNIT = PRODUCTION_UNIT
ORIGINAL_DROPIN = "[Service]\nEnvironment=PROD=1\n"
ORIGINAL_EXTRA = b'{"1": {"BLOCK_SIZE_M": 16}}\n'


@pytest.fixture
def new_transport(systemd_host: SystemdTestHost) -> Iterator[Callable[[], Any]]:
    """Open extra SSH transports to the test host (closed at the end of the test)."""
    opened: list[SshTransport] = []

    def make() -> SshTransport:
        opened.append(ssh_transport(systemd_host))
        return opened[-1]

    yield make
    for transport in opened:
        transport.close()


def write_inventory(host: SystemdTestHost, path: Path, launch: str = "", **env: str) -> Path:
    """An inventory naming the test host ``testhost`` (the simulator, fast startup)."""
    entry = host_entry("testhost", host, SERVICE, {**FAST_SIM, **env}, launch or SIM_LAUNCH)
    return save_inventory(path, entry)


def snapshot(transport: Any) -> dict[str, str]:
    """sha256 + mode + owner of every watched path ('absent' when missing), and unit state."""
    out = file_states(transport.run, WATCHED)
    out["active"] = transport.run("systemctl is-active -- %s", SERVICE).stdout.strip()
    out["main_cmd"] = (
        transport.run("systemctl show -p ExecStart --value -- %s", SERVICE)
        .stdout.split(";")[1]
        .strip()
    )
    return out


@pytest.fixture
def production(systemd_transport: Any) -> Iterator[dict[str, str]]:
    """A running 'production' unit with a drop-in and an extra file, to be given back as is."""
    t = systemd_transport
    t.check_output("mkdir -p /etc/systemd/system/%s.d /opt/rel-kernels", SERVICE)
    t.put(ORIGINAL_UNIT.encode(), UNIT, mode=0o644)
    t.put(ORIGINAL_DROPIN.encode(), DROPIN, mode=0o640)
    t.put(ORIGINAL_EXTRA, EXTRA, mode=0o600)
    t.check_output("systemctl daemon-reload && systemctl restart -- %s", SERVICE)
    before = snapshot(t)
    assert before["active"] == "active"
    yield before
    t.run(
        "systemctl stop -- %s; rm -rf -- %s %s.d /opt/rel-kernels /var/lib/pytest-sglang "
        "/etc/pytest-sglang /run/lock/pytest-sglang.json; systemctl daemon-reload; "
        "systemctl reset-failed",
        SERVICE,
        UNIT,
        UNIT,
    )
