"""Tables for reports: HTML (Allure attachments and the summary page) and CSV.

Every value is escaped; the CSS is inline so that a fragment renders the same in Allure's
attachment viewer and in the single-file summary. Tables carry a class (``sglang-sweep``,
``sglang-comparisons``, ``sglang-deployments``, ``sglang-benchmarks``) that the browser checks
and users' own tooling can find.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..terminal import display_test_ids
from .config_names import label
from .records import LATENCY_METRICS, BenchRecord, scalar_metrics
from .sweeps import Sweep

__all__ = [
    "CSS",
    "bench_csv",
    "benchmarks_table",
    "comparison_table",
    "deployments_table",
    "html_document",
    "quality_table",
    "sweep_table",
    "upgrades_html",
]

CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f2f2f2; } td.text, th.text { text-align: left; white-space: nowrap; }
td.text:last-child { white-space: normal; min-width: 18em; }
tr.regression td { background: #fde2e1; } tr.improvement td { background: #e3f6e5; }
tr.accepted td { background: #fff4d6; }
table.sglang-upgrade-diff td.text { white-space: normal; max-width: 40em; overflow-wrap: anywhere; }
tr.failed td { background: #fde2e1; }
img.plot { max-width: 100%; border: 1px solid #ddd; }
.muted { color: #777; }
""".strip()

_COMPARISON_COLUMNS: tuple[tuple[str, str], ...] = (
    ("nodeid", "test"),
    ("config_id", "config"),
    ("workload", "workload"),
    ("metric", "metric"),
    ("direction", "better"),
    ("baseline", "baseline"),
    ("current", "current"),
    ("delta_pct", "change %"),
    ("threshold_pct", "threshold %"),
    ("p_value", "p-value"),
    ("verdict", "verdict"),
    ("reason", "reason"),
)
_TEXT_COLUMNS = {"nodeid", "config_id", "workload", "metric", "direction", "verdict", "reason"}

_SWEEP_METRICS: tuple[tuple[str, str], ...] = (
    ("output_throughput", "out tok/s"),
    ("total_throughput", "total tok/s"),
    *((m, m.replace("_ms", " ms").replace("_", " ")) for m in LATENCY_METRICS),
    ("accept_length", "accept len"),
)
#: Shown when a run has them (a server that reports cached tokens): prefix-cache figures.
_CACHE_METRICS: tuple[tuple[str, str], ...] = (
    ("cache_hit_rate", "cache hit rate"),
    ("server_cache_hit_rate", "server cache hit rate"),
)


def _metrics(infos: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The figures' columns: the sweep metrics, and each cache figure some run has."""
    rows = list(infos)
    cache = [(k, label) for k, label in _CACHE_METRICS if any(r.get(k) is not None for r in rows)]
    return [*_SWEEP_METRICS, *cache]


def fmt(value: Any) -> str:
    """Numbers to 3 significant decimals at most; None as a dash."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:.1f}"
        if abs(value) >= 1:
            return f"{value:.2f}"
        return f"{value:.3g}"
    return str(value)


def _cell(value: Any, *, text: bool = False, title: str | None = None) -> str:
    cls = ' class="text"' if text else ""
    hover = f' title="{html.escape(title, quote=True)}"' if title else ""
    return f"<td{cls}{hover}>{html.escape(fmt(value))}</td>"


def _test_cells(nodeids: Sequence[str]) -> dict[str, str]:
    """Node id -> its table cell: the test's name with parameters (the whole node id where two
    files share a name, and on hover): a path-long first column pushes the verdict off-screen."""
    shown = display_test_ids(nodeids)
    return {n: _cell(shown[n], text=True, title=n if shown[n] != n else None) for n in shown}


def _head(labels: Iterable[tuple[str, bool]]) -> str:
    text_class = ' class="text"'
    cells = "".join(
        f"<th{text_class if text else ''}>{html.escape(label)}</th>" for label, text in labels
    )
    return f"<thead><tr>{cells}</tr></thead>"


def comparison_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The baseline comparisons, one row per (test, metric); the verdict colours the row.

    A column no row has a value in is left out: without a baseline (a first run) the figures
    and p-values would be columns of dashes hiding the reason, the one cell that says something.
    """
    columns = [
        (key, label)
        for key, label in _COMPARISON_COLUMNS
        if key in _TEXT_COLUMNS or any(row.get(key) is not None for row in rows)
    ]
    head = _head((label, key in _TEXT_COLUMNS) for key, label in columns)
    tests = _test_cells([str(row.get("nodeid")) for row in rows])
    body = []
    for row in rows:
        verdict = str(row.get("verdict", "")).lower().replace(" ", "-")
        cls = html.escape(verdict, quote=True)
        cells = "".join(
            tests[str(row.get("nodeid"))]
            if key == "nodeid"
            else _cell(row.get(key), text=key in _TEXT_COLUMNS)
            for key, _ in columns
        )
        body.append(f'<tr class="{cls}">{cells}</tr>')
    table = f'<table class="sglang-comparisons">{head}<tbody>{"".join(body)}</tbody></table>'
    return table + upgrades_html(rows)


def upgrades_html(rows: Sequence[Mapping[str, Any]]) -> str:
    """Per test compared across an upgrade: its one-line summary, then the software and the
    settings in effect that changed, side by side ("same command line, different settings")."""
    parts: list[str] = []
    seen: set[str] = set()
    shown = display_test_ids(str(r.get("nodeid")) for r in rows)
    for row in rows:
        upgrade = row.get("upgrade")
        nodeid = str(row.get("nodeid"))
        if not isinstance(upgrade, Mapping) or nodeid in seen:
            continue
        seen.add(nodeid)
        test = html.escape(shown[nodeid])
        summary = html.escape(str(upgrade.get("summary", "")))
        changes = [
            ("software", str(field), before, upgrade.get("to", {}).get(field))
            for field, before in dict(upgrade.get("from", {})).items()
        ]
        changes += [
            (str(c.get("source", "")), str(c.get("name", "")), c.get("before"), c.get("after"))
            for c in upgrade.get("settings_changed") or []
        ]
        body = "".join(
            f"<tr>{_cell(kind, text=True)}{_cell(name, text=True)}"
            f"{_cell(before, text=True)}{_cell(after, text=True)}</tr>"
            for kind, name, before, after in changes
        )
        head = _head([("what", True), ("name", True), ("baseline", True), ("this run", True)])
        parts.append(
            f'<div class="sglang-upgrade"><p><code>{test}</code> upgrade: {summary}</p>'
            f'<table class="sglang-upgrade-diff">{head}<tbody>{body}</tbody></table></div>'
        )
    return "".join(parts)


def sweep_table(sweep: Sweep) -> str:
    """One row per sweep point: the parameter's value, the config and its figures."""
    metrics = _metrics(point.record.info for point in sweep.points)
    labels = [(sweep.parameter, True), ("config", True), ("workload", True)]
    labels += [(label, False) for _, label in metrics]
    labels += [("completed", False), ("failed", False)]
    body = []
    for point in sweep.points:
        info = point.record.info
        cells = _cell(point.label, text=True)
        cells += _cell(point.config, text=True) + _cell(point.record.workload, text=True)
        cells += "".join(_cell(info.get(metric)) for metric, _ in metrics)
        cells += _cell(info.get("completed")) + _cell(info.get("failed"))
        cls = ' class="failed"' if info.get("failed") else ""
        body.append(f"<tr{cls}>{cells}</tr>")
    return f'<table class="sglang-sweep">{_head(labels)}<tbody>{"".join(body)}</tbody></table>'


def benchmarks_table(records: Sequence[BenchRecord]) -> str:
    """Every benchmark run of the session, in run order; a "disturbed" column (the rounds the
    stall check repeated, and why) when any run had one, its row marked when it was not gated."""
    metrics = _metrics(record.info for record in records)
    labels = [("test", True), ("host", True), ("config", True), ("workload", True)]
    labels += [(label, False) for _, label in metrics]
    labels += [("failed", False)]
    disturbed = any(record.info.get("disturbed") for record in records)
    labels += [("disturbed", True)] if disturbed else []
    tests = _test_cells([record.nodeid for record in records])
    body = []
    for record in records:
        info = record.info
        cells = tests[record.nodeid] + "".join(
            _cell(v, text=True) for v in (record.host, record.config_id, record.workload)
        )
        cells += "".join(_cell(info.get(metric)) for metric, _ in metrics)
        cells += _cell(info.get("failed"))
        if disturbed:
            cells += _cell("; ".join(info.get("disturbed") or []), text=True)
        cls = ' class="failed"' if info.get("gated") is False else ""
        body.append(f"<tr{cls}>{cells}</tr>")
    return f'<table class="sglang-benchmarks">{_head(labels)}<tbody>{"".join(body)}</tbody></table>'


def deployments_table(deployments: Sequence[Mapping[str, Any]]) -> str:
    """The session's deployments (``SglangSession.summary()["deployments"]``); a deployment
    that tests asked for under several names (one config) shows them all."""
    # why a deployment failed: columns only when one did
    columns = [
        c
        for c in ("host", "config_id", "outcome", "ready_s", "reason", "message")
        if c not in ("reason", "message") or any(r.get(c) for r in deployments)
    ]
    text = {"host", "config_id", "outcome", "reason", "message"}
    head = _head((c.replace("_", " "), c in text) for c in columns)
    body = []
    for row in deployments:
        cls = ' class="failed"' if row.get("outcome") == "failed" else ""
        shown = {**row, "config_id": label(row.get("names") or [row.get("config_id", "?")])}
        cells = "".join(_cell(shown.get(c), text=c in text) for c in columns)
        body.append(f"<tr{cls}>{cells}</tr>")
    return f'<table class="sglang-deployments">{head}<tbody>{"".join(body)}</tbody></table>'


def html_document(title: str, body: str) -> str:
    """A complete, self-contained HTML page (inline CSS, no external resources)."""
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


def bench_csv(info: Mapping[str, Any]) -> str:
    """A benchmark's flat figures as a two-line CSV (header, values)."""
    flat = scalar_metrics(dict(info))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(list(flat))
    writer.writerow(["" if v is None else v for v in flat.values()])
    return buffer.getvalue()


_QUALITY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("config_id", "config"),
    ("metric", "metric"),
    ("subject", "task / reference"),
    ("value", "value"),
    ("ci_low", "95% CI low"),
    ("ci_high", "95% CI high"),
    ("n", "items"),
    ("noise_floor", "noise floor"),
    ("output_throughput", "out tok/s"),
    ("verdict", "verdict"),
    ("reason", "reason"),
)


def quality_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The quality evals next to each config's best output throughput (``sglang-quality``); a
    row that fails quality is coloured as a regression."""
    text = {"config_id", "metric", "subject", "verdict", "reason"}
    head = _head((label, key in text) for key, label in _QUALITY_COLUMNS)
    body = []
    for row in rows:
        cls = "" if row.get("holds", True) else ' class="regression"'
        cells = "".join(_cell(row.get(key), text=key in text) for key, _ in _QUALITY_COLUMNS)
        body.append(f"<tr{cls}>{cells}</tr>")
    return f'<table class="sglang-quality">{head}<tbody>{"".join(body)}</tbody></table>'
