"""Shared fixtures: real systemd + OpenSSH test hosts (see testhost.py).

``systemd_host`` boots one host per session (about 1-2 s); ``systemd_host_factory("b")`` boots
more by label for tests that need two. Where a host cannot be booted (not root, no
systemd-nspawn/sshd) these tests skip with the reason, except under ``CI=true``, where they
fail: CI must run them. Tests that use these fixtures get the ``systemd`` marker, so
``-m "not systemd"`` deselects them.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `testhost` under any import mode

from helpers import (
    FAST_SIM,
    child_pytest_argv,
    interruptible,
    sim_knobs,
    ssh_transport,
    use_simulator_env,
)
from testhost import STATE_ROOT, SystemdTestHost, TestHostFactory

from pytest_sglang.lifecycle.launcher_cache import CACHE_ENV

# The suite's probe cache (--help flags kept across sessions) is its own, shared with the child
# sessions it starts and gone at its end: tests never read or write the user's ~/.cache.
if CACHE_ENV not in os.environ:
    os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="pytest-sglang-cache-")
    atexit.register(shutil.rmtree, os.environ[CACHE_ENV], True)

if TYPE_CHECKING:
    from pytest_sglang.transport.ssh import SshTransport


@pytest.fixture(scope="session")
def systemd_host_factory(request: pytest.FixtureRequest) -> TestHostFactory:
    """Boot extra test hosts by label: ``systemd_host_factory("b")``; all go at session end."""
    factory = TestHostFactory(STATE_ROOT)
    request.addfinalizer(factory.close)
    atexit.register(factory.close)
    return factory


@pytest.fixture(scope="session")
def systemd_host(systemd_host_factory: TestHostFactory) -> SystemdTestHost:
    """One booted systemd + journald + sshd host: ``ssh root@<ip>`` with its key/known_hosts."""
    return systemd_host_factory("a")


@pytest.fixture(scope="session")
def systemd_transport(systemd_host: SystemdTestHost) -> Iterator[SshTransport]:
    """An :class:`SshTransport` to ``systemd_host`` as root (strict host keys, its own key)."""
    transport = ssh_transport(systemd_host)
    yield transport
    transport.close()


@pytest.fixture
def simulator_env() -> dict[str, str]:
    """The ``SGLANG_SIM_*`` settings this test's simulators run with: instant startup and
    serving (a module that needs others overrides this fixture)."""
    return dict(FAST_SIM)


@pytest.fixture
def fast_simulator(monkeypatch: pytest.MonkeyPatch, simulator_env: dict[str, str]) -> None:
    """Simulators this test starts (itself or through a child session, which inherits the
    environment) run with :func:`simulator_env` and none of the caller's other ``SGLANG_SIM_*``
    knobs (a fault, a fixed TTFT, another version left in a developer's shell)."""
    use_simulator_env(monkeypatch, simulator_env, drop=sim_knobs())


#: Fixtures that boot a test host (the ``systemd`` marker).
HOST_FIXTURES = {"systemd_host", "systemd_host_factory", "systemd_transport"}
#: Fixtures that start a server or a child pytest session that deploys one (the ``server``
#: marker): ``make check`` leaves these out for a quick inner loop, ``make test`` runs them.
SERVER_FIXTURES = HOST_FIXTURES | {
    "pytester",
    "session_until",
    "simulator",
    "fast_sim",
    "eagle_sim",
    "start_sim",
    "seed_sim",
    "deployer",
    "process_deployer",
    "systemd_deployer",
    "any_deployer",
}


#: Tests that start servers or child sessions in their own body or module fixtures (by node id
#: prefix, relative to tests/).
SERVER_TESTS = (
    "report/test_browser.py",
    "report/test_allure_results.py",
    "bench/test_failures.py",
    "deploy/test_host_resolve.py",
    "baseline/test_upgrade.py::test_bisect_",
    "reliability/test_drain.py::test_in_flight_reads_the_simulators_own_metrics",
)


#: Tests whose assertions hang on wall-clock figures (TTFT/ITL gates, rate searches, paced
#: arrivals, link cuts timed against a deadline): under parallel load they measure the load, not
#: the code. ``make test`` runs them in a session of their own at normal priority, beside the rest
#: run with ``pytest -n`` at ``nice 19``; they get the ``serial`` marker (by node id prefix, from
#: the rootdir: this conftest sees scenarios/ too when both directories are collected, as ``make
#: test`` does).
SERIAL_TESTS = (
    # the tuning job: its verdict tests read the benchmarks of the same session
    "scenarios/",
    # the searches, which run last on a quiet machine (QUIET_TESTS)
    # ITL and TTFT asserted within a window of the injected figures: a client starved of CPU (at
    # nice 19 beside the serial session) reads a stream's tokens in bursts, a median ITL of 0.8 ms
    # for 10 ms
    "tests/bench/test_route.py::test_each_path_measures_the_paced_server",
    "tests/bench/test_loadgen.py::test_timing_matches_injected_ttft_and_itl",
    # an SSH drop timed to land mid-benchmark: under load the unit fails before the drop
    "tests/reliability/test_faults.py::test_ssh_drop_mid_benchmark",
    # the baselines saved then gated, in a session of their own (GATED_TESTS)
)
#: Serial tests whose child sessions save a baseline and gate the next run against it: a client
#: starved of CPU reads a stream's tokens in bursts, and a saved median ITL of 0.04 ms (2.6 ms
#: unstarved) gates the next run as a 6,000% regression. ``make test`` runs them at normal priority
#: in a session of their own beside the scenarios (which they do not disturb; the searches they
#: do). They get the ``gated`` marker too.
GATED_TESTS = ("tests/baseline/test_baseline_plugin.py", "tests/baseline/test_upgrade.py")
#: Serial tests whose probes sit at the edge of an SLO (a level that passes by tens of ms on a
#: quiet machine): ``make test`` runs them last, alone, once the rest of the suite has ended. With
#: another session beside them, even one at ``nice 19``, a late wake-up fails a level that passes
#: and the search stops one level early. They get the ``quiet`` marker too.
QUIET_TESTS = (
    # rate and concurrency searches whose next level follows from measured TTFT/ITL
    "tests/bench/test_search.py",
    # a child session's rate search gated on TTFT/ITL SLOs
    "tests/bench/test_tuning_plugin.py::test_slo_figures_search_and_verdict",
    # a rate search whose probes are timed against the link (it flaked once even serially)
    "tests/bench/test_route.py::test_a_search_probes_from_the_host",
)
#: pytest-benchmark turns itself off in a pytest-xdist session (its figures would measure the
#: load), so tests that measure through its fixture run in the serial phase, measured.
SERIAL_FIXTURES = {"benchmark"}


@pytest.fixture(autouse=True)
def _no_xdist_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child pytest session a test starts is a session of its own, not one more worker of
    the outer pytest-xdist session: without this it inherits ``PYTEST_XDIST_WORKER``, and
    pytest-benchmark turns itself off there and the plugin takes it for worker N."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if HOST_FIXTURES & fixtures:
            item.add_marker(pytest.mark.systemd)
        nodeid = item.nodeid.removeprefix("tests/")
        if SERVER_FIXTURES & fixtures or nodeid.startswith(SERVER_TESTS):
            item.add_marker(pytest.mark.server)
        apart = SERIAL_TESTS + GATED_TESTS + QUIET_TESTS
        if SERIAL_FIXTURES & fixtures or item.nodeid.startswith(apart):
            item.add_marker(pytest.mark.serial)
        if item.nodeid.startswith(GATED_TESTS):
            item.add_marker(pytest.mark.gated)
        if item.nodeid.startswith(QUIET_TESTS):
            item.add_marker(pytest.mark.quiet)


SessionUntil = Callable[..., "subprocess.Popen[bytes]"]


@pytest.fixture
def session_until(pytester: pytest.Pytester) -> Iterator[SessionUntil]:
    """``session_until(marker, *pytest_args, timeout=90)``: a child pytest session in
    ``pytester.path``, returned once its test wrote ``marker`` (its deployment is up), for
    tests that interrupt or kill it. One still running at teardown (an assertion failed before
    it was stopped) is killed, so it cannot restore the host under the next test."""
    children: list[subprocess.Popen[bytes]] = []

    def start(marker: Path, *args: str, timeout: float = 90.0) -> subprocess.Popen[bytes]:
        proc = pytester.popen(
            child_pytest_argv(*args), stdin=pytester.CLOSE_STDIN, preexec_fn=interruptible
        )
        children.append(proc)
        deadline = time.monotonic() + timeout
        while not marker.exists():
            if proc.poll() is not None:
                proc.stdin = None  # pytester closed it: communicate() would flush it and fail
                out, err = proc.communicate()
                said = (out + err).decode(errors="replace").strip().splitlines()[-40:]
                pytest.fail(
                    f"pytest ended ({proc.returncode}) before deploying; its last lines:\n"
                    + "\n".join(said)
                )
            assert time.monotonic() < deadline, "never deployed"
            time.sleep(0.1)
        return proc

    yield start
    for proc in children:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
