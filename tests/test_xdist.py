"""pytest-xdist across hosts: one host per worker, each config deployed once, one summary."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers import host_args, host_entry, local_entry, save_inventory
from testhost import SystemdTestHost

SUITE = """
import pytest
from pytest_sglang import ServerConfig, sweep

BASE = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b",
                    speculative_algorithm="EAGLE", speculative_num_steps=1,
                    speculative_eagle_topk=1)
CONFIGS = sweep(BASE, speculative_num_steps=[1, 2, 3, 4])

@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_health(sglang_server):
    assert sglang_server.get("/health").status_code == 200

@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_models(sglang_server):
    assert sglang_server.get("/v1/models").json()["data"][0]["id"] == "qwen3-8b"
"""


pytestmark = pytest.mark.usefixtures("fast_simulator")


def local_inventory(path: Path, **bad: str) -> Path:
    faults = {name: {"SGLANG_SIM_FAULT": fault} for name, fault in bad.items()}
    return save_inventory(
        path, *(local_entry(name, faults.get(name)) for name in ("sim-a", "sim-b"))
    )


def run(pytester: pytest.Pytester, inventory: Path, *args: str) -> tuple[Any, list[dict[str, Any]]]:
    out = pytester.path / "summary.json"
    result = pytester.runpytest(
        "-p", "xdist", *args, "--sglang-inventory", str(inventory), "--sglang-summary", str(out)
    )
    return result, json.loads(out.read_text())["deployments"]


def run_on_sims(
    pytester: pytest.Pytester, workers: str, *args: str, suite: str = SUITE, **bad: str
) -> tuple[Any, list[dict[str, Any]]]:
    """``suite`` with ``-n workers`` on hosts sim-a and sim-b (``bad``: host -> fault)."""
    pytester.makepyfile(suite)
    inventory = local_inventory(pytester.path / "hosts.toml", **bad)
    return run(pytester, inventory, "-n", workers, *host_args("sim-a", "sim-b"), *args)


def assert_each_config_once(records: list[dict[str, Any]]) -> None:
    per_config = Counter(r["config_id"] for r in records)
    assert per_config == dict.fromkeys(per_config, 1), per_config
    assert len(per_config) == 4


def test_two_workers_two_hosts(pytester: pytest.Pytester) -> None:
    result, records = run_on_sims(pytester, "2")
    result.assert_outcomes(passed=8)
    assert_each_config_once(records)
    assert {r["host"] for r in records} == {"sim-a", "sim-b"}


def test_more_workers_than_hosts(pytester: pytest.Pytester) -> None:
    result, records = run_on_sims(pytester, "3")
    result.assert_outcomes(passed=8)
    assert_each_config_once(records)
    assert {r["host"] for r in records} == {"sim-a", "sim-b"}
    result.stdout.fnmatch_lines(["sglang: 3 workers asked for 2 host(s): running 2 worker(s)*"])


def test_fewer_workers_than_hosts(pytester: pytest.Pytester) -> None:
    result, records = run_on_sims(pytester, "1")
    result.assert_outcomes(passed=8)
    assert_each_config_once(records)
    assert len({r["host"] for r in records}) == 1


def test_a_failing_host_fails_only_its_configs(pytester: pytest.Pytester) -> None:
    result, records = run_on_sims(pytester, "2", **{"sim-b": "oom"})
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("errors", 0) == 8
    for record in records:
        assert record["outcome"] == ("failed" if record["host"] == "sim-b" else "ready"), record
    assert any(r["host"] == "sim-a" for r in records)
    result.stdout.fnmatch_lines(["*sim-b eagle-*: out of memory*"])


def test_two_systemd_hosts_side_by_side(
    pytester: pytest.Pytester, systemd_host_factory: Any
) -> None:
    # Two hosts of their own, and a service name each: the nspawn containers share the test
    # process's cgroup (--keep-unit), so equal unit names would share one cgroup path.
    first: SystemdTestHost = systemd_host_factory("xa")
    other: SystemdTestHost = systemd_host_factory("xb")
    inv = save_inventory(
        pytester.path / "hosts.toml",
        *(
            host_entry(
                name, host, f"sglang-xdist-{name}.service", {"SGLANG_SIM_STARTUP_SCALE": "0"}
            )
            for name, host in (("gpu-a", first), ("gpu-b", other))
        ),
    )
    pytester.makepyfile(SUITE)
    result, records = run(pytester, inv, "-n", "2", *host_args("gpu-a", "gpu-b"))
    result.assert_outcomes(passed=8)
    assert_each_config_once(records)
    assert {r["host"] for r in records} == {"gpu-a", "gpu-b"}
    for name, host in (("gpu-a", first), ("gpu-b", other)):
        state = host.ssh(f"systemctl is-active sglang-xdist-{name}.service").stdout.strip()
        assert state != "active"


def test_reports_merge_across_workers(pytester: pytest.Pytester) -> None:
    decode = """
from pytest_sglang.bench import Workload

@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_decode(sglang_bench):
    assert sglang_bench(Workload.single_stream(8), rounds=1).failed == 0
"""
    html = pytester.path / "summary.html"
    alluredir = pytester.path / "allure"
    result, records = run_on_sims(
        pytester,
        "2",
        "--alluredir",
        str(alluredir),
        "--sglang-html",
        str(html),
        suite=SUITE + decode,
    )
    result.assert_outcomes(passed=12)
    assert {r["host"] for r in records} == {"sim-a", "sim-b"}
    page = html.read_text()
    # the controller's terminal lists the workers' benchmarks (it runs none itself)
    table = result.stdout.str().split("sglang benchmarks", 1)[1].split("\n=", 1)[0]
    for steps in (1, 2, 3, 4):
        assert f"eagle-s{steps}-k1" in page
        assert f"eagle-s{steps}-k1" in table, table
    summaries = [
        p for p in alluredir.glob("*-result.json") if "sglang sweep summary" in p.read_text()
    ]
    assert len(summaries) == 1
    assert (alluredir / "environment.properties").read_text().count("sim-") >= 2


TOPOLOGIES = """
import pytest
from pytest_sglang import Router, ServerConfig, Topology, sweep

BASE = ServerConfig(model_path="/models/Qwen3-8B")
CONFIGS = sweep(BASE, topology=[Topology(router=Router(policy=p)) for p in ("random", "round_robin")])
CONFIGS += sweep(BASE.replace(tp_size=2), topology=[Topology(router=Router(policy="random"))])

@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_routed(sglang_server):
    assert sglang_server.get("/health").status_code == 200
    assert len({p.host for p in sglang_server.parts.values()}) == 2
"""


def test_each_worker_leases_the_hosts_of_its_topologies(pytester: pytest.Pytester) -> None:
    """Two workers, four hosts, topologies of two replicas: each worker holds two hosts for
    its configs' replicas, and no host serves two workers."""
    pytester.makepyfile(TOPOLOGIES)
    names = ("sim-a", "sim-b", "sim-c", "sim-d")
    inventory = save_inventory(pytester.path / "hosts.toml", *(local_entry(n) for n in names))
    result, records = run(pytester, inventory, "-n", "2", *host_args(*names))
    result.assert_outcomes(passed=3)
    topologies = [r for r in records if "+" in r["host"]]
    assert len(topologies) == 3, records
    pairs = {r["host"] for r in topologies}
    hosts = [h for pair in pairs for h in pair.split("+")]
    assert len(hosts) == len(set(hosts)) == 2 * len(pairs), pairs  # no host in two pairs


GROUPED = """
import os, pathlib
import pytest

pytestmark = pytest.mark.xdist_group("shared")

@pytest.mark.parametrize("n", range(6))
def test_grouped(n):
    pathlib.Path(f"ran-{n}").write_text(os.environ["PYTEST_XDIST_WORKER"])

@pytest.mark.parametrize("n", range(6))
def test_free(n):
    pass
"""


def test_a_modules_own_xdist_group_keeps_its_tests_on_one_worker(
    pytester: pytest.Pytester,
) -> None:
    """The plugin schedules by ``loadgroup``; a test's own ``xdist_group`` mark (a module that
    shares an expensive fixture) holds under pytest 9 too, where xdist cannot suffix node ids."""
    pytester.makepyfile(GROUPED)
    result = pytester.runpytest_subprocess("-p", "xdist", "-n", "3")
    result.assert_outcomes(passed=12)
    workers = {(pytester.path / f"ran-{n}").read_text() for n in range(6)}
    assert len(workers) == 1, workers


def test_a_worker_takes_whichever_host_frees_first(pytester: pytest.Pytester) -> None:
    """Another session holds one of two hosts: one worker takes the other, and the second worker
    must not wait for its own host (which its sibling may hold until the session ends, a
    deadlock) but take the first that frees."""
    a, b = f"lease-{os.getpid()}-a", f"lease-{os.getpid()}-b"
    pytester.makepyfile(SUITE)
    inventory = save_inventory(pytester.path / "hosts.toml", local_entry(a), local_entry(b))
    leases = Path(tempfile.gettempdir()) / "pytest-sglang-leases"
    leases.mkdir(exist_ok=True)
    # the same run's lease of host a (lock files are per run: ``--testrunuid``)
    with (leases / f"held-{a}.lock").open("a") as other_session:
        fcntl.flock(other_session, fcntl.LOCK_EX)
        threading.Timer(5.0, other_session.close).start()
        result = pytester.runpytest_subprocess(
            "-p",
            "xdist",
            "-n",
            "2",
            "--testrunuid",
            "held",
            *host_args(a, b),
            "--sglang-inventory",
            str(inventory),
            timeout=120,
        )
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines([f"{a}*ready*"])  # freed by the other session, then taken
