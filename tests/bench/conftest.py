"""A real simulator process on a loopback port, and misbehaving aiohttp peers, for bench tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest
import requests

SimFactory = Callable[..., str]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_simulator(env: dict[str, str], *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "pytest_sglang.sim",
        "--model-path",
        "/models/Qwen3-8B",
        "--served-model-name",
        "qwen3-8b",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *extra,
    ]
    full_env = {**os.environ, "SGLANG_SIM_STARTUP_SCALE": "0", **env}
    proc = subprocess.Popen(argv, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"simulator exited with {proc.returncode}: {err[-500:]}")
        try:
            if requests.get(url + "/health", timeout=1).status_code == 200:
                return proc, url
        except requests.RequestException:
            pass
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("simulator not ready within 30 s")


@pytest.fixture
def simulator() -> Iterator[SimFactory]:
    """``simulator(env={...}, *flags)`` -> base URL of a ready simulator; stopped afterwards."""
    procs: list[subprocess.Popen[bytes]] = []

    def factory(*extra: str, env: dict[str, str] | None = None) -> str:
        proc, url = start_simulator(env or {}, *extra)
        procs.append(proc)
        return url

    yield factory
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


EAGLE = (
    "--speculative-algorithm",
    "EAGLE",
    "--speculative-num-steps",
    "2",
    "--speculative-eagle-topk",
    "1",
)


@pytest.fixture(scope="module")
def fast_sim() -> Iterator[str]:
    """One EAGLE simulator at TIME_SCALE=0 shared by a module's tests."""
    proc, url = start_simulator({"SGLANG_SIM_TIME_SCALE": "0"}, *EAGLE)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
