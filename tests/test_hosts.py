"""Inventory resolution: every way a name resolves, and every way it fails (one line, names the
host and the file)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_sglang.errors import InventoryError
from pytest_sglang.lifecycle.hosts import resolve_host, transport_for
from pytest_sglang.lifecycle.spec import HostSpec

GOOD = """
[defaults]
launch = "/opt/sglang/.venv/bin/python -m sglang.launch_server"

[hosts.llm-two]
ssh = "root@llm-two.example.com:2222"
service = "sglang-qwen.service"
known_hosts = "~/.ssh/known_hosts"
identity = "~/.ssh/id_ed25519"
sudo = false
env = { HF_HOME = "/shared/hf" }

[hosts.url]
ssh = "ssh://deploy@10.200.0.2:22"
service = "sglang"
sudo = true
sglang_version = "0.5.18"

[hosts.aliased]
ssh = "gpu-alias"
service = "sglang.service"
"""

SSH_CONFIG = """
Host gpu-alias
    HostName 10.200.0.9
    User ops
    Port 2200
    IdentityFile /keys/id_gpu
    ProxyJump bastion
    UserKnownHostsFile /keys/known_hosts

Host *
    ServerAliveInterval 10
"""


@pytest.fixture
def inv(tmp_path: Path) -> Path:
    path = tmp_path / "sglang-hosts.toml"
    path.write_text(GOOD)
    return path


@pytest.fixture
def sshcfg(tmp_path: Path) -> Path:
    path = tmp_path / "ssh_config"
    path.write_text(SSH_CONFIG)
    return path


def test_inventory_entry(inv: Path, sshcfg: Path) -> None:
    spec = resolve_host("llm-two", inventory_path=inv, ssh_config_path=sshcfg)
    assert spec.kind == "ssh"
    assert (spec.user, spec.hostname, spec.port) == ("root", "llm-two.example.com", 2222)
    assert spec.service == "sglang-qwen.service"
    assert spec.launch.endswith("-m sglang.launch_server")  # from [defaults]
    assert spec.identity == "~/.ssh/id_ed25519"
    assert spec.env == {"HF_HOME": "/shared/hf"}
    assert spec.deployer == "systemd" and spec.strict_host_keys
    assert spec.url == "ssh://root@llm-two.example.com:2222"
    hash(spec)  # usable as a cache key despite the env dict


def test_url_form_and_service_suffix(inv: Path, sshcfg: Path) -> None:
    spec = resolve_host("url", inventory_path=inv, ssh_config_path=sshcfg)
    assert (spec.user, spec.hostname, spec.port) == ("deploy", "10.200.0.2", 22)
    assert spec.service == "sglang.service"
    assert spec.sudo is True and spec.sglang_version == "0.5.18"


def test_inventory_ssh_alias_goes_through_ssh_config(inv: Path, sshcfg: Path) -> None:
    spec = resolve_host("aliased", inventory_path=inv, ssh_config_path=sshcfg)
    assert (spec.user, spec.hostname, spec.port) == ("ops", "10.200.0.9", 2200)
    assert spec.identity == "/keys/id_gpu"
    assert spec.proxy_jump == "bastion"
    assert spec.known_hosts == "/keys/known_hosts"


def test_ssh_config_only_host_takes_service_from_defaults(tmp_path: Path, sshcfg: Path) -> None:
    inv = tmp_path / "inv.toml"
    inv.write_text('[defaults]\nservice = "sglang"\nlaunch = "/usr/bin/python3 -m sglang"\n')
    spec = resolve_host("gpu-alias", inventory_path=inv, ssh_config_path=sshcfg)
    assert (spec.hostname, spec.user, spec.service) == ("10.200.0.9", "ops", "sglang.service")
    assert spec.source == str(sshcfg)


def test_ssh_config_only_host_without_service_names_field(sshcfg: Path) -> None:
    with pytest.raises(InventoryError, match=r"host 'gpu-alias' .* has no 'service'"):
        resolve_host("gpu-alias", inventory_path=None, ssh_config_path=sshcfg)


def test_inline_target(tmp_path: Path, sshcfg: Path) -> None:
    inv = tmp_path / "inv.toml"
    inv.write_text('[defaults]\nservice = "s"\nlaunch = "/bin/sglang"\n')
    spec = resolve_host("root@10.200.0.2:2022", inventory_path=inv, ssh_config_path=sshcfg)
    assert (spec.user, spec.hostname, spec.port) == ("root", "10.200.0.2", 2022)


@pytest.mark.parametrize("name", [None, "local"])
def test_local_is_the_simulator(name: str | None, tmp_path: Path) -> None:
    spec = resolve_host(name, inventory_path=None, ssh_config_path=tmp_path / "none")
    assert spec.kind == "local" and spec.deployer == "process"
    assert spec.launch == f"{sys.executable} -m pytest_sglang.sim"


def test_local_inventory_overrides(tmp_path: Path) -> None:
    inv = tmp_path / "inv.toml"
    inv.write_text('[hosts.local]\nsglang_version = "0.5.18"\nenv = { SGLANG_SIM_X = "1" }\n')
    spec = resolve_host("local", inventory_path=inv)
    assert spec.sglang_version == "0.5.18" and spec.env == {"SGLANG_SIM_X": "1"}


def test_unknown_host(inv: Path, sshcfg: Path) -> None:
    with pytest.raises(InventoryError) as info:
        resolve_host("llm-3", inventory_path=inv, ssh_config_path=sshcfg)
    message = str(info.value)
    assert "'llm-3'" in message and str(inv) in message and str(sshcfg) in message
    assert "\n" not in message


def test_wildcard_host_block_does_not_make_every_name_known(sshcfg: Path) -> None:
    with pytest.raises(InventoryError, match="'nope' is not in"):
        resolve_host("nope", inventory_path=None, ssh_config_path=sshcfg)


BAD_CASES = {
    "not toml": ("[hosts.x\n", "not valid TOML"),
    "hosts not table": ('hosts = "x"\n', r"\[hosts\] must be a table"),
    "unknown top": ("[oops]\n", "unknown top-level key 'oops'"),
    "unknown key": ('[hosts.x]\nssh = "a@b"\nservce = "s"\n', "unknown key 'servce'"),
    "bad type": (
        '[hosts.x]\nssh = "a@b"\nservice = 3\nlaunch = "/p"\n',
        "'service' must be a string",
    ),
    "bad bool": (
        '[hosts.x]\nssh = "a@b"\nservice = "s"\nlaunch="/p"\nsudo = "yes"\n',
        "'sudo' must be",
    ),
    "bad env": (
        '[hosts.x]\nssh = "a@b"\nservice = "s"\nlaunch="/p"\nenv = { "1X" = "v" }\n',
        "env.1X",
    ),
    "missing service": ('[hosts.x]\nssh = "a@b"\nlaunch = "/p"\n', "has no 'service'"),
    "missing launch": (
        '[hosts.x]\nssh = "a@b"\nservice = "s"\ndeployer = "process"\n',
        "has no 'launch'",
    ),
    "bad target": ('[hosts.x]\nssh = "ftp://a@b"\nservice = "s"\nlaunch = "/p"\n', "ssh target"),
    "bad port": ('[hosts.x]\nssh = "a@b:99999"\nservice = "s"\nlaunch = "/p"\n', "ssh target"),
    "bad service": ('[hosts.x]\nssh = "a@b"\nservice = "a b"\nlaunch = "/p"\n', "valid unit name"),
    "bad bench_from": (
        '[hosts.x]\nssh = "a@b"\nservice = "s"\nbench_from = "ssh"\n',
        'bench_from \'ssh\' is not one of "host", "direct", "forward"',
    ),
    "bench_from not a string": (
        '[hosts.x]\nssh = "a@b"\nservice = "s"\nbench_from = 1\n',
        "'bench_from' must be a string",
    ),
    "bad deployer": (
        '[hosts.x]\nssh = "a@b"\ndeployer = "k8s"\n',
        "unknown deployer 'k8s'; known: process, systemd",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_invalid_inventory(case: str, tmp_path: Path) -> None:
    text, pattern = BAD_CASES[case]
    inv = tmp_path / "sglang-hosts.toml"
    inv.write_text(text)
    empty_ssh_config = tmp_path / "ssh_config"
    empty_ssh_config.write_text("")
    with pytest.raises(InventoryError, match=pattern) as info:
        resolve_host("x", inventory_path=inv, ssh_config_path=empty_ssh_config)
    message = str(info.value)
    assert "\n" not in message
    assert str(inv) in message or "'x'" in message


def test_bench_from(tmp_path: Path) -> None:
    """Unset is "" (the best that works, found at the first benchmark); else as written."""
    inv = tmp_path / "sglang-hosts.toml"
    inv.write_text(
        '[hosts.x]\nssh = "a@b"\nservice = "s"\n[hosts.y]\nssh = "a@c"\nservice = "s"\n'
        'bench_from = "forward"\n'
    )
    empty = tmp_path / "ssh_config"
    empty.write_text("")
    assert resolve_host("x", inventory_path=inv, ssh_config_path=empty).bench_from == ""
    assert resolve_host("y", inventory_path=inv, ssh_config_path=empty).bench_from == "forward"


def test_missing_inventory_file(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="does not exist"):
        resolve_host("x", inventory_path=tmp_path / "nope.toml")


def test_unreadable_inventory_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="cannot be read"):
        resolve_host("x", inventory_path=tmp_path)


def test_explicit_missing_ssh_config(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match=r"ssh config .* does not exist"):
        resolve_host("x", inventory_path=None, ssh_config_path=tmp_path / "cfg")


def test_transport_for_local() -> None:
    from pytest_sglang.transport.local import LocalTransport

    spec = HostSpec(name="local", kind="local", launch="x", deployer="process")
    transport = transport_for(spec)
    assert isinstance(transport, LocalTransport)
    assert transport.run("echo %s", "a b").stdout == "a b\n"


def test_an_inventory_entry_can_name_another_local_simulator(tmp_path: Path) -> None:
    path = tmp_path / "hosts.toml"
    path.write_text(
        '[defaults]\nlaunch = "/opt/sglang/.venv/bin/python -m sglang.launch_server"\n'
        'service = "sglang"\nsudo = true\nenv = { HF_HOME = "/data" }\n\n'
        '[hosts.sim-b]\nssh = "local"\nenv = { SGLANG_SIM_GPU_NAME = "B" }\n'
    )
    spec = resolve_host("sim-b", inventory_path=path)
    assert (spec.name, spec.kind, spec.deployer) == ("sim-b", "local", "process")
    # [defaults] are for the SSH hosts: the local one keeps the simulator and its own env
    assert spec.env == {"SGLANG_SIM_GPU_NAME": "B"}
    assert "pytest_sglang.sim" in spec.launch


def test_a_local_entry_refuses_remote_only_keys(tmp_path: Path) -> None:
    path = tmp_path / "hosts.toml"
    path.write_text('[hosts.sim-b]\nssh = "local"\nservice = "sglang"\n')
    with pytest.raises(
        InventoryError,
        match=r"^\[hosts.sim-b\] in .*hosts.toml: 'service' does not apply to ssh = \"local\"",
    ):
        resolve_host("sim-b", inventory_path=path)
