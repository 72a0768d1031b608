"""The simulator and the plugin held to goldens of the real SGLang 0.5.23 (``make conformance``).

The goldens hold what the real package's parser and ``ServerArgs.resolve_once()`` produced for
a matrix of configs on three GPU profiles; these tests replay them through the simulator's parser
and resolution in-process (seconds) and through the plugin's ``expected_journal()``. Bars: issue
15 point 2 (resolved values >= 99% of config x field pairs, warnings identical in >= 95% of
configs, failing configs with the real exit status and last line, custom value types as real);
the plugin: no expectation that contradicts what real SGLang logs.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest
from agreement import (
    KEY_FIELDS,
    Agreement,
    JournalAgreement,
    argv_of,
    load_profiles,
    measure,
    measure_catalog,
    measure_journal,
)

#: The module fixtures below are measured once for all the tests here: under pytest-xdist the
#: tests share one worker, so that no other worker measures them again.
pytestmark = pytest.mark.xdist_group("goldens")


@pytest.fixture(scope="module")
def agreement() -> Agreement:
    return measure()


@pytest.fixture(scope="module")
def journal() -> JournalAgreement:
    return measure_journal()


def test_goldens_cover_the_matrix() -> None:
    profiles = load_profiles()
    assert {p.key for p in profiles} == {"rtx6000x4", "h100x8", "h200x8"}
    for profile in profiles:
        assert profile.golden["sglang_version"] == "0.5.23"
        configs = profile.golden["configs"]
        assert len(configs) >= 60
        algos = Counter(
            a.upper()
            for entry in configs.values()
            for flag, a in zip(entry["argv"], entry["argv"][1:], strict=False)
            if flag == "--speculative-algorithm"
        )
        assert {"EAGLE", "EAGLE3", "NEXTN", "NGRAM", "STANDALONE"} <= set(algos)
        tps = {
            int(a)
            for entry in configs.values()
            for flag, a in zip(entry["argv"], entry["argv"][1:], strict=False)
            if flag == "--tp-size" and a.isdigit()
        }
        assert {2, 4, 8} <= tps
        models = {a.split("/")[-1] for e in configs.values() for a in e["argv"] if "{models}" in a}
        assert {"Qwen3.5-122B-A10B", "Qwen3-8B", "Llama-3.1-8B-Instruct", "DeepSeek-V3"} <= models
        assert sum(e["exit_code"] != 0 for e in configs.values()) >= 5
        assert len(profile.golden["tricky"]) >= 50


def test_every_option_string_parses_as_in_real() -> None:
    agree, total, misses = measure_catalog()
    assert total >= 550
    assert agree == total, "\n".join(misses)


# The bars are 99% (values) and 95% (warnings); the simulator reaches 100% on this
# matrix, and the tests hold it there so that any regression shows (docs/simulator.md lists
# what differs outside the compared fields).


def test_resolved_values_agree_with_real(agreement: Agreement) -> None:
    misses = [m for m in agreement.misses if any(f": {k} " in m for k in KEY_FIELDS)]
    assert agreement.field_pairs >= 60 * 3 * len(KEY_FIELDS)
    assert agreement.field_agree == agreement.field_pairs, f"{agreement.line()}\n" + "\n".join(
        misses[:30]
    )


def test_warnings_before_server_args_agree_with_real(agreement: Agreement) -> None:
    misses = [m for m in agreement.misses if ": warnings " in m]
    assert agreement.warn_agree == agreement.warn_configs, f"{agreement.line()}\n" + "\n".join(
        misses[:20]
    )


def test_failing_configs_fail_like_real(agreement: Agreement) -> None:
    misses = [m for m in agreement.misses if " != " in m or "traceback" in m]
    assert agreement.fail_configs >= 15
    assert agreement.fail_agree == agreement.fail_configs, "\n".join(misses)
    assert agreement.trace_configs >= 3
    assert agreement.trace_agree == agreement.trace_configs, "\n".join(misses)


def test_custom_value_types_parse_as_real(agreement: Agreement) -> None:
    misses = [m for m in agreement.misses if "/tricky " in m]
    assert agreement.tricky_agree == agreement.tricky, "\n".join(misses[:20])


def test_expected_journal_never_contradicts_real(journal: JournalAgreement) -> None:
    assert journal.configs >= 150
    assert journal.checked_values >= 500
    assert journal.checked_warnings >= 50
    assert journal.mismatches == []


def test_simulator_process_dies_with_the_real_traceback() -> None:
    """The whole process, not just resolve_args: exit 1, real frames, the exception last."""
    profile = next(p for p in load_profiles() if p.key == "h100x8")
    entry = profile.golden["configs"]["q3_medusa"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_sglang.sim", *argv_of(entry)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"SGLANG_SIM_STARTUP_SCALE": "0", "PATH": "/usr/bin:/bin"},
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == entry["exit_code"] == 1
    assert lines[-1] == entry["last_line"]
    real_frame = entry["traceback"][-1]
    assert f'sglang/{real_frame["file"].split("sglang/", 1)[1]}", line {real_frame["line"]}' in (
        proc.stderr
    )
    assert lines[-2].strip() == real_frame["code"]
