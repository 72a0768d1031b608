"""The host's launcher, asked once: what it is, which SGLang it runs, which flags it has.

Why apart from the deployer: a deployer's job is the lifecycle (deploy, follow, stop, restore);
what the launcher *is* (its identity, SGLang version, ``--help`` flags, the GPUs and model it will
see) is asked before any of that, by the launch plan, the preflight, the host's own resolution
(:mod:`.host_resolve`) and the on-host load generator, and is cached per session and across
sessions (:mod:`.launcher_cache`). A :class:`Launcher` gets the launcher's words and environment
from its deployer (a systemd host may take them from production's unit), and nothing else.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..cmdline import join_shell, split_shell
from ..container import container_of
from ..errors import PreflightError, TransportError
from ..model_identity import CONFIG_NAME, ModelIdentity, identity_from_name, identity_from_text
from .launcher_cache import (
    Identity,
    LauncherFacts,
    identity_code,
    load,
    parse_identity,
    save,
    version_code,
)
from .spec import HostSpec

if TYPE_CHECKING:
    from ..transport.base import Transport

__all__ = ["GPU_QUERY", "Launcher", "launch_argv", "parse_help_flags", "simulator_python"]

#: The host's GPUs, from the driver only (no CUDA context): part of what answers are cached under.
GPU_QUERY = "nvidia-smi --query-gpu=name,memory.total,compute_cap --format=csv,noheader"

_FLAG_RE = re.compile(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9_-]*)")

# Asked once per (host, launcher, environment) and session; --help across sessions too
# (.launcher_cache).
_HELP_CACHE: dict[tuple[str, str, tuple[tuple[str, str], ...]], frozenset[str]] = {}
_VERSION_CACHE: dict[tuple[str, str, tuple[tuple[str, str], ...]], str] = {}
_IDENTITY_CACHE: dict[tuple[str, str, tuple[tuple[str, str], ...]], Identity | None] = {}


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


class Launcher:
    """The launcher of one host as its deployer runs it: ``words`` and ``env`` are the
    deployer's (called lazily: a systemd host reads them from production's unit)."""

    def __init__(
        self,
        spec: HostSpec,
        transport: Transport,
        *,
        words: Callable[[], list[str]],
        env: Callable[[], dict[str, str]],
        say: Callable[[str], None] = lambda _message: None,
        refresh: bool = False,
    ) -> None:
        self.spec = spec
        self.transport = transport
        self.words = words
        self.env = env
        self.say = say
        #: ``--sglang-refresh``: run ``--help`` again instead of trusting an earlier session's.
        self.refresh = refresh
        self._version: str | None = spec.sglang_version
        self._models: dict[str, ModelIdentity] = {}
        self._gpu: str | None = None

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
        return (self.spec.url, self.spec.launch, tuple(sorted(self.env().items())))

    def _env_prefix(self) -> tuple[str, list[str]]:
        env = self.env()
        if not env:
            return "", []
        words = [f"{k}={v}" for k, v in env.items()]
        return "env " + " ".join(["%s"] * len(words)) + " ", words

    def _probe_words(self) -> list[str]:
        """The launcher as it is asked (``--help``): a container launcher runs a throwaway
        container of the same image (:meth:`.ContainerCommand.probe_words`)."""
        argv = self.words()
        container = container_of(argv)
        return container.probe_words() if container is not None else argv

    def _python(self) -> list[str]:
        """The words that run the launcher's Python (in a throwaway container where SGLang
        runs in one)."""
        argv = self.words()
        container = container_of(argv)
        if container is not None:
            return container.python
        return [simulator_python(argv) or argv[0]]

    def python_words(self) -> list[str]:
        """The words that run the launcher's Python on the host, its environment first (what
        is asked here runs with them; so does the benchmark's on-host load generator)."""
        _prefix, env = self._env_prefix()
        return [*(["env", *env] if env else []), *self._python()]

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
            python = simulator_python(self.words())
            code = identity_code(simulator=python is not None)
            try:
                _rc, out, _err = self._run_launcher([*self._python(), "-c", code], timeout=60)
            except PreflightError:
                out = ""
            _IDENTITY_CACHE[key] = parse_identity(out)
        return _IDENTITY_CACHE[key]

    def identity(self) -> Identity | None:
        """The launcher's identity (see :mod:`.launcher_cache`); None where it cannot be read."""
        return self._identity()

    def run(self, argv: list[str], timeout: float) -> tuple[int, str, str]:
        """``(rc, stdout, stderr)`` of ``argv`` run with the launcher's environment;
        PreflightError naming only the failure where it cannot be run."""
        return self._run_launcher(argv, timeout)

    # -- the host's own SGLang as the authority (see .host_resolve) ----------------------------

    def resolver_python(self) -> tuple[str, str]:
        """``(python, engine)``: the launcher's interpreter, and whose resolution it runs
        (``"simulator"`` where the launcher is ``python -m pytest_sglang.sim``, ``"container"``
        where SGLang runs in a container, which is not asked, else ``"sglang"``)."""
        argv = self.words()
        python = simulator_python(argv)
        if python is not None:
            return python, "simulator"
        if container_of(argv) is not None:  # asked through a container: not yet
            return argv[0], "container"
        return argv[0], "sglang"

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

    def _stored(self) -> tuple[Identity | None, LauncherFacts]:
        """The identity, and what an earlier session stored for it (nothing on refresh)."""
        identity = self._identity()
        if identity is None or self.refresh:
            return identity, LauncherFacts()
        return identity, load(self._cache_key(), identity)

    def _store(self) -> None:
        key = self._cache_key()
        identity = _IDENTITY_CACHE.get(key)
        if identity is not None:
            facts = LauncherFacts(version=_VERSION_CACHE.get(key), flags=_HELP_CACHE.get(key))
            save(key, identity, self.spec.name, facts)

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
                code = version_code(simulator=simulator_python(self.words()) is not None)
                python_words = self._python()
                python = join_shell(python_words)
                rc, out, err = self._run_launcher([*python_words, "-c", code], timeout=120)
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
        across sessions while the launcher's identity is unchanged (see :mod:`.launcher_cache`)."""
        key = self._cache_key()
        if key not in _HELP_CACHE:
            _identity, stored = self._stored()
            if stored.flags is not None:
                _HELP_CACHE[key] = stored.flags
                return stored.flags
            launcher = self._probe_words()
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
