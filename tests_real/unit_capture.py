"""Run the real server as a transient systemd service on the test host, and keep its journal.

Why: production runs SGLang as a systemd unit, and the unit's own ``[Service]`` settings (its
limits, its sandboxing, its user) are part of what a start depends on. A failure they cause is
written to the journal, where the plugin reads it: the server's own lines and the service
manager's (``Failed at step EXEC spawning ...``, ``Main process exited, code=killed,
status=31/SYS``). The capture keeps that record as the plugin sees it: each entry's ``MESSAGE``
(``journalctl -o cat``), in order.

The test host (``tests/testhost.py``) is a booted systemd + journald container whose root is an
overlay of this machine's, so the tier's venv and tiny model are there at the same paths; the
service runs in its network namespace, which reaches nothing outside.
"""

from __future__ import annotations

import re
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # testhost

from testhost import STATE_ROOT, SystemdTestHost, TestHostFactory

#: How the service manager says the main process ended (``ExecMainCode``, waitid(2)'s si_code).
CLD_EXITED, CLD_KILLED, CLD_DUMPED = 1, 2, 3


@dataclass(frozen=True)
class UnitOutcome:
    """What one service run left: its journal's messages and how it ended."""

    journal: str
    outcome: str  # "ready", "ready, then died", "exit N" (a signal: "exit -N") or "timeout"


def unit_name(case_id: str, batch: int) -> str:
    """A transient unit's name for a case: systemd's characters only."""
    return f"cap{batch}-" + re.sub(r"[^A-Za-z0-9_.-]", "-", case_id) + ".service"


def _state(host: SystemdTestHost, unit: str) -> dict[str, str]:
    shown = host.ssh(
        f"systemctl show {shlex.quote(unit)} -p ExecMainCode -p ExecMainStatus -p ActiveState"
        " -p SubState -p MainPID"
    ).stdout
    return dict(line.partition("=")[::2] for line in shown.splitlines() if "=" in line)


def _ended(state: dict[str, str]) -> str | None:
    """``exit N`` (``exit -N`` for a signal) once the main process has ended, else None."""
    code = int(state.get("ExecMainCode") or 0)
    if code == 0 or state.get("MainPID", "0") != "0":
        return None
    status = int(state.get("ExecMainStatus") or 0)
    return f"exit {-status if code in (CLD_KILLED, CLD_DUMPED) else status}"


def _journal(host: SystemdTestHost, unit: str) -> str:
    return host.ssh(f"journalctl -u {shlex.quote(unit)} -o cat --all --no-pager", timeout=60).stdout


def run_in_unit(
    host: SystemdTestHost,
    unit: str,
    command: Sequence[str],
    env: dict[str, str],
    properties: Sequence[tuple[str, str]],
    *,
    ready_line: str,
    tree_ending: re.Pattern[str],
    timeout_s: float,
    after_ready_s: float,
) -> UnitOutcome:
    """Start ``command`` as ``unit`` with ``properties`` (``[Service]`` settings) and ``env``;
    wait for its ready line or its end; return its journal up to then and its outcome, and stop
    it (``systemctl stop`` sends SIGTERM to every process of the unit, and what they log then is
    the capture's doing, not the setting's).

    ``--remain-after-exit`` keeps a unit whose process ended loaded, so that how it ended can be
    read after; the unit is stopped and forgotten (``reset-failed``) before returning."""
    host.ssh(f"systemctl stop {shlex.quote(unit)}; systemctl reset-failed {shlex.quote(unit)}")
    argv = ["systemd-run", f"--unit={unit}", "--remain-after-exit", "--quiet"]
    argv += [f"--setenv={key}={value}" for key, value in env.items()]
    argv += [f"--property={key}={value}" for key, value in properties]
    started = host.ssh(shlex.join([*argv, "--", *command]))
    if started.returncode != 0:
        return UnitOutcome(started.stderr, f"exit {started.returncode} (systemd-run)")
    outcome = "timeout"
    begun = time.monotonic()
    while time.monotonic() - begun < timeout_s:
        ended = _ended(_state(host, unit))
        if ended is not None:
            outcome = ended
            break
        if ready_line in _journal(host, unit):
            outcome = _after_ready(host, unit, ready_line, tree_ending, after_ready_s)
            break
        time.sleep(1.0)
    journal = _journal(host, unit)  # before the stop: its SIGTERM to the cgroup is the capture's
    host.ssh(f"systemctl stop {shlex.quote(unit)}", timeout=60)
    host.ssh(f"systemctl reset-failed {shlex.quote(unit)}")
    return UnitOutcome(journal, outcome)


def _after_ready(
    host: SystemdTestHost, unit: str, ready_line: str, tree_ending: re.Pattern[str], watch: float
) -> str:
    deadline = time.monotonic() + watch
    while time.monotonic() < deadline:
        after = _journal(host, unit).partition(ready_line)[2]
        if _ended(_state(host, unit)) is not None or tree_ending.search(after):
            return "ready, then died"
        time.sleep(1.0)
    return "ready"


class UnitHost:
    """The test host the unit batches run on, booted once for a capture and torn down after."""

    def __init__(self) -> None:
        self._factory = TestHostFactory(STATE_ROOT)
        self.host: SystemdTestHost | None = None

    def __enter__(self) -> SystemdTestHost:
        self.host = self._factory("cap")
        return self.host

    def __exit__(self, *exc: Any) -> None:
        self._factory.close()


__all__ = ["SystemdTestHost", "UnitHost", "UnitOutcome", "run_in_unit", "unit_name"]
