"""The single-file HTML summary (``--sglang-html PATH``): no server, no Allure, no network.

Why one file: a reviewer opens it from a CI artifact or an e-mail. The CSS is inline and the
plots are PNG data URIs, so the page references nothing outside itself.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .environment import HostFacts
from .records import BenchRecord, load_paths
from .sweeps import Sweep
from .tables import (
    benchmarks_table,
    comparison_table,
    deployments_table,
    html_document,
    quality_table,
    sweep_table,
)
from .tuning import Verdict, titles, tuning_html

__all__ = ["render_summary", "write_summary"]


def _facts_list(facts: Sequence[HostFacts], bench_from: Mapping[str, str]) -> str:
    if not facts:
        return '<p class="muted">No deployment was made.</p>'
    items = []
    for f in facts:
        load = f"; load from: {bench_from[f.host]}" if f.host in bench_from else ""
        items.append(
            "<li>"
            + html.escape(
                f"{f.host}: {f.gpus}; driver {f.driver}; SGLang {f.sglang_version}; {f.model}"
                + load
            )
            + "</li>"
        )
    return f'<ul class="sglang-environment">{"".join(items)}</ul>'


def _comparisons(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The compared rows as a table; the benchmarks without a baseline yet as one sentence
    (a first run's table would be all dashes, a row per metric saying the same thing)."""
    compared = [r for r in rows if r.get("verdict") != "missing"]
    missing = [str(r.get("nodeid")) for r in rows if r.get("verdict") == "missing"]
    missing = list(dict.fromkeys(missing))
    parts = [comparison_table(compared)] if compared else []
    if missing:
        saved = {str(r.get("nodeid")) for r in rows if r.get("saved")}
        tests = ", ".join(f"<code>{html.escape(n.rsplit('::', 1)[-1])}</code>" for n in missing)
        if saved.issuperset(missing):
            what = f"No baseline yet for {len(missing)} benchmark(s); this run saved them: "
        else:
            what = (
                f"No baseline yet for {len(missing)} benchmark(s); record them with "
                "<code>--sglang-baseline-save</code>: "
            )
        parts.append(f'<p class="sglang-missing-baselines">{what}{tests}.</p>')
    if not parts:
        parts.append('<p class="muted">No comparison: no baseline was given or found.</p>')
    return parts


def render_summary(
    *,
    facts: Sequence[HostFacts],
    deployments: Sequence[Mapping[str, Any]],
    sweeps: Sequence[Sweep],
    plots: Mapping[str, bytes],
    comparisons: Sequence[Mapping[str, Any]],
    records: Sequence[BenchRecord],
    notes: Sequence[str] = (),
    quality: Sequence[Mapping[str, Any]] = (),
    tuning: Sequence[tuple[Verdict, bytes | None]] = (),
) -> str:
    """The page; ``plots`` maps a sweep's slug to its PNG bytes (missing: no plot shown)."""
    facts_list = _facts_list(facts, load_paths(records))
    parts = ["<h1>pytest-sglang summary</h1>", "<h2>Environment</h2>", facts_list]
    parts += [f'<p class="muted">{html.escape(note, quote=False)}</p>' for note in notes]
    parts += ["<h2>Deployments</h2>", deployments_table(deployments)]
    if tuning:
        parts += ["<h2>Tuning verdict</h2>", tuning_html([v for v, _ in tuning])]
        for (_verdict, png), title in zip(tuning, titles([v for v, _ in tuning])):
            if png is not None:
                data = base64.b64encode(png).decode("ascii")
                alt = html.escape(f"plot: tuning {title}", quote=True)
                parts.append(f'<img class="plot" alt="{alt}" src="data:image/png;base64,{data}">')
    parts.append("<h2>Sweeps</h2>")
    if not sweeps:
        parts.append('<p class="muted">No sweep: no test ran on two or more points.</p>')
    for sweep in sweeps:
        parts.append(f'<h3 id="sweep-{html.escape(sweep.slug)}">{html.escape(sweep.title)}</h3>')
        png = plots.get(sweep.slug)
        if png is not None:
            data = base64.b64encode(png).decode("ascii")
            alt = html.escape(f"plot: {sweep.title}", quote=True)
            parts.append(f'<img class="plot" alt="{alt}" src="data:image/png;base64,{data}">')
        parts.append(sweep_table(sweep))
    parts.append("<h2>Baseline comparisons</h2>")
    parts += _comparisons(comparisons)
    if quality:
        parts += ["<h2>Quality</h2>", quality_table(quality)]
    parts += ["<h2>Benchmarks</h2>", benchmarks_table(records)]
    return html_document("pytest-sglang summary", "\n".join(parts))


def write_summary(path: Path, page: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
