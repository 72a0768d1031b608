"""Deployers: put a launch plan on a host, start it, read its journal, restore the host.

The registry maps an inventory's ``deployer`` name to its backend. Adding one (say ``docker``)
is a new module with a :class:`Deployer` subclass and one line in :data:`DEPLOYERS`; the
inventory accepts every name listed here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InventoryError
from .base import Deployer, DeployerSettings, JournalEntry, ServiceState
from .process import ProcessDeployer
from .systemd import SystemdDeployer

if TYPE_CHECKING:
    from ..hosts import HostSpec
    from ..transport.base import Transport

__all__ = [
    "DEPLOYERS",
    "Deployer",
    "DeployerSettings",
    "JournalEntry",
    "ServiceState",
    "make_deployer",
]

#: Backends by the name an inventory's ``deployer`` gives.
DEPLOYERS: dict[str, type[Deployer]] = {
    "systemd": SystemdDeployer,
    "process": ProcessDeployer,
}


def make_deployer(
    spec: HostSpec, transport: Transport, settings: DeployerSettings | None = None
) -> Deployer:
    """The backend ``spec.deployer`` names, with the session's settings."""
    try:
        backend = DEPLOYERS[spec.deployer]
    except KeyError:
        raise InventoryError(
            f"host {spec.name!r} in {spec.source}: unknown deployer {spec.deployer!r}; "
            f"known: {', '.join(sorted(DEPLOYERS))}"
        ) from None
    return backend(spec, transport, settings)
