"""Following the server's output as it arrives, instead of asking for it with a command per look.

A :class:`JournalFollower` hands out the entries after a cursor as soon as the host has them:
:class:`StreamFollower` reads one long-running command (``journalctl -f``, ``tail -F``) on its
own channel and parses its lines; :class:`PollingFollower` is the fallback for transports that
cannot stream (it reads the journal every ``interval`` seconds). Either way ``cursor`` is where
a new follower resumes without losing or repeating a line, which is how a dropped connection
is survived (see :func:`pytest_sglang.lifecycle.readiness.wait_until_ready`).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..transport.base import CommandStream

__all__ = ["JournalEntry", "JournalFollower", "LineParser", "PollingFollower", "StreamFollower"]


@dataclass(frozen=True)
class JournalEntry:
    """One line of the server's output; ``cursor`` resumes reading right after it."""

    cursor: str
    message: str
    realtime_us: int


#: Turns one complete output line (without its newline) and the cursor before it into an entry
#: (None: not an entry, e.g. a blank line; the cursor still moves on where the parser says so).
LineParser = Callable[[bytes, str], "JournalEntry | None"]


class JournalFollower(ABC):
    """Entries after ``cursor``, delivered as they arrive."""

    #: Where the entries handed out so far end: a new follower from here misses nothing.
    cursor: str = ""
    #: Why it stopped delivering ("" while it follows): then open another from ``cursor``.
    ended: str = ""

    @abstractmethod
    def wait(self, timeout: float) -> list[JournalEntry]:
        """The entries that arrived, waiting up to ``timeout`` s for the first; ``[]`` when
        none came in time or the follower ended (see ``ended``)."""

    def close(self) -> None:  # noqa: B027 - nothing to release for a polling follower
        """Stop following (idempotent)."""


class StreamFollower(JournalFollower):
    """Entries parsed from a command's stdout lines; a partial line waits for its end."""

    def __init__(self, stream: CommandStream, cursor: str, parse: LineParser) -> None:
        self.stream = stream
        self.cursor = cursor
        self.parse = parse
        self._partial = b""

    def wait(self, timeout: float) -> list[JournalEntry]:
        if self.ended:
            return []
        data = self.stream.read(timeout)
        if data is None:
            self.ended = self.stream.end or "the stream ended"
            return []
        entries: list[JournalEntry] = []
        # take whatever else is already there, so one wake-up hands out one burst
        while data:
            *lines, self._partial = (self._partial + data).split(b"\n")
            for raw in lines:
                entry = self.parse(raw, self.cursor)
                if entry is not None:
                    entries.append(entry)
                    self.cursor = entry.cursor
            more = self.stream.read(0)
            if more is None:
                self.ended = self.stream.end or "the stream ended"
                break
            data = more
        return entries

    def close(self) -> None:
        if not self.ended:
            self.ended = "closed"
        self.stream.close()


class PollingFollower(JournalFollower):
    """``read(cursor)`` every ``interval`` seconds: for transports that cannot stream."""

    def __init__(
        self,
        read: Callable[[str], tuple[list[JournalEntry], str]],
        cursor: str,
        interval: float = 0.2,
    ) -> None:
        self.read = read
        self.cursor = cursor
        self.interval = interval
        self._next = time.monotonic()

    def wait(self, timeout: float) -> list[JournalEntry]:
        pause = self._next - time.monotonic()
        if pause > timeout:
            time.sleep(max(0.0, timeout))
            return []
        time.sleep(max(0.0, pause))
        self._next = time.monotonic() + self.interval
        entries, self.cursor = self.read(self.cursor)
        return entries
