"""Replicas behind SGLang's real router (``sglang-router``), on simulators of this machine.

The router is the real Rust binary the users run; the replicas are simulator processes, each a
local host of its own (``local``, ``local.2``). What is held: the router routes to every replica
and is ready only when it sees them all healthy; a sweep over router policies keeps the same
replicas up; benchmarks go through the router and are broken down per replica; a replica killed
mid-session is named as the part that failed, and the router retried its requests on the other;
a part that cannot start is one line naming it; the session leaves nothing running.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from .conftest import wait_for

pytestmark = pytest.mark.usefixtures("fast_simulator")

ROUTED = """
import pytest
from pytest_sglang import Router, ServerConfig, Topology, Workload, sweep

BASE = ServerConfig(model_path="/models/Qwen3-8B")
CONFIGS = sweep(BASE, topology=[Topology(router=Router(policy=p)) for p in ("round_robin", "random")])
GENERATE = {"text": "hi", "sampling_params": {"max_new_tokens": 2}}


@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_through_the_router(sglang_server):
    for _ in range(6):
        assert sglang_server.post("/generate", json=GENERATE).status_code == 200
    workers = sglang_server.router.workers()
    assert sorted(w["url"] for w in workers) == sorted(
        p.base_url for p in sglang_server.parts.values()
    )
    assert all(w["is_healthy"] for w in workers)
    with open("pids", "a") as fh:
        fh.write(f"{sglang_server.router._proc.pid}\\n")
        for part in sglang_server.parts.values():
            fh.write(f"{part.deployer.state().main_pid}\\n")
    if sglang_server.config.topology.router.policy == "round_robin":
        assert sglang_server.requests_by_part() == {
            "replica-1": {"success": 3.0}, "replica-2": {"success": 3.0}
        }


@pytest.mark.parametrize("sglang_server", CONFIGS[:1], indirect=True)
def test_bench(sglang_bench):
    result = sglang_bench(Workload.fixed_concurrency(4, num_requests=8, output_tokens=8), rounds=1)
    assert result.completed == 8 and result.failed == 0
"""


def test_replicas_behind_the_router(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(ROUTED)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    text = result.stdout.str()
    # two topologies, one pair of replicas: the policy sweep did not restart them
    result.stdout.fnmatch_lines(
        [
            "*base-dp2-round-robin: router (round_robin) in front of replica-1 on local, "
            "replica-2 on local.2*",
            "*local+local.2*base-dp2-random*ready*",
            "*base-dp2-round-robin concurrency-4: requests by part: replica-1 *, replica-2 *",
        ]
    )
    assert text.count("local.2 base: ready and verified") == 1
    assert text.count("local base: ready and verified") == 1
    for pid in {int(p) for p in (pytester.path / "pids").read_text().split()}:
        with pytest.raises(ProcessLookupError):  # router and replicas: all gone
            os.kill(pid, 0)


KILLED = """
import os, signal, time
import pytest
from pytest_sglang import ServerConfig, Topology, Router

CONFIG = ServerConfig(model_path="/models/Qwen3-8B", topology=Topology(router=Router(policy="round_robin")))
GENERATE = {"text": "hi", "sampling_params": {"max_new_tokens": 2}}


@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_a_replica_dies(sglang_server):
    victim = sglang_server.parts["replica-2"].deployer.state().main_pid
    os.killpg(victim, signal.SIGKILL)
    time.sleep(0.5)
    for _ in range(6):  # each one it sends to the dead replica, it retries on the other
        assert sglang_server.post("/generate", json=GENERATE).status_code == 200
    by_part = sglang_server.requests_by_part()
    assert by_part["replica-1"]["success"] == 6
    assert "success" not in by_part.get("replica-2", {})


@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_next(sglang_server):
    pass
"""


def test_a_killed_replica_is_retried_then_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(KILLED)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*topology part replica-2: local.2 base: the server ended after it was ready: *"]
    )


ROUTER_ONLY = """
import pytest
from pytest_sglang import ServerConfig, Topology


@pytest.mark.parametrize("sglang_server", [ServerConfig(model_path="/m", topology=Topology())], indirect=True)
def test_it(sglang_server):
    pass
"""

#: Every replica's simulator runs out of memory at KV cache allocation.
FAILING = ROUTER_ONLY.replace("Topology()", 'Topology(), env={"SGLANG_SIM_FAULT": "oom"}')


def test_a_replica_that_cannot_start_is_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FAILING)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    # both fail the same way: the first to fail is the topology's error
    result.stdout.fnmatch_lines(["*topology part replica-? on local*: *out of memory*"])
    assert "Traceback" not in result.stdout.str()
    # the summary records it on the hosts it was placed on, not the session's one host
    result.stdout.fnmatch_lines(["local+local.2 *-dp2-cache-aware *failed*"])


def test_a_router_that_cannot_start_is_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(ROUTER_ONLY)
    result = pytester.runpytest("-p", "no:cacheprovider", "--sglang-router-launch", "false")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*topology part router: the router exited with status 1 before it was ready*"]
    )


def test_a_router_flag_it_refuses_is_named_with_its_own_words(pytester: pytest.Pytester) -> None:
    """The real router's own refusal, classified (tests/data/router/: its failures)."""
    bogus = 'Topology(router=Router(args=("--bogus-flag",)))'
    pytester.makepyfile(
        ROUTER_ONLY.replace("Topology()", bogus).replace(
            "import ServerConfig, Topology", "import Router, ServerConfig, Topology"
        )
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*topology part router: bad flag: launch_router.py: error: unrecognized arguments: "
            "--bogus-flag (the router exited with status 2 before it was ready)*"
        ]
    )


def test_too_few_hosts_is_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(ROUTER_ONLY.replace("Topology()", "Topology(replicas=3)"))
    inventory = pytester.path / "hosts.toml"
    inventory.write_text('[hosts.a]\nssh = "local"\n\n[hosts.b]\nssh = "local"\n')
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--sglang-inventory",
        str(inventory),
        "--sglang-host",
        "a",
        "--sglang-host",
        "b",
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*base-dp3-cache-aware: its topology runs 3 replicas, each on a host of its own, and the "
            "session has 2 host(s) (a, b)*"
        ]
    )


KILLED_SESSION = """
import pathlib, time
import pytest
from pytest_sglang import ServerConfig, Topology

@pytest.mark.parametrize(
    "sglang_server", [ServerConfig(model_path="/m", topology=Topology())], indirect=True
)
def test_long(sglang_server):
    pids = [sglang_server.router._proc.pid]
    pids += [p.deployer.state().main_pid for p in sglang_server.parts.values()]
    pathlib.Path("pids").write_text(" ".join(map(str, pids)))
    pathlib.Path({marker!r}).write_text("x")
    time.sleep(120)
"""


def test_a_killed_session_leaves_no_router_and_the_next_restores_the_replicas(
    pytester: pytest.Pytester, session_until: Any
) -> None:
    """SIGKILL: the router dies with the session (it asked the kernel to), the replicas are
    orphaned; the next session finds both replicas' records and stops them."""
    marker = pytester.path / "deployed"
    pytester.makepyfile(KILLED_SESSION.format(marker=str(marker)))
    proc = session_until(marker)
    router, *replicas = (int(p) for p in (pytester.path / "pids").read_text().split())
    records = Path(os.environ["HOME"]).glob(".local/state/pytest-sglang/process/*/manifest.json")
    names = [r.parent.name for r in records]  # one record per replica's deployer
    assert len(names) == 2 and all(n.startswith(f"local-{proc.pid}-") for n in names), names
    proc.kill()
    proc.wait(timeout=30)
    wait_for(lambda: not _running(router), "the router to die with its session", timeout=20)
    assert all(_running(pid) for pid in replicas)  # orphaned until the next session
    result = pytester.runpytest_subprocess("--sglang-restore", "--sglang-host", "local")
    result.stdout.fnmatch_lines(["*found the intent record of *pid*restoring it first*"])
    for pid in replicas:
        wait_for(lambda pid=pid: not _running(pid), "an orphaned replica to stop", timeout=40)


def test_an_interrupted_session_stops_the_router_and_restores_every_replica(
    pytester: pytest.Pytester, session_until: Any
) -> None:
    """SIGINT (Ctrl-C) while a topology is up: the session ends by restoring both replicas'
    hosts and stopping the router; nothing is left running and no record stays behind."""
    marker = pytester.path / "deployed"
    pytester.makepyfile(KILLED_SESSION.format(marker=str(marker)))
    proc = session_until(marker)
    pids = [int(p) for p in (pytester.path / "pids").read_text().split()]
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    for pid in pids:
        wait_for(lambda pid=pid: not _running(pid), "every part to stop", timeout=20)
    state = Path(os.environ["HOME"]) / ".local/state/pytest-sglang/process"
    mine = [
        r for r in state.glob("*/manifest.json") if r.parent.name.startswith(f"local-{proc.pid}-")
    ]
    assert mine == []


def _running(pid: int) -> bool:
    """Running (a zombie nobody reaped yet is not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


NODES = """
import pytest
from pytest_sglang import Router, ServerConfig, Topology

BASE = ServerConfig(model_path="/models/Qwen3-8B", tp_size=2)
TWO_NODES = BASE.replace(topology=Topology(replicas=1, nodes=2, router=None))
TWO_BY_TWO = BASE.replace(topology=Topology(replicas=2, nodes=2, router=Router(policy="round_robin")))
GENERATE = {"text": "hi", "sampling_params": {"max_new_tokens": 2}}


@pytest.mark.parametrize("sglang_server", [TWO_NODES, TWO_BY_TWO], indirect=True)
def test_nodes(sglang_server):
    shape = sglang_server.config.topology
    for r in range(1, shape.replicas + 1):
        first = sglang_server.parts[f"replica-{r}.node-0"]
        other = sglang_server.parts[f"replica-{r}.node-1"]
        assert first.server_args["nnodes"] == 2 and first.server_args["node_rank"] == 0
        assert other.server_args["node_rank"] == 1  # verified from its own journal
        assert other.server_args["dist_init_addr"] == first.server_args["dist_init_addr"]
        assert other.get("/health").status_code == 200
    for _ in range(4):
        assert sglang_server.post("/generate", json=GENERATE).status_code == 200
    with open("pids", "a") as fh:
        for part in sglang_server.parts.values():
            fh.write(f"{part.deployer.state().main_pid}\\n")
"""


def test_multi_node_replicas(pytester: pytest.Pytester) -> None:
    """A replica over two nodes (one host each): the first serves, the other joins it and runs
    only a health server; alone, and two such replicas behind the router."""
    pytester.makepyfile(NODES)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*local.2 tp2: ready and verified*",
            "*tp2-dp2-nn2-round-robin: router (round_robin) in front of replica-1.node-0 on "
            "local, replica-2.node-0 on local.3*",
        ]
    )
    result.stdout.fnmatch_lines(["*local+local.2 *tp2-dp1-nn2 *ready*"])
    for pid in {int(p) for p in (pytester.path / "pids").read_text().split()}:
        wait_for(lambda pid=pid: not _running(pid), "every node to stop", timeout=20)


#: A replica over two nodes whose follower dies at KV allocation while its first node is still
#: loading (600 s more): without failing fast the first node would be waited for until the ready
#: timeout, as it waits for the follower for ever.
FOLLOWER_DIES = """
import pytest
from pytest_sglang import ServerConfig, Topology

CONFIG = ServerConfig(
    model_path="/models/failfast-MARK",
    tp_size=2,
    topology=Topology(replicas=1, nodes=2, router=None),
    env={"SGLANG_SIM_FAULT": "oom@--node-rank=1;slow-start=600@--node-rank=0"},
)


@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_it(sglang_server):
    pass
"""


def _sim_processes(marker: str) -> list[int]:
    """The running processes whose command line has ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and _running(int(entry.name)):
            found.append(int(entry.name))
    return found


def test_a_failed_part_gives_up_the_others(pytester: pytest.Pytester) -> None:
    """Fail fast: the follower's failure is the topology's error at once, the first node (which
    would wait for it for ever) is given up and stopped, not waited for until the timeout."""
    marker = f"failfast-{os.getpid()}"
    pytester.makepyfile(FOLLOWER_DIES.replace("failfast-MARK", marker))
    result = pytester.runpytest("-p", "no:cacheprovider", "--sglang-ready-timeout", "300")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*local tp2-*: not waited for: topology part replica-1.node-1 failed first; stopped*",
            "*topology part replica-1.node-1 on local.2: *",
        ]
    )
    assert "not ready in time" not in result.stdout.str()
    assert "Traceback" not in result.stdout.str()
    wait_for(lambda: not _sim_processes(marker), "both nodes to stop", timeout=20)


GATED = """
import pytest
from pytest_sglang import Router, ServerConfig, Topology, Workload

CONFIG = ServerConfig(model_path="/models/Qwen3-8B", topology=Topology(router=Router(policy="round_robin")))


@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_bench(sglang_bench):
    sglang_bench(Workload.fixed_concurrency(4, num_requests=8, output_tokens=8))
"""


def test_a_topology_is_baselined_and_gated_like_a_config(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(GATED)
    baselines = str(pytester.path / "baselines")
    saved = pytester.runpytest(
        "-p", "no:cacheprovider", "--sglang-baseline-dir", baselines, "--sglang-baseline-save"
    )
    saved.assert_outcomes(passed=1)
    assert any(p.name.startswith("base-dp2-round-robin-") for p in Path(baselines).rglob("*"))
    again = pytester.runpytest(
        "-p", "no:cacheprovider", "--sglang-baseline-dir", baselines, "--sglang-baseline-require",
        "--sglang-gate", "output_throughput:-60%",
        # microsecond medians at no simulated time: noise, not what this test is about
        "--sglang-gate", "median_itl_ms:off", "--sglang-gate", "median_ttft_ms:off",
    )  # fmt: skip
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["*base-dp2-round-robin*concurrency-4*"])


DISAGGREGATED = """
import pytest
from pytest_sglang import ServerConfig, Topology, Workload, sweep

BASE = ServerConfig(model_path="/models/Qwen3-8B", name="qwen", extra_args=("--enable-metrics",))
CONFIGS = sweep(BASE, topology=[Topology(prefill=1, decode=1, prefill_tp=p, decode_tp=2) for p in (1, 2)])


@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_pd(sglang_bench, sglang_server):
    prefill, decode = sglang_server.parts["prefill-1"], sglang_server.parts["decode-1"]
    assert prefill.server_args["disaggregation_mode"] == "prefill"
    assert decode.server_args["disaggregation_mode"] == "decode"
    assert prefill.server_args["tp_size"] == sglang_server.config.topology.prefill_tp
    workers = {w["url"]: w["worker_type"] for w in sglang_server.router.workers()}
    assert workers == {prefill.base_url: "prefill", decode.base_url: "decode"}
    result = sglang_bench(Workload.fixed_concurrency(4, num_requests=8, output_tokens=8), rounds=1)
    assert result.failed == 0 and result.total_output_tokens == 64
"""


def test_prefill_and_decode_behind_the_router_in_pd_mode(pytester: pytest.Pytester) -> None:
    """The real router in PD mode in front of a prefill and a decode simulator: it sends each
    request to both; the decode server takes the prompt's KV from the prefill server (through
    its bootstrap port) and answers. Prefill TP swept against decode TP, per GPU."""
    pytester.makepyfile(DISAGGREGATED)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*qwen-pd1x1-ptp1-dtp2-cache-aware: router (cache_aware, PD) in front of prefill-1 "
            "on local, decode-1 on local.2*",
            "*qwen-pd1x1-ptp1-dtp2-cache-aware*(3 GPU)*",
        ]
    )
    # each server's own /metrics: the prefill server's requests end at the hand-over
    result.stdout.fnmatch_lines(
        ["*requests by part: decode-1 * s each on it, TTFT *), prefill-1 * s each on it*"]
    )


DRAINED = """
import os, signal, time
import pytest
import requests
from pytest_sglang import Router, ServerConfig, Topology

ROUTER = Router(policy="round_robin", args=("--health-check-interval-secs", "1"))
CONFIG = ServerConfig(model_path="/models/Qwen3-8B", topology=Topology(router=ROUTER))
GENERATE = {"text": "hi", "sampling_params": {"max_new_tokens": 2}}


@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_a_replica_drains(sglang_server):
    os.kill(sglang_server.parts["replica-2"].deployer.state().main_pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready = requests.get(sglang_server.url("/readiness"), timeout=5).json()
        if ready.get("healthy_workers") == 1:
            break
        time.sleep(0.2)
    assert ready == {"status": "ready", "healthy_workers": 1, "total_workers": 2}
    before = sglang_server.requests_by_part()
    for _ in range(4):
        assert sglang_server.post("/generate", json=GENERATE).status_code == 200
    after = sglang_server.requests_by_part()
    done = after["replica-1"]["success"] - before.get("replica-1", {}).get("success", 0)
    assert done == 4
    # started again where the router knew it: it is added back and served again
    old_url = sglang_server.parts["replica-2"].base_url
    fresh = sglang_server.restart_part("replica-2", timeout=60)
    assert fresh.base_url == old_url and sglang_server.parts["replica-2"] is fresh
    ready = requests.get(sglang_server.url("/readiness"), timeout=5).json()
    assert ready == {"status": "ready", "healthy_workers": 2, "total_workers": 2}
    for _ in range(4):
        assert sglang_server.post("/generate", json=GENERATE).status_code == 200
    again = sglang_server.requests_by_part()
    assert again["replica-2"]["success"] - after.get("replica-2", {}).get("success", 0) == 2


@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_the_restarted_replica_is_up(sglang_server):
    sglang_server.check_still_running()
"""


def test_a_drained_replica_leaves_the_routers_readiness(pytester: pytest.Pytester) -> None:
    """SIGTERM to a replica: it drains and ends; the router's health checks take it out of
    ``/readiness`` and every request goes to the other. Started again (``restart_part``) at
    its own address, the router adds it back, and the next test finds the topology up."""
    pytester.makepyfile(DRAINED)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*local.2 *base *restarted*"])
