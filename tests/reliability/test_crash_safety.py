"""Crash safety on the real systemd host: SIGTERM restores before exiting; after SIGKILL the
intent record on the host names the dead session, and the next session (or ``--sglang-restore``)
restores from it first. ``--sglang-dry-run`` changes nothing."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from testhost import SystemdTestHost

from .conftest import EXTRA, ORIGINAL_UNIT, OURS, SERVICE, UNIT, snapshot, write_inventory

CONFIG = f"""
import pathlib, time
import pytest
from pytest_sglang import ServerConfig

CONFIG = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b",
                      files={{"{EXTRA}": {{"content": "{{}}"}}}})
"""
LONG_TEST = """
@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_long(sglang_server):
    pathlib.Path({marker!r}).write_text("x")
    time.sleep(120)
"""
CHECK_TEST = """
@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_ready(sglang_server):
    assert sglang_server.get("/health").status_code == 200
"""


def _start(
    pytester: pytest.Pytester, session_until: Any, host: SystemdTestHost
) -> tuple[Path, Any]:
    """A session that has deployed CONFIG on ``host`` and waits: (its inventory, its process)."""
    inventory = write_inventory(host, pytester.path / "hosts.toml")
    marker = pytester.path / "deployed"
    pytester.makepyfile(CONFIG + LONG_TEST.format(marker=str(marker)))
    return inventory, session_until(
        marker, "-s", "--sglang-host", "testhost", "--sglang-inventory", str(inventory)
    )


def _killed(
    pytester: pytest.Pytester, session_until: Any, host: SystemdTestHost
) -> tuple[Path, Any]:
    """As :func:`_start`, then SIGKILLed: it could restore nothing."""
    inventory, proc = _start(pytester, session_until, host)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    return inventory, proc


def _manifest(transport: Any) -> dict[str, Any]:
    text = transport.check_output("cat /var/lib/pytest-sglang/%s/manifest.json", SERVICE)
    data: dict[str, Any] = json.loads(text)
    return data


def test_sigterm_restores_before_exiting(
    pytester: pytest.Pytester,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production: dict[str, str],
    session_until: Any,
) -> None:
    _, proc = _start(pytester, session_until, systemd_host)
    assert snapshot(systemd_transport) != production  # really reconfigured
    intent = _manifest(systemd_transport)
    assert intent["owner"]["pid"] == proc.pid
    assert set(intent["owner"]) >= {"user", "machine", "pid", "session", "since"}
    assert OURS in intent["changes"]["files"] and EXTRA in intent["changes"]["files"]
    assert UNIT not in intent["changes"]["files"]  # production's unit is never written
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=90)
    assert snapshot(systemd_transport) == production
    assert systemd_transport.run("test -e /run/lock/pytest-sglang.json").rc != 0  # unlocked


def test_after_sigkill_the_next_session_restores_first(
    pytester: pytest.Pytester,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production: dict[str, str],
    session_until: Any,
) -> None:
    inv, proc = _killed(pytester, session_until, systemd_host)
    left = snapshot(systemd_transport)
    assert left != production
    assert _manifest(systemd_transport)["owner"]["pid"] == proc.pid

    pytester.makepyfile(CONFIG + CHECK_TEST)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--sglang-host", "testhost", "--sglang-inventory", str(inv)
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            f"*breaking the stale host lock of *pid {proc.pid}*is gone*",
            f"*testhost: found the intent record of *pid {proc.pid}*restoring it first*",
            "*testhost: restored*",
        ]
    )
    assert snapshot(systemd_transport) == production


def test_sglang_restore_on_demand(
    pytester: pytest.Pytester,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production: dict[str, str],
    session_until: Any,
) -> None:
    inv, _ = _killed(pytester, session_until, systemd_host)
    assert snapshot(systemd_transport) != production
    args = ["--sglang-restore", "--sglang-host", "testhost", "--sglang-inventory", str(inv)]
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*found the intent record*", "*testhost: restored*"])
    assert "passed" not in result.stdout.str()  # no tests ran
    assert snapshot(systemd_transport) == production
    again = pytester.runpytest_subprocess(*args)
    again.stdout.fnmatch_lines(["*testhost: nothing to restore*"])


def test_dry_run_shows_the_diff_and_changes_nothing(
    pytester: pytest.Pytester,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    production: dict[str, str],
) -> None:
    inv = write_inventory(systemd_host, pytester.path / "hosts.toml", HF_TOKEN="hf_dryrunsecret")
    # the production unit carries secrets of its own, which this session never passed in
    prod_unit = ORIGINAL_UNIT.replace(
        "ExecStart=/bin/sleep infinity",
        "Environment=HF_TOKEN=hf_prodsecret1 MODE=fast\n"
        "ExecStart=/bin/sleep infinity --api-key prodkey1234 --max-total-tokens 16384",
    )
    systemd_transport.put(prod_unit.encode(), UNIT, mode=0o644)
    before = snapshot(systemd_transport)  # the host as the dry run finds it
    pytester.makepyfile(CONFIG + CHECK_TEST)
    try:
        result = pytester.runpytest_subprocess(
            "--sglang-dry-run", "--sglang-host", "testhost", "--sglang-inventory", str(inv)
        )
        after = snapshot(systemd_transport)  # before any cleanup of ours
    finally:
        systemd_transport.put(ORIGINAL_UNIT.encode(), UNIT, mode=0o644)
    assert after == before, "the dry run changed the host"
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*sglang dry run (nothing was changed)*",
            "--- /dev/null",
            f"+++ b{OURS}",
            "+ExecStart=",
            "+ExecStart=*--model-path*",
            "+++ b/etc/pytest-sglang/sglang-rel.env",
            f"flags against production ({SERVICE}):",
            "  - --api-key <redacted>",
            "  - --max-total-tokens 16384",
            "  + --model-path /models/Qwen3-8B",
            f"runs inside {SERVICE}'s own context: its unit file and drop-ins stay in force",
            f"would restart: {SERVICE} (now active)*",
        ]
    )
    out = result.stdout.str()
    assert "hf_dryrunsecret" not in out
    assert "hf_prodsecret1" not in out and "prodkey1234" not in out
    assert snapshot(systemd_transport) == production
