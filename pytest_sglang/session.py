"""The session's hosts: one config at a time on each, locked while used, restored at the end.

``SglangSession`` holds what the hooks and fixtures share (hosts, the deployment currently up on
each, outcomes for the summary); ``HostLease`` is one host's share of it (its lock, its
deployer, crash recovery). They are plain classes so that they can be used and tested without
pytest; the plugin keeps one ``SglangSession`` in ``config.stash``. Bringing one deployment up is
:func:`pytest_sglang.lifecycle.deployment.bring_up`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from pathlib import Path
from typing import Any

from .bench.route import bench_from_by_host
from .config import ServerConfig
from .errors import SglangError
from .lifecycle.deployment import DeploymentRecord
from .lifecycle.hosts import resolve_host
from .lifecycle.lease import HOST_RESOLVE_MODES, HostLease, ProgressSink
from .lifecycle.lock import LockHolder
from .lifecycle.router import router_launch
from .lifecycle.spec import HostSpec
from .lifecycle.topology_deployment import TopologyDeployment, bring_up_topology, placement
from .quality.verdict import quality_holds
from .report.config_names import names_by_config, with_config_names
from .report.tuning import DEFAULT_OBJECTIVE, tuning_verdicts
from .secrets import Redactor

__all__ = ["HOST_RESOLVE_MODES", "HostLease", "SglangSession"]


class SglangSession:
    """Everything one pytest session deploys, across its hosts."""

    def __init__(
        self,
        host_names: list[str],
        *,
        inventory: Path | None,
        ssh_config: Path | None,
        ready_timeout: float,
        summary_path: Path | None = None,
        progress: ProgressSink | None = None,
        lock_timeout: float = 300.0,
        lock_heartbeat: float = 15.0,
        drain_timeout: float = 60.0,
        dry_run: bool = False,
        secret_patterns: list[str] | None = None,
        refresh_launchers: bool = False,
        host_resolve: str = "auto",
        router_launch: str | None = None,
        launcher: str | None = None,
    ) -> None:
        self.host_names = host_names or ["local"]
        #: ``--sglang-launcher``: every host runs configs that name no launcher on this one.
        self.launcher = launcher
        self.inventory = inventory
        self.ssh_config = ssh_config
        self.ready_timeout = ready_timeout
        self.summary_path = summary_path
        #: what the tuning verdict in the summary ranks by (``--sglang-objective``)
        self.objective = DEFAULT_OBJECTIVE
        self.progress = progress
        self.lock_timeout = lock_timeout
        self.lock_heartbeat = lock_heartbeat
        self.drain_timeout = drain_timeout
        self.dry_run = dry_run
        #: ``--sglang-refresh``: every host runs its launcher's ``--help`` again.
        self.refresh_launchers = refresh_launchers
        #: ``--sglang-host-resolve``: when the hosts' own SGLang resolves the configs.
        self.host_resolve = host_resolve
        #: Every config the session's tests deploy (set at collection): each host's SGLang
        #: resolves them all in one round trip at its first deployment.
        self.planned: list[ServerConfig] = []
        #: What the session could not know for sure or found to differ: shown, never failed.
        self.notes: list[str] = []
        #: Knows every secret value the session deploys; applied to everything it outputs.
        self.redactor = Redactor(secret_patterns or [])
        self.holder = LockHolder.current()
        #: ``--sglang-dry-run``: (host, config id) -> what would change.
        #: ``--sglang-dry-run``: what each config would change on each host, as diffs.
        self.dry_run_diffs: dict[tuple[str, str], str] = {}
        self.records: list[DeploymentRecord] = []
        #: What xdist workers reported (on the controller): key -> rows, as in ``summary()``.
        self.merged: dict[str, list[dict[str, Any]]] = {}
        #: The ``sglang_quality`` fixture's rows (pytest_sglang.quality.verdict reads them).
        self.quality: list[dict[str, Any]] = []
        #: ``--sglang-router-launch``: what starts a topology's router (None: this Python's).
        self.router_launch = router_launch
        self._hosts: dict[str, HostLease] = {}
        self._specs: dict[str, HostSpec] = {}
        #: The topology up now (its router runs; its replicas are their hosts' ``current``).
        self._topology: TopologyDeployment | None = None
        #: The digest of the config it was asked for (a production placeholder's, not the
        #: applied config's: the same placeholder asked again is the same topology).
        self._topology_asked = ""

    def host_spec(self, name: str) -> HostSpec:
        if name not in self._specs:
            self._specs[name] = resolve_host(
                name, inventory_path=self.inventory, ssh_config_path=self.ssh_config
            )
        return self._specs[name]

    def check_hosts(self) -> None:
        """Resolve every host the session names (reading the inventory and ssh config, not
        connecting): a wrong name or inventory, or a ``--sglang-launcher`` a host does not
        declare, is then one error before any test runs."""
        for name in self.host_names:
            spec = self.host_spec(name)
            if self.launcher is not None:
                spec.with_launcher(self.launcher)

    def host(self, name: str | None = None) -> HostLease:
        name = name or self.host_names[0]
        if name not in self._hosts:
            self._hosts[name] = HostLease(
                self.host_spec(name),
                ready_timeout=self.ready_timeout,
                progress=self.progress,
                records=self.records,
                lock_timeout=self.lock_timeout,
                lock_heartbeat=self.lock_heartbeat,
                drain_timeout=self.drain_timeout,
                redactor=self.redactor,
                holder=self.holder,
                refresh_launchers=self.refresh_launchers,
                host_resolve=self.host_resolve,
                planned=self.planned,
                notes=self.notes,
                launcher=self.launcher,
            )
        return self._hosts[name]

    def topology_hosts(self, config: ServerConfig) -> list[str]:
        """The host of each node of ``config``'s replicas: the session's hosts in order or, on
        the local simulator alone, as many simulators as it has nodes (``local``, ``local.2``,
        ...: one process each, on a port of its own)."""
        assert config.topology is not None
        needed = config.topology.hosts_needed
        first = self.host_spec(self.host_names[0])
        if len(self.host_names) >= needed or first.kind != "local" or len(self.host_names) > 1:
            return placement(config, self.host_names)
        names = [first.name, *(f"{first.name}.{i}" for i in range(2, needed + 1))]
        for name in names[1:]:
            self._specs.setdefault(name, dataclasses.replace(first, name=name))
        return names

    def topology_deployment(self, config: ServerConfig) -> TopologyDeployment:
        """``config``'s replicas on their hosts and the router in front of them: reused while
        the same config (digest) is asked for; another topology keeps the replicas that
        already run its replica config and starts its own router."""
        current = self._topology
        if current is not None and self._topology_asked == config.digest:
            current.check_still_running()
            if current.config.name == config.name:
                return current
            renamed = current.named(current.config.replace(name=config.name))
            return renamed  # type: ignore[return-value]
        self._stop_router()
        placed = list(self.host_names)  # where the failure is recorded: the placement, once known
        try:
            placed = self.topology_hosts(config)
            leases = [self.host(name) for name in placed]
            deployment = bring_up_topology(
                config,
                leases,
                router_launch=router_launch(self.router_launch),
                ready_timeout=self.ready_timeout,
                say=self._say,
            )
        except SglangError as exc:
            self.records.append(
                DeploymentRecord.failed(
                    "+".join(placed), config.id, config.digest, exc, self.redactor
                )
            )
            raise
        self._topology, self._topology_asked = deployment, config.digest
        self.records.append(
            DeploymentRecord(
                host=deployment.host,
                config_id=deployment.config_id,
                digest=deployment.config.digest,
                outcome="ready",
                ready_s=deployment.timings["ready_s"],
            )
        )
        return deployment

    def _stop_router(self) -> None:
        """The topology up now gives way: its router stops and, where its replicas span
        several nodes, their first nodes stop first (the others then end by themselves, as
        SGLang's followers wait for the first node's shutdown and ignore SIGTERM)."""
        topology = self._topology
        if topology is not None and topology.router is not None:
            topology.router.close()
        shape = topology.config.topology if topology is not None else None
        if topology is not None and shape is not None and shape.nodes > 1:
            for name, part in topology.parts.items():
                if name.endswith(".node-0") and part.host in self._hosts:
                    self._hosts[part.host].stop_current()
        self._topology, self._topology_asked = None, ""

    def _say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(self.redactor.redact(line))

    def dry_run_diff(self, config: ServerConfig, host: str | None = None) -> str:
        """What deploying ``config`` would change on a host, as diffs (computed once, kept for
        the summary)."""
        lease = self.host(host)
        key = (lease.spec.name, config.id)
        if key not in self.dry_run_diffs:
            self.dry_run_diffs[key] = self.redactor.redact(lease.dry_run(config))
        return self.dry_run_diffs[key]

    def restore_hosts(self) -> list[str]:
        """``--sglang-restore``: finish every named host's unfinished restore; one line each."""
        lines: list[str] = []
        for name in self.host_names:
            try:
                host = self.host(name)
                host.lock()
                recovered = host.recover()
                lines.append(f"{name}: {'restored' if recovered else 'nothing to restore'}")
            except SglangError as exc:
                lines.append(f"{name}: restore failed: {self.redactor.redact(str(exc))}")
            finally:
                if name in self._hosts:
                    with contextlib.suppress(Exception):
                        self._hosts[name].restore()
        return lines

    def restore_all(self) -> list[str]:
        """Restore every host touched; returns one line per host that could not be restored."""
        problems: list[str] = []
        with contextlib.suppress(Exception):  # each host's restore below says what failed
            self._stop_router()
        for name, host in list(self._hosts.items()):
            try:
                host.restore()
            except Exception as exc:  # keep restoring the other hosts
                problems.append(f"{name}: restore failed: {self.redactor.redact(str(exc))}")
        return problems

    def merge(self, worker_summary: dict[str, Any]) -> None:
        """Add what an xdist worker did (its ``summary()``) to this, the controller's, summary."""
        for key, rows in worker_summary.items():
            if isinstance(rows, list):
                self.merged.setdefault(key, []).extend(rows)

    def summary(
        self,
        benchmarks: list[dict[str, Any]] | None = None,
        comparisons: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        deployments = [r.as_json() for r in self.records] + self.merged.get("deployments", [])
        bench = list(benchmarks or []) + self.merged.get("benchmarks", [])
        data: dict[str, Any] = {
            "deployments": deployments,
            # each under every name its config (one digest) had in the session
            "benchmarks": with_config_names(bench, names_by_config(deployments, bench)),
            "comparisons": list(comparisons or []) + self.merged.get("comparisons", []),
        }
        # where each host's benchmark load came from (host, direct or forward)
        data["bench_from"] = bench_from_by_host(data["benchmarks"])
        quality = self.quality + self.merged.get("quality", [])
        holds = quality_holds(quality)
        if quality:
            data["quality"] = quality
            data["quality_holds"] = holds
        verdicts = tuning_verdicts(data["benchmarks"], self.objective, holds)
        data["tuning"] = [v.as_dict() for v in verdicts]
        notes = list(dict.fromkeys([*self.notes, *self.merged.get("notes", [])]))
        if notes:
            data["notes"] = notes
        if self.dry_run:
            data["dry_run"] = [
                {"host": host, "config_id": cid, "plan": diff}
                for (host, cid), diff in self.dry_run_diffs.items()
            ]
        result: dict[str, Any] = self.redactor.redact_obj(data)
        return result

    def write_summary(
        self,
        benchmarks: list[dict[str, Any]] | None = None,
        comparisons: list[dict[str, Any]] | None = None,
    ) -> None:
        if self.summary_path is None:
            return
        self.summary_path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.summary(benchmarks, comparisons), indent=2, default=str)
        self.summary_path.write_text(self.redactor.redact(text) + "\n")
