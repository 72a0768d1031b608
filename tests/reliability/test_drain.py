"""Draining a serving server before a stop, against a real HTTP server on loopback."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
import requests

from pytest_sglang.lifecycle.drain import drain, in_flight, serving_port
from pytest_sglang.sim.launch import start_simulator


class _Metrics(BaseHTTPRequestHandler):
    running: ClassVar[list[int]] = []  # popped one per scrape; the last value stays

    def do_GET(self) -> None:
        if self.path != "/metrics":
            self.send_error(404)
            return
        now = self.running.pop(0) if len(self.running) > 1 else self.running[0]
        body = (
            "# TYPE sglang:num_running_reqs gauge\n"
            f'sglang:num_running_reqs{{model_name="m",tp_rank="0"}} {float(now)}\n'
            'sglang:num_queue_reqs{model_name="m",tp_rank="0"} 0.0\n'
        ).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Metrics)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_waits_until_the_in_flight_requests_are_done(server: str) -> None:
    _Metrics.running = [3, 2, 0]
    said: list[str] = []
    assert drain(lambda: in_flight(server), what="h svc", timeout=30, say=said.append, poll_s=0.05)
    assert said[0] == "[sglang] h svc: 3 request(s) in flight; draining for up to 30s"
    assert said[-1] == "[sglang] h svc: drained"


def test_gives_up_after_the_drain_timeout(server: str) -> None:
    _Metrics.running = [5]
    said: list[str] = []
    assert not drain(lambda: in_flight(server), what="h", timeout=0.3, say=said.append, poll_s=0.05)
    assert "still 5 request(s) after 0s; stopping anyway" in said[-1]


def test_a_server_without_metrics_is_not_waited_for() -> None:
    said: list[str] = []
    assert in_flight("http://127.0.0.1:9") is None
    assert not drain(lambda: None, what="h", timeout=60, say=said.append)
    assert "in-flight requests unknown" in said[0]


def test_metrics_that_stop_answering_are_not_taken_for_drained() -> None:
    said: list[str] = []
    counts = iter([3, None])
    assert not drain(lambda: next(counts), what="h", timeout=30, say=said.append, poll_s=0.01)
    assert said[-1] == "[sglang] h: in-flight requests unknown now; stopping without drain"


def test_in_flight_reads_the_simulators_own_metrics() -> None:
    env = {"SGLANG_SIM_TTFT_MS": "50", "SGLANG_SIM_ITL_MS": "50"}
    with start_simulator("--enable-metrics", env=env, timeout=30) as sim:
        assert in_flight(sim.url) == 0
        body = {"text": "hello", "sampling_params": {"max_new_tokens": 100, "ignore_eos": True}}
        streaming = threading.Thread(
            target=requests.post, args=(sim.url + "/generate",), kwargs={"json": body}
        )
        streaming.start()
        try:
            deadline = time.monotonic() + 10
            while in_flight(sim.url) != 1:
                assert time.monotonic() < deadline, "the running request never showed"
                time.sleep(0.05)
        finally:
            streaming.join(30)


def test_serving_port_reads_the_argv() -> None:
    assert serving_port(["python", "-m", "sglang.launch_server"]) == ("127.0.0.1", 30000)
    assert serving_port(["x", "--port", "8000", "--host=0.0.0.0"]) == ("0.0.0.0", 8000)


BUSY_SERVER = """import os
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        n = 2 if os.path.exists("/tmp/sglang-busy") else 0
        body = ("sglang:num_running_reqs{tp_rank=\\"0\\"} %d.0\\n" % n).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
HTTPServer(("127.0.0.1", 30000), H).serve_forever()
"""
STANDIN = """import sys, time
if sys.argv[-1] == "--help" and "--model-path" not in sys.argv:
    print("--model-path --served-model-name"); sys.exit(0)
time.sleep(100000)
"""


def test_the_systemd_deployer_drains_the_production_service_first(
    systemd_host: object, systemd_transport: object, new_transport: object
) -> None:
    import sys
    from typing import Any

    from pytest_sglang.config import ServerConfig
    from pytest_sglang.lifecycle.deployer import DeployerSettings
    from pytest_sglang.lifecycle.spec import HostSpec
    from pytest_sglang.lifecycle.systemd import SystemdDeployer

    from .conftest import SERVICE, UNIT

    t: Any = systemd_transport
    t.put(BUSY_SERVER.encode(), "/opt/busy.py", mode=0o644)
    t.put(STANDIN.encode(), "/opt/standin.py", mode=0o644)
    unit = f"[Service]\nExecStart={sys.executable} /opt/busy.py\n"
    t.put(unit.encode(), UNIT, mode=0o644)
    t.check_output("touch /tmp/sglang-busy; systemctl daemon-reload; systemctl restart %s", SERVICE)
    spec = HostSpec(
        name="testhost",
        kind="ssh",
        launch=f"{sys.executable} /opt/standin.py",
        service=SERVICE,
        sglang_version="0.5.23",
        source="test",
    )
    said: list[str] = []
    draining = threading.Event()

    def say(line: str) -> None:
        said.append(line)
        if "in flight" in line:
            draining.set()

    d = SystemdDeployer(spec, t, DeployerSettings(say=say, drain_timeout=30.0))
    deadline = time.monotonic() + 10
    while not t.run(  # the stand-in production server is listening
        "python3 -c %s", "import socket; socket.create_connection(('127.0.0.1', 30000))"
    ).ok:
        assert time.monotonic() < deadline, "the stand-in production server never listened"
        time.sleep(0.1)
    other: Any = new_transport()  # type: ignore[operator]

    def finish() -> None:  # the in-flight requests end once the deployer has seen them
        if draining.wait(60):
            other.run("rm -f /tmp/sglang-busy")

    finisher = threading.Thread(target=finish, daemon=True)
    finisher.start()
    try:
        d.deploy(d.launch_plan(ServerConfig(model_path="/m")))
        assert any("2 request(s) in flight; draining for up to 30s" in s for s in said), said
        assert said[-1].endswith("drained")
    finally:
        draining.set()
        finisher.join(30)
        d.restore()
        t.run(
            "systemctl stop %s; rm -f -- %s /opt/busy.py /opt/standin.py /tmp/sglang-busy; "
            "systemctl daemon-reload",
            SERVICE,
            UNIT,
        )
