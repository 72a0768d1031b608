"""Running :mod:`.agent` on the GPU host over SSH and reading its lines back.

One command per round on the host's transport: the host's Python with :data:`~.agent.BOOT`,
the sources and the run on stdin (:func:`~.agent.payload`), its stdout read as it arrives. Each
line's lag (arrival here minus when the host wrote it, on two clocks whose offset cancels out)
is kept: a lag that jumps by seconds is the SSH channel stalling, which the stall check
reports, although the host's own timings are not touched by it.

A run stopped early (``on_record`` returned True: a search probe whose outcome is certain)
ends by closing the command: the generator's next line then finds its stdout gone and it
exits at once, which drops its requests as a cancelled local run does.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import SglangError, TransportError
from ..transport.base import CommandStream, Transport
from .agent import BEAT_S, BOOT, payload, raw_run, record_of
from .loadgen import PROGRESS_EVERY_S, ProgressSink, RawRun, RunProgress
from .metrics import RequestRecord
from .workload import Workload

__all__ = ["HostRun", "NoAiohttp", "run_on_host"]

#: What the run may take beyond its own deadline before the reader gives up on the host.
SLACK_S = 120.0
#: How long the generator may take to exit after its last line.
EXIT_S = 5.0


class NoAiohttp(SglangError):
    """The host's Python cannot run the generator (no aiohttp there, or too old)."""


@dataclass
class HostRun:
    """What came back: the run (None when the stream ended before its ``done`` line), each
    line's ``(host time, lag)``, and why the stream ended early ("" when it did not)."""

    raw: RawRun | None
    lags: list[tuple[float, float]] = field(default_factory=list)
    lost: str = ""
    lost_at: float = 0.0


def _wait_for_exit(stream: CommandStream, bound: float = EXIT_S) -> None:
    """Until the command has exited (bounded): when the run returns, nothing of it is left."""
    until = time.monotonic() + bound
    while time.monotonic() < until and stream.read(timeout=0.2) is not None:
        pass


def _stopped(records: list[RequestRecord]) -> RawRun:
    """The run of a generator stopped after ``records``: from its first request's start to
    when its last record ended (the host's ``began`` comes only with its ``done`` line)."""
    began = min(r.start for r in records)
    ended = max(r.start + r.e2e if r.e2e is not None else r.last_event or r.start for r in records)
    return RawRun(records=records, duration=max(ended - began, 0.0), began=began)


def _item(line: bytes) -> dict[str, Any] | None:
    """One line of the generator's output as its JSON object; None for anything else (a blank
    line, or one that is not ours: a sitecustomize printing?)."""
    if not line.strip():
        return None
    try:
        item = json.loads(line)
    except ValueError:
        return None
    return item if isinstance(item, dict) else None


def _take(
    item: dict[str, Any],
    now: float,
    out: HostRun,
    records: list[RequestRecord],
    python: list[str],
    where: str,
    on_record: Callable[[RequestRecord], bool | None] | None,
) -> bool:
    """Take one line of the generator's: its beat, a record, the end, or why it cannot run;
    True when ``on_record`` stopped the run."""
    if isinstance(item.get("t"), (int, float)):
        out.lags.append((float(item["t"]), now - float(item["t"])))
    if "missing" in item:
        raise NoAiohttp(
            f"{where}: the host's Python ({shlex.join(python[-1:])}, "
            f"{item.get('python', '?')}) cannot run the load generator: {item['missing']}"
        )
    if "error" in item:
        raise SglangError(f"{where}: the load generator on the host: {item['error']}")
    if "record" in item:
        record = record_of(item["record"])
        records.append(record)
        if on_record is not None and on_record(record):
            out.raw = _stopped(records)
            return True
    if "done" in item:
        out.raw = raw_run(records, item["done"])
    return False


def run_on_host(
    transport: Transport,
    python: list[str],
    base_url: str,
    workload: Workload,
    *,
    model: str,
    where: str,
    on_record: Callable[[RequestRecord], bool | None] | None = None,
    progress: ProgressSink | None = None,
    api_key: str | None = None,
) -> HostRun:
    """Run ``workload`` with the host's ``python`` (its words, environment first) against
    ``base_url`` as seen from the host; ``on_record`` sees each request as its record arrives
    and stops the run by returning True; ``progress`` hears about once a second how far the
    run got (as :func:`~.loadgen.generate`'s callers do)."""
    data = payload(base_url, workload, model, api_key)
    command = " ".join(["%s"] * len(python)) + " -c %s"
    try:
        stream = transport.stream(command, *python, BOOT, stdin=data)
    except TransportError as exc:  # its command carries the launcher's environment: not shown
        raise TransportError(
            f"{where}: cannot start the load generator on the host ({type(exc).__name__})",
            host=transport.name,
        ) from exc
    records: list[RequestRecord] = []
    out = HostRun(None)
    started = time.monotonic()
    deadline = started + workload.total_timeout_s + SLACK_S
    told = started
    stopped = False
    buffer = b""
    with stream:
        while out.raw is None:
            chunk = stream.read(timeout=1.0)
            if chunk is None:
                out.lost = stream.end or "the stream ended"
                break
            if time.monotonic() > deadline:
                out.lost = f"no end of the run within {workload.total_timeout_s + SLACK_S:g} s"
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            now = time.perf_counter()
            for line in lines:
                item = _item(line)
                if item is not None and _take(item, now, out, records, python, where, on_record):
                    stopped = True
                    break
            if progress is not None and time.monotonic() - told >= PROGRESS_EVERY_S:
                told = time.monotonic()
                progress(RunProgress.of(records, workload.num_requests, told - started))
        if not stopped:
            _wait_for_exit(stream)
    if stopped:
        # closed: the generator's next line, a beat at the latest, finds no reader and it
        # exits; until then its requests still load the server, so the next run waits
        time.sleep(2 * BEAT_S)
    if out.raw is None and out.lags:
        out.lost_at = out.lags[-1][0] - out.lags[0][0]
    return out
