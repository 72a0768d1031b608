"""What the plugins share: the ``config.stash`` keys and the accessors of the session's results.

The entry plugin (:mod:`.plugin`) and its sub-plugins (benchmarks, baselines, quality, reports,
and the pytest-xdist one) keep their state in ``config.stash``. Each may import this module,
which imports none of them; they read each other's state only through it and call each other only
through hooks (:mod:`.hookspec`, :mod:`.baseline.hookspec`), never by importing one another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # types only: the modules that define them import nothing of the plugins
    from .baseline.gatekeeper import Gatekeeper
    from .baseline.gates import Gate
    from .report.collector import ReportSession
    from .session import SglangSession

__all__ = [
    "GATEKEEPER_KEY",
    "GATES_KEY",
    "QUALITY_KEY",
    "REPORT_KEY",
    "RESULTS_KEY",
    "SESSION_KEY",
    "all_bench_results",
    "all_quality_results",
    "bench_results",
    "comparison_results",
    "gatekeeper",
    "merge_summary",
    "quality_results",
    "summary_of",
]

#: The session's deployments, hosts and outcomes (set by the entry plugin's ``pytest_configure``).
SESSION_KEY: pytest.StashKey[SglangSession] = pytest.StashKey()
#: Every benchmark result of the session (the ``sglang_bench`` fixture appends).
RESULTS_KEY: pytest.StashKey[list[dict[str, Any]]] = pytest.StashKey()
#: The baselines' gatekeeper, which the ``sglang_bench`` fixture calls after each run.
GATEKEEPER_KEY: pytest.StashKey[Gatekeeper] = pytest.StashKey()
#: On a test item: the gates of its ``sglang_gate`` markers, by metric (set at setup).
GATES_KEY: pytest.StashKey[dict[str, Gate]] = pytest.StashKey()
#: The reports' collector (Allure, HTML summary).
REPORT_KEY: pytest.StashKey[ReportSession] = pytest.StashKey()
#: The ``sglang_quality`` fixture's rows when the entry plugin's session is absent.
QUALITY_KEY: pytest.StashKey[list[dict[str, Any]]] = pytest.StashKey()


def bench_results(config: pytest.Config) -> list[dict[str, Any]]:
    """Every benchmark result of the session, in run order (each is the ``extra_info`` dict)."""
    return config.stash.setdefault(RESULTS_KEY, [])


def quality_results(config: pytest.Config) -> list[dict[str, Any]]:
    """Every quality row of this process, in run order (also in the session summary)."""
    sglang = config.stash.get(SESSION_KEY, None)
    if sglang is not None:
        rows: list[dict[str, Any]] = sglang.quality
        return rows
    return config.stash.setdefault(QUALITY_KEY, [])


def all_bench_results(config: pytest.Config) -> list[dict[str, Any]]:
    """:func:`bench_results`, and on the xdist controller every worker's after its own (what
    the terminal's tables and verdicts read: the controller runs no benchmark itself)."""
    return [*bench_results(config), *_merged(config, "benchmarks")]


def all_quality_results(config: pytest.Config) -> list[dict[str, Any]]:
    """:func:`quality_results`, and on the xdist controller every worker's after its own."""
    return [*quality_results(config), *_merged(config, "quality")]


def _merged(config: pytest.Config, key: str) -> list[dict[str, Any]]:
    sglang = config.stash.get(SESSION_KEY, None)
    return list(sglang.merged.get(key, [])) if sglang is not None else []


def gatekeeper(config: pytest.Config) -> Gatekeeper | None:
    return config.stash.get(GATEKEEPER_KEY, None)


def comparison_results(config: pytest.Config) -> list[dict[str, Any]]:
    """Every baseline comparison of the session, in run order.

    Keys: nodeid, config_id, workload, metric, direction ("higher"/"lower": which is better),
    baseline, current, delta_pct, threshold_pct, verdict ("ok"/"regression"/"improvement"/
    "skipped"/"missing"), reason, p_value.
    """
    keeper = gatekeeper(config)
    return keeper.results if keeper is not None else []


def summary_of(config: pytest.Config) -> dict[str, Any]:
    """This process's whole summary, as ``--sglang-summary`` writes it (secrets redacted)."""
    return config.stash[SESSION_KEY].summary(bench_results(config), comparison_results(config))


def merge_summary(config: pytest.Config, worker_summary: dict[str, Any]) -> None:
    """On the xdist controller: add a worker's summary to the session's."""
    config.stash[SESSION_KEY].merge(worker_summary)
