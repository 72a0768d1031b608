"""The chaos script in short: one session each interrupted by SIGINT, SIGTERM and SIGKILL at a
random point of its deploy or benchmark; the host must come back byte-identical every time."""

from __future__ import annotations

import sys
from pathlib import Path

from testhost import SystemdTestHost

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import chaos


def test_three_interrupted_sessions_leave_the_host_as_it_was(
    systemd_host: SystemdTestHost, capsys: object
) -> None:
    tally = chaos.run_chaos(systemd_host, sessions=3, seed=7, max_delay=6.0)
    assert [r[0] for r in tally.rounds] == ["SIGINT", "SIGTERM", "SIGKILL"]
    assert tally.ok == 3, tally.rounds
