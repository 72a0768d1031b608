"""Upgrade comparisons end to end: two simulator "releases" over real HTTP, real pytest sessions.

The baseline is saved once for the module by a child session whose host plays SGLang 0.5.22
(``SGLANG_SIM_VERSION`` in the inventory's ``env`` for the host, so the version detection and
its caches see another launcher). Each test then runs a session whose host plays 0.5.23: the
fingerprint differs in ``sglang_version`` only, so the run is gated against the 0.5.22 baseline.
``SGLANG_SIM_GPU_MEMORY_GB=40`` stands for a release whose defaults changed: the simulator
resolves a smaller ``chunked_prefill_size``, ``mem_fraction_static`` and CUDA-graph batch sizes
with the same command line (a GPU's memory is not in the fingerprint; the release is).
Only output throughput is gated (10 %, as in test_baseline_plugin.py): the per-token ITL of 32
tokens on a loaded two-core machine swings between bursts and steady streams, and the flow under
test is the upgrade's, not a metric's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from helpers import (
    SIM_LAUNCH,
    child_env,
    child_pytest_argv,
    local_entry,
    sim_knobs,
    use_simulator_env,
)

from pytest_sglang import ServerConfig
from pytest_sglang.baseline.upgrade import settings_diff

TEST = """
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.bench import Workload

CFG = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")

@pytest.mark.sglang_gate(median_ttft_ms="off", median_itl_ms="off")
@pytest.mark.parametrize("sglang_server", [CFG], indirect=True)
def test_decode(sglang_bench):
    sglang_bench(Workload.single_stream(32), rounds=3)
"""

WIDE = ("--sglang-gate=output_throughput:-10%",)
SIM_ENV = {"SGLANG_SIM_STARTUP_SCALE": "0", "SGLANG_SIM_TIME_SCALE": "0.2"}
OLD = {"SGLANG_SIM_VERSION": "0.5.22"}
NEW = {"SGLANG_SIM_VERSION": "0.5.23"}
CHANGED_DEFAULTS = {**NEW, "SGLANG_SIM_GPU_MEMORY_GB": "40"}


@pytest.fixture(autouse=True)
def noisy_fast_simulator(monkeypatch: pytest.MonkeyPatch) -> None:
    use_simulator_env(monkeypatch, SIM_ENV, drop=sim_knobs())
    for name in ("GITHUB_ACTOR", "GITLAB_USER_LOGIN", "BUILD_USER_ID"):
        monkeypatch.delenv(name, raising=False)


def test_settings_are_compared_by_field_across_releases() -> None:
    """0.5.18 logs cuda_graph_max_bs, 0.5.23 cuda_graph_max_bs_decode: one field, no change."""
    old = {"cuda_graph_max_bs": 256, "chunked_prefill_size": 8192, "port": 30000, "tp_size": 2}
    new = {"cuda_graph_max_bs_decode": 256, "chunked_prefill_size": 4096, "port": 31000}
    new |= {"tp_size": 4, "cfg": {"decode": {"max_bs": 32}}, "absent_is_none": None}
    diff = settings_diff(old, "0.5.18", new, "0.5.23", {"tp_size": 4})
    assert diff == [
        {"name": "cfg.decode.max_bs", "before": None, "after": 32, "source": "default"},
        {"name": "chunked_prefill_size", "before": 8192, "after": 4096, "source": "default"},
        {"name": "tp_size", "before": 2, "after": 4, "source": "command line"},
    ]  # the port differs at every start and is left out


def inventory(folder: Path, env: Mapping[str, str]) -> None:
    (folder / "sglang-hosts.toml").write_text(local_entry("local", env))


#: The module fixtures below are measured once for all the tests here: under pytest-xdist the
#: tests share one worker, so that no other worker measures them again.
pytestmark = pytest.mark.xdist_group("upgrade")


@pytest.fixture(scope="module")
def old_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A baselines/ folder with one run of TEST measured on the simulator playing 0.5.22."""
    root = tmp_path_factory.mktemp("old")
    (root / "test_saved.py").write_text(TEST)
    inventory(root, OLD)
    run = subprocess.run(
        child_pytest_argv("-q", "test_saved.py", *WIDE, "--sglang-baseline-save"),
        cwd=root,
        env=child_env(SIM_ENV, drop=sim_knobs()),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return root / "baselines"


def session(pytester: pytest.Pytester, saved: Path, env: Mapping[str, str]) -> None:
    pytester.makepyfile(test_saved=TEST)
    shutil.copytree(saved, pytester.path / "baselines")
    inventory(pytester.path, env)


def files(root: Path) -> list[Path]:
    return sorted((root / "baselines").rglob("*.json"))


def rows_of(summary: Path) -> list[dict[str, object]]:
    return list(json.loads(summary.read_text())["comparisons"])


def test_new_release_is_gated_against_the_old_one_with_the_settings_that_changed(
    pytester: pytest.Pytester, old_release: Path
) -> None:
    session(pytester, old_release, CHANGED_DEFAULTS)
    summary, page = pytester.path / "summary.json", pytester.path / "summary.html"
    result = pytester.runpytest(
        *WIDE,
        "--sglang-baseline-require",  # the comparison happened: required is satisfied
        f"--sglang-summary={summary}",
        f"--sglang-html={page}",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*sglang baseline comparisons*",
            "*test_decode[[]base[]]*output_throughput*",
            "test_decode[[]base[]] upgrade: SGLang 0.5.22 -> 0.5.23: output_throughput *%, "
            "p=*; 8 settings in effect changed",
            "    chunked_prefill_size 8192 -> 4096 (default)",
        ]
    )
    result.stdout.fnmatch_lines(["    mem_fraction_static 0.858 -> 0.822 (default)"])
    rows = rows_of(summary)
    assert {r["verdict"] for r in rows} <= {"ok", "improvement"}, rows
    upgrade = rows[0]["upgrade"]
    assert isinstance(upgrade, dict)
    assert upgrade["from"] == {"sglang_version": "0.5.22"}
    assert upgrade["to"] == {"sglang_version": "0.5.23"}
    changed = {c["name"]: c for c in upgrade["settings_changed"]}
    assert changed["chunked_prefill_size"] == {
        "name": "chunked_prefill_size",
        "before": 8192,
        "after": 4096,
        "source": "default",
    }
    assert changed["cuda_graph_config.decode.max_bs"]["after"] == 32
    assert "model_path" not in changed  # the command line is the same
    assert str(upgrade["summary"]).startswith("SGLang 0.5.22 -> 0.5.23: output_throughput ")
    html = page.read_text()
    assert "SGLang 0.5.22 -&gt; 0.5.23" in html and "chunked_prefill_size" in html
    assert len(files(pytester.path)) == 1  # compared, not saved


def test_upgrade_regression_fails_then_accepting_it_leaves_a_record(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, old_release: Path
) -> None:
    slower = {**NEW, "SGLANG_SIM_SPEED_FACTOR": "0.8"}
    session(pytester, old_release, slower)
    [old] = files(pytester.path)

    refused = pytester.runpytest(*WIDE, "--sglang-baseline-save")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(
        [
            "*performance regression after an upgrade (SGLang 0.5.22 -> 0.5.23) vs *baselines*: "
            "output_throughput *% worse*; accept it as the new baseline with "
            "--sglang-baseline-accept-upgrade*",
            "test_decode[[]base[]] upgrade: SGLang 0.5.22 -> 0.5.23: output_throughput -*%, "
            "p=* (regression)*",
        ]
    )
    assert files(pytester.path) == [old]  # a regression is never saved silently

    monkeypatch.setenv("GITHUB_ACTOR", "alice")
    accepted = pytester.runpytest(*WIDE, "--sglang-baseline-accept-upgrade")
    accepted.assert_outcomes(passed=1)
    accepted.stdout.fnmatch_lines(["*test_decode*output_throughput*accepted*"])
    [new] = [f for f in files(pytester.path) if f != old]
    data = json.loads(new.read_text())
    assert data["machine_info"]["sglang_fingerprint"]["sglang_version"] == "0.5.23"
    assert data["machine_info"]["sglang_server_args"]["model_path"] == "/models/Qwen3-8B"
    [run] = data["benchmarks"]
    record = run["extra_info"]["upgrade"]
    assert record["accepted"] is True and record["by"] == "alice" and record["at"]
    assert record["from"] == {"sglang_version": "0.5.22"}
    assert record["to"] == {"sglang_version": "0.5.23"}
    assert record["baseline"] == str(old)
    throughput = record["metrics"]["output_throughput"]
    assert throughput["verdict"] == "accepted" and throughput["delta_pct"] < -10
    assert isinstance(throughput["p_value"], float) and throughput["p_value"] < 0.05
    assert run["extra_info"]["commit_info"]["id"]  # the tests' commit, for the history
    assert len(run["extra_info"]["server_args_digest"]) == 16

    # From now on the new release has its own baseline: a plain comparison, no upgrade line.
    again = pytester.runpytest(*WIDE, "--sglang-baseline-require")
    again.assert_outcomes(passed=1)
    assert "upgrade:" not in again.stdout.str()


def test_another_gpu_refuses_the_comparison_naming_the_fields(
    pytester: pytest.Pytester, old_release: Path
) -> None:
    session(pytester, old_release, {**NEW, "SGLANG_SIM_GPU_NAME": "NVIDIA H100 80GB HBM3"})
    result = pytester.runpytest(*WIDE)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*output_throughput*skipped*",
            "test_decode[[]base[]] output_throughput: baseline for config base, workload "
            "single-stream * was measured on another host fingerprint (gpu_name 'NVIDIA H100 "
            "80GB HBM3 (simulated)' (baseline '* (simulated)'); sglang_version '0.5.23' "
            "(baseline '0.5.22')); not compared",
        ]
    )
    assert "upgrade:" not in result.stdout.str()


def test_bisect_measures_two_launchers_one_after_the_other(tmp_path: Path) -> None:
    """Two inventory entries on this machine that differ in the release they run: the second is
    gated against the first in a scratch store, and the exit status says it regressed."""
    (tmp_path / "test_saved.py").write_text(TEST)
    slower = {**NEW, "SGLANG_SIM_SPEED_FACTOR": "0.8"}
    (tmp_path / "sglang-hosts.toml").write_text(
        local_entry("old", OLD) + "\n" + local_entry("new", slower)
    )
    keep = tmp_path / "scratch"
    bisect = [sys.executable, "-m", "pytest_sglang.baseline", "bisect", "--keep", str(keep)]
    run = subprocess.run(
        [*bisect, "--before", "old", "--after", "new", "test_saved.py", "--", *WIDE],
        cwd=tmp_path,
        env=child_env(SIM_ENV, drop=sim_knobs()),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-2000:]
    lines = [line for line in run.stdout.splitlines() if line.startswith("[bisect] test_")]
    assert len(lines) == 1, run.stdout[-3000:]
    assert lines[0].startswith(
        "[bisect] test_decode[base] old -> new: SGLang 0.5.22 -> 0.5.23: output_throughput -"
    )
    assert "(regression)" in lines[0]
    assert len(list((keep / "baselines").rglob("*.json"))) == 1  # only the before-run saved
    assert not (tmp_path / "baselines").exists()  # the project's own store is untouched


def launchers_entry(name: str, launchers: Mapping[str, Mapping[str, str]]) -> str:
    """An inventory entry for the simulator on this machine with named launchers, each the
    simulator with its own ``env``."""
    lines = [f'[hosts.{name}]\nssh = "local"\n\n[hosts.{name}.launchers]']
    for launcher, env in launchers.items():
        table = ", ".join(f'{k} = "{v}"' for k, v in env.items())
        lines.append(f'"{launcher}" = {{ launch = "{SIM_LAUNCH}", env = {{ {table} }} }}')
    return "\n".join(lines) + "\n"


def bisect_run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    bisect = [sys.executable, "-m", "pytest_sglang.baseline", "bisect", *args]
    return subprocess.run(
        bisect,
        cwd=folder,
        env=child_env(SIM_ENV, drop=sim_knobs()),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_bisect_measures_two_launchers_of_one_host(tmp_path: Path) -> None:
    """Two of one host's named launchers, each a release: the tests run on the first, then on
    the second gated against it (an upgrade), under the config's own test ids and baseline."""
    (tmp_path / "test_saved.py").write_text(TEST)
    slower = {**NEW, "SGLANG_SIM_SPEED_FACTOR": "0.8"}
    (tmp_path / "sglang-hosts.toml").write_text(
        launchers_entry("gpu", {"0.5.22": OLD, "0.5.23": slower})
    )
    keep = tmp_path / "scratch"
    run = bisect_run(
        tmp_path,
        *("--sglang-host", "gpu", "--before", "0.5.22", "--after", "0.5.23"),
        *("--keep", str(keep), "test_saved.py", "--", *WIDE),
    )
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-2000:]
    commands = [line for line in run.stdout.splitlines() if line.startswith("[bisect] -m pytest")]
    assert [c.split("--sglang-host ")[1].split(" --sglang-baseline")[0] for c in commands] == [
        "gpu --sglang-launcher 0.5.22",
        "gpu --sglang-launcher 0.5.23",
    ]
    lines = [line for line in run.stdout.splitlines() if line.startswith("[bisect] test_")]
    assert len(lines) == 1, run.stdout[-3000:]
    assert lines[0].startswith(
        "[bisect] test_decode[base] 0.5.22 -> 0.5.23 on gpu: SGLang 0.5.22 -> 0.5.23: "
        "output_throughput -"
    )
    assert "(regression)" in lines[0]
    # saved under the config less its launcher: the second release found the first's baseline
    [saved] = (keep / "baselines").rglob("*.json")
    config = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")
    assert saved.parent.parent.name == f"base-{config.digest}"
    summary = json.loads((keep / "summary.json").read_text())
    assert [d["config_id"] for d in summary["deployments"]] == ["base-on-0.5.23"]
    assert not (tmp_path / "baselines").exists()  # the project's own store is untouched


def test_bisect_refuses_a_launcher_the_host_lacks_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "test_saved.py").write_text(TEST)
    (tmp_path / "sglang-hosts.toml").write_text(
        launchers_entry("gpu", {"0.5.22": OLD, "0.5.23": NEW})
    )
    run = bisect_run(
        tmp_path, "--sglang-host", "gpu", "--before", "0.5.21", "--after", "0.5.23", "test_saved.py"
    )
    assert run.returncode == 4, run.stdout[-3000:] + run.stderr[-2000:]
    assert (
        "ERROR: host 'gpu' has no launcher '0.5.21'; its launchers: '0.5.22', '0.5.23' "
        f"([hosts.gpu.launchers] in {tmp_path / 'sglang-hosts.toml'})"
    ) in run.stderr
    assert "[bisect] the run on 0.5.21 failed (exit 4); nothing to compare with" in run.stdout
    same = bisect_run(tmp_path, "--sglang-host", "gpu", "--before", "a", "--after", "a", "t.py")
    assert same.returncode == 2 and "both 'a'" in same.stdout
