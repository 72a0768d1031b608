"""Fixtures for the reliability tests: transports, inventories and host snapshots."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from testhost import SystemdTestHost

SERVICE = "sglang-rel.service"
UNIT = f"/etc/systemd/system/{SERVICE}"
DROPIN = f"/etc/systemd/system/{SERVICE}.d/override.conf"
ENV_FILE = "/etc/pytest-sglang/sglang-rel.env"
EXTRA = "/opt/rel-kernels/E=8.json"
WATCHED = (UNIT, DROPIN, ENV_FILE, EXTRA, "/etc/pytest-sglang", "/var/lib/pytest-sglang")
ORIGINAL_UNIT = """[Unit]
Description=the production service (a sleeping stand-in)
[Service]
ExecStart=/bin/sleep infinity
[Install]
WantedBy=multi-user.target
"""
ORIGINAL_DROPIN = "[Service]\nEnvironment=PROD=1\n"
ORIGINAL_EXTRA = b'{"1": {"BLOCK_SIZE_M": 16}}\n'


@pytest.fixture
def new_transport(systemd_host: SystemdTestHost) -> Iterator[Callable[[], Any]]:
    """Open extra SSH transports to the test host (closed at the end of the test)."""
    from pytest_sglang.transport.ssh import SshTransport

    opened: list[SshTransport] = []

    def make() -> SshTransport:
        transport = SshTransport(
            systemd_host.ip,
            user=systemd_host.user,
            key_filename=systemd_host.key_path,
            known_hosts=systemd_host.known_hosts_path,
            connect_timeout=5.0,
        )
        opened.append(transport)
        return transport

    yield make
    for transport in opened:
        transport.close()


def write_inventory(host: SystemdTestHost, path: Path, launch: str = "", **env: str) -> Path:
    """An inventory naming the test host ``testhost`` (the simulator, fast startup)."""
    items = {"SGLANG_SIM_STARTUP_SCALE": "0", "SGLANG_SIM_TIME_SCALE": "0", **env}
    env_items = ", ".join(f'{k} = "{v}"' for k, v in items.items())
    path.write_text(
        f"""
[hosts.testhost]
ssh = "root@{host.ip}:22"
service = "{SERVICE}"
launch = "{launch or sys.executable + " -m pytest_sglang.sim"}"
known_hosts = "{host.known_hosts_path}"
identity = "{host.key_path}"
env = {{ {env_items} }}
"""
    )
    return path


def snapshot(transport: Any) -> dict[str, str]:
    """sha256 + mode + owner of every watched path ('absent' when missing), and unit state."""
    out: dict[str, str] = {}
    for path in WATCHED:
        result = transport.run(
            "test -e %s && { stat -c '%%F %%a %%U:%%G' %s; test -f %s && sha256sum < %s; } "
            "|| echo absent",
            path,
            path,
            path,
            path,
        )
        out[path] = result.stdout.strip()
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
