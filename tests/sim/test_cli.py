"""The simulator's command line is SGLang's: names, abbreviation, choices, errors, --help."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pytest_sglang.sim import emulated_version
from pytest_sglang.sim.cli import parse_args


def run_cli(*args: str, version: str = "0.5.23") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SGLANG_SIM_VERSION=version)
    return subprocess.run(
        [sys.executable, "-m", "pytest_sglang.sim", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_prefix_abbreviation_and_aliases() -> None:
    parsed = parse_args(["--model", "m", "--tp", "4", "--context-length", "32k"], "0.5.23")
    assert parsed["tp_size"] == 4
    assert parsed["model_path"] == "m"
    assert parsed["context_length"] == 32000


def test_defaults_and_types_come_from_the_catalog() -> None:
    parsed = parse_args(["--model-path", "m"], "0.5.23")
    assert parsed["port"] == 30000
    assert parsed["host"] == "127.0.0.1"
    assert parsed["max_prefill_tokens"] == 16384
    assert parsed["decode_log_interval"] == 40
    assert parsed["speculative_num_steps"] is None


def test_unknown_flag_exits_2_with_argparse_message() -> None:
    result = run_cli("--model-path", "m", "--no-such-flag", "1")
    assert result.returncode == 2
    assert "error: unrecognized arguments: --no-such-flag 1" in result.stderr


def test_ambiguous_abbreviation_exits_2() -> None:
    result = run_cli("--model-path", "m", "--speculative-num", "2")
    assert result.returncode == 2
    assert "ambiguous option: --speculative-num could match" in result.stderr


def test_bad_choice_exits_2() -> None:
    result = run_cli("--model-path", "m", "--kv-cache-dtype", "int3")
    assert result.returncode == 2
    assert "argument --kv-cache-dtype: invalid choice: 'int3'" in result.stderr


def test_missing_model_path_exits_2() -> None:
    result = run_cli("--tp", "2")
    assert result.returncode == 2
    assert "--model-path" in result.stderr


def test_help_lists_the_flags() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    # 0.5.23's prepare_server_args names its parser "sglang serve" for both entry points
    assert result.stdout.startswith("usage: sglang serve")
    for flag in ("--speculative-num-steps", "--tp-size", "--cuda-graph-max-bs-decode"):
        assert flag in result.stdout


@pytest.mark.parametrize(("version", "accepted"), [("0.5.18", True), ("0.5.23", False)])
def test_cuda_graph_max_bs_alias_exists_only_in_0_5_18(version: str, accepted: bool) -> None:
    argv = ["--model-path", "m", "--cuda-graph-max-bs", "16"]
    if accepted:
        assert parse_args(argv, version)["cuda_graph_max_bs_decode"] == 16
    else:
        with pytest.raises(SystemExit) as info:
            parse_args(argv, version)
        assert info.value.code == 2


def test_emulated_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SGLANG_SIM_VERSION", raising=False)
    assert emulated_version() == "0.5.23"
    monkeypatch.setenv("SGLANG_SIM_VERSION", "0.5.18")
    assert emulated_version() == "0.5.18"


def test_unsupported_version_is_one_line_error() -> None:
    result = run_cli("--model-path", "m", version="0.3.0")
    assert result.returncode == 2
    assert "SGLANG_SIM_VERSION='0.3.0' is not simulated" in result.stderr


def test_gpu_profile_knobs_reach_resolution(capsys: pytest.CaptureFixture[str]) -> None:
    """An H100 host: the MiB nvidia-smi reports and compute capability 9.0 pick fa3 and 0.83."""
    from pytest_sglang.sim.knobs import SimSettings
    from pytest_sglang.sim.post_init import resolve_args

    env = {"SGLANG_SIM_GPU_MEMORY_MIB": "81559", "SGLANG_SIM_GPU_CAPABILITY": "9.0"}
    gpu = SimSettings.from_env(env).gpu
    assert (gpu.memory_mib, gpu.capability) == (81559, (9, 0))
    resolved = resolve_args(parse_args(["--model-path", "/m/Qwen3-8B"], "0.5.23"), "0.5.23", gpu)
    assert resolved.args["attention_backend"] == "fa3"
    assert resolved.args["mem_fraction_static"] == 0.83
    with pytest.raises(SystemExit):
        SimSettings.from_env({"SGLANG_SIM_GPU_CAPABILITY": "hopper"})
    assert "SGLANG_SIM_GPU_CAPABILITY='hopper'" in capsys.readouterr().err


def test_a_fault_limited_to_some_servers(capsys: pytest.CaptureFixture[str]) -> None:
    """``FAULT@--flag=value``, several separated by ';': the first whose flag the server's
    command line has (either spelling) applies; a selector that is no FLAG=VALUE is one line."""
    from pytest_sglang.sim.knobs import Fault, SimSettings

    env = {"SGLANG_SIM_FAULT": "oom@--node-rank=1; slow-start=600@--node-rank=0"}
    assert SimSettings.from_env(env, ["--node-rank", "1"]).fault == Fault("oom")
    assert SimSettings.from_env(env, ["--node-rank=0"]).fault == Fault("slow-start", 600.0)
    assert SimSettings.from_env(env, ["--node-rank", "2"]).fault == Fault()
    assert SimSettings.from_env({"SGLANG_SIM_FAULT": "hang"}, ["--port", "1"]).fault.kind == "hang"
    with pytest.raises(SystemExit):
        SimSettings.from_env({"SGLANG_SIM_FAULT": "oom@node-rank"}, ["--node-rank", "1"])
    assert "'node-rank' is not FLAG=VALUE" in capsys.readouterr().err
