"""A host as the lifecycle sees it: how to reach it and how SGLang runs there.

Why a module of its own: every step of a deployment (lock, launch plan, deployer, readiness)
needs the spec, and the inventory that builds one (:mod:`.hosts`) needs the deployer registry to
check names; with the spec a leaf that imports nothing of the package, each of them imports it
at run time and no ``TYPE_CHECKING`` import is needed to dodge a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["HostSpec"]


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

    @property
    def url(self) -> str:
        """``ssh://root@llm-two:22`` or ``local://``: the test id and log name of the host."""
        if self.kind == "local":
            return "local://"
        user = f"{self.user}@" if self.user else ""
        return f"ssh://{user}{self.hostname}:{self.port}"
