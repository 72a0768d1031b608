"""Sweep plots: throughput and latency against the swept parameter, as PNG bytes.

matplotlib is heavy and only reports need it, so it is an optional extra (``report``), imported
on first use with the non-interactive Agg backend; without it :func:`plot_sweep` raises
:class:`PlotsUnavailable` with the install command, and the rest of the report still works.
"""

from __future__ import annotations

import importlib
import io
from typing import Any

from ..errors import SglangError
from .sweeps import Sweep

__all__ = ["INSTALL_HINT", "PlotsUnavailable", "plot_sweep"]

INSTALL_HINT = "sweep plots need matplotlib: pip install 'pytest-sglang[report]'"

#: (metric, legend label) for the latency panel; missing figures are left out.
_LATENCY_SERIES: tuple[tuple[str, str], ...] = (
    ("median_ttft_ms", "TTFT p50"),
    ("p99_ttft_ms", "TTFT p99"),
    ("median_itl_ms", "ITL p50"),
    ("mean_tpot_ms", "TPOT mean"),
)


class PlotsUnavailable(SglangError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        matplotlib = importlib.import_module("matplotlib")
    except ImportError:
        raise PlotsUnavailable(INSTALL_HINT) from None
    matplotlib.use("Agg", force=True)
    return importlib.import_module("matplotlib.pyplot")


def _log_axis(xs: list[float]) -> bool:
    """A log axis for values that span a factor of 8 or more (concurrency 1, 2, 4 ... 64): on a
    linear one the small values, where most of the change is, crowd into the left edge."""
    return min(xs) > 0 and max(xs) / min(xs) >= 8


def plot_sweep(sweep: Sweep) -> bytes:
    """A two-panel PNG: output tok/s (left) and latencies in ms (right) per sweep point."""
    plt = _pyplot()
    xs: list[Any] = (
        [float(p.value) for p in sweep.points] if sweep.numeric else list(range(len(sweep.points)))
    )
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), dpi=100)
    try:
        tok_s = [p.record.metric("output_throughput") for p in sweep.points]
        left.plot(xs, [v if v is not None else float("nan") for v in tok_s], marker="o")
        left.set_title("Output throughput")
        left.set_ylabel("tok/s")
        for metric, label in _LATENCY_SERIES:
            values = [p.record.metric(metric) for p in sweep.points]
            if all(v is None for v in values):
                continue
            ys = [v if v is not None else float("nan") for v in values]
            right.plot(xs, ys, marker="o", label=label)
        right.set_title("Latency")
        right.set_ylabel("ms")
        if right.get_legend_handles_labels()[0]:
            right.legend(fontsize="small")
        log = _log_axis(xs) if sweep.numeric else False
        for axis in (left, right):
            axis.set_xlabel(sweep.parameter + (" (log scale)" if log else ""))
            axis.grid(True, alpha=0.3)
            if log:
                axis.set_xscale("log", base=2)
                axis.set_xticks(xs, [p.label for p in sweep.points])
                axis.minorticks_off()
            elif sweep.numeric:
                axis.set_xticks(xs)
            else:
                axis.set_xticks(xs, [p.label for p in sweep.points], rotation=30, ha="right")
        fig.suptitle(sweep.title)
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        return buffer.getvalue()
    finally:
        plt.close(fig)
