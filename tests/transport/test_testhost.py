"""The systemd + OpenSSH test host itself: what other tests rely on, and that it cleans up."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import testhost
from testhost import (
    STATE_ROOT,
    SystemdTestHost,
    TestHostError,
    TestHostFactory,
    fallback_route,
)

REPO = Path(__file__).resolve().parents[2]


def leftovers(host: SystemdTestHost) -> list[str]:
    """What of ``host`` still exists on this machine (empty when it is fully gone)."""
    found = []
    if host.name in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout:
        found.append(f"netns {host.name}")
    link = subprocess.run(["ip", "link", "show", f"vh-{host.name}"], capture_output=True)
    if link.returncode == 0:
        found.append(f"veth vh-{host.name}")
    mounts = Path("/proc/self/mountinfo").read_text()
    if f"ct-{host.name} " in mounts or str(host.state_dir) in mounts:
        found.append("mounts")
    if host.state_dir.exists():
        found.append(f"state dir {host.state_dir}")
    subnet = fallback_route(host.host_ip)[1]
    routes = subprocess.run(
        ["ip", "route", "show", "exact", subnet], capture_output=True, text=True
    )
    if "blackhole" in routes.stdout:
        found.append(f"route blackhole {subnet}")
    return found


def test_booted_host_is_a_real_systemd_with_sshd(systemd_host: SystemdTestHost) -> None:
    assert systemd_host.system_state in ("running", "degraded")
    assert systemd_host.ssh("systemctl is-active ssh.service").stdout.strip() == "active"
    enabled = systemd_host.ssh("systemctl is-enabled postgresql.service apt-daily.timer").stdout
    assert set(enabled.split()) <= {"masked"}  # masked where the image has them
    tag = f"sgl-probe-{os.getpid()}"
    systemd_host.ssh(f"echo {tag} | systemd-cat -t sgl-probe", check=True)
    journal = systemd_host.ssh("journalctl -t sgl-probe --no-pager -o cat").stdout
    assert tag in journal
    assert systemd_host.ssh("cat ~/.bashrc").stdout == ""  # no pyenv init per command


def test_a_cut_link_sends_nothing_off_this_machine(systemd_host: SystemdTestHost) -> None:
    """With the veth down (a test's link cut) the kernel drops its route: a connection to the
    host must then fail here at once, not go out by the default route to whatever answers
    there (or wait for an answer that never comes)."""
    veth = f"vh-{systemd_host.name}"
    subprocess.run(["ip", "link", "set", veth, "down"], check=True)
    try:
        began = time.monotonic()
        with pytest.raises(OSError) as failed:
            socket.create_connection((systemd_host.ip, 22), timeout=3.0).close()
        assert not isinstance(failed.value, TimeoutError), failed.value
        assert time.monotonic() - began < 1.0
    finally:
        subprocess.run(["ip", "link", "set", veth, "up"], check=True)
    assert systemd_host.ssh("true").returncode == 0


def test_project_venv_runs_inside_the_container(systemd_host: SystemdTestHost) -> None:
    code = "import paramiko, pytest_sglang, sys; print(sys.prefix, pytest_sglang.__file__)"
    result = systemd_host.ssh(f"{REPO}/.venv/bin/python -c '{code}'")
    assert result.returncode == 0, result.stderr
    prefix, module = result.stdout.split()
    assert module == str(REPO / "pytest_sglang" / "__init__.py")
    assert Path(prefix) == Path(sys.prefix) or prefix.endswith(".venv")


def test_container_writes_never_reach_the_hosts_root(systemd_host: SystemdTestHost) -> None:
    probe = Path(f"/etc/sgl-overlay-probe-{os.getpid()}")
    systemd_host.ssh(f"echo x > {probe}", check=True)
    assert systemd_host.ssh(f"cat {probe}").stdout == "x\n"
    assert not probe.exists()


def test_failed_up_leaves_nothing_behind(systemd_host_factory: TestHostFactory) -> None:
    host = SystemdTestHost(
        *systemd_host_factory.reserve("fail", 7), init_args=("--no-such-nspawn-option",)
    )
    with pytest.raises(TestHostError, match="systemd-nspawn exited"):
        host.up()
    assert leftovers(host) == []
    host.down()  # idempotent, also after a failed up()


def test_up_clears_a_crashed_run_and_down_is_idempotent(
    systemd_host_factory: TestHostFactory,
) -> None:
    name, host_ip, ct_ip, state = systemd_host_factory.reserve("crash", 7)
    crash = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO / "tests")!r})
        from testhost import SystemdTestHost
        SystemdTestHost({name!r}, {host_ip!r}, {ct_ip!r}, {str(state)!r}).up()
        os._exit(0)  # a crash: no down(), nspawn and mounts stay
    """)
    subprocess.run([sys.executable, "-c", crash], check=True, timeout=90)
    host = SystemdTestHost(name, host_ip, ct_ip, state)
    assert leftovers(host), "the crashed run should have left its host behind"
    host.up()
    try:
        assert host.ssh("hostname").stdout.strip() == name
    finally:
        host.down()
    assert leftovers(host) == []
    host.down()
    assert leftovers(host) == []


def test_a_dead_sessions_slot_is_cleared_routes_included(
    systemd_host_factory: TestHostFactory,
) -> None:
    """A session killed with a booted host (no teardown, no atexit): the next session that
    claims its slot removes all of it, the blackhole route behind its subnet included."""
    crash = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO / "tests")!r})
        from testhost import STATE_ROOT, TestHostFactory
        host = TestHostFactory(STATE_ROOT)("dead")
        print(host.name, host.host_ip, host.ct_ip, host.state_dir, flush=True)
        os._exit(0)
    """)
    out = subprocess.run(
        [sys.executable, "-c", crash], check=True, timeout=90, capture_output=True, text=True
    )
    name, host_ip, ct_ip, state = out.stdout.split()
    dead = SystemdTestHost(name, host_ip, ct_ip, state)
    assert f"route blackhole {fallback_route(host_ip)[1]}" in leftovers(dead)
    heirs: list[TestHostFactory] = []
    try:
        # a session claims the lowest free slot: the dead session's, unless another session of a
        # parallel run freed a lower one meanwhile; the heirs hold those until one claims it
        slot_prefix = name.split("-")[0] + "-"  # sgl<slot>-
        while True:
            heirs.append(TestHostFactory(STATE_ROOT))
            if heirs[-1].reserve("heir", 7)[0].startswith(slot_prefix):
                break
            assert len(heirs) < 28, "no heir claimed the dead session's slot"
        assert leftovers(dead) == []
    finally:
        for heir in heirs:
            heir.close()


@pytest.mark.parametrize(("ci", "outcome"), [("true", "fail"), ("", "skip")])
def test_unavailable_host_skips_except_under_ci(
    ci: str, outcome: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", ci)
    monkeypatch.setattr(testhost, "missing_prerequisites", lambda: ["root"])
    expected = pytest.fail.Exception if outcome == "fail" else pytest.skip.Exception
    with pytest.raises(expected, match="systemd test host unavailable: needs root"):
        TestHostFactory(tmp_path)("z")
