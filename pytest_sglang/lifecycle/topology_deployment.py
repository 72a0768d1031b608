"""A topology brought up: its replicas on their hosts, ready and verified, and the router.

:func:`placement` says which host runs which replica (each replica needs a host of its own: a
host runs one config at a time); :func:`bring_up_topology` deploys the replicas at once, each
through its host's lease (its deployer, its journal check, its restore), then starts the router
in front of them and waits until the router sees every replica healthy. The result is a
:class:`TopologyDeployment`: a :class:`~.deployment.Deployment` whose address is the router's,
so that benchmarks, baselines and reports treat it as one config; its ``parts`` are the
replicas' own deployments.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import requests

from ..config import ServerConfig
from ..errors import ConfigError, ServerStartError, SglangError, StartAbandoned
from ..topology import Topology
from .deployment import Deployment
from .journal import StartupJournal
from .launch_plan import free_port
from .readiness import GiveUp
from .router import RouterProcess
from .spec import HostSpec

if TYPE_CHECKING:
    from .lease import HostLease

__all__ = [
    "BOOTSTRAP_PORT",
    "DIST_INIT_PORT",
    "TopologyDeployment",
    "bring_up_topology",
    "node_configs",
    "pd_configs",
    "placement",
]

#: ``--dist-init-addr``'s port on a GPU host when the topology names none (SGLang's docs' own).
DIST_INIT_PORT = 5000
#: A prefill server's ``--disaggregation-bootstrap-port`` on a GPU host (SGLang's default).
BOOTSTRAP_PORT = 8998


@dataclass
class TopologyDeployment(Deployment):
    """Replicas behind a router: ``base_url`` is the router's; ``parts`` maps each replica's
    part name (``replica-1``...) to its own deployment."""

    parts: dict[str, Deployment] = field(default_factory=dict)
    router: RouterProcess | None = field(default=None, repr=False)
    #: Each server part's host lease (what :meth:`restart_part` starts it again through).
    _leases: dict[str, HostLease] = field(default_factory=dict, repr=False)

    def restart_part(self, name: str, *, timeout: float = 600.0) -> Deployment:
        """Start server part ``name`` again (it was drained, killed or crashed; a rolling
        restart), from its own launch plan at its own address: deployed, waited for and
        verified as at first; then wait until the router counts every server healthy again
        (its health checks add the server back). The new deployment replaces the part's."""
        shape = self.config.topology
        if name not in self._leases or shape is None:
            known = ", ".join(self._leases) or "none"
            raise ConfigError(f"{self.config_id}: no server part {name!r} (its parts: {known})")
        if shape.nodes > 1:
            raise ConfigError(
                f"{self.config_id}: {name} is one node of a multi-node replica; its nodes start "
                "together (ask for the topology again in a new session)"
            )
        try:
            fresh = self._leases[name].restart(self.parts[name])
        except SglangError as exc:
            raise ServerStartError(
                f"topology part {name}: {exc}",
                reason=getattr(exc, "reason", "") or "failed",
                excerpt=getattr(exc, "excerpt", ""),
            ) from None
        self.parts[name] = fresh
        if self.router is not None:
            self.router.wait_healthy(timeout)
        return fresh

    def part_of(self, worker_url: str) -> str:
        """The part name of a replica's URL as the router names it."""
        for name, part in self.parts.items():
            if part.base_url.rstrip("/") == worker_url.rstrip("/"):
                return name
        return worker_url

    def requests_by_part(self) -> dict[str, dict[str, float]]:
        """What the router sent each replica so far, by outcome (``success``, ``failure``)."""
        if self.router is None:
            return {}
        return {self.part_of(url): counts for url, counts in self.router.outcomes().items()}

    @property
    def gpus(self) -> int:
        """GPUs the topology uses: each server's TP x DP x PP as it logged them (a multi-node
        replica's are counted once: its TP spans its nodes)."""
        shape = self.config.topology
        if shape is None:
            return 1
        if shape.disaggregated:
            names = list(shape.servers)
        else:
            names = [shape.node_parts(r)[0] for r in range(1, shape.replicas + 1)]
        total = 0
        for name in names:
            args = self.parts[name].server_args if name in self.parts else {}
            count = 1
            for key in ("tp_size", "dp_size", "pp_size"):
                value = args.get(key)
                count *= value if isinstance(value, int) and value > 0 else 1
            total += count
        return total

    def refresh_journal(self) -> StartupJournal:
        """The first replica's journal (each replica's is its part's)."""
        first = next(iter(self.parts.values()), None)
        return first.refresh_journal() if first is not None else self.journal

    def check_still_running(self) -> None:
        """As for one server, for each replica (naming the part) and for the router."""
        for name, part in self.parts.items():
            try:
                part.check_still_running()
            except ServerStartError as exc:
                raise ServerStartError(
                    f"topology part {name}: {exc}", reason=exc.reason, excerpt=exc.excerpt
                ) from None
        if self.router is not None and not self.router.running():
            raise self.router.failure("the router ended after it was ready")


def placement(config: ServerConfig, hosts: Sequence[str]) -> list[str]:
    """The host of each node of each replica, in part order: the first ones of ``hosts``. Too
    few hosts is a one-line ConfigError naming the config, what it needs and what the session
    has."""
    assert config.topology is not None
    needed = config.topology.hosts_needed
    if len(hosts) < needed:
        nodes = config.topology.nodes
        replicas = config.topology.replicas
        what = f"{replicas} replica{'s' if replicas > 1 else ''}" + (
            f" of {nodes} nodes" if nodes > 1 else ""
        )
        raise ConfigError(
            f"{config.id}: its topology runs {what}, each on a host of its own, and the session "
            f"has {len(hosts)} host(s) ({', '.join(hosts)}); name {needed} with --sglang-host "
            "(the local simulator runs as many as asked)"
        )
    return list(hosts[:needed])


def node_configs(
    replica: ServerConfig, nodes: int, first_node: HostSpec, port: int | None
) -> list[ServerConfig]:
    """What each node of one replica runs: the replica's config with SGLang's multi-node flags
    (``--nnodes``, ``--node-rank``, ``--dist-init-addr`` at the first node's address as the
    other nodes reach it). One node: the config as it is."""
    if nodes == 1:
        return [replica]
    local = first_node.kind == "local"
    address = "127.0.0.1" if local else first_node.hostname
    where = f"{address}:{port or (free_port() if local else DIST_INIT_PORT)}"
    return [
        replica.replace(
            name=replica.name or replica.id,  # the replica's name, not its flags' digest
            extra_args=(
                *replica.extra_args,
                *("--nnodes", str(nodes), "--node-rank", str(rank), "--dist-init-addr", where),
            ),
        )
        for rank in range(nodes)
    ]


def _part(lease: HostLease, config: ServerConfig, part: str, give_up: GiveUp) -> Deployment:
    """One part on its lease; its failure gives up the parts still starting (the first
    failure is the topology's)."""
    try:
        return lease.deployment(config, give_up=give_up)
    except StartAbandoned:
        raise
    except SglangError as exc:
        give_up.give_up(part)
        excerpt = getattr(exc, "excerpt", "")
        raise ServerStartError(
            f"topology part {part} on {lease.spec.name}: {exc}",
            reason=getattr(exc, "reason", "") or "failed",
            excerpt=excerpt,
        ) from None
    except BaseException:
        give_up.give_up(part)
        raise


def pd_configs(
    replica: ServerConfig, topology: Topology, leases: Sequence[HostLease]
) -> list[tuple[ServerConfig, int | None]]:
    """What each server of a PD topology runs, in :attr:`~.Topology.servers` order, with a
    prefill server's bootstrap port (where its decode servers fetch the KV cache from: a free
    port on this machine, else SGLang's default 8998)."""
    out: list[tuple[ServerConfig, int | None]] = []
    for name, lease in zip(topology.servers, leases):
        role = name.split("-")[0]
        tp = topology.prefill_tp if role == "prefill" else topology.decode_tp
        flags = ["--disaggregation-mode", role]
        port = None
        if role == "prefill":
            port = free_port() if lease.spec.kind == "local" else BOOTSTRAP_PORT
            flags += ["--disaggregation-bootstrap-port", str(port)]
        changes: dict[str, object] = {"extra_args": (*replica.extra_args, *flags)}
        if tp is not None:
            changes["tp_size"] = tp
        out.append((replica.replace(name=replica.name or replica.id, **changes), port))
    return out


def _run_parts(
    jobs: Sequence[tuple[HostLease, ServerConfig, str]],
) -> dict[str, Deployment]:
    """Every part at once (a first node waits for the others; a decode server for nothing).

    Fails fast: the first part that fails gives up the others still starting (each stops at
    its next turn, within seconds, instead of waiting out its own start: minutes on a GPU
    host, or for ever where a first node waits for a follower that died), and its error is
    the one raised; the parts already up stay up (the session restores every host)."""
    give_up = GiveUp()
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = [pool.submit(_part, lease, cfg, name, give_up) for lease, cfg, name in jobs]
    by_name = {name: future for (_, _, name), future in zip(jobs, futures)}
    if give_up.given_up:
        by_name[give_up.cause].result()  # raises the first failure
    return {name: future.result() for name, future in by_name.items()}


def _bring_up_parts(
    config: ServerConfig, leases: Sequence[HostLease]
) -> tuple[dict[str, Deployment], list[str]]:
    """Every node of every replica at once (a first node waits for the others to join it):
    ``(parts by name, the names of the parts that serve: each replica's first node)``."""
    topology = config.topology
    assert topology is not None
    jobs: list[tuple[HostLease, ServerConfig, str]] = []
    entries: list[str] = []
    for r in range(topology.replicas):
        names = topology.node_parts(r + 1)
        mine = leases[r * topology.nodes : (r + 1) * topology.nodes]
        replica = mine[0].effective(config.replica())  # a production placeholder applied
        configs = node_configs(replica, topology.nodes, mine[0].spec, topology.dist_init_port)
        jobs += list(zip(mine, configs, names))
        entries.append(names[0])
    return _run_parts(jobs), entries


def _start_router(
    config: ServerConfig,
    leases: Sequence[HostLease],
    launch: Sequence[str],
    say: Callable[[str], None],
) -> tuple[dict[str, Deployment], RouterProcess | None, list[str]]:
    """The servers, then the router in front of them (PD mode for a PD topology): ``(parts,
    router, the parts the router routes to)``."""
    topology = config.topology
    assert topology is not None
    router: RouterProcess | None = None
    if topology.disaggregated:
        replica = leases[0].effective(config.replica())
        planned = pd_configs(replica, topology, leases)
        names = list(topology.servers)
        parts = _run_parts([(ls, cfg, n) for ls, (cfg, _), n in zip(leases, planned, names)])
        prefill = [(parts[n].base_url, port or 0) for n, (_, port) in zip(names, planned) if port]
        decode = [parts[n].base_url for n in names if n.startswith("decode-")]
        assert topology.router is not None
        router = RouterProcess(launch, topology.router, [], pd=(prefill, decode))
        entries = names
    else:
        parts, entries = _bring_up_parts(config, leases)
        urls = [parts[name].base_url for name in entries]
        if topology.router is not None:
            router = RouterProcess(launch, topology.router, urls)
    if router is not None:
        assert topology.router is not None
        say(
            f"[sglang] {config.id}: router ({topology.router.policy}"
            + (", PD" if topology.disaggregated else "")
            + ") in front of "
            + ", ".join(f"{name} on {parts[name].host}" for name in entries)
        )
    return parts, router, entries


def bring_up_topology(
    config: ServerConfig,
    leases: Sequence[HostLease],
    *,
    router_launch: Sequence[str],
    ready_timeout: float,
    say: Callable[[str], None],
) -> TopologyDeployment:
    """Every part of ``config`` on its lease (at once), then the router in front of the
    replicas. The first part that fails is named in the one-line error and the others still
    starting are given up (stopped); the parts that came up stay up for the next config, and
    the session restores them all."""
    topology = config.topology
    assert topology is not None
    parts, router, entries = _start_router(config, leases, router_launch, say)
    started = time.monotonic()
    if router is not None:
        router.start(timeout=ready_timeout)
    router_s = time.monotonic() - started
    first = parts[entries[-1] if topology.disaggregated else entries[0]]  # the one that answers
    own = {f.name: getattr(first, f.name) for f in dataclasses.fields(Deployment)}
    own.update(
        host="+".join(part.host for part in parts.values()),
        # what the replicas run (a production placeholder applied), with the topology; not
        # the nodes' own flags (their rendezvous port changes between sessions)
        config=leases[0].effective(config.replica()).replace(topology=topology),
        deployed=first.deployed.replace(topology=topology),
        resolved=first.resolved.replace(topology=topology),
        base_url=router.base_url if router is not None else first.base_url,
        http=requests.Session() if router is not None else first.http,
        timings={
            "ready_s": max(p.timings.get("ready_s", 0.0) for p in parts.values()) + router_s,
            "router_ready_s": router_s,
        },
        plan=None if router is not None else first.plan,
        _origin=None,
    )
    leases_by_part = dict(zip(topology.servers, leases))
    return TopologyDeployment(**own, parts=parts, router=router, _leases=leases_by_part)
