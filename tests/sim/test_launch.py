"""start_simulator: a ready simulator child on loopback, or an error carrying its output."""

from __future__ import annotations

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
