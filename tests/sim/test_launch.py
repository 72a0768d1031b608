"""start_simulator: a ready simulator child on loopback, or an error carrying its output."""

from __future__ import annotations

import asyncio
import logging
import socket
from types import SimpleNamespace
from typing import Any, cast

import pytest
import requests

from pytest_sglang.sim.launch import start_simulator


def test_ready_simulator_answers_and_stops() -> None:
    with start_simulator("--served-model-name", "m", timeout=30) as sim:
        models = requests.get(sim.url + "/v1/models", timeout=5).json()
        assert [m["id"] for m in models["data"]] == ["m"]
        proc = sim.proc
    assert proc.poll() is not None


def test_a_simulator_that_exits_reports_its_own_error() -> None:
    with pytest.raises(
        RuntimeError,
        match=r"simulator exited with 2: .*unrecognized arguments: --speculative-num-stepz 3$",
    ):
        start_simulator("--speculative-num-stepz", "3", timeout=30)


def test_a_warmup_that_cannot_be_made_ends_the_server_as_sglang_does(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The warmup's own request raising (nothing answers on its port) is SGLang's
    ``Initialization failed. warmup error`` and the end of the server, not a background task that
    dies unseen and leaves a server that is never ready (a client would wait for its deadline)."""
    from pytest_sglang.sim import __main__ as sim_main
    from pytest_sglang.sim.knobs import SimSettings

    killed: list[bool] = []
    monkeypatch.setattr(sim_main, "kill_self", lambda: killed.append(True))
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    state = cast(Any, SimpleNamespace(args={}, status="Starting"))
    with caplog.at_level(logging.INFO, logger="sglang.sim"):
        asyncio.run(sim_main._warmup(port, state, SimSettings(startup_scale=0.0)))
    assert killed == [True] and state.status == "Starting"
    failed = [r.getMessage() for r in caplog.records if "warmup error" in r.getMessage()]
    assert failed and failed[0].startswith("Initialization failed. warmup error: Traceback")
    assert "ready to roll" not in caplog.text
