"""A workload's identity: every parameter that changes the figures is in its digest, and the
old layout's stored spec rebuilds the same digest (how old baselines are re-keyed)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_sglang.baseline.legacy import legacy_digest
from pytest_sglang.bench.identity import identify
from pytest_sglang.bench.workload import JsonlPrompts, PromptList, RandomPrompts, Workload

BASE = Workload.single_stream(32)


@pytest.mark.parametrize(
    "other",
    [
        Workload.single_stream(32, api="generate"),
        Workload.single_stream(64),
        Workload.single_stream(32, prompt_tokens=64),
        Workload.single_stream(32, prompts=RandomPrompts((16, 48))),
        Workload.single_stream(32, prompts=RandomPrompts(32, seed=1)),
        Workload.single_stream(32, requests=2),
        Workload.single_stream(32, temperature=0.7),
        Workload.single_stream(32, ignore_eos=False),
        Workload.single_stream(32, warmup_requests=0),
        Workload.single_stream(32, seed=3),
    ],
    ids=str,
)
def test_every_parameter_that_changes_the_figures_changes_the_digest(other: Workload) -> None:
    assert other.name == BASE.name
    assert identify(other).digest != identify(BASE).digest


def test_the_same_workload_is_one_digest_and_timeouts_do_not_count() -> None:
    again = Workload.single_stream(32, request_timeout_s=10, total_timeout_s=20)
    assert identify(again) == identify(BASE)
    assert identify(BASE, bench_from="forward").digest != identify(BASE, bench_from="host").digest
    assert identify(BASE, slo="ttft<200ms").digest != identify(BASE).digest


def test_arrivals_count_only_with_a_rate() -> None:
    rates = [Workload.rate(8, burstiness=b) for b in (1.0, 0.5, math.inf)]
    assert len({identify(w).digest for w in rates}) == 3
    assert len({identify(w).digest for w in (Workload.rate(8), Workload.rate(4))}) == 2
    flat = [Workload.fixed_concurrency(4, burstiness=b) for b in (1.0, 0.5)]
    assert identify(flat[0]) == identify(flat[1])
    assert json.loads(identify(rates[2]).form)["workload"]["burstiness"] == "inf"


def test_a_dataset_is_its_content_not_its_name(tmp_path: Path) -> None:
    first, renamed = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text('{"prompt": "hello there"}\n')
    renamed.write_text(first.read_text())
    a, b = (Workload.single_stream(8, prompts=JsonlPrompts(p)) for p in (first, renamed))
    assert identify(a).digest == identify(b).digest
    renamed.write_text('{"prompt": "hello again"}\n')
    changed = Workload.single_stream(8, prompts=JsonlPrompts(renamed))
    assert identify(changed).digest != identify(a).digest
    lists = [PromptList(("q1",), name=n) for n in ("x", "y")] + [PromptList(("q2",))]
    digests = [identify(Workload.single_stream(8, prompts=p)).digest for p in lists]
    assert digests[0] == digests[1] != digests[2]


@pytest.mark.parametrize(
    "workload",
    [
        BASE,
        Workload.single_stream(512, api="generate", requests=3),
        Workload.fixed_concurrency(16),
        Workload.rate(8, burstiness=0.5),
        Workload.rate(2.5, burstiness=math.inf, max_concurrency=4),
        Workload.single_stream(32, prompts=RandomPrompts((8, 64))),
    ],
    ids=str,
)
def test_an_old_run_s_stored_spec_rebuilds_its_digest(workload: Workload) -> None:
    info = json.loads(json.dumps({"workload_spec": workload.describe(), "bench_from": "host"}))
    assert legacy_digest(info) == (workload.name, identify(workload, bench_from="host").digest)


def test_an_old_run_that_does_not_say_its_workload_has_no_digest(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "hi"}\n')
    from_file = Workload.single_stream(8, prompts=JsonlPrompts(path)).describe()
    assert legacy_digest({"workload_spec": from_file, "bench_from": "host"}) is None
    assert legacy_digest({"workload_spec": BASE.describe()}) is None  # no bench_from
    assert legacy_digest({"bench_from": "host"}) is None
