"""The router's failures, read from the real router's own output (tests/data/router/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_sglang.lifecycle.router_log import RouterCause, router_cause

DATA = Path(__file__).parent / "data" / "router"


@pytest.mark.parametrize(
    ("log", "reason", "line"),
    [
        (
            "bad_flag.log",
            "bad flag",
            "launch_router.py: error: unrecognized arguments: --bogus-flag",
        ),
        (
            "value_not_parsed.log",
            "invalid config",
            "launch_router.py: error: argument --port: invalid int value: 'abc'",
        ),
        (
            "port_in_use.log",
            "port in use",
            "Error starting router: Address already in use (os error 98)",
        ),
        (
            "worker_unreachable.log",
            "worker unreachable",
            "Both HTTP and gRPC health checks failed for http://127.0.0.1:1: HTTP: Health check "
            "failed: error sending request for url (http://127.0.0.1:1/health), gRPC: gRPC failed "
            "(tried SGLang and vLLM): gRPC connection failed: transport error",
        ),
    ],
)
def test_each_real_failure_names_its_cause(log: str, reason: str, line: str) -> None:
    assert router_cause((DATA / log).read_text()) == RouterCause(reason, line)


def test_a_log_that_says_nothing_is_a_plain_router_failure() -> None:
    assert router_cause("") == RouterCause("router failed")
    ready = (DATA / "worker_unreachable.log").read_text().split("Step")[0]
    assert router_cause(ready).reason == "router failed"
