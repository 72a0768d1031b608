"""The test config runs inside production's own unit context, on the real systemd test host.

Production here looks like a real GPU host's: a dedicated system user, a working directory,
``Environment=`` and ``EnvironmentFile=`` entries (NCCL and HF settings), ``LimitNOFILE=``, and a
drop-in of its own with more environment and ``Restart=always``. While a test config runs, its
main process (read from ``/proc`` on the host) must have production's uid, cwd, environment (the
config's ``env`` winning on conflict) and limits; production's unit file and drop-in never
change; afterwards the host is byte-identical and production runs its own command line again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import child_pytest_argv, file_states, host_entry, save_inventory

from pytest_sglang.config import ServerConfig
from pytest_sglang.errors import ConfigError
from pytest_sglang.lifecycle.deployment import cross_check
from pytest_sglang.lifecycle.systemd import SystemdDeployer
from pytest_sglang.secrets import Redactor

from .conftest import Launcher, systemd_host_spec, wait_for

SERVICE = "sglang-prod.service"
UNIT = f"/etc/systemd/system/{SERVICE}"
PROD_DROPIN = f"/etc/systemd/system/{SERVICE}.d/10-gpu.conf"
OURS = f"/etc/systemd/system/{SERVICE}.d/zz-pytest-sglang.conf"
PROD_ENV = "/etc/sglang/prod.env"
WORKDIR = "/srv/sglang"
WATCHED = [UNIT, PROD_DROPIN, OURS, PROD_ENV, WORKDIR, "/etc/pytest-sglang"]


def production_unit(launch: str, flags: str = "", environment: str = "") -> str:
    """Production's unit; ``flags`` end its ExecStart, ``environment`` is one more
    ``Environment=`` line (both as written in the unit, systemd escapes and all)."""
    extra_env = f"Environment={environment}\n" if environment else ""
    flags = f" {flags}" if flags else ""
    return f"""[Unit]
Description=SGLang production (stand-in)
After=network-online.target
[Service]
User=sglang
Group=sglang
WorkingDirectory={WORKDIR}
Environment=NCCL_P2P_DISABLE=1 HF_HOME=/srv/sglang/hf
Environment=SGLANG_SIM_STARTUP_SCALE=0
{extra_env}EnvironmentFile={PROD_ENV}
LimitNOFILE=12345
ExecStart={launch} --model-path /models/prod --served-model-name prod --port 30000 \\
  --speculative-algorithm EAGLE --speculative-num-steps 2 --speculative-eagle-topk 1{flags}
[Install]
WantedBy=multi-user.target
"""


PROD_DROPIN_TEXT = "[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=0,1\nRestart=always\n"
PROD_ENV_TEXT = 'HF_HUB_OFFLINE=1\nSHARED="from production"\n'


def _main_process(transport: Any) -> dict[str, Any]:
    pid = transport.check_output("systemctl show -p MainPID --value -- %s", SERVICE).strip()
    assert pid not in ("", "0"), "the service is not running"
    environ = transport.get(f"/proc/{pid}/environ")
    env = dict(w.decode().split("=", 1) for w in environ.split(b"\0") if b"=" in w)
    status = transport.check_output("cat /proc/%s/status", pid)
    uid = next(line.split()[1] for line in status.splitlines() if line.startswith("Uid:"))
    return {
        "pid": pid,
        "uid": uid,
        "cwd": transport.check_output("readlink /proc/%s/cwd", pid).strip(),
        "env": env,
        "nofile": transport.check_output("grep 'Max open files' /proc/%s/limits", pid).split()[3:5],
        "argv": transport.get(f"/proc/{pid}/cmdline").decode().split("\0"),
    }


@pytest.fixture
def production(
    request: pytest.FixtureRequest, systemd_transport: Any, launcher: Launcher
) -> Iterator[dict[str, str]]:
    """A running production service of user ``sglang``; yields the host's file states.
    Parametrized indirectly, a dict of :func:`production_unit`'s ``flags``/``environment``."""
    t = systemd_transport
    unit = production_unit(launcher.launch, **getattr(request, "param", {}))
    t.run("id sglang >/dev/null 2>&1 || useradd --system --no-create-home sglang")
    # The launcher's interpreter may live under /root (pyenv): let the service user reach it.
    # The container's / is an overlay on a tmpfs, so this changes nothing outside it.
    python = Path(launcher.launch.split()[0]).resolve()
    for parent in python.parents:
        t.run("chmod o+x -- %s 2>/dev/null", parent)
    t.check_output("mkdir -p %s /etc/sglang %s.d && chown sglang: %s", WORKDIR, UNIT, WORKDIR)
    t.put(unit.encode(), UNIT, mode=0o644)
    t.put(PROD_DROPIN_TEXT.encode(), PROD_DROPIN, mode=0o644)
    t.put(PROD_ENV_TEXT.encode(), PROD_ENV, mode=0o640)
    t.check_output("systemctl daemon-reload && systemctl restart -- %s", SERVICE)
    wait_for(lambda: t.run("systemctl is-active --quiet -- %s", SERVICE).ok, "production up")
    before = file_states(t.run, WATCHED)
    before["argv"] = " ".join(_main_process(t)["argv"])
    yield before
    t.run(
        "systemctl stop -- %s; rm -rf -- %s %s.d /etc/sglang %s /etc/pytest-sglang "
        "/var/lib/pytest-sglang; systemctl daemon-reload; systemctl reset-failed",
        SERVICE,
        UNIT,
        UNIT,
        WORKDIR,
    )


def test_the_config_runs_in_production_context_and_the_host_comes_back(
    systemd_transport: Any, systemd_host: Any, launcher: Launcher, production: dict[str, str]
) -> None:
    t = systemd_transport
    spec = systemd_host_spec(
        systemd_host, SERVICE, launcher.launch, sglang_version=launcher.version
    )
    deployer = SystemdDeployer(spec, t)
    config = ServerConfig(
        model_path="/models/prod",
        port=30000,
        speculative_algorithm="EAGLE",
        speculative_num_steps=3,
        speculative_eagle_topk=1,
        env={"SHARED": "from the config", "HF_TOKEN": "hf_prodctx"},
    )
    try:
        assert deployer.has_production()
        deployer.deploy(deployer.launch_plan(config))
        wait_for(lambda: deployer.state().running, "the test config running")
        proc = _main_process(t)
        argv = proc["argv"]
        assert argv[argv.index("--speculative-num-steps") + 1] == "3"  # ours, not production's
        assert proc["uid"] == t.check_output("id -u sglang").strip()
        assert proc["cwd"] == WORKDIR
        assert proc["nofile"] == ["12345", "12345"], proc["nofile"]  # production's LimitNOFILE
        env = proc["env"]
        assert env["NCCL_P2P_DISABLE"] == "1" and env["HF_HOME"] == "/srv/sglang/hf"
        assert env["CUDA_VISIBLE_DEVICES"] == "0,1"  # production's drop-in
        assert env["HF_HUB_OFFLINE"] == "1"  # production's EnvironmentFile
        assert env["SHARED"] == "from the config"  # the config's env wins
        assert env["HF_TOKEN"] == "hf_prodctx"
        during = file_states(t.run, WATCHED)
        for path in (UNIT, PROD_DROPIN, PROD_ENV, WORKDIR):
            assert during[path] == production[path], f"{path} changed during the session"
        assert during[OURS] != "absent"
        # production's Restart=always is overridden: a crash of the test config stays visible
        show = t.check_output("systemctl show -p Restart --value -- %s", SERVICE).strip()
        assert show == "no"
    finally:
        deployer.restore()
        deployer.close()
    wait_for(lambda: t.run("systemctl is-active --quiet -- %s", SERVICE).ok, "production back")
    after = file_states(t.run, WATCHED)
    after["argv"] = " ".join(_main_process(t)["argv"])
    assert after == production


SESSION = """
import pathlib, time
import pytest
from pytest_sglang import production, sweep
from pytest_sglang.bench import Workload

def test_live(sglang_production, sglang_bench):
    assert sglang_production.config.model_path == "/models/prod"
    assert sglang_production.server_args["speculative_num_steps"] == 2
    result = sglang_bench(Workload.fixed_concurrency(2, num_requests=4, output_tokens=16))
    assert result.failed == 0 and result.completed == 4
    pathlib.Path("attached.txt").write_text("ok")

@pytest.mark.parametrize(
    "sglang_server", sweep(production(), speculative_num_steps=[1, 3]), indirect=True
)
def test_tuned(sglang_server):
    assert sglang_server.server_args["speculative_num_steps"] == (
        sglang_server.config.speculative_num_steps
    )
    assert sglang_server.server_args["served_model_name"] == "prod"
"""


def _inventory(pytester: pytest.Pytester, systemd_host: Any) -> Path:
    """Host ``prod``: the service only, no ``launch`` (production's unit gives the launcher)."""
    entry = host_entry("prod", systemd_host, SERVICE, {}, launch="")
    return save_inventory(pytester.path / "hosts.toml", entry)


def _attach_session(pytester: pytest.Pytester, systemd_host: Any) -> pytest.RunResult:
    """A child session with only SESSION's attach test, on host ``prod``."""
    inventory = _inventory(pytester, systemd_host)
    pytester.makepyfile(SESSION.split("@pytest.mark.parametrize")[0])
    argv = child_pytest_argv("--sglang-host", "prod", "--sglang-inventory", str(inventory))
    return pytester.run(*argv, timeout=300)


def _state(t: Any) -> tuple[str, str]:
    pid = t.check_output("systemctl show -p MainPID --value -- %s", SERVICE).strip()
    restarts = t.check_output("systemctl show -p NRestarts --value -- %s", SERVICE).strip()
    return pid, restarts


def test_attach_then_sweep_from_production_with_no_launch_in_the_inventory(
    pytester: pytest.Pytester,
    systemd_transport: Any,
    systemd_host: Any,
    production: dict[str, str],
) -> None:
    """The inventory names only the service: the launcher and the config come from the
    production unit. The attached benchmark leaves production's process alone; the sweep runs
    "production with changes"; the host comes back as it was."""
    t = systemd_transport
    inventory = _inventory(pytester, systemd_host)
    pytester.makepyfile(SESSION)
    before = _state(t)
    result = pytester.run(
        *child_pytest_argv("-v", "--sglang-host", "prod", "--sglang-inventory", str(inventory)),
        timeout=300,
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(
        [
            "*test_live PASSED*",
            "*test_tuned?production-s1? PASSED*",
            "*test_tuned?production-s3? PASSED*",
        ]
    )
    assert (pytester.path / "attached.txt").exists()
    # attached first (tests without a deployment run first): production's own process served
    # it; then the sweep replaced it, and the end of the session brought production back
    wait_for(lambda: t.run("systemctl is-active --quiet -- %s", SERVICE).ok, "production back")
    after = file_states(t.run, WATCHED)
    after["argv"] = " ".join(_main_process(t)["argv"])
    assert after == production
    assert before[0] != "0"


def test_attach_leaves_the_running_process_alone(
    pytester: pytest.Pytester,
    systemd_transport: Any,
    systemd_host: Any,
    production: dict[str, str],
) -> None:
    t = systemd_transport
    before = _state(t)
    result = _attach_session(pytester, systemd_host)
    assert result.ret == 0, result.stdout.str()[-3000:]
    assert _state(t) == before  # same main PID, no restart
    assert file_states(t.run, WATCHED) == {k: v for k, v in production.items() if k != "argv"}


def test_attach_to_a_stopped_production_is_one_line(
    pytester: pytest.Pytester,
    systemd_transport: Any,
    systemd_host: Any,
    production: dict[str, str],
) -> None:
    t = systemd_transport
    t.check_output("systemctl stop -- %s", SERVICE)
    result = _attach_session(pytester, systemd_host)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*prod production: the running server does not answer /health*"])
    assert "Traceback" not in result.stdout.str()
    assert t.run("systemctl is-active --quiet -- %s", SERVICE).rc != 0  # left as it was


KILLED = """
import pathlib, time
import pytest
from pytest_sglang import production

@pytest.mark.parametrize("sglang_server", [production(speculative_num_steps=3)], indirect=True)
def test_long(sglang_server):
    pathlib.Path({marker!r}).write_text("x")
    time.sleep(120)
"""


def test_after_sigkill_restore_gives_production_back_untouched(
    pytester: pytest.Pytester,
    session_until: Any,
    systemd_transport: Any,
    systemd_host: Any,
    production: dict[str, str],
) -> None:
    t = systemd_transport
    inventory = _inventory(pytester, systemd_host)
    marker = pytester.path / "deployed"
    pytester.makepyfile(KILLED.format(marker=str(marker)))
    proc = session_until(marker, "--sglang-host", "prod", "--sglang-inventory", str(inventory))
    during = file_states(t.run, WATCHED)
    for path in (UNIT, PROD_DROPIN, PROD_ENV, WORKDIR):
        assert during[path] == production[path], f"{path} changed during the session"
    argv = _main_process(t)["argv"]
    assert argv[argv.index("--speculative-num-steps") + 1] == "3"
    proc.kill()
    proc.wait(timeout=30)
    result = pytester.run(
        *child_pytest_argv(
            "--sglang-restore", "--sglang-host", "prod", "--sglang-inventory", str(inventory)
        ),
        timeout=300,
    )
    result.stdout.fnmatch_lines(["*prod: restored*"])
    wait_for(lambda: t.run("systemctl is-active --quiet -- %s", SERVICE).ok, "production back")
    after = file_states(t.run, WATCHED)
    after["argv"] = " ".join(_main_process(t)["argv"])
    assert after == production


def test_no_production_to_start_from_is_one_line(
    systemd_transport: Any, systemd_host: Any, launcher: Launcher
) -> None:
    """Not an SGLang command line, or no such service: one line naming host and unit; the host
    is not changed."""
    t = systemd_transport
    spec = systemd_host_spec(systemd_host, SERVICE, "", source="hosts.toml")
    try:
        with pytest.raises(ConfigError) as absent:
            SystemdDeployer(spec, t).production_config()
        message = str(absent.value)
        assert "\n" not in message and "'testhost'" in message and SERVICE in message
        assert "does not exist" in message
        t.put(b"[Service]\nExecStart=/bin/sleep infinity --quiet\n", UNIT, mode=0o644)
        t.check_output("systemctl daemon-reload")
        before = file_states(t.run, WATCHED)
        with pytest.raises(ConfigError) as not_sglang:
            SystemdDeployer(spec, t).production_config()
        message = str(not_sglang.value)
        assert "\n" not in message and "not an SGLang launch" in message and SERVICE in message
        assert file_states(t.run, WATCHED) == before
    finally:
        t.run("rm -f -- %s; systemctl daemon-reload", UNIT)


def test_a_production_unit_that_deletes_its_checkpoint_is_refused_before_anything_changes(
    systemd_transport: Any, systemd_host: Any, launcher: Launcher
) -> None:
    """A real unit whose ExecStart carries ``--delete-ckpt-after-loading`` (abbreviated, as
    argparse takes it): reading production refuses the host in one line naming it and the
    flag, and nothing on the host changes."""
    t = systemd_transport
    spec = systemd_host_spec(systemd_host, SERVICE, launcher.launch)
    exec_start = f"{launcher.launch} --model-path /models/prod --port 30000 --delete-ckpt-after"
    t.put(f"[Service]\nExecStart={exec_start}\n".encode(), UNIT, mode=0o644)
    t.check_output("systemctl daemon-reload")
    deployer = SystemdDeployer(spec, t)
    try:
        before = file_states(t.run, WATCHED)
        with pytest.raises(ConfigError) as refused:
            deployer.production_config()
        message = str(refused.value)
        assert "\n" not in message and message.startswith("host 'testhost': production runs")
        assert "--delete-ckpt-after-loading" in message and "does not deploy" in message
        assert file_states(t.run, WATCHED) == before
    finally:
        deployer.close()
        t.run("rm -f -- %s; systemctl daemon-reload", UNIT)


def test_a_unit_changed_but_not_restarted_is_said(
    systemd_transport: Any, systemd_host: Any, launcher: Launcher, production: dict[str, str]
) -> None:
    """The unit on disk says steps 3, the running server still runs steps 2: reading
    production says so (and changes nothing)."""
    t = systemd_transport
    python = launcher.launch.split()[0]
    answers = "import urllib.request as u; u.urlopen('http://127.0.0.1:30000/health', timeout=2)"
    # active is not yet listening: on a loaded host the server may not answer for a while
    wait_for(lambda: t.run("%s -c %s", python, answers).ok, "production answering")
    unit = t.check_output("cat %s", UNIT)
    t.put(unit.replace("--speculative-num-steps 2", "--speculative-num-steps 3").encode(), UNIT)
    t.check_output("systemctl daemon-reload")
    deployer = SystemdDeployer(systemd_host_spec(systemd_host, SERVICE, ""), t)
    said: list[str] = []
    try:
        config = deployer.production_config()
        assert config.speculative_num_steps == 3
        cross_check(deployer, config, redactor=Redactor(), say=said.append)
    finally:
        deployer.close()
        t.put(unit.encode(), UNIT)
        t.check_output("systemctl daemon-reload")
    assert said == [
        "[sglang] testhost production: its command line sets speculative_num_steps=3, the "
        "running server reports 2 (changed and not restarted?)"
    ]


#: Production's API key and HF token as its server receives them. Its unit spells them with
#: systemd's escapes (``$$`` and ``%%`` in ExecStart=, ``%%`` in Environment=); the child
#: session spells them in pieces, so that no source listing shows them whole.
PROD_KEY = "".join(("k", "$", "9", "%", "z"))
PROD_TOKEN = "".join(("hf", "$", "Tok", "%", "en7"))
ESCAPED = {"flags": '--api-key "k$$9%%z"', "environment": '"HF_TOKEN=hf$Tok%%en7"'}
#: Every spelling of them that must appear in no output: as received, and as the unit has them.
PROD_SPELLINGS = (PROD_KEY, PROD_TOKEN, "k$$9%%z", "hf$Tok%%en7")

ESCAPED_SESSION = f"""
import pytest
import requests
from pytest_sglang import production, sweep

KEY = "".join({list(PROD_KEY)!r})
TOKEN = "".join({list(PROD_TOKEN)!r})

def test_attach(sglang_production):
    assert sglang_production.get("/v1/models").status_code == 200
    print("careless:", KEY, TOKEN, sglang_production.server_args)

@pytest.mark.parametrize(
    "sglang_server", sweep(production(), speculative_num_steps=[3]), indirect=True
)
def test_tuned(sglang_server):
    auth = {{"Authorization": "Bearer " + KEY}}
    reply = requests.get(sglang_server.base_url + "/v1/models", headers=auth, timeout=10)
    print("careless:", KEY, TOKEN, sglang_server.journal.text)
    assert reply.status_code == 200  # the test server has production's exact key
"""


def _leaks(text: str) -> list[str]:
    return [spelling for spelling in PROD_SPELLINGS if spelling in text]


@pytest.mark.parametrize("production", [ESCAPED], indirect=True)
def test_production_secrets_in_systemd_escapes_stay_secret_and_exact(
    pytester: pytest.Pytester,
    systemd_transport: Any,
    systemd_host: Any,
    production: dict[str, str],
) -> None:
    """A production unit whose ``--api-key`` and ``HF_TOKEN`` carry ``$`` and ``%``: the
    values its server receives (systemd's escapes undone) are what the session attaches with,
    what a production() sweep starts with, and what no output, summary, report or Allure
    result shows; a dry run shows them in no spelling either."""
    inventory = _inventory(pytester, systemd_host)
    pytester.makepyfile(ESCAPED_SESSION)
    out = pytester.path / "out"
    out.mkdir()
    host = ("--sglang-host", "prod", "--sglang-inventory", str(inventory))
    dry = pytester.run(*child_pytest_argv("--sglang-dry-run", *host), timeout=300)
    assert not _leaks(dry.stdout.str() + dry.stderr.str()), "a secret in the dry run"
    result = pytester.run(
        *child_pytest_argv(
            "-v",
            "-rA",
            *host,
            f"--sglang-summary={out / 'summary.json'}",
            f"--sglang-html={out / 'report.html'}",
            f"--alluredir={out / 'allure'}",
            f"--junitxml={out / 'junit.xml'}",
        ),
        timeout=300,
    )
    text = result.stdout.str() + result.stderr.str()
    assert not _leaks(text), f"secret in the session's output: {_leaks(text)}"
    written = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"summary.json", "report.html", "junit.xml"}
    assert any(p.parent.name == "allure" for p in written)
    for path in written:
        leaks = _leaks(path.read_bytes().decode("utf-8", "replace"))
        assert not leaks, f"secret in {path.relative_to(out)}: {leaks}"
    assert result.ret == 0, text[-3000:]
    result.stdout.fnmatch_lines(["*test_attach PASSED*", "*test_tuned?production-s3? PASSED*"])
    assert "<redacted>" in text  # the careless prints were there, redacted
    t = systemd_transport
    wait_for(lambda: t.run("systemctl is-active --quiet -- %s", SERVICE).ok, "production back")
    after = file_states(t.run, WATCHED)
    after["argv"] = " ".join(_main_process(t)["argv"])
    assert after == production
