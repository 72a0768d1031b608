"""The deployer contract, and what every backend shares (version detection, preflight).

A deployer puts one :class:`~pytest_sglang.config.ServerConfig` at a time on one host, starts
it, lets the caller read the server's output after a cursor, and finally puts the host back
exactly as it was. Backends: :mod:`.systemd` (a unit) and :mod:`.process` (a background
process, used for the embedded ``local`` simulator and for hosts without systemd).
"""

from __future__ import annotations

import json
import re
import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import PreflightError, TransportError
from ..secrets import REDACTED, secret_flag_values

if TYPE_CHECKING:
    from ..config import ServerConfig
    from ..hosts import HostSpec
    from ..secrets import Redactor
    from ..transport.base import Transport

__all__ = [
    "Deployer",
    "JournalEntry",
    "ServiceState",
    "launch_argv",
    "parse_help_flags",
    "redact_argv",
    "redact_env",
]

_FLAG_RE = re.compile(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9_-]*)")
_SECRET_RE = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|CREDENTIAL|AUTH|PRIVATE)", re.I)


# One --help per (host, launcher, environment): real SGLang imports torch and takes seconds.
_HELP_CACHE: dict[tuple[str, str, tuple[tuple[str, str], ...]], frozenset[str]] = {}
_VERSION_CACHE: dict[tuple[str, str, tuple[tuple[str, str], ...]], str] = {}


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
        argv = shlex.split(spec.launch)
    except ValueError as exc:
        raise PreflightError(
            f"host {spec.name!r}: cannot parse launch {spec.launch!r}: {exc}"
        ) from None
    if not argv:
        raise PreflightError(f"host {spec.name!r}: 'launch' is empty in {spec.source}")
    return argv


def _simulator_python(argv: list[str]) -> str | None:
    """The interpreter when the launcher is ``<python> -m pytest_sglang.sim``."""
    for i, word in enumerate(argv[:-1]):
        if word == "-m" and argv[i + 1] == "pytest_sglang.sim":
            return argv[0]
    return None


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """The environment with values of secret-looking names (TOKEN, KEY, ...) replaced."""
    return {k: (REDACTED if _SECRET_RE.search(k) else v) for k, v in env.items()}


def redact_argv(argv: list[str]) -> list[str]:
    """The argv with the values of secret flags (``--api-key X``) replaced."""
    out = list(argv)
    for i, _value, inline in secret_flag_values(argv):
        out[i] = out[i].split("=", 1)[0] + "=" + REDACTED if inline else REDACTED
    return out


class Deployer(ABC):
    """Deploys configurations on one host and restores it afterwards.

    Lifecycle: ``preflight`` / ``deploy`` (any number of times) -> ``read_journal`` / ``state`` /
    ``base_url`` -> ``restore`` (idempotent) -> ``close``.
    """

    spec: HostSpec
    transport: Transport

    def __init__(self, spec: HostSpec, transport: Transport) -> None:
        self.spec = spec
        self.transport = transport
        self._version: str | None = spec.sglang_version
        #: Who deploys (user, machine, pid, session, since): written into the intent record.
        self.owner: dict[str, Any] = {}
        #: Progress lines for the terminal (the session sets it; silent by default).
        self.say: Callable[[str], None] = lambda _message: None
        #: Seconds to let a serving service finish its requests before the first stop; 0 skips.
        self.drain_timeout: float = 0.0
        #: The session's redactor: artifacts never carry a secret value.
        self.redactor: Redactor | None = None

    # -- what the launcher runs with ------------------------------------------------------
    def launcher_env(self) -> dict[str, str]:
        """Environment the launcher runs with (before the config's own ``env``)."""
        return dict(self.spec.env)

    def _cache_key(self) -> tuple[str, str, tuple[tuple[str, str], ...]]:
        return (self.spec.url, self.spec.launch, tuple(sorted(self.launcher_env().items())))

    def _env_prefix(self) -> tuple[str, list[str]]:
        env = self.launcher_env()
        if not env:
            return "", []
        words = [f"{k}={v}" for k, v in env.items()]
        return "env " + " ".join(["%s"] * len(words)) + " ", words

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

    def sglang_version(self) -> str:
        """The host's SGLang version: the inventory's value, else detected once and cached."""
        if self._version:
            return self._version
        key = self._cache_key()
        if key not in _VERSION_CACHE:
            argv = launch_argv(self.spec)
            python = _simulator_python(argv)
            if python is not None:
                code = "import pytest_sglang.sim as s; print(s.emulated_version())"
            else:
                python = argv[0]
                code = "import importlib.metadata as m; print(m.version('sglang'))"
            rc, out, err = self._run_launcher([python, "-c", code], timeout=120)
            lines = out.strip().splitlines()
            if rc != 0 or not lines:
                tail = (err.strip().splitlines() or ["no output"])[-1]
                raise PreflightError(
                    f"host {self.spec.name!r}: cannot detect the SGLang version with {python} "
                    f"(rc={rc}: {tail}); set sglang_version in the inventory"
                )
            _VERSION_CACHE[key] = lines[-1].strip()
        self._version = _VERSION_CACHE[key]
        return self._version

    def help_flags(self) -> frozenset[str]:
        """Every ``--flag`` the host's launcher lists in ``--help`` (run once per host)."""
        key = self._cache_key()
        if key not in _HELP_CACHE:
            rc, out, err = self._run_launcher([*launch_argv(self.spec), "--help"], timeout=300)
            flags = parse_help_flags(out)
            if rc != 0 or not flags:
                tail = ((err or out).strip().splitlines() or ["no output"])[-1]
                raise PreflightError(
                    f"host {self.spec.name!r}: '{self.spec.launch} --help' failed (rc={rc}: "
                    f"{tail}); check 'launch' in {self.spec.source}"
                )
            _HELP_CACHE[key] = flags
        return _HELP_CACHE[key]

    def preflight(self, config: ServerConfig) -> None:
        """Refuse a config that uses a flag the host's SGLang does not have."""
        version = self.sglang_version()
        known = self.help_flags()
        for word in config.to_argv(version):
            if not word.startswith("--"):
                continue
            flag = word.split("=", 1)[0]
            if flag not in known:
                raise PreflightError(
                    f"host {self.spec.name!r} (SGLang {version}) has no flag {flag}; "
                    f"remove it from config {config.id} or use a host with an SGLang that has it"
                )

    def artifacts(self) -> dict[str, str]:
        """Texts for reports: what was deployed, with secret values redacted."""
        argv = getattr(self, "_last_argv", None)
        env = getattr(self, "_last_env", None)
        out: dict[str, str] = {}
        if argv is not None:
            out["argv"] = json.dumps(redact_argv(list(argv)))
        if env is not None:
            shown = redact_env(dict(env))
            if self.redactor is not None:
                shown = self.redactor.env_view(shown)
            out["env"] = json.dumps(shown, sort_keys=True)
        return out

    def redact(self, text: str) -> str:
        """``text`` without the session's secret values (unchanged without a redactor)."""
        return self.redactor.redact(text) if self.redactor is not None else text

    # -- crash safety and dry runs (backends that change files override these) --------------
    def pending_intent(self) -> dict[str, Any] | None:
        """The intent record an earlier session left on the host (it died before restoring)."""
        return None

    def plan(self, config: ServerConfig) -> str:
        """What ``deploy(config)`` would change, for ``--sglang-dry-run``; changes nothing."""
        argv = launch_argv(self.spec) + config.to_argv(self.sglang_version())
        lines = [f"would start: {shlex.join(redact_argv(argv))}"]
        lines += [f"would write: {dest}" for dest in config.files]
        return self.redact("\n".join(lines))

    # -- the backend ------------------------------------------------------------------------
    @abstractmethod
    def deploy(self, config: ServerConfig) -> str:
        """Put ``config`` on the host and (re)start the server; returns the journal cursor
        taken before the restart (so ``read_journal(cursor)`` shows only this start)."""

    @abstractmethod
    def read_journal(self, after: str) -> tuple[list[JournalEntry], str]:
        """Entries strictly after the cursor ``after``, and the cursor to continue from."""

    @abstractmethod
    def state(self) -> ServiceState: ...

    @abstractmethod
    def base_url(self, config: ServerConfig) -> str:
        """``http://127.0.0.1:PORT`` reaching the server from this machine."""

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def restore(self) -> None:
        """Return the host to its state before the first ``deploy`` (idempotent)."""

    def close(self) -> None:
        """Release connections and port forwards; does not restore."""
        self.transport.close()
