"""Readiness, crash and deploy latency on the local simulator and on a real systemd + sshd host.

Every latency is read from the host's own clock, never from the plugin's logs: on the systemd
test host (booted with systemd-nspawn, tests/testhost.py) from journald's timestamps
(``__REALTIME_TIMESTAMP``) of the ready line, the fatal line and systemd's "unit started" record;
on the local host from the server log's own millisecond timestamps (``SGLANG_LOG_MS=1``). The
other end is this machine's clock (the same kernel clock) when the fixture's call returned.

Prints, per host:
- ready line -> fixture yields (target median <= 0.05 s, max <= 0.1 s);
- fatal line -> classified error (target <= 0.2 s);
- fixture start -> systemd starts the unit, for the first deployment of a session whose
  ``--help`` is cached from an earlier session, while the launcher's ``--help`` takes
  ``--help-delay`` seconds (target <= 1.0 s), and for later deployments (target <= 0.4 s);
- SSH commands per deployment (commands, streams and file transfers, counted in the transport);
and, side by side with the seeds' fixed ``sleep 100``, deployments for an interleaved suite of
3 configs x 4 tests (target: 3).

Each session is a new HostLease with the in-process probe memo cleared (what a new pytest
process starts with); the probe cache lives in a temporary directory, warmed by one session
first. To compare with an earlier commit, run this script with that commit's package first on
PYTHONPATH (``git archive <commit> pytest_sglang | tar -x -C /tmp/before``).

Usage: .venv/bin/python benchmarks/lifecycle_latency.py [--rounds N] [--no-systemd]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers import (
    SEED_FIELDS,
    child_env,
    child_pytest_argv,
    host_entry,
    save_inventory,
    ssh_transport,
)

from pytest_sglang import ServerConfig, session
from pytest_sglang.errors import ServerStartError
from pytest_sglang.lifecycle import launcher as base
from pytest_sglang.lifecycle.hosts import resolve_host
from pytest_sglang.lifecycle.journal import READY_LINE
from pytest_sglang.session import HostLease

CONFIG = ServerConfig(**SEED_FIELDS)
CONFIGS = [CONFIG.replace(speculative_num_steps=n) for n in (2, 3, 4)]
OOM = CONFIG.replace(env={"SGLANG_SIM_FAULT": "oom"})
FATAL_TEXT = "Not enough memory"
SERVICE = "sglang-bench.service"
#: systemd's catalog id of "a unit started" (``journalctl --catalog``).
UNIT_STARTED = "39f53479d3a045ac8e11786248231fbf"
SEED_SLEEP_S = 100.0
_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})")


@dataclass
class Figures:
    """What one host measured, in seconds (and commands)."""

    ready: list[float] = field(default_factory=list)
    fatal: list[float] = field(default_factory=list)
    start_cold: list[float] = field(default_factory=list)
    start_first: list[float] = field(default_factory=list)
    start_later: list[float] = field(default_factory=list)
    ssh_first: list[int] = field(default_factory=list)
    ssh_later: list[int] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


# -- counting the transport's round trips --------------------------------------------------------


class Counter:
    """Every transport the sessions make (deployer and lock), and their round trips so far."""

    def __init__(self) -> None:
        self.transports: list[Any] = []
        self._wrapped = 0

    def _count(self, transport: Any) -> Any:
        if not hasattr(type(transport), "round_trips"):  # an older tree: count from outside
            for name in ("_run", "put", "get"):
                inner = getattr(transport, name)

                def counted(*a: Any, _inner: Any = inner, **k: Any) -> Any:
                    self._wrapped += 1
                    return _inner(*a, **k)

                setattr(transport, name, counted)
        self.transports.append(transport)
        return transport

    def total(self) -> int:
        return self._wrapped + sum(getattr(t, "round_trips", 0) for t in self.transports)

    @contextmanager
    def installed(self) -> Iterator[Counter]:
        original = getattr(session, "transport_for")  # noqa: B009 - what HostLease calls
        setattr(session, "transport_for", lambda spec: self._count(original(spec)))  # noqa: B010
        try:
            yield self
        finally:
            setattr(session, "transport_for", original)  # noqa: B010


def new_process() -> None:
    """Forget what this process learned about launchers, as a new pytest process would."""
    for name in ("_HELP_CACHE", "_VERSION_CACHE", "_IDENTITY_CACHE"):
        memo = getattr(base, name, None)
        if memo is not None:
            memo.clear()


# -- the systemd test host -----------------------------------------------------------------------


class Journal:
    """The test host's journal, read on a connection of its own (never counted)."""

    def __init__(self, transport: Any) -> None:
        self.t = transport

    def cursor(self) -> str:
        out: str = self.t.check_output("journalctl -n 0 --show-cursor --no-pager")
        return out.strip().rsplit("-- cursor: ", 1)[-1].strip()

    def entries(self, after: str) -> list[dict[str, Any]]:
        """The unit's entries after ``after`` (filtered here: with ``-u``, systemd 252's
        journalctl skips the unit's first entry when the cursor's entry is not the unit's)."""
        time.sleep(0.3)  # let journald write what came last
        out = self.t.check_output("journalctl -o json --all --no-pager --after-cursor=%s", after)
        records = [json.loads(line) for line in out.splitlines() if line.strip()]
        return [
            r
            for r in records
            if r.get("_SYSTEMD_UNIT") == SERVICE
            or (r.get("_PID") == "1" and r.get("UNIT") == SERVICE)
        ]


def _when(entries: list[dict[str, Any]], test: Callable[[dict[str, Any]], bool]) -> float | None:
    for e in entries:
        if test(e):
            return int(e["__REALTIME_TIMESTAMP"]) / 1e6
    return None


def _message(e: dict[str, Any]) -> str:
    m = e.get("MESSAGE")
    return m if isinstance(m, str) else ""


def systemd_figures(host: Any, rounds: int, help_delay: float, tmp: Path) -> Figures:
    env = {
        "SGLANG_SIM_STARTUP_SCALE": "0.03",
        "SGLANG_SIM_TIME_SCALE": "0",
        "SGLANG_SIM_HELP_DELAY_S": f"{help_delay:g}",
    }
    inventory = save_inventory(tmp / "hosts.toml", host_entry("testhost", host, SERVICE, env))
    spec = resolve_host("testhost", inventory_path=inventory)
    observer = ssh_transport(host)
    journal = Journal(observer)
    figures = Figures()
    counter = Counter()

    def lease() -> HostLease:
        new_process()
        return HostLease(spec, ready_timeout=120, lock_timeout=30, drain_timeout=0)

    def deploy(lease_: HostLease, config: ServerConfig) -> tuple[float, float | None, int]:
        """(fixture start, when it returned or failed, SSH round trips); None: it failed."""
        before = counter.total()
        t0 = time.time()
        try:
            lease_.deployment(config)
            done: float | None = time.time()
        except ServerStartError:
            done = None
            figures_fail.append(time.time())
        return t0, done, counter.total() - before

    figures_fail: list[float] = []
    with counter.installed():
        # session 0: nothing cached yet (its --help runs, help_delay s)
        cursor = journal.cursor()
        warm = lease()
        t0, done, _n = deploy(warm, CONFIGS[0])
        warm.restore()
        started = _when(journal.entries(cursor), lambda e: e.get("MESSAGE_ID") == UNIT_STARTED)
        if started is not None:
            figures.start_cold.append(started - t0)
        for _ in range(rounds):
            lease_ = lease()
            for i, config in enumerate(CONFIGS):
                cursor = journal.cursor()
                t0, done, n = deploy(lease_, config)
                entries = journal.entries(cursor)
                started = _when(entries, lambda e: e.get("MESSAGE_ID") == UNIT_STARTED)
                ready = _when(entries, lambda e: READY_LINE in _message(e))
                if done is None or started is None or ready is None:
                    figures.dropped.append(f"deployment {i + 1}: no ready line or no start")
                    continue
                figures.ready.append(done - ready)
                (figures.start_first if i == 0 else figures.start_later).append(started - t0)
                (figures.ssh_first if i == 0 else figures.ssh_later).append(n)
            lease_.restore()
        for _ in range(rounds):
            lease_ = lease()
            cursor = journal.cursor()
            figures_fail.clear()
            deploy(lease_, OOM)
            fatal = _when(journal.entries(cursor), lambda e: FATAL_TEXT in _message(e))
            lease_.restore()
            if not figures_fail or fatal is None:
                figures.dropped.append("crash round: no error or no fatal line")
                continue
            figures.fatal.append(figures_fail[0] - fatal)
    observer.close()
    return figures


# -- the local host ------------------------------------------------------------------------------


def _log_time(path: str, text: str) -> float | None:
    """The server log's own timestamp of the last line containing ``text`` (the log of a
    session's deployments is one file)."""
    found = stamp = None
    for line in Path(path).read_text(errors="replace").splitlines():
        m = _STAMP.match(line)
        if m:  # a multi-line message (a traceback) carries its stamp on its first line
            stamp = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
        if text in line:
            found = stamp
    return found


def local_figures(rounds: int) -> Figures:
    os.environ["SGLANG_LOG_MS"] = "1"
    os.environ["SGLANG_SIM_STARTUP_SCALE"] = "0.03"
    figures = Figures()
    for _ in range(rounds):
        new_process()
        lease_ = HostLease(resolve_host("local"), ready_timeout=120)
        for config in CONFIGS:
            lease_.deployment(config)
            done = time.time()
            ready = _log_time(str(getattr(lease_.deployer, "log_path", "")), READY_LINE)
            if ready is None:
                figures.dropped.append("no timestamped ready line in the server log")
            else:
                figures.ready.append(done - ready)
        lease_.restore()
    for _ in range(rounds):
        lease_ = HostLease(resolve_host("local"), ready_timeout=120)
        try:
            lease_.deployment(OOM)
            figures.dropped.append("the deployment did not fail")
        except ServerStartError:
            failed = time.time()
            fatal = _log_time(str(getattr(lease_.deployer, "log_path", "")), FATAL_TEXT)
            if fatal is None:
                figures.dropped.append("no timestamped fatal line in the server log")
            else:
                figures.fatal.append(failed - fatal)
        lease_.restore()
    return figures


# -- deployments of an interleaved suite ---------------------------------------------------------

SUITE = """
import pytest
from pytest_sglang import ServerConfig, sweep
BASE = ServerConfig(model_path="/models/Qwen3-8B", speculative_algorithm="EAGLE",
                    speculative_num_steps=1, speculative_eagle_topk=1)
CONFIGS = sweep(BASE, speculative_num_steps=[1, 2, 3])
""" + "".join(
    f"""
@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_{n}(sglang_server):
    assert sglang_server.get("/health").status_code == 200
"""
    for n in range(4)
)


def interleaved_deployments() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "test_suite.py").write_text(textwrap.dedent(SUITE))
        out = Path(tmp, "summary.json")
        env = child_env({"SGLANG_SIM_STARTUP_SCALE": "0"}, drop=())
        subprocess.run(
            child_pytest_argv("-q", tmp, "--sglang-summary", str(out)),
            check=True,
            env=env,
            capture_output=True,
        )
        return len(json.loads(out.read_text())["deployments"])


# -- printing ------------------------------------------------------------------------------------


def _cell(values: list[float] | list[int], how: str) -> str:
    if not values:
        return "n/a"
    if how == "int":
        return f"{statistics.median(values):.0f} ({min(values)}-{max(values)})"
    med, top = statistics.median(values), max(values)
    return f"{med:.3f} / {top:.3f}"


def print_table(hosts: dict[str, Figures], help_delay: float) -> None:
    rows = [
        ("ready line -> fixture yields, median / max (s)", "ready", "<= 0.05 / 0.1"),
        ("fatal line -> error, median / max (s)", "fatal", "<= 0.2"),
        (
            f"fixture start -> unit started, 1st of a session, --help {help_delay:g}s uncached",
            "start_cold",
            "",
        ),
        ("fixture start -> unit started, 1st of a session, cached (s)", "start_first", "<= 1.0"),
        ("fixture start -> unit started, later deployments (s)", "start_later", "<= 0.4"),
        ("SSH commands per deployment, 1st of a session: median (range)", "ssh_first", ""),
        ("SSH commands per deployment, later: median (range)", "ssh_later", ""),
    ]
    names = list(hosts)
    print(f"\n{'measure':<66}" + "".join(f"{n:>18}" for n in names) + "  target")
    for title, key, target in rows:
        how = "int" if key.startswith("ssh") else "s"
        cells = "".join(f"{_cell(getattr(hosts[n], key), how):>18}" for n in names)
        print(f"{title:<66}{cells}  {target}")
    for name, figures in hosts.items():
        used = len(figures.ready) + len(figures.fatal)
        print(f"{name}: {used} rounds used, {len(figures.dropped)} dropped {figures.dropped or ''}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="sessions per measure and host")
    parser.add_argument("--help-delay", type=float, default=8.0, help="the launcher's --help (s)")
    parser.add_argument("--no-systemd", action="store_true", help="the local host only")
    args = parser.parse_args()
    os.environ.setdefault("SGLANG_SIM_TIME_SCALE", "0")
    cache = tempfile.mkdtemp(prefix="lifecycle-latency-cache-")
    os.environ["PYTEST_SGLANG_CACHE_DIR"] = cache  # cold, warmed by the first session

    hosts = {"local": local_figures(args.rounds)}
    if not args.no_systemd:
        from testhost import (  # type: ignore[import-not-found]
            STATE_ROOT,
            TestHostFactory,
            missing_prerequisites,
        )

        missing = missing_prerequisites()
        if missing:
            print("lifecycle_latency: no systemd test host: needs " + ", ".join(missing))
        else:
            factory = TestHostFactory(STATE_ROOT)
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    hosts["systemd+ssh"] = systemd_figures(
                        factory("lat"), args.rounds, args.help_delay, Path(tmp)
                    )
            finally:
                factory.close()
    deployments = interleaved_deployments()
    print_table(hosts, args.help_delay)
    print(
        f"\n{'deployments, 3 configs x 4 interleaved tests':<66}{deployments:>18d}"
        f"{'12 (seeds)':>18}  3"
    )
    print(
        f"(the seeds' loop waits a fixed sleep {SEED_SLEEP_S:.0f}: past readiness, and notices "
        "a crash only at its end; load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
        + ")"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
