"""Was a run disturbed by the path to the server? A per-run check, never silent.

Why: a 10-second network cut in the middle of a single-stream run left the request complete
and the run recorded as a clean success at 112 tok/s instead of ~183, with a median ITL of
0.01 ms (the buffered tokens arrived at once). A gate would call that a regression of the
server. So every run is checked, from what it measured and what the transport saw:

- a stream gap far beyond the run's own distribution: the longest silence between two events
  of any stream, against ``STREAM_FACTOR`` times the p99 of the run's gaps and at least
  ``STREAM_MIN_S`` (a server that decodes in 20 ms steps never pauses for 2 s);
- the SSH link's round trips (keepalive requests timed during the run) taking over
  ``LINK_MIN_S`` while a stream was silent, or over ``LINK_ALONE_S`` on their own (through a
  saturated port forward a round trip queues behind the data for a second or so, while the
  streams keep flowing: that is a slow path, measured as such, not a stall);
- on the host path, the lines of the generator arriving ``LINK_MIN_S`` later than the others
  (the channel stalled; the host's own timings are unaffected, but the link was not sound);
- the SSH connection re-opened, or lost, during the run.

The verdict is one line, ``network stall of 10.0 s at 3.2 s`` (seconds into the run), or
``stream stall ...`` when the link answered throughout (the server itself paused).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .metrics import RequestRecord, percentile

__all__ = ["LINK_ALONE_S", "LINK_MIN_S", "STREAM_FACTOR", "STREAM_MIN_S", "Evidence", "disturbance"]

STREAM_MIN_S = 2.0
STREAM_FACTOR = 20.0
LINK_MIN_S = 1.5
LINK_ALONE_S = 5.0


@dataclass
class Evidence:
    """What one run saw. Times are ``perf_counter`` seconds: ``records`` and ``began`` on the
    generator's clock, ``link`` (``(sent, seconds)`` of each round trip) and ``link_began`` on
    this machine's, ``lags`` (``(host time, lag)``) on the host's for the time and on both
    for the lag (only differences are used)."""

    records: Sequence[RequestRecord]
    began: float
    link: Sequence[tuple[float, float]] = ()
    link_began: float = 0.0
    link_watched: bool = False
    lags: Sequence[tuple[float, float]] = ()  # host path: ``began`` is on the host's clock
    reconnects: int = 0
    lost: str = ""
    lost_at: float = 0.0


def _stream_stall(ev: Evidence) -> tuple[float, float] | None:
    gaps = [g for r in ev.records for g in r.itls]
    typical = percentile(gaps, 99) if gaps else 0.0
    limit = max(STREAM_MIN_S, STREAM_FACTOR * typical)
    worst = max(ev.records, key=lambda r: r.longest_gap, default=None)
    if worst is None or worst.longest_gap < limit:
        return None
    return worst.longest_gap, worst.longest_gap_at - ev.began


def _link_stall(ev: Evidence) -> tuple[float, float] | None:
    worst = max(ev.link, key=lambda s: s[1], default=None)
    if worst is None or worst[1] < LINK_MIN_S:
        return None
    return worst[1], worst[0] - ev.link_began


def _lag_stall(ev: Evidence) -> tuple[float, float] | None:
    if not ev.lags:
        return None
    floor = min(lag for _, lag in ev.lags)
    sent, lag = max(ev.lags, key=lambda s: s[1])
    if lag - floor < LINK_MIN_S:
        return None
    # the most delayed line is the first one written after the stall began
    return lag - floor, sent - ev.began


def disturbance(ev: Evidence) -> str:
    """Why the run does not measure the server ("" when nothing disturbed it)."""
    if ev.lost:
        return f"the SSH connection was lost at {ev.lost_at:.1f} s ({ev.lost})"
    stream = _stream_stall(ev)
    link = _link_stall(ev)
    if link is not None and stream is None and link[0] < LINK_ALONE_S:
        link = None
    network = [s for s in (link, _lag_stall(ev)) if s is not None]
    if network or (stream is not None and not ev.link_watched):
        seconds, at = max([*network, *([stream] if stream else [])])
        kind = "network" if network or ev.link_watched else "stream"
        line = f"{kind} stall of {seconds:.1f} s at {max(at, 0.0):.1f} s"
    elif stream is not None:
        line = (
            f"stream stall of {stream[0]:.1f} s at {max(stream[1], 0.0):.1f} s (the SSH link "
            "answered meanwhile: the server paused?)"
        )
    else:
        line = ""
    if ev.reconnects:
        reconnected = f"the SSH connection was re-opened {ev.reconnects}x during the run"
        line = f"{line}; {reconnected}" if line else reconnected
    return line
