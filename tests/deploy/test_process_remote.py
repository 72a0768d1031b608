"""The process deployer on an SSH host without systemd's help (``deployer = "process"``), on the
real sshd of the test host: the server runs in its own process group, a stop reaches the whole
group through the host's ``/bin/sh``, and a session that dies leaves an intent record from which
the next one stops the orphaned server and puts the files back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers import ssh_transport

from pytest_sglang.config import ServerConfig
from pytest_sglang.lifecycle.process import ProcessDeployer

from .conftest import Launcher, systemd_host_spec, wait_for

KERNEL = "/opt/remote-process/k.json"


def _deployer(systemd_host: Any, launcher: Launcher) -> ProcessDeployer:
    spec = systemd_host_spec(
        systemd_host,
        "unused.service",
        launcher.launch,
        deployer="process",
        sglang_version=launcher.version,
        env={"SGLANG_SIM_STARTUP_SCALE": "0"},
    )
    return ProcessDeployer(spec, ssh_transport(systemd_host), stop_timeout=10)


def _group_alive(t: Any, pgid: int) -> bool:
    return t.run("kill -0 -%s 2>/dev/null", pgid).ok


@pytest.fixture
def original(systemd_transport: Any) -> Iterator[bytes]:
    data = b'{"original": true}\n'
    systemd_transport.check_output("mkdir -p /opt/remote-process")
    systemd_transport.put(data, KERNEL, mode=0o640)
    yield data
    systemd_transport.run("rm -rf /opt/remote-process /root/.local/state/pytest-sglang")


def test_a_remote_process_stops_as_a_group(
    systemd_host: Any, systemd_transport: Any, launcher: Launcher, original: bytes
) -> None:
    deployer = _deployer(systemd_host, launcher)
    config = ServerConfig(model_path="/models/tiny", files={KERNEL: {"content": "{}"}})
    try:
        deployer.deploy(deployer.launch_plan(config))
        wait_for(lambda: deployer.state().running, "the remote server running")
        pgid = deployer._remote_pgid()
        state_dir = deployer.state_dir
        assert pgid and _group_alive(systemd_transport, pgid)
        assert systemd_transport.get(KERNEL) == b"{}"
        assert systemd_transport.run("test -s %s/env.sh", state_dir).ok
    finally:
        deployer.restore()
        deployer.close()
    assert not _group_alive(systemd_transport, pgid)  # `kill -TERM -PGID` reached the group
    assert systemd_transport.get(KERNEL) == original
    # its log and its env file (which may hold secrets) do not stay behind on the host
    assert not systemd_transport.run("test -e %s", state_dir).ok


def test_the_next_session_stops_a_dead_sessions_server_and_restores_its_files(
    systemd_host: Any, systemd_transport: Any, launcher: Launcher, original: bytes
) -> None:
    dead = _deployer(systemd_host, launcher)
    config = ServerConfig(model_path="/models/tiny", files={KERNEL: {"content": "{}"}})
    dead.deploy(dead.launch_plan(config))
    wait_for(lambda: dead.state().running, "the remote server running")
    pgid = dead._remote_pgid()
    state_dir = dead.state_dir
    dead.transport.close()  # the session is gone: it never restores

    nxt = _deployer(systemd_host, launcher)
    try:
        record = nxt.pending_intent()
        assert record is not None and record["service"]["pgid"] == pgid
        assert _group_alive(systemd_transport, pgid)
        nxt.restore()
        assert nxt.pending_intent() is None
    finally:
        nxt.close()
    assert not _group_alive(systemd_transport, pgid)
    assert systemd_transport.get(KERNEL) == original
    assert not systemd_transport.run("test -e %s", state_dir).ok
