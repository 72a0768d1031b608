"""What the terminal shows a person: golden snippets of each table, and the run's shape.

The tables are rendered from fixed rows (exact goldens: widths fitted, ids whole, no repeated
words); the sessions run the real simulator (pytester), where the figures vary and the shape is
checked: the first run's one line about baselines, "saved N baselines", pytest-benchmark's own
table hidden unless asked for, and the live lines on a terminal (a pty through ``script``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import child_env, sim_knobs

from pytest_sglang.baseline.pytest_plugin import comparisons_table, verdict_notes
from pytest_sglang.bench.pytest_plugin import benchmarks_table
from pytest_sglang.plugin import deployments_table
from pytest_sglang.terminal import display_test_ids

SIM_ENV = {"SGLANG_SIM_STARTUP_SCALE": "0", "SGLANG_SIM_TIME_SCALE": "0.2"}

TEST = """
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.bench import Workload

CFG = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")

@pytest.mark.parametrize("sglang_server", [CFG], indirect=True)
def test_decode(sglang_bench):
    sglang_bench(Workload.single_stream(16), rounds=2)
"""


def text(table: object) -> list[str]:
    return [line for line, _ in table.lines()]  # type: ignore[attr-defined]


def row(nodeid: str, metric: str, verdict: str = "ok", **values: object) -> dict[str, object]:
    return {
        "nodeid": nodeid,
        "metric": metric,
        "verdict": verdict,
        "baseline": values.get("baseline"),
        "current": values.get("current"),
        "delta_pct": values.get("delta_pct"),
        "reason": values.get("reason", ""),
    }


# -- goldens ------------------------------------------------------------------------------------


def test_deployments_table_golden() -> None:
    rows = [
        {"host": "local", "config_id": "eagle-s1-k1-tp4", "outcome": "ready", "ready_s": 4.61},
        {"host": "llm-two", "config_id": "eagle-s2-k1-tp4", "outcome": "ready", "ready_s": 112.0},
    ]
    assert text(deployments_table(rows)) == [
        "host     config           outcome  ready after",
        "local    eagle-s1-k1-tp4  ready           4.6s",
        "llm-two  eagle-s2-k1-tp4  ready         112.0s",
    ]
    failed = {"host": "local", "config_id": "tp8", "outcome": "failed", "ready_s": None}
    failed |= {"reason": "oom", "message": "CUDA out of memory"}
    assert text(deployments_table([*rows[:1], failed])) == [
        "host   config           outcome  ready after  reason",
        "local  eagle-s1-k1-tp4  ready           4.6s",
        "local  tp8              failed             -  oom: CUDA out of memory",
    ]


def test_benchmarks_table_golden() -> None:
    result = {
        "config_id": "eagle-s3-k1-tp4",
        "workload": "single-stream",
        "output_throughput": 229.43,
        "median_ttft_ms": 17.8,
        "median_itl_ms": 4.321,
        "accept_length": 3.18,
        "completed": 1,
        "failed": 0,
    }
    assert text(benchmarks_table([result])) == [
        "config           workload       out tok/s  TTFT p50 ms  ITL p50 ms  accept  failed",
        "eagle-s3-k1-tp4  single-stream      229.4         17.8        4.32    3.18     0/1",
    ]


def test_comparisons_table_keeps_long_ids_whole_and_says_them_once() -> None:
    a = "scenarios/test_seed_sweep.py::test_concurrency_sweep[eagle-s2-k1-tp4-concurrency-16]"
    b = "scenarios/test_seed_sweep.py::test_concurrency_sweep[eagle-s2-k1-tp4-concurrency-32]"
    rows = [
        row(a, "output_throughput", baseline=1203.1, current=1190.0, delta_pct=-1.09),
        row(a, "median_ttft_ms", baseline=40.0, current=41.0, delta_pct=2.5),
        row(b, "output_throughput", "regression", baseline=2000.0, current=1800.0, delta_pct=-10,
            reason="10.0% worse > 5% and significant (p=0.01 < 0.05, n=3 vs 3)"),
    ]  # fmt: skip
    names = display_test_ids(r["nodeid"] for r in rows)  # type: ignore[misc]
    assert text(comparisons_table(rows, names)) == [
        "test                                                    metric             baseline  current  change  verdict",
        "test_concurrency_sweep[eagle-s2-k1-tp4-concurrency-16]  output_throughput      1203     1190   -1.1%  ok",
        "                                                        median_ttft_ms           40       41   +2.5%  ok",
        "test_concurrency_sweep[eagle-s2-k1-tp4-concurrency-32]  output_throughput      2000     1800  -10.0%  regression",
    ]
    assert verdict_notes(rows, names) == [
        "test_concurrency_sweep[eagle-s2-k1-tp4-concurrency-32] output_throughput: 10.0% worse "
        "> 5% and significant (p=0.01 < 0.05, n=3 vs 3)"
    ]


def test_same_test_name_in_two_files_shows_the_whole_node_id() -> None:
    ids = ["a/test_x.py::test_decode[s1]", "b/test_x.py::test_decode[s1]", "a/test_y.py::test_z"]
    assert display_test_ids([*ids, "a/test_y.py::test_z@sglang-0123abcd"]) == {
        ids[0]: ids[0],
        ids[1]: ids[1],
        ids[2]: "test_z",
        "a/test_y.py::test_z@sglang-0123abcd": "test_z",
    }


# -- sessions on the simulator ------------------------------------------------------------------


@pytest.fixture
def simulator_env() -> dict[str, str]:
    return dict(SIM_ENV)


pytestmark = pytest.mark.usefixtures("fast_simulator")


def section(result: pytest.RunResult, title: str) -> list[str]:
    """The lines of a terminal-summary section, up to the next one."""
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if f" {title} " in line and line[0] in "=-")
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i][:3] in ("===", "---")), len(lines)
    )
    return lines[start + 1 : end]


def test_first_run_then_save_run_say_it_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_first=TEST)
    first = pytester.runpytest("-p", "no:cacheprovider")
    first.assert_outcomes(passed=1)
    (line,) = section(first, "sglang baselines")  # pytester adds its --basetemp to the args
    assert line.startswith(
        "no baselines yet for the 1 benchmark in baselines/; record them with: "
        "pytest -p no:cacheprovider --basetemp="
    )
    assert line.endswith(" --sglang-baseline-save")
    assert "sglang baseline comparisons" not in first.stdout.str()
    deployments = section(first, "sglang deployments")
    assert deployments[0] == "host   config  outcome  ready after"
    assert deployments[1].startswith("local  base    ready   ") and deployments[1].endswith("s")
    assert len(deployments) == 2
    assert section(first, "sglang benchmarks")[0].startswith("config  workload       out tok/s")
    # pytest-benchmark's own wall-time table is hidden: every benchmark is an sglang_bench
    assert "Name (time in" not in first.stdout.str()

    saved = pytester.runpytest("-p", "no:cacheprovider", "--sglang-baseline-save")
    assert section(saved, "sglang baselines") == ["saved 1 baseline to baselines/"]

    compared = pytester.runpytest("-p", "no:cacheprovider", "--sglang-benchmark-table")
    table = section(compared, "sglang baseline comparisons")
    assert table[0].split() == ["test", "metric", "baseline", "current", "change", "verdict"]
    assert table[1].startswith("test_decode[base]  output_throughput ")
    assert all(line.startswith(" " * len("test_decode[base]")) for line in table[2:4])
    assert "Name (time in" in compared.stdout.str()  # asked for


def run_on_a_terminal(cwd: Path, *args: str) -> str:
    """``pytest *args`` on a pseudo-terminal (``script``): what a person at a terminal sees.
    The startup is scaled to about 2 s, so that its phases are seen."""
    command = " ".join([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args])
    knobs = {**SIM_ENV, "SGLANG_SIM_STARTUP_SCALE": "0.02", "COLUMNS": "120"}
    env = child_env(knobs, drop=sim_knobs())
    run = subprocess.run(
        ["script", "-qec", command, "/dev/null"],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=180,
    )
    out = run.stdout.decode(errors="replace")  # as bytes: text mode would turn "\r" into "\n"
    assert run.returncode == 0, out[-3000:]
    return out


LONG = """
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.bench import Workload

CFG = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")

@pytest.mark.parametrize("sglang_server", [CFG], indirect=True)
def test_long(sglang_bench):
    sglang_bench(Workload.single_stream(64, requests=32), rounds=1)
"""


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1) for a pty")
def test_live_lines_on_a_terminal_and_none_under_quiet(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_long=LONG)
    out = run_on_a_terminal(pytester.path)
    # the phases rewrite one line ("\r"), the last stays; the benchmark's line goes at its end
    phases = [p for p in out.split("\r") if p.startswith("[sglang] local base: ")]
    assert len(phases) >= 3, out
    assert "[sglang] local base: ready and verified in " in out
    assert "[sglang] base single-stream round 1/1: " in out
    live = out.split("[sglang] base single-stream round 1/1: ")[1].split("\r")[0]
    assert "/32 requests, " in live and " tok/s, " in live and "s elapsed, ETA " in live
    quiet = run_on_a_terminal(pytester.path, "-q")
    assert "single-stream round" not in quiet
