"""Change points on synthetic histories, and the ``history`` CLI on a store written by the real
:class:`BaselineStore` (two fingerprints of one machine: an upgrade in the middle)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_sglang.baseline.__main__ import main
from pytest_sglang.baseline.changepoint import best_split, change_points
from pytest_sglang.baseline.fingerprint import fingerprint_digest
from pytest_sglang.baseline.store import BaselineKey, BaselineStore, round_stats


def noisy(level: float, n: int, rng: random.Random, noise: float = 0.02) -> list[float]:
    return [level * rng.gauss(1.0, noise) for _ in range(n)]


def test_one_step_is_found_where_it_is() -> None:
    rng = random.Random(7)
    values = noisy(1000, 8, rng) + noisy(920, 6, rng)
    [step] = change_points(values)
    assert step.index == 8
    assert step.delta_pct == pytest.approx(-8, abs=2)
    assert step.p_value < 0.001 and step.splits == 11


def test_two_steps_are_both_found() -> None:
    values = [1000.0, 1004.0, 996.0, 1001.0, 999.0, 900.0, 903.0, 897.0, 901.0, 899.0]
    values += [960.0, 957.0, 963.0, 961.0, 959.0]
    steps = change_points(values)
    assert [s.index for s in steps] == [5, 10]
    assert [round(s.delta_pct) for s in steps] == [-10, 7]


def test_noise_alone_seldom_steps() -> None:
    """20 runs of 2 % noise, 300 histories: a step is reported in about alpha of them."""
    rng = random.Random(11)
    alarms = sum(bool(change_points(noisy(1000, 20, rng))) for _ in range(300))
    assert alarms / 300 < 0.06


def test_a_deterministic_series_does_not_step_on_a_wobble() -> None:
    """The noise floor: identical runs then a 0.3 % change is not a step (a simulator, a cache)."""
    assert change_points([1000.0] * 6 + [997.0] * 6) == []
    assert change_points([1000.0] * 6 + [900.0] * 6)[0].index == 6


def test_too_short_a_history_has_no_split() -> None:
    assert best_split([1.0, 2.0, 3.0]) is None  # two runs a side need four
    assert best_split([1.0, 2.0, 3.0], min_size=1) is not None
    assert change_points([]) == []


def test_min_size_one_lets_the_latest_run_be_a_step() -> None:
    values = [1000.0, 1003.0, 997.0, 1001.0, 999.0, 1002.0, 850.0]
    assert change_points(values) == []
    [step] = change_points(values, min_size=1)
    assert step.index == 6


# -- the CLI over a real store -------------------------------------------------------------------

FP_OLD = {"gpu_name": "H100", "gpu_count": 8, "sglang_version": "0.5.22", "torch_version": "2.8.0"}
FP_NEW = {**FP_OLD, "sglang_version": "0.5.23", "torch_version": "2.9.1"}
FP_OTHER_GPU = {**FP_OLD, "gpu_name": "B200"}


def run_entry(value: float, day: int, commit: str, **extra: object) -> dict[str, object]:
    rounds = [value * f for f in (0.995, 1.0, 1.005)]
    return {
        "name": "test_decode[base]",
        "fullname": "test_x.py::test_decode[base]",
        "stats": round_stats([0.1, 0.1, 0.1]),
        "extra_info": {
            "rounds_values": {"output_throughput": rounds},
            "saved_at": f"2025-06-{day:02d}T10:00:00+00:00",
            "commit_info": {"id": commit * 40, "branch": "main", "dirty": False},
            **extra,
        },
    }


def save(store: BaselineStore, fp: dict[str, object], value: float, day: int, commit: str) -> None:
    key = BaselineKey("base", "0123456789abcdef", "single-stream", fingerprint_digest(fp), "w" * 16)
    store.save(key, fp, run_entry(value, day, commit))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """Six runs on 0.5.22 (commit a), then six on 0.5.23 (commit b) 8 % slower, and two on
    another GPU (a separate history)."""
    root = tmp_path / "baselines"
    s = BaselineStore(root)
    rng = random.Random(3)
    for day, value in enumerate(noisy(1000, 6, rng, 0.01), start=1):
        save(s, FP_OLD, value, day, "a")
    for day, value in enumerate(noisy(920, 6, rng, 0.01), start=7):
        save(s, FP_NEW, value, day, "b")
    for day, value in enumerate((2000.0, 2010.0), start=1):
        save(s, FP_OTHER_GPU, value, day, "c")
    return root


def test_history_cli_names_the_step_with_versions_and_commits(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "--metric", "output_throughput", str(store)]) == 0
    out = capsys.readouterr().out
    second, first = sorted(out.split("\n\n"), key=lambda block: "B200" in block)
    assert "on 8 x B200: output_throughput, 2 runs" in first and "no step" in first
    assert "on 8 x H100: output_throughput, 12 runs" in second
    lines = second.splitlines()
    step = next(line for line in lines if "step before run 7" in line)
    assert "(-7.5%), p=" in step
    before = next(line for line in lines if "last before:" in line)
    after = next(line for line in lines if "first after:" in line)
    assert "SGLang 0.5.22" in before and "torch 2.8.0" in before and "commit aaaaaaaaaaaa" in before
    assert "SGLang 0.5.23" in after and "torch 2.9.1" in after and "commit bbbbbbbbbbbb" in after
    header = next(line for line in lines if line.strip().startswith("run"))
    assert "SGLang" in header and "torch" in header and "commit" in header


def test_history_cli_json_and_module_entry_point(store: Path) -> None:
    cli = [sys.executable, "-m", "pytest_sglang.baseline", "history", "--json"]
    shown = subprocess.run(
        [*cli, "--metric", "output_throughput", str(store)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    h100 = next(h for h in data if h["hardware"]["gpu_name"] == "H100")
    assert [s["index"] for s in h100["steps"]] == [6]
    assert h100["runs"][0]["software"]["sglang_version"] == "0.5.22"
    assert "SGLang 0.5.23" in h100["steps"][0]["first_after"]


def test_history_cli_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "--metric", "speed", str(tmp_path)]) == 2
    assert "unknown metric 'speed'" in capsys.readouterr().out
    assert main(["history", "--metric", "output_throughput", str(tmp_path / "nope")]) == 2
    assert "no such baseline directory" in capsys.readouterr().err
