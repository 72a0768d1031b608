"""What SGLang's ``--host`` can bind, told by its shape alone (a name is never looked up).

SGLang 0.5.23 checks neither its host's shape nor its port's range: it starts, then fails where
the address is first used (its own warmup request, torch.distributed's rendezvous), or never
becomes ready. The config refuses such a host before anything is deployed
(:class:`~pytest_sglang.config.ServerConfig`), and the failure classifier names it as the cause
of a start that got that far; both ask :func:`host_problem`.
"""

from __future__ import annotations

import re

__all__ = ["host_problem"]

#: A host that carries a port: ``127.0.0.1:30000``, ``gpu-1:30000``, ``[::1]:30000`` (a bare IPv6
#: address has more than one colon and is left alone); ``gpu-1:`` with the port left out.
_HOST_WITH_PORT = re.compile(r"^(?:\[(?P<v6>[^\]]*)\]|(?P<name>[^:\[\]/\s]+)):(?P<port>\d*)$")
_DOTTED_QUAD = re.compile(r"^\d+\.\d+\.\d+\.\d+$")


def host_problem(host: str) -> str | None:
    """Why ``host`` is no address for ``--host`` to bind (blank or spaced, a URL, a port carried
    along, a dotted quad with a part over 255), said as what to give instead; None when it
    could be one (an IPv4 or IPv6 address, or a name)."""
    if not host.strip() or host != host.strip() or " " in host:
        return "is blank or holds spaces; give an address or a name (0.0.0.0, 127.0.0.1)"
    if "://" in host:
        return "is a URL; give the address alone (0.0.0.0, 127.0.0.1), its port in the port field"
    with_port = _HOST_WITH_PORT.match(host)
    if with_port is not None:
        address = with_port["v6"] if with_port["v6"] is not None else with_port["name"]
        if not with_port["port"]:
            return f"ends with a colon; give host={address!r}"
        return f"carries a port; give host={address!r} and port={with_port['port']}"
    if _DOTTED_QUAD.match(host) and any(int(part) > 255 for part in host.split(".")):
        return "is no IPv4 address (each of its four parts is 0 to 255)"
    return None
