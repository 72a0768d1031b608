"""The pytest entry point: options, fixtures and hooks, each delegating to plain classes."""

from __future__ import annotations

import argparse
import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

import pytest

from .config import ServerConfig
from .errors import SglangError
from .session import Deployment, HostSession, SglangSession

__all__ = ["Deployment"]

#: Benchmarks, baselines and reports each keep their fixtures, options and hooks in their own
#: plugin module, loaded with this one.
pytest_plugins = [
    "pytest_sglang.bench.pytest_plugin",
    "pytest_sglang.baseline.pytest_plugin",
    "pytest_sglang.report.pytest_plugin",
]

SESSION_KEY = pytest.StashKey[SglangSession]()
_SIGTERM_KEY = pytest.StashKey[Any]()
JOURNAL_MARKER = "sglang_journal"
_JOURNAL_MARKER_KWARGS = {"expect", "forbid"}


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang", "SGLang server deployment and benchmarking")
    group.addoption(
        "--sglang-host",
        action="append",
        default=[],
        metavar="NAME",
        help="Host to deploy on: an inventory name, an ssh_config alias, user@host, or 'local' "
        "(the built-in simulator). Repeatable. Default: local.",
    )
    group.addoption(
        "--sglang-inventory",
        default=None,
        metavar="PATH",
        help="TOML host inventory. Default: the ini option sglang_inventory "
        "(sglang-hosts.toml in the rootdir) when that file exists.",
    )
    group.addoption(
        "--sglang-ssh-config",
        default=None,
        metavar="PATH",
        help="ssh_config-style file for host aliases. Default: ~/.ssh/config when it exists.",
    )
    group.addoption(
        "--sglang-ready-timeout",
        type=_positive_float,
        default=900.0,
        metavar="SECONDS",
        help="Deadline for a server to become ready after its restart. Default: %(default)r",
    )
    group.addoption(
        "--sglang-summary",
        default=None,
        metavar="PATH",
        help="Write a JSON summary of the session's deployments (and results) to PATH.",
    )
    parser.addini(
        "sglang_inventory",
        "TOML host inventory (relative to the rootdir).",
        default="sglang-hosts.toml",
    )


def _inventory_path(config: pytest.Config) -> Path | None:
    given = config.getoption("sglang_inventory")
    if given:
        return Path(given).expanduser()
    default = config.rootpath / str(config.getini("sglang_inventory"))
    return default if default.exists() else None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{JOURNAL_MARKER}(expect=[regex, ...], forbid=[regex, ...]): extra checks on the "
        "startup journal of the deployment the test uses.",
    )
    reporter = config.pluginmanager.get_plugin("terminalreporter")

    def progress(message: str) -> None:
        if reporter is not None:
            reporter.write_line(message)

    summary = config.getoption("sglang_summary")
    ssh_config = config.getoption("sglang_ssh_config")
    config.stash[SESSION_KEY] = SglangSession(
        list(config.getoption("sglang_host") or []),
        inventory=_inventory_path(config),
        ssh_config=Path(ssh_config).expanduser() if ssh_config else None,
        ready_timeout=config.getoption("sglang_ready_timeout"),
        summary_path=Path(summary) if summary else None,
        progress=progress,
    )


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """Test ids come from the configs' own ids (``eagle-s3-k1``), not ``sglang_server0``."""
    if isinstance(val, ServerConfig):
        return val.id
    return None


def _config_of(item: pytest.Item) -> ServerConfig | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    value = callspec.params.get("sglang_server")
    return value if isinstance(value, ServerConfig) else None


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Group tests by config so that each distinct config is deployed once per host.

    Tests without a deployment run first; the configs keep the order in which they first
    appear; within a group the written order is kept.
    """
    first_seen: dict[str, int] = {}
    for item in items:
        cfg = _config_of(item)
        if cfg is not None:
            first_seen.setdefault(cfg.digest, len(first_seen))

    def key(item: pytest.Item) -> int:
        cfg = _config_of(item)
        return -1 if cfg is None else first_seen[cfg.digest]

    items[:] = sorted(items, key=key)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """SIGTERM (a CI job cancelled) unwinds like Ctrl-C, so the host is restored."""

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    with contextlib.suppress(ValueError):  # ValueError: not the main thread (embedded use)
        session.config.stash[_SIGTERM_KEY] = signal.signal(signal.SIGTERM, on_sigterm)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    previous = session.config.stash.get(_SIGTERM_KEY, None)
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)
    sglang = session.config.stash.get(SESSION_KEY, None)
    if sglang is None:
        return
    problems = sglang.restore_all()
    from .bench.pytest_plugin import bench_results  # registered through pytest_plugins

    sglang.write_summary(benchmarks=bench_results(session.config))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for line in problems:
        if reporter is not None:
            reporter.write_line(f"[sglang] {line}", red=True)
    if problems and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    sglang = config.stash.get(SESSION_KEY, None)
    if sglang is None or not sglang.records:
        return
    terminalreporter.section("sglang deployments")
    for record in sglang.records:
        ready = f"{record.ready_s:.1f}s" if record.ready_s is not None else "-"
        detail = f"  {record.reason}" if record.reason else ""
        terminalreporter.write_line(
            f"{record.host:<12} {record.config_id:<28} {record.outcome:<7} ready {ready}{detail}"
        )


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def sglang_session(pytestconfig: pytest.Config) -> SglangSession:
    """The session's deployments, hosts and outcomes."""
    return pytestconfig.stash[SESSION_KEY]


@pytest.fixture(scope="session")
def sglang_host(sglang_session: SglangSession) -> Iterator[HostSession]:
    """The host under test (the first ``--sglang-host``; ``local`` by default)."""
    try:
        host = sglang_session.host()
    except SglangError as exc:
        _fail(str(exc))
    yield host


def _journal_marker_checks(request: pytest.FixtureRequest, deployment: Deployment) -> None:
    for marker in request.node.iter_markers(JOURNAL_MARKER):
        unknown = set(marker.kwargs) - _JOURNAL_MARKER_KWARGS
        if unknown or marker.args:
            pytest.fail(
                f"@pytest.mark.{JOURNAL_MARKER} takes only expect=[...] and forbid=[...], got "
                f"{sorted(unknown) or list(marker.args)}",
                pytrace=False,
            )
        for pattern in marker.kwargs.get("expect", []):
            deployment.journal.expect(pattern)
        for pattern in marker.kwargs.get("forbid", []):
            deployment.journal.forbid(pattern)


@pytest.fixture
def sglang_server(request: pytest.FixtureRequest, sglang_host: HostSession) -> Deployment:
    """A ready, verified deployment of the ServerConfig this test is parametrized with.

    Use ``@pytest.mark.parametrize("sglang_server", configs, indirect=True)``. A config is
    deployed once and reused by every test that asks for it.
    """
    config = getattr(request, "param", None)
    if not isinstance(config, ServerConfig):
        pytest.fail(
            "sglang_server needs a ServerConfig: use "
            "@pytest.mark.parametrize('sglang_server', [ServerConfig(...)], indirect=True)",
            pytrace=False,
        )
    try:
        deployment = sglang_host.deployment(config)
    except SglangError as exc:
        excerpt = getattr(exc, "excerpt", "")
        _fail(str(exc) + (f"\n--- journal excerpt ---\n{excerpt}" if excerpt else ""))
    try:
        _journal_marker_checks(request, deployment)
    except SglangError as exc:
        _fail(str(exc))
    return deployment


def _fail(message: str) -> NoReturn:
    """Fail with our one-line message only: no traceback, no chained exception."""
    __tracebackhide__ = True
    exc = pytest.fail.Exception(message, pytrace=False)
    exc.__suppress_context__ = True
    raise exc
