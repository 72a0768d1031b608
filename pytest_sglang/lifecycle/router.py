"""SGLang's router (``sglang-router``) in front of a topology's replicas, run on this machine.

Why here and not on a GPU host: the router is the entry point the benchmarks measure, and the
load generator runs here; the replicas' addresses are the ones this machine reaches (the SSH
port forward, or the simulator's loopback port). It listens on loopback only, its metrics too.

Its view of the replicas is the readiness check: the router is ready when ``/readiness`` says
every replica it was given is healthy (it registers workers in the background, so "Router
ready" in its log comes before any worker is). Per-replica figures come from its Prometheus
counters (``smg_worker_cb_outcomes_total{worker, outcome}``).

The process dies with this one (``PR_SET_PDEATHSIG``), so a killed session leaves no router.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import requests

from ..cmdline import split_shell
from ..errors import ConfigError, ServerStartError
from ..topology import Router
from .launch_plan import free_port
from .router_log import RouterCause, router_cause

__all__ = ["DEFAULT_ROUTER_LAUNCH", "RouterProcess", "router_launch"]

#: The router of this Python (``pip install sglang-router``), when nothing else is given.
DEFAULT_ROUTER_LAUNCH = f"{sys.executable} -m sglang_router.launch_router"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_OUTCOME = re.compile(
    r'^smg_worker_cb_outcomes_total\{worker="([^"]+)",outcome="([^"]+)"\}\s+([0-9.eE+]+)', re.M
)
_PR_SET_PDEATHSIG = 1


def router_launch(command: str | None) -> list[str]:
    """The words that start the router: ``command`` (``--sglang-router-launch``), else this
    Python's ``sglang_router``; a ConfigError says how to get one when there is none."""
    if command:
        return split_shell(command)
    if importlib.util.find_spec("sglang_router") is None:
        raise ConfigError(
            "a topology needs SGLang's router: pip install sglang-router (or name one with "
            "--sglang-router-launch)"
        )
    return split_shell(DEFAULT_ROUTER_LAUNCH)


def _die_with_parent() -> None:
    """In the child: SIGTERM when the session's process dies (even by SIGKILL)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class RouterProcess:
    """One router process in front of ``worker_urls`` (started by :meth:`start`)."""

    def __init__(
        self,
        launch: Sequence[str],
        router: Router,
        worker_urls: Sequence[str],
        *,
        pd: tuple[Sequence[tuple[str, int]], Sequence[str]] | None = None,
    ) -> None:
        """``worker_urls``: the servers it routes to; ``pd``: instead, ``(prefill servers as
        (url, bootstrap port), decode urls)`` for PD mode (``--pd-disaggregation``)."""
        self.launch = list(launch)
        self.router = router
        self.pd = pd
        self.worker_urls = list(worker_urls) if pd is None else [*(url for url, _ in pd[0]), *pd[1]]
        self.port = 0
        self.metrics_port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="pytest-sglang-router-"))
        self.log_path = self._dir / "router.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def argv(self) -> list[str]:
        if self.pd is None:
            workers = ["--worker-urls", *self.worker_urls]
        else:
            prefill, decode = self.pd
            workers = ["--pd-disaggregation"]
            for url, port in prefill:
                workers += ["--prefill", url, str(port)]
            for url in decode:
                workers += ["--decode", url]
        return [
            *self.launch,
            *workers,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--policy",
            self.router.policy,
            "--prometheus-host",
            "127.0.0.1",
            "--prometheus-port",
            str(self.metrics_port),
            *self.router.args,
        ]

    def start(self, timeout: float) -> None:
        """Start it and wait until it routes to every replica (its ``/readiness``); a
        ServerStartError names why (the cause its log gives, :meth:`failure`)."""
        self.port, self.metrics_port = free_port(), free_port()
        with open(self.log_path, "wb") as log:
            try:
                self._proc = subprocess.Popen(
                    self.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_die_with_parent,
                    env={**os.environ, "NO_COLOR": "1"},
                )
            except OSError as exc:
                raise self._failed(f"cannot start {self.launch[0]}: {exc.strerror}") from None
        self.wait_healthy(timeout)

    def wait_healthy(self, timeout: float) -> None:
        """Wait until its ``/readiness`` counts every server healthy (at start, and after a
        server it routes to was started again: its health checks add it back)."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            assert self._proc is not None
            code = self._proc.poll()
            if code is not None:
                raise self._failed(f"the router exited with status {code} before it was ready")
            with contextlib.suppress(requests.RequestException, ValueError):
                answer = requests.get(self.base_url + "/readiness", timeout=2)
                body = answer.json()
                last = f"{answer.status_code} {body}"
                if answer.status_code == 200 and body.get("healthy_workers") == len(
                    self.worker_urls
                ):
                    return
            time.sleep(0.2)
        raise self._failed(
            f"the router did not see all {len(self.worker_urls)} replicas healthy within "
            f"{timeout:.0f}s (its /readiness: {last})"
        )

    def _failed(self, why: str) -> ServerStartError:
        self.stop()
        return self.failure(why)

    def failure(self, why: str) -> ServerStartError:
        """One line for the router's failure: the cause its log gives (:mod:`.router_log`),
        then ``why`` (what the plugin saw), with the log's last lines."""
        try:
            cause = router_cause(self.log_path.read_text(errors="replace"))
        except OSError:
            cause = RouterCause("router failed")
        said = f"{cause.reason}: {cause.line} ({why})" if cause.line else why
        return ServerStartError(
            f"topology part router: {said}", reason=cause.reason, excerpt=self.log_tail()
        )

    def log_tail(self, lines: int = 20) -> str:
        """The router's last log lines, without colour codes."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(_ANSI.sub("", line) for line in text.splitlines()[-lines:])

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def workers(self) -> list[dict[str, Any]]:
        """The router's view of its workers (``GET /workers``): url, health, load, metadata."""
        answer = requests.get(self.base_url + "/workers", timeout=5)
        answer.raise_for_status()
        workers: list[dict[str, Any]] = answer.json().get("workers", [])
        return workers

    def outcomes(self) -> dict[str, dict[str, float]]:
        """Requests the router sent to each worker, by outcome (``success``, ``failure``...),
        from its Prometheus counters: ``{worker_url: {outcome: count}}``."""
        text = requests.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).text
        counts: dict[str, dict[str, float]] = {}
        for url, outcome, value in _OUTCOME.findall(text):
            counts.setdefault(url, {})[outcome] = float(value)
        return counts

    def close(self) -> None:
        """Stop it and remove its log."""
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)

    def stop(self) -> None:
        """SIGTERM (it drains in 2-3 s), SIGKILL after 10 s; safe to call more than once."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
