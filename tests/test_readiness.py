"""Readiness driven by the server's output, on the local process deployer with the real
simulator: the log is followed (``tail -F``), the state is asked for only as a slow safety net
or when the exit record arrives, the phases are reported as they are logged, and a fatal line
or a silent death ends the wait with its reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import use_simulator_env

from pytest_sglang.config import ServerConfig
from pytest_sglang.errors import ServerStartError
from pytest_sglang.lifecycle import readiness
from pytest_sglang.lifecycle.deployment import bring_up
from pytest_sglang.lifecycle.hosts import resolve_host, transport_for
from pytest_sglang.lifecycle.journal import READY_LINE
from pytest_sglang.lifecycle.process import ProcessDeployer
from pytest_sglang.lifecycle.readiness import wait_until_ready
from pytest_sglang.secrets import Redactor

CONFIG = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")


@pytest.fixture
def deployer(monkeypatch: pytest.MonkeyPatch) -> Iterator[ProcessDeployer]:
    use_simulator_env(monkeypatch, {"SGLANG_SIM_STARTUP_SCALE": "0.1"})
    # no safety net: whatever ends the wait here came from the server's output
    monkeypatch.setattr(readiness, "SAFETY_POLL_S", 3600.0)
    spec = resolve_host("local")
    dep = ProcessDeployer(spec, transport_for(spec))
    yield dep
    dep.restore()
    dep.close()


class Counted:
    """Counts ``state()`` calls of a deployer (what polling would multiply)."""

    def __init__(self, deployer: ProcessDeployer) -> None:
        self.calls = 0
        inner = deployer.state

        def state() -> Any:
            self.calls += 1
            return inner()

        deployer.state = state  # type: ignore[method-assign]


def _wait(deployer: ProcessDeployer, config: ServerConfig, **kwargs: Any) -> Any:
    plan = deployer.launch_plan(config)
    cursor = deployer.deploy(plan)
    return wait_until_ready(
        deployer, deployer.base_url(plan), cursor, where="local test", timeout=60, **kwargs
    )


def test_ready_is_read_from_the_log_not_polled(deployer: ProcessDeployer) -> None:
    counted = Counted(deployer)
    seen: list[tuple[str, float]] = []
    ready = _wait(deployer, CONFIG, on_progress=lambda phase, s: seen.append((phase, s)))
    assert any(READY_LINE in line for line in ready.journal.lines)
    assert counted.calls == 0, "readiness asked for the state: it polled"
    phases = [phase for phase, _ in seen]
    assert "initialising" in phases and phases[-1] == "ready", phases
    assert [s for _, s in seen] == sorted(s for _, s in seen)
    assert len(set(phases)) == len(phases) >= 4, phases


def test_a_fatal_line_ends_the_wait_with_its_cause(
    deployer: ProcessDeployer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_SIM_FAULT", "oom")
    with pytest.raises(ServerStartError) as err:
        _wait(deployer, CONFIG)
    assert err.value.reason == "out of memory"
    assert "Not enough memory" in str(err.value).splitlines()[0]


def test_a_silent_death_is_noticed_by_its_exit_record(deployer: ProcessDeployer) -> None:
    """The server is killed from outside while it loads (no fatal line): the exit record the
    deployer appends to the log ends the wait (without it, nothing would: no safety net)."""
    counted = Counted(deployer)
    plan = deployer.launch_plan(CONFIG)
    cursor = deployer.deploy(plan)
    proc = deployer._proc
    assert proc is not None
    seen: list[str] = []

    def on_progress(phase: str, _elapsed: float) -> None:
        seen.append(phase)
        if phase == "loading weights":
            proc.kill()

    with pytest.raises(ServerStartError) as err:
        wait_until_ready(
            deployer,
            deployer.base_url(plan),
            cursor,
            where="local test",
            timeout=30,
            on_progress=on_progress,
        )
    assert err.value.reason == "killed", str(err.value)
    assert "killed by signal 9" in str(err.value)
    assert "last line: " in str(err.value) and "main process ended" not in str(err.value)
    assert 1 <= counted.calls <= 3, counted.calls


def test_an_exit_status_of_systemds_own_names_its_setup_step() -> None:
    """systemd exits 200-245 when it could not set up the process (a cgroup, a working directory,
    a user): the cause is on the host, named by systemd's step, not a crash of the server."""
    from pytest_sglang.lifecycle.deployer import ServiceState
    from pytest_sglang.lifecycle.journal import StartupJournal

    state = ServiceState("failed", "failed", 0, "exited", 219, 0, "exit-code")
    journal = StartupJournal(["sglang.service: Failed with result 'exit-code'."])
    assert readiness._exit_reason(state, journal) == "service setup failed"
    assert readiness.describe_exit(state) == (
        "process exited with status 219: systemd failed at step CGROUP before the server ran"
    )
    crashed = ServiceState("failed", "failed", 0, "exited", 1, 0, "exit-code")
    assert readiness._exit_reason(crashed, journal) == "crashed"
    assert readiness.describe_exit(crashed) == "process exited with status 1"


def test_a_signal_the_kernel_sends_for_a_units_setting_names_the_setting() -> None:
    """A unit's ``SystemCallFilter=`` ends the process by SIGSYS before it writes a line (the
    forty-ninth batch's ``~@resources``): the exit alone names the setting, where systemd's own
    line has not reached the journal read; a SIGSEGV stays a crash."""
    from pytest_sglang.lifecycle.deployer import ServiceState
    from pytest_sglang.lifecycle.journal import StartupJournal

    journal = StartupJournal([])
    sys_killed = ServiceState("failed", "failed", 0, "killed", 31, 0, "signal")
    assert readiness._exit_reason(sys_killed, journal) == "invalid config"
    assert "SystemCallFilter=" in readiness.describe_exit(sys_killed)
    segv = ServiceState("failed", "failed", 0, "dumped", 11, 0, "core-dump")
    assert readiness._exit_reason(segv, journal) == "crashed"
    assert readiness.describe_exit(segv) == "process killed by signal 11"


@pytest.mark.parametrize(("signal", "reason"), [(9, "killed"), (15, "killed"), (11, "crashed")])
def test_a_main_process_ended_by_a_signal_with_no_line_is_named_by_it(
    signal: int, reason: str
) -> None:
    """As the journal's reading names a child's death by its exit code: SIGKILL and SIGTERM come
    from outside the start, SIGSEGV from the process's own fault."""
    from pytest_sglang.lifecycle.deployer import ServiceState
    from pytest_sglang.lifecycle.journal import StartupJournal

    state = ServiceState("failed", "failed", 0, "killed", signal, 0, "signal")
    assert readiness._exit_reason(state, StartupJournal(["Load weight begin."])) == reason
    assert readiness.describe_exit(state) == f"process killed by signal {signal}"


def _refused_first(deployer: ProcessDeployer, status: int) -> list[str]:
    """The deployer's first start exits with ``status``, as systemd's own setup step does before
    the server's program runs; later starts run the server. Returns the launchers started."""
    started: list[str] = []
    deploy = deployer.deploy

    def refused_first(plan: Any) -> str:
        if not started:
            plan = dataclasses.replace(plan, launcher=("sh", "-c", f"exit {status}", "sh"))
        started.append(plan.launcher[0])
        return deploy(plan)

    deployer.deploy = refused_first  # type: ignore[method-assign]
    return started


def test_a_start_systemd_could_not_set_up_for_a_passing_reason_is_deployed_once_more(
    deployer: ProcessDeployer,
) -> None:
    """Step CGROUP (status 219): the cgroup of the service's last run still torn down as it is
    started again on a loaded host. The server never ran; one more start, after a pause, is it."""
    started = _refused_first(deployer, 219)
    said: list[str] = []
    up = bring_up(
        deployer,
        deployer.launch_plan(CONFIG),
        redactor=Redactor(),
        ready_timeout=60,
        say=said.append,
    )
    assert len(started) == 2 and started[0] == "sh", started
    assert up.server_args["served_model_name"] == "qwen3-8b"
    assert any("step CGROUP; the server never ran); starting it once more" in s for s in said)


def test_a_start_systemd_cannot_set_up_for_a_lasting_reason_is_reported_at_once(
    deployer: ProcessDeployer,
) -> None:
    """Step EXEC (status 203, the program is missing) fails the same way every time: one start,
    one error naming the step."""
    started = _refused_first(deployer, 203)
    with pytest.raises(ServerStartError) as err:
        bring_up(
            deployer,
            deployer.launch_plan(CONFIG),
            redactor=Redactor(),
            ready_timeout=60,
            say=lambda _line: None,
        )
    assert started == ["sh"]
    assert err.value.step == "EXEC" and err.value.reason == "service setup failed"
    assert "systemd failed at step EXEC before the server ran" in str(err.value)
