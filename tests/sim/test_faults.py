"""Each SGLANG_SIM_FAULT ends (or stalls) the process the way SGLang does; IGNORE_FLAG; SIGTERM."""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path

import pytest
import requests

from conftest import SEED_ARGS, StartSim
from pytest_sglang.server_args import parse_server_args

SMALL = ["--model-path", "Qwen/Qwen2.5-0.5B-Instruct"]


def test_oom_at_kv_allocation(start_sim: StartSim) -> None:
    sim = start_sim(SEED_ARGS, env={"SGLANG_SIM_FAULT": "oom"}, ready=False)
    assert sim.wait_exit() == -signal.SIGKILL
    err = sim.stderr()
    assert (
        "[TP0] Scheduler hit an exception: Traceback (most recent call last):"
        in err.replace(" TP0]", "TP0]").replace("]TP0]", "] TP0]")
        or "TP0] Scheduler hit an exception: Traceback" in err
    )
    assert "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. " in err
    assert "Current value: mem_fraction_static=" in err
    assert "Received sigquit from a child process. It usually means the child failed." in err
    assert "KV Cache is allocated" not in err


def test_cuda_graph_capture_failure(start_sim: StartSim) -> None:
    sim = start_sim(SMALL, env={"SGLANG_SIM_FAULT": "cuda-graph"}, ready=False)
    assert sim.wait_exit() == -signal.SIGKILL
    err = sim.stderr()
    assert "Exception: Capture cuda graph failed: CUDA out of memory." in err
    assert "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)" in err
    assert "ready to roll" not in err


def test_crash_after_n_requests(start_sim: StartSim) -> None:
    sim = start_sim(SMALL, env={"SGLANG_SIM_FAULT": "crash-after=2"})
    body = {"text": "x y", "sampling_params": {"max_new_tokens": 4}}
    for _ in range(2):
        assert requests.post(sim.url + "/generate", json=body, timeout=10).status_code == 200
    with contextlib.suppress(requests.ConnectionError):
        requests.post(sim.url + "/generate", json=body, timeout=10)
    assert sim.wait_exit() == -signal.SIGKILL
    err = sim.stderr()
    assert "Scheduler hit an exception: Traceback (most recent call last):" in err
    assert "SIGQUIT received. signum=None, frame=None. It usually means one child failed." in err


def test_hang_never_gets_ready(start_sim: StartSim) -> None:
    sim = start_sim(SMALL, env={"SGLANG_SIM_FAULT": "hang"}, ready=False)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if requests.get(sim.url + "/v1/models", timeout=2).status_code == 200:
                break
        except requests.ConnectionError:
            time.sleep(0.05)
    time.sleep(0.3)
    health = requests.get(sim.url + "/health", timeout=2)
    assert health.status_code == 503 and health.content == b""
    assert sim.proc.poll() is None
    assert "ready to roll" not in sim.stderr()


def test_slow_start_delays_readiness(start_sim: StartSim) -> None:
    began = time.monotonic()
    start_sim(SMALL, env={"SGLANG_SIM_FAULT": "slow-start=1.5"})
    assert time.monotonic() - began >= 1.5


def test_bad_fault_is_one_line_error(start_sim: StartSim) -> None:
    sim = start_sim(SMALL, env={"SGLANG_SIM_FAULT": "explode"}, ready=False)
    assert sim.wait_exit() == 2
    assert "SGLANG_SIM_FAULT='explode' is not a fault" in sim.stderr()


def test_ignore_flag_runs_with_the_default(start_sim: StartSim) -> None:
    sim = start_sim(SEED_ARGS, env={"SGLANG_SIM_IGNORE_FLAG": "--served-model-name"})
    line = next(x for x in sim.stderr().splitlines() if "server_args=" in x)
    logged = parse_server_args(line)
    assert logged["served_model_name"] == logged["model_path"]  # requested name not applied
    assert logged["speculative_num_steps"] == 2
    models = requests.get(sim.url + "/v1/models", timeout=5).json()
    assert models["data"][0]["id"] == "/shared/models/Qwen3.5-122B-A10B"


def test_sigterm_drains_then_sigkills_itself(start_sim: StartSim) -> None:
    sim = start_sim(SMALL)
    sim.proc.send_signal(signal.SIGTERM)
    assert sim.wait_exit() == -signal.SIGKILL
    assert "SIGTERM received. signum=15 frame=" in sim.stderr()
    assert "Draining requests and shutting down..." in sim.stderr()


FAILURES = Path(__file__).resolve().parents[1] / "data" / "failures"


def test_replay_writes_a_real_failure_and_dies_as_it_did(start_sim: StartSim) -> None:
    log = FAILURES / "nccl_unhandled_system_error.log"
    sim = start_sim(SMALL, env={"SGLANG_SIM_FAULT": f"replay:{log}"}, ready=False)
    assert sim.wait_exit() == -signal.SIGKILL
    assert sim.stderr().splitlines() == log.read_text().splitlines()


def test_replay_of_a_main_process_exception_exits_1(start_sim: StartSim) -> None:
    log = FAILURES / "trust_remote_code_needed.log"
    sim = start_sim(SMALL, env={"SGLANG_SIM_FAULT": f"replay:{log}"}, ready=False)
    assert sim.wait_exit() == 1
    assert "set the option `trust_remote_code=True`" in sim.stderr().splitlines()[-1]


def test_replay_of_a_cxx_runtime_abort_ends_by_sigabrt(start_sim: StartSim) -> None:
    """The forty-eighth batch's ``PYTORCH_CUDA_ALLOC_CONF=not-a-value``: torch's ``c10::Error``
    as its CUDA library loads, which no code catches; the C++ runtime aborts the main process."""
    log = FAILURES / "fresh48_real_libenv_pytorch_cuda_alloc_conf.log"
    sim = start_sim(SMALL, env={"SGLANG_SIM_FAULT": f"replay:{log}"}, ready=False)
    assert sim.wait_exit() == -signal.SIGABRT
    assert "terminate called after throwing an instance of 'c10::Error'" in sim.stderr()


@pytest.mark.parametrize(
    ("record", "ended"),
    [
        ("fresh49_real_unit_systemcallfilter_resources.log", -signal.SIGSYS),
        ("fresh49_real_unit_protecthome_yes.log", 203),
    ],
)
def test_replay_of_a_unit_journal_ends_as_the_service_manager_said(
    start_sim: StartSim, record: str, ended: int
) -> None:
    """The forty-ninth batch's records are a unit's journal: the service manager's line says how
    the main process ended (``code=killed, status=31/SYS`` under a system-call filter;
    ``status=203/EXEC`` when the program is hidden), and the replay ends so."""
    log = FAILURES / record
    sim = start_sim(SMALL, env={"SGLANG_SIM_FAULT": f"replay:{log}"}, ready=False)
    assert sim.wait_exit() == ended


def test_replay_of_a_healthy_start_then_serves(start_sim: StartSim) -> None:
    log = FAILURES / "fine_ignore_import_error_gcc.log"
    sim = start_sim(SMALL, env={"SGLANG_SIM_FAULT": f"replay:{log}"})
    err = sim.stderr()
    assert "Ignore import error when loading sglang.srt.models.deepseek_v2." in err
    assert err.count("The server is fired up and ready to roll!") == 1  # the simulator's own
    assert requests.get(sim.url + "/health", timeout=5).status_code == 200


def test_replay_of_a_missing_log_is_one_line_error(start_sim: StartSim) -> None:
    sim = start_sim(SMALL, env={"SGLANG_SIM_FAULT": "replay:/no/such.log"}, ready=False)
    assert sim.wait_exit() == 2
    assert sim.stderr().strip() == (
        "sglang-sim: error: SGLANG_SIM_FAULT='replay:/no/such.log': no readable log at "
        "'/no/such.log'; give replay:<file>"
    )
