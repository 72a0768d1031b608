"""Fixtures for deployer tests: the launcher to deploy (the real simulator when it exists), and
the deployers themselves.

``process_deployer`` and ``systemd_deployer`` are each backend on its own (the systemd one on the
nspawn test host); ``any_deployer`` is both in turn, for one test body that holds for every
backend (``test_contract.py``): behaviour the deployer contract promises is written once.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang.lifecycle.deployer import Deployer, ServiceState
from pytest_sglang.lifecycle.process import ProcessDeployer
from pytest_sglang.lifecycle.readiness import SYSTEMD_STEPS
from pytest_sglang.lifecycle.spec import HostSpec
from pytest_sglang.lifecycle.systemd import SystemdDeployer
from pytest_sglang.transport.local import LocalTransport

REPO = Path(__file__).resolve().parents[2]


def systemd_host_spec(host: Any, service: str, launch: str, **extra: Any) -> HostSpec:
    """The systemd test host as an SSH host named ``testhost`` running ``service``."""
    return HostSpec(
        name="testhost",
        kind="ssh",
        launch=launch,
        hostname=host.ip,
        user="root",
        service=service,
        **extra,
    )


@dataclass(frozen=True)
class Launcher:
    launch: str
    #: The inventory's sglang_version (None: detected from the simulator).
    version: str | None = None


@pytest.fixture(scope="session")
def launcher() -> Launcher:
    """``<repo>/.venv/bin/python -m pytest_sglang.sim``: the real simulator as the launcher."""
    python = REPO / ".venv/bin/python"
    if not python.exists():
        python = Path(sys.executable)
    return Launcher(f"{python} -m pytest_sglang.sim")


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``predicate`` until true; fail naming ``what`` after a generous bound."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.1)


def start_that_fails(deployer: Deployer, plan: Any, tries: int = 3) -> tuple[str, ServiceState]:
    """Deploy ``plan`` (a server that fails at start) and wait for it to end: its journal cursor
    and final state. A start that systemd itself could not set up (an exit status of its own,
    ``219``: a cgroup still being torn down after the last restart on a loaded test host) never
    ran the server, so it says nothing of the failure under test: deployed again, up to
    ``tries`` times."""
    for _ in range(tries):
        cursor = deployer.deploy(plan)
        wait_for(lambda: deployer.state().exited, "the failed start to end")
        state = deployer.state()
        if not (state.exec_main_code == "exited" and state.exec_main_status in SYSTEMD_STEPS):
            break
    return cursor, state


#: The unit ``systemd_deployer`` deploys as (none exists before: the session's own unit).
CONTRACT_SERVICE = "sglang-contract.service"


@pytest.fixture
def process_deployer(
    launcher: Launcher, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ProcessDeployer]:
    """The embedded simulator's backend on this machine, restored after the test."""
    monkeypatch.setenv("SGLANG_SIM_STARTUP_SCALE", "0")
    spec = HostSpec(
        name="local",
        kind="local",
        launch=launcher.launch,
        hostname="127.0.0.1",
        deployer="process",
        sglang_version=launcher.version,
    )
    dep = ProcessDeployer(spec, LocalTransport(), stop_timeout=10)
    yield dep
    dep.restore()
    dep.close()


def _clean_unit(transport: Any, service: str) -> None:
    transport.run("systemctl stop %s; systemctl reset-failed %s", service, service)
    transport.run(
        "rm -rf /etc/systemd/system/%s /etc/systemd/system/%s.d /var/lib/pytest-sglang/%s; "
        "systemctl daemon-reload",
        service,
        service,
        service,
    )


@pytest.fixture
def systemd_deployer(
    systemd_host: Any, systemd_transport: Any, launcher: Launcher
) -> Iterator[SystemdDeployer]:
    """A unit of the session's own on the systemd test host, restored after the test."""
    _clean_unit(systemd_transport, CONTRACT_SERVICE)
    spec = systemd_host_spec(
        systemd_host,
        CONTRACT_SERVICE,
        launcher.launch,
        sglang_version=launcher.version,
        env={"SGLANG_SIM_STARTUP_SCALE": "0"},
    )
    dep = SystemdDeployer(spec, systemd_transport)
    yield dep
    dep.restore()
    dep.close()
    _clean_unit(systemd_transport, CONTRACT_SERVICE)


@pytest.fixture(
    params=["process", pytest.param("systemd", marks=pytest.mark.systemd)],
)
def any_deployer(request: pytest.FixtureRequest) -> Deployer:
    """Each backend in turn (the systemd one needs the test host: root)."""
    deployer: Deployer = request.getfixturevalue(f"{request.param}_deployer")
    return deployer
