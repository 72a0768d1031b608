"""Where the load comes from, on the real systemd + sshd test host: each ``bench_from`` path,
the default, the one-line errors, a host whose Python lacks aiohttp, and the stall check with
the host's veth cut mid-run.

The sessions run in this process through :class:`SglangSession` (what the plugin drives), over
real SSH to the nspawn host, the simulator as the service.
"""

from __future__ import annotations

import json
import math
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import FAST_SIM, SIM_LAUNCH, host_entry, save_inventory
from testhost import SystemdTestHost

from pytest_sglang.bench import Workload
from pytest_sglang.bench.loadgen import RunProgress
from pytest_sglang.bench.metrics import BenchResult, RequestRecord
from pytest_sglang.bench.route import route_for, run_round
from pytest_sglang.bench.search import search_over
from pytest_sglang.config import ServerConfig
from pytest_sglang.errors import ConfigError
from pytest_sglang.session import SglangSession

SERVICE = "sglang-paths.service"
#: Reachable from this machine, so that every path can be tried on it; with an ``--api-key``,
#: which every path's requests must carry (the server answers 401 without it).
CONFIG = ServerConfig(
    model_path="/models/Qwen3-8B",
    served_model_name="qwen3-8b",
    host="0.0.0.0",
    extra_args=("--api-key", "sk-paths-7"),
)
PACED = {"SGLANG_SIM_STARTUP_SCALE": "0", "SGLANG_SIM_TTFT_MS": "40", "SGLANG_SIM_ITL_MS": "10"}
#: A launcher whose interpreter (the system Python) has no aiohttp: it hands over to the
#: simulator of this checkout, so the service itself still runs.
WRAPPER = "/opt/paths-no-aiohttp.py"


@pytest.fixture
def cleanup(systemd_transport: Any) -> Iterator[None]:
    yield
    systemd_transport.run(
        "systemctl stop -- %s; rm -rf -- /etc/systemd/system/%s /etc/systemd/system/%s.d "
        "/var/lib/pytest-sglang /etc/pytest-sglang /run/lock/pytest-sglang.json %s; "
        "systemctl daemon-reload; systemctl reset-failed",
        SERVICE,
        SERVICE,
        SERVICE,
        WRAPPER,
    )


def _session(
    host: SystemdTestHost,
    tmp: Path,
    bench_from: str = "",
    env: dict[str, str] | None = None,
    launch: str = SIM_LAUNCH,
    extra: str = "",
) -> SglangSession:
    entry = host_entry("testhost", host, SERVICE, env or PACED, launch)
    if bench_from:
        entry += f'bench_from = "{bench_from}"\n'
    inventory = save_inventory(tmp / "hosts.toml", entry + extra)
    said: list[str] = []
    session = SglangSession(
        ["testhost"], inventory=inventory, ssh_config=None, ready_timeout=60, progress=said.append
    )
    session.said = said  # type: ignore[attr-defined]
    return session


@pytest.mark.parametrize("bench_from", ["host", "direct", "forward"])
def test_each_path_measures_the_paced_server(
    bench_from: str, tmp_path: Path, systemd_host: SystemdTestHost, cleanup: None
) -> None:
    """At realistic pacing every path measures the server's own 40 ms TTFT and 10 ms ITL, with
    the same records and figures, and says where the load came from. The ITL band is half to
    twice the pacing: through a forwarded port on a loaded two-core runner tokens arrive in
    bunches, and the median gap measured 8.7 ms once; the band still tells a paced server from
    an unpaced one or a doubled gap (how close each path lands is the benchmarks' to say)."""
    session = _session(systemd_host, tmp_path, bench_from)
    try:
        deployment = session.host("testhost").deployment(CONFIG)
        measured = run_round(
            deployment, Workload.fixed_concurrency(4, 8, output_tokens=16), model="qwen3-8b"
        )
        result = measured.result
        assert measured.bench_from == bench_from
        assert measured.disturbed == ""
        assert result.completed == 8 and result.failed == 0, result.errors
        assert result.total_output_tokens == 8 * 16
        assert 40 <= result.median_ttft_ms < 80, result.median_ttft_ms
        assert 5 <= result.median_itl_ms < 20, result.median_itl_ms
    finally:
        assert session.restore_all() == []


def test_the_default_is_the_host_said_once(
    tmp_path: Path, systemd_host: SystemdTestHost, systemd_transport: Any, cleanup: None
) -> None:
    """Unset, the host's Python (it has aiohttp) runs the load; said once, checked once; the
    run's progress comes back as it goes; the generator leaves no process and no file on the
    host."""
    session = _session(systemd_host, tmp_path)
    try:
        deployment = session.host("testhost").deployment(CONFIG)
        before = systemd_transport.check_output("find /tmp /dev/shm -xdev | sort")
        for _ in range(2):
            measured = run_round(deployment, Workload.single_stream(8), model="qwen3-8b")
            assert measured.bench_from == "host" and measured.result.completed == 1
        # a run of a while reports how far it got (the live line), as here
        seen: list[RunProgress] = []
        workload = Workload.fixed_concurrency(2, 4, output_tokens=80, warmup_requests=0)
        run_round(deployment, workload, model="qwen3-8b", progress=seen.append)
        assert seen and seen[-1].total == 4 and seen[-1].elapsed_s >= 1.0, seen
        said = [line for line in session.said if "benchmark load" in line]  # type: ignore[attr-defined]
        assert len(said) == 1 and "from the host" in said[0], said
        assert route_for(deployment).kind == "host"
        assert systemd_transport.run("pgrep -f '<pytest-sglang[>]'").stdout == ""
        assert systemd_transport.check_output("find /tmp /dev/shm -xdev | sort") == before
    finally:
        assert session.restore_all() == []


def test_direct_to_a_loopback_server_is_one_line(
    tmp_path: Path, systemd_host: SystemdTestHost, cleanup: None
) -> None:
    session = _session(systemd_host, tmp_path, "direct")
    try:
        deployment = session.host("testhost").deployment(CONFIG.replace(host="127.0.0.1"))
        with pytest.raises(ConfigError) as err:
            run_round(deployment, Workload.single_stream(8), model="qwen3-8b")
        message = str(err.value)
        assert "\n" not in message
        assert 'bench_from = "direct" cannot work: the server binds 127.0.0.1' in message
    finally:
        assert session.restore_all() == []


@pytest.mark.parametrize("bench_from", ["", "host"])
def test_a_host_python_without_aiohttp(
    bench_from: str,
    tmp_path: Path,
    systemd_host: SystemdTestHost,
    systemd_transport: Any,
    cleanup: None,
) -> None:
    """The launcher's Python has no aiohttp: unset, the load falls back (said once, with the
    reason); asked for, one line says why it cannot work."""
    real = SIM_LAUNCH.split()[0]
    systemd_transport.put(
        f"import os, sys\nos.execv({real!r}, [{real!r}, '-m', 'pytest_sglang.sim', "
        "*sys.argv[1:]])\n".encode(),
        WRAPPER,
    )
    session = _session(
        systemd_host,
        tmp_path,
        bench_from,
        launch=f"/usr/bin/python3 {WRAPPER}",
        extra='sglang_version = "0.5.23"\n',
    )
    try:
        deployment = session.host("testhost").deployment(CONFIG)
        if bench_from == "host":
            with pytest.raises(ConfigError) as err:
                run_round(deployment, Workload.single_stream(8), model="qwen3-8b")
            message = str(err.value)
            assert "\n" not in message and 'bench_from = "host" cannot work' in message
            assert "aiohttp" in message, message
            return
        for _ in range(2):
            measured = run_round(deployment, Workload.single_stream(8), model="qwen3-8b")
            assert measured.bench_from == "direct" and measured.result.completed == 1
        said = [line for line in session.said if "benchmark load" in line]  # type: ignore[attr-defined]
        assert len(said) == 1 and "aiohttp" in said[0], said
    finally:
        assert session.restore_all() == []


def _cut_link(host: SystemdTestHost, after: float, seconds: float) -> threading.Thread:
    """Take the host's veth down ``after`` s from now, for ``seconds``, in a thread."""
    veth = f"vh-{host.name}"

    def cut() -> None:
        time.sleep(after)
        subprocess.run(["ip", "link", "set", veth, "down"], check=True)
        try:
            time.sleep(seconds)
        finally:
            subprocess.run(["ip", "link", "set", veth, "up"], check=True)

    thread = threading.Thread(target=cut, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("bench_from", ["host", "direct", "forward"])
def test_a_link_cut_mid_run_is_a_disturbed_round(
    bench_from: str, tmp_path: Path, systemd_host: SystemdTestHost, cleanup: None
) -> None:
    """The veth goes down for 3 s in the middle of a single-stream run (about 5 s at 20 ms a
    token): the round is disturbed, with the stall's length and when it happened."""
    env = {**FAST_SIM, "SGLANG_SIM_TIME_SCALE": "1", "SGLANG_SIM_ITL_MS": "20"}
    session = _session(systemd_host, tmp_path, bench_from, env=env)
    try:
        deployment = session.host("testhost").deployment(CONFIG)
        workload = Workload.single_stream(250, warmup_requests=0)
        cutter = _cut_link(systemd_host, after=1.5, seconds=3.0)
        measured = run_round(deployment, workload, model="qwen3-8b")
        cutter.join()
        assert measured.bench_from == bench_from
        why = measured.disturbed
        assert why.startswith("network stall of "), why
        seconds = float(why.split()[3])
        at = float(why.split()[6])
        # 1.5 s after the call: on the host path the generator starts first, so it may be 0.x s
        assert 2.0 <= seconds <= 12 and 0.0 <= at <= 5.0, why
        clean = run_round(deployment, workload, model="qwen3-8b")
        assert clean.disturbed == "", clean.disturbed
    finally:
        assert session.restore_all() == []


PLUGIN_TESTS = """
import subprocess, threading, time
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.bench import Workload

CONFIG = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")
WORKLOAD = Workload.single_stream(250, warmup_requests=0)


@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_clean(sglang_server, sglang_bench):
    assert sglang_bench(WORKLOAD, rounds=1).completed == 1


@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_cut(sglang_server, sglang_bench):
    done = threading.Event()

    def cut():  # down 3 s in every 5 s: every round is disturbed
        while not done.wait(1.5):
            subprocess.run(["ip", "link", "set", "VETH", "down"], check=True)
            time.sleep(3)
            subprocess.run(["ip", "link", "set", "VETH", "up"], check=True)

    cutter = threading.Thread(target=cut)
    cutter.start()
    try:
        sglang_bench(WORKLOAD, rounds=1)
    finally:
        done.set()
        cutter.join()
"""


def test_a_round_disturbed_twice_fails_the_test_with_the_reason(
    pytester: pytest.Pytester, systemd_host: SystemdTestHost, cleanup: None
) -> None:
    """Through the plugin: the clean test says where its load came from; the cut one is
    repeated once, then fails with the stall, and its round is kept, marked, ungated."""
    pytester.makepyfile(PLUGIN_TESTS.replace("VETH", f"vh-{systemd_host.name}"))
    env = {**FAST_SIM, "SGLANG_SIM_TIME_SCALE": "1", "SGLANG_SIM_ITL_MS": "20"}
    inv = save_inventory(
        pytester.path / "hosts.toml", host_entry("testhost", systemd_host, SERVICE, env)
    )
    out = pytester.path / "summary.json"
    allure = pytester.path / "allure-results"
    result = pytester.runpytest_subprocess(
        "--sglang-host",
        "testhost",
        "--sglang-inventory",
        str(inv),
        "--sglang-summary",
        str(out),
        "--alluredir",
        str(allure),
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "single-stream on testhost: round 1 disturbed twice: network stall of * s at * s; "
            "not compared with the baseline*",
            "*load from: testhost: host*",
            "*round 1: disturbed: network stall of * s at * s (repeated)*",
        ]
    )
    summary = json.loads(out.read_text())
    assert summary["bench_from"] == {"testhost": "host"}
    clean, cut = summary["benchmarks"]
    assert clean["disturbed"] == [] and clean["bench_from"] == "host"
    assert [n.split(":")[0] for n in cut["disturbed"]] == ["round 1", "round 1"]
    assert cut["gated"] is False
    # in Allure too: the cut test's rounds as their own attachment, none for the clean one
    notes = {}
    for path in allure.glob("*-result.json"):
        data = json.loads(path.read_text())
        for att in data.get("attachments", []):
            if att["name"] == "disturbed":
                notes[data["name"]] = (allure / att["source"]).read_text()
    assert list(notes) == ["test_cut[base]"], notes
    lines = notes["test_cut[base]"].splitlines()
    assert len(lines) == 2 and all("network stall of " in line for line in lines), lines


def test_a_path_that_cannot_work_fails_the_benchmark_in_one_line(
    pytester: pytest.Pytester, systemd_host: SystemdTestHost, cleanup: None
) -> None:
    """Through the plugin: ``bench_from = "direct"`` to a server on the host's loopback fails
    the test with the one line that says why, not a traceback of the plugin."""
    pytester.makepyfile(
        """
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.bench import Workload

LOOPBACK = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b")

@pytest.mark.parametrize("sglang_server", [LOOPBACK], indirect=True)
def test_bench(sglang_server, sglang_bench):
    sglang_bench(Workload.single_stream(8), rounds=1)
"""
    )
    entry = host_entry("testhost", systemd_host, SERVICE, PACED) + 'bench_from = "direct"\n'
    inv = save_inventory(pytester.path / "hosts.toml", entry)
    result = pytester.runpytest("--sglang-host", "testhost", "--sglang-inventory", str(inv))
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(['*bench_from = "direct" cannot work: the server binds 127.0.0.1*'])
    assert "run_round(" not in out and "raise ConfigError" not in out, out


def test_an_ssh_drop_mid_run_on_the_host_path(
    tmp_path: Path, systemd_host: SystemdTestHost, systemd_transport: Any, cleanup: None
) -> None:
    """Every SSH session is killed 1.5 s into the run: the round is disturbed (the connection
    was lost), the generator on the host ends with it, and the next round reconnects before
    it measures and is clean."""
    env = {**FAST_SIM, "SGLANG_SIM_TIME_SCALE": "1", "SGLANG_SIM_ITL_MS": "20"}
    session = _session(systemd_host, tmp_path, "host", env=env)
    try:
        deployment = session.host("testhost").deployment(CONFIG)
        workload = Workload.single_stream(250, warmup_requests=0)

        def drop() -> None:
            time.sleep(1.5)
            systemd_host.ssh("pkill -9 -f 'sshd: root@notty'")

        dropper = threading.Thread(target=drop)
        dropper.start()
        measured = run_round(deployment, workload, model="qwen3-8b")
        dropper.join()
        assert measured.disturbed.startswith("the SSH connection was lost at "), measured
        deadline = time.monotonic() + 5  # it ends at its next line (a heartbeat: 0.2 s)
        while systemd_transport.run("pgrep -f '<pytest-sglang[>]'").stdout:
            assert time.monotonic() < deadline, "the generator outlived its session"
            time.sleep(0.1)
        again = run_round(deployment, workload, model="qwen3-8b")
        assert again.disturbed == "" and again.result.completed == 1, again.disturbed
    finally:
        assert session.restore_all() == []


def test_the_host_workload_carries_every_workload_field_it_names() -> None:
    """The on-host generator's workload reads the workload's own fields, with the requests and
    their gaps resolved here: nothing set on the workload is lost on the way to the host."""
    import dataclasses

    from pytest_sglang.bench.agent import RESOLVED, HostWorkload

    workload = Workload.rate(
        4.0, 6, 16, api="completions", temperature=0.5, ignore_eos=False, warmup_requests=0
    )
    sent = HostWorkload.of(workload)
    for field in dataclasses.fields(HostWorkload):
        if field.name not in RESOLVED:
            assert getattr(sent, field.name) == getattr(workload, field.name), field.name
    assert sent.requests() == workload.requests()
    assert sent.arrival_delays() == workload.arrival_delays()
    talk = Workload.multi_turn(3, 2, 8, 4, concurrency=2, think_time_s=(0.1, 0.3))
    sent = HostWorkload.of(talk)
    assert sent.session_turns() == talk.session_turns() == [2, 2, 2]
    assert sent.think_times() == talk.think_times()
    assert sent.requests() == talk.requests()


def test_a_search_probes_from_the_host_and_stops_a_probe_once_it_cannot_pass(
    tmp_path: Path, systemd_host: SystemdTestHost, systemd_transport: Any, cleanup: None
) -> None:
    """A max-rate search through the host path: every probe runs on the host, a probe far over
    the server's capacity stops as soon as its outcome is certain (its generator ends with
    it), and the bracket never passes the rate the injected timings allow (8 at once, 205 ms
    each: 39 req/s). How close under it the bracket lands depends on the machine's load (a
    two-core runner measured 27-32 req/s), so only a wide floor is asserted: speed belongs to
    the benchmarks."""
    env = {
        "SGLANG_SIM_STARTUP_SCALE": "0",
        "SGLANG_SIM_TTFT_MS": "50",
        "SGLANG_SIM_ITL_MS": "5",
        "SGLANG_SIM_CAPACITY": "8",
    }
    session = _session(systemd_host, tmp_path, "host", env=env)
    try:
        deployment = session.host("testhost").deployment(CONFIG)
        paths: list[str] = []

        def run(workload: Workload, observe: Callable[[RequestRecord], bool]) -> BenchResult:
            measured = run_round(deployment, workload, model="qwen3-8b", on_record=observe)
            paths.append(measured.bench_from)
            assert measured.disturbed == "", measured.disturbed
            return measured.result

        search = Workload.max_rate(
            "p99_ttft_ms<=110",
            low=8,
            high=128,
            output_tokens=32,
            burstiness=math.inf,
            precision=0.25,
            fraction=0.95,
            probe_time_s=2,
            budget_s=60,
        )
        found = search_over(run, search)
        assert set(paths) == {"host"}
        assert found.status == "found", found.describe()
        low, high = found.bracket
        assert low is not None and high is not None, found.describe()
        assert low <= 39 * 1.05, found.describe()
        assert high >= 39 * 0.4, found.describe()
        stopped = [p for p in found.probes if p.early_stop == "over"]
        assert stopped and all(p.completed < p.requests for p in stopped), found.probes
        assert systemd_transport.run("pgrep -f '<pytest-sglang[>]'").stdout == ""
    finally:
        assert session.restore_all() == []


def test_records_come_back_from_the_host_bit_for_bit() -> None:
    """What the host sends of a record (its float lists packed) reads back as the same record."""
    from pytest_sglang.bench.agent import _plain, record_of

    record = RequestRecord(
        start=12.5,
        ttft=0.1 / 3,
        itls=[1 / 7, 2e-9, 0.0],
        chunk_gaps=[],
        e2e=1.25,
        completion_tokens=4,
        output_ids=[1, 2, 3],
        text='"quoted"\n',
    )
    line = json.dumps({"record": record}, default=_plain)
    assert record_of(json.loads(line)["record"]) == record
