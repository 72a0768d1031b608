"""The launch plan: computed once per (host, config), the one place argv, env, port and the
expected journal come from."""

from __future__ import annotations

import pytest

from pytest_sglang import ServerConfig, production
from pytest_sglang.errors import ConfigError, InventoryError
from pytest_sglang.lifecycle.deployers import make_deployer
from pytest_sglang.lifecycle.launch_plan import SGLANG_DEFAULT_PORT, LaunchPlan, make_launch_plan
from pytest_sglang.lifecycle.spec import HostSpec
from pytest_sglang.secrets import Redactor
from pytest_sglang.transport.local import LocalTransport

CONFIG = ServerConfig(
    model_path="/m", extra_args=("--api-key", "sk-plan-secret"), env={"HF_TOKEN": "hf_planenv"}
)


def plan(
    config: ServerConfig = CONFIG, launcher: tuple[str, ...] = ("/py",), **kw: bool
) -> LaunchPlan:
    return make_launch_plan(
        "h", config, sglang_version="0.5.23", launcher=launcher, launcher_env={"A": "1"}, **kw
    )


def test_the_port_the_server_listens_on() -> None:
    assert plan().port == SGLANG_DEFAULT_PORT and plan().listen_host == "127.0.0.1"
    assert plan(launcher=("/py", "--port", "31000")).port == 31000  # the launcher's
    picked = plan(pick_port=True)
    assert picked.port != SGLANG_DEFAULT_PORT and ["--port", str(picked.port)] == [
        w for w in picked.flags if w in ("--port", str(picked.port))
    ]
    # a launcher that sets --port keeps it: no second, contradicting --port
    assert plan(launcher=("/py", "--port", "31000"), pick_port=True).port == 31000
    local = plan(CONFIG.replace(host="0.0.0.0", port=30000), local=True)
    assert local.deployed.host == "127.0.0.1" and local.port != 30000
    assert local.config.port == 30000  # what the test asked for stays as asked
    # a server on this machine whose launcher names --port gets that one (e.g. a port test)
    named = plan(CONFIG.replace(port=30000), launcher=("/py", "--port", "31000"), local=True)
    assert named.port == 31000 and "--port" not in named.flags


def test_env_api_key_and_secrets_come_from_the_plan() -> None:
    p = plan()
    assert dict(p.env) == {"A": "1", "HF_TOKEN": "hf_planenv"}
    assert p.api_key == "sk-plan-secret"
    assert set(p.secrets(Redactor().is_secret_name)) == {"hf_planenv", "sk-plan-secret"}


def test_the_deployer_teaches_its_redactor_when_it_makes_the_plan(launcher_spec: HostSpec) -> None:
    deployer = make_deployer(launcher_spec, LocalTransport())
    deployer.launch_plan(CONFIG)
    assert deployer.redactor.redact("sk-plan-secret hf_planenv") == "<redacted> <redacted>"


@pytest.fixture
def launcher_spec() -> HostSpec:
    return HostSpec(
        name="local", kind="local", launch="/py -m sim", sglang_version="0.5.23", deployer="process"
    )


def test_an_unknown_deployer_is_one_line_naming_the_known_ones() -> None:
    spec = HostSpec(name="gpu", kind="ssh", launch="/py", deployer="docker", source="hosts.toml")
    with pytest.raises(InventoryError) as info:
        make_deployer(spec, LocalTransport())
    assert str(info.value) == (
        "host 'gpu' in hosts.toml: unknown deployer 'docker'; known: process, systemd (a plugin adds "
        "others through the pytest_sglang_deployer hook)"
    )


def test_production_changes_that_cannot_be_applied_are_refused_at_once() -> None:
    with pytest.raises(ConfigError, match=r"^production\(\): 'model_path' cannot be changed"):
        production(model_path="/other")
    with pytest.raises(ConfigError, match=r"^production\(\): 'name' cannot be changed"):
        production(name="x")


def test_a_free_port_for_a_local_server_is_below_the_ephemeral_range() -> None:
    """Where no outgoing connection can take it before the server binds it (a real server
    binds it a minute later): below the kernel's ephemeral range, above SGLang's own picks."""
    import socket
    from pathlib import Path

    from pytest_sglang.lifecycle.launch_plan import PORT_RANGE_LOW, free_port

    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = {free_port() for _ in range(20)}
    assert all(PORT_RANGE_LOW <= port < low for port in ports) and len(ports) > 1
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports.pop()))


def test_a_port_handed_out_is_not_handed_out_again_before_its_server_binds_it() -> None:
    """Two replicas of one topology each ask for a port before either binds its own: a random
    pick among the ports free now must not give both the same one (seen as a replica's
    ``address already in use``)."""
    from pytest_sglang.lifecycle.launch_plan import free_port

    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)


def test_a_port_another_process_handed_out_is_not_handed_out_here() -> None:
    """xdist workers and a second session each pick at random among the ports free now: a port
    one process handed out is not given to another before its server binds it (seen as a
    worker's simulator failing with ``address already in use``)."""
    import subprocess
    import sys

    from pytest_sglang.lifecycle.launch_plan import free_port

    program = "from pytest_sglang.lifecycle.launch_plan import free_port\n"
    program += "print(*(free_port() for _ in range(200)))"
    theirs = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    ours = {free_port() for _ in range(200)}
    assert not ours & {int(port) for port in theirs}
