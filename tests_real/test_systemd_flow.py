"""The real server as a production service on the systemd + OpenSSH test host.

The test host (tests/testhost.py; its root is an overlay of this machine's, so the tier's venv,
the tiny model and the CPU patch are visible inside it at the same paths) runs a production unit
whose ``ExecStart=`` is the real ``sglang.launch_server``, with production's own environment.
Through the plugin, as a user runs it:

- ``sweep(production(), ...)`` deploys each point inside production's unit through the drop-in,
  verified from the real journal; a benchmark runs on each;
- ``sglang_production`` attaches to the live production server and measures it without a restart;
- afterwards the host is byte-identical and production serves again;
- a session interrupted while a test config's server is starting gives production back untouched
  as well: by itself on SIGINT, through ``--sglang-restore`` after SIGKILL.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import child_pytest_argv, file_states, host_entry, ssh_transport
from testhost import SystemdTestHost, TestHostFactory

from conftest import CPU_FLAGS, RealSglang

SERVICE = "sglang-tiny.service"
UNIT = f"/etc/systemd/system/{SERVICE}"
OURS = f"/etc/systemd/system/{SERVICE}.d/zz-pytest-sglang.conf"
WATCHED = [UNIT, f"{UNIT}.d", OURS, "/etc/pytest-sglang", "/var/lib/pytest-sglang"]


def production_unit(real: RealSglang) -> str:
    env = " ".join(f"{k}={v}" for k, v in real.env.items())
    return f"""[Unit]
Description=SGLang production (the real server, tiny model on CPU)
[Service]
Environment={env}
ExecStart={real.launch} --model-path {real.model} {CPU_FLAGS} \\
  --host 0.0.0.0 --port 30000 --served-model-name tiny
[Install]
WantedBy=multi-user.target
"""


def wait_for(check: Callable[[], bool], what: str, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1.0)


@pytest.fixture(scope="module")
def host(systemd_host_factory: TestHostFactory) -> SystemdTestHost:
    return systemd_host_factory("real")


@pytest.fixture(scope="module")
def transport(host: SystemdTestHost) -> Iterator[Any]:
    t = ssh_transport(host)
    yield t
    t.close()


def _serving(t: Any) -> bool:
    return t.run("curl -sf -m 2 http://127.0.0.1:30000/health >/dev/null").ok


def _main_pid(t: Any) -> str:
    return str(t.check_output("systemctl show -p MainPID --value -- %s", SERVICE).strip())


@pytest.fixture(scope="module")
def production(transport: Any, real_sglang: RealSglang) -> Iterator[dict[str, str]]:
    """The production service running the real server; yields the host's file states."""
    t = transport
    t.put(production_unit(real_sglang).encode(), UNIT, mode=0o644)
    t.check_output("systemctl daemon-reload && systemctl restart -- %s", SERVICE)
    wait_for(lambda: _serving(t), "production serving")
    yield file_states(t.run, WATCHED)
    t.run("systemctl stop -- %s; rm -rf -- %s %s.d; systemctl daemon-reload", SERVICE, UNIT, UNIT)


def _inventory(path: Path, host: SystemdTestHost) -> Path:
    entry = host_entry("prod", host, SERVICE, {}, launch="")
    entry = entry.replace('launch = ""\n', "").replace("env = {  }\n", "")
    inventory = path / "hosts.toml"
    inventory.write_text(entry)
    return inventory


SWEEP = """
import pytest
from pytest_sglang import production, sweep
from pytest_sglang.bench import Workload


def test_production_as_it_runs(sglang_production, sglang_bench):
    # first: attached to the live service before any config replaces it
    assert sglang_production.server_args["served_model_name"] == "tiny"
    result = sglang_bench(Workload.single_stream(16, requests=2))
    assert result.failed == 0, result.errors


@pytest.mark.parametrize(
    "sglang_server", sweep(production(), chunked_prefill_size=[512, 2048]), indirect=True
)
def test_sweep(sglang_bench):
    args = sglang_bench.deployment.server_args
    assert args["chunked_prefill_size"] == sglang_bench.deployment.config.chunked_prefill_size
    assert args["served_model_name"] == "tiny" and args["device"] == "cpu"
    result = sglang_bench(Workload.single_stream(16, requests=2))
    assert result.failed == 0, result.errors

"""


def test_production_sweep_attach_and_the_host_comes_back(
    pytester: pytest.Pytester,
    transport: Any,
    host: SystemdTestHost,
    production: dict[str, str],
) -> None:
    t = transport
    inventory = _inventory(pytester.path, host)
    pytester.makepyfile(test_prod=SWEEP)
    result = pytester.runpytest_subprocess(
        "--sglang-host", "prod", "--sglang-inventory", str(inventory), "-v", timeout=900
    )
    result.assert_outcomes(passed=3)
    wait_for(lambda: _serving(t), "production serving again")
    assert file_states(t.run, WATCHED) == production
    argv = t.get(f"/proc/{_main_pid(t)}/cmdline").decode().split("\0")
    assert "--chunked-prefill-size" not in argv  # production's own command line again


MID_DEPLOY = """
import pytest
from pytest_sglang import production

@pytest.mark.parametrize("sglang_server", [production(chunked_prefill_size=512)], indirect=True)
def test_long(sglang_server):
    pass
"""


@pytest.mark.parametrize("how", ["SIGINT", "SIGKILL"])
def test_interrupted_mid_deploy_the_host_comes_back(
    pytester: pytest.Pytester,
    transport: Any,
    host: SystemdTestHost,
    production: dict[str, str],
    how: str,
) -> None:
    """The session is interrupted while the real server of a test config is still starting: on
    SIGINT it restores the host itself; after SIGKILL ``--sglang-restore`` does. Either way the
    host is byte-identical and production serves again."""
    t = transport
    inventory = _inventory(pytester.path, host)
    pytester.makepyfile(test_mid=MID_DEPLOY)
    args = ("--sglang-host", "prod", "--sglang-inventory", str(inventory))
    proc = subprocess.Popen(child_pytest_argv(*args), cwd=pytester.path, stdin=subprocess.DEVNULL)
    try:
        wait_for(
            lambda: t.run("test -e %s", OURS).ok or proc.poll() is not None,
            "the test config being deployed",
            600,
        )
        assert proc.poll() is None, "the session ended before it deployed"
        proc.send_signal(getattr(signal, how))
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    if how == "SIGKILL":
        result = pytester.run(*child_pytest_argv("--sglang-restore", *args), timeout=600)
        result.stdout.fnmatch_lines(["*prod: restored*"])
    wait_for(lambda: _serving(t), "production serving again")
    assert file_states(t.run, WATCHED) == production
