"""SystemdDeployer against a real systemd + journald + sshd host (the nspawn test host).

Restore is checked byte for byte (sha256, mode, owner of every file) and by service state, for a
service that was running, stopped or absent before the session.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import file_states

from pytest_sglang.config import ServerConfig
from pytest_sglang.errors import DeployError, PreflightError, ServerStartError
from pytest_sglang.lifecycle.readiness import wait_until_ready
from pytest_sglang.lifecycle.systemd import SystemdDeployer

from .conftest import Launcher, start_that_fails, systemd_host_spec, wait_for

SERVICE = "sglang-qwen.service"
UNIT = f"/etc/systemd/system/{SERVICE}"
DROPIN = f"/etc/systemd/system/{SERVICE}.d/override.conf"
OURS = f"/etc/systemd/system/{SERVICE}.d/zz-pytest-sglang.conf"
WORKDIR_DROPIN = f"/etc/systemd/system/{SERVICE}.d/workdir.conf"
FILTER_DROPIN = f"/etc/systemd/system/{SERVICE}.d/hardening.conf"
ENV_FILE = "/etc/pytest-sglang/sglang-qwen.env"
KERNEL = "/opt/kernels/E=256,N=256.json"
NEW_FILE = "/opt/pytest-sglang-new/k.json"
WATCHED = [
    UNIT,
    DROPIN,
    OURS,
    WORKDIR_DROPIN,
    FILTER_DROPIN,
    ENV_FILE,
    KERNEL,
    NEW_FILE,
    "/etc/pytest-sglang",
    "/opt/pytest-sglang-new",
]

ORIGINAL_UNIT = """[Unit]
Description=original sglang (a sleeping stand-in)
[Service]
ExecStart=/bin/sleep infinity
[Install]
WantedBy=multi-user.target
"""
ORIGINAL_DROPIN = "[Service]\nExecStart=\nExecStart=/bin/sleep 1000000\n"


def snapshot(transport: Any) -> dict[str, str]:
    """sha256 + mode + owner of each watched path ('absent' when missing), and unit state."""
    out = file_states(transport.run, WATCHED)
    show = transport.run("systemctl show -p ActiveState,LoadState,ExecStart -- %s", SERVICE)
    out["state"] = "\n".join(
        line for line in show.stdout.splitlines() if not line.startswith("ExecStart=")
    )
    out["execstart"] = next(
        (
            line.split("argv[]=")[1].split(";")[0]
            for line in show.stdout.splitlines()
            if "argv[]=" in line
        ),
        "",
    )
    return out


def setup_original(transport: Any, *, active: bool) -> None:
    transport.check_output("mkdir -p /etc/systemd/system/%s.d /opt/kernels", SERVICE)
    transport.put(ORIGINAL_UNIT.encode(), UNIT, mode=0o644)
    transport.put(ORIGINAL_DROPIN.encode(), DROPIN, mode=0o640)
    transport.put(b'{"1": {"BLOCK_SIZE_M": 16}}\n', KERNEL, mode=0o600)
    transport.check_output("systemctl daemon-reload")
    if active:
        transport.check_output("systemctl start %s", SERVICE)


def cleanup(transport: Any) -> None:
    transport.run("systemctl stop %s; systemctl reset-failed %s", SERVICE, SERVICE)
    transport.run(
        "rm -rf %s %s.d /opt/kernels /etc/pytest-sglang /opt/pytest-sglang-new "
        "/var/lib/pytest-sglang; systemctl daemon-reload",
        UNIT,
        UNIT,
    )


@pytest.fixture
def host(systemd_transport: Any) -> Iterator[Any]:
    cleanup(systemd_transport)
    yield systemd_transport
    cleanup(systemd_transport)


@pytest.fixture
def deployer(host: Any, launcher: Launcher, systemd_host: Any) -> Iterator[SystemdDeployer]:
    spec = systemd_host_spec(
        systemd_host,
        SERVICE,
        launcher.launch,
        sglang_version=launcher.version,
        env={"SGLANG_SIM_STARTUP_SCALE": "0"},
    )
    dep = SystemdDeployer(spec, host)
    yield dep
    dep.close()


def config(**extra: Any) -> ServerConfig:
    return ServerConfig(
        model_path="/models/tiny",
        port=30000,
        env={"HF_TOKEN": "hf_s3cr3t$value", **extra.pop("env", {})},
        **extra,
    )


def messages(dep: SystemdDeployer, cursor: str) -> list[str]:
    return [e.message for e in dep.read_journal(cursor)[0]]


@pytest.mark.parametrize("before", ["running", "stopped", "absent"])
def test_deploy_then_restore_byte_identical(
    deployer: SystemdDeployer, host: Any, before: str
) -> None:
    if before != "absent":
        setup_original(host, active=before == "running")
    original = snapshot(host)
    cfg = config(
        mem_fraction_static=0.8,
        files={KERNEL: {"content": "{}"}, NEW_FILE: {"content": "new", "mode": 0o600}},
    )
    cursor = deployer.deploy(deployer.launch_plan(cfg))
    wait_for(lambda: deployer.state().running, "service running")
    wait_for(lambda: any("fired up" in m for m in messages(deployer, cursor)), "ready line")
    text = "\n".join(messages(deployer, cursor))
    assert "server_args" in text and "0.8" in text
    # The drop-in that overrides ExecStart is moved aside: our ExecStart runs.
    during = snapshot(host)
    assert "/models/tiny" in during["execstart"]
    if before == "absent":  # no production: the session's own unit
        assert during[UNIT] != "absent" and during[OURS] == "absent"
    else:  # production's unit and drop-in stay: ours, sorted last, overrides ExecStart
        assert during[UNIT] == original[UNIT] and during[DROPIN] == original[DROPIN]
        assert during[OURS] != "absent"
    assert host.check_output("cat %s", KERNEL) == "{}"
    assert host.check_output("stat -c %%a %s", ENV_FILE).strip() == "600"
    # The secret stays in the 0600 env file, out of the unit and of systemctl show.
    shown = host.check_output("systemctl show %s; systemctl cat %s", SERVICE, SERVICE)
    assert "hf_s3cr3t" not in shown
    assert "hf_s3cr3t" not in deployer.artifacts()["env"]
    assert "hf_s3cr3t" not in deployer.artifacts()["unit"]

    deployer.restore()
    assert snapshot(host) == original
    assert host.run("test -e /var/lib/pytest-sglang").rc != 0
    deployer.restore()  # idempotent
    assert snapshot(host) == original


def test_restore_after_failed_start(deployer: SystemdDeployer, host: Any) -> None:
    setup_original(host, active=True)
    original = snapshot(host)
    plan = deployer.launch_plan(config(env={"SGLANG_SIM_FAULT": "oom"}))
    cursor, state = start_that_fails(deployer, plan)
    assert state.exec_main_code in ("killed", "exited") and state.n_restarts == 0, state
    # journald files a stream's last lines after the process is gone (the readiness check waits
    # EXIT_GRACE_S for the same reason): wait for them rather than read once
    wait_for(
        lambda: any("Not enough memory" in m for m in messages(deployer, cursor)),
        f"the failed start's last words in the journal ({state})",
    )
    deployer.restore()
    assert snapshot(host) == original


def failed_start_under(
    deployer: SystemdDeployer, host: Any, dropin: str, text: bytes
) -> tuple[dict[str, str], ServerStartError]:
    """Production's stopped unit given the drop-in ``dropin`` (``text``): the host's snapshot
    before the session, and what the readiness wait raises for a start that fails under it;
    deployed again where a loaded test host failed an earlier step, CGROUP, that says nothing
    of it (start_that_fails)."""
    setup_original(host, active=False)
    host.put(text, dropin, mode=0o644)
    host.check_output("systemctl daemon-reload")
    original = snapshot(host)
    plan = deployer.launch_plan(config())
    for _ in range(3):
        cursor = deployer.deploy(plan)
        with pytest.raises(ServerStartError) as err:
            wait_until_ready(
                deployer, deployer.base_url(plan), cursor, where="host 'testhost'", timeout=60
            )
        if "step CGROUP" not in str(err.value):
            break
    return original, err.value


def test_a_start_systemd_cannot_set_up_is_named_by_its_step(
    deployer: SystemdDeployer, host: Any
) -> None:
    """Production's unit names a working directory that is gone: systemd fails at CHDIR (exit
    status 200) before the server runs, and says so in the journal. The one-line reason names
    systemd's step and why (its own line, or its exit status where the line was not kept), not a
    crash of the server, and the host is given back as it was."""
    original, err = failed_start_under(
        deployer, host, WORKDIR_DROPIN, b"[Service]\nWorkingDirectory=/srv/pytest-sglang-gone\n"
    )
    assert err.reason == "service setup failed", str(err)
    assert err.step == "CHDIR"
    said = str(err)  # from systemd's Failed at step line, its status line, or the exit
    assert "systemd failed at step CHDIR before the server ran" in said, said
    deployer.restore()
    assert snapshot(host) == original


@pytest.mark.parametrize(
    ("dropin", "named"),
    [
        (b"[Service]\nExecStartPre=/bin/false\n", "ExecStartPre="),
        (b"[Service]\nEnvironmentFile=/etc/pytest-sglang-gone.env\n", "EnvironmentFile="),
    ],
    ids=["exec_start_pre_fails", "environment_file_missing"],
)
def test_a_start_systemd_refuses_is_named_from_its_journal(
    deployer: SystemdDeployer, host: Any, dropin: bytes, named: str
) -> None:
    """Production's unit runs a check before the server (``ExecStartPre=``) that fails, or reads
    an ``EnvironmentFile=`` that is gone: ``systemctl start`` fails and only points at
    ``journalctl -xeu``. The one-line error is systemd's reason from the unit's journal, the
    setting named, and the host is given back as it was."""
    setup_original(host, active=False)
    host.put(dropin, FILTER_DROPIN, mode=0o644)
    host.check_output("systemctl daemon-reload")
    original = snapshot(host)
    with pytest.raises(DeployError) as err:
        deployer.deploy(deployer.launch_plan(config()))
    said = str(err.value)
    assert "service setup failed" in said and named in said, said
    assert "journalctl -xeu" not in said and "\n" not in said, said
    deployer.restore()
    assert snapshot(host) == original


@pytest.mark.parametrize(
    ("dropin", "reason", "named"),
    [
        (b"[Service]\nSystemCallFilter=~@network-io\n", "invalid config", "SystemCallFilter="),
        (
            b"[Unit]\nConditionPathExists=/dev/pytest-sglang-gpu\n",
            "service setup failed",
            "ConditionPathExists=/dev/pytest-sglang-gpu",
        ),
    ],
    ids=["system_call_filter_sigsys", "condition_unmet"],
)
def test_a_start_a_unit_setting_ends_is_named_by_the_setting(
    deployer: SystemdDeployer, host: Any, dropin: bytes, reason: str, named: str
) -> None:
    """Production's unit carries a setting the server's start meets without a word of its own:
    a hardening drop-in whose system-call filter denies sockets (the kernel ends the server
    with SIGSYS as it opens its port: systemd's ``code=killed, status=31/SYS``, or the exit
    where that line was not read yet), or a condition that only a GPU host meets (systemd
    skips the start, no process ever runs, and ``systemctl start`` succeeds). The one-line
    reason names the setting, not a crash; the host is given back as it was, drop-in
    included."""
    original, err = failed_start_under(deployer, host, FILTER_DROPIN, dropin)
    said = str(err)
    assert err.reason == reason and named in said, said
    deployer.restore()
    assert snapshot(host) == original


def test_a_library_of_the_install_cut_short_is_named_as_the_install(
    deployer: SystemdDeployer, host: Any, launcher: Launcher
) -> None:
    """Production's unit finds a library of the server's install cut short (a copy interrupted,
    a disk full as it was written; here a cut copy bound over the interpreter's ``math`` module
    in the unit's own mount namespace): the process dies of SIGBUS as it maps the library,
    before it writes a line, and systemd's ``code=killed, status=7/BUS`` is the whole record.
    The one-line reason is the install's, with what to do, not a crash; the host is given back
    as it was."""
    python = shlex.quote(launcher.launch.split()[0])
    library = host.check_output(f"{python} -c 'import math; print(math.__file__)'").strip()
    short = "/var/tmp/pytest-sglang-short.so"
    host.check_output(f"head -c 4096 {shlex.quote(library)} > {short}")
    dropin = f"[Service]\nBindReadOnlyPaths={short}:{library}\n".encode()
    try:
        original, err = failed_start_under(deployer, host, FILTER_DROPIN, dropin)
        said = str(err)
        assert err.reason == "broken install" and "SIGBUS" in said and "reinstall" in said, said
        deployer.restore()
        assert snapshot(host) == original
    finally:
        host.check_output(f"rm -f {short}")


def test_restore_by_a_new_deployer_after_a_crash(
    deployer: SystemdDeployer, host: Any, launcher: Launcher
) -> None:
    """A session that died leaves its backup; the next one restores from it."""
    setup_original(host, active=False)
    original = snapshot(host)
    deployer.deploy(deployer.launch_plan(config()))
    deployer.deploy(
        deployer.launch_plan(config(mem_fraction_static=0.7))
    )  # second deploy keeps the first backup
    fresh = SystemdDeployer(deployer.spec, host)
    fresh.deploy(fresh.launch_plan(config()))  # reuses the manifest: does not back up our own unit
    fresh.restore()
    assert snapshot(host) == original


def test_preflight_refuses_unknown_flag(deployer: SystemdDeployer, host: Any) -> None:
    with pytest.raises(PreflightError, match=r"host 'testhost' \(SGLang .*\) has no flag --no-su"):
        deployer.deploy(deployer.launch_plan(config(extra_args=("--no-such-flag-xyz", "1"))))
    assert host.run("test -e %s", UNIT).rc != 0  # nothing was touched
    manifest = host.run("cat /var/lib/pytest-sglang/%s/manifest.json", SERVICE)
    assert not manifest.ok


def test_journal_json_and_cursor(deployer: SystemdDeployer, host: Any) -> None:
    cursor = deployer.deploy(deployer.launch_plan(config()))
    wait_for(lambda: any("fired up" in m for m in messages(deployer, cursor)), "ready line")
    entries, end = deployer.read_journal(cursor)
    assert entries and end == entries[-1].cursor and all(e.realtime_us > 0 for e in entries)
    assert deployer.read_journal(end)[0] == [] or all(
        "fired up" not in e.message for e in deployer.read_journal(end)[0]
    )
    argv = json.loads(deployer.artifacts()["argv"])
    assert argv[-2:] == ["--port", "30000"]
    deployer.restore()


NASTY = ["%n", "%%", "$HOME", "${HOME}", "$$", 'a"b', "a\\b", "a\\nb", "a b", "", "'"]
NASTY += ["héllo", ";x", "--a=b c"]


def test_real_systemd_reads_exec_start_back(host: Any) -> None:
    """What systemd passes to the process is exactly the argv we rendered."""
    from pytest_sglang.lifecycle.unit import render_unit

    unit = "pytest-sglang-argv.service"
    script = "import json, sys; print('ARGV=' + json.dumps(sys.argv[1:]))"
    text = render_unit(
        description="argv %n readback",
        exec_argv=["/usr/bin/python3", "-c", script, *NASTY],
        environment_file="/dev/null",
    )
    try:
        host.put(text.encode(), f"/etc/systemd/system/{unit}")
        host.check_output("systemctl daemon-reload && systemctl start %s", unit)

        def printed() -> list[str] | None:
            out = host.run("journalctl -u %s -o cat --no-pager", unit).stdout
            lines = [line for line in out.splitlines() if line.startswith("ARGV=")]
            return json.loads(lines[-1][5:]) if lines else None

        wait_for(lambda: printed() is not None, "the argv line")
        assert printed() == NASTY
    finally:
        host.run("systemctl stop %s; rm -f /etc/systemd/system/%s", unit, unit)
        host.run("systemctl daemon-reload")


def test_an_intent_record_of_the_previous_release_is_still_restored(
    deployer: SystemdDeployer, host: Any
) -> None:
    """A session of the previous release (which wrote its own unit and moved the drop-ins
    aside) was killed; this release restores from its record."""
    setup_original(host, active=True)
    original = snapshot(host)
    backup = f"/var/lib/pytest-sglang/{SERVICE}"
    host.check_output(
        "mkdir -p %s/files && cp -a %s %s/files/0 && mv %s.d %s/dropin",
        backup,
        UNIT,
        backup,
        UNIT,
        backup,
    )
    host.put(b"[Service]\nExecStart=/bin/sleep 5\n", UNIT, mode=0o644)  # its own unit
    record = {
        "version": 1,
        "service": SERVICE,
        "owner": {"user": "ci", "pid": 1},
        "changes": {"files": [UNIT], "dropin_dir": f"{UNIT}.d", "restarts": [SERVICE]},
        "active_state": "active",
        "unit_file_state": "disabled",
        "load_state": "loaded",
        "files": {UNIT: {"existed": True, "copy": f"{backup}/files/0"}},
        "dropin": {"existed": True, "copy": f"{backup}/dropin"},
    }
    host.put(json.dumps(record).encode(), f"{backup}/manifest.json", mode=0o600)
    host.check_output("systemctl daemon-reload && systemctl restart %s", SERVICE)
    assert deployer.pending_intent() is not None
    deployer.restore()
    assert snapshot(host) == original
    assert host.run("test -e /var/lib/pytest-sglang").rc != 0
