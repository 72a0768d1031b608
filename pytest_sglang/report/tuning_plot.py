"""The tuning plot: throughput against the SLO's latency, one curve per config, one chart.

Each curve is a config's search probes in order of throughput (filled markers passed the SLO,
hollow ones did not); the Pareto frontier over the passing probes of every config is drawn
over them as a thick grey step line, so the configs that define the best trade-off stand out.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from .config_names import config_key
from .plots import _pyplot
from .tuning import Verdict, curve_points, frontier

__all__ = ["plot_tuning"]


def plot_tuning(verdict: Verdict, results: Sequence[Mapping[str, Any]]) -> bytes | None:
    """A PNG of the search curves behind a ``max-rate`` verdict (None: nothing to plot): the
    results of its workload only, one curve per config (digest), named as its ranking names it."""
    labels = {name: r.label for r in verdict.ranking for name in r.names or [r.config_id]}
    by_config: dict[str, tuple[str, list[tuple[float, float, bool]]]] = {}
    for info in results:
        if (
            info.get("workload") == verdict.workload
            and str(info.get("workload_key", "")) == verdict.workload_key
            and "search" in info
        ):
            name = str(info.get("config_id"))
            by_config[config_key(info)] = (labels.get(name, name), curve_points(info))
    curves = dict(by_config.values())
    curves = {cid: pts for cid, pts in curves.items() if pts}
    if not curves:
        return None
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(7, 4.5), dpi=100)
    try:
        for config_id, points in curves.items():
            points = sorted(points)
            (line,) = axis.plot([p[0] for p in points], [p[1] for p in points], label=config_id)
            for tok_s, latency, passed in points:
                axis.plot(
                    tok_s,
                    latency,
                    marker="o",
                    color=line.get_color(),
                    markerfacecolor=line.get_color() if passed else "none",
                )
        best = sorted(
            frontier((cid, p[0], p[1]) for cid, pts in curves.items() for p in pts if p[2]),
            key=lambda p: p[1],
        )
        if best:
            axis.plot(
                [p[1] for p in best],
                [p[2] for p in best],
                color="grey",
                linewidth=4,
                alpha=0.4,
                drawstyle="steps-post",
                label="Pareto frontier",
            )
        axis.set_xlabel("output tok/s")
        axis.set_ylabel(f"{verdict.slo.split('<=')[0] or 'latency'} (ms)")
        axis.set_title(f"{verdict.workload}: throughput vs latency under {verdict.slo}")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize="small")
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        return buffer.getvalue()
    finally:
        plt.close(fig)
