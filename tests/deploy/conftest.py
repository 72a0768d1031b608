"""Fixtures for deployer tests: the launcher to deploy (the real simulator when it exists)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang.lifecycle.spec import HostSpec

REPO = Path(__file__).resolve().parents[2]


def systemd_host_spec(host: Any, service: str, launch: str, **extra: Any) -> HostSpec:
    """The systemd test host as an SSH host named ``testhost`` running ``service``."""
    return HostSpec(
        name="testhost",
        kind="ssh",
        launch=launch,
        hostname=host.ip,
        user="root",
        service=service,
        **extra,
    )


@dataclass(frozen=True)
class Launcher:
    launch: str
    #: The inventory's sglang_version (None: detected from the simulator).
    version: str | None = None


@pytest.fixture(scope="session")
def launcher() -> Launcher:
    """``<repo>/.venv/bin/python -m pytest_sglang.sim``: the real simulator as the launcher."""
    python = REPO / ".venv/bin/python"
    if not python.exists():
        python = Path(sys.executable)
    return Launcher(f"{python} -m pytest_sglang.sim")


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``predicate`` until true; fail naming ``what`` after a generous bound."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.1)
