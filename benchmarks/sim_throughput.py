"""How fast can the simulator stream? It must never be the bottleneck of a benchmark.

Starts ``python -m pytest_sglang.sim`` on a free loopback port with ``SGLANG_SIM_STARTUP_SCALE=0``
and ``SGLANG_SIM_TIME_SCALE=0``, drives N concurrent streaming ``/v1/chat/completions`` with
aiohttp, and prints streamed tokens/s and the simulator's CPU seconds (target: >= 20,000 tok/s at
256 streams on one core). Usage: ``python benchmarks/sim_throughput.py [--streams 256]
[--tokens 400] [--rounds 2]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time

import aiohttp


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"simulator exited with {proc.returncode}")
            try:
                async with session.get(url + "/health") as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    raise SystemExit(f"simulator not ready within {timeout} s")


async def _stream(session: aiohttp.ClientSession, url: str, tokens: int) -> int:
    body = {
        "model": "sim",
        "messages": [{"role": "user", "content": "benchmark the simulator please"}],
        "max_tokens": tokens,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    completion = 0
    async with session.post(url + "/v1/chat/completions", json=body) as resp:
        async for raw in resp.content:
            line = raw.strip()
            if line.startswith(b"data: {") and b'"usage": {' in line:
                completion = json.loads(line[6:])["usage"]["completion_tokens"]
    return completion


async def _drive(url: str, streams: int, tokens: int) -> tuple[int, float]:
    connector = aiohttp.TCPConnector(limit=streams)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        began = time.perf_counter()
        counts = await asyncio.gather(*(_stream(session, url, tokens) for _ in range(streams)))
        return sum(counts), time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=256)
    parser.add_argument("--tokens", type=int, default=400, help="tokens per stream")
    parser.add_argument("--rounds", type=int, default=2)
    opts = parser.parse_args()
    port = _free_port()
    env = dict(os.environ, SGLANG_SIM_STARTUP_SCALE="0", SGLANG_SIM_TIME_SCALE="0")
    argv = [sys.executable, "-m", "pytest_sglang.sim", "--model-path", "m-8B",
            "--max-running-requests", str(max(opts.streams, 1)), "--port", str(port)]  # fmt: skip
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        asyncio.run(_wait_ready(url, proc))
        for round_no in range(1, opts.rounds + 1):
            cpu0 = _cpu_seconds(proc.pid)
            total, wall = asyncio.run(_drive(url, opts.streams, opts.tokens))
            cpu = _cpu_seconds(proc.pid) - cpu0
            print(
                f"round {round_no}: {opts.streams} streams, {total} tokens in {wall:.2f} s = "
                f"{total / wall:,.0f} tok/s wall; sim CPU {cpu:.2f} s = "
                f"{total / cpu if cpu else float('inf'):,.0f} tok/s per sim CPU second"
            )
    finally:
        proc.kill()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
