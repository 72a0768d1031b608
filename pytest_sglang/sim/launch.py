"""Start ``python -m pytest_sglang.sim`` as a child process on a loopback port, wait until ready.

For checking an HTTP client against the simulator (the load generator's tests and the scripts in
benchmarks/): no unit, no journal, no deployer. Deployments under test go through
``sglang_server`` instead, which also verifies the startup log. The child's output goes to a
temporary file rather than a pipe: nobody reads a pipe while a benchmark runs, and a full one
(64 KiB of access lines) would block the simulator mid-run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from typing import IO

import requests

from ..lifecycle.launch_plan import free_port

__all__ = ["LocalSimulator", "start_simulator"]


class LocalSimulator:
    """A running simulator child process and its base URL."""

    def __init__(self, proc: subprocess.Popen[bytes], url: str, output: IO[bytes]) -> None:
        self.proc = proc
        self.url = url
        self._output = output

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output_tail(self, limit: int = 2000) -> str:
        """The last ``limit`` characters the simulator printed (stdout and stderr)."""
        self._output.flush()
        self._output.seek(0)
        return self._output.read().decode(errors="replace")[-limit:]

    def last_line(self) -> str:
        """The simulator's last non-empty output line (a fatal error when it died)."""
        lines = [line for line in self.output_tail().splitlines() if line.strip()]
        return lines[-1].strip() if lines else "(no output)"

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (the simulator drains, then exits), SIGKILL after ``timeout`` seconds."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
        self._output.close()

    def __enter__(self) -> LocalSimulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_simulator(
    *flags: str,
    env: Mapping[str, str] | None = None,
    model_path: str = "/models/Qwen3-8B",
    timeout: float = 60.0,
) -> LocalSimulator:
    """Launch the simulator with ``flags`` on 127.0.0.1 and a free port; return once /health is 200.

    ``env`` is added to this process's environment, after ``SGLANG_SIM_STARTUP_SCALE=0`` (start
    at once). Raises RuntimeError, naming the simulator's last output line, if it exits or is not
    ready within ``timeout`` seconds.
    """
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "pytest_sglang.sim",
        "--model-path",
        model_path,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *flags,
    ]
    full_env = {**os.environ, "SGLANG_SIM_STARTUP_SCALE": "0", **(env or {})}
    output = tempfile.TemporaryFile()  # noqa: SIM115 - owned and closed by LocalSimulator.stop
    proc = subprocess.Popen(argv, env=full_env, stdout=output, stderr=subprocess.STDOUT)
    sim = LocalSimulator(proc, f"http://127.0.0.1:{port}", output)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            last = sim.last_line()
            sim.stop()
            raise RuntimeError(f"simulator exited with {proc.returncode}: {last}")
        try:
            if requests.get(sim.url + "/health", timeout=1).status_code == 200:
                return sim
        except requests.RequestException:
            pass
        time.sleep(0.05)
    last = sim.last_line()
    sim.stop()
    raise RuntimeError(f"simulator not ready within {timeout:g} s; its last line: {last}")
