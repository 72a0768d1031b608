"""Real SGLang failures replayed by the simulator as a systemd service on the nspawn test host.

The corpus logs (tests/data/failures/) run through the whole chain a GPU host uses: a unit
started over SSH, the process ending as the real one did (SIGKILL of its tree, exit 1, exit 2),
journald, the cursor-bounded journal read, readiness, and the fixture's one-line reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import FAST_SIM, host_entry, save_inventory
from testhost import SystemdTestHost

SERVICE = "sglang-replay.service"
CORPUS = Path(__file__).parent / "data" / "failures"

#: config name -> (corpus log, cause, text of the exception line the reason must cite; no
#: brackets: fnmatch reads them as character classes)
CASES = {
    "nccl": ("nccl_unhandled_system_error", "NCCL", "RuntimeError: NCCL error: unhandled system"),
    "port": ("port_in_use_http", "port in use", "error while attempting to bind on address"),
    "flag": ("argparse_underscore_flag", "bad flag", "unrecognized arguments: --reasoning_parser"),
    "ima": ("illegal_memory_access_nccl_watchdog", "CUDA error", "an illegal memory access"),
    "warmup": ("warmup_http_502", "warmup failed", "AssertionError: res=<Response"),
}


def suite() -> str:
    configs = {
        name: {"SGLANG_SIM_FAULT": f"replay:{CORPUS / (log + '.log')}"}
        for name, (log, _, _) in CASES.items()
    }
    configs["fine"] = {
        "SGLANG_SIM_FAULT": f"replay:{CORPUS / 'fine_ignore_import_error_glm4v_moe.log'}"
    }
    return f"""
import pytest
from pytest_sglang import ServerConfig

CONFIGS = [ServerConfig(model_path="/models/Qwen3-8B", name=name, env=env)
           for name, env in {configs!r}.items()]

@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_serves(sglang_server):
    assert sglang_server.get("/health").status_code == 200
"""


def test_replayed_real_failures_fail_with_their_cause(
    pytester: pytest.Pytester, systemd_host: SystemdTestHost, systemd_transport: Any
) -> None:
    pytester.makepyfile(suite())
    inventory = save_inventory(
        pytester.path / "hosts.toml", host_entry("testhost", systemd_host, SERVICE, FAST_SIM)
    )
    out = pytester.path / "summary.json"
    result = pytester.runpytest(
        "--sglang-host", "testhost", "--sglang-inventory", str(inventory),
        "--sglang-summary", str(out), "--sglang-ready-timeout", "60",
    )  # fmt: skip
    result.assert_outcomes(passed=1, errors=len(CASES))
    for name, (_, cause, cited) in CASES.items():
        result.stdout.fnmatch_lines([f"*testhost {name}: {cause} after *s: *{cited}*"])
    result.stdout.no_fnmatch_line("*: crashed*")
    records = {r["config_id"]: r for r in json.loads(out.read_text())["deployments"]}
    assert records["fine"]["outcome"] == "ready"
    assert {name: records[name]["reason"] for name in CASES} == {
        name: cause for name, (_, cause, _) in CASES.items()
    }
    assert systemd_transport.run("systemctl is-active -- %s", SERVICE).stdout.strip() != "active"
