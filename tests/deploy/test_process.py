"""ProcessDeployer on this machine: real child processes, real log file, real signals."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang.config import ServerConfig
from pytest_sglang.errors import PreflightError
from pytest_sglang.lifecycle.process import ProcessDeployer
from pytest_sglang.lifecycle.spec import HostSpec
from pytest_sglang.transport.local import LocalTransport

from .conftest import Launcher, wait_for


@pytest.fixture
def deployer(process_deployer: ProcessDeployer) -> ProcessDeployer:
    return process_deployer


def test_deploy_journal_state_stop(deployer: ProcessDeployer) -> None:
    config = ServerConfig(model_path="/models/tiny", mem_fraction_static=0.8)
    plan = deployer.launch_plan(config)
    cursor = deployer.deploy(plan)
    assert cursor == "0"
    url = deployer.base_url(plan)
    assert url.startswith("http://127.0.0.1:")
    port = int(url.rsplit(":", 1)[1])
    assert plan.deployed.port == port and ["--port", str(port)] == [
        w for w in plan.argv if w in ("--port", str(port))
    ]  # a free port, picked once, in the plan
    wait_for(lambda: deployer.state().running, "running")
    lines: list[str] = []

    def ready() -> bool:
        entries, _ = deployer.read_journal(cursor)
        lines[:] = [e.message for e in entries]
        return any("fired up" in m for m in lines)

    wait_for(ready, "the ready line")
    assert any("server_args" in m and "0.8" in m for m in lines)
    _entries, end = deployer.read_journal(cursor)
    again, end2 = deployer.read_journal(end)
    assert end2 == end and [e.message for e in again if "fired up" in e.message] == []

    deployer.stop()
    state = deployer.state()
    assert state.exited and not state.running
    assert state.exec_main_code in ("exited", "killed")

    # A second deploy: its cursor starts after the first run's output.
    cursor2 = deployer.deploy(deployer.launch_plan(config))
    assert int(cursor2) >= int(end) > 0
    wait_for(lambda: any("fired up" in e.message for e in deployer.read_journal(cursor2)[0]), "2nd")


def test_files_are_restored(deployer: ProcessDeployer, tmp_path: Path) -> None:
    existing = tmp_path / "kernel.json"
    existing.write_bytes(b'{"old": 1}\n')
    existing.chmod(0o640)
    new = tmp_path / "sub" / "new.json"
    config = ServerConfig(
        model_path="/m",
        files={str(existing): {"content": '{"new": 2}'}, str(new): {"content": "x", "mode": 0o600}},
    )
    deployer.deploy(deployer.launch_plan(config))
    assert existing.read_bytes() == b'{"new": 2}' and new.stat().st_mode & 0o777 == 0o600
    state_dir = Path(deployer.state_dir)
    assert (state_dir / "server.log").exists()
    deployer.restore()
    assert not state_dir.exists()  # its log goes with the server
    deployer.restore()  # idempotent
    assert existing.read_bytes() == b'{"old": 1}\n' and existing.stat().st_mode & 0o777 == 0o640
    assert not new.exists()


def test_two_deployers_in_one_process_keep_their_own_records(
    deployer: ProcessDeployer, tmp_path: Path
) -> None:
    """One process runs several local deployers at once (a test's own beside the session's
    server, under pytest-xdist on one worker): one restoring must leave the other's intent
    record and copies alone, or the other can no longer write its record nor put its files
    back."""
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text("first")
    second.write_text("second")
    mine = ServerConfig(model_path="/m", files={str(first): {"content": "new"}})
    deployer.deploy(deployer.launch_plan(mine))
    other = ProcessDeployer(deployer.spec, LocalTransport(), stop_timeout=10)
    try:
        theirs = ServerConfig(model_path="/m", files={str(second): {"content": "new"}})
        other.deploy(other.launch_plan(theirs))
        other.restore()
    finally:
        other.close()
    assert second.read_text() == "second"
    deployer.deploy(deployer.launch_plan(mine))  # writes its record again
    deployer.restore()
    assert first.read_text() == "first"


def test_version_detected_from_simulator_env(
    launcher: Launcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older emulated SGLang: detected via the caller's SGLANG_SIM_* and used by preflight."""
    monkeypatch.setenv("SGLANG_SIM_VERSION", "0.5.18")
    spec = HostSpec(name="local", kind="local", launch=launcher.launch, deployer="process")
    dep = ProcessDeployer(spec, LocalTransport())
    assert dep.launcher.sglang_version() == "0.5.18"
    flags = dep.launcher.help_flags()
    assert "--model-path" in flags
    config = ServerConfig(model_path="/m", extra_args=("--no-such-flag-xyz",))
    with pytest.raises(PreflightError, match=r"\(SGLang 0\.5\.18\) has no flag --no-such-flag-xyz"):
        dep.preflight(dep.launch_plan(config))
    dep.close()


KILLED_SESSION = """
import pathlib, time
import pytest
from pytest_sglang import ServerConfig

CONFIG = ServerConfig(model_path="/models/tiny", files={{{kernel!r}: {{"content": "new"}}}})

@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_long(sglang_server):
    pathlib.Path({marker!r}).write_text("x")
    time.sleep(120)
"""


def test_a_killed_local_session_is_recovered_by_the_next(
    pytester: pytest.Pytester, session_until: Any
) -> None:
    """SIGKILL leaves the embedded simulator running and a file overwritten; the intent record
    in the user's state directory lets the next session stop that server and put the file
    back."""
    kernel = pytester.path / "kernel.json"
    kernel.write_text("original")
    marker = pytester.path / "deployed"
    pytester.makepyfile(KILLED_SESSION.format(kernel=str(kernel), marker=str(marker)))
    env = {"SGLANG_SIM_STARTUP_SCALE": "0"}
    for name, value in env.items():
        pytester._monkeypatch.setenv(name, value)
    proc = session_until(marker)
    records = list(
        Path(os.environ["HOME"]).glob(".local/state/pytest-sglang/process/*/manifest.json")
    )
    assert [r.parent.name.rsplit("-", 1)[0] for r in records] == [f"local-{proc.pid}"]
    server = json.loads(records[0].read_text())["service"]
    assert kernel.read_text() == "new"
    proc.kill()
    proc.wait(timeout=30)
    os.kill(server["pgid"], 0)  # the orphaned simulator still runs

    result = pytester.runpytest_subprocess("--sglang-restore", "--sglang-host", "local")
    result.stdout.fnmatch_lines(["*found the intent record of *pid*restoring it first*"])
    assert kernel.read_text() == "original"
    wait_for(lambda: not _alive(server["pgid"]), "the orphaned simulator to stop", timeout=40)
    assert not Path(server["state_dir"]).exists()
    assert not records[0].parent.exists()


def _alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet, in a container without init, is not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status
