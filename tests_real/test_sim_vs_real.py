"""The simulator held to the real server: the same config deployed on both, side by side.

Compared: every endpoint's status and JSON shape that the plugin or a user's test reads (plain
and streamed: chunk shapes, usage, finish reasons), the Prometheus metric names the plugin
scrapes, and the startup log's milestones in order up to ready. A difference fails with the
field, the real shape or value and the simulator's. Differences that come from running on CPU
rather than a GPU are listed in :data:`CPU_ONLY` with their reason (docs/simulator.md has the
table); nothing else may differ.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import shapes
from helpers import FAST_SIM, SIM_LAUNCH

from conftest import RealSglang, local_real_entry
from pytest_sglang import production
from pytest_sglang.deployment import Deployment
from pytest_sglang.session import SglangSession

#: Fields that differ only because the real server runs on CPU here (docs/simulator.md).
CPU_ONLY: dict[str, str] = {}
#: The metrics the plugin reads from /metrics (bench/prometheus.py): each must exist on both.
SCRAPED = (
    "sglang:time_to_first_token_seconds_sum",
    "sglang:time_to_first_token_seconds_count",
    "sglang:e2e_request_latency_seconds_sum",
    "sglang:e2e_request_latency_seconds_count",
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:token_usage",
    "sglang:prompt_tokens_total",
    "sglang:generation_tokens_total",
)


@pytest.fixture(scope="module")
def both(
    real_sglang: RealSglang, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Deployment, Deployment]]:
    """The tier's production config with metrics, on the real server and on the simulator."""
    line = real_sglang.production_line("--enable-metrics")
    inventory = tmp_path_factory.mktemp("inventory") / "hosts.toml"
    sim_env = "{ " + ", ".join(f'{k} = "{v}"' for k, v in FAST_SIM.items()) + " }"
    inventory.write_text(
        local_real_entry("real", real_sglang, line)
        + f'\n[hosts.sim]\nssh = "local"\nlaunch = "{SIM_LAUNCH}"\nproduction = "{line}"\n'
        + f"env = {sim_env}\n"
    )
    session = SglangSession(
        ["real", "sim"], inventory=inventory, ssh_config=None, ready_timeout=300
    )
    try:
        real = session.host("real").deployment(production())
        sim = session.host("sim").deployment(production())
        yield real, sim
    finally:
        session.restore_all()


def _allowed(diffs: list[str]) -> list[str]:
    return [d for d in diffs if not any(d.startswith(field) for field in CPU_ONLY)]


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
        problems += [f"{name}.{d}" for d in _allowed([f"{name}.{d}" for d in diffs])]
    assert not problems, "\n".join(problems)


def test_metric_names_match(both: tuple[Deployment, Deployment]) -> None:
    real, sim = both
    real_names = shapes.metric_names(real.get("/metrics").text)
    sim_names = shapes.metric_names(sim.get("/metrics").text)
    missing = [name for name in SCRAPED if name not in real_names or name not in sim_names]
    assert not missing, [(n, n in real_names, n in sim_names) for n in missing]
    only_sim = sorted(sim_names - real_names)
    assert not only_sim, f"metrics the real server does not have: {only_sim}"


#: Start-up lines the plugin reads (journal phases, scheduler limits, readiness), in the order
#: SGLang writes them.
MILESTONES = (
    "server_args=",
    "Init torch distributed",
    "Load weight begin",
    "Load weight end",
    "KV Cache is allocated",
    "max_total_num_tokens=",
    "Capture cuda graph begin",
    "Uvicorn running on",
    "fired up and ready to roll",
)
#: Milestones a server on CPU does not reach, with why (docs/simulator.md).
CPU_MILESTONES = {
    "Init torch distributed": "the CPU path logs 'Init parallel begin.' instead",
    "Capture cuda graph begin": "no CUDA graphs on CPU",
}


def milestones(lines: list[str]) -> list[str]:
    """The :data:`MILESTONES` in the order the lines reach them (each once)."""
    seen: list[str] = []
    for line in lines:
        for needle in MILESTONES:
            if needle in line and needle not in seen:
                seen.append(needle)
    return seen


def test_startup_milestones_in_the_same_order(both: tuple[Deployment, Deployment]) -> None:
    real, sim = both
    real_order = milestones(real.journal.lines)
    sim_order = [m for m in milestones(sim.journal.lines) if m not in CPU_MILESTONES]
    assert real_order == sim_order
