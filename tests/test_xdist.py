"""pytest-xdist across hosts: one host per worker, each config deployed once, one summary."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
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


@pytest.fixture(autouse=True)
def fast_simulator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_SIM_STARTUP_SCALE", "0")
    monkeypatch.setenv("SGLANG_SIM_TIME_SCALE", "0")


def local_inventory(path: Path, **bad: str) -> Path:
    lines = []
    for name in ("sim-a", "sim-b"):
        env = f'env = {{ SGLANG_SIM_FAULT = "{bad[name]}" }}\n' if name in bad else ""
        lines.append(f'[hosts.{name}]\nssh = "local"\n{env}')
    path.write_text("\n".join(lines))
    return path


def run(pytester: pytest.Pytester, inventory: Path, *args: str) -> tuple[Any, list[dict[str, Any]]]:
    out = pytester.path / "summary.json"
    result = pytester.runpytest(
        "-p", "xdist", *args, "--sglang-inventory", str(inventory), "--sglang-summary", str(out)
    )
    return result, json.loads(out.read_text())["deployments"]


def assert_each_config_once(records: list[dict[str, Any]]) -> None:
    per_config = Counter(r["config_id"] for r in records)
    assert per_config == dict.fromkeys(per_config, 1), per_config
    assert len(per_config) == 4


def test_two_workers_two_hosts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SUITE)
    inv = local_inventory(pytester.path / "hosts.toml")
    result, records = run(
        pytester, inv, "-n", "2", "--sglang-host", "sim-a", "--sglang-host", "sim-b"
    )
    result.assert_outcomes(passed=8)
    assert_each_config_once(records)
    assert {r["host"] for r in records} == {"sim-a", "sim-b"}


def test_more_workers_than_hosts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SUITE)
    inv = local_inventory(pytester.path / "hosts.toml")
    result, records = run(
        pytester, inv, "-n", "3", "--sglang-host", "sim-a", "--sglang-host", "sim-b"
    )
    result.assert_outcomes(passed=8)
    assert_each_config_once(records)
    assert {r["host"] for r in records} == {"sim-a", "sim-b"}
    result.stdout.fnmatch_lines(["sglang: 3 workers asked for 2 host(s): running 2 worker(s)*"])


def test_fewer_workers_than_hosts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SUITE)
    inv = local_inventory(pytester.path / "hosts.toml")
    result, records = run(
        pytester, inv, "-n", "1", "--sglang-host", "sim-a", "--sglang-host", "sim-b"
    )
    result.assert_outcomes(passed=8)
    assert_each_config_once(records)
    assert len({r["host"] for r in records}) == 1


def test_a_failing_host_fails_only_its_configs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SUITE)
    inv = local_inventory(pytester.path / "hosts.toml", **{"sim-b": "oom"})
    result, records = run(
        pytester, inv, "-n", "2", "--sglang-host", "sim-a", "--sglang-host", "sim-b"
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("errors", 0) == 8
    for record in records:
        assert record["outcome"] == ("failed" if record["host"] == "sim-b" else "ready"), record
    assert any(r["host"] == "sim-a" for r in records)
    result.stdout.fnmatch_lines(["*sim-b eagle-*: out of memory*"])


def test_two_systemd_hosts_side_by_side(
    pytester: pytest.Pytester, systemd_host_factory: Any
) -> None:
    import sys

    # Two hosts of their own, and a service name each: the nspawn containers share the test
    # process's cgroup (--keep-unit), so equal unit names would share one cgroup path.
    first: SystemdTestHost = systemd_host_factory("xa")
    other: SystemdTestHost = systemd_host_factory("xb")
    entries = []
    for name, host in (("gpu-a", first), ("gpu-b", other)):
        entries.append(
            f"""[hosts.{name}]
ssh = "root@{host.ip}:22"
service = "sglang-xdist-{name}.service"
launch = "{sys.executable} -m pytest_sglang.sim"
known_hosts = "{host.known_hosts_path}"
identity = "{host.key_path}"
env = {{ SGLANG_SIM_STARTUP_SCALE = "0" }}
"""
        )
    inv = pytester.path / "hosts.toml"
    inv.write_text("\n".join(entries))
    pytester.makepyfile(SUITE)
    result, records = run(
        pytester, inv, "-n", "2", "--sglang-host", "gpu-a", "--sglang-host", "gpu-b"
    )
    result.assert_outcomes(passed=8)
    assert_each_config_once(records)
    assert {r["host"] for r in records} == {"gpu-a", "gpu-b"}
    for name, host in (("gpu-a", first), ("gpu-b", other)):
        state = host.ssh(f"systemctl is-active sglang-xdist-{name}.service").stdout.strip()
        assert state != "active"


def test_reports_merge_across_workers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        SUITE
        + """
from pytest_sglang.bench import Workload

@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_decode(sglang_bench):
    assert sglang_bench(Workload.single_stream(8), rounds=1).failed == 0
"""
    )
    inv = local_inventory(pytester.path / "hosts.toml")
    html = pytester.path / "summary.html"
    alluredir = pytester.path / "allure"
    result, records = run(
        pytester,
        inv,
        "-n",
        "2",
        "--sglang-host",
        "sim-a",
        "--sglang-host",
        "sim-b",
        "--alluredir",
        str(alluredir),
        "--sglang-html",
        str(html),
    )
    result.assert_outcomes(passed=12)
    assert {r["host"] for r in records} == {"sim-a", "sim-b"}
    page = html.read_text()
    for steps in (1, 2, 3, 4):
        assert f"eagle-s{steps}-k1" in page
    summaries = [
        p for p in alluredir.glob("*-result.json") if "sglang sweep summary" in p.read_text()
    ]
    assert len(summaries) == 1
    assert (alluredir / "environment.properties").read_text().count("sim-") >= 2
