"""The session's deployments: one host at a time, one config at a time, restored at the end.

``SglangSession`` holds what the hooks and fixtures share (hosts, the deployment currently up on
each, outcomes for the summary). It is a plain class so that it can be used and tested without
pytest; the plugin keeps one in ``config.stash``.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from .config import ServerConfig
from .deploy import Deployer, make_deployer
from .deploy.process import free_port
from .errors import ConfigError, JournalError, PreflightError, SglangError, TransportError
from .hosts import HostSpec, resolve_host, transport_for
from .journal import StartupJournal
from .lock import HostLock, HostLockError, LockHolder
from .readiness import ReadyResult, wait_until_ready
from .secrets import Redactor

__all__ = ["Deployment", "HostSession", "SglangSession"]

ProgressSink = Callable[[str], None]


@dataclass
class Deployment:
    """A configuration that is up, ready and verified on a host.

    ``config`` is what the test asked for; ``deployed`` what was started (on the embedded
    simulator the address is moved to loopback and a free port); ``resolved`` what SGLang runs
    with after its own rules; ``server_args`` what it logged.
    """

    host: str
    config: ServerConfig
    deployed: ServerConfig
    resolved: ServerConfig
    sglang_version: str
    base_url: str
    http: requests.Session
    journal: StartupJournal
    server_args: dict[str, Any]
    scheduler: dict[str, int]
    server_info: dict[str, Any]
    timings: dict[str, float]
    artifacts: dict[str, str] = field(default_factory=dict)
    _deployer: Deployer | None = field(default=None, repr=False)
    _cursor: str = field(default="", repr=False)
    _redactor: Redactor | None = field(default=None, repr=False)

    @property
    def config_id(self) -> str:
        return self.config.id

    @property
    def deployer(self) -> Deployer | None:
        """The host's deployer (its ``transport`` reaches the host), None once restored."""
        return self._deployer

    def url(self, path: str) -> str:
        return self.base_url + (path if path.startswith("/") else "/" + path)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", 60)
        return self.http.get(self.url(path), **kwargs)

    def post(self, path: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", 300)
        return self.http.post(self.url(path), **kwargs)

    def refresh_journal(self) -> StartupJournal:
        """Append what the server logged since the last read (e.g. decode-batch lines)."""
        if self._deployer is not None:
            entries, self._cursor = self._deployer.read_journal(self._cursor)
            redact = self._redactor.redact if self._redactor is not None else str
            self.journal.extend(redact(e.message) for e in entries)
        return self.journal


@dataclass
class DeploymentRecord:
    host: str
    config_id: str
    digest: str
    outcome: str
    reason: str = ""
    ready_s: float | None = None
    message: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "config_id": self.config_id,
            "digest": self.digest,
            "ready_s": self.ready_s,
            "outcome": self.outcome,
            "reason": self.reason,
            "message": self.message,
        }


class HostSession:
    """One host: its transport, its deployer, and the config currently up on it."""

    def __init__(
        self,
        spec: HostSpec,
        *,
        ready_timeout: float,
        progress: ProgressSink | None = None,
        records: list[DeploymentRecord] | None = None,
        lock_timeout: float = 300.0,
        lock_heartbeat: float = 15.0,
        drain_timeout: float = 60.0,
        redactor: Redactor | None = None,
        holder: LockHolder | None = None,
    ) -> None:
        self.spec = spec
        self.ready_timeout = ready_timeout
        self.progress = progress
        self.records = records if records is not None else []
        self.lock_timeout = lock_timeout
        #: How often the lock's heartbeat refreshes the host's record (seconds).
        self.lock_heartbeat = lock_heartbeat
        self.drain_timeout = drain_timeout
        self.redactor = redactor if redactor is not None else Redactor()
        self.holder = holder if holder is not None else LockHolder.current()
        self.redactor.add_env(spec.env)
        self._deployer: Deployer | None = None
        self._lock: HostLock | None = None
        self._prepared = False
        self.current: Deployment | None = None
        self._failures: dict[str, SglangError] = {}
        self.deploy_count = 0

    @property
    def deployer(self) -> Deployer:
        if self._deployer is None:
            deployer = make_deployer(self.spec, transport_for(self.spec))
            deployer.owner = {**self.holder.as_json(), "host": self.spec.name}
            deployer.say = self._say
            deployer.drain_timeout = self.drain_timeout
            deployer.redactor = self.redactor
            self._deployer = deployer
        return self._deployer

    # -- exclusive use and crash recovery -------------------------------------------------------
    def lock(self, timeout: float | None = None) -> None:
        """Take the host's lock (SSH hosts; the embedded simulator is this process's own),
        waiting up to ``timeout`` s for another holder (default ``--sglang-lock-timeout``)."""
        if self.spec.kind == "local" or (self._lock is not None and self._lock.held):
            return
        self._lock = HostLock(
            transport_for(self.spec),
            self.spec.name,
            self.holder,
            timeout=self.lock_timeout if timeout is None else timeout,
            heartbeat_s=self.lock_heartbeat,
            say=self._say,
        )
        try:
            self._lock.acquire()
        except BaseException:
            self._lock.release()  # closes the lock's own SSH connection
            raise

    def recover(self) -> bool:
        """Restore what an earlier, killed session left on the host; True when it did."""
        record = self.deployer.pending_intent()
        if record is None:
            return False
        owner = record.get("owner") or {}
        who = (
            f"{owner.get('user', '?')}@{owner.get('machine', '?')} pid {owner.get('pid', '?')} "
            f"since {owner.get('since', '?')}"
            if owner
            else "an unknown session"
        )
        self._say(
            f"[sglang] {self.spec.name}: found the intent record of {who}, which never restored "
            f"the host; restoring it first"
        )
        self.deployer.restore()
        self._say(f"[sglang] {self.spec.name}: restored")
        return True

    def prepare(self) -> None:
        """Before the first change: lock the host, then finish an earlier session's restore."""
        if self._prepared:
            return
        self.lock()
        self.recover()
        self._prepared = True

    def plan(self, config: ServerConfig) -> str:
        """``--sglang-dry-run``: what deploying ``config`` would change (changes nothing)."""
        return self.deployer.plan(self._adapt(config))

    def _adapt(self, config: ServerConfig) -> ServerConfig:
        """On the embedded simulator, serve on loopback and a free port, never a fixed one."""
        if self.spec.kind == "local":
            return config.replace(host="127.0.0.1", port=free_port())
        return config

    def deployment(self, config: ServerConfig) -> Deployment:
        """The deployment of ``config``: reused when it is already up, else deployed now."""
        if self._lock is not None and self._lock.lost:
            self.current = None
            raise HostLockError(
                f"host {self.spec.name!r}: another session broke this session's host lock (no "
                f"heartbeat reached the host for {self._lock.stale_after_s:.0f}s) and now owns "
                "the host; its tests are not run against it"
            )
        if self.current is not None and self.current.config.digest == config.digest:
            return self.current
        failure = self._failures.get(config.digest)
        if failure is not None:
            raise failure
        try:
            self.current = self._deploy(config)
        except SglangError as exc:
            self.current = None
            self._failures[config.digest] = exc
            self.records.append(
                DeploymentRecord(
                    host=self.spec.name,
                    config_id=config.id,
                    digest=config.digest,
                    outcome="failed",
                    reason=getattr(exc, "reason", None) or _reason_of(exc),
                    message=self.redactor.redact(
                        str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    ),
                )
            )
            raise
        assert self.current is not None
        self.records.append(
            DeploymentRecord(
                host=self.spec.name,
                config_id=config.id,
                digest=config.digest,
                outcome="ready",
                ready_s=self.current.timings["ready_s"],
            )
        )
        return self.current

    def _say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(self.redactor.redact(message))

    def _deploy(self, config: ServerConfig) -> Deployment:
        self.prepare()
        deployer = self.deployer
        deployed = self._adapt(config)
        self.redactor.add_env(deployed.env)
        where = f"{self.spec.name} {config.id}"
        started = time.monotonic()
        version = deployer.sglang_version()
        deployer.preflight(deployed)
        self.deploy_count += 1
        self.redactor.add_argv(deployed.to_argv(version))
        cursor = deployer.deploy(deployed)
        deploy_s = time.monotonic() - started
        base_url = deployer.base_url(deployed)
        http = requests.Session()
        api_key = _api_key(deployed.to_argv(version))
        if api_key:
            http.headers["Authorization"] = f"Bearer {api_key}"

        def on_progress(phase: str, elapsed: float) -> None:
            self._say(f"[sglang] {where}: {phase} ({elapsed:.1f}s)")

        ready: ReadyResult = wait_until_ready(
            deployer,
            base_url,
            cursor,
            where=where,
            timeout=self.ready_timeout,
            on_progress=on_progress,
            session=http,
        )
        expected = deployed.expected_journal(version)
        server_args = ready.journal.verify(expected)
        # Verified against the real values; from here on tests and reports see no secret.
        ready.journal.lines[:] = [self.redactor.redact(line) for line in ready.journal.lines]
        server_args = self.redactor.redact_obj(server_args)
        server_info = self.redactor.redact_obj(_server_info(http, base_url))
        total = time.monotonic() - started
        self._say(f"[sglang] {where}: ready and verified in {total:.1f}s")
        return Deployment(
            host=self.spec.name,
            config=config,
            deployed=deployed,
            resolved=deployed.resolved(version),
            sglang_version=version,
            base_url=base_url,
            http=http,
            journal=ready.journal,
            server_args=server_args,
            scheduler=ready.journal.scheduler_limits(),
            server_info=server_info,
            timings={
                "deploy_s": round(deploy_s, 3),
                "ready_s": round(ready.ready_s, 3),
                "total_s": round(total, 3),
                **{f"phase.{k}": v for k, v in ready.phases.items()},
            },
            artifacts={k: self.redactor.redact(v) for k, v in deployer.artifacts().items()},
            _deployer=deployer,
            _cursor=ready.cursor,
            _redactor=self.redactor,
        )

    def restore(self) -> None:
        """Give the host back as it was, then its lock; safe to call more than once.

        A failed restore still releases the lock: the intent record stays on the host, and
        the next session (whoever runs it) restores from it before changing anything.
        """
        self.current = None
        ours = self.spec.kind == "local" or (self._lock is not None and self._lock.held)
        try:
            if self._deployer is not None:
                try:
                    if ours:  # never "restore" what another session, holding the lock, did
                        self._deployer.restore()
                finally:
                    self._deployer.close()
                    self._deployer = None
        finally:
            self._prepared = False
            if self._lock is not None:
                self._lock.release()
                self._lock = None


def _api_key(argv: list[str]) -> str | None:
    """The ``--api-key`` the server was started with: requests must then carry it."""
    for i, word in enumerate(argv):
        if word == "--api-key" and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith("--api-key="):
            return word.split("=", 1)[1]
    return None


def _reason_of(exc: SglangError) -> str:
    if isinstance(exc, HostLockError):
        return "host locked"
    if isinstance(exc, JournalError):
        return "journal assertion"
    if isinstance(exc, ConfigError):
        return "invalid config"
    if isinstance(exc, PreflightError):
        return "bad flag"
    if isinstance(exc, TransportError):
        return "SSH/infrastructure"
    return type(exc).__name__


def _server_info(http: requests.Session, base_url: str) -> dict[str, Any]:
    for path in ("/server_info", "/get_server_info"):
        try:
            response = http.get(base_url + path, timeout=10)
        except requests.RequestException:
            continue
        if response.status_code == 200:
            try:
                data = response.json()
            except ValueError:
                continue
            if isinstance(data, dict):
                return data
    return {}


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
    ) -> None:
        self.host_names = host_names or ["local"]
        self.inventory = inventory
        self.ssh_config = ssh_config
        self.ready_timeout = ready_timeout
        self.summary_path = summary_path
        self.progress = progress
        self.lock_timeout = lock_timeout
        self.lock_heartbeat = lock_heartbeat
        self.drain_timeout = drain_timeout
        self.dry_run = dry_run
        #: Knows every secret value the session deploys; applied to everything it outputs.
        self.redactor = Redactor(secret_patterns or [])
        self.holder = LockHolder.current()
        #: ``--sglang-dry-run``: (host, config id) -> what would change.
        self.plans: dict[tuple[str, str], str] = {}
        self.records: list[DeploymentRecord] = []
        #: What xdist workers reported (on the controller): key -> rows, as in ``summary()``.
        self.merged: dict[str, list[dict[str, Any]]] = {}
        self._hosts: dict[str, HostSession] = {}

    def resolve(self, name: str) -> HostSpec:
        return resolve_host(name, inventory_path=self.inventory, ssh_config_path=self.ssh_config)

    def host(self, name: str | None = None) -> HostSession:
        name = name or self.host_names[0]
        if name not in self._hosts:
            self._hosts[name] = HostSession(
                self.resolve(name),
                ready_timeout=self.ready_timeout,
                progress=self.progress,
                records=self.records,
                lock_timeout=self.lock_timeout,
                lock_heartbeat=self.lock_heartbeat,
                drain_timeout=self.drain_timeout,
                redactor=self.redactor,
                holder=self.holder,
            )
        return self._hosts[name]

    def plan(self, config: ServerConfig, host: str | None = None) -> str:
        """The dry-run plan of ``config`` on a host (computed once, kept for the summary)."""
        session = self.host(host)
        key = (session.spec.name, config.id)
        if key not in self.plans:
            self.redactor.add_env(config.env)
            self.redactor.add_argv(config.to_argv())
            self.plans[key] = self.redactor.redact(session.plan(config))
        return self.plans[key]

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
        data: dict[str, Any] = {
            "deployments": [r.as_json() for r in self.records] + self.merged.get("deployments", []),
            "benchmarks": list(benchmarks or []) + self.merged.get("benchmarks", []),
            "comparisons": list(comparisons or []) + self.merged.get("comparisons", []),
        }
        if self.dry_run:
            data["dry_run"] = [
                {"host": host, "config_id": cid, "plan": plan}
                for (host, cid), plan in self.plans.items()
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
