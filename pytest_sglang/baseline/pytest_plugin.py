"""pytest hooks for baselines and gates: options, the ``sglang_gate`` marker, the table.

The work is done by :class:`~.gatekeeper.Gatekeeper`, kept in ``config.stash`` under
:data:`~pytest_sglang.stash.GATEKEEPER_KEY`; the ``sglang_bench`` fixture calls it after each
run, with the test's marker gates that setup keeps in ``item.stash`` under
:data:`~pytest_sglang.stash.GATES_KEY`. Every comparison row is available to other plugins with
:func:`comparison_results`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..options import number
from ..stash import GATEKEEPER_KEY, GATES_KEY, comparison_results, gatekeeper
from . import hookspec
from .fingerprint import collect_fingerprint
from .gatekeeper import Gatekeeper, fmt
from .gates import (
    DEFAULT_ALPHA,
    DEFAULT_GATES,
    Gate,
    merge_gates,
    parse_gate,
    parse_gate_option,
)
from .store import BaselineStore

if TYPE_CHECKING:
    from ..deployment import Deployment

__all__ = ["GATEKEEPER_KEY", "GATE_MARKER", "comparison_results", "gatekeeper", "marker_gates"]

GATE_MARKER = "sglang_gate"


# -- options ------------------------------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang", "SGLang server deployment and benchmarking")
    group.addoption(
        "--sglang-baseline-dir",
        default="baselines",
        metavar="PATH",
        help="Directory of the baseline JSON files (relative to the rootdir). Default: %(default)r",
    )
    group.addoption(
        "--sglang-baseline-save",
        action="store_true",
        default=False,
        help="Append this run to the baselines (keeping the last --sglang-baseline-history "
        "runs); a run that regressed is not saved. Default: %(default)r",
    )
    group.addoption(
        "--sglang-baseline-history",
        type=number(int, minimum=1),
        default=10,
        metavar="N",
        help="Runs kept per baseline by --sglang-baseline-save. Default: %(default)r",
    )
    group.addoption(
        "--sglang-baseline-require",
        action="store_true",
        default=False,
        help="Fail a benchmark whose baseline is missing or was measured on another host "
        "fingerprint (for CI). Default: %(default)r",
    )
    group.addoption(
        "--sglang-gate",
        action="append",
        type=parse_gate_option,
        default=[],
        metavar="METRIC:+-N%",
        help="Gate a metric: output_throughput:-5%%, median_ttft_ms:+10%%, p99_itl_ms:20%% (its "
        "own direction) or METRIC:off. Repeatable; overrides the defaults "
        + ", ".join(f"{g.metric}:{g.threshold_pct:g}%%" for g in DEFAULT_GATES.values())
        + ". Default: %(default)r",
    )
    group.addoption(
        "--sglang-gate-alpha",
        type=number(float, above=0, below=1),
        default=DEFAULT_ALPHA,
        metavar="P",
        help="Significance level of the one-sided t-test a regression must pass. "
        "Default: %(default)r",
    )
    group.addoption(
        "--sglang-confirm",
        type=number(int, minimum=0),
        default=1,
        metavar="N",
        help="Re-run a benchmark that regressed up to N times (pooling the rounds) before "
        "failing it. Default: %(default)r",
    )


def _default_fingerprint(config: pytest.Config, deployment: Deployment) -> dict[str, Any]:
    fp = config.hook.pytest_sglang_generate_fingerprint(config=config, deployment=deployment)
    fp = dict(fp or {})
    config.hook.pytest_sglang_update_fingerprint(
        config=config, deployment=deployment, fingerprint=fp
    )
    return fp


@pytest.hookimpl(trylast=True)
def pytest_sglang_generate_fingerprint(
    config: pytest.Config, deployment: Deployment
) -> dict[str, Any]:
    return collect_fingerprint(deployment)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{GATE_MARKER}(METRIC='N%', ...): per-test baseline gates, e.g. "
        "output_throughput='-5%', median_ttft_ms='+10%', p99_itl_ms='off'.",
    )
    root = Path(config.getoption("sglang_baseline_dir")).expanduser()
    if not root.is_absolute():
        root = config.rootpath / root
    try:
        from pytest_benchmark import __version__ as pb_version
    except ImportError:  # pragma: no cover - a dependency
        pb_version = ""
    config.stash[GATEKEEPER_KEY] = Gatekeeper(
        BaselineStore(root, history=config.getoption("sglang_baseline_history")),
        gates=merge_gates(DEFAULT_GATES, config.getoption("sglang_gate")),
        fingerprint_of=lambda deployment: _default_fingerprint(config, deployment),
        save=config.getoption("sglang_baseline_save"),
        require=config.getoption("sglang_baseline_require"),
        confirm=config.getoption("sglang_confirm"),
        alpha=config.getoption("sglang_gate_alpha"),
        version=str(pb_version),
    )


def marker_gates(item: pytest.Item) -> list[Gate]:
    """The gates of the item's ``sglang_gate`` markers (closest last); ValueError if invalid."""
    gates: list[Gate] = []
    for marker in reversed(list(item.iter_markers(GATE_MARKER))):
        if marker.args:
            raise ValueError(
                f"@pytest.mark.{GATE_MARKER} takes keyword arguments METRIC='N%', got "
                f"positional {list(marker.args)!r}"
            )
        for metric, spec in marker.kwargs.items():
            gates.append(parse_gate(metric, str(spec)))
    return gates


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A bad ``sglang_gate`` marker fails the test here; the good ones are kept for the
    ``sglang_bench`` fixture, by metric (the closest marker wins)."""
    try:
        item.stash[GATES_KEY] = {g.metric: g for g in marker_gates(item)}
    except ValueError as exc:
        pytest.fail(f"@pytest.mark.{GATE_MARKER}: {exc}", pytrace=False)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    rows = comparison_results(config)
    if not rows:
        return
    tr = terminalreporter
    tr.section("sglang baseline comparisons")
    tr.write_line(
        f"{'test':<36} {'metric':<20} {'baseline':>10} {'current':>10} {'delta':>8}  verdict"
    )
    notes: list[str] = []
    for r in rows:
        test = r["nodeid"].rsplit("::", 1)[-1]
        delta = "-" if r["delta_pct"] is None else f"{r['delta_pct']:+.1f}%"
        markup = {"red": True} if r["verdict"] == "regression" else {}
        if r["verdict"] == "improvement":
            markup = {"green": True}
        tr.write_line(
            f"{test[:36]:<36} {r['metric'][:20]:<20} {fmt(r['baseline']):>10} "
            f"{fmt(r['current']):>10} {delta:>8}  {r['verdict']}",
            **markup,
        )
        if r["verdict"] in ("skipped", "missing", "regression"):
            note = f"{test}: {r['reason']}"
            if note not in notes:
                notes.append(note)
    for note in notes:
        tr.write_line(note)
