"""Startup journal: milestones in SGLang's order, TP prefixes, and a parseable server_args line."""

from __future__ import annotations

import re
from typing import Any

import pytest
from helpers import SEED_FIELDS

from conftest import SEED_ARGS, StartSim
from pytest_sglang.config import ServerConfig
from pytest_sglang.server_args import parse_server_args
from pytest_sglang.sim.cli import parse_args
from pytest_sglang.sim.post_init import format_server_args, resolve_args

LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)( TP\d+)?\] (.*)$")

MILESTONES_SPEC = [
    "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1",
    "server_args={",
    "Using default HuggingFace chat template",
    "Load weight begin.",
    "Load weight end.",
    "KV Cache is allocated.",
    "Memory pool end.",
    "Capture target prefill CUDA graph begin. backend=breakable, num_tokens=[4, 8,",
    "Capture target prefill CUDA graph end.",
    "Capture target verify CUDA graph begin.",
    "Capture target verify CUDA graph end.",
    "Capture draft decode CUDA graph begin.",
    "Capture draft extend CUDA graph end.",
    "max_total_num_tokens=",
    "INFO:     Started server process",
    "INFO:     Uvicorn running on http://127.0.0.1:",
    "Prefill batch, #new-seq: 1",
    "The server is fired up and ready to roll!",
]


def messages(stderr: str) -> list[tuple[str, str]]:
    out = []
    for line in stderr.splitlines():
        match = LINE.match(line)
        if match:
            out.append((match.group(2) or "", match.group(3)))
    return out


def assert_in_order(msgs: list[str], expected: list[str]) -> None:
    pos = 0
    for needle in expected:
        while pos < len(msgs) and needle not in msgs[pos]:
            pos += 1
        assert pos < len(msgs), f"milestone missing or out of order: {needle!r}"


def test_tp4_milestones_in_order_with_rank_prefixes(start_sim: StartSim) -> None:
    sim = start_sim(SEED_ARGS)
    msgs = messages(sim.stderr())
    assert_in_order([m for _, m in msgs], MILESTONES_SPEC)
    ranks = {p for p, m in msgs if m.startswith("Load weight end.")}
    assert ranks == {" TP0", " TP1", " TP2", " TP3"}
    # 0.5.23's formats: no torch-distributed lines, the capture list on the end line, the
    # draft worker's graphs logged by rank 0 only
    assert not any("Init torch distributed" in m for _, m in msgs)
    verify_end = [m for p, m in msgs if m.startswith("Capture target verify CUDA graph end.")]
    assert len(verify_end) == 4 and all(m.startswith(verify_end[0][:50]) for m in verify_end)
    assert "bs=[1, 2, 3, 4, 5, 6, 7, 8, 10," in verify_end[0]
    assert {p for p, m in msgs if m.startswith("Capture draft")} == {" TP0"}
    assert all("dtype=" not in m for _, m in msgs if m.startswith("Load weight end."))
    main_lines = [m for p, m in msgs if p == ""]
    assert any(m.startswith("server_args={") for m in main_lines)
    summary = [m for p, m in msgs if m.startswith("max_total_num_tokens=")]
    assert len(summary) == 1 and "max_running_requests=21" in summary[0]
    assert "Loading safetensors checkpoint shards: 100% Completed" in sim.stderr()
    assert '"POST /generate HTTP/1.1" 200 OK' in sim.stdout()


def test_tp1_has_no_prefix_and_no_draft_phases(start_sim: StartSim) -> None:
    sim = start_sim(["--model-path", "meta-llama/Llama-3.1-8B-Instruct"])
    msgs = messages(sim.stderr())
    assert all(prefix == "" for prefix, _ in msgs)
    text = [m for _, m in msgs]
    assert_in_order(
        text,
        [
            "Attention backend not specified",
            "server_args={",
            "Load weight end. elapsed=",
            "KV Cache is allocated.",
            "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1",
            "max_total_num_tokens=",
            "The server is fired up and ready to roll!",
        ],
    )
    assert not any(m.startswith("Capture draft") for m in text)


def _logged(argv: list[str], version: str) -> dict[str, Any]:
    resolved = resolve_args(parse_args(argv, version), version)
    return parse_server_args("[2026-01-01 00:00:00] " + format_server_args(resolved.args, version))


@pytest.mark.parametrize("version", ["0.5.18", "0.5.23"])
def test_server_args_parses_and_agrees_with_server_config(version: str) -> None:
    config = ServerConfig(
        **{**SEED_FIELDS, "speculative_num_steps": 3}, speculative_num_draft_tokens=8
    )
    argv = config.to_argv(version) if hasattr(config, "to_argv") else [
        "--model-path", config.model_path, "--served-model-name", "qwen3.5-122b",
        "--tp", "4", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "8",
    ]  # fmt: skip
    logged = _logged(argv, version)
    expected = config.resolved(version)
    for field in (
        "model_path",
        "served_model_name",
        "tp_size",
        "max_running_requests",
        "speculative_algorithm",
        "speculative_num_steps",
        "speculative_eagle_topk",
        "speculative_num_draft_tokens",
    ):
        assert logged[field] == getattr(expected, field), field
    assert logged["speculative_num_draft_tokens"] == 4


def test_server_args_format_per_version() -> None:
    argv = ["--model-path", "Qwen/Qwen2.5-0.5B-Instruct"]
    new = format_server_args(resolve_args(parse_args(argv, "0.5.23"), "0.5.23").args, "0.5.23")
    old = format_server_args(resolve_args(parse_args(argv, "0.5.18"), "0.5.18").args, "0.5.18")
    assert new.startswith("server_args={'model_path': 'Qwen/Qwen2.5-0.5B-Instruct', ")
    assert old.startswith("server_args=ServerArgs(model_path='Qwen/Qwen2.5-0.5B-Instruct', ")
    assert len(parse_server_args(new)) == 546
    assert len(parse_server_args(old)) == 543


def test_nextn_becomes_eagle_and_auto_params() -> None:
    logged = _logged(["--model-path", "/m/Qwen3-32B", "--speculative-algorithm", "NEXTN"], "0.5.23")
    assert logged["speculative_algorithm"] == "EAGLE"
    assert (
        logged["speculative_num_steps"],
        logged["speculative_eagle_topk"],
        logged["speculative_num_draft_tokens"],
    ) == (3, 1, 4)
    llama = _logged(
        ["--model-path", "/m/Llama-3.1-8B", "--speculative-algorithm", "EAGLE"], "0.5.23"
    )
    assert llama["speculative_num_steps"] == 5 and llama["speculative_eagle_topk"] == 4


def test_ngram_default_draft_tokens_with_warning() -> None:
    argv = ["--model-path", "m-7B", "--speculative-algorithm", "NGRAM"]
    resolved = resolve_args(parse_args(argv, "0.5.23"), "0.5.23")
    assert resolved.args["speculative_num_draft_tokens"] == 12
    assert any("set to 12 by default for ngram" in w for w in resolved.warnings)
