"""The simulator held to the real server: the same config deployed on both, side by side.

The real server's answers, reduced to shapes, are also kept as a golden
(``tests/data/real_sglang_answers.json``) that ``make test`` holds the simulator to without the
real package (tests/sim/test_real_shapes.py); here the golden must still be what the real server
answers (``PYTEST_SGLANG_RECORD=1 make test-real`` writes it anew).

Compared: every endpoint's status and JSON shape that the plugin or a user's test reads (plain
and streamed: chunk shapes, usage, finish reasons), the Prometheus metric names the plugin
scrapes, and the startup log's milestones in order up to ready. A difference fails with the
field, the real shape or value and the simulator's. Differences that come from running on CPU
rather than a GPU are listed in :data:`CPU_ONLY` with their reason (docs/simulator.md has the
table); nothing else may differ.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import shapes

from conftest import RealSglang, real_and_simulator
from pytest_sglang import production
from pytest_sglang.lifecycle.deployment import Deployment


@pytest.fixture(scope="module")
def both(
    real_sglang: RealSglang, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Deployment, Deployment]]:
    """The tier's production config with metrics, on the real server and on the simulator."""
    line = real_sglang.production_line("--enable-metrics")
    session = real_and_simulator(real_sglang, tmp_path_factory.mktemp("inventory"), line)
    try:
        real = session.host("real").deployment(production())
        sim = session.host("sim").deployment(production())
        yield real, sim
    finally:
        session.restore_all()


GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "data" / "real_sglang_answers.json"


def answers_of(deployment: Deployment) -> dict[str, Any]:
    """Everything the comparison reads from one server: endpoint shapes, metric names and the
    start-up milestones."""
    captured = shapes.capture(deployment.base_url)
    return {
        "sglang_version": deployment.sglang_version,
        "endpoints": {
            name: {"status": answer["status"], "shape": shapes.shape(answer["body"])}
            for name, answer in captured.items()
        },
        "metrics": sorted(shapes.metric_names(deployment.get("/metrics").text)),
        "milestones": shapes.milestones(deployment.journal.lines),
    }


@pytest.fixture(scope="module")
def real_answers(both: tuple[Deployment, Deployment]) -> dict[str, Any]:
    answers = answers_of(both[0])
    if os.environ.get("PYTEST_SGLANG_RECORD") == "1":
        GOLDEN.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
    return answers


def test_the_golden_is_what_the_real_server_answers(real_answers: dict[str, Any]) -> None:
    """The recorded answers still hold for this release: same statuses, shapes (a field set in
    one and null in the other matches: that can depend on the server's state), metric names
    and milestones."""
    golden = json.loads(GOLDEN.read_text())
    stale = [f"sglang_version: {golden['sglang_version']} recorded"] * (
        golden["sglang_version"] != real_answers["sglang_version"]
    )
    for name, live in real_answers["endpoints"].items():
        kept = golden["endpoints"].get(name)
        if kept is None or kept["status"] != live["status"]:
            stale.append(f"{name}: recorded {kept and kept['status']}, now {live['status']}")
            continue
        stale += [f"{name}.{d}" for d in shapes.differences(live["shape"], kept["shape"])]
    for key in ("metrics", "milestones"):
        if golden[key] != real_answers[key]:
            stale.append(f"{key}: recorded {golden[key]}, now {real_answers[key]}")
    assert not stale, (
        f"{GOLDEN.name} is not what SGLang {real_answers['sglang_version']} answers "
        "(write it anew with PYTEST_SGLANG_RECORD=1 make test-real): " + "; ".join(stale)
    )


def test_endpoints_answer_alike(both: tuple[Deployment, Deployment]) -> None:
    real, sim = both
    real_answers = shapes.capture(real.base_url)
    sim_answers = shapes.capture(sim.base_url)
    problems = []
    for name, answer in real_answers.items():
        mine = sim_answers[name]
        if answer["status"] != mine["status"]:
            problems.append(f"{name}: status real {answer['status']}, sim {mine['status']}")
            continue
        diffs = shapes.differences(shapes.shape(answer["body"]), shapes.shape(mine["body"]))
        problems += shapes.allowed([f"{name}.{d}" for d in diffs])
    assert not problems, "\n".join(problems)


def test_metric_names_match(both: tuple[Deployment, Deployment]) -> None:
    real, sim = both
    real_names = shapes.metric_names(real.get("/metrics").text)
    sim_names = shapes.metric_names(sim.get("/metrics").text)
    missing = [name for name in shapes.SCRAPED if name not in real_names or name not in sim_names]
    assert not missing, [(n, n in real_names, n in sim_names) for n in missing]
    only_sim = sorted(sim_names - real_names)
    assert not only_sim, f"metrics the real server does not have: {only_sim}"


def test_startup_milestones_in_the_same_order(both: tuple[Deployment, Deployment]) -> None:
    real, sim = both
    real_order = shapes.milestones(real.journal.lines)
    sim_order = [m for m in shapes.milestones(sim.journal.lines) if m not in shapes.CPU_MILESTONES]
    assert real_order == sim_order
