"""Baselines and gates end to end: real pytest sessions (pytester) against the real simulator.

Each ``runpytest`` deploys the simulator as a local process and benchmarks it (single stream,
32 tokens, 3 rounds, TIME_SCALE 0.2: fast, with real timing noise). The gates are widened to
10-20 % here so that this machine's load never trips them; the defaults' statistics are checked
by ``benchmarks/gate_noise.py``. SGLANG_SIM_SPEED_FACTOR=0.8 slows the simulator by 20 %.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import child_env, child_pytest_argv, sim_knobs, use_simulator_env

TEST = """
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.bench import Workload

CFG = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")

@pytest.mark.sglang_gate(median_ttft_ms="off")
@pytest.mark.parametrize("sglang_server", [CFG], indirect=True)
def test_decode(sglang_bench):
    sglang_bench(Workload.single_stream(32), rounds=3)
"""

WIDE = ("--sglang-gate=output_throughput:-10%", "--sglang-gate=median_itl_ms:+20%")


SIM_ENV = {"SGLANG_SIM_STARTUP_SCALE": "0", "SGLANG_SIM_TIME_SCALE": "0.2"}


@pytest.fixture(autouse=True)
def noisy_fast_simulator(monkeypatch: pytest.MonkeyPatch) -> None:
    use_simulator_env(monkeypatch, SIM_ENV, drop=sim_knobs())


#: The module fixtures below are measured once for all the tests here: under pytest-xdist the
#: tests share one worker, so that no other worker measures them again.
pytestmark = pytest.mark.xdist_group("baseline-plugin")


@pytest.fixture(scope="module")
def saved_baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A baselines/ folder with one saved run of TEST, recorded once for the module."""
    root = tmp_path_factory.mktemp("saved")
    (root / "test_saved.py").write_text(TEST)
    run = subprocess.run(
        child_pytest_argv("-q", "test_saved.py", *WIDE, "--sglang-baseline-save"),
        cwd=root,
        env=child_env(SIM_ENV, drop=sim_knobs()),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return root / "baselines"


def with_baseline(pytester: pytest.Pytester, saved: Path) -> None:
    """TEST as test_saved.py (same node ids, so the same baseline key) plus the saved store."""
    pytester.makepyfile(test_saved=TEST)
    pytester.makeconftest(DUMP)
    shutil.copytree(saved, pytester.path / "baselines")


def baseline_files(root: Path) -> list[Path]:
    return sorted((root / "baselines").rglob("*.json"))


def comparisons(summary: Path) -> list[dict[str, object]]:
    """The rows as the plugin's accessor gives them (read back from a conftest dump)."""
    return list(json.loads(summary.read_text()))


DUMP = """
import json
from pytest_sglang.baseline.pytest_plugin import comparison_results

def pytest_sessionfinish(session):
    path = session.config.rootpath / "comparisons.json"
    path.write_text(json.dumps(comparison_results(session.config), default=str))
"""


def test_save_then_compare_and_pass(pytester: pytest.Pytester, saved_baseline: Path) -> None:
    with_baseline(pytester, saved_baseline)
    [path] = baseline_files(pytester.path)
    saved_key = json.loads(path.read_text())["benchmarks"][0]["extra_info"]["workload_key"]
    assert path.parent.name == f"single-stream-{saved_key[:12]}"
    assert path.parent.parent.name.startswith("base-")

    xml = pytester.path / "junit.xml"
    second = pytester.runpytest(
        *WIDE,
        "--sglang-baseline-save",
        "--sglang-baseline-history=2",
        "--sglang-baseline-require",
        f"--junitxml={xml}",
    )
    second.assert_outcomes(passed=1)
    second.stdout.fnmatch_lines(
        [
            "*sglang baseline comparisons*",
            "*test*metric*baseline*current*change*verdict*",
            "*test_decode*output_throughput*",
        ]
    )
    data = json.loads(path.read_text())
    assert len(data["benchmarks"]) == 2
    fp = data["machine_info"]["sglang_fingerprint"]
    assert fp["sglang_version"] == "0.5.23"
    assert fp["gpu_name"].endswith("(simulated)")
    assert fp["model_path"] == "/models/Qwen3-8B"
    entry = data["benchmarks"][-1]
    assert entry["fullname"].endswith("test_decode[base]") and entry["name"] == "test_decode[base]"
    assert entry["stats"]["rounds"] >= 3 and entry["stats"]["mean"] > 0
    assert len(entry["extra_info"]["rounds_values"]["output_throughput"]) >= 3

    rows = comparisons(pytester.path / "comparisons.json")
    assert {r["metric"] for r in rows} == {"output_throughput", "median_itl_ms"}
    assert all(r["verdict"] in ("ok", "improvement") for r in rows), rows
    row = next(r for r in rows if r["metric"] == "output_throughput")
    assert row["direction"] == "higher" and row["threshold_pct"] == 10.0
    assert isinstance(row["p_value"], float) and isinstance(row["delta_pct"], float)
    assert row["workload"] == "single-stream" and row["config_id"] == "base"
    assert row["workload_key"] == saved_key
    props = {p.get("name"): p.get("value") for p in ET.parse(xml).getroot().iter("property")}
    assert props["sglang_gate.output_throughput.verdict"] in ("ok", "improvement")
    assert "sglang_gate.output_throughput.delta_pct" in props

    # The store is pytest-benchmark's format: its own CLI reads it.
    cli = Path(sys.executable).with_name("pytest-benchmark")
    shown = subprocess.run(
        [str(cli), "compare", str(path)], capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    assert "test_decode" in shown.stdout and "Mean" in shown.stdout


def test_injected_regression_fails_after_a_confirm_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, saved_baseline: Path
) -> None:
    with_baseline(pytester, saved_baseline)
    before = baseline_files(pytester.path)[0].read_text()

    monkeypatch.setenv("SGLANG_SIM_SPEED_FACTOR", "0.8")
    result = pytester.runpytest(*WIDE, "--sglang-baseline-save", "--sglang-confirm=1")
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*performance regression vs *baselines*: *worse*confirmed by 1 re-run*",
            "*output_throughput*regression*",
        ]
    )
    rows = comparisons(pytester.path / "comparisons.json")
    row = next(r for r in rows if r["metric"] == "output_throughput")
    assert row["verdict"] == "regression" and row["delta_pct"] < -10
    assert "not saved" in row["reason"]
    assert baseline_files(pytester.path)[0].read_text() == before  # a regression is not saved


def test_fingerprint_mismatch_skips_and_require_mode_errors(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, saved_baseline: Path
) -> None:
    with_baseline(pytester, saved_baseline)

    monkeypatch.setenv("SGLANG_SIM_GPU_NAME", "NVIDIA H100 80GB HBM3")
    skipped = pytester.runpytest(*WIDE)
    skipped.assert_outcomes(passed=1)
    skipped.stdout.fnmatch_lines(
        [
            "*output_throughput*skipped*",
            "*another host fingerprint (gpu_name*H100*(baseline*RTX PRO 6000*not compared*",
        ]
    )
    rows = comparisons(pytester.path / "comparisons.json")
    assert {r["verdict"] for r in rows} == {"skipped"}

    required = pytester.runpytest(*WIDE, "--sglang-baseline-require")
    required.assert_outcomes(failed=1)
    required.stdout.fnmatch_lines(
        ["*baseline required (--sglang-baseline-require): *another host fingerprint*"]
    )


def test_require_mode_errors_without_a_baseline(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TEST)
    result = pytester.runpytest(*WIDE, "--sglang-baseline-require")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*baseline required (--sglang-baseline-require): no baseline for config base, workload single-stream*"
        ]
    )
    assert baseline_files(pytester.path) == []


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--sglang-gate=throughput:5%", "*unknown metric 'throughput'*"),
        ("--sglang-gate=output_throughput:+5%", "*higher is better*would fail improvements*"),
        ("--sglang-gate=median_ttft_ms:5", "*gate for median_ttft_ms: '5' is not a threshold*"),
        ("--sglang-confirm=-1", "*--sglang-confirm*must be >= 0*"),
        ("--sglang-gate-alpha=2", "*--sglang-gate-alpha*between 0 and 1*"),
    ],
)
def test_bad_options_are_one_line_usage_errors(
    pytester: pytest.Pytester, option: str, message: str
) -> None:
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str()


def test_bad_marker_fails_the_test_with_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
import pytest

@pytest.mark.sglang_gate(output_throughput="fast")
def test_x():
    pass
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*@pytest.mark.sglang_gate: gate for output_throughput: 'fast' is not a threshold*"]
    )


def test_baseline_of_older_metric_definitions_is_refused_then_re_recorded(
    pytester: pytest.Pytester, saved_baseline: Path
) -> None:
    with_baseline(pytester, saved_baseline)
    [path] = baseline_files(pytester.path)
    data = json.loads(path.read_text())
    for entry in data["benchmarks"]:  # as saved before the definitions had a version
        entry["extra_info"].pop("metrics_version")
    path.write_text(json.dumps(data))

    refused = pytester.runpytest(*WIDE)
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(
        [
            "*baseline *.json holds metric definitions v1, this plugin measures v2 "
            "(docs/metrics.md); not compared: re-record it with --sglang-baseline-save"
        ]
    )
    assert "Traceback" not in refused.stdout.str()

    again = pytester.runpytest(*WIDE, "--sglang-baseline-save")
    again.assert_outcomes(passed=1)
    rows = comparisons(pytester.path / "comparisons.json")
    assert {r["verdict"] for r in rows} == {"missing"}
    assert "re-recorded as v2" in str(rows[0]["reason"])
    runs = json.loads(path.read_text())["benchmarks"]
    assert [r["extra_info"]["metrics_version"] for r in runs] == [2]  # the old runs are gone
    pytester.runpytest(*WIDE).assert_outcomes(passed=1)


SAME_NAME = """
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.bench import Workload

CFG = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")

# the test is of keys, not of noise: a few-millisecond TTFT median moves 15% under load, and a
# 16-token stream's ITL median several-fold (0.28 -> 1.95 ms once, its chunks coalescing on a
# loaded runner); throughput alone is compared, with room for a busy machine
pytestmark = pytest.mark.sglang_gate(
    median_ttft_ms="off", median_itl_ms="off", output_throughput="-50%"
)

@pytest.mark.parametrize("sglang_server", [CFG], indirect=True)
@pytest.mark.parametrize("api", ["chat", "generate"])
def test_single_stream(sglang_bench, api):
    sglang_bench(Workload.single_stream(32, api=api), rounds=2)

@pytest.mark.parametrize("sglang_server", [CFG], indirect=True)
def test_one_stream(sglang_bench):
    sglang_bench(Workload.single_stream(16), rounds=2)

@pytest.mark.parametrize("sglang_server", [CFG], indirect=True)
def test_chat_again(sglang_bench):
    sglang_bench(Workload.single_stream(32, api="chat"), rounds=2)
"""


def test_workloads_of_one_name_never_share_a_baseline_nor_gate_a_session_s_own_save(
    pytester: pytest.Pytester,
) -> None:
    """Into an empty folder: chat and generate at 32 tokens and chat at 16, all named
    single-stream, are three workloads; the chat one measured by two tests is not gated against
    what the first of them saved."""
    pytester.makepyfile(test_same=SAME_NAME)
    pytester.makeconftest(DUMP)
    saved = pytester.runpytest(*WIDE, "--sglang-baseline-save")
    saved.assert_outcomes(passed=4)
    rows = comparisons(pytester.path / "comparisons.json")
    assert {r["verdict"] for r in rows} == {"missing"}, rows
    again = [r for r in rows if r["nodeid"].endswith("test_chat_again[base]")]
    assert "saved by this session" in str(again[0]["reason"])
    files = baseline_files(pytester.path)
    assert len(files) == 3 and len({f.parent.name for f in files}) == 3
    assert all(f.parent.name.startswith("single-stream-") for f in files)
    runs = sorted(len(json.loads(f.read_text())["benchmarks"]) for f in files)
    assert runs == [1, 1, 2]  # the chat workload: both of its tests' runs

    compared = pytester.runpytest(*WIDE)
    compared.assert_outcomes(passed=4)
    rows = comparisons(pytester.path / "comparisons.json")
    assert {r["verdict"] for r in rows} <= {"ok", "improvement"}, rows
    keys = {r["nodeid"].split("::")[-1]: r["workload_key"] for r in rows}
    assert len(set(keys.values())) == 3
    assert keys["test_chat_again[base]"] == keys["test_single_stream[chat-base]"]


def as_old_layout(path: Path, *, keep_spec: bool = True) -> Path:
    """The saved file as the old layout kept it: under the workload's name alone, its runs
    without the identity (and, ``keep_spec=False``, from before the spec was stored)."""
    data = json.loads(path.read_text())
    for run in data["benchmarks"]:
        for name in ("workload_key", "workload_canonical", "session"):
            run["extra_info"].pop(name)
        if not keep_spec:
            run["extra_info"].pop("workload_spec")
    old = path.parent.with_name("single-stream") / path.name
    old.parent.mkdir()
    old.write_text(json.dumps(data))
    shutil.rmtree(path.parent)
    return old


def test_old_layout_is_read_then_re_keyed_on_save(
    pytester: pytest.Pytester, saved_baseline: Path
) -> None:
    with_baseline(pytester, saved_baseline)
    [new] = baseline_files(pytester.path)
    old = as_old_layout(new)

    read = pytester.runpytest(*WIDE, "--sglang-baseline-require")
    read.assert_outcomes(passed=1)
    rows = comparisons(pytester.path / "comparisons.json")
    assert {r["verdict"] for r in rows} <= {"ok", "improvement"}, rows
    assert "read from the old-layout" in str(rows[0]["reason"])
    assert old.is_file() and not new.exists()  # a compare-only run changes no file

    rekeyed = pytester.runpytest(*WIDE, "--sglang-baseline-save")
    rekeyed.assert_outcomes(passed=1)
    assert not old.exists() and new.is_file()
    assert len(json.loads(new.read_text())["benchmarks"]) == 2  # the old run, then this one
    rows = comparisons(pytester.path / "comparisons.json")
    assert "re-keyed from" in str(rows[0]["reason"])
    pytester.runpytest(*WIDE, "--sglang-baseline-require").assert_outcomes(passed=1)


def test_old_layout_that_does_not_say_its_workload_is_refused_in_one_line(
    pytester: pytest.Pytester, saved_baseline: Path
) -> None:
    with_baseline(pytester, saved_baseline)
    [new] = baseline_files(pytester.path)
    old = as_old_layout(new, keep_spec=False)

    refused = pytester.runpytest(*WIDE)
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(
        [
            "*baseline *single-stream/*.json is keyed by the workload's name only and its runs "
            "do not say which workload they measured; not compared: re-record it with "
            "--sglang-baseline-save*"
        ]
    )
    assert "Traceback" not in refused.stdout.str()

    pytester.runpytest(*WIDE, "--sglang-baseline-save").assert_outcomes(passed=1)
    assert not old.exists() and new.is_file()
    pytester.runpytest(*WIDE, "--sglang-baseline-require").assert_outcomes(passed=1)
