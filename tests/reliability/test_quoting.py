"""Quoting, proved on the real systemd host: arbitrary strings in the model path, served name,
extra args and env values reach the service's real argv (``/proc/<pid>/cmdline``) and
environment (``/proc/<pid>/environ``) exactly, or are refused with a one-line error. And no
config field or inventory setting can make the host run a shell command.

The launcher is a stand-in that lists SGLang's flags for ``--help`` and otherwise sleeps, so any
argv is accepted and stays visible in /proc.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from testhost import SystemdTestHost

from pytest_sglang.config import ServerConfig
from pytest_sglang.errors import ConfigError, InventoryError, PreflightError, SglangError
from pytest_sglang.lifecycle.hosts import resolve_host
from pytest_sglang.lifecycle.spec import HostSpec
from pytest_sglang.lifecycle.systemd import SystemdDeployer

from .conftest import SERVICE, UNIT, write_inventory

VERSION = "0.5.23"
STANDIN = "/opt/pytest-sglang-standin.py"
STANDIN_CODE = """import sys, time
if sys.argv[-1] == "--help" and "--model-path" not in sys.argv:
    from pytest_sglang.versions import cli_catalog
    print(" ".join(f for a in cli_catalog() for f in a["flags"]))
    sys.exit(0)
time.sleep(100000)
"""
PWNED = "/tmp/pytest-sglang-pwned"
INJECTIONS = (
    f"$(touch {PWNED})",
    f"`touch {PWNED}`",
    f"; touch {PWNED}",
    f"' ; touch {PWNED} ; '",
    f'" ; touch {PWNED} ; "',
    f"%n$(touch {PWNED})%%",
    f"\\$(touch {PWNED})",
    f"&& touch {PWNED} #",
    f"| touch {PWNED}",
)


@pytest.fixture(scope="module")
def standin(systemd_transport: Any) -> Iterator[str]:
    """The stand-in launcher on the test host, for every test of the module that launches it
    (each test asks for it: under pytest-xdist a test may run alone on its worker's host)."""
    systemd_transport.put(STANDIN_CODE.encode(), STANDIN, mode=0o644)
    yield STANDIN
    systemd_transport.run("rm -f -- %s %s", STANDIN, PWNED)


@pytest.fixture(scope="module")
def deployer(
    systemd_host: SystemdTestHost, systemd_transport: Any, standin: str
) -> Iterator[SystemdDeployer]:
    spec = HostSpec(
        name="testhost",
        kind="ssh",
        launch=f"{sys.executable} {STANDIN}",
        hostname=systemd_host.ip,
        user="root",
        service=SERVICE,
        sglang_version=VERSION,
        source="test",
    )
    d = SystemdDeployer(spec, systemd_transport)
    yield d
    d.restore()
    assert systemd_transport.run("test -e %s", UNIT).rc != 0


def _proc(transport: Any) -> tuple[list[str], dict[str, str]]:
    pid = transport.check_output("systemctl show -p MainPID --value -- %s", SERVICE).strip()
    assert pid not in ("", "0"), "the service is not running"
    raw = transport.get(f"/proc/{pid}/cmdline")
    argv = [w.decode("utf-8", "surrogateescape") for w in raw.split(b"\0")[:-1]]
    env_raw = transport.get(f"/proc/{pid}/environ")
    env = dict(
        w.decode("utf-8", "surrogateescape").split("=", 1) for w in env_raw.split(b"\0")[:-1]
    )
    return argv, env


def _deploy_and_read(deployer: SystemdDeployer, transport: Any, config: ServerConfig) -> Any:
    """Deploy ``config`` and read its process once systemd runs it (within 30 s on a loaded
    host); a start systemd could not set up at its own CGROUP step (status 219: the previous
    run's cgroup still being torn down; the stand-in never ran) is deployed once more, as
    ``bring_up`` does."""
    plan = deployer.launch_plan(config)
    for attempt in (1, 2):
        deployer.deploy(plan)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            shown = transport.check_output(
                "systemctl show -p ActiveState -p ExecMainStatus -- %s", SERVICE
            )
            state = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
            if state.get("ActiveState") == "active":
                return _proc(transport)
            if state.get("ActiveState") == "failed":
                status = state.get("ExecMainStatus", "")
                if status == "219" and attempt == 1:
                    break
                shown = transport.run("systemctl status --no-pager -- %s", SERVICE).stdout
                raise AssertionError(f"the service failed (status {status}): {shown[-600:]}")
            time.sleep(0.1)
        else:
            raise AssertionError("the service did not become active within 30 s")
    raise AssertionError("the service failed at systemd's CGROUP step twice")


def _refused_clearly(exc: SglangError) -> None:
    message = str(exc)
    assert message and "\n" not in message
    assert isinstance(exc, (ConfigError, PreflightError))


#: Mostly printable text (what reaches the host), sometimes anything (what must be refused).
PRINTABLE = st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=24)
TEXT = PRINTABLE | PRINTABLE | PRINTABLE | st.text(max_size=24)
ENV_NAME = st.from_regex(r"\A[A-Z_][A-Z0-9_]{0,10}\Z").filter(lambda n: n != "PATH")


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
@given(
    model_path=PRINTABLE.filter(bool) | st.sampled_from(INJECTIONS) | TEXT,
    served=st.none() | TEXT | st.sampled_from(INJECTIONS),
    extra=st.lists(TEXT | st.sampled_from(INJECTIONS), max_size=3),
    env=st.dictionaries(ENV_NAME, TEXT | st.sampled_from(INJECTIONS), max_size=3),
)
def test_arbitrary_strings_reach_argv_and_environment_exactly(
    deployer: SystemdDeployer,
    systemd_transport: Any,
    model_path: str,
    served: str | None,
    extra: list[str],
    env: dict[str, str],
) -> None:
    try:
        config = ServerConfig(
            model_path=model_path,
            served_model_name=served,
            extra_args=tuple(["--trust-remote-code", *extra]),
            env=env,
        )
        argv, environ = _deploy_and_read(deployer, systemd_transport, config)
    except SglangError as exc:
        _refused_clearly(exc)
        event(f"refused: {type(exc).__name__}")
        return
    event("reached the service")
    assert argv == deployer.launch_plan(config).argv
    for name, value in env.items():
        assert environ.get(name) == value, name
    assert systemd_transport.run("test -e %s", PWNED).rc != 0


def test_inventory_settings_cannot_inject_a_command(
    tmp_path: Path, systemd_host: SystemdTestHost, systemd_transport: Any, standin: str
) -> None:
    for bad_service in (f"x;touch {PWNED}.service", f"$(touch {PWNED}).service", "a b.service"):
        inv = write_inventory(systemd_host, tmp_path / "bad.toml")
        inv.write_text(
            inv.read_text().replace(f'service = "{SERVICE}"', f"service = {bad_service!r}")
        )
        with pytest.raises(InventoryError):
            resolve_host("testhost", inventory_path=inv)
    # launch words and env values are passed as words, never through a shell
    launch = f"{sys.executable} {STANDIN} '$(touch {PWNED})' '`touch {PWNED}`' x"
    inv = write_inventory(systemd_host, tmp_path / "hosts.toml", launch=launch.replace('"', "'"))
    text = inv.read_text().replace("env = {", f'env = {{ EVIL = "$(touch {PWNED})",', 1)
    inv.write_text(text)
    spec = resolve_host("testhost", inventory_path=inv)
    d = SystemdDeployer(spec, systemd_transport)
    try:
        d.launcher._version = VERSION  # as an inventory sglang_version would
        argv, environ = _deploy_and_read(d, systemd_transport, ServerConfig(model_path="/m"))
        assert argv[2:5] == [f"$(touch {PWNED})", f"`touch {PWNED}`", "x"]
        assert environ["EVIL"] == f"$(touch {PWNED})"
        semicolon = f"{sys.executable} ; touch {PWNED}"
        with pytest.raises((ConfigError, PreflightError)):
            bad = SystemdDeployer(
                HostSpec(**{**spec.__dict__, "launch": semicolon, "sglang_version": VERSION}),
                systemd_transport,
            )
            bad.deploy(bad.launch_plan(ServerConfig(model_path="/m")))
    finally:
        d.restore()
    assert systemd_transport.run("test -e %s", PWNED).rc != 0
