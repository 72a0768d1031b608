"""The host's own SGLang as the authority on what a config resolves to (lifecycle/host_resolve.py),
with the simulator playing the host's SGLang (``--sglang-host-resolve=on``): the resolver
program runs in the launcher's Python, as it does against the real package (tests_real/).

Two configs the built-in predictor gets wrong on purpose serve throughout:

- REFUSED: ``--max-total-tokens 1K`` passes the plugin's checks (the flag exists), but SGLang's
  parser refuses it (its human-readable ints are case-sensitive): without the host's answer the
  server is started and dies; with it, the config is refused before anything on the host changes.
- FOLDED: ``--dp-size 2 --enable-dp-attention`` on a host whose inventory pins 0.5.18, while it
  runs 0.5.23, which folds the width into ``attn_dp_size`` and logs ``dp_size=1``: the predictor
  (going by the inventory) expects 2, so without the host's answer the journal check fails;
  with it, the host's value is checked and the disagreement is a note.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import FAST_SIM, PRODUCTION_UNIT, SIM_LAUNCH, host_entry, save_inventory
from testhost import SystemdTestHost

import pytest_sglang
from pytest_sglang import ServerConfig
from pytest_sglang.errors import ConfigRefused, JournalError, ServerStartError
from pytest_sglang.lifecycle.host_resolve import HostAnswer, adopt
from pytest_sglang.lifecycle.launch_plan import make_launch_plan
from pytest_sglang.lifecycle.launcher_cache import CACHE_ENV
from pytest_sglang.model_identity import identity_from_name
from pytest_sglang.resolution import ADJUST_DRAFT_TOKENS_WARNING, MAX_RUNNING_48_WARNING
from pytest_sglang.session import SglangSession

REFUSED = ServerConfig(
    model_path="/models/Qwen3-8B", name="refused", extra_args=("--max-total-tokens", "1K")
)
FOLDED = ServerConfig(
    model_path="/models/Qwen3-8B",
    name="folded",
    tp_size=2,
    extra_args=("--dp-size", "2", "--enable-dp-attention"),
)
REFUSAL_LINE = "sglang serve: error: argument --max-total-tokens: Invalid integer value: '1K'"
#: A test module deploying {configs} (REFUSED, FOLDED or both) as the constants above.
TESTS = """
import pytest
from pytest_sglang import ServerConfig

REFUSED = ServerConfig(model_path="/models/Qwen3-8B", name="refused",
                       extra_args=("--max-total-tokens", "1K"))
FOLDED = ServerConfig(model_path="/models/Qwen3-8B", name="folded", tp_size=2,
                      extra_args=("--dp-size", "2", "--enable-dp-attention"))

@pytest.mark.parametrize("sglang_server", [{configs}], indirect=True)
def test_deployed(sglang_server):
    assert sglang_server.server_args["dp_size"] == 1
"""

#: The package under test: the simulator's Python imports it too (on the systemd test host as
#: well, whose root is this machine's).
PACKAGE_ROOT = str(Path(pytest_sglang.__file__).resolve().parent.parent)


@pytest.fixture(autouse=True)
def own_cache(fast_simulator: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A fast simulator, and a cache of host answers (and of the launcher) of this test's own."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))


def _inventory(tmp_path: Path) -> Path:
    """A simulator process host whose inventory says 0.5.18 (it runs 0.5.23)."""
    return save_inventory(
        tmp_path / "hosts.toml",
        f'[hosts.sim]\nssh = "local"\nlaunch = "{SIM_LAUNCH}"\nsglang_version = "0.5.18"\n',
    )


def _session(tmp_path: Path, mode: str, said: list[str]) -> SglangSession:
    session = SglangSession(
        ["sim"],
        inventory=_inventory(tmp_path),
        ssh_config=None,
        ready_timeout=60,
        progress=said.append,
        host_resolve=mode,
    )
    session.planned[:] = [REFUSED, FOLDED]
    return session


# -- the answer, read -------------------------------------------------------------------------


def test_only_what_sglang_raises_for_a_config_is_a_refusal() -> None:
    usage = HostAnswer.from_program({"type": "SystemExit", "code": 2, "error": REFUSAL_LINE})
    assert (usage.kind, usage.refused) == ("usage", True)
    # the simulator exits 1 after printing resolution's traceback, as the server does
    raised = HostAnswer.from_program(
        {"type": "SystemExit", "code": 1, "error": "ValueError: UNO requires --uno-lora-path."}
    )
    assert (raised.kind, raised.refused) == ("ValueError", True)
    assert HostAnswer.from_program({"type": "AssertionError", "error": "AssertionError"}).refused
    for kind, line in (
        ("RuntimeError", "RuntimeError: Cannot re-initialize CUDA in forked subprocess."),
        ("ModuleNotFoundError", "ModuleNotFoundError: No module named 'sglang'"),
        ("TimeoutError", "TimeoutError: resolution took more than 120s"),
        ("ChildDied", "ChildDied"),
    ):
        answer = HostAnswer.from_program({"type": kind, "error": line})
        assert not answer.refused, kind


def test_values_come_back_as_the_log_line_shows_them() -> None:
    answer = HostAnswer.from_program(
        {
            "server_args": {
                "tp_size": 2,
                "bs": {"__tuple__": [1, 2]},
                "device": {"__repr__": "device(type='cuda')"},
                "nested": {"a": [{"__tuple__": []}]},
                "partly": {"a": 1, "b": [{"__repr__": "<object>"}]},
            },
            "log": ["[2026-01-01 00:00:00] a warning"],
        }
    )
    assert answer.server_args == {"tp_size": 2, "bs": (1, 2), "nested": {"a": [()]}}
    assert HostAnswer.from_json(json.loads(json.dumps(answer.as_json()))) == answer


def _plan(config: ServerConfig, version: str = "0.5.23") -> Any:
    return make_launch_plan(
        "gpu",
        config,
        sglang_version=version,
        launcher=["/py", "-m", "sglang.launch_server"],
        launcher_env={},
        model=identity_from_name(config.model_path),
    )


def test_the_hosts_values_are_checked_and_a_disagreement_is_a_note() -> None:
    config = ServerConfig(
        model_path="/models/Qwen3-8B",
        speculative_algorithm="EAGLE",
        speculative_num_steps=2,
        speculative_eagle_topk=1,
        speculative_draft_model_path="/models/draft",
        port=31000,
    )
    plan = _plan(config)
    assert plan.expected.server_args["max_running_requests"] == 48
    assert MAX_RUNNING_48_WARNING in plan.expected.warnings
    host = {**plan.expected.server_args, "max_running_requests": 32, "port": 1, "extra": "x"}
    log = (f"[2026-01-01 00:00:00] {ADJUST_DRAFT_TOKENS_WARNING}",)
    adopted, notes = adopt(plan, HostAnswer(server_args=host, log=log))
    expected = adopted.expected
    assert expected.server_args["max_running_requests"] == 32
    assert expected.max_running_requests == 32
    assert "extra" not in expected.server_args  # only what the predictor checks is checked
    assert expected.server_args["port"] == 31000  # the plan's own address, never the host's
    assert expected.warnings == (ADJUST_DRAFT_TOKENS_WARNING,)  # not the one it does not log
    assert notes == [
        "gpu eagle-s2-k1: the host's SGLang 0.5.23 resolves max_running_requests to 32, the "
        "built-in predictor to 48; the host's value is checked",
        f"gpu eagle-s2-k1: the built-in predictor expects the warning {MAX_RUNNING_48_WARNING!r}; "
        "the host's SGLang does not log it, so it is not required",
    ]
    assert set(notes) <= set(adopted.notes)
    agreed, none = adopt(
        plan,
        HostAnswer(server_args=plan.expected.server_args, log=tuple(plan.expected.warnings)),
    )
    assert none == [] and agreed.expected == plan.expected


def test_a_refusal_names_the_config_and_sglangs_line_and_no_verdict_is_a_note() -> None:
    plan = _plan(REFUSED)
    with pytest.raises(ConfigRefused, match=r"refuses config refused .*Invalid integer value"):
        adopt(plan, HostAnswer(error=REFUSAL_LINE, kind="usage"))
    same, [note] = adopt(plan, HostAnswer(error="RuntimeError: CUDA", kind="RuntimeError"))
    assert same is plan
    assert "could not resolve it (RuntimeError: CUDA)" in note


# -- the simulator playing the host's SGLang ----------------------------------------------------


def test_a_refused_config_never_starts_and_the_hosts_values_are_checked(tmp_path: Path) -> None:
    said: list[str] = []
    session = _session(tmp_path, "on", said)
    try:
        lease = session.host("sim")
        with pytest.raises(ConfigRefused, match=r"refuses config refused .*Invalid integer"):
            lease.deployment(REFUSED)
        assert lease.deployer.deployed is None  # nothing was started, nothing written
        deployment = lease.deployment(FOLDED)
        assert deployment.server_args["dp_size"] == 1
    finally:
        session.restore_all()
    # one round trip for both of the session's configs, before the first change
    assert [line for line in said if "resolved 2 config(s)" in line] == [
        next(line for line in said if "host's SGLang resolved" in line)
    ]
    note = (
        "sim folded: the host's SGLang 0.5.18 resolves dp_size to 1, the built-in predictor to "
        "2; the host's value is checked"
    )
    summary = session.summary()
    assert summary["notes"] == [note]
    [refused, folded] = summary["deployments"]
    assert (refused["outcome"], refused["reason"]) == ("failed", "invalid config")
    assert REFUSAL_LINE in refused["message"]
    assert folded["outcome"] == "ready"


def test_without_the_hosts_answer_both_configs_fail_on_the_host(tmp_path: Path) -> None:
    said: list[str] = []
    session = _session(tmp_path, "off", said)
    try:
        lease = session.host("sim")
        with pytest.raises(ServerStartError, match="invalid config"):
            lease.deployment(REFUSED)
        with pytest.raises(JournalError, match="dp_size requested 2, logged 1"):
            lease.deployment(FOLDED)
    finally:
        session.restore_all()
    assert not any("host's SGLang" in line for line in said)
    assert "notes" not in session.summary()


def test_answers_are_kept_across_sessions(tmp_path: Path) -> None:
    for run in ("first", "second"):
        said: list[str] = []
        session = _session(tmp_path, "on", said)
        try:
            with pytest.raises(ConfigRefused):
                session.host("sim").deployment(REFUSED)
        finally:
            session.restore_all()
        asked = [line for line in said if "host's SGLang resolved 2" in line]
        kept = [line for line in said if "2 config(s) as the host's SGLang resolved" in line]
        # the second session runs no resolver: the answers of the first are kept
        assert (len(asked), len(kept)) == ((1, 0) if run == "first" else (0, 1)), said


def test_a_launcher_python_without_sglang_is_a_note_not_a_failure(tmp_path: Path) -> None:
    # A launcher that is no ``-m pytest_sglang.sim`` (a wrapper of it): ``auto`` asks its Python
    # as SGLang, which it does not have. No verdict on the config: a note, then the predictor.
    wrapper = tmp_path / "serve.py"
    wrapper.write_text("import runpy\nrunpy.run_module('pytest_sglang.sim', run_name='__main__')\n")
    python = SIM_LAUNCH.split()[0]
    inventory = save_inventory(
        tmp_path / "hosts.toml",
        f'[hosts.sim]\nssh = "local"\nlaunch = "{python} {wrapper}"\nsglang_version = "0.5.23"\n',
    )
    session = SglangSession(["sim"], inventory=inventory, ssh_config=None, ready_timeout=60)
    try:
        session.host("sim").deployment(ServerConfig(model_path="/models/Qwen3-8B"))
    finally:
        session.restore_all()
    [note] = session.summary()["notes"]
    assert note.startswith("sim: the host's SGLang could not be asked (rc=1: ")
    assert "No module named 'sglang'" in note


def test_a_session_asks_once_for_all_its_configs(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(TESTS.replace("{configs}", "REFUSED, FOLDED"))
    inventory = _inventory(tmp_path)
    summary = pytester.path / "summary.json"
    result = pytester.runpytest(
        "--sglang-host", "sim", "--sglang-inventory", str(inventory),
        "--sglang-host-resolve=on", "--sglang-summary", str(summary),
    )  # fmt: skip
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]sglang[]] sim: the host's SGLang resolved 2 config(s) in *s (one round trip*",
            f"*refuses config refused (fix the config; nothing on the host was changed): "
            f"{REFUSAL_LINE}*",
            "*[[]sglang[]] note: sim folded: the host's SGLang 0.5.18 resolves dp_size to 1*",
        ]
    )
    assert len(json.loads(summary.read_text())["notes"]) == 1


# -- over SSH, on the systemd test host ---------------------------------------------------------

SERVICE = "sglang-authority.service"
UNIT = f"/etc/systemd/system/{SERVICE}"
DROPIN = f"/etc/systemd/system/{SERVICE}.d/zz-pytest-sglang.conf"


def _production(transport: Any) -> dict[str, str]:
    shown = transport.check_output(
        "systemctl show -p MainPID,ActiveState -- %s; test -e %s && echo dropin || true",
        SERVICE,
        DROPIN,
    )
    state = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
    state["dropin"] = "present" if "dropin" in shown.split() else "absent"
    state["backup"] = transport.run("ls /var/lib/pytest-sglang 2>/dev/null").stdout.strip()
    return state


def test_over_ssh_a_refusal_leaves_production_running_and_a_disagreement_is_a_note(
    pytester: pytest.Pytester, systemd_host: SystemdTestHost, systemd_transport: Any
) -> None:
    systemd_transport.put(PRODUCTION_UNIT.encode(), UNIT, mode=0o644)
    systemd_transport.check_output("systemctl daemon-reload && systemctl restart -- %s", SERVICE)
    try:
        before = _production(systemd_transport)
        assert before["ActiveState"] == "active" and before["dropin"] == "absent"
        env = {**FAST_SIM, "PYTHONPATH": PACKAGE_ROOT}
        entry = host_entry("testhost", systemd_host, SERVICE, env, launch=SIM_LAUNCH)
        inventory = save_inventory(
            pytester.path / "hosts.toml", entry + 'sglang_version = "0.5.18"\n'
        )
        args = ["--sglang-host", "testhost", "--sglang-inventory", str(inventory)]
        args += ["--sglang-host-resolve=on", "-p", "no:cacheprovider"]

        pytester.makepyfile(TESTS.replace("{configs}", "REFUSED"))
        refused = pytester.runpytest(*args)
        refused.assert_outcomes(errors=1)
        refused.stdout.fnmatch_lines(
            [f"*host 'testhost' (SGLang 0.5.18) refuses config refused*{REFUSAL_LINE}*"]
        )
        # production was never stopped, nothing was written, no intent record was left
        assert _production(systemd_transport) == before

        pytester.makepyfile(TESTS.replace("{configs}", "FOLDED"))
        summary = pytester.path / "summary.json"
        folded = pytester.runpytest(*args, "--sglang-summary", str(summary))
        folded.assert_outcomes(passed=1)
        note = (
            "testhost folded: the host's SGLang 0.5.18 resolves dp_size to 1, the built-in "
            "predictor to 2; the host's value is checked"
        )
        folded.stdout.fnmatch_lines([f"*[[]sglang[]] note: {note}"])
        assert json.loads(summary.read_text())["notes"] == [note]
        after = _production(systemd_transport)
        assert after["ActiveState"] == "active" and after["dropin"] == "absent"
    finally:
        systemd_transport.run(
            "systemctl stop -- %s; rm -rf -- %s /var/lib/pytest-sglang; systemctl daemon-reload",
            SERVICE,
            UNIT,
        )


def test_no_secret_is_kept_in_the_cache_and_its_key_keeps_the_predicted_value(
    tmp_path: Path,
) -> None:
    keyed = ServerConfig(
        model_path="/models/Qwen3-8B",
        name="keyed",
        extra_args=("--api-key", "sekrit-4711"),
        env={"HF_TOKEN": "hf-sekrit-0815", "SGLANG_SIM_SEED": "3"},
    )
    session = _session(tmp_path, "on", [])
    session.planned[:] = [keyed]
    try:
        deployment = session.host("sim").deployment(keyed)
        assert deployment.plan is not None
        assert deployment.plan.expected.server_args["api_key"] == "sekrit-4711"
    finally:
        session.restore_all()
    stored = list((tmp_path / "cache" / "resolved").glob("*.json"))
    assert len(stored) == 1
    text = stored[0].read_text()
    assert "sekrit" not in text
    assert '"served_model_name": "/models/Qwen3-8B"' in text


def test_over_ssh_resolution_runs_with_the_services_own_environment(
    pytester: pytest.Pytester, systemd_host: SystemdTestHost, systemd_transport: Any
) -> None:
    # A config's server runs inside production's service and gets its Environment=: here one
    # that makes every start fail (a version the simulator does not play). Resolution on the
    # host gets it too, so the config is refused before production is stopped.
    unit = PRODUCTION_UNIT.replace(
        "[Service]\n", "[Service]\nEnvironment=SGLANG_SIM_VERSION=9.9.9\n"
    )
    systemd_transport.put(unit.encode(), UNIT, mode=0o644)
    systemd_transport.check_output("systemctl daemon-reload && systemctl restart -- %s", SERVICE)
    try:
        before = _production(systemd_transport)
        env = {**FAST_SIM, "PYTHONPATH": PACKAGE_ROOT}
        entry = host_entry("testhost", systemd_host, SERVICE, env, launch=SIM_LAUNCH)
        inventory = save_inventory(
            pytester.path / "hosts.toml", entry + 'sglang_version = "0.5.23"\n'
        )
        pytester.makepyfile(TESTS.replace("{configs}", "ServerConfig(model_path='/m/Qwen3-8B')"))
        result = pytester.runpytest(
            "--sglang-host", "testhost", "--sglang-inventory", str(inventory),
            "--sglang-host-resolve=on", "-p", "no:cacheprovider",
        )  # fmt: skip
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(
            ["*refuses config *: sglang-sim: error: SGLANG_SIM_VERSION='9.9.9' is not simulated*"]
        )
        assert _production(systemd_transport) == before
    finally:
        systemd_transport.run(
            "systemctl stop -- %s; rm -rf -- %s /var/lib/pytest-sglang; systemctl daemon-reload",
            SERVICE,
            UNIT,
        )


def test_a_request_too_long_for_one_command_line_goes_in_several(tmp_path: Path) -> None:
    # each config's environment is 30 kB: three of them do not fit in one command line
    configs = [
        ServerConfig(model_path="/models/Qwen3-8B", name=f"c{i}", env={"PAD": str(i) * 30_000})
        for i in range(3)
    ]
    session = _session(tmp_path, "on", [])
    deployer = session.host("sim").deployer
    try:
        plans = [deployer.launch_plan(config) for config in configs]
        deployer.launcher.identity(), deployer.launcher.gpu_profile()  # the probes, asked first
        before = deployer.transport.round_trips
        resolution = deployer.resolve_on_host(plans)
        assert deployer.transport.round_trips - before == 2
    finally:
        session.restore_all()
    assert resolution.failure == ""
    assert resolution.asked == 3 and len(resolution.answers) == 3
    assert all(answer.server_args for answer in resolution.answers.values())
