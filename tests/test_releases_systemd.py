"""Two releases in one session on a real systemd + journald + OpenSSH host (the nspawn test host).

The host declares two launchers, each the simulator playing another release
(``SGLANG_SIM_VERSION`` in the launcher's own ``env``; simulated 0.5.22 and 0.5.23 differ in the
defaults of the flags 0.5.23 made three-valued, docs/simulator.md). One pytester session, over
SSH through the inventory as a user's GPU host, sweeps one config over both: each is deployed as
the session's drop-in on the production unit with its launcher's command and environment, the
0.5.23 run is gated against the 0.5.22 run as an upgrade with the settings that changed, and the
host is given back as it was (production unit and its state, no drop-in, no environment file).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import PRODUCTION_UNIT, SIM_LAUNCH, file_states, host_entry, save_inventory
from testhost import SystemdTestHost

SERVICE = "sglang-releases.service"
UNIT = f"/etc/systemd/system/{SERVICE}"
OURS = f"/etc/systemd/system/{SERVICE}.d/zz-pytest-sglang.conf"
ENV_FILE = "/etc/pytest-sglang/sglang-releases.env"
SIM_ENV = {"SGLANG_SIM_STARTUP_SCALE": "0", "SGLANG_SIM_TIME_SCALE": "0.2"}

LAUNCHERS = f"""
[hosts.testhost.launchers]
"0.5.22" = {{ launch = "{SIM_LAUNCH}", env = {{ SGLANG_SIM_VERSION = "0.5.22" }} }}
"0.5.23" = {{ launch = "{SIM_LAUNCH}", env = {{ SGLANG_SIM_VERSION = "0.5.23" }} }}
"""

TEST = """
import pytest
from pytest_sglang import ServerConfig, sweep
from pytest_sglang.bench import Workload

BASE = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")
RELEASES = sweep(BASE, launcher=["0.5.22", "0.5.23"])

@pytest.mark.sglang_gate(median_ttft_ms="off", median_itl_ms="off")
@pytest.mark.parametrize("sglang_server", RELEASES, indirect=True)
def test_decode(sglang_server, sglang_bench):
    # the session's drop-in runs this config's launcher with that launcher's environment
    deployer = sglang_server.deployer
    assert (sglang_server.host, deployer.spec.launcher) == ("testhost", sglang_server.config.launcher)
    env = deployer.transport.run("cat -- %s", deployer.env_path).stdout
    assert f'SGLANG_SIM_VERSION="{sglang_server.config.launcher}"' in env, env
    sglang_bench(Workload.single_stream(32), rounds=3)
"""


def host_state(transport: Any) -> dict[str, str]:
    """The production unit, the session's drop-in and environment file (sha256, mode, owner;
    'absent' when missing), and the service's state."""
    state = file_states(transport.run, [UNIT, OURS, ENV_FILE])
    state["active"] = transport.run("systemctl is-active -- %s", SERVICE).stdout.strip()
    return state


@pytest.fixture
def production_service(systemd_transport: Any) -> Iterator[dict[str, str]]:
    """A running 'production' unit the session must give back untouched."""
    systemd_transport.put(PRODUCTION_UNIT.encode(), UNIT, mode=0o644)
    systemd_transport.check_output("systemctl daemon-reload && systemctl restart -- %s", SERVICE)
    before = host_state(systemd_transport)
    assert before["active"] == "active" and before[OURS] == before[ENV_FILE] == "absent"
    yield before
    systemd_transport.run(
        "systemctl stop -- %s; rm -rf -- %s /var/lib/pytest-sglang; systemctl daemon-reload",
        SERVICE,
        UNIT,
    )


def test_two_launchers_on_a_systemd_host(
    pytester: pytest.Pytester,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production_service: dict[str, str],
) -> None:
    pytester.makepyfile(test_on_host=TEST)
    inventory = save_inventory(
        pytester.path / "hosts.toml", host_entry("testhost", systemd_host, SERVICE, SIM_ENV)
    )
    inventory.write_text(inventory.read_text() + LAUNCHERS)
    summary = pytester.path / "summary.json"
    result = pytester.runpytest(
        "--sglang-host",
        "testhost",
        "--sglang-inventory",
        str(inventory),
        f"--sglang-summary={summary}",
        "--sglang-gate=output_throughput:-50%",
        "--sglang-baseline-save",
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "test_decode[[]base-on-0.5.23[]] upgrade: SGLang 0.5.22 -> 0.5.23: output_throughput "
            "*%, p=*; 2 settings in effect changed",
            "    enable_decoder_swa_bounded_replay False -> - (default)",
            "    enable_fused_qk_norm_rope False -> - (default)",
        ]
    )
    data = json.loads(summary.read_text())
    ready = [(d["host"], d["config_id"]) for d in data["deployments"] if d["outcome"] == "ready"]
    assert ready == [("testhost", "base-on-0.5.22"), ("testhost", "base-on-0.5.23")]
    [row] = [r for r in data["comparisons"] if r.get("upgrade")]
    upgrade = row["upgrade"]
    assert row["config_id"] == "base-on-0.5.23"
    # each fingerprint records the release its launcher ran on the host
    assert (upgrade["from"], upgrade["to"]) == (
        {"sglang_version": "0.5.22"},
        {"sglang_version": "0.5.23"},
    )
    assert upgrade["baseline"] == "base-on-0.5.22 (this session)"
    changed = {c["name"]: c for c in upgrade["settings_changed"]}
    assert set(changed) == {"enable_decoder_swa_bounded_replay", "enable_fused_qk_norm_rope"}
    assert {(c["before"], c["after"], c["source"]) for c in changed.values()} == {
        (False, None, "default")
    }
    saved = sorted((pytester.path / "baselines").glob("*/single-stream-*/*.json"))
    versions = [json.loads(p.read_text())["machine_info"]["sglang_fingerprint"] for p in saved]
    assert sorted(v["sglang_version"] for v in versions) == ["0.5.22", "0.5.23"]
    # the host as it was: the production unit running, no drop-in, no environment file
    assert host_state(systemd_transport) == production_service
