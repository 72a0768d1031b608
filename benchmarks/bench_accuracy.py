"""Does the load generator measure what the server did? Checked against injected truth.

Starts ``python -m pytest_sglang.sim`` with SGLANG_SIM_TTFT_MS=50, SGLANG_SIM_ITL_MS=10 and
SGLANG_SIM_STARTUP_SCALE=0 (each request then runs on an exact timetable from its arrival,
independent of load), runs a fixed-concurrency-16 workload (one warmup request, then the
measured ones; the connection pool is opened before them), and prints side by side: measured
median TTFT / ITL against the truth (target: within 3 % or 1 ms) and output tokens/s against the
server's own count over the same run (``generation_tokens_delta`` from /metrics, within 1 %).

Where the extra TTFT went before (52-58 ms against 50; measured with aiohttp trace hooks and
server-side stamps, concurrency 16): TCP handshakes of the first 16 requests (a cold pool, ~6 ms);
the client serialising a burst of 16 requests before the last was written (~2-3 ms, counted
because the clock started when the request was queued, not written); the simulator starting a
request's timetable a loop turn after parsing its body, behind the other 15 (~2-4 ms); and its
sleeps waking up to 1 ms late (epoll rounds timeouts up to whole milliseconds). All four are
fixed (pool warming and the send-time stamp in loadgen.py; arrival stamped on receipt and exact
wake-ups in the simulator): the server now emits the first token 50.0-50.1 ms after arrival.
What remains is loopback transit and process wake-up on a shared 2-core VM: about 0.5 ms each
way for a lone request, 1.5-2.5 ms each way for a burst of 16 on a loaded machine, so the median
lands within the 1.5 ms only when the machine is quiet (51.0 ms seen; 53-55 ms at load 2-5).
Usage: ``python benchmarks/bench_accuracy.py [--requests 64] [--tokens 64] [--concurrency 16]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import requests

from pytest_sglang.bench import Workload, run_workload
from pytest_sglang.deploy.process import free_port

TTFT_MS, ITL_MS = 50.0, 10.0


def _within(measured: float, truth: float, rel: float, abs_ms: float) -> str:
    ok = abs(measured - truth) <= max(rel * truth, abs_ms)
    return "ok" if ok else "OFF"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    port = free_port()
    env = {
        **os.environ,
        "SGLANG_SIM_TTFT_MS": str(TTFT_MS),
        "SGLANG_SIM_ITL_MS": str(ITL_MS),
        "SGLANG_SIM_STARTUP_SCALE": "0",
    }
    argv = [
        sys.executable,
        "-m",
        "pytest_sglang.sim",
        "--model-path",
        "/models/Qwen3-8B",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--enable-metrics",
    ]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(url + "/health", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("simulator did not become ready within 60 s")
            time.sleep(0.05)
        workload = Workload.fixed_concurrency(
            args.concurrency, num_requests=args.requests, output_tokens=args.tokens
        )
        result = run_workload(url, workload)
        server = result.server_metrics
        server_tokens = server.get("generation_tokens_delta", float("nan"))
        server_tok_s = server_tokens / result.duration
        ttft, itl = result.median_ttft_ms, result.median_itl_ms
        print(
            f"{workload.name}, {result.completed} completed, {result.failed} failed "
            f"{result.failures or ''}"
        )
        print(f"{'':<18} {'measured':>10} {'truth':>10} {'off':>8}")
        rows = (
            ("median TTFT ms", ttft, TTFT_MS, _within(ttft, TTFT_MS, 0.03, 1.0)),
            ("median ITL ms", itl, ITL_MS, _within(itl, ITL_MS, 0.03, 1.0)),
            ("output tok/s", result.output_throughput, server_tok_s, ""),
        )
        for name, measured, truth, verdict in rows:
            if not verdict:
                off = abs(measured - truth) / truth if truth else float("inf")
                verdict = "ok" if off <= 0.01 else "OFF"
            print(f"{name:<18} {measured:10.2f} {truth:10.2f} {measured - truth:+8.2f}  {verdict}")
        print(
            f"(tokens: ours {result.total_output_tokens}, server {server_tokens:.0f}; "
            f"server's TTFT histogram mean, from request creation: "
            f"{server.get('time_to_first_token_seconds_mean', float('nan')) * 1000:.2f} ms)"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
