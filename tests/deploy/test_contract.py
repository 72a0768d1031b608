"""What the deployer contract promises, held once for every backend (``any_deployer``).

The readiness loop, the journal check and the restore read only the contract (``deploy``,
``read_journal``, ``state``, ``stop``, ``preflight``, ``artifacts``), so a behaviour it promises is
one test body run over both backends, the process one on this machine and the systemd one on the
test host; what only one backend does stays in its own module.
"""

from __future__ import annotations

import pytest

from pytest_sglang.config import ServerConfig
from pytest_sglang.errors import PreflightError
from pytest_sglang.lifecycle.deployer import Deployer

from .conftest import start_that_fails, wait_for


def messages(deployer: Deployer, cursor: str) -> list[str]:
    return [entry.message for entry in deployer.read_journal(cursor)[0]]


def test_a_deployed_plan_runs_and_its_output_is_read_after_the_cursor(
    any_deployer: Deployer,
) -> None:
    config = ServerConfig(model_path="/models/tiny", port=30000, mem_fraction_static=0.8)
    cursor = any_deployer.deploy(any_deployer.launch_plan(config))
    wait_for(lambda: any_deployer.state().running, "running")
    wait_for(lambda: any("fired up" in m for m in messages(any_deployer, cursor)), "ready line")
    lines = messages(any_deployer, cursor)
    assert any("server_args" in m and "0.8" in m for m in lines)
    entries, end = any_deployer.read_journal(cursor)
    assert end == entries[-1].cursor
    assert all("fired up" not in m for m in messages(any_deployer, end))  # nothing read twice

    any_deployer.stop()
    wait_for(lambda: any_deployer.state().exited, "stopped")
    assert not any_deployer.state().running


def test_a_failed_start_shows_in_its_state_and_its_output(any_deployer: Deployer) -> None:
    config = ServerConfig(model_path="/models/tiny", port=30000, env={"SGLANG_SIM_FAULT": "oom"})
    cursor, state = start_that_fails(any_deployer, any_deployer.launch_plan(config))
    assert state.exec_main_code in ("killed", "exited") and state.n_restarts == 0, state
    # a journal may file the last lines after the process is gone: wait for them
    wait_for(
        lambda: any("Not enough memory" in m for m in messages(any_deployer, cursor)),
        f"the failed start's last words in its output ({state})",
    )


def test_preflight_refuses_an_unknown_flag_before_the_host_changes(
    any_deployer: Deployer,
) -> None:
    config = ServerConfig(model_path="/m", port=30000, extra_args=("--no-such-flag-xyz", "1"))
    name = any_deployer.spec.name
    with pytest.raises(PreflightError, match=rf"host '{name}' \(SGLang .*\) has no flag --no-such"):
        any_deployer.deploy(any_deployer.launch_plan(config))
    assert any_deployer.state().exited


def test_artifacts_never_carry_a_secret(any_deployer: Deployer) -> None:
    config = ServerConfig(
        model_path="/m", port=30000, env={"HF_TOKEN": "hf_s3cr3t$value", "OTHER": "v"}
    )
    any_deployer.deploy(any_deployer.launch_plan(config))
    artifacts = any_deployer.artifacts()
    assert "hf_s3cr3t" not in str(artifacts)
    assert '"OTHER": "v"' in artifacts["env"] and "/m" in artifacts["argv"]
