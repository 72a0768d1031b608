"""The predictor refuses up front what SGLang 0.5.23 refuses from the command line and the
model's config.json alone (figures on the wide goldens: tests/conformance/test_wide_goldens.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_sglang.config import ServerConfig
from pytest_sglang.errors import ConfigError


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
