"""Deployments as fixtures, end to end on the embedded simulator (real processes, real HTTP).

Each test runs a real pytest session with pytester; the plugin deploys the simulator as a local
process, waits for readiness and verifies the startup journal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CONFIGS = """
import pytest
from pytest_sglang import ServerConfig, sweep

BASE = ServerConfig(
    model_path="/models/Qwen3-8B",
    served_model_name="qwen3-8b",
    speculative_algorithm="EAGLE",
    speculative_num_steps=1,
    speculative_eagle_topk=1,
)
CONFIGS = sweep(BASE, speculative_num_steps=[1, 2, 3])
"""


pytestmark = pytest.mark.usefixtures("fast_simulator")


def summary(path: Path) -> list[dict[str, object]]:
    return list(json.loads(path.read_text())["deployments"])


def empty_tests(*names: str, configs: str = "CONFIGS[:1]") -> str:
    """CONFIGS and a test doing nothing per name, on ``configs``: enough to deploy them."""
    return CONFIGS + "".join(
        f"""
@pytest.mark.parametrize("sglang_server", {configs}, indirect=True)
def {name}(sglang_server):
    pass
"""
        for name in names
    )


def test_happy_path_yields_a_verified_ready_deployment(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        CONFIGS
        + """
@pytest.mark.parametrize("sglang_server", CONFIGS[:1], indirect=True)
def test_ready(sglang_server):
    assert sglang_server.get("/health").status_code == 200
    assert sglang_server.server_args["speculative_num_draft_tokens"] == 2
    assert sglang_server.resolved.max_running_requests == 48
    assert sglang_server.scheduler["max_running_requests"] <= 48
    assert sglang_server.server_info["speculative_num_steps"] == 1
    assert sglang_server.timings["ready_s"] > 0
    assert sglang_server.journal.ready
    assert sglang_server.host == "local"
"""
    )
    out = pytester.path / "summary.json"
    result = pytester.runpytest("--sglang-summary", str(out))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*sglang deployments*", "*local*eagle-s1-k1*ready*"])
    [record] = summary(out)
    assert record["outcome"] == "ready"
    assert record["config_id"] == "eagle-s1-k1"


def test_each_config_is_deployed_once_whatever_the_test_order(pytester: pytest.Pytester) -> None:
    tests = "".join(
        f"""
@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_{n}(sglang_server):
    assert sglang_server.get("/health").status_code == 200
"""
        for n in range(4)
    )
    pytester.makepyfile(CONFIGS + tests)
    out = pytester.path / "summary.json"
    result = pytester.runpytest("--sglang-summary", str(out))
    result.assert_outcomes(passed=12)
    records = summary(out)
    assert [r["config_id"] for r in records] == ["eagle-s1-k1", "eagle-s2-k1", "eagle-s3-k1"]


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("oom", "out of memory"),
        ("cuda-graph", "CUDA graph capture"),
        ("slow-start=1000", "not ready in time"),
    ],
)
def test_faults_end_in_a_classified_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fault: str, reason: str
) -> None:
    monkeypatch.setenv("SGLANG_SIM_FAULT", fault)
    pytester.makepyfile(empty_tests("test_a", "test_b"))
    out = pytester.path / "summary.json"
    result = pytester.runpytest("--sglang-summary", str(out), "--sglang-ready-timeout", "4")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([f"*local eagle-s1-k1: {reason}*", "*journal excerpt*"])
    result.stdout.no_fnmatch_line("*Traceback (most recent call last)*site-packages*")
    [record] = summary(out)  # the failed config is not redeployed for the second test
    assert record["outcome"] == "failed"
    assert record["reason"] == reason


def test_a_server_that_never_gets_ready_times_out(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_SIM_FAULT", "hang")
    pytester.makepyfile(empty_tests("test_a"))
    result = pytester.runpytest("--sglang-ready-timeout", "3")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*not ready in time (3s*"])


def test_a_flag_that_silently_did_not_take_effect_is_caught(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_SIM_IGNORE_FLAG", "served_model_name")
    pytester.makepyfile(empty_tests("test_a", configs="CONFIGS[1:2]"))
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*served_model_name requested 'qwen3-8b', logged '/models/Qwen3-8B'*"]
    )


def test_journal_marker_adds_user_checks(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        CONFIGS
        + """
@pytest.mark.sglang_journal(expect=[r"KV Cache is allocated"], forbid=[r"WARNING: .*deprecated"])
@pytest.mark.parametrize("sglang_server", CONFIGS[:1], indirect=True)
def test_ok(sglang_server):
    sglang_server.journal.expect(r"Capture .*graph")

@pytest.mark.sglang_journal(forbid=[r"fired up"])
@pytest.mark.parametrize("sglang_server", CONFIGS[:1], indirect=True)
def test_forbidden(sglang_server):
    pass
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*forbidden pattern 'fired up'*"])


def test_a_flag_the_host_lacks_is_refused_before_deploying(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
import pytest
from pytest_sglang import ServerConfig

@pytest.mark.parametrize(
    "sglang_server", [ServerConfig(model_path="m", extra_args=("--no-such-flag",))], indirect=True
)
def test_a(sglang_server):
    pass
"""
    )
    out = pytester.path / "summary.json"
    result = pytester.runpytest("--sglang-summary", str(out))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*--no-such-flag*"])
    [record] = summary(out)
    assert record["reason"] == "bad flag"


def test_a_runtime_crash_fails_the_requests_that_hit_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_SIM_FAULT", "crash-after=1")
    pytester.makepyfile(
        CONFIGS
        + """
import requests

@pytest.mark.parametrize("sglang_server", CONFIGS[:1], indirect=True)
def test_a(sglang_server):
    body = {"text": "hello world", "sampling_params": {"max_new_tokens": 4}}
    assert sglang_server.post("/generate", json=body).status_code == 200
    with pytest.raises(requests.RequestException):
        sglang_server.post("/generate", json=body, timeout=10).raise_for_status()
    sglang_server.refresh_journal().expect("SIGQUIT received")
"""
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_sglang_server_without_a_config_explains_itself(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
def test_a(sglang_server):
    pass
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*sglang_server needs a ServerConfig*indirect=True*"])


def test_unknown_host_is_a_one_line_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(empty_tests("test_a"))
    result = pytester.runpytest("--sglang-host", "no-such-host", "--sglang-ssh-config", "/dev/null")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # before any test (tests/test_usage_errors.py)
    result.stderr.fnmatch_lines(["ERROR: host 'no-such-host' is not in*"])


def test_a_server_that_ends_after_ready_fails_the_next_test_with_its_cause(
    pytester: pytest.Pytester,
) -> None:
    """Killed under a running session (as an OOM kill or a crashed scheduler would end it), the
    server is not handed to the next test as if it ran: that test's fixture ends with one line
    saying how it ended and its last line, and the summary records the failure."""
    pytester.makepyfile(
        CONFIGS
        + """
import os, signal, time

@pytest.mark.parametrize("sglang_server", CONFIGS[:1], indirect=True)
def test_first(sglang_server):
    os.kill(sglang_server.deployer.state().main_pid, signal.SIGKILL)
    while not sglang_server.deployer.state().exited:
        time.sleep(0.05)

@pytest.mark.parametrize("sglang_server", CONFIGS[:1], indirect=True)
def test_second(sglang_server):
    pass
"""
    )
    out = pytester.path / "summary.json"
    result = pytester.runpytest("--sglang-summary", str(out))
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*the server ended after it was ready: process killed by signal 9; its last line:*"]
    )
    assert [r["outcome"] for r in summary(out)] == ["ready", "failed"]


def test_two_names_of_one_config_are_one_deployment(pytester: pytest.Pytester) -> None:
    """A config's identity is its digest: the second name reuses the running server, each test
    sees the name it asked for, and the server's one journal is read once (whichever name
    reads it, no line twice)."""
    pytester.makepyfile(
        CONFIGS
        + """
import time

ALIAS = CONFIGS[0].replace(name="alias")
PREFILLS = []

def prefill_lines(server):
    reply = server.post(
        "/v1/completions", json={"model": "qwen3-8b", "prompt": "hi", "max_tokens": 2}
    )
    assert reply.status_code == 200
    for _ in range(50):  # the server's line may reach its log a moment after the reply
        count = sum("Prefill batch" in line for line in server.refresh_journal().lines)
        if not PREFILLS or count > PREFILLS[-1]:
            break
        time.sleep(0.1)
    PREFILLS.append(count)

@pytest.mark.parametrize("sglang_server", [CONFIGS[0], CONFIGS[1], ALIAS], indirect=True)
def test_a(request, sglang_server):
    assert sglang_server.config_id == request.node.callspec.id
    if sglang_server.config.speculative_num_steps == 1:
        prefill_lines(sglang_server)

@pytest.mark.parametrize("sglang_server", CONFIGS[:1], indirect=True)
def test_b(sglang_server):
    prefill_lines(sglang_server)
    assert PREFILLS[1:] == [PREFILLS[0] + 1, PREFILLS[0] + 2]
"""
    )
    out = pytester.path / "summary.json"
    result = pytester.runpytest("--sglang-summary", str(out), "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        ["*test_a?eagle-s1-k1? PASSED*", "*test_a?alias? PASSED*", "*test_b?eagle-s1-k1? PASSED*"]
    )
    result.stdout.fnmatch_lines(["*local*eagle-s1-k1 = alias*ready*"])
    records = summary(out)
    assert [(r["config_id"], r["names"]) for r in records] == [
        ("eagle-s1-k1", ["eagle-s1-k1", "alias"]),
        ("eagle-s2-k1", ["eagle-s2-k1"]),
    ]


def test_a_config_that_failed_fails_at_once_under_its_other_name(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_SIM_FAULT", "oom")
    pytester.makepyfile(empty_tests("test_a", configs='[CONFIGS[0], CONFIGS[0].replace(name="b")]'))
    out = pytester.path / "summary.json"
    result = pytester.runpytest("--sglang-summary", str(out))
    result.assert_outcomes(errors=2)
    [record] = summary(out)  # not started again for its other name
    assert (record["outcome"], record["names"]) == ("failed", ["eagle-s1-k1", "b"])
