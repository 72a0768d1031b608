"""A topology's benchmark figures per part: what the router sent each server, and what each
server measured of itself.

Two sources, both read before and after the run (their counters are cumulative):

- the router's per-worker outcome counters (``smg_worker_cb_outcomes_total``): how many requests
  went to each server and how they ended (:meth:`~.TopologyDeployment.requests_by_part`);
- each serving part's own ``/metrics`` (servers started with ``--enable-metrics``): the requests
  it finished, its mean time per request and to first token, its prompt and output tokens. In
  a prefill/decode pair this is where the time goes: the prefill server's requests end when
  their prefill is handed over, the decode server's when the answer ends.

A part without ``/metrics`` (no ``--enable-metrics``, a multi-node follower) has no server
figures; the router's counts still say what it was sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

from ..lifecycle.deployment import Deployment
from ..lifecycle.topology_deployment import TopologyDeployment
from .prometheus import Sample, parse_prometheus, run_delta

__all__ = [
    "PartScrapes",
    "PartsBefore",
    "parts_after",
    "parts_before",
    "per_part",
    "per_part_line",
    "requests_by_part",
    "scrape_parts",
    "server_figures",
]

#: A scrape of every serving part's ``/metrics``: part name -> its ``sglang:`` series.
PartScrapes = dict[str, Sample]

#: What is kept of a part's own figures: flat name (:mod:`.prometheus`) -> the name stored.
SERVER_FIGURES = {
    "e2e_request_latency_seconds_count_delta": "requests",
    "e2e_request_latency_seconds_mean": "mean_request_s",
    "time_to_first_token_seconds_mean": "mean_ttft_s",
    "prompt_tokens_delta": "prompt_tokens",
    "generation_tokens_delta": "generation_tokens",
}


@dataclass(frozen=True)
class PartsBefore:
    """A topology's counters before a run: the router's per part, each server's own."""

    router: dict[str, dict[str, float]] | None
    servers: PartScrapes | None


def parts_before(deployment: Deployment) -> PartsBefore:
    """Read before a run (nothing for one server)."""
    return PartsBefore(requests_by_part(deployment), scrape_parts(deployment))


def parts_after(deployment: Deployment, before: PartsBefore) -> dict[str, Any]:
    """The run's figures per part, as kept in its result: ``per_part`` (the router's counts),
    ``per_part_server`` (each server's own figures, where it has ``/metrics``)."""
    out: dict[str, Any] = {}
    if before.router is not None:
        out["per_part"] = per_part(before.router, requests_by_part(deployment) or {})
    if before.servers:
        out["per_part_server"] = server_figures(before.servers, scrape_parts(deployment) or {})
    return out


def requests_by_part(deployment: Deployment) -> dict[str, dict[str, float]] | None:
    """A topology's requests per server so far, by outcome, from its router; None for one
    server (or when the router does not answer: the figures then have no breakdown)."""
    if not isinstance(deployment, TopologyDeployment):
        return None
    try:
        return deployment.requests_by_part()
    except requests.RequestException:
        return None


def per_part(
    before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]
) -> dict[str, dict[str, int]]:
    """What a benchmark sent each part, by outcome: the router's counters, after - before."""
    out: dict[str, dict[str, int]] = {}
    for part, counts in sorted(after.items()):
        was = before.get(part, {})
        out[part] = {k: round(v - was.get(k, 0.0)) for k, v in sorted(counts.items())}
    return out


def scrape_parts(deployment: Deployment) -> PartScrapes | None:
    """Each serving part's ``/metrics`` now (parts without it left out); None for one server."""
    if not isinstance(deployment, TopologyDeployment):
        return None
    out: PartScrapes = {}
    for name, part in deployment.parts.items():
        try:
            response = part.get("/metrics", timeout=5)
        except requests.RequestException:
            continue
        if response.status_code == 200:
            sample = parse_prometheus(response.text)
            if sample:
                out[name] = sample
    return out


def server_figures(before: PartScrapes, after: PartScrapes) -> dict[str, dict[str, float]]:
    """Each part's own figures over the run (:data:`SERVER_FIGURES`), for the parts scraped
    both times."""
    out: dict[str, dict[str, float]] = {}
    for name in sorted(after):
        if name not in before:
            continue
        delta = run_delta(before[name], after[name])
        kept = {stored: delta[flat] for flat, stored in SERVER_FIGURES.items() if flat in delta}
        if kept:
            out[name] = kept
    return out


def per_part_line(row: dict[str, Any]) -> str:
    """``tp4-dp2-round-robin concurrency-8: requests by part: replica-1 8 (0.41 s each on it,
    TTFT 0.05 s), replica-2 8 (1 failed)``; "" for a result of one server."""
    parts = row.get("per_part")
    if not parts:
        return ""
    own = row.get("per_part_server") or {}
    cells = []
    for part, counts in parts.items():
        failed = sum(v for k, v in counts.items() if k != "success")
        notes = [f"{failed} failed"] if failed else []
        figures = own.get(part, {})
        if "mean_request_s" in figures:
            timing = f"{figures['mean_request_s']:.2f} s each on it"
            if "mean_ttft_s" in figures:
                timing += f", TTFT {figures['mean_ttft_s']:.2f} s"
            notes.append(timing)
        cells.append(
            f"{part} {counts.get('success', 0)}" + (f" ({'; '.join(notes)})" if notes else "")
        )
    return f"{row['config_id']} {row['workload']}: requests by part: " + ", ".join(cells)
