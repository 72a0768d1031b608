"""Start the simulator as a real subprocess on a free loopback port, and always stop it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

SEED_ARGS = [
    "--model-path", "/shared/models/Qwen3.5-122B-A10B",
    "--served-model-name", "qwen3.5-122b",
    "--tp", "4",
    "--speculative-algorithm", "EAGLE",
    "--speculative-num-steps", "2",
    "--speculative-eagle-topk", "1",
]  # fmt: skip


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Sim:
    """A running simulator process and where its output goes."""

    proc: subprocess.Popen[bytes]
    port: int
    stderr_path: Path
    stdout_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"simulator exited {self.proc.returncode}: {self.stderr()}")
            try:
                if requests.get(self.url + "/health", timeout=2).status_code == 200:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"simulator not ready within {timeout} s: {self.stderr()[-2000:]}")

    def wait_exit(self, timeout: float = 20.0) -> int:
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def run_sim(args: list[str], env: dict[str, str], tmp_path: Path, port: int | None = None) -> Sim:
    port = port or free_port()
    full_env = dict(os.environ)
    full_env.update({"SGLANG_SIM_STARTUP_SCALE": "0.002", "SGLANG_SIM_TIME_SCALE": "0"})
    full_env.update(env)
    tag = f"sim-{port}"
    err, out = tmp_path / f"{tag}.err", tmp_path / f"{tag}.out"
    with err.open("wb") as ferr, out.open("wb") as fout:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest_sglang.sim", *args, "--port", str(port)],
            stdout=fout,
            stderr=ferr,
            env=full_env,
        )
    return Sim(proc, port, err, out)


StartSim = Callable[..., Sim]


@pytest.fixture
def start_sim(tmp_path: Path) -> Iterator[StartSim]:
    """``start_sim(args, env={}, ready=True)``: a simulator subprocess, killed at teardown."""
    started: list[Sim] = []

    def start(args: list[str], env: dict[str, str] | None = None, ready: bool = True) -> Sim:
        sim = run_sim(args, env or {}, tmp_path)
        started.append(sim)
        if ready:
            sim.wait_ready()
        return sim

    yield start
    for sim in started:
        sim.stop()


@pytest.fixture(scope="module")
def seed_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """One ready simulator of the seed setup (EAGLE steps 2, TP 4), shared by a module."""
    sim = run_sim([*SEED_ARGS, "--enable-metrics"], {}, tmp_path_factory.mktemp("seed"))
    try:
        sim.wait_ready()
        yield sim
    finally:
        sim.stop()
