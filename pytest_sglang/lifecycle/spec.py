"""A host as the lifecycle sees it: how to reach it and how SGLang runs there.

Why a module of its own: every step of a deployment (lock, launch plan, deployer, readiness)
needs the spec, and the inventory that builds one (:mod:`.hosts`) needs the deployer registry to
check names; with the spec a leaf that imports nothing of the package, each of them imports it
at run time and no ``TYPE_CHECKING`` import is needed to dodge a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from ..errors import ConfigError

__all__ = ["LAUNCHER_NAME", "HostSpec", "LauncherEntry"]


#: What a launcher may be named (it becomes part of config ids and test ids: ``tp4-on-0.5.22``).
LAUNCHER_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.+=-]*$"


@dataclass(frozen=True)
class LauncherEntry:
    """One of a host's named launchers: the command that starts SGLang, and what it adds.

    ``sglang_version`` is the release it runs where the inventory says so (else detected, as
    for the host's own ``launch``); ``env`` is added to the host's environment."""

    launch: str
    sglang_version: str | None = None
    env: dict[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class HostSpec:
    """Everything needed to reach a host and run SGLang on it.

    ``deployer`` names the backend that manages the server (one of
    :mod:`pytest_sglang.lifecycle.deployers`): ``"systemd"`` (a unit, the default for SSH hosts)
    or ``"process"`` (a background process; the default for ``local``).
    """

    name: str
    kind: Literal["local", "ssh"]
    launch: str
    hostname: str = ""
    user: str | None = None
    port: int = 22
    identity: str | None = None
    known_hosts: str | None = None
    proxy_jump: str | None = None
    service: str | None = None
    sudo: bool = False
    sglang_version: str | None = None
    strict_host_keys: bool = True
    env: dict[str, str] = field(default_factory=dict, hash=False)
    deployer: str = "systemd"
    #: Production's command line (its flags, or the whole line) where the host has no service
    #: to read it from, e.g. the ``local`` simulator: what ``production()`` starts from.
    production: str | None = None
    #: Where benchmark load comes from (one of :data:`BENCH_FROM`); "" is the best that works,
    #: found at the first benchmark.
    bench_from: str = ""
    #: Where the spec came from (inventory path, ssh config path or "inline"), for messages.
    source: str = ""
    #: The named launchers the host declares (``[hosts.NAME.launchers]``).
    launchers: dict[str, LauncherEntry] = field(default_factory=dict, hash=False)
    #: The launcher this spec runs (:meth:`with_launcher`); None: the host's own ``launch``.
    launcher: str | None = None

    def with_launcher(self, name: str | None) -> HostSpec:
        """This host running launcher ``name`` (None: its own ``launch``): that ``launch``,
        its ``sglang_version`` and its ``env`` over the host's. Asked of the host's own spec
        (the inventory's). An unknown name is a one-line ConfigError naming the host and the
        launchers it has."""
        if name == self.launcher:
            return self
        if self.launcher is not None:
            raise ValueError(f"{self.name}: with_launcher is asked of the host's own spec")
        if name is None:
            return self
        if name not in self.launchers:
            have = ", ".join(repr(n) for n in sorted(self.launchers))
            where = f" in {self.source}" if self.source else ""
            raise ConfigError(
                f"host {self.name!r} has no launcher {name!r}"
                + (f"; its launchers: {have}" if have else "; it declares none")
                + f" ([hosts.{self.name}.launchers]{where})"
            )
        chosen = self.launchers[name]
        return replace(
            self,
            launch=chosen.launch,
            sglang_version=chosen.sglang_version,
            env={**self.env, **chosen.env},
            launcher=name,
        )

    @property
    def launcher_env(self) -> dict[str, str]:
        """The chosen launcher's own ``env`` (empty for the host's own ``launch``): it wins
        over every other source of the launcher's environment."""
        chosen = self.launchers.get(self.launcher) if self.launcher is not None else None
        return dict(chosen.env) if chosen is not None else {}

    @property
    def url(self) -> str:
        """``ssh://root@llm-two:22`` or ``local://``: the test id and log name of the host."""
        if self.kind == "local":
            return "local://"
        user = f"{self.user}@" if self.user else ""
        return f"ssh://{user}{self.hostname}:{self.port}"
