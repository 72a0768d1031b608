"""The real-SGLang tier: every test here runs the real ``sglang`` package (``make test-real``).

``make test-real`` installs the release named by ``REAL_SGLANG_VERSION`` into its own cached venv
(``tests_real/install_sglang.sh``) and runs this directory with ``PYTEST_SGLANG_REAL_VENV``
pointing at it. Here:

- :func:`real_sglang` (session): the venv, the tiny model built from nothing by
  ``tests_real/tiny_model.py`` (cached under ``~/.cache/pytest-sglang`` by the builder's digest),
  the CPU patch directory and the environment a server needs on this CPU-only machine;
- :func:`local_real_entry`: an inventory entry with the real server as a ``local`` process host
  (``real``); :mod:`real_host` has them, and prints an inventory for a scenario of your own.

Without the venv the whole tier fails with one line naming ``make test-real`` (under ``CI=true``
and everywhere else alike: asking for this tier and not getting it is never a silent skip).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

TIER = Path(__file__).resolve().parent
sys.path.insert(0, str(TIER.parent / "tests"))  # helpers, testhost
sys.path.insert(0, str(TIER))

from helpers import FAST_SIM, SIM_LAUNCH  # noqa: E402
from real_host import (  # noqa: E402
    CPU_FLAGS,
    RealSglang,
    RealSglangMissing,
    find_real_sglang,
    local_real_entry,
)
from testhost import STATE_ROOT, TestHostFactory, missing_prerequisites  # noqa: E402

from pytest_sglang.lifecycle.launcher_cache import CACHE_ENV  # noqa: E402
from pytest_sglang.session import SglangSession  # noqa: E402

# As in tests/: the tier's probe cache is its own, never the user's ~/.cache (tests/conftest.py).
if CACHE_ENV not in os.environ:
    os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="pytest-sglang-cache-")
    atexit.register(shutil.rmtree, os.environ[CACHE_ENV], True)


@pytest.fixture(scope="session")
def real_sglang() -> RealSglang:
    """The tier's real SGLang: its venv, version and tiny model (built once, then cached)."""
    try:
        return find_real_sglang()
    except RealSglangMissing as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def systemd_host_factory(request: pytest.FixtureRequest) -> TestHostFactory:
    """Test hosts as in tests/ (tests/testhost.py); here CI must have them, like the tier."""
    missing = missing_prerequisites()
    if missing:
        message = "the systemd test host needs " + ", ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    factory = TestHostFactory(STATE_ROOT)
    request.addfinalizer(factory.close)
    return factory


__all__ = ["CPU_FLAGS", "RealSglang", "local_real_entry"]


def real_and_simulator(real: RealSglang, directory: Path, production_line: str) -> SglangSession:
    """A session holding the real server (``real``) and the simulator (``sim``, at full speed),
    both with ``production_line`` as production: one request sequence sent to each compares
    them."""
    inventory = directory / "hosts.toml"
    sim_env = "{ " + ", ".join(f'{k} = "{v}"' for k, v in FAST_SIM.items()) + " }"
    inventory.write_text(
        local_real_entry("real", real, production_line)
        + f'\n[hosts.sim]\nssh = "local"\nlaunch = "{SIM_LAUNCH}"\n'
        + f'production = "{production_line}"\nenv = {sim_env}\n'
    )
    return SglangSession(["real", "sim"], inventory=inventory, ssh_config=None, ready_timeout=300)
