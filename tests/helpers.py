"""Scaffolding shared by the tests and the benchmarks: inventories, host snapshots, simulator
environments, child pytest sessions.

``tests/`` is on ``sys.path`` (tests/conftest.py puts it there, as it does for ``testhost``;
the scripts in benchmarks/ insert it), so ``from helpers import ...`` works from any test
module, conftest or benchmark. Nothing here imports the package at module level: a benchmark
that only wants an inventory does not pull in paramiko.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest
    from testhost import SystemdTestHost

    from pytest_sglang.config import ServerConfig
    from pytest_sglang.lifecycle.deployment import Deployment
    from pytest_sglang.transport.ssh import SshTransport

__all__ = [
    "EAGLE_FLAGS",
    "FAST_SIM",
    "HOSTILE",
    "PRODUCTION_UNIT",
    "SEED_FIELDS",
    "SIM_LAUNCH",
    "STRAY_KNOBS",
    "booted_test_host",
    "child_env",
    "child_pytest_argv",
    "container_namespace",
    "deployed_on",
    "file_state_command",
    "file_states",
    "host_args",
    "host_entry",
    "local_entry",
    "pids_matching",
    "pin",
    "pin_server_apart",
    "processes_in",
    "save_inventory",
    "sim_knobs",
    "ssh_transport",
    "use_simulator_env",
]

# -- the simulator ------------------------------------------------------------------------------

#: The inventory's ``launch`` for the built-in simulator, with this interpreter.
SIM_LAUNCH = f"{sys.executable} -m pytest_sglang.sim"
#: Start at once and serve without delays.
FAST_SIM = {"SGLANG_SIM_STARTUP_SCALE": "0", "SGLANG_SIM_TIME_SCALE": "0"}
#: Knobs a developer's shell may have set that would make a test's simulator misbehave.
STRAY_KNOBS = ("SGLANG_SIM_FAULT", "SGLANG_SIM_IGNORE_FLAG", "SGLANG_SIM_SPEED_FACTOR")
#: The simulator's flags for EAGLE speculative decoding (steps 2, topk 1): chunks of several
#: tokens, an accept length above 1, and the speculative path of the diverge-after fault.
EAGLE_FLAGS = (
    "--speculative-algorithm",
    "EAGLE",
    "--speculative-num-steps",
    "2",
    "--speculative-eagle-topk",
    "1",
)

#: The seeds' setup (Qwen3.5-122B-A10B at TP 4, EAGLE steps 2, topk 1) as ServerConfig fields.
SEED_FIELDS: dict[str, Any] = dict(
    model_path="/shared/models/Qwen3.5-122B-A10B",
    served_model_name="qwen3.5-122b",
    tp_size=4,
    speculative_algorithm="EAGLE",
    speculative_num_steps=2,
    speculative_eagle_topk=1,
)


def sim_knobs() -> list[str]:
    """Every ``SGLANG_SIM_*`` variable set in this process's environment."""
    return [name for name in os.environ if name.startswith("SGLANG_SIM_")]


def use_simulator_env(
    monkeypatch: pytest.MonkeyPatch,
    env: Mapping[str, str] = FAST_SIM,
    *,
    drop: Iterable[str] = STRAY_KNOBS,
) -> None:
    """For this test: remove the ``drop`` variables, then set ``env`` (fast by default)."""
    for name in drop:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def child_env(env: Mapping[str, str], *, drop: Iterable[str] = STRAY_KNOBS) -> dict[str, str]:
    """This process's environment less the ``drop`` variables, plus ``env``: for a child."""
    dropped = set(drop)
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, **env}


#: A child session's test still running after this long has its threads' stacks written to its
#: stderr (pytest's faulthandler), so a test that gives up on a hung child shows where it hung.
CHILD_STACKS_AFTER_S = 200


def child_pytest_argv(*args: str) -> list[str]:
    """``python -m pytest -p no:cacheprovider *args`` with this interpreter, with the stacks of
    a test that hangs written out (:data:`CHILD_STACKS_AFTER_S`)."""
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-o",
        f"faulthandler_timeout={CHILD_STACKS_AFTER_S}",
        *args,
    ]


def interruptible() -> None:
    """``preexec_fn`` of a child session that a test interrupts with SIGINT: Ctrl-C's default
    disposition. A pytest started in the background by a shell without job control (``make test
    &``, nohup) ignores SIGINT, and a child inherits that: it would sleep through the signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def host_args(*names: str) -> list[str]:
    """``--sglang-host <name>`` for each of ``names``."""
    return [arg for name in names for arg in ("--sglang-host", name)]


# -- inventories --------------------------------------------------------------------------------


def _toml_table(env: Mapping[str, str]) -> str:
    return "{ " + ", ".join(f'{k} = "{v}"' for k, v in env.items()) + " }"


def host_entry(
    name: str,
    host: SystemdTestHost,
    service: str,
    env: Mapping[str, str],
    launch: str = SIM_LAUNCH,
) -> str:
    """An inventory entry ``[hosts.<name>]`` for a systemd test host, as root over SSH with the
    host's own key and known_hosts."""
    return (
        f"[hosts.{name}]\n"
        f'ssh = "root@{host.ip}:22"\n'
        f'service = "{service}"\n'
        f'launch = "{launch}"\n'
        f'known_hosts = "{host.known_hosts_path}"\n'
        f'identity = "{host.key_path}"\n'
        f"env = {_toml_table(env)}\n"
    )


def local_entry(name: str, env: Mapping[str, str] | None = None) -> str:
    """An inventory entry ``[hosts.<name>]`` for the simulator on this machine."""
    return f'[hosts.{name}]\nssh = "local"\n' + (f"env = {_toml_table(env)}\n" if env else "")


def save_inventory(path: Path, *entries: str) -> Path:
    """Write the entries (blank lines between them) to ``path``; returns ``path``."""
    path.write_text("\n".join(entries))
    return path


# -- hosts --------------------------------------------------------------------------------------


def file_state_command(path: str) -> str:
    """A shell command printing ``path``'s type, mode and owner and, for a file, its sha256;
    ``absent`` when there is nothing at ``path``."""
    q = shlex.quote(path)
    return (
        f"test -e {q} && {{ stat -c '%F %a %U:%G' {q}; test -f {q} && sha256sum < {q}; }} "
        "|| echo absent"
    )


def file_states(run: Callable[[str], Any], paths: Iterable[str]) -> dict[str, str]:
    """``{path: state}`` for each path (see :func:`file_state_command`), through ``run``:
    ``transport.run`` or ``SystemdTestHost.ssh``, anything returning a result with ``stdout``."""
    return {path: run(file_state_command(path)).stdout.strip() for path in paths}


#: A production unit the tests install first and expect to find again afterwards.
PRODUCTION_UNIT = """[Unit]
Description=the production service (a sleeping stand-in)
[Service]
ExecStart=/bin/sleep infinity
[Install]
WantedBy=multi-user.target
"""


#: Arguments that break a command built without quoting (``printf`` must get them back as is).
HOSTILE = [
    "'; rm -rf /tmp/x; echo '",
    "two\nlines",
    "$(touch /tmp/pwned-by-quoting)",
    "`id`",
    '"double" and \\back\\slash',
    "*",
    "",
    "-n",
    "unicode ✓ ü",
]


@contextmanager
def booted_test_host(script: str, label: str) -> Iterator[SystemdTestHost]:
    """For a benchmark script: the nspawn test host ``label`` of tests/testhost.py, booted, and
    torn down afterwards. Without its prerequisites (root, systemd-nspawn, sshd) the script
    cannot measure anything: one line naming what is missing, then exit status 2."""
    from testhost import STATE_ROOT, TestHostFactory, missing_prerequisites

    missing = missing_prerequisites()
    if missing:
        print(f"{script}: cannot boot the test host: needs " + ", ".join(missing))
        raise SystemExit(2)
    factory = TestHostFactory(STATE_ROOT)
    try:
        yield factory(label)
    finally:
        factory.close()


@contextmanager
def deployed_on(
    host: SystemdTestHost, service: str, config: ServerConfig, env: Mapping[str, str]
) -> Iterator[Deployment]:
    """For a benchmark script: ``config`` deployed as ``service`` on the test host (the
    simulator as the service, ``env`` its knobs) by a session of its own, restored after."""
    import tempfile

    from pytest_sglang.session import SglangSession

    with tempfile.TemporaryDirectory() as tmp:
        entry = host_entry("testhost", host, service, env)
        inventory = save_inventory(Path(tmp) / "hosts.toml", entry)
        session = SglangSession(
            ["testhost"], inventory=inventory, ssh_config=None, ready_timeout=60
        )
        try:
            yield session.host("testhost").deployment(config)
        finally:
            session.restore_all()


# -- processes of a test host, seen from this machine (benchmarks) ------------------------------


def _pid_ns(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return ""


def _parent(pid: int) -> int:
    raw = Path(f"/proc/{pid}/stat").read_text()
    return int(raw[raw.rindex(")") + 2 :].split()[1])


def container_namespace(machine: str) -> str:
    """The PID namespace of the nspawn test host ``machine`` (its init's: nspawn's child). Its
    processes are in this machine's process table too, so a benchmark can read their CPU time
    and set their CPUs."""
    from testhost import nspawn_pids

    nspawn = set(nspawn_pids(machine))
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and _parent(int(entry)) in nspawn:
                return _pid_ns(int(entry))
        except (OSError, ValueError):
            continue
    raise RuntimeError(f"no container of the test host {machine} is running")


def pids_matching(needle: str, namespace: str) -> list[int]:
    """Processes of the PID ``namespace`` (a container's) whose command line contains
    ``needle`` and whose parent's does not: the root of each matching tree (``bash -c`` on the
    host may or may not exec the command; other test hosts may run the same commands)."""
    found: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or _pid_ns(int(entry)) != namespace:
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            parent = _parent(int(entry))
        except (OSError, ValueError):
            continue
        if needle.encode() in cmdline:
            found[int(entry)] = parent
    return sorted(pid for pid, parent in found.items() if parent not in found)


def processes_in(namespace: str) -> list[int]:
    """Every process of the PID ``namespace``."""
    return [int(e) for e in os.listdir("/proc") if e.isdigit() and _pid_ns(int(e)) == namespace]


def pin_server_apart(machine: str, server: str = "-m pytest_sglang.sim") -> str:
    """The test host's ``server`` processes on the first half of this machine's CPUs, every
    other process of the test host (sshd, and what it starts later: an on-host load generator)
    and this process on the other half; what was done, for the benchmark's header.

    Why: at full speed a client and the server on the same few cores share them as the
    scheduler happens to split them, and the figures then say who got more CPU, not what the
    path between them costs. Apart, each has its own."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return "not pinned (one CPU)"
    half = len(cpus) // 2
    servers, rest = set(cpus[:half]), set(cpus[half:])
    ns = container_namespace(machine)
    roots = pids_matching(server, ns)
    pin([p for p in processes_in(ns) if p not in roots], rest)
    pin(roots, servers)
    pin([os.getpid()], rest)
    return f"server on CPU {sorted(servers)}, clients, sshd and this process on CPU {sorted(rest)}"


def pin(pids: Iterable[int], cpus: set[int]) -> None:
    """Every thread of ``pids`` to ``cpus`` (the threads they start later inherit it). A
    process that is gone meanwhile is skipped."""
    for pid in pids:
        try:
            threads = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue
        for tid in threads:
            with suppress(OSError):
                os.sched_setaffinity(tid, cpus)


def ssh_transport(host: SystemdTestHost) -> SshTransport:
    """An :class:`SshTransport` to ``host`` as root (strict host keys, its own key)."""
    from pytest_sglang.transport.ssh import SshTransport  # keeps paramiko out of benchmarks

    return SshTransport(
        host.ip,
        user=host.user,
        key_filename=host.key_path,
        known_hosts=host.known_hosts_path,
        connect_timeout=5.0,
    )
