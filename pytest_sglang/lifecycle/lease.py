"""One host while a session holds it: its lock, its deployer, the config up on it, and the
recovery of what a killed session left there.

Named a lease, not a session: "session" is pytest's, and
:class:`~pytest_sglang.session.SglangSession`'s (which holds one lease per host). A plain class,
usable and testable without pytest. Bringing one deployment up is
:func:`.deployment.bring_up`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from ..config import ServerConfig
from ..errors import ConfigError, SglangError, StartAbandoned
from ..secrets import Redactor
from .deployer import Deployer, DeployerSettings
from .deployers import make_deployer
from .deployment import Deployment, DeploymentRecord, attach, bring_up, cross_check
from .host_resolve import HostAnswer, adopt, request_key
from .hosts import transport_for
from .launch_plan import LaunchPlan
from .lock import HostLock, HostLockError, LockHolder
from .production import apply_production, is_production
from .readiness import GiveUp
from .spec import HostSpec

__all__ = ["HOST_RESOLVE_MODES", "HostLease", "ProgressSink"]

ProgressSink = Callable[[str], None]

#: ``--sglang-host-resolve``: ask the host's own SGLang what each config resolves to before the
#: host changes (:mod:`.host_resolve`): ``auto`` where the launcher is SGLang (not the
#: simulator), ``on`` also where it is the simulator (which then plays the host's SGLang),
#: ``off`` never (the built-in predictor alone).
HOST_RESOLVE_MODES = ("auto", "on", "off")


class HostLease:
    """One host while this session holds it: its lock, its deployer, the config currently up
    on it, and the recovery of what a killed session left there."""

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
        refresh_launchers: bool = False,
        host_resolve: str = "auto",
        planned: list[ServerConfig] | None = None,
        notes: list[str] | None = None,
        launcher: str | None = None,
    ) -> None:
        self.spec = spec
        #: ``--sglang-launcher``: the host's named launcher that runs every config naming none.
        self.launcher = launcher
        self.refresh_launchers = refresh_launchers
        #: ``--sglang-host-resolve`` (one of :data:`HOST_RESOLVE_MODES`).
        self.host_resolve = host_resolve
        #: The session's configs (collected), resolved by the host in one round trip.
        self.planned = planned if planned is not None else []
        #: Lines shown at the end and kept in the summary: shown, never failed.
        self.notes = notes if notes is not None else []
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
        for entry in spec.launchers.values():
            self.redactor.add_env(entry.env)
        self._deployer: Deployer | None = None
        self._lock: HostLock | None = None
        self._prepared = False
        self.current: Deployment | None = None
        #: The summary's line of ``current`` (the names it was asked for are added to it).
        self._record: DeploymentRecord | None = None
        #: Configs that failed here, by digest (a placeholder's and its effective config's).
        self._failures: dict[str, tuple[SglangError, DeploymentRecord]] = {}
        self._production: ServerConfig | None = None
        #: production() placeholders (by digest) and the full configs they stand for here.
        self._applied: dict[str, ServerConfig] = {}
        #: The host's SGLang's answers by request key (None: asked, but it did not answer).
        self._answers: dict[str, HostAnswer | None] = {}

    @property
    def deployer(self) -> Deployer:
        if self._deployer is None:
            settings = DeployerSettings(
                owner={**self.holder.as_json(), "host": self.spec.name},
                say=self._say,
                drain_timeout=self.drain_timeout,
                redactor=self.redactor,
                refresh_launchers=self.refresh_launchers,
            )
            self._deployer = make_deployer(self.spec, transport_for(self.spec), settings)
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
        """Before the first change: lock the host, then finish an earlier session's restore.

        Meanwhile the launcher is asked (version, and ``--help`` unless cached): that reads
        nothing the lock protects, and on a real host it is seconds of importing torch that
        would otherwise follow the lock. Only where the inventory gives ``launch``: a launcher
        read from the production unit must wait until a killed session's drop-in is gone."""
        if self._prepared:
            return
        asking: threading.Thread | None = None
        if self.spec.launch:
            deployer = self.deployer
            asking = threading.Thread(target=_ask_launcher, args=(deployer,), daemon=True)
            asking.start()
        try:
            self.lock()
            self.recover()
        finally:
            if asking is not None:
                asking.join()
        self._prepared = True

    @property
    def production(self) -> ServerConfig:
        """The config the host's production runs (read once; the session's own drop-in, or one
        a killed session left, is not read as production)."""
        if self._production is None:
            self._production = self.deployer.production_config()
            if self.spec.kind != "local":  # a real service may run another line than its unit
                cross_check(self.deployer, self._production, redactor=self.redactor, say=self._say)
        return self._production

    def _apply_production(self, config: ServerConfig) -> ServerConfig:
        """A :func:`~.production.production` placeholder as the full config it stands for on
        this host; any other config as it is."""
        if not is_production(config):
            return config
        if config.digest not in self._applied:
            self._applied[config.digest] = apply_production(
                config, self.production, host=self.spec.name
            )
        return self._applied[config.digest]

    def attach(self) -> Deployment:
        """The production server running now, measured as it is: no restart, no unit change,
        nothing to restore (the host is locked meanwhile, so no other session changes it)."""
        if self.spec.kind == "local":
            raise ConfigError(
                f"host {self.spec.name!r} is the embedded simulator: it runs no production "
                "server to attach to; sglang_production needs an SSH host whose service runs"
            )
        self.prepare()
        return attach(self.deployer, self.production, redactor=self.redactor)

    def dry_run(self, config: ServerConfig) -> str:
        """``--sglang-dry-run``: what deploying ``config`` would change (changes nothing)."""
        full = self._on_launcher(self._apply_production(config))
        return self.deployer.dry_run(self.deployer.launch_plan(full))

    def effective(self, config: ServerConfig) -> ServerConfig:
        """The config deploying ``config`` starts on this host: a production placeholder applied
        to production (read once, after the lock and recovery), any other config as it is. Its
        digest is what the host runs: two names with one digest are one deployment. Under
        ``--sglang-launcher`` it is on that launcher unless it names its own."""
        if not is_production(config):
            return self._on_launcher(config)
        self.prepare()  # locked and recovered before production is read
        return self._on_launcher(self._apply_production(config))

    def _on_launcher(self, config: ServerConfig) -> ServerConfig:
        """``config`` on the session's launcher (``--sglang-launcher``) where it names none:
        the same config as a ``sweep(..., launcher=[...])`` makes (its id ends in
        ``-on-<launcher>``, its baselines are the config's)."""
        if self.launcher is None or config.launcher is not None:
            return config
        return config.replace(launcher=self.launcher)

    def resolve(self, config: ServerConfig) -> ServerConfig | None:
        """:meth:`effective`, or None when it cannot be known: the failure is then the
        config's (recorded, and raised to its tests by :meth:`deployment` without retrying)."""
        if config.digest in self._failures:
            return None
        try:
            return self.effective(config)
        except SglangError as exc:
            self._failed(config, exc)
            return None

    def deployment(self, config: ServerConfig, *, give_up: GiveUp | None = None) -> Deployment:
        """The deployment of ``config``: reused when it (or the same config under another
        name: the same digest) is already up, else deployed now.

        ``give_up``: set by a topology when another of its parts failed. A start given up is
        stopped at once and not recorded as this host's failure (the config did nothing
        wrong here): StartAbandoned."""
        if self._lock is not None and self._lock.lost:
            self.current = None
            raise HostLockError(
                f"host {self.spec.name!r}: another session broke this session's host lock (no "
                f"heartbeat reached the host for {self._lock.stale_after_s:.0f}s) and now owns "
                "the host; its tests are not run against it"
            )
        requested = config
        self._raise_failure(requested.digest, requested.id)
        try:
            config = self.effective(requested)
        except SglangError as exc:
            self._failed(requested, exc)
            raise
        self._raise_failure(config.digest, requested.id)  # the same config under another name
        try:
            if self.current is not None and self.current.config.digest == config.digest:
                self.current.check_still_running()
                if self._record is not None:
                    self._record.add_name(config.id)
                return self.current.named(config)
            self.current = self._deploy(config, give_up)
        except StartAbandoned as exc:
            self.current, self._record = None, None  # what ran before was replaced
            if self._deployer is not None:
                self._deployer.stop()
            self._say(f"[sglang] {exc}; stopped")
            raise
        except SglangError as exc:
            self._failed(requested, exc, config)
            raise
        self._record = DeploymentRecord(
            host=self.spec.name,
            config_id=config.id,
            digest=config.digest,
            outcome="ready",
            ready_s=self.current.timings["ready_s"],
        )
        self.records.append(self._record)
        return self.current

    def _raise_failure(self, digest: str, name: str) -> None:
        """A config that failed here fails again at once, whichever of its names asks."""
        failed = self._failures.get(digest)
        if failed is not None:
            exc, record = failed
            record.add_name(name)
            raise exc

    def _failed(
        self, requested: ServerConfig, exc: SglangError, config: ServerConfig | None = None
    ) -> None:
        """Record ``exc`` as ``requested``'s failure (and its effective ``config``'s)."""
        self.current = None
        self._record = None
        record = DeploymentRecord.failed(
            self.spec.name, requested.id, requested.digest, exc, self.redactor
        )
        self.records.append(record)
        for digest in {requested.digest, (config or requested).digest}:
            self._failures[digest] = (exc, record)

    def _say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(self.redactor.redact(message))

    def _note(self, line: str) -> None:
        if line not in self.notes:
            self.notes.append(line)
            self._say(f"[sglang] note: {line}")

    def _host_resolves(self) -> bool:
        """Whether the host's own SGLang is asked (``auto``: unless it is the simulator)."""
        if self.host_resolve == "off":
            return False
        return self.host_resolve == "on" or self.deployer.launcher.resolver_python()[1] == "sglang"

    def _planned_plans(self) -> list[LaunchPlan]:
        """The plans of the session's other configs on this host, for the same round trip; a
        config that cannot be planned or preflighted here is left to its own deployment, which
        reports why."""
        plans: list[LaunchPlan] = []
        seen: set[str] = set()
        for config in self.planned:
            if config.digest in seen:
                continue
            seen.add(config.digest)
            try:
                plan = self.deployer.launch_plan(self._on_launcher(self._apply_production(config)))
                self.deployer.preflight(plan)
            except SglangError:
                continue
            plans.append(plan)
        return plans

    def _ask_host(self, plans: list[LaunchPlan]) -> None:
        resolution = self.deployer.resolve_on_host(plans)
        name = self.spec.name
        if resolution.asked:
            imported = (
                f", {resolution.import_s:.1f}s of it importing SGLang"
                if resolution.import_s is not None
                else ""
            )
            self._say(
                f"[sglang] {name}: the host's SGLang resolved {resolution.asked} config(s) in "
                f"{resolution.seconds:.1f}s (one round trip{imported})"
            )
        if resolution.cached:
            self._say(
                f"[sglang] {name}: {resolution.cached} config(s) as the host's SGLang resolved "
                "them in an earlier session"
            )
        if resolution.failure:
            self._note(
                f"{name}: the host's SGLang could not be asked ({resolution.failure}); the "
                "built-in predictor's values are checked"
            )
        for plan in plans:
            key = request_key(plan, self.redactor)
            self._answers.setdefault(key, resolution.answers.get(key))

    def _authorised(self, plan: LaunchPlan) -> LaunchPlan:
        """``plan`` as the host's own SGLang resolves it (:mod:`.host_resolve`), asked
        for every config of the session at the first deployment; ConfigRefused (nothing on the
        host changed) where it refuses the config. Disagreements with the predictor are notes."""
        if not self._host_resolves():
            return plan
        self.deployer.preflight(plan)  # a flag the host lacks: preflight's own line first
        key = request_key(plan, self.redactor)
        if key not in self._answers:
            others = [p for p in self._planned_plans() if request_key(p, self.redactor) != key]
            self._ask_host([plan, *others])
        answer = self._answers.get(key)
        if answer is None:
            return plan
        adopted, notes = adopt(plan, answer)
        for note in notes:
            self._note(note)
        return adopted

    def _deploy(self, config: ServerConfig, give_up: GiveUp | None = None) -> Deployment:
        self.prepare()
        plan = self._authorised(self.deployer.launch_plan(config))
        self.deployer.use_launcher(config.launcher)  # what runs it, asked while it is up
        return bring_up(
            self.deployer,
            plan,
            redactor=self.redactor,
            ready_timeout=self.ready_timeout,
            say=self._say,
            give_up=give_up,
        )

    def restart(self, deployment: Deployment) -> Deployment:
        """Start ``deployment`` (this host's) again from its own launch plan: the same flags
        at the same address, so that its clients (a topology's router) find it where they
        knew it. For a server that ended (drained, killed, crashed); one still running is
        stopped first. Waited for and verified as at first; a failure is raised, not kept."""
        if deployment.plan is None or self._deployer is None:
            raise ConfigError(
                f"host {self.spec.name!r}: {deployment.config_id} was not started by this "
                "session; it cannot be started again"
            )
        self._deployer.stop()
        self.current = None
        try:
            fresh = bring_up(
                self._deployer,
                deployment.plan,
                redactor=self.redactor,
                ready_timeout=self.ready_timeout,
                say=self._say,
            )
        except SglangError as exc:
            self._record = None
            self.records.append(
                DeploymentRecord.failed(
                    self.spec.name,
                    deployment.config_id,
                    deployment.config.digest,
                    exc,
                    self.redactor,
                )
            )
            raise
        self.current = fresh.named(deployment.config)
        self._record = DeploymentRecord(
            host=self.spec.name,
            config_id=deployment.config_id,
            digest=deployment.config.digest,
            outcome="restarted",
            ready_s=fresh.timings["ready_s"],
        )
        self.records.append(self._record)
        return self.current

    def stop_current(self) -> None:
        """Stop the config up here now, keeping the host (its restore comes at the end): a
        multi-node server's first node stops before its other nodes, which wait for it."""
        if self.current is not None and self._deployer is not None:
            self._deployer.stop()
        self.current = None
        self._record = None

    def restore(self) -> None:
        """Give the host back as it was, then its lock; safe to call more than once.

        A failed restore still releases the lock: the intent record stays on the host, and
        the next session (whoever runs it) restores from it before changing anything.
        """
        self.current = None
        self._record = None
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


def _ask_launcher(deployer: Deployer) -> None:
    """Fill the launcher's caches (version, ``--help`` flags); a failure is left for the
    deployment to report (it asks again, in order, and raises the error there)."""
    with contextlib.suppress(Exception):
        deployer.launcher.sglang_version()
        deployer.launcher.help_flags()
