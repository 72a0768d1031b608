"""A real simulator process on a loopback port, for bench tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from helpers import EAGLE_FLAGS

from pytest_sglang.sim.launch import LocalSimulator, start_simulator

SimFactory = Callable[..., str]

SERVED = ("--served-model-name", "qwen3-8b")


@pytest.fixture
def simulator() -> Iterator[SimFactory]:
    """``simulator(env={...}, *flags)`` -> base URL of a ready simulator; stopped afterwards."""
    sims: list[LocalSimulator] = []

    def factory(*extra: str, env: dict[str, str] | None = None) -> str:
        sims.append(start_simulator(*SERVED, *extra, env=env, timeout=30))
        return sims[-1].url

    yield factory
    for sim in sims:
        sim.stop()


@pytest.fixture(scope="module")
def fast_sim() -> Iterator[str]:
    """One EAGLE simulator at TIME_SCALE=0 shared by a module's tests."""
    with start_simulator(
        *SERVED, *EAGLE_FLAGS, env={"SGLANG_SIM_TIME_SCALE": "0"}, timeout=30
    ) as sim:
        yield sim.url


@pytest.fixture(scope="module")
def eagle_sim() -> Iterator[str]:
    """One EAGLE simulator at a real time scale (chunks of several tokens, a step apart)."""
    with start_simulator(
        *SERVED, *EAGLE_FLAGS, env={"SGLANG_SIM_TIME_SCALE": "1"}, timeout=30
    ) as sim:
        yield sim.url
