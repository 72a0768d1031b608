"""The systemd deployer's journal follower on the real test host: what it delivers is what the
host's journal holds after the cursor (every entry once, in order, a non-UTF-8 line included),
as fast as journald has it; where the host's python3 cannot read the journal it falls back to
``journalctl -f`` with the same result; and no reader is left on the host once it is closed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_sglang.lifecycle import systemd
from pytest_sglang.lifecycle.deployer import JournalEntry
from pytest_sglang.lifecycle.follow import JournalFollower, StreamFollower
from pytest_sglang.lifecycle.systemd import SystemdDeployer

from .conftest import Launcher, systemd_host_spec, wait_for

SERVICE = "sglang-follow.service"
UNIT = f"/etc/systemd/system/{SERVICE}"
# 40 lines over 2 s, a line that is not UTF-8, then silence (the unit keeps running)
CHATTY = r"""[Service]
ExecStart=/bin/sh -c 'i=0; while [ $i -lt 40 ]; do echo "line $i"; i=$((i+1)); sleep 0.05; done; printf "\377 not utf-8\n"; exec sleep 600'
"""
READERS = "pgrep -f 'sd_journal_[w]ait|journalctl -u sglang-[f]ollow'"


@pytest.fixture
def deployer(systemd_host: Any, systemd_transport: Any, launcher: Launcher) -> Iterator[Any]:
    systemd_transport.put(CHATTY.encode(), UNIT, mode=0o644)
    systemd_transport.check_output("systemctl daemon-reload")
    spec = systemd_host_spec(systemd_host, SERVICE, launcher.launch)
    dep = SystemdDeployer(spec, systemd_transport)
    yield dep
    systemd_transport.run("systemctl stop -- %s; rm -f -- %s", SERVICE, UNIT)
    systemd_transport.run("systemctl daemon-reload")


def _collect(follower: JournalFollower, until: str, timeout: float = 20.0) -> list[JournalEntry]:
    got: list[JournalEntry] = []
    deadline = time.monotonic() + timeout
    while not any(until in e.message for e in got):
        assert time.monotonic() < deadline, f"never delivered {until!r}: {got[-3:]}"
        assert not follower.ended, follower.ended
        got += follower.wait(0.5)
    return got


def _follow_a_start(deployer: SystemdDeployer, transport: Any) -> list[JournalEntry]:
    cursor = deployer.journal_tail_cursor()
    follower = deployer.follow(cursor)
    assert isinstance(follower, StreamFollower)
    try:
        transport.check_output("systemctl start -- %s", SERVICE)
        got = _collect(follower, "not utf-8")
    finally:
        follower.close()
    # the host's own journal after the same cursor, read in one go
    expected, _ = deployer.read_journal(cursor)
    assert [e.message for e in got] == [e.message for e in expected][: len(got)]
    assert [e.cursor for e in got] == [e.cursor for e in expected][: len(got)]
    # the unit's first entry is systemd's "Started" or its own "line 0", whichever journald
    # stored first (two sources, no order between them); neither may be skipped
    messages = [e.message for e in got]
    assert any(m.startswith("Started ") for m in messages), "the unit's Started entry was skipped"
    assert [m for m in messages if m.startswith("line ")] == [f"line {i}" for i in range(40)]
    assert "\ufffd not utf-8" in messages
    wait_for(lambda: not transport.run(READERS).ok, "the reader on the host to end", 10)
    return got


def test_follower_delivers_the_journal_after_the_cursor(
    deployer: SystemdDeployer, systemd_transport: Any
) -> None:
    _follow_a_start(deployer, systemd_transport)


def test_without_a_usable_libsystemd_it_falls_back_to_journalctl(
    deployer: SystemdDeployer, systemd_transport: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(systemd, "_JOURNAL_TAIL", "import sys; sys.exit(97)")
    _follow_a_start(deployer, systemd_transport)


def test_a_dropped_stream_ends_and_a_new_one_resumes(
    deployer: SystemdDeployer, systemd_transport: Any
) -> None:
    """The follower says it ended when its connection goes; one opened at its cursor
    delivers exactly what follows."""
    cursor = deployer.journal_tail_cursor()
    follower = deployer.follow(cursor)
    systemd_transport.check_output("systemctl start -- %s", SERVICE)
    first = _collect(follower, "line 5")
    deployer.transport.close()  # the connection under the stream goes away
    deadline = time.monotonic() + 10
    while not follower.ended:
        assert time.monotonic() < deadline, "a dead stream never said it ended"
        first += follower.wait(0.2)
    assert not any("not utf-8" in e.message for e in first), "the unit ended before the drop"
    again = deployer.follow(follower.cursor)
    try:
        rest = _collect(again, "not utf-8")
    finally:
        again.close()
    expected, _ = deployer.read_journal(cursor)
    assert [e.message for e in first + rest] == [e.message for e in expected][: len(first + rest)]
