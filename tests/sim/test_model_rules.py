"""The simulator's per-architecture rules, each built from 0.5.23's source condition.

Why: the conformance goldens reach these rules only on the configs someone chose; these tests
hold each branch of the source (``arg_groups/model_overrides/nemotron_h.py``, ``olmo2.py``,
``gemma2_gemma3.py``, ``minimax_m2.py``, ``llama4.py``, ``gemma4.py``, ``cohere2_moe.py``,
``ModelConfig``'s notes, ``_handle_eagle_family``'s and ``_handle_ngram``'s refusals) on the GPU
generations and settings that decide it, messages and order included; the probes of
conformance/probes.py hold them to what the real package logged for the same command lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang import gpu_rules
from pytest_sglang.config import ServerConfig
from pytest_sglang.errors import ConfigError
from pytest_sglang.sim import cli, post_init
from pytest_sglang.sim.perf import GpuSpec

NEMOTRON = {
    "architectures": ["NemotronHForCausalLM"],
    "model_type": "nemotron_h",
    "max_position_embeddings": 131072,
    "num_hidden_layers": 56,
    "hidden_size": 4480,
    "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-",
}
GPUS = {
    "b200": GpuSpec(name="NVIDIA B200", memory_gb=180, total_mib=183359, capability=(10, 0)),
    "h100": GpuSpec(name="NVIDIA H100 80GB HBM3", memory_gb=80, total_mib=81559, capability=(9, 0)),
    "rtx": GpuSpec(
        name="NVIDIA RTX PRO 6000 Blackwell Server Edition",
        memory_gb=96,
        total_mib=97887,
        capability=(12, 0),
    ),
}
SM100_MOE = "Use flashinfer_trtllm as MoE runner backend on sm100 for NemotronHForCausalLM"


@pytest.fixture
def nemotron(tmp_path: Path) -> str:
    model = tmp_path / "NVIDIA-Nemotron-Nano-9B-v2"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(NEMOTRON))
    return str(model)


def _resolve(model: str, gpu: str, *flags: str) -> post_init.Resolved:
    parsed = cli.parse_args(["--model-path", model, *flags], "0.5.23")
    return post_init.resolve_args(parsed, "0.5.23", GPUS[gpu])


def _args(resolved: post_init.Resolved, *keys: str) -> dict[str, Any]:
    return {key: resolved.args.get(key) for key in keys}


def test_nemotron_h_on_sm100_takes_trtllm_moe_and_mha_without_a_default_note(
    nemotron: str,
) -> None:
    """Unquantized, no a2a backend, sm100: flashinfer_trtllm (logged first, by the override);
    no speculation on sm100: trtllm_mha, so no "not specified" note, then the page snap."""
    resolved = _resolve(nemotron, "b200")
    assert _args(resolved, "moe_runner_backend", "attention_backend", "page_size") == {
        "moe_runner_backend": "flashinfer_trtllm",
        "attention_backend": "trtllm_mha",
        "page_size": 64,
    }
    assert resolved.warnings[0] == SM100_MOE
    assert not any("not specified" in w for w in resolved.warnings)
    assert resolved.warnings.index(SM100_MOE) < resolved.warnings.index(
        gpu_rules.TRTLLM_MHA_PAGE_WARNING.format(page=None)
    )


@pytest.mark.parametrize("gpu", ["h100", "rtx"])
def test_nemotron_h_off_sm100_takes_cutlass_silently(nemotron: str, gpu: str) -> None:
    """Off sm100 the override's last MoE branch: flashinfer_cutlass, no message; attention is
    left to the default (sm120 without speculation: not the override's)."""
    resolved = _resolve(nemotron, gpu)
    assert resolved.args["moe_runner_backend"] == "flashinfer_cutlass"
    assert not any("MoE runner" in w for w in resolved.warnings)
    default = "fa3" if gpu == "h100" else "flashinfer"
    assert resolved.args["attention_backend"] == default


def test_nemotron_h_a_set_moe_runner_or_attention_backend_is_kept(nemotron: str) -> None:
    resolved = _resolve(
        nemotron, "b200", "--moe-runner-backend", "triton", "--attention-backend", "flashinfer"
    )
    assert _args(resolved, "moe_runner_backend", "attention_backend") == {
        "moe_runner_backend": "triton",
        "attention_backend": "flashinfer",
    }
    assert SM100_MOE not in resolved.warnings


def test_nemotron_h_speculation_on_blackwell(nemotron: str) -> None:
    """With speculation: sm100 and topk unset or 1 -> trtllm_mha at page 64 with an extra
    mamba buffer (EAGLE's draft on trtllm_mha too); topk above 1, or sm120 -> triton (EAGLE's
    draft on flashinfer)."""
    eagle = ["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "2"]
    one = _resolve(nemotron, "b200", *eagle, "--speculative-eagle-topk", "1")
    assert _args(
        one,
        "attention_backend",
        "page_size",
        "mamba_radix_cache_strategy",
        "speculative_draft_attention_backend",
    ) == {
        "attention_backend": "trtllm_mha",
        "page_size": 64,
        "mamba_radix_cache_strategy": "extra_buffer",
        "speculative_draft_attention_backend": "trtllm_mha",
    }
    four = _resolve(nemotron, "b200", *eagle, "--speculative-eagle-topk", "4")
    assert _args(four, "attention_backend", "speculative_draft_attention_backend") == {
        "attention_backend": "triton",
        "speculative_draft_attention_backend": "flashinfer",
    }
    rtx = _resolve(nemotron, "rtx", *eagle, "--speculative-eagle-topk", "1")
    assert rtx.args["attention_backend"] == "triton"


def test_nemotron_h_ngram_on_sm100_is_refused_on_the_paged_backend(nemotron: str) -> None:
    """NGRAM on sm100: the override's trtllm_mha at page 64, where NGRAM's BFS breadth of 10
    is refused (``_handle_ngram``); on sm120 the override's triton at page 1 runs."""
    with pytest.raises(post_init.ResolutionError) as caught:
        _resolve(nemotron, "b200", "--speculative-algorithm", "NGRAM")
    assert caught.value.line == gpu_rules.NGRAM_PAGED_ERROR.format(topk=10, page=64)
    assert caught.value.warnings[0] == SM100_MOE
    rtx = _resolve(nemotron, "rtx", "--speculative-algorithm", "NGRAM")
    assert _args(rtx, "attention_backend", "speculative_draft_attention_backend") == {
        "attention_backend": "triton",
        "speculative_draft_attention_backend": None,
    }


def test_nemotron_h_attention_rule_is_the_one_the_predictor_reads() -> None:
    rule = gpu_rules.nemotron_h_attention
    assert rule("NemotronHForCausalLM", 10, None, None) == "trtllm_mha"
    assert rule("NemotronHForCausalLM", 12, None, None) is None
    assert rule("NemotronHForCausalLM", 9, "EAGLE", 4) is None
    assert rule("NemotronHPuzzleForCausalLM", 10, "NGRAM", None) == "trtllm_mha"
    assert rule("NemotronHForCausalLM", 10, "EAGLE", 4) == "triton"
    assert rule("LlamaForCausalLM", 10, None, None) is None


# -- hand-written probes run through the real package (conformance/probes.py) ---------------

PROBES = json.loads(
    (Path(__file__).resolve().parent.parent / "data" / "real_probes_0.5.23.json").read_text()
)
PROBE_GPUS = {
    "b200x8": GPUS["b200"],
    "a100x8": GpuSpec(
        name="NVIDIA A100-SXM4-80GB", memory_gb=80, total_mib=81920, capability=(8, 0)
    ),
    "h200x8": GpuSpec(name="NVIDIA H200", memory_gb=141, total_mib=143771, capability=(9, 0)),
}


@pytest.fixture(scope="module")
def probe_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("probe-models")
    for name, config in PROBES["models"].items():
        (root / name).mkdir()
        (root / name / "config.json").write_text(json.dumps(config))
    return root


@pytest.mark.parametrize(
    ("profile", "probe"),
    [(p, n) for p, runs in sorted(PROBES["probes"].items()) for n in sorted(runs)],
)
def test_the_simulator_logs_and_refuses_what_real_does_on_the_probes(
    probe_models: Path, profile: str, probe: str
) -> None:
    """OLMo 2, Gemma 3, MiniMax-M2, Llama 4 and ``_verify_quantization``, each probe chosen
    from the source's condition and run through the real 0.5.23: messages in order, the
    refusal's line, and the backends the rules set; the predictor refuses what real refuses
    (knowing the GPU)."""
    real = PROBES["probes"][profile][probe]
    argv = [a.replace("{models}", str(probe_models)) for a in PROBES["argv"][probe]]
    parsed = cli.parse_args(argv, "0.5.23")
    gpu = PROBE_GPUS[profile]
    try:
        resolved = post_init.resolve_args(parsed, "0.5.23", gpu)
    except post_init.ResolutionError as exc:
        assert real["exit_code"] == 1 and exc.line == real["last_line"]
        assert exc.warnings == real["log_before_server_args"]
    else:
        assert real["exit_code"] == 0, real["last_line"]
        assert resolved.warnings == real["log_before_server_args"]
        for key, value in real["resolved"].items():
            assert resolved.args.get(key) == value, key
    facts = gpu_rules.GpuFacts(gpu.name, gpu.capability)
    if real["exit_code"]:
        with pytest.raises(ConfigError):
            ServerConfig.from_argv(argv, "0.5.23").resolved("0.5.23", gpu=facts)
    else:
        ServerConfig.from_argv(argv, "0.5.23").resolved("0.5.23", gpu=facts)


@pytest.fixture
def gemma4(tmp_path: Path) -> str:
    model = tmp_path / "gemma-4-31b"
    model.mkdir()
    config = {
        "architectures": ["Gemma4ForCausalLM"],
        "model_type": "gemma4_text",
        "torch_dtype": "bfloat16",
    }
    (model / "config.json").write_text(json.dumps(config))
    return str(model)


def test_gemma4_attention_backend_from_its_override(gemma4: str) -> None:
    """model_overrides/gemma4.py: none set -> TRT-LLM MHA on sm100, else Triton, noted (and
    no "not specified" note); only a decode backend set -> the same, silently. Hybrid SWA
    (``is_hybrid_swa_model``) is noted first. (Not probed: a minimal Gemma 4 config.json does
    not load in transformers 5.19, a published one was not at hand.)"""
    b200 = _resolve(gemma4, "b200")
    assert b200.args["attention_backend"] == "trtllm_mha"
    assert b200.warnings[:2] == [
        "Hybrid SWA model detected. architectures=['Gemma4ForCausalLM']",
        "Use trtllm_mha as default attention backend for Gemma4",
    ]
    h100 = _resolve(gemma4, "h100", "--decode-attention-backend", "fa3")
    assert h100.args["attention_backend"] == "triton"
    assert not any("Gemma4" in w and "attention" in w for w in h100.warnings)
    facts = gpu_rules.GpuFacts("NVIDIA B200", (10, 0))
    ngram = ServerConfig(model_path=gemma4, speculative_algorithm="NGRAM")
    with pytest.raises(ConfigError, match="trtllm_mha attention backend at page size 64"):
        ngram.resolved(gpu=facts)
