"""Does the load generator measure what the server did? Checked against injected truth.

Starts ``python -m pytest_sglang.sim`` with SGLANG_SIM_TTFT_MS=50, SGLANG_SIM_ITL_MS=10 and
SGLANG_SIM_STARTUP_SCALE=0 (each request then runs on an exact timetable, independent of load),
runs a fixed-concurrency-16 workload, and prints measured median TTFT / ITL against the truth
(target: within 3 % or 1 ms) and output tokens against the server's own counter
(``sglang:generation_tokens_total`` on /metrics, target within 1 %).
Usage: ``python benchmarks/bench_accuracy.py [--requests 64] [--tokens 64]``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

import requests

from pytest_sglang.bench import Workload, run_workload
from pytest_sglang.deploy.process import free_port

TTFT_MS, ITL_MS = 50.0, 10.0


def _generated(url: str) -> float:
    text = requests.get(url + "/metrics", timeout=10).text
    match = re.search(r"^sglang:generation_tokens_total\{[^}]*\} (\S+)$", text, re.M)
    return float(match.group(1)) if match else float("nan")


def _within(measured: float, truth: float, rel: float, abs_ms: float) -> str:
    ok = abs(measured - truth) <= max(rel * truth, abs_ms)
    return "ok" if ok else "OFF"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=64)
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
            16, num_requests=args.requests, output_tokens=args.tokens, warmup_requests=0
        )
        before = _generated(url)
        result = run_workload(url, workload)
        server_tokens = _generated(url) - before
        ttft, itl = result.median_ttft_ms, result.median_itl_ms
        print(f"completed {result.completed}, failed {result.failed} {result.failures}")
        print(
            f"median TTFT {ttft:8.2f} ms  truth {TTFT_MS:6.1f}  {_within(ttft, TTFT_MS, 0.03, 1.0)}"
        )
        print(f"median ITL  {itl:8.2f} ms  truth {ITL_MS:6.1f}  {_within(itl, ITL_MS, 0.03, 1.0)}")
        counted = result.total_output_tokens
        off = abs(counted - server_tokens) / max(server_tokens, 1)
        print(
            f"output tokens {counted} vs server {server_tokens:.0f} ({off:.2%}) "
            f"{'ok' if off <= 0.01 else 'OFF'}; {result.output_throughput:.0f} tok/s"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
