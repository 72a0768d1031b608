"""The load generator as it runs on the GPU host: :mod:`.loadgen` itself, fed and read over SSH.

Why on the host: through one SSH port forward the forward is what gets measured (30-46k tok/s
against 164-180k reached directly, on the systemd test host). The same client, next to the
server, measures the server. Why shipped and not installed: nothing may stay on a host. The
sources of :mod:`.metrics`, :mod:`.prometheus`, :mod:`.loadgen` and this module travel on the
command's stdin (:func:`payload`) and :data:`BOOT` executes them as the package
``_sglang_bench`` in memory: no file is written, so nothing is left behind even when the
session is killed. The host's own Python runs it (the launcher's: SGLang's environment has
aiohttp); a host without aiohttp answers one ``missing`` line.

What comes back is JSON lines on stdout: ``{"record": ...}`` as each request finishes,
``{"beat": ...}`` every :data:`BEAT_S` s from a writer thread (so a stalled SSH channel shows
as lines arriving late, and a full pipe never blocks the event loop that times the streams),
then ``{"done": ...}``. Each line carries ``t``, the host's ``perf_counter`` when it was
written. When stdout breaks (the session went away) the process ends at once.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import queue
import struct
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .loadgen import RawRun, generate
from .metrics import RequestRecord

if TYPE_CHECKING:
    from .prometheus import Sample
    from .workload import Workload

__all__ = ["BOOT", "PACKAGE", "RESOLVED", "HostWorkload", "main", "payload", "raw_run", "record_of"]

#: The in-memory package the shipped modules become on the host.
PACKAGE = "_sglang_bench"
#: Shipped in this order (each imports only the ones before it).
MODULES = ("metrics", "prometheus", "loadgen", "agent")
#: Seconds between heartbeat lines.
BEAT_S = 0.2
#: The host workload's fields resolved from the workload's methods (the others are its own fields).
RESOLVED = ("prompts", "lengths", "delays", "turns", "pauses")

#: ``python -c`` program on the host: reads the payload from stdin, runs the agent. Any
#: failure to start (no aiohttp, a Python too old to read the sources) is one JSON line.
BOOT = """
import json, sys, types
try:
    d = json.loads(sys.stdin.buffer.read())
    P = d["package"]
    pkg = types.ModuleType(P)
    pkg.__path__ = []
    sys.modules[P] = pkg
    for name, src in d["modules"]:
        m = types.ModuleType(P + "." + name)
        m.__package__ = P
        sys.modules[m.__name__] = m
        exec(compile(src, "<pytest-sglang>/" + name + ".py", "exec"), m.__dict__)
except ImportError as exc:
    print(json.dumps({"missing": str(exc), "python": sys.version.split()[0]}), flush=True)
    sys.exit(3)
except BaseException as exc:
    print(json.dumps({"error": type(exc).__name__ + ": " + str(exc)[:300]}), flush=True)
    sys.exit(3)
sys.exit(sys.modules[P + ".agent"].main(d["spec"]))
"""


@dataclass(frozen=True)
class HostWorkload:
    """A :class:`~.workload.Workload` as the generator reads it, its requests resolved here
    (prompt files and seeds stay on this machine; the host gets the words to send)."""

    num_requests: int
    output_tokens: int
    concurrency: int | None
    api: str
    temperature: float
    ignore_eos: bool
    warmup_requests: int
    request_timeout_s: float
    total_timeout_s: float
    flush_cache: bool
    prompts: list[str]
    lengths: list[int]
    delays: list[float]
    #: requests per session (a conversation's turns) and the pause before each request
    turns: list[int]
    pauses: list[float]

    @classmethod
    def of(cls, workload: Workload) -> HostWorkload:
        """The workload's own fields of the same names (read from it, not restated, so a field
        both have cannot be forgotten here), and its requests, gaps and sessions resolved."""
        requests = workload.requests()
        resolved: dict[str, Any] = {
            "prompts": [p for p, _ in requests],
            "lengths": [n for _, n in requests],
            "delays": list(workload.arrival_delays()),
            "turns": list(workload.session_turns()),
            "pauses": list(workload.think_times()),
        }
        assert set(resolved) == set(RESOLVED)
        names = [f.name for f in dataclasses.fields(cls) if f.name not in resolved]
        return cls(**{name: getattr(workload, name) for name in names}, **resolved)

    def requests(self) -> list[tuple[str, int]]:
        return list(zip(self.prompts, self.lengths))

    def arrival_delays(self) -> list[float]:
        return list(self.delays)

    def session_turns(self) -> list[int]:
        return list(self.turns)

    def think_times(self) -> list[float]:
        return list(self.pauses)


def payload(base_url: str, workload: Workload, model: str, api_key: str | None = None) -> bytes:
    """What the host's Python reads on stdin: the sources and the run (and the server's
    ``--api-key``: on stdin, never on a command line the host's process list shows)."""
    here = Path(__file__).resolve().parent
    modules = [(name, (here / f"{name}.py").read_text(encoding="utf-8")) for name in MODULES]
    sent = dataclasses.asdict(HostWorkload.of(workload))
    spec = {"base_url": base_url, "model": model, "workload": sent, "api_key": api_key}
    return json.dumps({"package": PACKAGE, "modules": modules, "spec": spec}).encode()


def _unpacked(item: Any) -> Any:
    """A field as :func:`_plain` sent it, unpacked."""
    if isinstance(item, dict) and isinstance(item.get("f8"), str):
        raw = base64.b64decode(item["f8"])
        return list(struct.unpack(f"<{len(raw) // 8}d", raw))
    return item


def record_of(data: dict[str, Any]) -> RequestRecord:
    """A record sent back as JSON (fields this side does not know are dropped)."""
    names = {f.name for f in dataclasses.fields(RequestRecord)}
    return RequestRecord(**{k: _unpacked(v) for k, v in data.items() if k in names})


def _sample(data: Any) -> Sample | None:
    if not isinstance(data, dict):
        return None
    return {name: (str(kind), [float(v) for v in values]) for name, (kind, values) in data.items()}


def raw_run(records: list[RequestRecord], done: dict[str, Any]) -> RawRun:
    """The run from its records and its ``done`` line."""
    accept = done.get("accept")
    return RawRun(
        records=records,
        duration=float(done["duration"]),
        began=float(done.get("began") or 0.0),
        scrape_before=_sample(done.get("scrape_before")),
        scrape_after=_sample(done.get("scrape_after")),
        accept=float(accept) if accept is not None else None,
    )


# -- on the host ------------------------------------------------------------------------------


def _plain(value: object) -> dict[str, Any]:
    """A record as JSON sees it (``json.dumps``'s ``default``): its fields, shallow, each list
    of floats packed as ``{"f8": base64 of little-endian doubles}`` (:func:`_unpacked`).

    Why not ``dataclasses.asdict``: it deep-copies every float of the ITL lists, 0.4 ms per
    128-token record, and it ran in the event loop before the next request was let in. At
    concurrency 32 the requests of a decode step finish together, so the replacements went
    out 14-18 ms late (against 1-4 ms for the same client without the agent) and the run's
    arrival pattern, and with it the burst TTFT, was the agent's and not the workload's. Why
    packed: ``repr`` of 190 floats is most of a record's JSON (233 us per record against 46
    us packed, and 5.1 against 2.9 kB), and the doubles come back bit for bit.
    """
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        raise TypeError(f"not JSON serializable: {type(value).__name__}")
    out: dict[str, Any] = {}
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        if isinstance(item, list) and item and all(type(v) is float for v in item):
            item = {"f8": base64.b64encode(struct.pack(f"<{len(item)}d", *item)).decode()}
        out[f.name] = item
    return out


class _Writer:
    """Writes the lines put to it to stdout from its own thread, every :data:`BEAT_S` s: the
    lines since the last write, or a heartbeat when there are none.

    Why batched and serialized here: the requests of one decode step finish together, and a
    write per record (a wakeup of this thread, of sshd, of the reader at the other end) made
    the event loop let the next requests in 6-9 ms late at concurrency 32, against 2-6 ms when
    the records were held to the end. The loop pays one queue put per request; each line is
    stamped ``t`` as it is written (its lag at the other end is the link's, not the batch's).
    """

    def __init__(self) -> None:
        self.lines: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self.ending = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def put(self, line: dict[str, Any]) -> None:
        self.lines.put(line)

    def _run(self) -> None:
        out = sys.stdout.buffer
        while True:
            ending = self.ending.wait(BEAT_S)
            batch: list[dict[str, Any]] = []
            while not self.lines.empty():
                batch.append(self.lines.get_nowait())
            now = time.perf_counter()
            data = b"".join(
                json.dumps({**line, "t": now}, default=_plain).encode() + b"\n"
                for line in batch or [{"beat": True}]
            )
            try:
                out.write(data)
                out.flush()
            except (OSError, ValueError):
                os._exit(4)  # the session is gone: so is the run (nothing to clean up)
            if ending and self.lines.empty():
                return

    def close(self) -> None:
        """Write what is left and stop."""
        self.ending.set()
        self.thread.join()


def main(spec: dict[str, Any]) -> int:
    """Run the workload against the server next to this process; the results go to stdout."""
    writer = _Writer()
    workload = HostWorkload(**spec["workload"])
    try:
        raw = asyncio.run(
            generate(
                spec["base_url"],
                cast("Workload", workload),
                model=spec["model"],
                on_record=lambda r: writer.put({"record": r}),
                api_key=spec.get("api_key"),
            )
        )
    except Exception as exc:  # reported as one line; the client makes it one error
        writer.put({"error": f"{type(exc).__name__}: {str(exc)[:300]}"})
        writer.close()
        return 1
    writer.put(
        {
            "done": {
                "duration": raw.duration,
                "began": raw.began,
                "scrape_before": raw.scrape_before,
                "scrape_after": raw.scrape_after,
                "accept": raw.accept,
            }
        }
    )
    writer.close()
    return 0
