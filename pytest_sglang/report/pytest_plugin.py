"""pytest hooks for reports: Allure parameters and attachments, Allure session files, HTML summary.

Each hook hands over to the :class:`~.collector.ReportSession` kept in ``config.stash``:

- setup (before the fixtures): the config's fields become Allure parameters;
- call: after the test body, the deployment (unit, argv, server_args, journal) and the
  benchmark figures are attached, and the run is kept for sweeps;
- teardown: the test's baseline comparisons are attached when the baselines have made them;
- session finish (after the other plugins, so hosts are restored and comparisons final):
  ``environment.properties``, ``categories.json``, the performance-metrics file and the sweep
  summary go to ``--alluredir``, and ``--sglang-html PATH`` gets the single-file summary.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from ..lifecycle.deployment import Deployment
from ..stash import REPORT_KEY, SESSION_KEY, bench_results, comparison_results
from .collector import ReportSession
from .environment import HostFacts
from .records import BenchRecord

__all__ = ["REPORT_KEY", "comparison_results_of"]

#: The key of the report records in an xdist worker's output.
REPORT_OUTPUT_KEY = "sglang_report"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang")
    group.addoption(
        "--sglang-html",
        default=None,
        metavar="PATH",
        help="Write a single self-contained HTML summary (sweep tables and plots, baseline "
        "comparisons, deployments) to PATH. Default: %(default)r",
    )


def comparison_results_of(config: pytest.Config) -> list[dict[str, Any]]:
    """The baselines' comparisons (none without the baselines plugin) and, on the xdist
    controller, the workers'."""
    rows = [dict(row) for row in comparison_results(config)]
    sglang = config.stash.get(SESSION_KEY, None)
    if sglang is not None:  # on the xdist controller: what the workers compared
        rows += [dict(row) for row in sglang.merged.get("comparisons", [])]
    return rows


# The two hooks of the entry plugin (pytest_sglang.hookspec) that pytest-xdist's plugin calls:
# optional, so this plugin also loads on its own.
@pytest.hookimpl(optionalhook=True)
def pytest_sglang_worker_output(config: pytest.Config, output: dict[str, Any]) -> None:
    output[REPORT_OUTPUT_KEY] = worker_output(config)


@pytest.hookimpl(optionalhook=True)
def pytest_sglang_merge_worker_output(config: pytest.Config, output: dict[str, Any]) -> None:
    if output.get(REPORT_OUTPUT_KEY):
        merge_worker_output(config, output[REPORT_OUTPUT_KEY])


def worker_output(config: pytest.Config) -> dict[str, Any]:
    """What an xdist worker hands the controller, which writes the session-level reports."""
    report = config.stash.get(REPORT_KEY, None)
    if report is None:
        return {}
    return {
        "records": [dataclasses.asdict(r) for r in report.records],
        "facts": [dataclasses.asdict(f) for f in report.facts.values()],
        "models": list(report.models),
        "notes": list(report.notes),
    }


def merge_worker_output(config: pytest.Config, output: dict[str, Any]) -> None:
    """On the controller: add a worker's records, so sweeps span every worker's tests."""
    report = config.stash.get(REPORT_KEY, None)
    if report is None or not output:
        return
    report.records.extend(BenchRecord(**row) for row in output.get("records", []))
    for row in output.get("facts", []):
        report.facts.setdefault(row["host"], HostFacts(**row))
    report.models.extend(m for m in output.get("models", []) if m not in report.models)
    report.notes.extend(n for n in output.get("notes", []) if n not in report.notes)


def quality_rows_of(config: pytest.Config) -> list[dict[str, Any]]:
    """The ``sglang_quality`` evals of the session (kept on the session, with the workers')."""
    sglang = config.stash.get(SESSION_KEY, None)
    if sglang is None:
        return []
    return [dict(r) for r in [*sglang.quality, *sglang.merged.get("quality", [])]]


def pytest_configure(config: pytest.Config) -> None:
    alluredir = getattr(config.option, "allure_report_dir", None)
    html = config.getoption("sglang_html")
    hosts = config.getoption("sglang_host") or ["local"]
    config.stash[REPORT_KEY] = ReportSession(
        results_dir=Path(alluredir) if alluredir else None,
        html_path=Path(html) if html else None,
        host=hosts[0],
        comparisons=lambda: comparison_results_of(config),
        # the session (and its redactor, when it has one) is built by the main plugin
        session_redactor=lambda: getattr(config.stash.get(SESSION_KEY, None), "redactor", None),
        quality=lambda: quality_rows_of(config),
    )


def _report(item: pytest.Item) -> ReportSession | None:
    return item.config.stash.get(REPORT_KEY, None)


def _params(item: pytest.Item) -> dict[str, Any]:
    callspec = getattr(item, "callspec", None)
    return dict(callspec.params) if callspec is not None else {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    report = _report(item)
    if report is not None:
        report.setup(_params(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    report = _report(item)
    if report is None:
        return (yield)
    report.before_call(len(bench_results(item.config)))
    try:
        return (yield)
    finally:
        funcargs = getattr(item, "funcargs", {})
        deployment = funcargs.get("sglang_server")
        report.after_call(
            item.nodeid,
            _params(item),
            deployment if isinstance(deployment, Deployment) else None,
            bench_results(item.config),
        )


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    report = _report(item)
    if report is not None:
        report.teardown(item.nodeid)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    report = session.config.stash.get(REPORT_KEY, None)
    if report is None or hasattr(session.config, "workerinput"):
        return  # an xdist worker: the controller writes the session files from all workers
    sglang = session.config.stash.get(SESSION_KEY, None)
    deployments = sglang.summary()["deployments"] if sglang is not None else []
    report.finish(deployments)


@pytest.hookimpl(wrapper=True)
def pytest_terminal_summary(
    terminalreporter: Any, config: pytest.Config
) -> Generator[None, None, None]:
    """Where the reports are, last: after the tables the other plugins print."""
    yield
    report = config.stash.get(REPORT_KEY, None)
    if report is None:
        return
    for note in report.notes:
        terminalreporter.write_line(f"[sglang] {note}", yellow=True)
    if report.html_path is not None and report.html_path.exists():
        terminalreporter.write_line(f"[sglang] HTML summary: {report.html_path}")
