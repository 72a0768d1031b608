"""The sglang_quality fixture end to end: real pytest sessions (pytester) on the simulator.

The simulator's quality stand-in (pytest_sglang.sim.quality) answers the built-in task right
with probability 0.85, 0.79 under ``--kv-cache-dtype fp8_e4m3``; ``SGLANG_SIM_FAULT=
diverge-after=N`` makes speculative decoding change greedy outputs from token N on.
"""

from __future__ import annotations

import json
import re

import pytest

EQUIVALENCE = """
import pytest
from pytest_sglang import ServerConfig

BASE = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")
SPEC = BASE.model_copy(update=dict(speculative_algorithm="EAGLE", speculative_num_steps=2,
                                   speculative_eagle_topk=1))

@pytest.mark.parametrize("sglang_server", [BASE, SPEC], indirect=True)
def test_same_outputs(sglang_server, sglang_quality):
    result = sglang_quality.equivalence(BASE, output_tokens=32, min_rate=0.99)
    print("RATE", sglang_server.config_id, result.exact_match_rate, result.first_divergence)
"""

ACCURACY = """
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.quality import Task

CFG = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")

@pytest.mark.parametrize("sglang_server", [CFG], indirect=True)
def test_accuracy(sglang_server, sglang_quality):
    result = sglang_quality.accuracy(Task.arithmetic(500))
    print("ACCURACY", result.accuracy, result.ci)
"""

AGAINST_REFERENCE = """
import pytest
from pytest_sglang import ServerConfig

BASE = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")
FP8 = BASE.model_copy(update=dict(kv_cache_dtype="fp8_e4m3"))

@pytest.mark.parametrize("sglang_server", [BASE, FP8], indirect=True)
def test_accuracy(sglang_server, sglang_quality):
    sglang_quality.accuracy(reference=BASE)
"""


pytestmark = pytest.mark.usefixtures("fast_simulator")


def test_equivalence_holds_without_the_fault(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(EQUIVALENCE)
    summary = pytester.path / "summary.json"
    result = pytester.runpytest("-s", f"--sglang-summary={summary}")
    result.assert_outcomes(passed=2)
    rates = re.findall(r"RATE (\S+) (\S+) (\S+)", result.stdout.str())
    assert [(cid, float(rate)) for cid, rate, _ in rates] == [("base", 1.0), ("eagle-s2-k1", 1.0)]
    data = json.loads(summary.read_text())
    assert data["quality_holds"] == {"base": True, "eagle-s2-k1": True}
    # the reference agreed with itself on a second pass: the floor is 100 %
    assert [r["noise_floor"] for r in data["quality"]] == [1.0, 1.0]
    assert [r["floor_verdict"] for r in data["quality"]] == ["reference", "within"]
    result.stdout.fnmatch_lines(
        ["*sglang quality*", "*eagle-s2-k1*exact_match_rate*100.0%*100%*holds, no baseline"]
    )
    assert "noise floor:" not in result.stdout.str()


def test_equivalence_catches_the_divergence_fault(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_SIM_FAULT", "diverge-after=8")
    pytester.makepyfile(EQUIVALENCE)
    summary = pytester.path / "summary.json"
    allure = pytester.path / "allure"
    result = pytester.runpytest("-s", f"--sglang-summary={summary}", f"--alluredir={allure}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*exact_match_rate 0.0% vs base is below the floor 99.0%*first divergent token at 8*"]
    )
    data = json.loads(summary.read_text())
    assert data["quality_holds"] == {"base": True, "eagle-s2-k1": False}
    [row] = [r for r in data["quality"] if r["config_id"] == "eagle-s2-k1"]
    assert row["first_divergence"] == 8 and row["value"] == 0.0
    pairs = [
        json.loads(p.read_text())
        for p in allure.glob("*-attachment.json")
        if "divergent_pairs" in p.read_text()
    ]
    diverged = [p for p in pairs if p["exact_match_rate"] == 0.0]
    assert diverged and diverged[0]["divergent_pairs"][0]["position"] == 8


def _regression_line(result: pytest.RunResult) -> str:
    [line] = [ln for ln in result.stdout.lines if ln.startswith("quality regression vs")]
    return line


def test_accuracy_gate_passes_unchanged_and_fails_a_drop(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(ACCURACY)
    saved = pytester.runpytest("-s", "--sglang-baseline-save")
    saved.assert_outcomes(passed=1)
    found = re.search(r"ACCURACY (\S+)", saved.stdout.str())
    assert found is not None
    accuracy = float(found.group(1))
    assert 0.80 <= accuracy <= 0.90
    [path] = sorted((pytester.path / "baselines").rglob("*.json"))
    assert path.parent.name.startswith("quality-arithmetic-500-")
    stored = json.loads(path.read_text())
    entry = stored["benchmarks"][-1]["extra_info"]
    assert entry["correct"] == round(accuracy * 500) and entry["total"] == 500
    # which items it got right, compactly: one hex digit per four items
    assert len(entry["outcomes"]) == 125 and entry["items_digest"] in path.parent.name

    same = pytester.runpytest("--sglang-gate=accuracy:-1%", "--sglang-baseline-require")
    same.assert_outcomes(passed=1)
    same.stdout.fnmatch_lines(["*test_accuracy*accuracy*ok*"])

    monkeypatch.setenv("SGLANG_SIM_ACCURACY", "0.79")  # a build that answers 6 points worse
    worse = pytester.runpytest("--sglang-gate=accuracy:-1%")
    worse.assert_outcomes(failed=1)
    line = _regression_line(worse)
    assert re.search(r"accuracy 8\d\.\d% -> 7\d\.\d% \(-\d\.\d points\)", line), line
    # the same items, paired: the worse build is wrong on a superset of the items
    assert re.search(
        r"p=\S+ < 0\.05, McNemar exact, (\d+) discordant: \1 worse/0 better, \d+/500 vs \d+/500",
        line,
    ), line
    assert re.search(r"detectable drop at 80% power: \d\.\d points at \d", line), line

    # a run stored before per-item outcomes were kept: the unpaired test
    for run in stored["benchmarks"]:
        del run["extra_info"]["outcomes"]
    path.write_text(json.dumps(stored))
    older = pytester.runpytest("--sglang-gate=accuracy:-1%")
    older.assert_outcomes(failed=1)
    line = _regression_line(older)
    assert re.search(r"p=0\.\d+ < 0\.05, unpaired z test, \d+/500 vs \d+/500", line), line


def test_fp8_kv_cache_fails_against_its_reference(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(AGAINST_REFERENCE)
    summary = pytester.path / "summary.json"
    result = pytester.runpytest(f"--sglang-summary={summary}")
    result.assert_outcomes(passed=1, failed=1)
    line = _regression_line(result)
    assert line.startswith("quality regression vs reference base: accuracy 8"), line
    assert "McNemar exact" in line and "/0 better" in line, line
    data = json.loads(summary.read_text())
    assert data["quality_holds"] == {"base": True, "kv-fp8_e4m3": False}


MARKED = """
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.bench import Workload

BASE = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")
SPEC = BASE.model_copy(update=dict(speculative_algorithm="EAGLE", speculative_num_steps=3,
                                   speculative_eagle_topk=1))

@pytest.mark.parametrize("sglang_server", [BASE, SPEC], indirect=True)
def test_speed_and_outputs(sglang_bench, sglang_quality):
    sglang_bench(Workload.single_stream(64), rounds=1)
    sglang_quality.equivalence(BASE, output_tokens=16, min_rate=0.9)
"""


def test_a_faster_config_that_fails_quality_is_marked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_SIM_TIME_SCALE", "0.2")  # EAGLE-3 steps: about 2x the speed
    monkeypatch.setenv("SGLANG_SIM_FAULT", "diverge-after=4")
    pytester.makepyfile(MARKED)
    html_path, allure = pytester.path / "summary.html", pytester.path / "allure"
    # in a subprocess: the HTML summary's sweep plot imports matplotlib, which cannot be
    # imported again in this process once pytester's in-process run has unloaded it
    result = pytester.runpytest_subprocess(f"--sglang-html={html_path}", f"--alluredir={allure}")
    result.assert_outcomes(passed=1, failed=1)
    page = html_path.read_text()
    assert '<table class="sglang-quality">' in page
    assert page.count("fails (faster but fails quality)") == 1
    assert any("quality next to speed" in p.read_text() for p in allure.glob("*-result.json"))
    result.stdout.fnmatch_lines(
        [
            "*sglang quality*",
            "base*exact_match_rate*100.0%*holds, no baseline",
            "eagle-s3-k1*exact_match_rate*0.0%*fails (faster but fails quality)",
        ]
    )


NOISY = """
import pytest
from pytest_sglang import ServerConfig

# torch_native: the CPU attention backend, where SGLang refuses deterministic inference
BASE = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b",
                    attention_backend="torch_native")
METRICS = BASE.model_copy(update=dict(name="metrics", extra_args=("--enable-metrics",)))
SPEC = BASE.model_copy(update=dict(speculative_algorithm="EAGLE", speculative_num_steps=2,
                                   speculative_eagle_topk=1))

@pytest.mark.parametrize("sglang_server", [BASE, METRICS, SPEC], indirect=True)
def test_same_outputs(sglang_server, sglang_quality):
    result = sglang_quality.equivalence(BASE, output_tokens=32, min_rate=0.95)
    print("FLOOR", sglang_server.config_id, result.matched, result.floor_matched,
          result.floor_verdict)
"""


def test_equivalence_is_judged_against_the_references_noise_floor(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 % near ties: the reference agrees with itself on about 80 % of the prompts, and so
    does a config that differs only by --enable-metrics: within the floor, though below
    min_rate. A config that changes every output from token 8 on is below it."""
    monkeypatch.setenv("SGLANG_SIM_NOISE", "0.4")
    monkeypatch.setenv("SGLANG_SIM_FAULT", "diverge-after=8")
    pytester.makepyfile(NOISY)
    summary, html_path = pytester.path / "summary.json", pytester.path / "summary.html"
    allure = pytester.path / "allure"
    result = pytester.runpytest_subprocess(
        "-s", f"--sglang-summary={summary}", f"--sglang-html={html_path}", f"--alluredir={allure}"
    )
    result.assert_outcomes(passed=2, failed=1)
    found = {
        cid: (int(k), int(f), verdict)
        for cid, k, f, verdict in re.findall(r"FLOOR (\S+) (\d+) (\d+) (\S+)", result.stdout.str())
    }
    base_k, base_floor, verdict = found["attn-torch_native"]
    assert verdict == "reference" and base_k == base_floor and 40 <= base_floor < 64
    metrics_k, metrics_floor, verdict = found["metrics"]
    assert verdict == "within" and metrics_floor == base_floor and metrics_k < 61
    text = result.stdout.str()
    assert (
        f"agreement {metrics_k}/64 vs reference self-agreement {base_floor}/64: within the "
        "noise floor (McNemar exact" in text
    )
    assert "min_rate 95.0% not applied: the reference agrees with itself on" in text
    assert "SGLang refuses it with attention backend torch_native (it allows ascend, fa3" in text
    [line] = [ln for ln in result.stdout.lines if ln.startswith("exact_match_rate ")]
    assert re.search(
        rf"exact_match_rate \d+\.\d% vs attn-torch_native is below the reference's noise "
        rf"floor: agreement \d+/64 vs reference self-agreement {base_floor}/64: below the noise "
        r"floor \(McNemar exact, \d+ discordant: \d+ worse/\d+ better, p=",
        line,
    ), line
    data = json.loads(summary.read_text())
    floors = {r["config_id"]: r["noise_floor"] for r in data["quality"]}
    assert set(floors.values()) == {base_floor / 64}
    assert sum(data["quality_holds"].values()) == 2
    result.stdout.fnmatch_lines(
        [f"metrics *exact_match_rate*{base_floor / 64:.0%}*", "noise floor: *"]
    )
    page = html_path.read_text()
    assert "<th>noise floor</th>" in page and "within the noise floor" in page
    attached = [
        json.loads(p.read_text())
        for p in allure.glob("*-attachment.json")
        if "floor_verdict" in p.read_text()
    ]
    assert {a["floor_verdict"] for a in attached} == {"reference", "within", "below"}
    assert {a["floor_matched"] for a in attached} == {base_floor}


def test_noise_floor_off_takes_no_second_pass(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_SIM_NOISE", "0.4")
    pytester.makepyfile(EQUIVALENCE.replace("min_rate=0.99)", "min_rate=0.99, noise_floor=False)"))
    summary = pytester.path / "summary.json"
    result = pytester.runpytest("-s", f"--sglang-summary={summary}")
    # without the floor the reference is compared with its own (single) pass, and the other
    # config's near-tie mismatches fail min_rate as changed answers
    result.assert_outcomes(passed=1, failed=1)
    data = json.loads(summary.read_text())
    assert [r["noise_floor"] for r in data["quality"]] == [None, None]
    assert all("noise floor off" in r["reason"] for r in data["quality"] if r["holds"])
