"""The fail-fast classifier against real SGLang failures (tests/data/failures/, see its README).

Pure: no server, no process; the whole corpus runs in about a second. Each failure must be named
by its cause and cite the exception line, never a bare ``Traceback (most recent call last):``;
the healthy starts with "error" warnings must not be failures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang.journal import find_fatal, traceback_complete
from pytest_sglang.sim.faults import replay_exit

CORPUS = Path(__file__).parent / "data" / "failures"
INDEX: list[dict[str, Any]] = json.loads((CORPUS / "index.json").read_text())
FAILURES = [case for case in INDEX if case["category"]]
FINE = [case for case in INDEX if not case["category"]]


def lines_of(case: dict[str, Any]) -> list[str]:
    return (CORPUS / str(case["file"])).read_text().splitlines()


def named(case: dict[str, Any]) -> bool:
    fatal = find_fatal(lines_of(case))
    return (
        fatal is not None
        and fatal.reason == case["category"]
        and case["must_contain"].strip() in fatal.line
    )


def test_the_corpus_is_what_the_issue_asks_for() -> None:
    assert len(FAILURES) >= 20 and len(FINE) == 3
    for case in INDEX:
        text = (CORPUS / case["file"]).read_text()
        assert case["source"].startswith("https://github.com/"), case["file"]
        assert all(key in text for key in case["key_lines"]), case["file"]


def test_at_least_90_percent_are_named_by_their_cause() -> None:
    hits = sum(named(case) for case in FAILURES)
    assert hits / len(FAILURES) >= 0.9, f"{hits}/{len(FAILURES)}"


@pytest.mark.parametrize("case", FAILURES, ids=[c["file"] for c in FAILURES])
def test_each_failure_names_its_cause(case: dict[str, Any]) -> None:
    fatal = find_fatal(lines_of(case))
    assert fatal is not None
    assert (fatal.reason, case["must_contain"] in fatal.line) == (case["category"], True), (
        fatal.summary
    )
    assert not fatal.message.endswith("Traceback (most recent call last):")
    assert fatal.summary.startswith(f"{case['category']}: ")
    assert fatal.complete


@pytest.mark.parametrize("case", FINE, ids=[c["file"] for c in FINE])
def test_error_warnings_of_a_healthy_start_are_not_failures(case: dict[str, Any]) -> None:
    lines = lines_of(case)
    assert any("error" in line.lower() for line in lines)
    assert find_fatal(lines) is None


@pytest.mark.parametrize("case", INDEX, ids=[c["file"] for c in INDEX])
def test_replay_ends_each_log_as_the_real_server_ended(case: dict[str, Any]) -> None:
    assert replay_exit(lines_of(case)) == case["exit"]


def cites_a_traceback(case: dict[str, Any]) -> bool:
    """The cited line ends a traceback: the line before it is a frame."""
    lines = lines_of(case)
    fatal = find_fatal(lines)
    return (
        fatal is not None
        and lines[fatal.index - 1].startswith("  ")
        and any("Traceback (most recent call last):" in line for line in lines[: fatal.index])
    )


TRACEBACKS = [case for case in FAILURES if cites_a_traceback(case)]


@pytest.mark.parametrize("case", TRACEBACKS, ids=[c["file"] for c in TRACEBACKS])
def test_a_traceback_is_complete_only_once_its_exception_is_there(case: dict[str, Any]) -> None:
    lines = lines_of(case)
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.complete and traceback_complete(lines)
    # what a poll might see: every frame, not yet the exception line
    partial = lines[: fatal.index]
    assert not traceback_complete(partial)
    early = find_fatal(partial)
    assert early is None or not early.complete


def test_most_of_the_corpus_fails_inside_a_traceback() -> None:
    assert len(TRACEBACKS) >= 20


def test_a_chained_exception_is_incomplete_until_the_next_traceback_ends() -> None:
    head = [
        "[2026-11-30 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/cpp_ext.py", line 299, in run_ninja',
        "    subprocess.run(",
        "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
    ]
    assert not traceback_complete(head)
    assert not traceback_complete([*head, "Traceback (most recent call last):"])
    tail = ['  File "/x/cpp_ext.py", line 301, in run_ninja', "RuntimeError: Ninja build failed."]
    assert traceback_complete([*head, "Traceback (most recent call last):", *tail])


def test_the_reason_is_one_line() -> None:
    for case in FAILURES:
        fatal = find_fatal(lines_of(case))
        assert fatal is not None and "\n" not in fatal.summary
