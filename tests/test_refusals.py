"""The predictor refuses up front what SGLang 0.5.23 refuses from the command line and the
model's config.json alone, and, where the host's GPU is known, what that GPU cannot run
(figures on the wide goldens: tests/conformance/test_wide_goldens.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_sglang.config import ServerConfig
from pytest_sglang.errors import ConfigError
from pytest_sglang.gpu_rules import TRTLLM_MLA_GPU_ERROR, GpuFacts, gpu_facts
from pytest_sglang.lifecycle.launch_plan import make_launch_plan


@pytest.fixture
def models(tmp_path: Path) -> Path:
    """A models root holding one model's config.json (Mistral-7B's published values)."""
    model = tmp_path / "Mistral-7B-Instruct-v0.3"
    model.mkdir()
    config = {
        "architectures": ["MistralForCausalLM"],
        "max_position_embeddings": 32768,
        "num_hidden_layers": 32,
        "hidden_size": 4096,
    }
    (model / "config.json").write_text(json.dumps(config))
    return tmp_path


def test_a_context_above_the_models_is_refused(models: Path) -> None:
    config = ServerConfig(
        model_path=str(models / "Mistral-7B-Instruct-v0.3"), context_length=300000
    )
    with pytest.raises(ConfigError, match=r"context_length: .*\(300000\).*\(32768\)"):
        config.resolved()


def test_a_context_within_the_models_resolves(models: Path) -> None:
    config = ServerConfig(model_path=str(models / "Mistral-7B-Instruct-v0.3"), context_length=16384)
    assert config.resolved().context_length == 16384


def test_the_configs_env_allows_a_longer_context_this_process_does_not(
    models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server reads the variable from its own environment (the config's), never from the
    environment of the pytest process that plans it."""
    config = ServerConfig(
        model_path=str(models / "Mistral-7B-Instruct-v0.3"), context_length=300000
    )
    monkeypatch.setenv("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "1")
    with pytest.raises(ConfigError, match=r"context_length: SGLang would refuse it"):
        config.resolved()
    allowed = config.replace(env={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"})
    assert allowed.resolved().context_length == 300000
    assert allowed.expected_journal().server_args["context_length"] == 300000


def test_a_missing_model_among_readable_ones_is_refused(models: Path) -> None:
    config = ServerConfig(model_path=str(models / "no-such-model"))
    with pytest.raises(ConfigError, match=r"model_path: .*Repo id must be in the form"):
        config.expected_journal()


def test_a_missing_draft_among_readable_models_is_refused(models: Path) -> None:
    config = ServerConfig.from_argv(
        [
            "--model-path",
            str(models / "Mistral-7B-Instruct-v0.3"),
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-draft-model-path",
            str(models / "no-such-draft"),
        ]
    )
    with pytest.raises(ConfigError, match=r"speculative_draft_model_path: "):
        config.resolved()


def test_a_path_only_the_host_has_is_not_refused(tmp_path: Path) -> None:
    """Away from the host (a dry run, a sweep planned offline) a path with no readable model
    next to it says nothing: SGLang on the host may well find it."""
    config = ServerConfig(model_path=str(tmp_path / "elsewhere" / "Qwen3-8B"))
    assert config.resolved().model_path.endswith("Qwen3-8B")


def test_dp_attention_not_dividing_tp_is_refused(models: Path) -> None:
    config = ServerConfig.from_argv(
        [
            "--model-path",
            str(models / "Mistral-7B-Instruct-v0.3"),
            "--tp-size",
            "2",
            "--dp-size",
            "3",
            "--enable-dp-attention",
        ]
    )
    with pytest.raises(ConfigError, match=r"dp_size: .*tp_size \(2\).*dp_size \(3\)"):
        config.resolved()


# -- refusals that depend on the GPU: only where the host's GPU is known ----------------------

H100 = GpuFacts("NVIDIA H100 80GB HBM3", (9, 0))
A100 = GpuFacts("NVIDIA A100-SXM4-80GB", (8, 0))
B200 = GpuFacts("NVIDIA B200", (10, 0))


@pytest.fixture
def gpt_oss(tmp_path: Path) -> str:
    """A gpt-oss-20b model directory (the architecture whose override picks TRT-LLM MHA on sm100)."""
    model = tmp_path / "gpt-oss-20b"
    model.mkdir()
    config = {"architectures": ["GptOssForCausalLM"], "max_position_embeddings": 131072}
    (model / "config.json").write_text(json.dumps(config))
    return str(model)


def test_gpu_facts_read_nvidia_smis_answer() -> None:
    answer = "NVIDIA H100 80GB HBM3, 81559 MiB, 9.0\nNVIDIA H100 80GB HBM3, 81559 MiB, 9.0\n"
    assert gpu_facts(answer) == H100
    assert gpu_facts("") is None  # no driver, no GPU
    assert gpu_facts("NVIDIA T4, 15360 MiB, [N/A]") is None


def test_trtllm_mla_off_blackwell_is_refused_naming_flag_value_and_gpu(models: Path) -> None:
    config = ServerConfig(
        model_path=str(models / "Mistral-7B-Instruct-v0.3"), attention_backend="trtllm_mla"
    )
    with pytest.raises(ConfigError) as caught:
        config.resolved(gpu=H100)
    message = str(caught.value)
    assert message.startswith(
        "attention_backend: SGLang would refuse trtllm_mla on NVIDIA H100 80GB HBM3 (sm90): "
    )
    assert message.endswith(TRTLLM_MLA_GPU_ERROR) and "\n" not in message
    config.resolved()  # no GPU known: silent
    config.resolved(gpu=B200)


def test_trtllm_mha_prefill_before_hopper_is_refused(models: Path) -> None:
    config = ServerConfig(
        model_path=str(models / "Mistral-7B-Instruct-v0.3"), attention_backend="trtllm_mha"
    )
    with pytest.raises(ConfigError, match=r"^attention_backend: .* on NVIDIA A100-SXM4-80GB"):
        config.expected_journal(gpu=A100)
    config.expected_journal(gpu=H100)
    config.expected_journal()


def test_ngram_on_the_paged_backend_sm100_picks_is_refused(gpt_oss: str) -> None:
    """gpt-oss on sm100 gets TRT-LLM MHA at page size 64, where NGRAM's BFS breadth of 10
    is refused; on Hopper it gets FA3 at page size 1, which runs."""
    config = ServerConfig(model_path=gpt_oss, speculative_algorithm="NGRAM")
    with pytest.raises(
        ConfigError,
        match=r"^speculative_algorithm: SGLang would refuse NGRAM with the trtllm_mha attention "
        r"backend at page size 64 on NVIDIA B200 \(sm100\): ValueError: speculative_eagle_topk",
    ):
        config.resolved(gpu=B200)
    assert config.resolved(gpu=H100).speculative_eagle_topk == 10
    config.resolved()


def test_the_simulator_refuses_with_the_same_line(models: Path) -> None:
    """One copy of the rule: the simulator playing SGLang on an H100 ends on the line the
    predictor quotes."""
    from pytest_sglang.sim import cli, post_init
    from pytest_sglang.sim.perf import GpuSpec

    argv = ["--model-path", str(models / "Mistral-7B-Instruct-v0.3")]
    parsed = cli.parse_args([*argv, "--attention-backend", "trtllm_mla"], "0.5.23")
    gpu = GpuSpec(name=H100.name, memory_gb=80, total_mib=81559, capability=(9, 0))
    with pytest.raises(post_init.ResolutionError) as caught:
        post_init.resolve_args(parsed, "0.5.23", gpu)
    assert caught.value.line == TRTLLM_MLA_GPU_ERROR


def test_a_launch_plan_on_a_known_gpu_refuses_what_it_cannot_run(models: Path) -> None:
    config = ServerConfig(
        model_path=str(models / "Mistral-7B-Instruct-v0.3"), attention_backend="trtllm_mla"
    )

    def plan(**gpu: GpuFacts) -> None:
        make_launch_plan(
            "h100",
            config,
            sglang_version="0.5.23",
            launcher=["sglang", "serve"],
            launcher_env={},
            **gpu,
        )

    plan()
    with pytest.raises(ConfigError, match="on NVIDIA H100"):
        plan(gpu=H100)


def test_nemotron_h_ngram_on_sm100_is_refused_where_its_override_picks_trtllm_mha(
    tmp_path: Path,
) -> None:
    """``model_overrides/nemotron_h.py``: on sm100 Nemotron-H gets TRT-LLM MHA (page 64), where
    NGRAM's breadth of 10 is refused; on sm120 it gets Triton at page 1, which runs."""
    model = tmp_path / "NVIDIA-Nemotron-Nano-9B-v2"
    model.mkdir()
    config = {"architectures": ["NemotronHForCausalLM"], "max_position_embeddings": 131072}
    (model / "config.json").write_text(json.dumps(config))
    ngram = ServerConfig(model_path=str(model), speculative_algorithm="NGRAM")
    with pytest.raises(ConfigError, match=r"NGRAM with the trtllm_mha attention backend at page"):
        ngram.resolved(gpu=B200)
    ngram.resolved(gpu=GpuFacts("NVIDIA RTX PRO 6000 Blackwell Server Edition", (12, 0)))
    ngram.resolved(gpu=H100)
