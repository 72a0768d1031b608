"""pytest hooks for baselines and gates: options, the ``sglang_gate`` marker, the table.

The work is done by :class:`~.gatekeeper.Gatekeeper`, kept in ``config.stash`` under
:data:`~pytest_sglang.stash.GATEKEEPER_KEY`; the ``sglang_bench`` fixture calls it after each
run, with the test's marker gates that setup keeps in ``item.stash`` under
:data:`~pytest_sglang.stash.GATES_KEY`. Every comparison row is available to other plugins with
:func:`comparison_results`.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..options import number
from ..stash import GATEKEEPER_KEY, GATES_KEY, SESSION_KEY, comparison_results, gatekeeper
from ..terminal import Column, TextTable, display_test_ids, write_lines, write_table
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
from .upgrade import setting_line

if TYPE_CHECKING:
    from ..lifecycle.deployment import Deployment

__all__ = ["GATEKEEPER_KEY", "GATE_MARKER", "comparison_results", "gatekeeper", "marker_gates"]

GATE_MARKER = "sglang_gate"
#: The xdist ``workerinput`` entry that carries the controller's session token.
_SESSION_INPUT = "sglang_baseline_session"


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
        help="Append this run to the baselines (every run is kept); a run that regressed is "
        "not saved. Default: %(default)r",
    )
    group.addoption(
        "--sglang-baseline-history",
        type=number(int, minimum=1),
        default=10,
        metavar="N",
        help="A benchmark is compared with the last N saved runs of its baseline (every run is "
        "kept, for 'python -m pytest_sglang.baseline history'). Default: %(default)r",
    )
    group.addoption(
        "--sglang-baseline-accept-upgrade",
        action="store_true",
        default=False,
        help="Save the runs that were compared across a software upgrade (another SGLang, "
        "torch, driver... on the same hardware) as the new release's baseline even when they "
        "regressed, recording who accepted which versions and figures. Default: %(default)r",
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
        session=str(getattr(config, "workerinput", {}).get(_SESSION_INPUT, "")),
        accept_upgrade=config.getoption("sglang_baseline_accept_upgrade"),
        commit_info=_commit_info,
    )


def _commit_info() -> dict[str, Any]:
    """The tests' commit, as pytest-benchmark records it (id, branch, dirty, time)."""
    try:
        from pytest_benchmark.utils import get_commit_info

        info = get_commit_info()  # type: ignore[no-untyped-call]
    except Exception:  # no git, or a broken checkout: a baseline is still worth saving
        return {}
    keep = ("id", "branch", "dirty", "time")
    return {k: info[k] for k in keep if k in info} if isinstance(info, dict) else {}


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Each xdist worker stamps its saves with the controller's session token, so that no
    worker gates a workload against what another worker of this session saved."""
    keeper = gatekeeper(node.config)
    if keeper is not None:
        node.workerinput[_SESSION_INPUT] = keeper.session


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


@pytest.hookimpl(trylast=True)  # after the deployments and benchmarks it judges
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    rows = comparison_results(config)
    sglang = config.stash.get(SESSION_KEY, None)
    if sglang is not None:  # on the xdist controller: what the workers compared
        rows = [*rows, *sglang.merged.get("comparisons", [])]
    keeper = gatekeeper(config)
    if not rows or keeper is None:
        return
    tr = terminalreporter
    names = display_test_ids(r["nodeid"] for r in rows)
    compared = [r for r in rows if r["verdict"] != "missing"]
    missing = list(dict.fromkeys(r["nodeid"] for r in rows if r["verdict"] == "missing"))
    saved = list(dict.fromkeys(r["nodeid"] for r in rows if r.get("saved")))
    where = _shown_path(keeper.store.root, config)
    write_table(tr, "sglang baseline comparisons", comparisons_table(compared, names))
    notes = verdict_notes(compared, names)
    unsaved = [n for n in missing if n not in saved]
    if unsaved:
        if not compared:
            tr.section("sglang baselines")
        which = "the" if not compared else "these"
        write_lines(
            tr,
            f"no baselines yet for {which} {_count(len(unsaved), 'benchmark')} in {where}"
            + ("" if not compared else ": " + ", ".join(names[n] for n in unsaved))
            + f"; record them with: {_save_command(config)}",
        )
    for note in notes:
        write_lines(tr, note)
    for line, markup in upgrade_lines(compared, names):
        write_lines(tr, line, **markup)
    if saved:
        if not compared and not unsaved:
            tr.section("sglang baselines")
        write_lines(tr, f"saved {_count(len(saved), 'baseline')} to {where}", green=True)


def comparisons_table(rows: list[dict[str, Any]], names: dict[str, str]) -> TextTable:
    """One row per (test, metric) compared; the test's full id on its first row only."""
    table = TextTable(
        [
            Column("test"),
            Column("metric"),
            Column("baseline", ">"),
            Column("current", ">"),
            Column("change", ">"),
            Column("verdict"),
        ]
    )
    previous = None
    for r in rows:
        test = names[r["nodeid"]] if r["nodeid"] != previous else ""
        previous = r["nodeid"]
        delta = "-" if r["delta_pct"] is None else f"{r['delta_pct']:+.1f}%"
        colour = {
            "regression": {"red": True},
            "improvement": {"green": True},
            "accepted": {"yellow": True},
        }
        table.add(
            test,
            r["metric"],
            fmt(r["baseline"]),
            fmt(r["current"]),
            delta,
            r["verdict"],
            **colour.get(r["verdict"], {}),
        )
    return table


def verdict_notes(rows: list[dict[str, Any]], names: dict[str, str]) -> list[str]:
    """Why each comparison that is not plainly ok came out as it did, naming test and metric."""
    notes: list[str] = []
    for r in rows:
        if r["verdict"] not in ("skipped", "regression"):
            continue
        reason = str(r["reason"]).removeprefix(f"{r['metric']}: ")
        note = f"{names[r['nodeid']]} {r['metric']}: {reason}"
        if note not in notes:
            notes.append(note)
    return notes


#: Settings in effect listed per upgrade in the terminal; the summary JSON keeps them all.
SHOWN_SETTINGS = 12


def upgrade_lines(
    rows: list[dict[str, Any]], names: dict[str, str]
) -> list[tuple[str, dict[str, bool]]]:
    """Per test compared across an upgrade: its one line, then the settings in effect that
    changed ("same command line, different settings"), each on its own indented line."""
    out: list[tuple[str, dict[str, bool]]] = []
    seen: set[str] = set()
    for r in rows:
        upgrade = r.get("upgrade")
        if not isinstance(upgrade, dict) or r["nodeid"] in seen:
            continue
        seen.add(r["nodeid"])
        verdicts = {x["verdict"] for x in rows if x["nodeid"] == r["nodeid"]}
        markup = {"red": True} if "regression" in verdicts else {"bold": True}
        out.append((f"{names[r['nodeid']]} upgrade: {upgrade['summary']}", markup))
        settings = upgrade.get("settings_changed") or []
        for change in settings[:SHOWN_SETTINGS]:
            out.append((f"    {setting_line(change)}", {}))
        if len(settings) > SHOWN_SETTINGS:
            more = len(settings) - SHOWN_SETTINGS
            out.append((f"    ... {more} more in the summary JSON (--sglang-summary)", {}))
    return out


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _shown_path(path: Path, config: pytest.Config) -> str:
    """The path as the user would type it: relative to the invocation directory when inside."""
    try:
        shown = path.relative_to(config.invocation_params.dir)
    except ValueError:
        return f"{path}/"
    return f"{shown}/"


def _save_command(config: pytest.Config) -> str:
    """This run's own command line with ``--sglang-baseline-save`` added."""
    args = [a for a in config.invocation_params.args if a != "--sglang-baseline-save"]
    return shlex.join(["pytest", *args, "--sglang-baseline-save"])
