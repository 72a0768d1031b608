"""A topology is part of a config: its id, digest, sweeps, validation and placement."""

from __future__ import annotations

import pytest

from pytest_sglang import ConfigError, ServerConfig
from pytest_sglang.lifecycle.topology_deployment import placement
from pytest_sglang.sweep import sweep
from pytest_sglang.topology import ROUTER_POLICIES, Router, Topology

BASE = ServerConfig(model_path="/models/Qwen3-8B", tp_size=2)


def test_the_topology_is_in_the_id_and_the_digest() -> None:
    dp2 = BASE.replace(topology=Topology(router=Router(policy="round_robin")))
    assert dp2.id == "tp2-dp2-round-robin"
    assert dp2.digest != BASE.digest
    assert dp2.replica() == BASE and dp2.replica().digest == BASE.digest
    assert BASE.replace(topology=Topology(replicas=3)).id == "tp2-dp3-cache-aware"
    flags = Topology(router=Router(args=("--health-check-interval-secs", "5")))
    assert BASE.replace(topology=flags).id.startswith("tp2-dp2-cache-aware-r")


def test_a_config_without_a_topology_keeps_its_digest() -> None:
    """Baselines recorded before topologies existed stay keyed by the same digest."""
    assert BASE.digest == ServerConfig(model_path="/models/Qwen3-8B", tp_size=2).digest
    assert "topology" not in BASE.model_dump(exclude_defaults=True)


def test_a_sweep_over_router_policies() -> None:
    configs = sweep(
        BASE.replace(name="prod"),
        topology=[Topology(router=Router(policy=p)) for p in ROUTER_POLICIES],
    )
    assert [c.id for c in configs] == [f"prod-dp2-{p.replace('_', '-')}" for p in ROUTER_POLICIES]
    assert len({c.replica().digest for c in configs}) == 1  # one replica config for all


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        ({"replicas": 0}, "topology.replicas"),
        ({"router": {"policy": "fastest"}}, "topology.router.policy"),
        ({"router": {"args": ("--port", "1")}}, "--port is set by pytest-sglang"),
        ({"router": {"args": ("verbose",)}}, "is no flag"),
        ({"router": {"args": ("--log-level\ninfo",)}}, "newline"),
    ],
)
def test_a_bad_topology_is_one_line_naming_the_field(
    topology: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        ServerConfig(model_path="/m", topology=topology)
    assert "\n" not in str(caught.value)


def test_placement_needs_a_host_per_replica() -> None:
    config = BASE.replace(topology=Topology(replicas=3))
    assert placement(config, ["a", "b", "c", "d"]) == ["a", "b", "c"]
    with pytest.raises(ConfigError) as caught:
        placement(config, ["a", "b"])
    assert str(caught.value) == (
        "tp2-dp3-cache-aware: its topology runs 3 replicas, each on a host of its own, and the "
        "session has 2 host(s) (a, b); name 3 with --sglang-host (the local simulator runs as "
        "many as asked)"
    )


def test_replicas_over_several_nodes() -> None:
    two = Topology(replicas=1, nodes=2, router=None)
    assert BASE.replace(topology=two).id == "tp2-dp1-nn2"
    assert two.parts == ("replica-1.node-0", "replica-1.node-1") and two.hosts_needed == 2
    grid = Topology(replicas=2, nodes=2)
    assert grid.parts[-1] == "router" and grid.hosts_needed == 4
    with pytest.raises(ConfigError, match="router: 2 replicas need a router"):
        ServerConfig(model_path="/m", topology={"replicas": 2, "router": None})
    with pytest.raises(ConfigError) as caught:
        placement(BASE.replace(topology=grid), ["a", "b", "c"])
    assert "runs 2 replicas of 2 nodes, each on a host of its own" in str(caught.value)


def test_each_node_gets_sglangs_multi_node_flags() -> None:
    from pytest_sglang.lifecycle.spec import HostSpec
    from pytest_sglang.lifecycle.topology_deployment import node_configs

    gpu = HostSpec(name="gpu-01", kind="ssh", launch="python -m sglang.launch_server")
    gpu = HostSpec(**{**gpu.__dict__, "hostname": "10.0.0.5"})
    first, second = node_configs(BASE, 2, gpu, None)
    assert first.extra_args == (
        "--nnodes", "2", "--node-rank", "0", "--dist-init-addr", "10.0.0.5:5000",
    )  # fmt: skip
    assert second.extra_args[3] == "1" and first.name == second.name == "tp2"
    assert node_configs(BASE, 1, gpu, None) == [BASE]


def test_prefill_and_decode_servers_apart() -> None:
    pd = Topology(prefill=1, decode=2, prefill_tp=2, decode_tp=4)
    assert BASE.replace(topology=pd).id == "tp2-pd1x2-ptp2-dtp4-cache-aware"
    assert pd.parts == ("prefill-1", "decode-1", "decode-2", "router")
    assert pd.hosts_needed == 3 and pd.disaggregated
    for bad, message in (
        ({"prefill": 1}, "needs at least one of each"),
        ({"prefill": 1, "decode": 1, "replicas": 2}, "counts prefill and decode instead"),
        ({"prefill": 1, "decode": 1, "router": None}, "joined by the router"),
        ({"decode_tp": 2}, "only with prefill and decode servers"),
    ):
        with pytest.raises(ConfigError, match=message):
            ServerConfig(model_path="/m", topology=bad)


def test_a_sweep_of_prefill_tp_against_decode_tp() -> None:
    shapes = [
        Topology(prefill=1, decode=1, prefill_tp=p, decode_tp=d) for p in (1, 2) for d in (2, 4)
    ]
    ids = [c.id for c in sweep(BASE.replace(name="qwen"), topology=shapes)]
    assert ids[0] == "qwen-pd1x1-ptp1-dtp2-cache-aware" and len(set(ids)) == 4
