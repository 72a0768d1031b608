"""The deployer contract, and what every backend shares (version detection, preflight, port
forwards, artifacts).

A deployer puts one :class:`~pytest_sglang.launch_plan.LaunchPlan` at a time on one host, starts
it, lets the caller read the server's output after a cursor, and finally puts the host back
exactly as it was. Backends, by the name an inventory's ``deployer`` gives (the registry is in
:mod:`pytest_sglang.deploy`): ``systemd`` (a unit) and ``process`` (a background process, used
for the embedded ``local`` simulator and for hosts without systemd).
"""

from __future__ import annotations

import contextlib
import json
import posixpath
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..argv_parse import split_launch
from ..cmdline import join_shell, split_shell
from ..config import ServerConfig
from ..errors import ConfigError, PreflightError, TransportError
from ..launch_plan import LaunchPlan, make_launch_plan
from ..model_identity import CONFIG_NAME, ModelIdentity, identity_from_name, identity_from_text
from ..secrets import Redactor
from .follow import JournalFollower, PollingFollower
from .host_resolve import GPU_QUERY, Resolution, ask_host
from .probes import Identity, Probed, identity_code, load, parse_identity, save, version_code

if TYPE_CHECKING:
    from ..hosts import HostSpec
    from ..transport.base import PortForward, Transport

__all__ = [
    "Deployer",
    "DeployerSettings",
    "JournalEntry",
    "ServiceState",
    "launch_argv",
    "parse_help_flags",
    "simulator_python",
]

_FLAG_RE = re.compile(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9_-]*)")


# One probe per (host, launcher, environment) and session; --help across sessions (.probes).
_HELP_CACHE: dict[tuple[str, str, tuple[tuple[str, str], ...]], frozenset[str]] = {}
_VERSION_CACHE: dict[tuple[str, str, tuple[tuple[str, str], ...]], str] = {}
_IDENTITY_CACHE: dict[tuple[str, str, tuple[tuple[str, str], ...]], Identity | None] = {}


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


@dataclass(frozen=True)
class JournalEntry:
    """One line of the server's output; ``cursor`` resumes reading right after it."""

    cursor: str
    message: str
    realtime_us: int


def parse_help_flags(text: str) -> frozenset[str]:
    """Every ``--flag`` an argparse ``--help`` text mentions."""
    return frozenset(_FLAG_RE.findall(text))


def launch_argv(spec: HostSpec) -> list[str]:
    """The host's ``launch`` command as an argv (shell-style words)."""
    try:
        argv = split_shell(spec.launch)
    except ValueError as exc:
        raise PreflightError(
            f"host {spec.name!r}: cannot parse launch {spec.launch!r}: {exc}"
        ) from None
    if not argv:
        raise PreflightError(f"host {spec.name!r}: 'launch' is empty in {spec.source}")
    return argv


def simulator_python(argv: list[str]) -> str | None:
    """The interpreter when the launcher is ``<python> -m pytest_sglang.sim``."""
    for i, word in enumerate(argv[:-1]):
        if word == "-m" and argv[i + 1] == "pytest_sglang.sim":
            return argv[0]
    return None


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
    refresh_probes: bool = False


class Deployer(ABC):
    """Deploys launch plans on one host and restores it afterwards.

    Lifecycle: ``launch_plan`` -> ``preflight`` / ``deploy`` (any number of times) ->
    ``read_journal`` / ``state`` / ``base_url`` -> ``restore`` (idempotent) -> ``close``.
    A backend implements the abstract methods; adding one is a new module and a line in the
    registry (:data:`pytest_sglang.deploy.DEPLOYERS`).
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
        self._version: str | None = spec.sglang_version
        self._forwards: dict[tuple[str, int], PortForward] = {}
        #: The plan deployed last (what ``artifacts`` shows).
        self.deployed: LaunchPlan | None = None
        self._models: dict[str, ModelIdentity] = {}
        self._gpu: str | None = None

    def say(self, message: str) -> None:
        self.settings.say(message)

    # -- which of the host's launchers ------------------------------------------------------
    def use_launcher(self, name: str | None) -> None:
        """Run the host's launcher ``name`` from now on (None: its own ``launch``): its
        command, SGLang version and environment. ConfigError (one line, naming the host and
        its launchers) for a name the host does not declare."""
        spec = self.host_spec.with_launcher(name)
        if spec is not self.spec:
            self.spec = spec
            self._version = spec.sglang_version

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

    def launcher(self) -> list[str]:
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
            version = self.sglang_version()
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
                sglang_version=self.sglang_version(),
                launcher=self.launcher(),
                launcher_env=self.launcher_env(),
                local=self.spec.kind == "local",
                pick_port=self.picks_port,
                model=self.model_identity(config.model_path),
            )
        for value in plan.secrets(self.redactor.is_secret_name):
            self.redactor.add(value)
        return plan

    def model_identity(self, model_path: str) -> ModelIdentity:
        """The model's identity as this host's SGLang will read it: one ``cat`` of its
        config.json over the transport, once per model and deployer. Where the host has no
        readable config.json (a hub id, a path only the service's user can read) the
        directory's name stands in, and the one note why is said here and kept in the plan's
        ``expected.notes``."""
        if model_path not in self._models:
            target = posixpath.join(model_path, CONFIG_NAME)
            try:
                result = self.transport.run("cat %s", target, timeout=60)
            except TransportError as exc:
                why = f"cannot read it on {self.spec.name} ({type(exc).__name__})"
                identity = identity_from_name(model_path, why)
            else:
                if result.rc == 0:
                    identity = identity_from_text(model_path, result.stdout)
                else:
                    tail = (result.stderr.strip().splitlines() or [f"rc={result.rc}"])[-1]
                    tail = tail.removeprefix(f"cat: {target}: ")
                    identity = identity_from_name(model_path, f"{tail} on {self.spec.name}")
            self._models[model_path] = identity
            if identity.note:
                self.say(f"[sglang] {self.spec.name}: {identity.note}")
        return self._models[model_path]

    def _cache_key(self) -> tuple[str, str, tuple[tuple[str, str], ...]]:
        return (self.spec.url, self.spec.launch, tuple(sorted(self.launcher_env().items())))

    def _env_prefix(self) -> tuple[str, list[str]]:
        env = self.launcher_env()
        if not env:
            return "", []
        words = [f"{k}={v}" for k, v in env.items()]
        return "env " + " ".join(["%s"] * len(words)) + " ", words

    def python_words(self) -> list[str]:
        """The words that run the launcher's Python on the host, its environment first (what
        the probes run; the benchmark's on-host load generator runs with it too)."""
        argv = self.launcher()
        _prefix, env = self._env_prefix()
        return [*(["env", *env] if env else []), simulator_python(argv) or argv[0]]

    def _run_launcher(self, argv: list[str], timeout: float) -> tuple[int, str, str]:
        prefix, args = self._env_prefix()
        command = prefix + " ".join(["%s"] * len(argv))
        try:
            result = self.transport.run(command, *args, *argv, timeout=timeout)
        except TransportError as exc:
            # The command carries environment values (maybe secrets): name the failure only.
            raise PreflightError(
                f"host {self.spec.name!r}: cannot run the launcher ({type(exc).__name__}); "
                f"check the connection and 'launch' in {self.spec.source}"
            ) from exc
        return result.rc, result.stdout, result.stderr

    def _identity(self) -> Identity | None:
        """The launcher's identity (one cheap command, once per session); None where it cannot
        be read (a launcher that is no Python): then nothing is cached across sessions."""
        key = self._cache_key()
        if key not in _IDENTITY_CACHE:
            argv = self.launcher()
            python = simulator_python(argv)
            code = identity_code(simulator=python is not None)
            try:
                _rc, out, _err = self._run_launcher([python or argv[0], "-c", code], timeout=60)
            except PreflightError:
                out = ""
            _IDENTITY_CACHE[key] = parse_identity(out)
        return _IDENTITY_CACHE[key]

    def launcher_identity(self) -> Identity | None:
        """The launcher's identity (see :mod:`.probes`); None where it cannot be read."""
        return self._identity()

    def run_launcher(self, argv: list[str], timeout: float) -> tuple[int, str, str]:
        """``(rc, stdout, stderr)`` of ``argv`` run with the launcher's environment;
        PreflightError naming only the failure where it cannot be run."""
        return self._run_launcher(argv, timeout)

    # -- the host's own SGLang as the authority (see .host_resolve) ----------------------------
    def resolver_python(self) -> tuple[str, str]:
        """``(python, engine)``: the launcher's interpreter, and whose resolution it runs
        (``"simulator"`` where the launcher is ``python -m pytest_sglang.sim``, else
        ``"sglang"``)."""
        argv = self.launcher()
        python = simulator_python(argv)
        return (python, "simulator") if python is not None else (argv[0], "sglang")

    def service_env(self) -> dict[str, str]:
        """The environment the server gets from its service beyond the launcher's (systemd:
        the unit's ``Environment=``); what the host's resolution of a config runs with too."""
        return {}

    def gpu_profile(self) -> str:
        """The host's GPUs as ``nvidia-smi`` names them (name, memory, compute capability, one
        line each; "" without one): once per deployer, part of what host answers are cached
        under. Reads the driver only: no CUDA context."""
        if self._gpu is None:
            try:
                result = self.transport.run(GPU_QUERY + " 2>/dev/null", timeout=60)
            except TransportError:
                self._gpu = ""
            else:
                self._gpu = result.stdout.strip() if result.ok else ""
        return self._gpu

    def resolve_on_host(self, plans: list[LaunchPlan]) -> Resolution:
        """What the host's own SGLang makes of each plan's config, from one round trip per
        launcher (and the cache across sessions): :func:`.host_resolve.ask_host`."""
        by_launcher: dict[str | None, list[LaunchPlan]] = {}
        for plan in plans:
            by_launcher.setdefault(plan.config.launcher, []).append(plan)
        total = Resolution()
        for name, group in by_launcher.items():
            with self.on_launcher(name):
                part = ask_host(self, group)
            total.answers.update(part.answers)
            total.failure = total.failure or part.failure
            total.asked += part.asked
            total.cached += part.cached
            total.seconds += part.seconds
            if part.import_s is not None:
                total.import_s = (total.import_s or 0.0) + part.import_s
        return total

    def _stored(self) -> tuple[Identity | None, Probed]:
        """The identity, and what an earlier session stored for it (nothing on refresh)."""
        identity = self._identity()
        if identity is None or self.settings.refresh_probes:
            return identity, Probed()
        return identity, load(self._cache_key(), identity)

    def _store(self) -> None:
        key = self._cache_key()
        identity = _IDENTITY_CACHE.get(key)
        if identity is not None:
            probed = Probed(version=_VERSION_CACHE.get(key), flags=_HELP_CACHE.get(key))
            save(key, identity, self.spec.name, probed)

    def sglang_version(self) -> str:
        """The host's SGLang version: the inventory's value, else detected (once per session,
        and across sessions while the launcher's identity is unchanged)."""
        if self._version:
            return self._version
        key = self._cache_key()
        if key not in _VERSION_CACHE:
            _identity, stored = self._stored()
            if stored.version is not None:
                _VERSION_CACHE[key] = stored.version
            else:
                argv = self.launcher()
                python = simulator_python(argv)
                code = version_code(simulator=python is not None)
                python = python or argv[0]
                rc, out, err = self._run_launcher([python, "-c", code], timeout=120)
                lines = out.strip().splitlines()
                if rc != 0 or not lines:
                    tail = (err.strip().splitlines() or ["no output"])[-1]
                    raise PreflightError(
                        f"host {self.spec.name!r}: cannot detect the SGLang version with "
                        f"{python} (rc={rc}: {tail}); set sglang_version in the inventory"
                    )
                _VERSION_CACHE[key] = lines[-1].strip()
                self._store()
        self._version = _VERSION_CACHE[key]
        return self._version

    def help_flags(self) -> frozenset[str]:
        """Every ``--flag`` the host's launcher lists in ``--help``: once per session, and
        across sessions while the launcher's identity is unchanged (see :mod:`.probes`)."""
        key = self._cache_key()
        if key not in _HELP_CACHE:
            _identity, stored = self._stored()
            if stored.flags is not None:
                _HELP_CACHE[key] = stored.flags
                return stored.flags
            launcher = self.launcher()
            self.say(
                f"[sglang] {self.spec.name}: reading the launcher's flags ({join_shell(launcher)}"
                " --help)"
            )
            rc, out, err = self._run_launcher([*launcher, "--help"], timeout=300)
            flags = parse_help_flags(out)
            if rc != 0 or not flags:
                tail = ((err or out).strip().splitlines() or ["no output"])[-1]
                raise PreflightError(
                    f"host {self.spec.name!r}: '{join_shell(launcher)} --help' failed (rc={rc}: "
                    f"{tail}); check 'launch' in {self.spec.source}"
                )
            _HELP_CACHE[key] = flags
            self._store()
        return _HELP_CACHE[key]

    def preflight(self, plan: LaunchPlan) -> None:
        """Refuse a plan that uses a flag the host's SGLang (its launcher's) does not have."""
        with self.on_launcher(plan.config.launcher):
            known = self.help_flags()
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
