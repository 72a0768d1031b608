"""The deployer contract, and what every backend shares (preflight, port forwards, artifacts).

A deployer puts one :class:`~.launch_plan.LaunchPlan` at a time on one host, starts it, lets the
caller read the server's output after a cursor, and finally puts the host back exactly as it
was. What the host's launcher is (its SGLang version, ``--help`` flags, GPUs) is its
:class:`~.launcher.Launcher`'s to find out, not the deployer's. Backends, by the name an
inventory's ``deployer`` gives (the registry is :mod:`.deployers`): ``systemd`` (a unit) and
``process`` (a background process, used for the embedded ``local`` simulator and for hosts
without systemd).
"""

from __future__ import annotations

import contextlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..argv_parse import split_flags, split_launch
from ..cmdline import join_shell, split_shell
from ..config import DESTRUCTIVE_FLAGS, ServerConfig
from ..errors import ConfigError, PreflightError
from ..gpu_rules import gpu_facts
from ..secrets import Redactor
from .follow import JournalEntry, JournalFollower, PollingFollower
from .host_resolve import Resolution, ask_host
from .launch_plan import LaunchPlan, make_launch_plan
from .launcher import Launcher, launch_argv
from .spec import HostSpec

if TYPE_CHECKING:
    from ..transport.base import PortForward, Transport

__all__ = ["Deployer", "DeployerSettings", "JournalEntry", "ServiceState"]


@dataclass(frozen=True)
class ServiceState:
    """The server's state, in systemd's vocabulary (the process backend maps onto it).

    ``exec_main_code`` is ``"exited"``, ``"killed"``, ``"dumped"`` or ``""`` (still running or
    never ran); ``exec_main_status`` is the exit code or the signal number.
    """

    active_state: str
    sub_state: str
    main_pid: int
    exec_main_code: str
    exec_main_status: int
    n_restarts: int
    result: str

    @property
    def running(self) -> bool:
        return self.active_state in ("active", "reloading") and self.sub_state == "running"

    @property
    def failed(self) -> bool:
        return self.active_state == "failed"

    @property
    def exited(self) -> bool:
        """The main process is gone (it ended, crashed, or never started)."""
        return self.active_state in ("inactive", "failed")


@dataclass
class DeployerSettings:
    """What the session gives every deployer it makes."""

    #: Who deploys (user, machine, pid, session, since): written into the intent record.
    owner: dict[str, Any] = field(default_factory=dict)
    #: Progress lines for the terminal (silent by default).
    say: Callable[[str], None] = lambda _message: None
    #: Seconds to let a serving service finish its requests before the first stop; 0 skips.
    drain_timeout: float = 0.0
    #: The session's redactor: artifacts, plans and errors never carry a secret value.
    redactor: Redactor = field(default_factory=Redactor)
    #: ``--sglang-refresh``: run ``--help`` again instead of trusting an earlier session's.
    refresh_launchers: bool = False


class Deployer(ABC):
    """Deploys launch plans on one host and restores it afterwards.

    Lifecycle: ``launch_plan`` -> ``preflight`` / ``deploy`` (any number of times) ->
    ``read_journal`` / ``state`` / ``base_url`` -> ``restore`` (idempotent) -> ``close``.
    A backend implements the abstract methods; adding one is a new module and a line in the
    registry (:data:`.deployers.BUILTIN`), or a plugin's ``pytest_sglang_deployer`` hook.
    """

    #: Whether a config without ``port`` gets a free one (servers that run side by side).
    picks_port: ClassVar[bool] = False

    def __init__(
        self, spec: HostSpec, transport: Transport, settings: DeployerSettings | None = None
    ) -> None:
        #: The host as the inventory gives it; ``spec`` is it running the launcher in use
        #: (:meth:`use_launcher`): everything that asks the launcher reads ``spec``.
        self.host_spec = spec
        self.spec = spec
        self.transport = transport
        self.settings = settings if settings is not None else DeployerSettings()
        self.redactor = self.settings.redactor
        self._forwards: dict[tuple[str, int], PortForward] = {}
        #: The plan deployed last (what ``artifacts`` shows).
        self.deployed: LaunchPlan | None = None
        self._launchers: dict[str | None, Launcher] = {}

    def say(self, message: str) -> None:
        self.settings.say(message)

    @property
    def launcher(self) -> Launcher:
        """What the launcher in use is (identity, SGLang version, ``--help`` flags, GPUs,
        models): one per named launcher, each with its own caches."""
        name = self.spec.launcher
        if name not in self._launchers:
            self._launchers[name] = Launcher(
                self.spec,
                self.transport,
                words=self.launch_words,
                env=self.launcher_env,
                say=self.say,
                refresh=self.settings.refresh_launchers,
            )
        return self._launchers[name]

    # -- which of the host's launchers ------------------------------------------------------
    def use_launcher(self, name: str | None) -> None:
        """Run the host's launcher ``name`` from now on (None: its own ``launch``): its
        command, SGLang version and environment. ConfigError (one line, naming the host and
        its launchers) for a name the host does not declare."""
        self.spec = self.host_spec.with_launcher(name)

    @contextlib.contextmanager
    def on_launcher(self, name: str | None) -> Iterator[None]:
        """Launcher ``name`` for the block, the one in use before it afterwards (planning a
        config leaves the deployed server's launcher in use: its fingerprint and load
        generator ask that one)."""
        before = self.spec.launcher
        self.use_launcher(name)
        try:
            yield
        finally:
            self.use_launcher(before)

    # -- what the launcher runs with ------------------------------------------------------
    def launcher_env(self) -> dict[str, str]:
        """Environment the launcher runs with (before the config's own ``env``)."""
        return dict(self.spec.env)

    def launch_words(self) -> list[str]:
        """The words that start SGLang on this host: the inventory's ``launch``, else those of
        production's own command line."""
        if self.spec.launch:
            return launch_argv(self.spec)
        return self.production_launch()[0]

    # -- production ---------------------------------------------------------------------------
    def production_command(self) -> list[str] | None:
        """The host's production command line (backends that run a service read it there;
        the inventory's ``production`` wins)."""
        if self.spec.production:
            try:
                return split_shell(self.spec.production)
            except ValueError as exc:
                raise ConfigError(
                    f"host {self.spec.name!r}: cannot read 'production' in {self.spec.source}: "
                    f"{exc}"
                ) from None
        return None

    def production_launch(self) -> tuple[list[str], list[str]]:
        """``(launcher, flags)`` of the host's production command line."""
        words = self.production_command()
        if not words:
            raise ConfigError(
                f"host {self.spec.name!r} has no production command line: set production = "
                f'"--model-path ... --tp-size 4 ..." in [hosts.{self.spec.name}] of the '
                "inventory (or give an SSH host its systemd 'service')"
            )
        try:
            return split_launch(words)
        except ConfigError as exc:
            raise ConfigError(f"host {self.spec.name!r}: production: {exc}") from None

    def production_config(self) -> ServerConfig:
        """The config production runs, read from its command line (unmapped flags kept
        verbatim in ``extra_args``)."""
        with self.on_launcher(None):  # production runs the host's own launcher
            _launcher, flags = self.production_launch()
            version = self.launcher.sglang_version()
        for group in split_flags(flags):
            if group.resolved in DESTRUCTIVE_FLAGS:
                raise ConfigError(
                    f"host {self.spec.name!r}: production runs with {group.resolved}, which "
                    "deletes the model's checkpoint once it is loaded: once stopped, production "
                    "could not start again, and a config built on it would delete the checkpoint "
                    "too; pytest-sglang does not deploy on this host"
                )
        try:
            return ServerConfig.from_argv(flags, version)
        except ConfigError as exc:
            raise ConfigError(f"host {self.spec.name!r}: production: {exc}") from None

    def launch_plan(self, config: ServerConfig) -> LaunchPlan:
        """``config`` as this host will start it: its SGLang version, launcher, environment.
        The redactor learns the plan's secrets here, before anything can print them. A config
        on a named launcher (``config.launcher``) is planned with that one."""
        with self.on_launcher(config.launcher):
            plan = make_launch_plan(
                self.spec.name,
                config,
                sglang_version=self.launcher.sglang_version(),
                launcher=self.launch_words(),
                launcher_env=self.launcher_env(),
                local=self.spec.kind == "local",
                pick_port=self.picks_port,
                model=self.launcher.model_identity(config.model_path),
                gpu=gpu_facts(self.launcher.gpu_profile()),
            )
        for value in plan.secrets(self.redactor.is_secret_name):
            self.redactor.add(value)
        return plan

    def service_env(self) -> dict[str, str]:
        """The environment the server gets from its service beyond the launcher's (systemd:
        the unit's ``Environment=``); what the host's resolution of a config runs with too."""
        return {}

    def resolve_on_host(self, plans: list[LaunchPlan]) -> Resolution:
        """What the host's own SGLang makes of each plan's config, from one round trip per
        launcher (and the cache across sessions): :func:`.host_resolve.ask_host`."""
        by_launcher: dict[str | None, list[LaunchPlan]] = {}
        for plan in plans:
            by_launcher.setdefault(plan.config.launcher, []).append(plan)
        total = Resolution()
        for name, group in by_launcher.items():
            with self.on_launcher(name):
                part = ask_host(self.launcher, group, self.redactor, self.service_env())
            total.answers.update(part.answers)
            total.failure = total.failure or part.failure
            total.asked += part.asked
            total.cached += part.cached
            total.seconds += part.seconds
            if part.import_s is not None:
                total.import_s = (total.import_s or 0.0) + part.import_s
        return total

    def preflight(self, plan: LaunchPlan) -> None:
        """Refuse a plan that uses a flag the host's SGLang (its launcher's) does not have."""
        with self.on_launcher(plan.config.launcher):
            known = self.launcher.help_flags()
        for word in plan.flags:
            if not word.startswith("--"):
                continue
            flag = word.split("=", 1)[0]
            if flag not in known:
                raise PreflightError(
                    f"host {self.spec.name!r} (SGLang {plan.sglang_version}) has no flag "
                    f"{flag}; remove it from config {plan.config.id} or use a host with an "
                    "SGLang that has it"
                )

    def _deployed(self, plan: LaunchPlan) -> None:
        """Remember what was started (for ``artifacts``)."""
        self.deployed = plan

    def artifacts(self) -> dict[str, str]:
        """Texts for reports: what was deployed, with secret values redacted."""
        if self.deployed is None:
            return {}
        return {
            "argv": self.redact(json.dumps(self.deployed.argv)),
            "env": json.dumps(self.redactor.env_view(self.deployed.env), sort_keys=True),
        }

    def redact(self, text: str) -> str:
        """``text`` without the session's secret values."""
        return self.redactor.redact(text)

    def journal_cursor(self) -> str:
        """Where the server's output ends now (``read_journal`` from here shows what follows);
        backends with a journal override it, "" reads from the start."""
        return ""

    # -- reaching the server ----------------------------------------------------------------
    def base_url(self, plan: LaunchPlan) -> str:
        """``http://127.0.0.1:PORT`` reaching the server from this machine (a port forward
        over the host's transport, opened once per address)."""
        key = (plan.listen_host, plan.port)
        if key not in self._forwards:
            self._forwards[key] = self.transport.forward(plan.port, plan.listen_host)
        return f"http://127.0.0.1:{self._forwards[key].local_port}"

    def close(self) -> None:
        """Release connections and port forwards; does not restore."""
        for forward in self._forwards.values():
            forward.close()
        self._forwards.clear()
        self.transport.close()

    # -- crash safety and dry runs (backends that change files override these) --------------
    def pending_intent(self) -> dict[str, Any] | None:
        """The intent record an earlier session left on the host (it died before restoring)."""
        return None

    def dry_run(self, plan: LaunchPlan) -> str:
        """What ``deploy(plan)`` would change, for ``--sglang-dry-run``; changes nothing."""
        self.preflight(plan)
        lines = [f"would start: {join_shell(plan.argv)}"]
        lines += [f"would write: {dest}" for dest in plan.files]
        return self.redact("\n".join(lines))

    # -- the backend ------------------------------------------------------------------------
    @abstractmethod
    def deploy(self, plan: LaunchPlan) -> str:
        """Put ``plan`` on the host and (re)start the server; returns the journal cursor
        taken before the restart (so ``read_journal(cursor)`` shows only this start)."""

    @abstractmethod
    def read_journal(self, after: str) -> tuple[list[JournalEntry], str]:
        """Entries strictly after the cursor ``after``, and the cursor to continue from."""

    def follow(self, after: str) -> JournalFollower:
        """The entries after ``after`` as they arrive. Backends whose transport can stream a
        command override it (one long-running reader instead of a command per look); this
        fallback polls ``read_journal``."""
        return PollingFollower(self.read_journal, after)

    @abstractmethod
    def state(self) -> ServiceState: ...

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def restore(self) -> None:
        """Return the host to its state before the first ``deploy`` (idempotent)."""
