"""Does the load generator measure what the server did? Checked against injected truth.

Starts ``python -m pytest_sglang.sim`` with SGLANG_SIM_TTFT_MS=50, SGLANG_SIM_ITL_MS=10 and
SGLANG_SIM_STARTUP_SCALE=0 (each request then runs on an exact timetable from its arrival,
independent of load) and runs two workloads against it, one warmup request each, the
connection pool opened before the measured requests:

- fixed concurrency 16: the streams run in lock-step, so 16 requests arrive together and 16
  first tokens leave together (the hardest case for both sides' event loops);
- a constant 20 requests/s (about 14 in flight): arrivals spread out, as in production traffic.

Printed side by side per workload: measured median TTFT / ITL against the truth (target: within
3 % or 1 ms; 1.5 ms for a 50 ms TTFT), output tokens against the server's own count over the
same run (``generation_tokens_delta`` from /metrics, exact), and output tokens/s against that
count over the run's span on the server's side (the arrival timetable plus the server's own mean
end-to-end latency from /metrics, within 1 %): a rate from the server's clock, not the client's.

Where extra TTFT came from, measured with aiohttp trace hooks and server-side stamps on the
same CLOCK_MONOTONIC (concurrency 16): TCP handshakes of a cold pool (~6 ms); the client's
clock starting when a request was queued rather than written (~2-3 ms); the simulator starting
a request's timetable after parsing its body, behind the other 15 (~2-4 ms); sleeps waking up to
1 ms late (epoll rounds timeouts up to whole milliseconds); the default asyncio loop's
Python-level dispatch of a burst of first chunks (~0.5 ms at the median; the simulator now runs
on uvloop, as SGLang's HTTP server does, and times with ``time.monotonic`` because uvloop's
loop clock is cached per turn in whole milliseconds). All are fixed (pool warming and the
send-time stamp in loadgen.py; arrival stamped on receipt, exact wake-ups and uvloop in the
simulator). What remains is loopback transit and process wake-up on a shared 2-core VM: a few
tenths of a millisecond on a quiet machine, more when other processes load both cores.
``--via-host`` runs the same through the on-host generator (``bench_from = "host"``): the
simulator as the systemd service of the nspawn test host (tests/testhost.py; needs root), the
generator shipped over SSH and run there with the host's Python.
After the burst, the same burst from the leanest client possible (blocking sockets connected in
advance, bytes prepared in advance, one select loop) is timed: the TTFT floor that the server
and the machine set at that moment. Ours minus that floor is what our client adds; on the shared
machine under load the floor itself moves by tens of milliseconds (docs/metrics.md).
Usage: ``python benchmarks/bench_accuracy.py [--requests 64] [--tokens 64] [--concurrency 16]
[--rate 20] [--via-host]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import selectors
import socket
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from pytest_sglang.bench import BenchResult, Workload, run_workload
from pytest_sglang.sim.launch import start_simulator

TTFT_MS, ITL_MS = 50.0, 10.0


def _within(measured: float, truth: float, rel: float, abs_ms: float) -> str:
    ok = abs(measured - truth) <= max(rel * truth, abs_ms)
    return "ok" if ok else "OFF"


def _server_span_s(workload: Workload, e2e_s: float) -> float:
    """How long the run takes on the server's side, from the injected timetable and the
    server's own mean end-to-end latency (its clock, not the client's): a constant rate starts
    the last request (n - 1) / rate after the first; fixed concurrency runs ceil(n / c) waves
    back to back (the client's turnaround between waves, a few ms, is the only slack)."""
    n = workload.num_requests
    if workload.request_rate is not None and math.isinf(workload.burstiness):
        return (n - 1) / workload.request_rate + e2e_s
    if workload.concurrency is not None and workload.request_rate is None:
        return math.ceil(n / workload.concurrency) * e2e_s
    return float("nan")  # no timetable to derive it from (Poisson arrivals)


def _waves(workload: Workload) -> int:
    """Lock-step waves of a fixed-concurrency run (0 for a rate): between two of them the
    server idles while the client turns around, time that is the client's and not in the span."""
    if workload.concurrency is None or workload.request_rate is not None:
        return 0
    return math.ceil(workload.num_requests / workload.concurrency)


def _report(workload: Workload, result: BenchResult) -> None:
    server = result.server_metrics
    server_tokens = server.get("generation_tokens_delta", float("nan"))
    e2e_s = server.get("e2e_request_latency_seconds_mean", float("nan"))
    span_s = _server_span_s(workload, e2e_s)
    server_tok_s = server_tokens / span_s
    waves = _waves(workload)
    rate_rel = 0.03 if waves > 1 else 0.01  # lock-step: the waves' turnarounds, printed below
    ttft, itl = result.median_ttft_ms, result.median_itl_ms
    print(
        f"\n{workload.name} ({workload.arrivals}), {result.completed} completed, "
        f"{result.failed} failed {result.failures or ''}"
    )
    print(f"{'':<18} {'measured':>10} {'truth':>10} {'off':>8}")
    rows = (
        ("median TTFT ms", ttft, TTFT_MS, _within(ttft, TTFT_MS, 0.03, 1.0)),
        ("median ITL ms", itl, ITL_MS, _within(itl, ITL_MS, 0.03, 1.0)),
        (
            "output tok/s",
            result.output_throughput,
            server_tok_s,
            _within(result.output_throughput, server_tok_s, rate_rel, 0.0),
        ),
        (
            "output tokens",
            result.total_output_tokens,
            server_tokens,
            _within(result.total_output_tokens, server_tokens, 0.0, 0.0),
        ),
    )
    for name, measured, truth, verdict in rows:
        print(f"{name:<18} {measured:10.2f} {truth:10.2f} {measured - truth:+8.2f}  {verdict}")
    print(
        f"(tok/s truth: the server's token count over its own span, {span_s:.3f} s from the "
        f"timetable and its mean end-to-end latency {e2e_s * 1000:.1f} ms; the client's "
        f"duration was {result.duration:.3f} s"
        + (
            f", {(result.duration - span_s) / waves * 1000:.1f} ms more per lock-step wave "
            f"(the client's turnaround; bound {rate_rel:.0%})"
            if waves > 1
            else f" (bound {rate_rel:.0%})"
        )
        + f". Server's TTFT histogram mean, from request "
        f"creation: {server.get('time_to_first_token_seconds_mean', float('nan')) * 1000:.2f} ms)"
    )


def _wake_up_floor(rounds: int = 200, idle_s: float = 0.02) -> tuple[float, float]:
    """Median and p90 round trip (ms) of one byte between two idle processes over loopback.

    Every TTFT sample pays two such one-way trips (request in, first chunk out) on top of the
    injected truth; on a shared VM the figure moves with the host's load, so it is printed next
    to the results to tell the machine's noise from the client's bias.
    """
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    pid = os.fork()
    if pid == 0:  # the echoing child
        conn, _ = server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while data := conn.recv(16):
            conn.sendall(data)
        os._exit(0)
    server.close()
    trips: list[float] = []
    with socket.create_connection(("127.0.0.1", port)) as client:
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(rounds):
            time.sleep(idle_s)
            began = time.perf_counter()
            client.sendall(b"x")
            client.recv(16)
            trips.append((time.perf_counter() - began) * 1000)
    os.waitpid(pid, 0)
    trips.sort()
    return statistics.median(trips), trips[int(0.9 * len(trips))]


@contextlib.contextmanager
def _on_test_host(
    env: dict[str, str],
) -> Iterator[tuple[Callable[[Workload], BenchResult], str | None]]:
    """The simulator as the test host's service; runs go through the on-host generator (no
    raw-socket floor: the server is not reachable from here)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from helpers import booted_test_host, deployed_on

    from pytest_sglang.bench.route import route_of, run_round
    from pytest_sglang.config import ServerConfig

    config = ServerConfig(model_path="sim", extra_args=("--enable-metrics",))
    knobs = {**env, "SGLANG_SIM_STARTUP_SCALE": "0"}
    with (
        booted_test_host("bench_accuracy", "acc") as host,
        deployed_on(host, "sglang-acc.service", config, knobs) as deployment,
    ):
        route = route_of(deployment, "host")
        yield (lambda w: run_round(deployment, w, model="sim", route=route).result), None


@contextlib.contextmanager
def _here(env: dict[str, str]) -> Iterator[tuple[Callable[[Workload], BenchResult], str | None]]:
    with start_simulator("--enable-metrics", env=env) as sim:
        yield (lambda w: run_workload(sim.url, w)), sim.url


def _raw_burst_ttft(url: str, streams: int, rounds: int = 8) -> float:
    """Median TTFT (ms) of ``streams`` /generate requests sent at once by the leanest client
    possible: blocking sockets connected in advance, bytes prepared in advance, one select loop
    that stamps the first ``data:`` of each stream. What no client can measure below on this
    machine at this moment: the server's and the kernel's share of the burst."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps(
        {"text": "one two three", "sampling_params": {"max_new_tokens": 2}, "stream": True}
    ).encode()
    head = (
        f"POST /generate HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    samples: list[float] = []
    for _ in range(rounds):
        socks = [socket.create_connection((host, int(port))) for _ in range(streams)]
        for s in socks:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        time.sleep(0.1)  # the server has accepted them: handshakes are not in the burst
        started: dict[socket.socket, float] = {}
        seen: dict[socket.socket, bytes] = {s: b"" for s in socks}
        with selectors.DefaultSelector() as sel:
            for s in socks:
                started[s] = time.perf_counter()
                s.sendall(head + body)
                sel.register(s, selectors.EVENT_READ)
            while sel.get_map():
                for key, _ in sel.select():
                    s = key.fileobj
                    assert isinstance(s, socket.socket)
                    seen[s] += s.recv(65536)
                    if b"data:" in seen[s]:
                        samples.append((time.perf_counter() - started[s]) * 1000)
                        sel.unregister(s)
        for s in socks:
            s.close()
        time.sleep(0.2)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rate", type=float, default=20.0, help="requests/s, evenly spaced")
    parser.add_argument("--via-host", action="store_true", help="through the on-host generator")
    args = parser.parse_args()
    env = {"SGLANG_SIM_TTFT_MS": str(TTFT_MS), "SGLANG_SIM_ITL_MS": str(ITL_MS)}
    with (_on_test_host if args.via_host else _here)(env) as (run, url):
        workloads = (
            Workload.fixed_concurrency(
                args.concurrency, num_requests=args.requests, output_tokens=args.tokens
            ),
            Workload.rate(
                args.rate, args.requests, args.tokens, burstiness=math.inf, warmup_requests=1
            ),
        )
        median_rtt, p90_rtt = _wake_up_floor()
        print(
            f"this machine now: loopback round trip between idle processes {median_rtt:.2f} ms "
            f"median, {p90_rtt:.2f} ms p90 (each TTFT sample pays about one round trip)"
        )
        for workload in workloads:
            _report(workload, run(workload))
            if url is not None and workload.request_rate is None:  # the burst: next to the floor
                floor = _raw_burst_ttft(url, args.concurrency)
                print(
                    f"raw-socket floor: {args.concurrency} /generate requests at once from "
                    f"blocking sockets connected in advance: median TTFT {floor:.2f} ms "
                    f"({floor - TTFT_MS:+.2f} over the truth): what the server and this machine "
                    "add, whatever the client"
                )


if __name__ == "__main__":
    main()
