"""The launch plan: everything about starting one config on one host, computed once.

Why one value: the argv, the environment, SGLang's resolution of the config and the startup
journal it must show all depend on the host's SGLang version and on what the host adds (its
launcher, its environment, a free port for the embedded simulator). Computed in one place and
handed down, preflight, deploy, dry run, journal verification and reports all see the same
thing; nothing downstream calls ``to_argv`` or ``resolved`` again.

Data flows one way: ``ServerConfig`` + host facts -> :class:`LaunchPlan` -> deployer -> readiness
-> verification -> reports.
"""

from __future__ import annotations

import os
import random
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from ..cmdline import api_key, flag_values, has_flag, secret_flag_values
from ..container import container_of
from ..gpu_rules import GpuFacts
from ..model_identity import read_model_identity

if TYPE_CHECKING:
    from ..config import FileSpec, ServerConfig
    from ..model_identity import ModelIdentity
    from ..resolution import ExpectedJournal

__all__ = ["LOCAL_ADDRESSES", "SGLANG_DEFAULT_PORT", "LaunchPlan", "free_port", "make_launch_plan"]

#: SGLang's ``--port`` default.
SGLANG_DEFAULT_PORT = 30000
#: ``--host`` values that mean "this machine" (a server bound to them is reached on loopback).
LOCAL_ADDRESSES = ("", "0.0.0.0", "127.0.0.1", "localhost", "::", "::1")


#: Where :func:`free_port` looks first: above SGLang's own picks for ports its children bind
#: later (22000-29999, ``get_free_port_below_ephemeral``) and its default 30000, below the
#: kernel's ephemeral range.
PORT_RANGE_LOW = 30100


#: Ports :func:`free_port` handed out (port -> when), never handed out again within
#: HANDED_OUT_S: two replicas of one topology each ask for a port before either server binds its
#: own, and a random pick may give both the same one.
HANDED_OUT_S = 300.0
_HANDED_OUT: dict[int, float] = {}
_HANDED_OUT_LOCK = threading.Lock()
#: Where :func:`free_port` notes each port it hands out for the other processes of this machine
#: (xdist workers, another session): each one picks at random among the ports free now, and a
#: server of one may bind the port another just picked (seen as a worker's ``address already in
#: use``). One empty file per port, made only if absent; its time says when it was handed out.
_NOTED_DIR = Path(tempfile.gettempdir()) / f"pytest-sglang-ports-{os.getuid()}"


def _noted_for_this_process(port: int) -> bool:
    """Whether no other process handed ``port`` out within HANDED_OUT_S; if none did, it is
    noted as this one's. Where the note cannot be kept (no writable temporary directory), the
    port is this process's as before."""
    path = _NOTED_DIR / str(port)
    try:
        _NOTED_DIR.mkdir(mode=0o700, exist_ok=True)
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            if time.time() - path.stat().st_mtime < HANDED_OUT_S:
                return False
            os.utime(path)  # an old note: the port was bound and freed since
    except OSError:
        pass
    return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now, for a server that binds it later.

    Taken below the kernel's ephemeral range, as SGLang takes its own such ports: a port that
    ``bind(0)`` hands out is in that range, where any outgoing connection on the machine may get
    it as its local port before the server (a real one takes a minute to start) binds it: seen
    as ``[Errno 98] ... address already in use`` on a second replica while the first one started.
    """
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as fh:
            ephemeral_low = int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    candidates = range(PORT_RANGE_LOW, ephemeral_low)
    with _HANDED_OUT_LOCK:
        now = time.monotonic()
        for given, at in list(_HANDED_OUT.items()):
            if now - at > HANDED_OUT_S:
                del _HANDED_OUT[given]
        for port in random.sample(candidates, min(64, len(candidates))):
            if port in _HANDED_OUT:
                continue  # another server of this session may not have bound it yet
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
            if not _noted_for_this_process(port):
                continue  # another process's server may not have bound it yet
            _HANDED_OUT[port] = now
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class LaunchPlan:
    """One config as one host will start it.

    ``config`` is what the test asked for; ``deployed`` what is started (on the embedded
    simulator: loopback and a free port); ``resolved`` what SGLang runs with after its own rules;
    ``expected`` what its startup journal must show. ``argv`` is the host's launcher followed by
    ``flags``; ``env`` the launcher's environment, then the config's. ``model`` is the
    model's identity both are predicted with (the host's config.json, or the directory's name
    with a note in ``expected.notes``).
    """

    host: str
    config: ServerConfig
    deployed: ServerConfig
    sglang_version: str
    launcher: tuple[str, ...]
    flags: tuple[str, ...]
    env: Mapping[str, str]
    resolved: ServerConfig
    expected: ExpectedJournal
    model: ModelIdentity | None = None

    @property
    def notes(self) -> tuple[str, ...]:
        """What the prediction could not know for sure, one line each (shown, never failed)."""
        return tuple(self.expected.notes.values())

    @property
    def argv(self) -> list[str]:
        return [*self.launcher, *self.flags]

    @property
    def files(self) -> Mapping[str, FileSpec]:
        return self.deployed.files

    @property
    def port(self) -> int:
        """The port the server listens on: the config's, else the launcher's ``--port``, else
        SGLang's default."""
        return self.deployed.port or _port_in(self.launcher) or SGLANG_DEFAULT_PORT

    @property
    def listen_host(self) -> str:
        """Where, seen from the host, the server answers (loopback for a local bind)."""
        host = self.deployed.host or "127.0.0.1"
        return "127.0.0.1" if host in LOCAL_ADDRESSES else host

    @property
    def follower(self) -> bool:
        """A multi-node server's node other than the first (``--node-rank`` above 0): it runs
        schedulers that join the first node, and only a health server of its own."""
        ranks = [r for r in flag_values(self.argv, "--node-rank") if r.isdigit()]
        return bool(ranks) and int(ranks[-1]) > 0

    @property
    def api_key(self) -> str | None:
        """The ``--api-key`` the server starts with: requests must then carry it."""
        return api_key(self.flags)

    def secrets(self, is_secret_name: Callable[[str], bool]) -> tuple[str, ...]:
        """The secret values this plan carries: its env entries whose names are secret (by the
        session's rule, which knows the project's own patterns) and its secret flags' values."""
        named = [value for name, value in self.env.items() if is_secret_name(name)]
        return (*named, *(value for _i, value, _inline in secret_flag_values(self.flags)))


def make_launch_plan(
    host: str,
    config: ServerConfig,
    *,
    sglang_version: str,
    launcher: Sequence[str],
    launcher_env: Mapping[str, str],
    local: bool = False,
    pick_port: bool = False,
    model: ModelIdentity | None = None,
    gpu: GpuFacts | None = None,
) -> LaunchPlan:
    """The plan of ``config`` on a host.

    ``local``: a server on this machine serves on loopback and a free port, never a fixed one,
    unless its launcher (the inventory's ``launch``) names ``--port``: then that port, as asked.
    ``pick_port``: a deployer that runs several servers side by side (the process deployer)
    gives a config without ``port`` a free one, unless the launcher already sets ``--port``.
    ``model``: the model's identity as the host has it (the deployer reads its config.json
    there); without it, it is read on this machine, else inferred from the directory's name.
    ``gpu``: the host's GPU where its driver names it: a config it cannot run is refused here.
    """
    deployed = config
    if local and has_flag(launcher, "--port"):
        deployed = config.replace(host="127.0.0.1", port=None)
    elif local:
        deployed = config.replace(host="127.0.0.1", port=free_port())
    elif pick_port and config.port is None and not has_flag(launcher, "--port"):
        deployed = config.replace(port=free_port())
    flags = tuple(deployed.to_argv(sglang_version))
    container = container_of(launcher)
    if container is not None and deployed.env:  # the config's env, into the container by name
        launcher = container.with_env(deployed.env).words
    if model is None:
        model = read_model_identity(deployed.model_path)
    return LaunchPlan(
        host=host,
        config=config,
        deployed=deployed,
        sglang_version=sglang_version,
        launcher=tuple(launcher),
        flags=flags,
        env=MappingProxyType({**launcher_env, **deployed.env}),
        resolved=deployed.resolved(sglang_version, model, gpu),
        expected=deployed.expected_journal(sglang_version, model, gpu),
        model=model,
    )


def _port_in(argv: Sequence[str]) -> int | None:
    """The last ``--port`` in ``argv`` (argparse keeps the last one) that is a number, if any."""
    ports = [value for value in flag_values(argv, "--port") if value.isdigit()]
    return int(ports[-1]) if ports else None
