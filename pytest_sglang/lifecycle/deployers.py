"""The deployer registry: an inventory's ``deployer`` name → its backend, imported on first use.

Built in: ``systemd`` (a unit on an SSH host) and ``process`` (a background process; the
embedded simulator). The registry holds dotted paths, not classes, so naming a host does not
import every backend (pytest-testinfra's backend registry does the same).

An outside package adds a backend through the ``pytest_sglang_deployer`` hook (see
:mod:`pytest_sglang.hookspec`): asked with the name, the first plugin that answers with a
:class:`~.deployer.Deployer` subclass or a ``"module:Class"`` path wins, as pytest-xdist picks a
scheduler; the built-in table answers last. Outside pytest (a script), the built-in table alone.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import InventoryError
from .deployer import Deployer, DeployerSettings
from .spec import HostSpec

if TYPE_CHECKING:
    from ..transport.base import Transport

__all__ = ["BUILTIN", "backend", "is_known", "lookup", "make_deployer", "set_lookup", "unknown"]

#: The built-in backends, by the name an inventory's ``deployer`` gives.
BUILTIN: dict[str, str] = {
    "systemd": "pytest_sglang.lifecycle.systemd:SystemdDeployer",
    "process": "pytest_sglang.lifecycle.process:ProcessDeployer",
}

_lookup: Callable[[str], type[Deployer] | str | None] | None = None


def set_lookup(lookup: Callable[[str], type[Deployer] | str | None] | None) -> None:
    """Ask ``lookup`` (the session's ``pytest_sglang_deployer`` hook) before the built-in
    table; None: the built-in table only."""
    global _lookup
    _lookup = lookup


def lookup() -> Callable[[str], type[Deployer] | str | None] | None:
    """The lookup :func:`set_lookup` set (to put back what it replaced)."""
    return _lookup


def _answer(name: str) -> type[Deployer] | str | None:
    found = _lookup(name) if _lookup is not None else None
    return found if found is not None else BUILTIN.get(name)


def is_known(name: str) -> bool:
    """Whether some backend answers to ``name`` (nothing is imported)."""
    return _answer(name) is not None


def unknown(name: str, where: str) -> InventoryError:
    """The one-line error for a name no backend answers to."""
    return InventoryError(
        f"{where}: unknown deployer {name!r}; known: {', '.join(sorted(BUILTIN))} (a plugin "
        "adds others through the pytest_sglang_deployer hook)"
    )


def backend(name: str, where: str) -> type[Deployer]:
    """The backend class for ``name``, imported now."""
    found = _answer(name)
    if found is None:
        raise unknown(name, where)
    if isinstance(found, str):
        module, _, attr = found.partition(":")
        try:
            found = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise InventoryError(
                f"{where}: deployer {name!r}: cannot import {found}: {exc}"
            ) from None
    if not (isinstance(found, type) and issubclass(found, Deployer)):
        raise InventoryError(f"{where}: deployer {name!r} is not a Deployer subclass: {found!r}")
    return found


def make_deployer(
    spec: HostSpec, transport: Transport, settings: DeployerSettings | None = None
) -> Deployer:
    """The backend ``spec.deployer`` names, with the session's settings."""
    return backend(spec.deployer, f"host {spec.name!r} in {spec.source}")(spec, transport, settings)
