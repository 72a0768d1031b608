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
from .records import BenchRecord
from .sweeps import Sweep
from .tables import (
    benchmarks_table,
    comparison_table,
    deployments_table,
    html_document,
    quality_table,
    sweep_table,
)

__all__ = ["render_summary", "write_summary"]


def _facts_list(facts: Sequence[HostFacts]) -> str:
    if not facts:
        return '<p class="muted">No deployment was made.</p>'
    items = []
    for f in facts:
        items.append(
            "<li>"
            + html.escape(
                f"{f.host}: {f.gpus}; driver {f.driver}; SGLang {f.sglang_version}; {f.model}"
            )
            + "</li>"
        )
    return f'<ul class="sglang-environment">{"".join(items)}</ul>'


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
) -> str:
    """The page; ``plots`` maps a sweep's slug to its PNG bytes (missing: no plot shown)."""
    parts = ["<h1>pytest-sglang summary</h1>", "<h2>Environment</h2>", _facts_list(facts)]
    parts += [f'<p class="muted">{html.escape(note, quote=False)}</p>' for note in notes]
    parts += ["<h2>Deployments</h2>", deployments_table(deployments)]
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
    if comparisons:
        parts.append(comparison_table(comparisons))
    else:
        parts.append('<p class="muted">No comparison: no baseline was given or found.</p>')
    if quality:
        parts += ["<h2>Quality</h2>", quality_table(quality)]
    parts += ["<h2>Benchmarks</h2>", benchmarks_table(records)]
    return html_document("pytest-sglang summary", "\n".join(parts))


def write_summary(path: Path, page: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
