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
import time

import aiohttp

from pytest_sglang.sim.launch import start_simulator


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    flags = ("--max-running-requests", str(max(opts.streams, 1)))
    with start_simulator(*flags, env={"SGLANG_SIM_TIME_SCALE": "0"}, model_path="m-8B") as sim:
        for round_no in range(1, opts.rounds + 1):
            cpu0 = _cpu_seconds(sim.pid)
            total, wall = asyncio.run(_drive(sim.url, opts.streams, opts.tokens))
            cpu = _cpu_seconds(sim.pid) - cpu0
            print(
                f"round {round_no}: {opts.streams} streams, {total} tokens in {wall:.2f} s = "
                f"{total / wall:,.0f} tok/s wall; sim CPU {cpu:.2f} s = "
                f"{total / cpu if cpu else float('inf'):,.0f} tok/s per sim CPU second"
            )


if __name__ == "__main__":
    main()
