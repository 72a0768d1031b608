"""Deployers: put a ServerConfig on a host, start it, read its journal, restore the host.

``make_deployer(spec, transport)`` picks the backend from ``spec.deployer``; backends are
imported lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Deployer, JournalEntry, ServiceState

if TYPE_CHECKING:
    from ..hosts import HostSpec
    from ..transport.base import Transport

__all__ = ["Deployer", "JournalEntry", "ServiceState", "make_deployer"]


def make_deployer(spec: HostSpec, transport: Transport) -> Deployer:
    """The default backend for a host: systemd for SSH hosts, a process for ``local``."""
    if spec.deployer == "systemd":
        from .systemd import SystemdDeployer

        return SystemdDeployer(spec, transport)
    from .process import ProcessDeployer

    return ProcessDeployer(spec, transport)
