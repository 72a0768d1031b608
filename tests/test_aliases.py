"""Deprecated spellings, fixed choices and NGRAM's step count, as the real SGLang 0.5.23 has them.

``tests/data/real_aliases_0.5.23.json`` holds what the real package's parser and
``resolve_once()`` made of each command line (conformance/harness.py's ``run_config``, profile
h200x8): the plugin's ``expected_journal()`` must expect what it logged, and the simulator must
log it, warnings included and in order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang import ConfigError, ServerConfig
from pytest_sglang.sim.cli import parse_args
from pytest_sglang.sim.perf import GpuSpec
from pytest_sglang.sim.post_init import resolve_args

REAL = json.loads((Path(__file__).parent / "data" / "real_aliases_0.5.23.json").read_text())
MODEL = "/models/Qwen3-8B"
H200 = GpuSpec(name="NVIDIA H200", memory_gb=141.0, total_mib=143771, capability=(9, 0))
STARTS = {name: entry for name, entry in REAL["configs"].items() if entry["exit_code"] == 0}


def _config(argv: list[str]) -> ServerConfig:
    """The argv as a ServerConfig: typed flags become fields, the rest pass through."""
    return ServerConfig.from_argv(["--model-path", MODEL, *argv])


@pytest.mark.parametrize("name", sorted(STARTS))
def test_plugin_expects_what_real_sglang_logs(name: str) -> None:
    entry = STARTS[name]
    facts = _config(entry["argv"]).expected_journal("0.5.23")
    logged = entry["server_args"]
    wrong = {
        key: (want, logged[key])
        for key, want in facts.server_args.items()
        if key in logged and logged[key] != want
    }
    assert not wrong, f"expected vs real: {wrong}"
    for warning in facts.warnings:
        assert warning in entry["log_before_server_args"]


@pytest.mark.parametrize("name", sorted(STARTS))
def test_simulator_logs_what_real_sglang_logs(name: str) -> None:
    entry = STARTS[name]
    resolved = resolve_args(
        parse_args(["--model-path", MODEL, *entry["argv"]], "0.5.23"), "0.5.23", H200
    )
    assert resolved.warnings == entry["log_before_server_args"]
    for key, value in entry["server_args"].items():
        assert resolved.args[key] == value, key


def test_deprecated_tool_call_parser_is_expected_renamed_with_its_warning() -> None:
    facts = ServerConfig(
        model_path="m", extra_args=("--tool-call-parser", "glm45")
    ).expected_journal()
    assert facts.server_args["tool_call_parser"] == "glm"
    assert facts.warnings == (
        "The tool_call_parser 'glm45' is deprecated. Please use 'glm' instead.",
    )


def test_deprecated_attention_backend_resolves_to_its_new_name() -> None:
    cfg = ServerConfig(model_path="m", attention_backend="compressed")
    assert cfg.resolved().attention_backend == "dsv4"
    assert cfg.expected_journal().server_args["attention_backend"] == "dsv4"


def test_tokenspeed_mla_brings_fp8_kv_as_real_sglang_does() -> None:
    cfg = ServerConfig(model_path="m", attention_backend="tokenspeed_mla")
    resolved = cfg.resolved()
    assert (resolved.attention_backend, resolved.kv_cache_dtype) == ("cutedsl_mla", "fp8_e4m3")
    assert "tokenspeed_mla required FP8 KV; setting --kv-cache-dtype=fp8_e4m3." in (
        cfg.expected_journal().warnings
    )


# -- NGRAM: steps = draft tokens // BFS breadth, 0 included -----------------------------------


@pytest.mark.parametrize(
    ("draft", "extra", "steps", "topk"),
    [
        (8, (), 0, 10),
        (9, (), 0, 10),
        (12, (), 1, 10),
        (8, ("--speculative-ngram-max-bfs-breadth", "4"), 2, 4),
    ],
)
def test_ngram_steps_follow_draft_tokens_and_breadth(
    draft: int, extra: tuple[str, ...], steps: int, topk: int
) -> None:
    cfg = ServerConfig(
        model_path="m",
        speculative_algorithm="NGRAM",
        speculative_num_draft_tokens=draft,
        extra_args=extra,
    )
    resolved = cfg.resolved()
    assert (resolved.speculative_num_steps, resolved.speculative_eagle_topk) == (steps, topk)
    facts = cfg.expected_journal().server_args
    assert (facts["speculative_num_steps"], facts["speculative_eagle_topk"]) == (steps, topk)


def test_zero_steps_are_refused_outside_ngram() -> None:
    with pytest.raises(ConfigError, match=r"speculative_num_steps: must be >= 1 \(got 0\)"):
        ServerConfig(
            model_path="m",
            speculative_algorithm="EAGLE",
            speculative_num_steps=0,
            speculative_eagle_topk=1,
        )


# -- choices ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "flag", "value"),
    [
        ({"kv_cache_dtype": "fp8"}, "--kv-cache-dtype", "'fp8'"),
        ({"quantization": "int3"}, "--quantization", "'int3'"),
        ({"attention_backend": "nope"}, "--attention-backend", "'nope'"),
        ({"extra_args": ("--tool-call-parser", "glm46x")}, "--tool-call-parser", "'glm46x'"),
        ({"extra_args": ("--tool-call-parser=nope",)}, "--tool-call-parser", "'nope'"),
        ({"extra_args": ("--reasoning-pars", "nope")}, "--reasoning-parser", "'nope'"),
        ({"extra_args": ("--log-requests-level", "7")}, "--log-requests-level", "'7'"),
        (
            {"extra_args": ("--lora-target-modules", "q_proj", "everything")},
            "--lora-target-modules",
            "'everything'",
        ),
    ],
)
def test_values_outside_the_choices_are_refused_in_one_line(
    changes: dict[str, Any], flag: str, value: str
) -> None:
    with pytest.raises(ConfigError) as info:
        ServerConfig(model_path="m", **changes)
    message = str(info.value)
    assert "\n" not in message
    assert f"{flag} {value} is not one of its choices" in message
    assert "use one of: " in message


def test_the_refusal_lists_the_valid_choices() -> None:
    with pytest.raises(ConfigError) as info:
        ServerConfig(model_path="m", kv_cache_dtype="fp8")
    assert str(info.value).endswith(
        "use one of: auto, fp8_e5m2, fp8_e4m3, mxfp8, bf16, bfloat16, nvfp4, fp4_mx_block16"
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"kv_cache_dtype": "fp8_e4m3", "quantization": "fp8", "attention_backend": "fa3"},
        {"extra_args": ("--tool-call-parser", "glm45", "--log-requests-level", "2")},
        {"extra_args": ("--tool-call", "qwen", "--chat-template", "anything")},
        {"extra_args": ("--lora-target-modules", "q_proj", "v_proj")},
    ],
)
def test_values_among_the_choices_are_accepted(changes: dict[str, Any]) -> None:
    ServerConfig(model_path="m", **changes)


def test_a_launch_line_with_a_bad_choice_is_refused() -> None:
    with pytest.raises(ConfigError, match="--kv-cache-dtype 'fp8' is not one of its choices"):
        ServerConfig.from_argv("python -m sglang.launch_server --model-path m --kv-cache-dtype fp8")


def test_real_sglang_refuses_what_the_plugin_refuses() -> None:
    entry = REAL["configs"]["kv_fp8"]
    assert entry["exit_code"] == 2
    assert "invalid choice: 'fp8'" in entry["last_line"]
    with pytest.raises(ConfigError):
        _config(entry["argv"])
