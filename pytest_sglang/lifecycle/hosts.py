"""Host inventory: turn a host name into a :class:`HostSpec`.

A name resolves, in order, through the TOML inventory (``[hosts.NAME]``), through an
``~/.ssh/config``-style file (``Host NAME``), or as an inline target (``root@gpu-01:22``,
``ssh://root@gpu-01:22``). ``local`` is the embedded simulator on this machine. Everything the
deployers need that SSH cannot supply (the systemd ``service``, and the ``launch`` command where
it differs from what the production unit runs) comes from the host entry or the inventory's
``[defaults]`` table; a missing one is an :class:`~pytest_sglang.errors.InventoryError` that
names the host, the field and the file::

    [defaults]
    launch = "/opt/sglang/.venv/bin/python -m sglang.launch_server"

    [hosts.llm-two]
    ssh = "root@llm-two.example.com:22"   # or ssh://user@host:port, an ssh_config alias, or
                                          # "local": one more simulator on this machine
    service = "sglang-qwen.service"
    known_hosts = "~/.ssh/known_hosts"    # optional
    identity = "~/.ssh/id_ed25519"        # optional
    sudo = false                          # optional
    bench_from = "host"                   # optional: where benchmark load comes from

    [hosts.local]                         # the simulator: production's command line, for
    production = "--model-path /models/Qwen3-8B --tp-size 2"   # production(**changes)

A host may declare several launchers (e.g. one venv per SGLang release), each a name for a
``launch`` command, or a table that also gives its ``sglang_version`` and ``env`` (added to the
host's); a config selects one with ``ServerConfig(launcher="0.5.22")`` and the deployment then
runs that command (see :meth:`HostSpec.with_launcher`)::

    [hosts.llm-two.launchers]
    "0.5.22" = "/opt/venv-0.5.22/bin/python -m sglang.launch_server"
    "0.5.23" = { launch = "/opt/venv-0.5.23/bin/python -m sglang.launch_server", env = { A = "1" } }
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .. import transport as transports
from ..errors import InventoryError
from ..transport.base import Transport
from . import deployers
from .spec import LAUNCHER_NAME, HostSpec, LauncherEntry

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = [
    "BENCH_FROM",
    "LAUNCHER_NAME",
    "LOCAL_HOST",
    "HostSpec",
    "LauncherEntry",
    "resolve_host",
    "transport_for",
]

#: The host name of the embedded simulator (also the default when no host is given).
LOCAL_HOST = "local"

_DEFAULT_SSH_CONFIG = Path("~/.ssh/config")
_SERVICE_RE = re.compile(r"^[A-Za-z0-9:_.\\@-]+\.service$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LAUNCHER_KEYS = ("launch", "sglang_version", "env")

# Inventory keys and their types; unknown keys are refused so that typos do not go unnoticed.
#: Where a benchmark's load comes from (``bench_from``; unset: the best that works): the GPU
#: host itself, this machine straight to the server's address, or through the SSH forward.
BENCH_FROM = ("host", "direct", "forward")

_STR_KEYS = (
    "bench_from",
    "ssh",
    "service",
    "launch",
    "known_hosts",
    "identity",
    "proxy_jump",
    "sglang_version",
    "production",
)
_BOOL_KEYS = ("sudo", "strict_host_keys")
_ALLOWED = {*_STR_KEYS, *_BOOL_KEYS, "env", "deployer", "launchers"}
#: What a ``ssh = "local"`` host may set: it runs a process here, with no SSH or systemd.
_LOCAL_KEYS = {"ssh", "launch", "sglang_version", "env", "production", "launchers"}


def _local_spec(entry: dict[str, Any], where: str, name: str = LOCAL_HOST) -> HostSpec:
    launch = entry.get("launch") or f"{sys.executable} -m pytest_sglang.sim"
    return HostSpec(
        name=name,
        kind="local",
        launch=launch,
        hostname="127.0.0.1",
        sglang_version=entry.get("sglang_version"),
        env=dict(entry.get("env", {})),
        deployer="process",
        production=entry.get("production"),
        source=where,
        launchers=_launchers(entry.get("launchers", {})),
    )


def _launchers(table: dict[str, Any]) -> dict[str, LauncherEntry]:
    """The checked ``launchers`` table (see :func:`_check_launchers`), as entries."""
    out: dict[str, LauncherEntry] = {}
    for name, value in table.items():
        if isinstance(value, str):
            out[name] = LauncherEntry(value)
        else:
            out[name] = LauncherEntry(
                str(value["launch"]), value.get("sglang_version"), dict(value.get("env", {}))
            )
    return out


def _check_launchers(value: Any, what: str, path: Path) -> None:
    """``launchers``: a table of names, each a ``launch`` string or a table with ``launch``
    and optionally ``sglang_version`` and ``env``."""
    if not isinstance(value, dict):
        raise InventoryError(f"{what} in {path}: 'launchers' must be a table of name = launch")
    for name, launcher in value.items():
        where = f"{what} in {path}: launchers.{name}"
        if not re.match(LAUNCHER_NAME, name):
            raise InventoryError(f"{where}: a launcher's name must match {LAUNCHER_NAME}")
        if isinstance(launcher, str):
            launcher = {"launch": launcher}
        if not isinstance(launcher, dict):
            raise InventoryError(f"{where} must be a launch command or a table")
        unknown = sorted(set(launcher) - set(_LAUNCHER_KEYS))
        if unknown:
            raise InventoryError(
                f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(_LAUNCHER_KEYS)})"
            )
        if not isinstance(launcher.get("launch"), str) or not launcher["launch"].strip():
            raise InventoryError(f"{where}: 'launch' must be a non-empty command")
        version = launcher.get("sglang_version")
        if version is not None and not isinstance(version, str):
            raise InventoryError(f"{where}: 'sglang_version' must be a string")
        env = launcher.get("env", {})
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and _ENV_NAME.match(k) and isinstance(v, str) for k, v in env.items()
        ):
            raise InventoryError(f"{where}: 'env' must be a table of strings")


def _load_inventory(path: Path) -> dict[str, Any]:
    try:
        with path.expanduser().open("rb") as fh:
            data: dict[str, Any] = tomllib.load(fh)
    except FileNotFoundError:
        raise InventoryError(f"inventory {path} does not exist; check --sglang-inventory") from None
    except OSError as exc:
        raise InventoryError(f"inventory {path} cannot be read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InventoryError(f"inventory {path} is not valid TOML: {exc}") from None
    for table in ("hosts", "defaults"):
        if table in data and not isinstance(data[table], dict):
            raise InventoryError(f"inventory {path}: [{table}] must be a table")
    unknown = sorted(set(data) - {"hosts", "defaults"})
    if unknown:
        raise InventoryError(
            f"inventory {path}: unknown top-level key {unknown[0]!r} "
            f"(expected [hosts.NAME] and [defaults])"
        )
    return data


def _check_entry(entry: Any, what: str, path: Path) -> dict[str, Any]:
    """Validate the keys and value types of one ``[hosts.X]`` or ``[defaults]`` table."""
    if not isinstance(entry, dict):
        raise InventoryError(f"{what} in {path} must be a table")
    for key, value in entry.items():
        if key not in _ALLOWED:
            raise InventoryError(
                f"{what} in {path}: unknown key {key!r} (allowed: {', '.join(sorted(_ALLOWED))})"
            )
        if key in _STR_KEYS and not isinstance(value, str):
            raise InventoryError(
                f"{what} in {path}: {key!r} must be a string, got {type(value).__name__}"
            )
        if key in _BOOL_KEYS and not isinstance(value, bool):
            raise InventoryError(
                f"{what} in {path}: {key!r} must be true or false, got {type(value).__name__}"
            )
        if key == "bench_from" and value not in BENCH_FROM:
            raise InventoryError(
                f"{what} in {path}: bench_from {value!r} is not one of "
                + ", ".join(f'"{v}"' for v in BENCH_FROM)
                + " (leave it out for the best that works)"
            )
        if key == "deployer" and not deployers.is_known(value):
            raise deployers.unknown(value, f"{what} in {path}")
        if key == "launchers":
            _check_launchers(value, what, path)
        if key == "env":
            if not isinstance(value, dict):
                raise InventoryError(f"{what} in {path}: 'env' must be a table of strings")
            for name, val in value.items():
                if not _ENV_NAME.match(name) or not isinstance(val, str):
                    raise InventoryError(
                        f"{what} in {path}: env.{name} must be a valid name with a string value"
                    )
    return entry


@dataclass(frozen=True)
class _Target:
    user: str | None
    hostname: str
    port: int | None


def _parse_target(text: str, where: str) -> _Target:
    """``user@host:port``, ``ssh://user@host:port`` or a bare host/alias."""
    raw = text.strip()
    url = raw if "://" in raw else f"ssh://{raw}"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise InventoryError(f"{where}: cannot parse ssh target {text!r}") from None
    if parts.scheme != "ssh" or not parts.hostname or parts.path not in ("", "/"):
        raise InventoryError(
            f"{where}: ssh target {text!r} must look like user@host:port or ssh://user@host:port"
        )
    return _Target(user=parts.username, hostname=parts.hostname, port=port)


def _ssh_config_matches(config: Any, name: str) -> bool:
    """True when a ``Host`` pattern other than a bare wildcard names ``name``."""
    for pattern in config.get_hostnames():
        if pattern == "*" or pattern.startswith("!"):
            continue
        if fnmatch.fnmatch(name, pattern):
            return True
    return False


def _load_ssh_config(path: Path, *, explicit: bool) -> Any | None:
    import paramiko

    full = path.expanduser()
    if not full.exists():
        if explicit:
            raise InventoryError(f"ssh config {path} does not exist; check --sglang-ssh-config")
        return None
    try:
        return paramiko.SSHConfig.from_path(str(full))
    except OSError as exc:
        raise InventoryError(f"ssh config {path} cannot be read: {exc.strerror}") from None
    except Exception as exc:  # paramiko raises several types for bad syntax
        raise InventoryError(f"ssh config {path} is invalid: {exc}") from None


def _ssh_spec(
    name: str,
    entry: dict[str, Any],
    target: _Target,
    ssh_cfg: Any | None,
    where: str,
    missing_hint: str,
) -> HostSpec:
    looked: dict[str, Any] = dict(ssh_cfg.lookup(target.hostname)) if ssh_cfg is not None else {}
    identities = looked.get("identityfile") or []
    port_text = str(target.port or looked.get("port") or 22)
    try:
        port = int(port_text)
    except ValueError:
        raise InventoryError(
            f"host {name!r} ({where}): port {port_text!r} is not a number"
        ) from None
    # a systemd host without 'launch' starts SGLang the way its production unit does
    needs = ("service",) if entry.get("deployer", "systemd") == "systemd" else ("service", "launch")
    for needed in needs:
        if not entry.get(needed):
            raise InventoryError(
                f"host {name!r} ({where}) has no {needed!r}: set it in [hosts.{name}] or "
                f"[defaults] of {missing_hint}"
            )
    service = str(entry["service"])
    if not service.endswith(".service"):
        service += ".service"
    if not _SERVICE_RE.match(service):
        raise InventoryError(f"host {name!r} ({where}): {service!r} is not a valid unit name")
    return HostSpec(
        name=name,
        kind="ssh",
        launch=str(entry.get("launch") or ""),
        hostname=str(looked.get("hostname") or target.hostname),
        user=target.user or looked.get("user"),
        port=port,
        identity=entry.get("identity") or (identities[0] if identities else None),
        known_hosts=entry.get("known_hosts") or looked.get("userknownhostsfile"),
        proxy_jump=entry.get("proxy_jump") or looked.get("proxyjump"),
        service=service,
        sudo=bool(entry.get("sudo", False)),
        sglang_version=entry.get("sglang_version"),
        strict_host_keys=bool(entry.get("strict_host_keys", True)),
        env=dict(entry.get("env", {})),
        deployer=entry.get("deployer", "systemd"),
        production=entry.get("production"),
        bench_from=str(entry.get("bench_from") or ""),
        source=where,
        launchers=_launchers(entry.get("launchers", {})),
    )


def resolve_host(
    name: str | None,
    *,
    inventory_path: Path | None = None,
    ssh_config_path: Path | None = None,
) -> HostSpec:
    """Resolve a host name (``None`` means ``local``) to a :class:`HostSpec`.

    ``ssh_config_path=None`` reads ``~/.ssh/config`` when it exists; an explicitly given path must
    exist. Every failure is an :class:`InventoryError` with a one-line message.
    """
    name = (name or LOCAL_HOST).strip()
    data: dict[str, Any] = _load_inventory(inventory_path) if inventory_path else {}
    inv_name = str(inventory_path) if inventory_path else "the inventory (none given)"
    hosts: dict[str, Any] = data.get("hosts", {})
    defaults = _check_entry(data.get("defaults", {}), "[defaults]", inventory_path or Path("-"))

    if name == LOCAL_HOST:
        entry = _check_entry(hosts.get(name, {}), f"[hosts.{name}]", inventory_path or Path("-"))
        return _local_spec(entry, inv_name if name in hosts else "builtin")

    explicit_cfg = ssh_config_path is not None
    cfg_path = ssh_config_path or _DEFAULT_SSH_CONFIG
    ssh_cfg = _load_ssh_config(cfg_path, explicit=explicit_cfg)

    if name in hosts:
        assert inventory_path is not None
        own = _check_entry(hosts[name], f"[hosts.{name}]", inventory_path)
        if own.get("ssh") == LOCAL_HOST:
            # Another simulator on this machine, under its own name (e.g. to try xdist locally).
            # [defaults] describe the SSH hosts (their launcher, service, sudo): not this one.
            remote_only = sorted(set(own) - _LOCAL_KEYS)
            if remote_only:
                raise InventoryError(
                    f"[hosts.{name}] in {inventory_path}: {remote_only[0]!r} does not apply to "
                    f'ssh = "local" (a simulator process on this machine; it takes '
                    f"{', '.join(sorted(_LOCAL_KEYS))})"
                )
            return _local_spec(own, inv_name, name=name)
        entry = {**defaults, **own}
        target = _parse_target(entry.get("ssh") or name, f"[hosts.{name}] in {inventory_path}")
        return _ssh_spec(name, entry, target, ssh_cfg, inv_name, inv_name)

    if "@" in name or "://" in name:
        target = _parse_target(name, f"host {name!r}")
        return _ssh_spec(name, dict(defaults), target, ssh_cfg, "inline", inv_name)

    if ssh_cfg is not None and _ssh_config_matches(ssh_cfg, name):
        target = _Target(user=None, hostname=name, port=None)
        return _ssh_spec(name, dict(defaults), target, ssh_cfg, str(cfg_path), inv_name)

    inv_text = str(inventory_path) if inventory_path else "the inventory (no --sglang-inventory)"
    raise InventoryError(
        f"host {name!r} is not in {inv_text} nor in {cfg_path}; add [hosts.{name}] or use user@host"
    )


def transport_for(spec: HostSpec) -> Transport:
    """Open the transport for a host: SSH for ``ssh`` hosts, the local shell for ``local``."""
    if spec.kind == "local":
        return transports.LocalTransport()
    # SshTransport is loaded on first use: paramiko is needed for SSH hosts only
    return transports.SshTransport(
        spec.hostname,
        port=spec.port,
        user=spec.user,
        key_filename=os.path.expanduser(spec.identity) if spec.identity else None,
        known_hosts=os.path.expanduser(spec.known_hosts) if spec.known_hosts else None,
        strict_host_keys=spec.strict_host_keys,
        proxy_jump=spec.proxy_jump,
        display_name=spec.url,
        sudo=spec.sudo,
    )
