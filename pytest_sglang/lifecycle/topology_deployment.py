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
from ..errors import ConfigError, ServerStartError, SglangError
from .deployment import Deployment
from .journal import StartupJournal
from .router import RouterProcess

if TYPE_CHECKING:
    from .lease import HostLease

__all__ = ["TopologyDeployment", "bring_up_topology", "placement"]


@dataclass
class TopologyDeployment(Deployment):
    """Replicas behind a router: ``base_url`` is the router's; ``parts`` maps each replica's
    part name (``replica-1``...) to its own deployment."""

    parts: dict[str, Deployment] = field(default_factory=dict)
    router: RouterProcess | None = field(default=None, repr=False)

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
            raise ServerStartError(
                "topology part router: the router ended after it was ready",
                reason="router failed",
                excerpt=self.router.log_tail(),
            )


def placement(config: ServerConfig, hosts: Sequence[str]) -> list[str]:
    """The host of each replica, in order: the first ``replicas`` of ``hosts``. Too few hosts
    is a one-line ConfigError naming the config, what it needs and what the session has."""
    assert config.topology is not None
    needed = config.topology.replicas
    if len(hosts) < needed:
        raise ConfigError(
            f"{config.id}: its topology runs {needed} replicas, each on a host of its own, and "
            f"the session has {len(hosts)} host(s) ({', '.join(hosts)}); name {needed} with "
            "--sglang-host (the local simulator runs as many as asked)"
        )
    return list(hosts[:needed])


def _replica(lease: HostLease, config: ServerConfig, part: str) -> Deployment:
    try:
        return lease.deployment(config)
    except SglangError as exc:
        excerpt = getattr(exc, "excerpt", "")
        raise ServerStartError(
            f"topology part {part} on {lease.spec.name}: {exc}",
            reason=getattr(exc, "reason", "") or "failed",
            excerpt=excerpt,
        ) from None


def bring_up_topology(
    config: ServerConfig,
    leases: Sequence[HostLease],
    *,
    router_launch: Sequence[str],
    ready_timeout: float,
    say: Callable[[str], None],
) -> TopologyDeployment:
    """Every replica of ``config`` on its lease (at once), then the router in front of them.
    A part that fails is named in the one-line error (the first, in part order); the replicas
    that came up stay up for the next config, and the session restores them all."""
    assert config.topology is not None
    replica = config.replica()
    names = config.topology.parts[:-1]
    with ThreadPoolExecutor(max_workers=len(leases)) as pool:
        futures = [
            pool.submit(_replica, lease, replica, name) for lease, name in zip(leases, names)
        ]
    parts = {name: future.result() for name, future in zip(names, futures)}
    router = RouterProcess(
        router_launch, config.topology.router, [p.base_url for p in parts.values()], say=say
    )
    say(
        f"[sglang] {config.id}: router ({config.topology.router.policy}) in front of "
        + ", ".join(f"{name} on {part.host}" for name, part in parts.items())
    )
    started = time.monotonic()
    router.start(timeout=ready_timeout)
    router_s = time.monotonic() - started
    first = parts[names[0]]
    own = {f.name: getattr(first, f.name) for f in dataclasses.fields(Deployment)}
    own.update(
        host="+".join(part.host for part in parts.values()),
        # what the replicas run (a production placeholder applied), with the topology
        config=first.config.replace(topology=config.topology),
        deployed=first.deployed.replace(topology=config.topology),
        resolved=first.resolved.replace(topology=config.topology),
        base_url=router.base_url,
        http=requests.Session(),
        timings={
            "ready_s": max(p.timings.get("ready_s", 0.0) for p in parts.values()) + router_s,
            "router_ready_s": router_s,
        },
        plan=None,  # no one launch plan: the load goes straight to the router
        _origin=None,
    )
    return TopologyDeployment(**own, parts=parts, router=router)
