"""The ``sglang tuning`` verdict in the terminal, and the ``--sglang-objective`` it ranks by.

The verdict itself is :mod:`.tuning` (pure functions over the session's benchmark results); the
summary JSON (``tuning``), the HTML summary and the Allure "sglang sweep summary" carry the same
verdicts, ranked by the same objective.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..quality.verdict import quality_holds
from ..stash import REPORT_KEY, SESSION_KEY, all_bench_results, all_quality_results
from ..terminal import write_table
from .tuning import (
    DEFAULT_OBJECTIVE,
    OBJECTIVES,
    best_per_workload,
    tuning_verdicts,
    verdict_lines,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang", "SGLang server deployment and benchmarking")
    group.addoption(
        "--sglang-objective",
        choices=OBJECTIVES,
        default=DEFAULT_OBJECTIVE,
        help="What the tuning verdict ranks a sweep's configs by: max-rate (the highest "
        "sustainable request rate under the SLO, from Workload.max_rate), single-stream "
        "(tok/s), goodput (at a fixed rate) or per-gpu (tok/s per GPU). Default: %(default)s",
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    objective = str(config.getoption("sglang_objective", DEFAULT_OBJECTIVE))
    session = config.stash.get(SESSION_KEY, None)
    if session is not None:
        session.objective = objective
    report = config.stash.get(REPORT_KEY, None)
    if report is not None:
        report.objective = objective


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    objective = str(config.getoption("sglang_objective", DEFAULT_OBJECTIVE))
    holds = quality_holds(all_quality_results(config))
    verdicts = tuning_verdicts(all_bench_results(config), objective, holds)
    if not verdicts:
        return
    terminalreporter.section("sglang tuning")
    for line in verdict_lines(verdicts):
        terminalreporter.write_line(line)
    for name in OBJECTIVES:  # the best config per workload (load level), one table each
        write_table(
            terminalreporter, f"sglang best per workload: {name}", best_per_workload(verdicts, name)
        )
