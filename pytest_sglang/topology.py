"""A topology: one server config run as several servers behind SGLang's router: replicas,
replicas over several nodes, or prefill and decode servers apart.

``ServerConfig(..., topology=Topology(replicas=2, router=Router(policy="round_robin")))`` is
still one config: the replicas run its flags, the router (``sglang-router``, SGLang's load
balancer) is the entry point the benchmarks use. The topology is part of the config's id
(``tp4-dp2-round-robin``) and digest, so it is parametrized, swept (``sweep(base,
topology=[...])``), baselined and ranked like any other config; the replicas themselves are
the config without its topology, so a sweep over router policies keeps its workers up.

A value only: where the parts run is :mod:`pytest_sglang.lifecycle.topology_deployment`'s.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["ROUTER_OWN_FLAGS", "ROUTER_POLICIES", "Router", "RouterPolicy", "Topology"]

#: ``sglang-router``'s ``--policy`` choices (0.3.2); ``cache_aware`` is its default.
RouterPolicy = Literal["cache_aware", "round_robin", "random", "power_of_two", "manual"]
ROUTER_POLICIES: tuple[str, ...] = RouterPolicy.__args__  # type: ignore[attr-defined]
#: Router flags the plugin sets itself (the workers it started, the address it listens on).
ROUTER_OWN_FLAGS = (
    "--worker-urls",
    "--pd-disaggregation",
    "--prefill",
    "--decode",
    "--host",
    "--port",
    "--policy",
    "--prometheus-host",
    "--prometheus-port",
)


class Router(BaseModel):
    """SGLang's router in front of the replicas: its policy and any other of its flags."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: RouterPolicy = "cache_aware"
    #: More ``launch_router`` flags, e.g. ``("--health-check-interval-secs", "5")``.
    args: tuple[str, ...] = ()

    @field_validator("args")
    @classmethod
    def _check_args(cls, args: tuple[str, ...]) -> tuple[str, ...]:
        for i, arg in enumerate(args):
            if "\n" in arg or "\r" in arg or "\x00" in arg:
                raise ValueError(f"args[{i}]: must not contain a newline or NUL character")
            flag = arg.split("=", 1)[0]
            if flag in ROUTER_OWN_FLAGS:
                raise ValueError(
                    f"args[{i}]: {flag} is set by pytest-sglang (the replicas it started, a free "
                    "port on loopback, the policy field)"
                )
        if args and not args[0].startswith("--"):
            raise ValueError(f"args[0]: {args[0]!r} is no flag (router flags start with --)")
        return args


class Topology(BaseModel):
    """``replicas`` copies of the config's server behind a router, each spread over ``nodes``
    hosts (SGLang's multi-node: ``--nnodes``, ``--node-rank``, ``--dist-init-addr``); every
    node on a host of its own. ``router=None``: no router (one replica only: its first node
    serves)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    replicas: int = Field(default=2, ge=1, le=64)
    #: Hosts per replica; above 1 the config's ``tp_size`` (or ``pp_size``) spans them.
    nodes: int = Field(default=1, ge=1, le=64)
    router: Router | None = Field(default_factory=Router)
    #: The port of ``--dist-init-addr`` on each replica's first node (None: a free port where
    #: the nodes are this machine, else 5000, the port SGLang's docs use).
    dist_init_port: int | None = Field(default=None, ge=1, le=65535)
    #: Prefill/decode disaggregation: this many prefill servers and decode servers behind the
    #: router in PD mode (instead of ``replicas``); 0 and 0: no disaggregation.
    prefill: int = Field(default=0, ge=0, le=64)
    decode: int = Field(default=0, ge=0, le=64)
    #: The prefill and the decode servers' own ``tp_size`` (None: the config's).
    prefill_tp: int | None = Field(default=None, ge=1)
    decode_tp: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _check(self) -> Topology:
        if self.router is None and self.replicas > 1 and not self.disaggregated:
            raise ValueError(f"router: {self.replicas} replicas need a router to share the load")
        if (self.prefill == 0) != (self.decode == 0):
            raise ValueError("prefill and decode: disaggregation needs at least one of each")
        if self.disaggregated:
            if "replicas" in self.model_fields_set or self.nodes > 1:
                raise ValueError("replicas/nodes: a PD topology counts prefill and decode instead")
            if self.router is None:
                raise ValueError("router: prefill and decode servers are joined by the router")
        elif self.prefill_tp is not None or self.decode_tp is not None:
            raise ValueError("prefill_tp/decode_tp: only with prefill and decode servers")
        return self

    @property
    def disaggregated(self) -> bool:
        """Prefill and decode servers apart (``--disaggregation-mode``)."""
        return self.prefill > 0

    @property
    def id(self) -> str:
        """``dp2-round-robin``, ``dp1-nn2``: replicas, nodes and policy, plus a digest of other
        router flags."""
        if self.disaggregated:
            own = f"pd{self.prefill}x{self.decode}"
            own += f"-ptp{self.prefill_tp}" if self.prefill_tp else ""
            own += f"-dtp{self.decode_tp}" if self.decode_tp else ""
        else:
            own = f"dp{self.replicas}" + (f"-nn{self.nodes}" if self.nodes > 1 else "")
        if self.router is not None:
            own += f"-{self.router.policy.replace('_', '-')}"
            if self.router.args:
                own += "-r" + hashlib.sha256("\0".join(self.router.args).encode()).hexdigest()[:6]
        return own

    def node_parts(self, replica: int) -> tuple[str, ...]:
        """The part names of replica ``replica`` (from 1): ``replica-1``, or one per node
        (``replica-1.node-0``, ``replica-1.node-1``: node 0 serves, the others join it)."""
        if self.nodes == 1:
            return (f"replica-{replica}",)
        return tuple(f"replica-{replica}.node-{n}" for n in range(self.nodes))

    @property
    def servers(self) -> tuple[str, ...]:
        """The servers' part names, in order: every replica's nodes, or the prefill servers
        then the decode servers (``prefill-1``, ``decode-1``)."""
        if self.disaggregated:
            return (
                *(f"prefill-{i}" for i in range(1, self.prefill + 1)),
                *(f"decode-{i}" for i in range(1, self.decode + 1)),
            )
        return tuple(p for r in range(1, self.replicas + 1) for p in self.node_parts(r))

    @property
    def parts(self) -> tuple[str, ...]:
        """The parts' names, in order: the servers, then the router (if any)."""
        return (*self.servers, *(("router",) if self.router is not None else ()))

    @property
    def hosts_needed(self) -> int:
        """One host per server (per node of every replica)."""
        return len(self.servers)

    def __str__(self) -> str:
        return self.id

    def as_json(self) -> dict[str, Any]:
        """The topology as JSON (what the summary and the reports keep)."""
        return self.model_dump(mode="json")
