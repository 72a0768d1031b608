"""A deployment: one launch plan brought up on a host, ready and verified.

``bring_up`` is the pipeline from a :class:`~pytest_sglang.lifecycle.launch_plan.LaunchPlan` to a
:class:`Deployment`: preflight, deploy, wait until ready, verify the startup journal against the
plan's expectations, read ``/server_info``. Every secret the plan carries is taught to the
session's redactor before anything is printed, so tests, reports and errors never see one.
``Deployment`` is what fixtures yield and what ``baseline``, ``bench`` and ``report`` read.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import requests

from ..config import ServerConfig
from ..errors import (
    ConfigError,
    JournalError,
    PreflightError,
    ServerStartError,
    SglangError,
    TransportError,
)
from ..secrets import Redactor
from .deployer import Deployer
from .journal import FOLLOWER_READY_LINE, READY_LINE, StartupJournal, find_fatal
from .launch_plan import LaunchPlan
from .lock import HostLockError
from .readiness import GiveUp, ReadyResult, describe_exit, last_words, wait_until_ready

__all__ = ["Deployment", "DeploymentRecord", "attach", "bring_up", "cross_check", "reason_of"]


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
    #: The launch plan it was started from (argv, environment, expected journal).
    plan: LaunchPlan | None = field(default=None, repr=False)
    _deployer: Deployer | None = field(default=None, repr=False)
    _cursor: str = field(default="", repr=False)
    _redactor: Redactor | None = field(default=None, repr=False)
    #: The deployment this one names otherwise (:meth:`named`): its journal is read there.
    _origin: Deployment | None = field(default=None, repr=False)

    @property
    def config_id(self) -> str:
        """The config's short id (as in test ids), e.g. ``eagle-s3-k1``."""
        return self.config.id

    def named(self, config: ServerConfig) -> Deployment:
        """This running server under ``config``'s name: ``config`` has the same digest (another
        name for the same config), so nothing is started again; tests, results and reports of
        the returned deployment carry the name they asked for. The journal, the HTTP session
        and the host are this deployment's own (one server, read once)."""
        if config.digest != self.config.digest:
            raise ValueError(f"{config.id} is another config than {self.config_id}")
        if config.id == self.config_id:
            return self
        origin = self._origin or self
        return dataclasses.replace(
            origin,
            config=config,
            deployed=origin.deployed.replace(name=config.name),
            resolved=origin.resolved.replace(name=config.name),
            _origin=origin,
        )

    @property
    def deployer(self) -> Deployer | None:
        """The host's deployer (its ``transport`` reaches the host), None once restored."""
        return self._deployer

    @property
    def api_key(self) -> str | None:
        """The server's ``--api-key`` (None without one): every client of it must send it."""
        return self.plan.api_key if self.plan is not None else None

    def url(self, path: str) -> str:
        """The server's URL for ``path`` (``/v1/models`` or ``v1/models``)."""
        return self.base_url + (path if path.startswith("/") else "/" + path)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        """GET ``path`` on the server (its API key sent; 60 s timeout unless given)."""
        kwargs.setdefault("timeout", 60)
        return self.http.get(self.url(path), **kwargs)

    def post(self, path: str, **kwargs: Any) -> requests.Response:
        """POST to ``path`` on the server (its API key sent; 300 s timeout unless given)."""
        kwargs.setdefault("timeout", 300)
        return self.http.post(self.url(path), **kwargs)

    def check_still_running(self) -> None:
        """ServerStartError when the server ended after it was ready (it crashed, was killed,
        ran out of memory): one line naming the cause its journal gives (the fatal record after
        the ready line), else how the process ended and its last line."""
        deployer = self._deployer
        if deployer is None:
            return
        state = deployer.state()
        if not state.exited:
            return
        lines = self.refresh_journal().lines
        ready = next((i for i, line in enumerate(lines) if READY_LINE in line), 0)
        fatal = find_fatal(lines, ready + 1)
        where = f"{self.host} {self.config_id}"
        if fatal is not None:
            cause, reason = fatal.summary, fatal.reason
        else:
            cause = f"{describe_exit(state)}; its last line: {last_words(self.journal)}"
            reason = "crashed"
        raise ServerStartError(
            f"{where}: the server ended after it was ready: {cause}",
            reason=reason,
            excerpt=self.journal.excerpt(),
        )

    def refresh_journal(self) -> StartupJournal:
        """Append what the server logged since the last read (e.g. decode-batch lines)."""
        if self._origin is not None:  # one cursor per server: lines are read once
            return self._origin.refresh_journal()
        if self._deployer is not None:
            entries, self._cursor = self._deployer.read_journal(self._cursor)
            redact = self._redactor.redact if self._redactor is not None else str
            self.journal.extend(redact(e.message) for e in entries)
        return self.journal


@dataclass
class DeploymentRecord:
    """One line of the session summary's ``deployments``: how a config fared on a host.

    ``names``: every name the session's tests gave this config (one digest) while it was up,
    ``config_id`` first: a second name reuses the deployment instead of starting it again."""

    host: str
    config_id: str
    digest: str
    outcome: str
    reason: str = ""
    ready_s: float | None = None
    message: str = ""
    names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.names:
            self.names = [self.config_id]

    def add_name(self, name: str) -> None:
        if name not in self.names:
            self.names.append(name)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def failed(
        cls, host: str, config_id: str, digest: str, exc: SglangError, redactor: Redactor
    ) -> DeploymentRecord:
        """The record of a failure: its reason (classified) and its message's first line."""
        return cls(
            host=host,
            config_id=config_id,
            digest=digest,
            outcome="failed",
            reason=getattr(exc, "reason", None) or reason_of(exc),
            message=redactor.redact(str(exc).splitlines()[0] if str(exc) else type(exc).__name__),
        )


#: The progress line of a startup phase (``[sglang] local eagle-s3-k1: KV cache (3.9s)``): the
#: terminal shows these on one line that updates itself, where the other lines stay.
PHASE_LINE = re.compile(r"^\[sglang\] .+: [^()]+ \(\d+\.\ds\)$")


#: systemd's setup steps (``fatal.service_manager.SYSTEMD_STEPS``) that fail for a passing reason of
#: the host's, not of the config or the unit: at ``CGROUP`` the cgroup of the service's previous run
#: still being torn down as it is started again (a restart on a loaded host). The server never ran,
#: so it is started once more after a pause; any other step (a missing binary, a user, a working
#: directory) would fail the same way again and is reported at once.
PASSING_SETUP_STEPS = frozenset({"CGROUP"})
SETUP_RETRY_PAUSE_S = 2.0


def bring_up(
    deployer: Deployer,
    plan: LaunchPlan,
    *,
    redactor: Redactor,
    ready_timeout: float,
    say: Callable[[str], None],
    give_up: GiveUp | None = None,
) -> Deployment:
    """Deploy ``plan`` with ``deployer`` and return it once ready and verified (``give_up``:
    a topology's word that another part failed; nothing is deployed after it). A start that
    systemd could not set up at a passing step of its own (:data:`PASSING_SETUP_STEPS`) is
    deployed once more."""
    where = f"{plan.host} {plan.config.id}"
    if give_up is not None:
        give_up.check(where)
    started = time.monotonic()
    cursor = deployer.deploy(plan)  # preflight first, then the host's changes
    deploy_s = time.monotonic() - started
    base_url = deployer.base_url(plan)
    http = _client(plan)

    def on_progress(phase: str, elapsed: float) -> None:
        say(f"[sglang] {where}: {phase} ({elapsed:.1f}s)")

    def wait(cursor: str) -> ReadyResult:
        return wait_until_ready(
            deployer,
            base_url,
            cursor,
            where=where,
            timeout=ready_timeout,
            on_progress=on_progress,
            http=http,
            ready_line=FOLLOWER_READY_LINE if plan.follower else READY_LINE,
            give_up=give_up,
        )

    ready = _set_up_once_more_if_passing(deployer, plan, cursor, wait, say=say, where=where)
    # /server_info is asked while the journal is verified: the fixture yields one request
    # sooner after the ready line
    with ThreadPoolExecutor(max_workers=1) as pool:
        info = pool.submit(_server_info, http, base_url)
        try:
            server_args = ready.journal.verify(plan.expected)
        finally:
            raw_info = info.result()
    # Verified against the real values; from here on tests and reports see no secret.
    ready.journal.lines[:] = [redactor.redact(line) for line in ready.journal.lines]
    server_args = redactor.redact_obj(server_args)
    server_info = redactor.redact_obj(raw_info)
    total = time.monotonic() - started
    say(f"[sglang] {where}: ready and verified in {total:.1f}s")
    return Deployment(
        host=plan.host,
        config=plan.config,
        deployed=plan.deployed,
        resolved=plan.resolved,
        sglang_version=plan.sglang_version,
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
        artifacts={k: redactor.redact(v) for k, v in deployer.artifacts().items()},
        plan=plan,
        _deployer=deployer,
        _cursor=ready.cursor,
        _redactor=redactor,
    )


def _set_up_once_more_if_passing(
    deployer: Deployer,
    plan: LaunchPlan,
    cursor: str,
    wait: Callable[[str], ReadyResult],
    *,
    say: Callable[[str], None],
    where: str,
) -> ReadyResult:
    """``wait`` for the start at ``cursor``; one that systemd could not set up at a passing step
    of its own (:data:`PASSING_SETUP_STEPS`) is deployed once more, after a pause, and waited
    for."""
    try:
        return wait(cursor)
    except ServerStartError as exc:
        if exc.step not in PASSING_SETUP_STEPS:
            raise
        say(
            f"[sglang] {where}: systemd could not set the service up (step {exc.step}; the "
            f"server never ran); starting it once more in {SETUP_RETRY_PAUSE_S:g}s"
        )
    time.sleep(SETUP_RETRY_PAUSE_S)
    return wait(deployer.deploy(plan))


def attach(deployer: Deployer, production: ServerConfig, *, redactor: Redactor) -> Deployment:
    """The production server running on the deployer's host, as a :class:`Deployment` that
    ``sglang_bench`` and the gates accept. It reads and measures only: it never stops,
    restarts or drains production. ``server_args`` are what the running server reports
    (``/get_server_info``); where they disagree with the command line it was read from,
    :func:`cross_check` has said so when production was read."""
    plan = deployer.launch_plan(production)
    where = f"{plan.host} production"
    base_url = deployer.base_url(plan)
    http = _client(plan)
    health: int | str
    try:
        health = http.get(base_url + "/health", timeout=10).status_code
    except requests.RequestException as exc:
        health = type(exc).__name__
    if health != 200:
        raise ServerStartError(
            f"{where}: the running server does not answer /health on port {plan.port} "
            f"({health}); start the production service, or check its --port",
            reason="production down",
        )
    server_info = redactor.redact_obj(_server_info(http, base_url))
    return Deployment(
        host=plan.host,
        config=production.replace(name="production"),
        deployed=plan.deployed,
        resolved=plan.resolved,
        sglang_version=plan.sglang_version,
        base_url=base_url,
        http=http,
        journal=StartupJournal([], where=where),
        server_args=dict(server_info),
        scheduler={},
        server_info=server_info,
        timings={},
        plan=plan,
        _deployer=deployer,
        _cursor=deployer.journal_cursor(),
        _redactor=redactor,
    )


def cross_check(
    deployer: Deployer,
    production: ServerConfig,
    *,
    redactor: Redactor,
    say: Callable[[str], None],
) -> None:
    """Where production's server is up, say each value its command line sets that the running
    server reports otherwise (read-only; silent when it does not answer)."""
    plan = deployer.launch_plan(production)
    http = _client(plan)
    try:
        info = _server_info(http, deployer.base_url(plan), timeout=5)
    except SglangError:
        return
    for line in _disagreements(production, redactor.redact_obj(info)):
        say(f"[sglang] {plan.host} production: {line}")


def _disagreements(config: ServerConfig, server_info: dict[str, Any]) -> list[str]:
    """Fields the command line sets that the running server reports otherwise (it may run
    another command line than its unit shows: changed but never restarted)."""
    out: list[str] = []
    for name, value in config.tuned().items():
        reported = server_info.get(name)
        if reported is not None and reported != value:
            out.append(
                f"its command line sets {name}={value!r}, the running server reports "
                f"{reported!r} (changed and not restarted?)"
            )
    return out


def _client(plan: LaunchPlan) -> requests.Session:
    """An HTTP session for the plan's server (with its ``--api-key`` as a bearer token)."""
    http = requests.Session()
    if plan.api_key:
        http.headers["Authorization"] = f"Bearer {plan.api_key}"
    return http


def reason_of(exc: SglangError) -> str:
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


def _server_info(http: requests.Session, base_url: str, timeout: float = 10) -> dict[str, Any]:
    for path in ("/server_info", "/get_server_info"):
        try:
            response = http.get(base_url + path, timeout=timeout)
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
