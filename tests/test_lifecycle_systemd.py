"""Deployments as fixtures on a real systemd + journald + OpenSSH host (the nspawn test host).

The simulator runs inside the container as the systemd service; pytester sessions reach it over
SSH with strict host-key checking, through the inventory, exactly as a user's GPU host.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from helpers import PRODUCTION_UNIT, host_entry, save_inventory
from testhost import SystemdTestHost

SERVICE = "sglang-lifecycle.service"
UNIT = f"/etc/systemd/system/{SERVICE}"
OURS = f"/etc/systemd/system/{SERVICE}.d/zz-pytest-sglang.conf"

TESTS = """
import pytest
from pytest_sglang import ServerConfig

CONFIG = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b",
                      speculative_algorithm="EAGLE", speculative_num_steps=2,
                      speculative_eagle_topk=1)

@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_ready(sglang_server):
    assert sglang_server.get("/health").status_code == 200
    assert sglang_server.server_args["speculative_num_draft_tokens"] == 3
    assert sglang_server.host == "testhost"

@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_fails(sglang_server):
    assert False, "a failing benchmark"
"""


def inventory(host: SystemdTestHost, path: Path, **env: str) -> Path:
    entry = host_entry("testhost", host, SERVICE, {"SGLANG_SIM_STARTUP_SCALE": "0", **env})
    return save_inventory(path, entry)


def host_state(transport: Any) -> tuple[str, str, str]:
    """The production unit's and the session drop-in's sha256 ('absent' when missing) and the
    service's state."""
    unit = transport.run("sha256sum < %s || echo absent", UNIT).stdout.strip()
    ours = transport.run("sha256sum < %s 2>/dev/null || echo absent", OURS).stdout.strip()
    active = transport.run("systemctl is-active -- %s", SERVICE).stdout.strip()
    return unit, ours, active


@pytest.fixture
def production_service(systemd_transport: Any) -> Any:
    """A running 'production' unit the sessions must give back untouched."""
    systemd_transport.put(PRODUCTION_UNIT.encode(), UNIT, mode=0o644)
    systemd_transport.check_output("systemctl daemon-reload && systemctl restart -- %s", SERVICE)
    before = host_state(systemd_transport)
    assert before[2] == "active"
    yield before
    systemd_transport.run(
        "systemctl stop -- %s; rm -rf -- %s /var/lib/pytest-sglang; systemctl daemon-reload",
        SERVICE,
        UNIT,
    )


def test_deploy_verify_and_restore_after_a_failing_test(
    pytester: pytest.Pytester,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production_service: tuple[str, str, str],
) -> None:
    pytester.makepyfile(TESTS)
    inv = inventory(systemd_host, pytester.path / "hosts.toml")
    out = pytester.path / "summary.json"
    result = pytester.runpytest(
        "--sglang-host", "testhost", "--sglang-inventory", str(inv), "--sglang-summary", str(out)
    )
    result.assert_outcomes(passed=1, failed=1)
    [record] = json.loads(out.read_text())["deployments"]
    assert record["host"] == "testhost"
    assert record["outcome"] == "ready"
    assert host_state(systemd_transport) == production_service


def test_lines_left_by_an_earlier_run_are_never_used(
    pytester: pytest.Pytester,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production_service: tuple[str, str, str],
) -> None:
    pytester.makepyfile(TESTS.split("@pytest.mark.parametrize")[0] + TESTS.split("\n\n")[-2])
    good = inventory(systemd_host, pytester.path / "good.toml")
    pytester.runpytest(
        "--sglang-host", "testhost", "--sglang-inventory", str(good)
    ).assert_outcomes(passed=1)
    # The same config again, but this "build" silently ignores --served-model-name: the good
    # server_args line of the first run is still in the journal and must not be used.
    bad = inventory(
        systemd_host, pytester.path / "bad.toml", SGLANG_SIM_IGNORE_FLAG="served_model_name"
    )
    result = pytester.runpytest("--sglang-host", "testhost", "--sglang-inventory", str(bad))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*served_model_name requested 'qwen3-8b', logged*"])
    assert host_state(systemd_transport) == production_service


def test_an_interrupted_session_restores_the_host(
    pytester: pytest.Pytester,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production_service: tuple[str, str, str],
    session_until: Any,
) -> None:
    marker = pytester.path / "deployed"
    pytester.makepyfile(
        TESTS.split("@pytest.mark.parametrize")[0]
        + f"""
import pathlib, time

@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_long(sglang_server):
    pathlib.Path({str(marker)!r}).write_text("x")
    time.sleep(120)
"""
    )
    inv = inventory(systemd_host, pytester.path / "hosts.toml")
    proc = session_until(
        marker, "--sglang-host", "testhost", "--sglang-inventory", str(inv), timeout=60
    )
    assert host_state(systemd_transport)[1] != production_service[1]  # really reconfigured
    assert host_state(systemd_transport)[0] == production_service[0]  # production unit untouched
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=90)
    assert host_state(systemd_transport) == production_service
