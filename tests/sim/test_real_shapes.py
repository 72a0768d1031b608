"""The simulator answers as the real SGLang does: every endpoint's status and JSON shape, the
Prometheus names, the start-up milestones, held to the real server's golden
(``tests/data/real_sglang_answers.json``, recorded by the real-SGLang tier from the real 0.5.23
serving the tier's tiny model on CPU: ``PYTEST_SGLANG_RECORD=1 make test-real``).

The tier compares the two live, side by side (tests_real/test_sim_vs_real.py); this test holds
the simulator to the recorded answers in every ``make test``, without the real package. What
differs only because the real server ran on a CPU is listed in :data:`shapes.CPU_ONLY` with its
reason (and in docs/simulator.md); nothing else may differ.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import shapes
from helpers import FAST_SIM, use_simulator_env

from pytest_sglang import production
from pytest_sglang.lifecycle.deployment import Deployment
from pytest_sglang.session import SglangSession

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "real_sglang_answers.json"
#: The tier's production command line (tests_real/conftest.py), on a model path of its own.
PRODUCTION = (
    "--model-path /models/tiny-llama --device cpu --attention-backend torch_native "
    "--sampling-backend pytorch --disable-cuda-graph --max-total-tokens 16384 --enable-metrics"
)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        use_simulator_env(monkeypatch, FAST_SIM)
        inventory = tmp_path_factory.mktemp("inventory") / "hosts.toml"
        inventory.write_text(f'[hosts.local]\nproduction = "{PRODUCTION}"\n')
        session = SglangSession(["local"], inventory=inventory, ssh_config=None, ready_timeout=60)
        try:
            yield session.host("local").deployment(production())
        finally:
            session.restore_all()


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return dict(json.loads(GOLDEN.read_text()))


def test_endpoints_answer_as_the_real_server(sim: Deployment, golden: dict[str, Any]) -> None:
    problems = []
    for name, answer in shapes.capture(sim.base_url).items():
        real = golden["endpoints"][name]
        if real["status"] != answer["status"]:
            problems.append(f"{name}: status real {real['status']}, sim {answer['status']}")
            continue
        problems += shapes.allowed(
            [f"{name}.{d}" for d in shapes.differences(real["shape"], shapes.shape(answer["body"]))]
        )
    assert not problems, "\n".join(problems)


def test_metric_names_are_the_real_ones(sim: Deployment, golden: dict[str, Any]) -> None:
    names = shapes.metric_names(sim.get("/metrics").text)
    assert not sorted(names - set(golden["metrics"])), "metrics the real server does not have"
    missing = [n for n in shapes.SCRAPED if n not in names or n not in golden["metrics"]]
    assert not missing, missing


def test_startup_milestones_in_the_real_order(sim: Deployment, golden: dict[str, Any]) -> None:
    order = [m for m in shapes.milestones(sim.journal.lines) if m not in shapes.CPU_MILESTONES]
    assert order == golden["milestones"]
