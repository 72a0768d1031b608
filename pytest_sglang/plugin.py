"""The pytest entry point: options, fixtures and hooks, each delegating to plain classes."""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import Generator, Iterator
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

import pytest

from . import distributed, hookspec
from .bench.workload import Workload
from .config import ServerConfig
from .errors import ConfigError, SglangError
from .lifecycle import deployers
from .lifecycle.deployment import PHASE_LINE, Deployment
from .lifecycle.production import is_production
from .options import number
from .output_paths import check_output_paths
from .report.config_names import label
from .session import HOST_RESOLVE_MODES, HostLease, SglangSession
from .stash import SESSION_KEY, bench_results, comparison_results, merge_summary, summary_of
from .terminal import Column, LiveLine, TextTable, write_table

__all__ = ["Deployment"]

#: Benchmarks, baselines and reports each keep their fixtures, options and hooks in their own
#: plugin module, loaded with this one. They share state through :mod:`.stash` and call each
#: other through hooks, never by importing this module.
pytest_plugins = [
    "pytest_sglang.bench.pytest_plugin",
    "pytest_sglang.baseline.pytest_plugin",
    "pytest_sglang.report.pytest_plugin",
    "pytest_sglang.quality.pytest_plugin",
    "pytest_sglang.report.tuning_plugin",
]

_SIGTERM_KEY = pytest.StashKey[Any]()
JOURNAL_MARKER = "sglang_journal"
_JOURNAL_MARKER_KWARGS = {"expect", "forbid"}
#: The key of the session summary in an xdist worker's output.
SUMMARY_OUTPUT_KEY = "sglang_summary"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang", "SGLang server deployment and benchmarking")
    _add_host_options(group)
    _add_lifecycle_options(group)
    _add_output_options(group)
    parser.addini(
        "sglang_inventory",
        "TOML host inventory (relative to the rootdir).",
        default="sglang-hosts.toml",
    )
    parser.addini(
        "sglang_secret_env",
        "Extra environment-variable name patterns whose values are secrets (one per line).",
        type="linelist",
        default=[],
    )


def _add_host_options(group: pytest.OptionGroup) -> None:
    """Which hosts, and how they are found."""
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
        "--sglang-launcher",
        default=None,
        metavar="NAME",
        help="Run every config that names no launcher on the hosts' named launcher NAME "
        "([hosts.X.launchers] of the inventory), e.g. one of two SGLang releases; configs "
        "that name one keep it. Default: each host's own launch.",
    )
    group.addoption(
        "--sglang-secret-env",
        action="append",
        default=[],
        metavar="PATTERN",
        help="Another environment-variable name pattern (shell glob) whose values are secrets "
        "and are redacted from every output; adds to the ini option sglang_secret_env and the "
        "built-in patterns (secrets.DEFAULT_SECRET_PATTERNS: *_TOKEN, *_KEY, *PASSWORD*, "
        "*SECRET*, *AUTH*, ...). Repeatable.",
    )


def _add_lifecycle_options(group: pytest.OptionGroup) -> None:
    """How a deployment is brought up, waited for and taken down."""
    group.addoption(
        "--sglang-ready-timeout",
        type=number(float, above=0),
        default=900.0,
        metavar="SECONDS",
        help="Deadline for a server to become ready after its restart. Default: %(default)r",
    )
    group.addoption(
        "--sglang-lock-timeout",
        type=number(float, minimum=0),
        default=300.0,
        metavar="SECONDS",
        help="How long to wait for a host that another session holds locked before failing "
        "(naming the holder). Default: %(default)r",
    )
    group.addoption(
        "--sglang-restore",
        action="store_true",
        default=False,
        help="Restore the --sglang-host hosts from the intent record a killed session left "
        "there, then exit without running tests.",
    )
    group.addoption(
        "--sglang-dry-run",
        action="store_true",
        default=False,
        help="Connect and preflight, show per host the diff of the unit and files and which "
        "services would restart; change nothing (deployment tests are skipped).",
    )
    group.addoption(
        "--sglang-drain-timeout",
        type=number(float, minimum=0),
        default=60.0,
        metavar="SECONDS",
        help="Before stopping a serving service, wait up to this long for its in-flight "
        "requests to finish. Default: %(default)r",
    )
    group.addoption(
        "--sglang-force",
        action="store_true",
        default=False,
        help="Stop serving services at once, without waiting for in-flight requests.",
    )
    group.addoption(
        "--sglang-refresh",
        action="store_true",
        default=False,
        help="Run each host's launcher --help again instead of using the flags an earlier "
        "session cached for the same SGLang (~/.cache/pytest-sglang/probes).",
    )
    group.addoption(
        "--sglang-host-resolve",
        choices=HOST_RESOLVE_MODES,
        default="auto",
        help="Before a host changes, ask its own SGLang (the launcher's Python, one round trip "
        "for all configs, cached across sessions) to parse and resolve each config: a config it "
        "refuses fails with SGLang's own line, and its values are what the journal check "
        "expects. auto: where the launcher is SGLang; on: also where it is the simulator; off: "
        "the built-in predictor alone. Default: %(default)s",
    )
    group.addoption(
        "--sglang-router-launch",
        default=None,
        metavar="COMMAND",
        help="What starts a topology's router (SGLang's sglang-router), e.g. '/opt/router/bin/"
        "python -m sglang_router.launch_router'. Default: this Python's sglang_router.",
    )


def _add_output_options(group: pytest.OptionGroup) -> None:
    """What the session writes besides the terminal."""
    group.addoption(
        "--sglang-summary",
        default=None,
        metavar="PATH",
        help="Write a JSON summary of the session's deployments (and results) to PATH.",
    )


def _inventory_path(config: pytest.Config) -> Path | None:
    given = config.getoption("sglang_inventory")
    if given:
        return Path(given).expanduser()
    default = config.rootpath / str(config.getini("sglang_inventory"))
    return default if default.exists() else None


def _make_session(config: pytest.Config, progress: Any = None) -> SglangSession:
    summary = config.getoption("sglang_summary")
    ssh_config = config.getoption("sglang_ssh_config")
    return SglangSession(
        list(config.getoption("sglang_host") or []),
        inventory=_inventory_path(config),
        ssh_config=Path(ssh_config).expanduser() if ssh_config else None,
        ready_timeout=config.getoption("sglang_ready_timeout"),
        summary_path=Path(summary) if summary else None,
        progress=progress,
        lock_timeout=config.getoption("sglang_lock_timeout"),
        drain_timeout=0.0
        if config.getoption("sglang_force")
        else config.getoption("sglang_drain_timeout"),
        dry_run=config.getoption("sglang_dry_run"),
        refresh_launchers=config.getoption("sglang_refresh"),
        host_resolve=config.getoption("sglang_host_resolve"),
        router_launch=config.getoption("sglang_router_launch"),
        launcher=config.getoption("sglang_launcher"),
        secret_patterns=[
            *config.getini("sglang_secret_env"),
            *config.getoption("sglang_secret_env"),
        ],
    )


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """``--sglang-restore``: put the hosts back from their intent records, run no tests.
    Otherwise the output paths are checked here, before any plugin configures (allure-pytest
    creates its folder then) and before anything is deployed."""
    if not config.getoption("sglang_restore"):
        _check_output_paths(config)
        return None
    if not config.getoption("sglang_host"):
        print("[sglang] --sglang-restore needs --sglang-host NAME (repeatable)")
        return int(pytest.ExitCode.USAGE_ERROR)
    session = _make_session(config, progress=print)
    failed = False
    with _shielded():
        for line in session.restore_hosts():
            failed = failed or "restore failed" in line
            print(f"[sglang] {line}")
    return int(pytest.ExitCode.TESTS_FAILED if failed else pytest.ExitCode.OK)


def _check_output_paths(config: pytest.Config) -> None:
    """An unwritable summary, HTML report or Allure folder: one usage error naming it."""
    if config.option.help:
        return
    try:
        check_output_paths(
            [
                ("--sglang-summary", config.getoption("sglang_summary"), False),
                ("--sglang-html", getattr(config.option, "sglang_html", None), False),
                ("--alluredir", getattr(config.option, "allure_report_dir", None), True),
            ]
        )
    except SglangError as exc:
        raise pytest.UsageError(str(exc)) from None


@contextlib.contextmanager
def _shielded() -> Iterator[None]:
    """While restoring, Ctrl-C and SIGTERM only say to wait: an interrupted restore would leave
    the host half-configured (every step of the restore is bounded by a timeout)."""
    previous: dict[signal.Signals, Any] = {}

    def hold(signum: int, frame: FrameType | None) -> None:
        print(f"[sglang] signal {signum} during restore: finishing the restore first")

    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, hold)
    except ValueError:  # not the main thread (embedded use): nothing to shield
        pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@pytest.hookimpl(trylast=True)
def pytest_sglang_deployer(name: str) -> str | None:
    """The built-in backends answer last: a plugin's answer for the same name wins."""
    return deployers.BUILTIN.get(name)


_LOOKUP_BEFORE = pytest.StashKey[Any]()


def pytest_configure(config: pytest.Config) -> None:
    # A session inside a session (pytester) asks its own plugins, and gives the outer's back.
    config.stash[_LOOKUP_BEFORE] = deployers.lookup()
    deployers.set_lookup(lambda name: config.hook.pytest_sglang_deployer(name=name))
    if config.pluginmanager.hasplugin("xdist"):  # its hooks are known only with xdist loaded
        config.pluginmanager.register(distributed, "sglang-distributed")
    config.addinivalue_line(
        "markers",
        f"{JOURNAL_MARKER}(expect=[regex, ...], forbid=[regex, ...]): extra checks on the "
        "startup journal of the deployment the test uses.",
    )

    live = LiveLine(config)

    def progress(message: str) -> None:
        # A startup's phases update one line on a terminal (each is a plain line in a log);
        # its last line ("ready and verified") and every other message stay.
        if PHASE_LINE.match(message):
            live.update(message, force=True)
        else:
            live.done(message)

    session = config.stash[SESSION_KEY] = _make_session(config, progress)
    if not config.option.help:  # --help must work with a broken inventory, to fix it
        try:
            session.check_hosts()
        except SglangError as exc:
            # Once, before collection, as pytest's own usage errors: not one ERROR per test.
            raise pytest.UsageError(session.redactor.redact(str(exc))) from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``parametrize("sglang_server", configs)`` without ``indirect=True`` would hand the bare
    ServerConfig to the test instead of deploying it: refused at collection, once."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        argnames = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
        if isinstance(argnames, str):
            argnames = [name.strip() for name in argnames.split(",")]
        if "sglang_server" not in argnames:
            continue
        indirect = marker.kwargs.get("indirect", False)
        if indirect is True or (
            isinstance(indirect, (list, tuple)) and "sglang_server" in indirect
        ):
            continue
        raise ConfigError(
            "parametrize('sglang_server', ...) needs indirect=True: "
            f"{metafunc.definition.name} would get the ServerConfig undeployed"
        )


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """A bad config in a test module (``ServerConfig(tp_sise=4)``, a sweep or config file, a
    missing ``indirect=True``) is one line naming the mistake and where it is written, instead
    of a traceback through this package whose last line pytest's short summary cuts."""
    report = yield
    call = getattr(report, "call", None)
    excinfo = getattr(call, "excinfo", None)
    if report.failed and excinfo is not None and isinstance(excinfo.value, SglangError):
        report.longrepr = _collect_error_line(collector, excinfo)
    return report


def _collect_error_line(collector: pytest.Collector, excinfo: pytest.ExceptionInfo[Any]) -> str:
    """The error's one line, then the line of the test module that raised it (when known)."""
    message = str(excinfo.value).splitlines()[0]
    path = getattr(collector, "path", None)
    lines = [entry.lineno + 1 for entry in excinfo.traceback if entry.path == path]
    if path is not None and lines:
        message += f" ({path.name}:{lines[-1]})"
    sglang = collector.config.stash.get(SESSION_KEY, None)
    return sglang.redactor.redact(message) if sglang is not None else message


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """Test ids come from the configs' own ids (``eagle-s3-k1``), not ``sglang_server0``."""
    if isinstance(val, ServerConfig):
        return val.id
    if isinstance(val, Workload):
        return val.name
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
    appear; within a group the written order is kept. The session's redactor learns every
    config's secrets here, before anything can report them. A production placeholder's digest
    is known only once the host is read: :func:`pytest_runtestloop` merges its group with the
    config it turns out to be.
    """
    sglang = config.stash.get(SESSION_KEY, None)
    seen: set[str] = set()
    for item in items:
        cfg = _config_of(item)
        if cfg is not None and cfg.digest not in seen and sglang is not None:
            # Learn every secret before the first test runs: reports set up early.
            sglang.redactor.add_env(cfg.env)
            sglang.redactor.add_argv(list(cfg.extra_args))
        if cfg is not None:
            seen.add(cfg.digest)
    items[:] = _grouped(items, {cfg.digest: cfg.digest for cfg in _configs(items)})


def _configs(items: list[pytest.Item]) -> list[ServerConfig]:
    """The distinct configs of ``items`` (by digest), in the order they first appear."""
    configs: dict[str, ServerConfig] = {}
    for item in items:
        cfg = _config_of(item)
        if cfg is not None:
            configs.setdefault(cfg.digest, cfg)
    return list(configs.values())


def _grouped(items: list[pytest.Item], deployed: dict[str, str]) -> list[pytest.Item]:
    """``items`` grouped by what their config deploys (``deployed``: a config's digest -> the
    digest of what the host starts for it), groups in first-appearance order, a group's
    items in their order; tests without a deployment first."""
    first_seen: dict[str, int] = {}
    for item in items:
        cfg = _config_of(item)
        if cfg is not None:
            first_seen.setdefault(deployed[cfg.digest], len(first_seen))

    def key(item: pytest.Item) -> int:
        cfg = _config_of(item)
        return -1 if cfg is None else first_seen[deployed[cfg.digest]]

    return sorted(items, key=key)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Before the first test: production placeholders join the config they are on this host.

    ``production(speculative_num_steps=3)`` may be the very config another test names
    ``eagle-s3``: one digest, so one deployment, when their tests run together. The host's
    production is read here (what the placeholder's first test would do anyway). Not under
    xdist: the controller schedules the collection order, and each worker has its own host.
    """
    config = session.config
    sglang = config.stash.get(SESSION_KEY, None)
    if (
        sglang is None
        or sglang.dry_run
        or config.option.collectonly
        or session.testsfailed
        or hasattr(config, "workerinput")
        or getattr(config.option, "dist", "no") != "no"
    ):
        return
    configs = _configs(session.items)
    if len(configs) < 2 or not any(is_production(cfg) for cfg in configs):
        return
    try:
        host = sglang.host()
    except SglangError:
        return  # the tests say why, each with its one line
    deployed: dict[str, str] = {}
    for cfg in configs:
        effective = host.resolve(cfg)
        deployed[cfg.digest] = cfg.digest if effective is None else effective.digest
    session.items[:] = _grouped(session.items, deployed)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The configs the session's tests deploy, in order: each host's own SGLang resolves them
    all in one round trip before its first change (``--sglang-host-resolve``)."""
    sglang = session.config.stash.get(SESSION_KEY, None)
    if sglang is None:
        return
    seen: set[str] = set()
    for item in session.items:
        cfg = _config_of(item)
        if cfg is not None:
            cfg = cfg.replica()  # what each host runs: a topology's replicas are the config
        if cfg is not None and cfg.digest not in seen:
            seen.add(cfg.digest)
            sglang.planned.append(cfg)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """SIGTERM (a CI job cancelled) unwinds like Ctrl-C, so the host is restored."""

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    with contextlib.suppress(ValueError):  # ValueError: not the main thread (embedded use)
        session.config.stash[_SIGTERM_KEY] = signal.signal(signal.SIGTERM, on_sigterm)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    sglang = session.config.stash.get(SESSION_KEY, None)
    problems: list[str] = []
    if sglang is not None:
        with _shielded():  # a signal now would interrupt the restore itself
            problems = sglang.restore_all()
    previous = session.config.stash.get(_SIGTERM_KEY, None)
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)
    if sglang is None:
        return
    if not hasattr(session.config, "workerinput"):  # xdist workers report to the controller
        sglang.write_summary(bench_results(session.config), comparison_results(session.config))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for line in problems:
        if reporter is not None:
            reporter.write_line(f"[sglang] {line}", red=True)
    if problems and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_sglang_worker_output(config: pytest.Config, output: dict[str, Any]) -> None:
    """An xdist worker sends its summary (deployments, benchmarks, comparisons)."""
    output[SUMMARY_OUTPUT_KEY] = summary_of(config)


def pytest_sglang_merge_worker_output(config: pytest.Config, output: dict[str, Any]) -> None:
    """The controller adds each worker's summary to the one ``--sglang-summary`` it writes."""
    if output.get(SUMMARY_OUTPUT_KEY):
        merge_summary(config, output[SUMMARY_OUTPUT_KEY])


@pytest.hookimpl(tryfirst=True)  # deployments, then benchmarks, then their comparisons
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    sglang = config.stash.get(SESSION_KEY, None)
    if sglang is None:
        return
    if sglang.dry_run_diffs:
        terminalreporter.section("sglang dry run (nothing was changed)")
        for (host, config_id), diff in sglang.dry_run_diffs.items():
            terminalreporter.write_line(f"--- {host}: {config_id}")
            for line in diff.splitlines():
                terminalreporter.write_line(line)
    summary = sglang.summary()  # this process's and, on the controller, the workers'
    write_table(terminalreporter, "sglang deployments", deployments_table(summary["deployments"]))
    for note in summary.get("notes", []):
        terminalreporter.write_line(f"[sglang] note: {note}", yellow=True)


def deployments_table(rows: list[dict[str, Any]]) -> TextTable:
    """One row per deployment: where, what, how it went, how long until ready (and why not)."""
    table = TextTable(
        [
            Column("host"),
            Column("config"),
            Column("outcome"),
            Column("ready after", ">"),
            Column("reason", optional=True),
        ]
    )
    for row in rows:
        ready = f"{row['ready_s']:.1f}s" if row.get("ready_s") is not None else "-"
        reason = ": ".join(str(row[k]) for k in ("reason", "message") if row.get(k))
        failed = row["outcome"] not in ("ready", "restarted")
        config = label(row.get("names") or [row["config_id"]])  # one config, all its names
        table.add(row["host"], config, row["outcome"], ready, reason, red=failed)
    return table


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def sglang_session(pytestconfig: pytest.Config) -> SglangSession:
    """The session's deployments, hosts and outcomes."""
    return pytestconfig.stash[SESSION_KEY]


@pytest.fixture(scope="session")
def sglang_host(sglang_session: SglangSession) -> Iterator[HostLease]:
    """The host under test (the first ``--sglang-host``; ``local`` by default)."""
    try:
        host = sglang_session.host()
    except SglangError as exc:
        _fail(sglang_session.redactor.redact(str(exc)))
    yield host


@pytest.fixture(scope="session")
def sglang_production(sglang_host: HostLease) -> Deployment:
    """The production server running on the host now, attached as it is: no restart, no unit
    change, nothing to restore. ``sglang_bench`` measures it when a test asks for this fixture,
    and the gates compare it with its baseline (keyed by its config and the host). For a CI job
    after a rollout; run it apart from tests that deploy configs (those replace production
    while they run)."""
    try:
        return sglang_host.attach()
    except SglangError as exc:
        _fail(sglang_host.redactor.redact(str(exc)))


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
def sglang_server(request: pytest.FixtureRequest, sglang_host: HostLease) -> Deployment:
    """A ready, verified deployment of the ServerConfig this test is parametrized with.

    Use ``@pytest.mark.parametrize("sglang_server", configs, indirect=True)``. A config is
    deployed once and reused by every test that asks for it.
    """
    config = getattr(request, "param", None)
    if config is None and "sglang_production" in request.fixturenames:
        production: Deployment = request.getfixturevalue("sglang_production")
        return production  # the live service, attached: what sglang_bench then measures
    if not isinstance(config, ServerConfig):
        pytest.fail(
            "sglang_server needs a ServerConfig: use "
            "@pytest.mark.parametrize('sglang_server', [ServerConfig(...)], indirect=True)",
            pytrace=False,
        )
    sglang = request.config.stash[SESSION_KEY]
    redact = sglang.redactor.redact
    if sglang.dry_run:
        try:
            sglang.dry_run_diff(config, sglang_host.spec.name)  # shown in the terminal summary
        except SglangError as exc:
            _fail(redact(str(exc)))
        pytest.skip(f"--sglang-dry-run: {config.id} not deployed on {sglang_host.spec.name}")
    deployment: Deployment
    try:
        if config.topology is not None:
            deployment = sglang.topology_deployment(config)
        else:
            deployment = sglang_host.deployment(config)
    except SglangError as exc:
        excerpt = getattr(exc, "excerpt", "")
        _fail(redact(str(exc) + (f"\n--- journal excerpt ---\n{excerpt}" if excerpt else "")))
    try:
        _journal_marker_checks(request, deployment)
    except SglangError as exc:
        _fail(redact(str(exc)))
    return deployment


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Secrets out of test reports: failure text, captured output and the exception itself.

    This wrapper runs innermost (``trylast``), so JUnit XML, the terminal and Allure (whose
    wrapper reads the report and ``call.excinfo`` after ours) only ever see redacted text.
    """
    report = yield
    sglang = item.config.stash.get(SESSION_KEY, None)
    if sglang is not None and sglang.redactor.active:
        _redact_report(report, call, sglang.redactor)
    return report


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(
    config: pytest.Config, benchmarks: list[Any], output_json: dict[str, Any]
) -> None:
    """pytest-benchmark writes each test's params with ``repr`` (a ServerConfig's ``env``
    included): the JSON it writes goes through the redactor too."""
    sglang = config.stash.get(SESSION_KEY, None)
    if sglang is not None and sglang.redactor.active:
        from pytest_benchmark.utils import safe_dumps  # what it writes the file with

        redacted = json.loads(sglang.redactor.redact(safe_dumps(output_json)))  # type: ignore[no-untyped-call]
        output_json.clear()
        output_json.update(redacted)


def _redact_report(report: pytest.TestReport, call: pytest.CallInfo[None], redactor: Any) -> None:
    report.sections = [(title, redactor.redact(text)) for title, text in report.sections]
    if report.longrepr is not None:
        text = str(report.longrepr)
        if redactor.contains_secret(text):
            report.longrepr = redactor.redact(text)
    excinfo = call.excinfo
    if excinfo is not None:
        exc = excinfo.value
        with contextlib.suppress(Exception):
            if redactor.contains_secret(str(exc)):
                exc.args = tuple(redactor.redact(a) if isinstance(a, str) else a for a in exc.args)
                if hasattr(exc, "msg") and isinstance(exc.msg, str):
                    exc.msg = redactor.redact(exc.msg)


def _fail(message: str) -> NoReturn:
    """Fail with our one-line message only: no traceback, no chained exception."""
    __tracebackhide__ = True
    exc = pytest.fail.Exception(message, pytrace=False)
    exc.__suppress_context__ = True
    raise exc


def pytest_unconfigure(config: pytest.Config) -> None:
    deployers.set_lookup(config.stash.get(_LOOKUP_BEFORE, None))
