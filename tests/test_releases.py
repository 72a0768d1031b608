"""Two releases in one session: a host's named launchers, and configs swept over them.

The end-to-end test runs a real pytest session (pytester) against the simulator on this machine
with two launchers, each playing another release (``SGLANG_SIM_VERSION`` in the launcher's own
``env``): simulated 0.5.22 and 0.5.23 differ in the defaults of the flags 0.5.23 made
three-valued (``--enable-fused-qk-norm-rope`` ...: False before, None since), read from both
releases' real parsers (docs/simulator.md). One run must then deploy each config on its launcher,
record the version each one actually ran in its fingerprint, gate the 0.5.23 run against the
0.5.22 run as an upgrade with the settings that changed marked "(default)", compare greedy
outputs across the releases, rank both in the tuning verdict, and refuse an unknown launcher in
one line naming the host and its launchers.
"""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

import pytest

from pytest_sglang import ServerConfig, load_configs, production, sweep
from pytest_sglang.errors import ConfigError, InventoryError
from pytest_sglang.lifecycle.deployers import make_deployer
from pytest_sglang.lifecycle.hosts import resolve_host, transport_for

SIM = f"{sys.executable} -m pytest_sglang.sim"
INVENTORY = f"""
[hosts.local]
launch = "{SIM}"

[hosts.local.launchers]
"0.5.22" = {{ launch = "{SIM}", env = {{ SGLANG_SIM_VERSION = "0.5.22" }} }}
"0.5.23" = {{ launch = "{SIM}", env = {{ SGLANG_SIM_VERSION = "0.5.23" }} }}
"""

TEST = """
import pytest
from pytest_sglang import ServerConfig, sweep
from pytest_sglang.bench import Workload

BASE = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")
RELEASES = sweep(BASE, launcher=["0.5.22", "0.5.23"])

@pytest.mark.sglang_gate(median_ttft_ms="off", median_itl_ms="off")
@pytest.mark.parametrize("sglang_server", RELEASES, indirect=True)
def test_decode(sglang_bench):
    sglang_bench(Workload.single_stream(32), rounds=3)

@pytest.mark.parametrize("sglang_server", RELEASES, indirect=True)
def test_greedy_outputs_match(sglang_quality):
    sglang_quality.equivalence(reference=RELEASES[0], output_tokens=16)

@pytest.mark.parametrize("sglang_server", [BASE.replace(launcher="0.5.21")], indirect=True)
def test_unknown_release(sglang_server):
    pass
"""

WIDE = ("--sglang-gate=output_throughput:-10%",)
SIM_ENV = {"SGLANG_SIM_STARTUP_SCALE": "0", "SGLANG_SIM_TIME_SCALE": "0.2"}


@pytest.fixture
def simulator_env() -> dict[str, str]:
    return dict(SIM_ENV)


pytestmark = pytest.mark.usefixtures("fast_simulator")


def test_a_launcher_is_part_of_the_id_and_digest_but_not_of_the_baseline_key() -> None:
    base = ServerConfig(model_path="/m", tp_size=2)
    old, new = sweep(base, launcher=["0.5.22", "0.5.23"])
    assert (old.id, new.id) == ("tp2-on-0.5.22", "tp2-on-0.5.23")
    assert len({base.digest, old.digest, new.digest}) == 3
    assert old.without_launcher() == base and old.without_launcher().digest == base.digest
    assert old.to_argv() == base.to_argv()  # not a flag of SGLang's
    named = sweep(base.replace(name="prod"), launcher=["a", "b"], tp_size=[4])
    assert [c.id for c in named] == ["prod-tp4-on-a", "prod-tp4-on-b"]
    with pytest.raises(ConfigError, match="launcher"):
        ServerConfig(model_path="/m", launcher="has space")
    assert production(launcher="0.5.22", tp_size=2).id == "production-tp2-on-0.5.22"


def test_a_config_file_sweeps_launchers(tmp_path: Path) -> None:
    path = tmp_path / "configs.toml"
    path.write_text('[base]\nmodel_path = "/m"\n[sweep]\nlauncher = ["0.5.22", "0.5.23"]\n')
    assert [c.id for c in load_configs(path)] == ["base-on-0.5.22", "base-on-0.5.23"]


def test_inventory_launchers_and_the_one_line_for_an_unknown_one(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(INVENTORY)
    spec = resolve_host("local", inventory_path=inventory)
    assert sorted(spec.launchers) == ["0.5.22", "0.5.23"]
    old = spec.with_launcher("0.5.22")
    assert (old.launch, old.launcher, old.launcher_env) == (
        SIM,
        "0.5.22",
        {"SGLANG_SIM_VERSION": "0.5.22"},
    )
    assert spec.with_launcher(None) is spec
    with pytest.raises(ConfigError) as info:
        spec.with_launcher("0.5.21")
    assert str(info.value) == (
        "host 'local' has no launcher '0.5.21'; its launchers: '0.5.22', '0.5.23' "
        f"([hosts.local.launchers] in {inventory})"
    )
    inventory.write_text(
        '[hosts.gpu]\nssh = "root@gpu:22"\nservice = "sglang"\n[hosts.gpu.launchers]\n'
        '"0.5.22" = { launch = "/opt/a/bin/python -m sglang.launch_server", '
        'sglang_version = "0.5.22" }\n'
    )
    gpu = resolve_host("gpu", inventory_path=inventory, ssh_config_path=Path("/dev/null"))
    assert gpu.with_launcher("0.5.22").sglang_version == "0.5.22"
    assert gpu.with_launcher("0.5.22").service == "sglang.service"  # the same unit runs it
    inventory.write_text('[hosts.local.launchers]\n"a" = { launch = "x", version = "1" }\n')
    with pytest.raises(InventoryError, match=r"launchers\.a: unknown key 'version'"):
        resolve_host("local", inventory_path=inventory)


def test_two_releases_in_one_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_two_releases=TEST)
    (pytester.path / "sglang-hosts.toml").write_text(INVENTORY)
    summary = pytester.path / "summary.json"
    allure = pytester.path / "allure"
    result = pytester.runpytest(
        *WIDE, f"--sglang-summary={summary}", "--sglang-baseline-save", f"--alluredir={allure}"
    )
    result.assert_outcomes(passed=4, errors=1)
    # the settings diff beside the figures in Allure too (the comparison's attachment)
    attached = [html.unescape(p.read_text(errors="replace")) for p in allure.glob("*-attachment*")]
    assert any(
        "0.5.22 -> 0.5.23" in text and "enable_fused_qk_norm_rope" in text for text in attached
    ), [t[:200] for t in attached]
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "test_decode[[]base-on-0.5.23[]] upgrade: SGLang 0.5.22 -> 0.5.23: output_throughput "
            "*%, p=*; 2 settings in effect changed",
            "    enable_decoder_swa_bounded_replay False -> - (default)",
            "    enable_fused_qk_norm_rope False -> - (default)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_unknown_release*",
            "host 'local' has no launcher '0.5.21'; its launchers: '0.5.22', '0.5.23' "
            "([[]hosts.local.launchers[]] in *sglang-hosts.toml)",
        ]
    )
    assert "test_decode[base-on-0.5.22] upgrade" not in out  # the first release has no before
    data = json.loads(summary.read_text())
    ready = {d["config_id"] for d in data["deployments"] if d["outcome"] == "ready"}
    assert ready == {"base-on-0.5.22", "base-on-0.5.23"}
    rows = [r for r in data["comparisons"] if r.get("upgrade")]
    assert [r["config_id"] for r in rows] == ["base-on-0.5.23"]
    upgrade = rows[0]["upgrade"]
    # each fingerprint records the release the launcher actually ran
    assert (upgrade["from"], upgrade["to"]) == (
        {"sglang_version": "0.5.22"},
        {"sglang_version": "0.5.23"},
    )
    assert upgrade["baseline"] == "base-on-0.5.22 (this session)"
    assert {c["name"] for c in upgrade["settings_changed"]} == {
        "enable_decoder_swa_bounded_replay",
        "enable_fused_qk_norm_rope",
    }
    assert {r["verdict"] for r in rows} <= {"ok", "improvement"}, rows
    # greedy equivalence across the releases, and both in the tuning verdict
    quality = {r["config_id"]: r for r in data["quality"]}
    assert quality["base-on-0.5.23"]["holds"] is True
    assert quality["base-on-0.5.23"]["subject"] == "base-on-0.5.22"
    ranked = {row["config_id"] for verdict in data["tuning"] for row in verdict["ranking"]}
    assert {"base-on-0.5.22", "base-on-0.5.23"} <= ranked

    # Saved under the config less its launcher: one history, a fingerprint per release.
    base = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")
    saved = sorted((pytester.path / "baselines").glob("*/single-stream-*/*.json"))
    assert {p.parent.parent.name for p in saved} == {f"base-{base.digest}"}
    versions = [json.loads(p.read_text())["machine_info"] for p in saved]
    assert sorted(v["sglang_fingerprint"]["sglang_version"] for v in versions) == [
        "0.5.22",
        "0.5.23",
    ]
    # Next session: the first release against its own baseline, the second against the first.
    again = pytester.runpytest(
        *WIDE, "--sglang-baseline-require", "-k", "decode", f"--sglang-summary={summary}"
    )
    again.assert_outcomes(passed=2)
    rows = {r["config_id"]: r for r in json.loads(summary.read_text())["comparisons"]}
    assert "upgrade" not in rows["base-on-0.5.22"] and rows["base-on-0.5.22"]["baseline"]
    assert rows["base-on-0.5.23"]["upgrade"]["baseline"] == "base-on-0.5.22 (this session)"


def test_a_plan_runs_its_launcher_and_leaves_the_one_in_use(tmp_path: Path) -> None:
    """Planning a config on a named launcher detects that launcher's release and gives it its
    command and environment; the deployer's launcher in use is the same before and after."""
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(INVENTORY)
    spec = resolve_host("local", inventory_path=inventory)
    deployer = make_deployer(spec, transport_for(spec))
    try:
        config = ServerConfig(model_path="/models/Qwen3-8B")
        old = deployer.launch_plan(config.replace(launcher="0.5.22"))
        assert (old.sglang_version, old.env["SGLANG_SIM_VERSION"]) == ("0.5.22", "0.5.22")
        assert old.launcher == tuple(SIM.split())
        assert deployer.spec.launcher is None  # planning changed nothing in use
        own = deployer.launch_plan(config)
        assert "SGLANG_SIM_VERSION" not in own.env and own.sglang_version == "0.5.23"
        with pytest.raises(ConfigError, match=r"has no launcher '0\.5\.21'"):
            deployer.launch_plan(config.replace(launcher="0.5.21"))
        deployer.use_launcher("0.5.22")
        assert deployer.launcher.sglang_version() == "0.5.22"
    finally:
        deployer.close()


def test_a_session_launcher_runs_the_configs_that_name_none(pytester: pytest.Pytester) -> None:
    """``--sglang-launcher``: unchanged tests on one of the host's launchers (test ids kept);
    a config that names its own keeps it; a host without that launcher is one usage error."""
    pytester.makepyfile(
        test_plain="""
import pytest
from pytest_sglang import ServerConfig

BASE = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")

@pytest.mark.parametrize("sglang_server", [BASE, BASE.replace(launcher="0.5.23")], indirect=True)
def test_release(sglang_server):
    assert sglang_server.config.launcher in ("0.5.22", "0.5.23")
"""
    )
    (pytester.path / "sglang-hosts.toml").write_text(INVENTORY)
    summary = pytester.path / "summary.json"
    result = pytester.runpytest("--sglang-launcher", "0.5.22", f"--sglang-summary={summary}", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_release[[]base[]] PASSED*"])
    deployed = [d["config_id"] for d in json.loads(summary.read_text())["deployments"]]
    assert deployed == ["base-on-0.5.22", "base-on-0.5.23"]
    refused = pytester.runpytest("--sglang-launcher", "0.5.21")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["ERROR: host 'local' has no launcher '0.5.21'; its launchers: *"])
