"""``ModelConfig._verify_quantization`` and ``_derive_context_length`` of 0.5.23, in the
simulator and the predictor alike (pytest_sglang.model_config_rules).

Built from the source's conditions and checked once against the real package on the wide
matrix's checkpoints (an FP8 DeepSeek-R1, an MXFP4 gpt-oss; conformance/harness.py's stubs):
the lines below are what it logged or raised.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_sglang.config import ServerConfig
from pytest_sglang.errors import ConfigError
from pytest_sglang.model_config_rules import verify_quantization
from pytest_sglang.sim import cli, post_init
from pytest_sglang.sim.perf import GpuSpec

H200 = GpuSpec(name="NVIDIA H200", memory_gb=141, total_mib=143771, capability=(9, 0))
R1 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "max_position_embeddings": 163840,
    "kv_lora_rank": 512,
    "num_hidden_layers": 61,
    "hidden_size": 7168,
    "n_routed_experts": 256,
    "quantization_config": {"quant_method": "fp8", "fmt": "e4m3"},
}
GPT_OSS = {
    "architectures": ["GptOssForCausalLM"],
    "max_position_embeddings": 131072,
    "quantization_config": {"quant_method": "mxfp4"},
}


@pytest.fixture
def models(tmp_path: Path) -> Path:
    for name, config in (("DeepSeek-R1-0528", R1), ("gpt-oss-20b", GPT_OSS)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    return tmp_path


def _sim(model: Path, *flags: str) -> post_init.Resolved:
    parsed = cli.parse_args(["--model-path", str(model), *flags], "0.5.23")
    return post_init.resolve_args(parsed, "0.5.23", H200)


@pytest.mark.parametrize(
    ("model", "quantization", "checkpoint"),
    [
        ("DeepSeek-R1-0528", "awq", "fp8"),
        ("DeepSeek-R1-0528", "modelopt_fp8", "fp8"),  # compatible only with "modelopt"
        ("gpt-oss-20b", "fp8", "mxfp4"),
        ("gpt-oss-20b", "humming", "mxfp4"),  # humming's override skips MXFP4
    ],
)
def test_a_quantization_the_checkpoint_does_not_match_is_refused(
    models: Path, model: str, quantization: str, checkpoint: str
) -> None:
    line = (
        f"ValueError: Quantization method specified in the model config ({checkpoint}) does not "
        f"match the quantization method specified in the `quantization` argument "
        f"({quantization})."
    )
    with pytest.raises(post_init.ResolutionError) as caught:
        _sim(models / model, "--quantization", quantization)
    assert caught.value.line == line
    assert caught.value.frames[-1][1:3] == (2143, "_verify_quantization")
    config = ServerConfig(model_path=str(models / model), quantization=quantization)
    with pytest.raises(ConfigError) as refused:
        config.resolved()
    assert str(refused.value) == f"quantization: SGLang would refuse {quantization}: {line}"


def test_compatible_and_requantizing_methods_are_logged_first(models: Path) -> None:
    compatible = _sim(models / "DeepSeek-R1-0528", "--quantization", "modelopt_fp4")
    assert compatible.warnings[0] == (
        "Using CLI-specified quantization (modelopt_fp4) which is compatible with HF config "
        "quant_method (fp8)."
    )
    requantized = _sim(models / "DeepSeek-R1-0528", "--quantization", "quark_mxfp4")
    assert requantized.warnings[0].startswith(
        "Requantizing from quant_method='fp8' to the requested online "
        "quantization='quark_mxfp4'. Beware"
    )
    humming = _sim(models / "DeepSeek-R1-0528", "--quantization", "humming")
    assert humming.warnings[0] == "Piecewise CUDA graph is enabled, use MLA for prefill."
    for flag in ("modelopt_fp4", "quark_mxfp4", "humming", "fp8"):
        ServerConfig(model_path=str(models / "DeepSeek-R1-0528"), quantization=flag).resolved()


def test_rule_is_silent_where_a_class_rewrites_the_checkpoints_method() -> None:
    """AWQ/GPTQ (Marlin), ModelOpt and compressed-tensors checkpoints are rewritten by
    GPU-dependent ``override_quantization_method``s: not modelled, never refused here."""
    assert verify_quantization("fp8", "awq").error is None
    assert verify_quantization("fp8", "compressed-tensors").error is None
    assert verify_quantization(None, "FP8").quantization == "fp8"
    assert verify_quantization("fp8", None).quantization == "fp8"


def test_a_longer_context_the_environment_allows_is_logged(
    models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "1")
    resolved = _sim(models / "gpt-oss-20b", "--context-length", "200000")
    assert resolved.warnings[0] == (
        "Warning: User-specified context_length (200000) is greater than the derived "
        "context_length (131072). This may lead to incorrect model outputs or CUDA errors. "
        "Note that the derived context_length may differ from max_position_embeddings in the "
        "model's config."
    )
