"""The fail-fast classifier against real SGLang failures (tests/data/failures/, see its README).

Pure: no server, no process; the whole corpus runs in about a second. Each failure must be named
by its cause and cite the exception line, never a bare ``Traceback (most recent call last):``;
the healthy starts with "error" warnings must not be failures.

The corpus has two parts (``split`` in index.json, the rule in the README): the *tuned* cases the
rules were written against, each of which must be named, and the *held-out* cases chosen before
the rules were written for them, which measure how the classifier does on failures it has not
met. The held-out figure is reported apart, because it is the one that predicts a user's first
unknown failure.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang.lifecycle.journal import find_fatal, traceback_complete
from pytest_sglang.sim.faults import replay_exit

CORPUS = Path(__file__).parent / "data" / "failures"
INDEX: list[dict[str, Any]] = json.loads((CORPUS / "index.json").read_text())
FAILURES = [case for case in INDEX if case["category"]]
FINE = [case for case in INDEX if not case["category"]]
TUNED = [case for case in FAILURES if case["split"] == "tuned"]
HELD_OUT = [case for case in FAILURES if case["split"] == "held-out"]
#: The fresh held-out batch (README) measured once, before any rule was changed after reading it:
#: 14 of 17 causes named, under issue 32's target of 90%. Three general reading faults its misses
#: showed were then fixed (17/17 since), so the batch no longer measures an unseen failure; the
#: floor stays at the clean figure and the target is not claimed on the later one.
HELD_OUT_CLEAN = (14, 17)
HELD_OUT_FLOOR = HELD_OUT_CLEAN[0] / HELD_OUT_CLEAN[1]
#: The second fresh batch (``fresh2_*``, README), collected after those fixes and measured once with
#: no rule changed for it: 17 of 21 causes named (81%), again under the 90% target. Its four misses
#: were then fixed by general rules (21/21 since), so it is tainted too; the floor stays the clean
#: figure.
HELD_OUT_CLEAN_2 = (17, 21)
SECOND_BATCH = [case for case in HELD_OUT if case["file"].startswith("fresh2_")]
#: The third fresh batch (``fresh3_*``, README), collected after the second batch's fixes froze the
#: rules again; its expectations were committed before the classifier read it. Measured once: 17 of
#: 20 causes named (85%), under the 90% target. Its three misses were then fixed by general rules
#: (README; 20/20 since), so it is tainted too; the floor stays the clean figure.
HELD_OUT_CLEAN_3 = (17, 20)
THIRD_BATCH = [case for case in HELD_OUT if case["file"].startswith("fresh3_")]
#: The fourth fresh batch (``fresh4_*``, README), collected after the third batch's fixes froze the
#: rules again; its expectations were committed before the classifier read it. Measured once: 16 of
#: 20 causes named (80%), under the 90% target. Its four misses were then read as examples of
#: general families (a GPU refusal, a resource limit, two choices that cannot run together, NCCL's
#: wordings) and those families fixed (README; 20/20 since), so it is tainted too; the floor stays
#: the clean figure.
HELD_OUT_CLEAN_4 = (16, 20)
FOURTH_BATCH = [case for case in HELD_OUT if case["file"].startswith("fresh4_")]
#: The fifth fresh batch (``fresh5_*``, README), chosen by a search rule fixed before any search
#: (the first qualifying results of fixed queries) after the general reading rules were frozen;
#: its expectations were committed before the classifier read it.
FIFTH_BATCH = [case for case in HELD_OUT if case["file"].startswith("fresh5_")]
#: Measured once: 15 of 26 causes named (58%), far under the 90% target; the misses are listed in
#: the README. The structural reading then read this batch too (26/26 since), so it is tainted like
#: the others; the floor stays the clean figure.
HELD_OUT_CLEAN_5 = (15, 26)
#: The sixth fresh batch (``fresh6_*``, README), collected by a fixed search rule by someone who
#: never read the classifier, while the structural reading was written (it never saw this batch);
#: its expectations were committed before the classifier read it. Measured once with the rules
#: frozen: 15 of 21 causes named (71%), under the 90% target (misses in the README). Its six misses
#: were then read as general families (warmup and readiness wordings, the model's kind or config
#: refused, the tokenizer manager's own faults, frames quoted without indentation, a machine
#: without CUDA) and those fixed (README; 21/21 since), so it is tainted too; the floor stays the
#: clean figure.
SIXTH_BATCH = [case for case in HELD_OUT if case["file"].startswith("fresh6_")]
HELD_OUT_CLEAN_6 = (15, 21)
#: The seventh fresh batch (``fresh7_*``, README), collected by a fixed search rule by someone who
#: never read the classifier, while the sixth batch's families were fixed (they never saw this
#: batch); its expectations were committed before the classifier read it. Measured once with the
#: rules frozen (commit "Failure classifier rules frozen for the seventh fresh batch"): 11 of 19
#: causes named (58%), under the 90% target (misses in the README). Its eight misses were then
#: read as general families (a native runtime's own fatal line, other accelerators' device errors,
#: a kernel compiler that cannot start, a message carried on the next lines, no room for the KV
#: cache, no processor for the model's type, a path taken for a Hub repo id, a quantization the
#: loader refuses) and those fixed (README; 19/19 since), so it is tainted too; the floor stays
#: the clean figure.
SEVENTH_BATCH = [case for case in HELD_OUT if case["file"].startswith("fresh7_")]
HELD_OUT_CLEAN_7 = (11, 19)
#: The eighth fresh batch (``fresh8_*``, README), collected the same way while the seventh
#: batch's families were fixed (they never saw it); its expectations were committed before the
#: classifier read it. Measured once with the rules frozen (commit "Failure classifier rules
#: frozen for the eighth fresh batch"): 13 of 20 causes named (65%), under the 90% target (misses
#: in the README). Its seven misses were then read as general families (a bare assertion's
#: statement, a runtime without the architecture's implementation, a launcher giving up on its
#: workers' readiness, more GPUs asked for than the machine has, a path not implemented, a kernel
#: library's API changed under SGLang) and those fixed (README; 19/20 since, the twentieth a line
#: labelled two ways, :data:`LABELLED_OTHERWISE`), so it is tainted too; the floor stays the clean
#: figure.
EIGHTH_BATCH = [case for case in HELD_OUT if case["file"].startswith("fresh8_")]
HELD_OUT_CLEAN_8 = (13, 20)
#: The ninth fresh batch (``fresh9_*``, README), collected the same way while the eighth batch's
#: families were fixed (they never saw it); its expectations were committed before the classifier
#: read it. Measured once with the rules frozen (commit "Failure classifier rules frozen for the
#: ninth fresh batch"): 12 of 21 causes named (57%), under the 90% target (misses in the README).
#: The libraries' vocabulary (README) was then written with three of its misses as examples of
#: the gaps to close: four of its cases are named since (16/21), so it is tainted; the floor stays
#: the clean figure.
NINTH_BATCH = [case for case in HELD_OUT if case["file"].startswith("fresh9_")]
HELD_OUT_CLEAN_9 = (12, 21)
#: The tenth fresh batch (``fresh10_*``, README), collected blind while the libraries' vocabulary
#: was written (it never saw this batch); its expectations were committed before the classifier
#: read it. Measured once with the rules frozen (commit "Failure classifier rules frozen for the
#: tenth fresh batch"): 7 of 20 causes named (35%), under the 90% target (misses in the README).
TENTH_BATCH = [case for case in HELD_OUT if case["file"].startswith("fresh10_")]
HELD_OUT_CLEAN_10 = (7, 20)
#: The eleventh fresh batch (``fresh11_*``, README), collected blind while the words reading was
#: written (it never saw this batch); its expectations were committed before the classifier read
#: it. Measured once with the rules frozen: 7 of 20 causes named (35%), the cited line right for
#: 17, under the 90% target (misses in the README). A blind second reading agrees with its
#: collector's categories for 13 of 20 only. Four general fixes were then made on its misses
#: (9/20 since), so it is tainted; the floor stays the clean figure.
ELEVENTH_BATCH = [case for case in HELD_OUT if case["file"].startswith("fresh11_")]
HELD_OUT_CLEAN_11 = (7, 20)
#: The twelfth fresh batch (``fresh12_*``, README): ten failures (its fixed queries ran out),
#: collected blind while the eleventh batch's families were fixed. Measured once with the rules
#: frozen: 3 of 10 causes named (30%), the cited line right for 7. Three general fixes were then
#: made on its misses (4/10 since), so it is tainted; the floor stays the clean figure. It and
#: the eleventh batch have three blind readings each (README): a majority label for 27 of 30.
TWELFTH_BATCH = [case for case in HELD_OUT if case["file"].startswith("fresh12_")]
HELD_OUT_CLEAN_12 = (3, 10)
#: The thirteenth fresh batch (``fresh13_*``, README): fifteen failures (its 60 fixed queries ran
#: out), collected blind while the twelfth batch's families were fixed, with two more blind
#: readings made before it was measured. Measured once with the rules frozen: 8 of 15 causes
#: named (53%), the cited line right for 13; the majority of three readers' category for 10 of 14.
#: Three general fixes were then made on its misses (9/15 since), so it is tainted.
THIRTEENTH_BATCH = [case for case in HELD_OUT if case["file"].startswith("fresh13_")]
HELD_OUT_CLEAN_13 = (8, 15)
FRESH = tuple(f"fresh{n}_" for n in range(2, 14))  # the second to the thirteenth batch
FIRST_BATCH = [case for case in HELD_OUT if not case["file"].startswith(FRESH)]
#: The batches whose misses have been read as families (README): every case of them is named,
#: but for those listed in :data:`LABELLED_OTHERWISE`. A batch joins only after its clean
#: measurement and its families' round, never while it is still a clean held-out figure.
READ_AS_FAMILIES = ("fresh_", *(f"fresh{n}_" for n in range(2, 9)))  # the first to the eighth
#: Cases of those batches that stay misses on purpose, with the cause the classifier names and
#: why. ``invalid device ordinal`` at a rank's ``set_device`` came labelled two ways by two
#: collectors' readings of their threads (README, the eighth batch's families): invalid config
#: (``fresh8_compile_deep_gemm_tp16_...``, a tp size larger than the node's GPUs) and CUDA error
#: (this one, the thread's cause not in the excerpt). From the record alone an engineer reads a
#: GPU index past the machine's as the config asking for more GPUs than there are, so the
#: classifier names both invalid config and this one stays a miss.
LABELLED_OTHERWISE: dict[str, tuple[str, str]] = {
    "fresh8_two_nodes_tp16_invalid_device_ordinal.log": (
        "invalid config",
        "labelled CUDA error; the same line elsewhere labelled invalid config (README)",
    ),
}
#: Logs whose public excerpt stops inside a traceback (README): no reader can see it complete.
CUT = {case["file"] for case in INDEX if case.get("excerpt_ends_in_traceback")}

#: Where a log taken from the real package in the real-SGLang tier (not a public report) says so.
REAL_TIER = "real SGLang 0.5.23 on CPU"


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
    assert len(FAILURES) >= 45 and len(FINE) >= 6 and len(FIRST_BATCH) >= 15
    assert len(SECOND_BATCH) >= 20 and len(THIRD_BATCH) >= 20 and len(FOURTH_BATCH) >= 20
    assert len(FIFTH_BATCH) >= 25 and len(SIXTH_BATCH) >= 20 and len(SEVENTH_BATCH) >= 19
    assert len(EIGHTH_BATCH) >= 20 and len(NINTH_BATCH) >= 20 and len(TENTH_BATCH) >= 20
    assert len(ELEVENTH_BATCH) >= 20 and len(TWELFTH_BATCH) >= 10 and len(THIRTEENTH_BATCH) >= 15
    for case in INDEX:
        text = (CORPUS / case["file"]).read_text()
        assert case["source"].startswith(("https://", REAL_TIER)), case["file"]
        assert case["split"] in ("tuned", "held-out"), case["file"]
        assert all(key in text for key in case["key_lines"]), case["file"]


def figure(cases: list[dict[str, Any]]) -> tuple[int, int]:
    return sum(named(case) for case in cases), len(cases)


def test_causes_are_named_on_both_parts_and_the_held_out_part_is_reported_apart() -> None:
    tuned, first, second = figure(TUNED), figure(FIRST_BATCH), figure(SECOND_BATCH)
    third, fourth, fifth = figure(THIRD_BATCH), figure(FOURTH_BATCH), figure(FIFTH_BATCH)
    sixth, seventh, eighth = figure(SIXTH_BATCH), figure(SEVENTH_BATCH), figure(EIGHTH_BATCH)
    ninth, tenth, eleventh = figure(NINTH_BATCH), figure(TENTH_BATCH), figure(ELEVENTH_BATCH)
    twelfth, thirteenth = figure(TWELFTH_BATCH), figure(THIRTEENTH_BATCH)
    misses = [case["file"] for case in HELD_OUT if not named(case)]
    report = (
        f"tuned {tuned[0]}/{tuned[1]}, held-out {first[0]}/{first[1]} (first batch), "
        f"{second[0]}/{second[1]} (second batch), {third[0]}/{third[1]} (third batch), "
        f"{fourth[0]}/{fourth[1]} (fourth batch), {fifth[0]}/{fifth[1]} (fifth batch), "
        f"{sixth[0]}/{sixth[1]} (sixth batch), {seventh[0]}/{seventh[1]} (seventh batch), "
        f"{eighth[0]}/{eighth[1]} (eighth batch), {ninth[0]}/{ninth[1]} (ninth batch), "
        f"{tenth[0]}/{tenth[1]} (tenth batch), {eleventh[0]}/{eleventh[1]} (eleventh batch), "
        f"{twelfth[0]}/{twelfth[1]} (twelfth batch), {thirteenth[0]}/{thirteenth[1]} (thirteenth) "
        f"(missed: {misses})"
    )
    print(report)
    assert tuned[0] == tuned[1], report
    assert first[0] / first[1] >= HELD_OUT_FLOOR, report
    # each batch against its own clean figure: a batch is never pooled with one the rules saw
    assert second[0] / second[1] >= HELD_OUT_CLEAN_2[0] / HELD_OUT_CLEAN_2[1], report
    assert third[0] / third[1] >= HELD_OUT_CLEAN_3[0] / HELD_OUT_CLEAN_3[1], report
    assert fourth[0] / fourth[1] >= HELD_OUT_CLEAN_4[0] / HELD_OUT_CLEAN_4[1], report
    assert fifth[0] / fifth[1] >= HELD_OUT_CLEAN_5[0] / HELD_OUT_CLEAN_5[1], report
    assert sixth[0] / sixth[1] >= HELD_OUT_CLEAN_6[0] / HELD_OUT_CLEAN_6[1], report
    assert seventh[0] / seventh[1] >= HELD_OUT_CLEAN_7[0] / HELD_OUT_CLEAN_7[1], report
    assert eighth[0] / eighth[1] >= HELD_OUT_CLEAN_8[0] / HELD_OUT_CLEAN_8[1], report
    assert ninth[0] / ninth[1] >= HELD_OUT_CLEAN_9[0] / HELD_OUT_CLEAN_9[1], report
    assert tenth[0] / tenth[1] >= HELD_OUT_CLEAN_10[0] / HELD_OUT_CLEAN_10[1], report
    assert eleventh[0] / eleventh[1] >= HELD_OUT_CLEAN_11[0] / HELD_OUT_CLEAN_11[1], report
    assert twelfth[0] / twelfth[1] >= HELD_OUT_CLEAN_12[0] / HELD_OUT_CLEAN_12[1], report
    assert thirteenth[0] / thirteenth[1] >= HELD_OUT_CLEAN_13[0] / HELD_OUT_CLEAN_13[1], report


FAMILY_READ = [case for case in HELD_OUT if case["file"].startswith(READ_AS_FAMILIES)]


@pytest.mark.parametrize("case", FAMILY_READ, ids=[c["file"] for c in FAMILY_READ])
def test_every_case_of_a_batch_read_as_families_is_named_but_those_labelled_otherwise(
    case: dict[str, Any],
) -> None:
    """Stated, not left to the floors: a batch whose misses were read as families has every
    case named, and a case that stays a miss is listed with the cause it is read as."""
    fatal = find_fatal(lines_of(case))
    assert fatal is not None
    if case["file"] in LABELLED_OTHERWISE:
        read_as, _why = LABELLED_OTHERWISE[case["file"]]
        assert not named(case) and fatal.reason == read_as, fatal.summary
        assert case["must_contain"] in fatal.line  # the right line, under the other label
    else:
        assert named(case), fatal.summary


def test_the_cases_labelled_otherwise_are_in_the_corpus() -> None:
    assert set(LABELLED_OTHERWISE) <= {case["file"] for case in FAMILY_READ}


@pytest.mark.parametrize("case", TUNED, ids=[c["file"] for c in TUNED])
def test_each_tuned_failure_names_its_cause(case: dict[str, Any]) -> None:
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


TRACEBACKS = [case for case in FAILURES if case["file"] not in CUT and cites_a_traceback(case)]


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


#: Failed starts read as healthy (strict, so a fix shows here). The fifth batch had two, a shell's
#: ``command not found`` and another stack's one-line refusal; both are read since the structural
#: reading (README). The seventh batch had one, custom all-reduce's C++ ``Failed: Cuda error ...``
#: line with no exception after it, read since a native runtime's own fatal line is (README).
READ_AS_HEALTHY: set[str] = set()
#: A bare opening of a traceback (or a summary ending in one), as opposed to an exception line
#: whose own message quotes one (``RuntimeError: Initialization failed. ...: Traceback ...``).
BARE_TRACEBACK = re.compile(r"(^|hit an exception: )Traceback \(most recent call last\):$")


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            case,
            marks=pytest.mark.xfail(
                case["file"] in READ_AS_HEALTHY,
                reason="a held-out batch: read as healthy",
                strict=True,
            ),
        )
        for case in FAILURES
    ],
    ids=[c["file"] for c in FAILURES],
)
def test_every_failure_is_found_and_cites_a_line_not_a_bare_traceback(case: dict[str, Any]) -> None:
    """Held-out cases too: whatever the category, a failed start is never read as healthy."""
    fatal = find_fatal(lines_of(case))
    assert fatal is not None and (fatal.complete or case["file"] in CUT)
    assert not BARE_TRACEBACK.search(fatal.message)


def test_the_reason_is_one_line() -> None:
    for case in FAILURES:
        fatal = find_fatal(lines_of(case))
        assert fatal is not None or case["file"] in READ_AS_HEALTHY
        assert fatal is None or "\n" not in fatal.summary


#: Three blind readings (README): the collector's ``category``, ``second_reading.json`` and
#: ``third_reading.json``. Where two of the three agree, their category is the case's majority
#: label, a fairer one than any single reader's. The floors are the classifier's figures against
#: it with the rules frozen for each batch (eleventh, twelfth, thirteenth).
SECOND = json.loads((CORPUS / "second_reading.json").read_text())
THIRD = json.loads((CORPUS / "third_reading.json").read_text())
MAJORITY_CLEAN = {"fresh11_": (7, 17), "fresh12_": (5, 10), "fresh13_": (10, 14)}


def majority(case: dict[str, Any]) -> str | None:
    votes = [case["category"], SECOND[case["file"]]["category"], THIRD[case["file"]]["category"]]
    top = max(set(votes), key=votes.count)
    return top if votes.count(top) >= 2 else None


@pytest.mark.parametrize("batch", sorted(MAJORITY_CLEAN))
def test_the_classifier_against_the_majority_of_three_blind_readings(batch: str) -> None:
    cases = [case for case in HELD_OUT if case["file"].startswith(batch)]
    assert all(case["file"] in SECOND and case["file"] in THIRD for case in cases)
    labelled = [(case, label) for case in cases if (label := majority(case)) is not None]
    agreed = sum(
        (fatal := find_fatal(lines_of(case))) is not None and fatal.reason == label
        for case, label in labelled
    )
    floor = MAJORITY_CLEAN[batch]
    print(f"{batch}: the majority's category for {agreed} of {len(labelled)}")
    assert len(labelled) == floor[1] and agreed >= floor[0]
