"""The stall check on what a run measured, and the on-host generator run on this machine (the
same module, shipped and executed from memory, against a real simulator)."""

from __future__ import annotations

from helpers import SIM_LAUNCH

from pytest_sglang.bench import Workload
from pytest_sglang.bench.loadgen import run_workload
from pytest_sglang.bench.metrics import RequestRecord
from pytest_sglang.bench.remote import run_on_host
from pytest_sglang.bench.stalls import Evidence, disturbance
from pytest_sglang.transport.local import LocalTransport


def _stream(start: float, gaps: list[float]) -> RequestRecord:
    """A record whose events arrived ``gaps`` apart from ``start``."""
    record = RequestRecord(start=start, ttft=0.05)
    now = start + 0.05
    record.arrived(now)
    for gap in gaps:
        now += gap
        record.arrived(now)
        record.itls.append(gap)
    return record


def test_a_steady_run_is_not_disturbed() -> None:
    records = [_stream(100.0 + i, [0.02] * 200) for i in range(4)]
    assert disturbance(Evidence(records, began=100.0)) == ""


def test_a_gap_far_beyond_the_runs_own_is_a_stall_with_its_length_and_time() -> None:
    gaps = [0.02] * 102 + [10.0] + [0.0] * 50 + [0.02] * 50
    records = [_stream(100.0, gaps)]
    assert disturbance(Evidence(records, began=100.0)) == "stream stall of 10.0 s at 2.1 s"
    # the SSH link was watched and saw it too: the network, not the server
    link = [(5.0 + 0.2 * i, 0.001) for i in range(5)] + [(6.2, 10.3)]
    ev = Evidence(records, began=100.0, link=link, link_began=4.0, link_watched=True)
    assert disturbance(ev) == "network stall of 10.3 s at 2.2 s"
    # the link answered throughout: said so
    quiet = Evidence(records, began=100.0, link=link[:5], link_began=4.0, link_watched=True)
    assert disturbance(quiet).startswith("stream stall of 10.0 s at 2.1 s (the SSH link answered")


def test_slow_round_trips_alone_are_a_saturated_link_not_a_stall() -> None:
    records = [_stream(0.0, [0.02] * 200)]
    link = [(0.2 * i, 0.001) for i in range(5)] + [(1.0, 2.0)]
    assert disturbance(Evidence(records, began=0.0, link=link, link_watched=True)) == ""
    link.append((3.0, 6.0))
    ev = Evidence(records, began=0.0, link=link, link_watched=True)
    assert disturbance(ev) == "network stall of 6.0 s at 3.0 s"


def test_a_slow_server_is_not_a_stall() -> None:
    """Gaps of 300 ms throughout (a slow config) are the run's own distribution."""
    records = [_stream(0.0, [0.3] * 30 + [1.5] + [0.3] * 30)]
    assert disturbance(Evidence(records, began=0.0)) == ""


def test_late_lines_from_the_host_and_reconnects_are_disturbances() -> None:
    lags = [(10.0 + 0.2 * i, 0.5) for i in range(10)] + [(12.0, 4.6), (12.2, 4.4), (12.4, 0.5)]
    ev = Evidence([_stream(10.0, [0.02] * 10)], began=10.0, lags=lags)
    assert disturbance(ev) == "network stall of 4.1 s at 2.0 s"
    ev = Evidence([_stream(10.0, [0.02] * 10)], began=10.0, reconnects=1)
    assert disturbance(ev) == "the SSH connection was re-opened 1x during the run"
    ev = Evidence([], began=0.0, lost="the SSH connection dropped", lost_at=3.25)
    assert disturbance(ev) == "the SSH connection was lost at 3.2 s (the SSH connection dropped)"


def test_the_on_host_generator_gives_the_local_clients_figures(fast_sim: str) -> None:
    """Shipped over a command's stdin and run from memory by a Python: the same requests,
    token counts and failures as the in-process client, records streamed back."""
    workload = Workload.fixed_concurrency(8, 32, output_tokens=16)
    python = [SIM_LAUNCH.split()[0]]
    run = run_on_host(LocalTransport(), python, fast_sim, workload, model="qwen3-8b", where="here")
    assert run.raw is not None and run.lost == ""
    assert run.lags, "no line carried its time"
    here = run_workload(fast_sim, workload, model="qwen3-8b")
    there = run.raw
    assert len(there.records) == 32
    assert sum(r.completion_tokens for r in there.records) == here.total_output_tokens == 32 * 16
    assert all(r.ok and r.last_event > r.start for r in there.records)
    assert there.accept is not None and here.accept_length is not None
    assert abs(there.accept - here.accept_length) < 0.2  # the server's running average
