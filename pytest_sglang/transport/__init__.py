"""How pytest-sglang reaches a host: :class:`LocalTransport` here, :class:`SshTransport` over SSH.

- :mod:`.base`: the contract (run a command, follow its output, move a file, forward a port);
- :mod:`.local`: the machine pytest runs on;
- :mod:`.ssh`: a host over SSH (paramiko), strict host keys; :mod:`.ssh_forward`: its port
  forwards.

``SshTransport`` is imported on first use so that importing this package (and loading the
plugin) does not need paramiko; a missing paramiko then fails with an ImportError that names it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import CommandResult, PortForward, Transport
from .local import LocalTransport

if TYPE_CHECKING:
    from .ssh import SshTransport

__all__ = ["CommandResult", "LocalTransport", "PortForward", "SshTransport", "Transport"]


def __getattr__(name: str) -> Any:
    if name == "SshTransport":
        try:
            from .ssh import SshTransport
        except ImportError as exc:
            raise ImportError(
                f"SshTransport needs the 'paramiko' package ({exc}); install it with "
                "`pip install paramiko` (a dependency of pytest-sglang)",
                name=exc.name,
            ) from exc
        return SshTransport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
