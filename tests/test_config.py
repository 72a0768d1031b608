"""ServerConfig: fields, argv per SGLang version, resolution rules, ids, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import SEED_FIELDS

from pytest_sglang import ConfigError, ServerConfig
from pytest_sglang.resolution import (
    ADJUST_DRAFT_TOKENS_WARNING,
    MAX_RUNNING_48_WARNING,
    NGRAM_DRAFT_TOKENS_WARNING,
)
from pytest_sglang.versions import cli_catalog

SEED = dict(SEED_FIELDS)

EVERY_FIELD = dict(
    model_path="/models/Llama-3.1-8B-Instruct",
    served_model_name="llama",
    host="0.0.0.0",
    port=30001,
    tp_size=2,
    mem_fraction_static=0.8,
    max_running_requests=32,
    context_length=32768,
    chunked_prefill_size=8192,
    attention_backend="flashinfer",
    kv_cache_dtype="fp8_e4m3",
    quantization="fp8",
    cuda_graph_max_bs=64,
    speculative_algorithm="EAGLE3",
    speculative_draft_model_path="/models/EAGLE3-LLaMA3.1-Instruct-8B",
    speculative_num_steps=3,
    speculative_eagle_topk=4,
    speculative_num_draft_tokens=16,
)

DATA = Path(__file__).parent / "data"


def catalog_flags() -> set[str]:
    return {flag for arg in cli_catalog() for flag in arg["flags"]}


def test_every_emitted_flag_exists_in_the_real_0_5_23_catalog() -> None:
    argv = ServerConfig(**EVERY_FIELD).to_argv("0.5.23")
    flags = [a for a in argv if a.startswith("--")]
    assert len(flags) == len(EVERY_FIELD)
    assert set(flags) <= catalog_flags()


def test_argv_matches_the_captured_real_argv() -> None:
    real = json.loads((DATA / "server_args_argv_eagle3_draft.json").read_text())
    config = ServerConfig(
        model_path="/models/Llama-3.1-8B-Instruct",
        speculative_algorithm="EAGLE3",
        speculative_draft_model_path="/models/EAGLE3-LLaMA3.1-Instruct-8B",
        speculative_num_steps=3,
        speculative_eagle_topk=4,
        speculative_num_draft_tokens=16,
        mem_fraction_static=0.8,
        max_running_requests=32,
        context_length=32768,
        kv_cache_dtype="fp8_e4m3",
        chunked_prefill_size=8192,
        cuda_graph_max_bs=64,
        attention_backend="flashinfer",
    )
    pairs = dict(zip(real[::2], real[1::2]))
    assert dict(zip(config.to_argv()[::2], config.to_argv()[1::2])) == pairs


@pytest.mark.parametrize(
    ("version", "flag"),
    [
        ("0.5.5", "--cuda-graph-max-bs"),
        ("0.5.12", "--cuda-graph-max-bs"),
        ("0.5.18", "--cuda-graph-max-bs-decode"),
        ("0.5.23", "--cuda-graph-max-bs-decode"),
    ],
)
def test_cuda_graph_flag_follows_the_version(version: str, flag: str) -> None:
    argv = ServerConfig(model_path="m", cuda_graph_max_bs=16).to_argv(version)
    assert argv[-2:] == [flag, "16"]


def test_unset_fields_are_not_passed() -> None:
    assert ServerConfig(model_path="m").to_argv() == ["--model-path", "m"]


def test_extra_args_are_passed_through_last() -> None:
    cfg = ServerConfig(model_path="m", tp_size=2, extra_args=("--enable-metrics",))
    assert cfg.to_argv() == ["--model-path", "m", "--tp-size", "2", "--enable-metrics"]


# -- resolution rules ---------------------------------------------------------------------------


def test_served_name_defaults_to_model_path() -> None:
    assert ServerConfig(model_path="/m/x").resolved().served_model_name == "/m/x"
    assert (
        ServerConfig(model_path="/m/x", served_model_name="y").resolved().served_model_name == "y"
    )


def test_nextn_becomes_eagle() -> None:
    cfg = ServerConfig(
        model_path="m",
        speculative_algorithm="NEXTN",
        speculative_num_steps=1,
        speculative_eagle_topk=1,
    )
    assert cfg.resolved().speculative_algorithm == "EAGLE"


@pytest.mark.parametrize("steps", [1, 2, 3, 4])
def test_topk_one_makes_draft_tokens_steps_plus_one(steps: int) -> None:
    cfg = ServerConfig(**{**SEED, "speculative_num_steps": steps})
    assert cfg.resolved().speculative_num_draft_tokens == steps + 1
    assert ADJUST_DRAFT_TOKENS_WARNING in cfg.expected_journal().warnings


def test_no_adjustment_warning_when_draft_tokens_already_match() -> None:
    cfg = ServerConfig(**SEED, speculative_num_draft_tokens=3)
    assert ADJUST_DRAFT_TOKENS_WARNING not in cfg.expected_journal().warnings


@pytest.mark.parametrize("algorithm", ["EAGLE", "EAGLE3", "STANDALONE", "NEXTN"])
def test_max_running_requests_becomes_48_under_eagle_family(algorithm: str) -> None:
    cfg = ServerConfig(**{**SEED, "speculative_algorithm": algorithm})
    assert cfg.resolved().max_running_requests == 48
    assert MAX_RUNNING_48_WARNING in cfg.expected_journal().warnings


def test_explicit_max_running_requests_is_kept() -> None:
    cfg = ServerConfig(**SEED, max_running_requests=8)
    assert cfg.resolved().max_running_requests == 8
    assert MAX_RUNNING_48_WARNING not in cfg.expected_journal().warnings


def test_no_speculative_means_no_48() -> None:
    assert ServerConfig(model_path="m").resolved().max_running_requests is None


def test_ngram_draft_tokens_default_to_12() -> None:
    cfg = ServerConfig(model_path="m", speculative_algorithm="NGRAM")
    assert cfg.resolved().speculative_num_draft_tokens == 12
    assert NGRAM_DRAFT_TOKENS_WARNING in cfg.expected_journal().warnings


@pytest.mark.parametrize(
    ("model", "algorithm", "triple"),
    [
        ("/m/Qwen3-8B", "EAGLE", (3, 1, 4)),
        ("/m/Llama-3.1-8B", "EAGLE", (5, 4, 8)),
        ("/m/Llama-3.1-8B", "STANDALONE", (3, 1, 4)),
        ("/m/DeepSeek-V3", "EAGLE", (3, 1, 4)),
    ],
)
def test_auto_chosen_speculative_params(
    model: str, algorithm: str, triple: tuple[int, ...]
) -> None:
    r = ServerConfig(model_path=model, speculative_algorithm=algorithm).resolved()
    assert (r.speculative_num_steps, r.speculative_eagle_topk, r.speculative_num_draft_tokens) == (
        triple
    )


def test_expected_journal_uses_the_versions_log_keys() -> None:
    cfg = ServerConfig(model_path="m", cuda_graph_max_bs=8)
    assert cfg.expected_journal("0.5.23").server_args["cuda_graph_max_bs_decode"] == 8
    assert cfg.expected_journal("0.5.12").server_args["cuda_graph_max_bs"] == 8


def test_expected_journal_reads_values_from_extra_args() -> None:
    cfg = ServerConfig(
        model_path="m", extra_args=("--enable-metrics", "--decode-log-interval", "10")
    )
    facts = cfg.expected_journal().server_args
    assert facts["enable_metrics"] is True
    assert facts["decode_log_interval"] == 10


# -- ids and digests ----------------------------------------------------------------------------


def test_id_is_short_and_readable() -> None:
    cfg = ServerConfig(
        model_path="m",
        speculative_algorithm="EAGLE",
        speculative_num_steps=3,
        speculative_eagle_topk=1,
    )
    assert cfg.id == "eagle-s3-k1"
    assert ServerConfig(model_path="m").id == "base"
    assert ServerConfig(model_path="m", name="mine").id == "mine"


def test_digest_is_stable_and_content_sensitive() -> None:
    a = ServerConfig(**SEED)
    assert a.digest == ServerConfig(**SEED).digest
    assert a.digest != a.replace(speculative_num_steps=3).digest
    assert a.digest == a.replace(name="renamed").digest
    assert len(a.digest) == 12


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"speculative_num_steps": 0}, "speculative_num_steps", ">= 1"),
        ({"speculative_eagle_topk": 0}, "speculative_eagle_topk", ">= 1"),
        (
            {"speculative_eagle_topk": 4, "speculative_num_draft_tokens": 2},
            "speculative_num_draft_tokens",
            "speculative_num_steps + 1",
        ),
        ({"mem_fraction_static": 0.0}, "mem_fraction_static", "must be > 0"),
        ({"mem_fraction_static": 1.0}, "mem_fraction_static", "must be < 1"),
        ({"port": 0}, "port", ">= 1"),
        ({"port": 65536}, "port", "<= 65535"),
        ({"speculative_algorithm": "MEDUSA"}, "speculative_algorithm", "MEDUSA"),
        ({"extra_args": ["--tp-size", "4"]}, "extra_args", "tp_size"),
        ({"extra_args": ["--tensor-parallel-size=4"]}, "extra_args", "tp_size"),
        ({"extra_args": ["--tp", "4"]}, "extra_args", "abbreviates --tp-size"),
        ({"extra_args": ["--cuda-graph-max-bs", "8"]}, "extra_args", "cuda_graph_max_bs"),
        (
            {"extra_args": ["--delete-ckpt-after-loading"]},
            "extra_args",
            "--delete-ckpt-after-loading deletes the model's checkpoint on the host",
        ),
        ({"extra_args": ["--delete-ckpt"]}, "extra_args", "does not deploy it"),
        ({"model_path": "a\nb"}, "model_path", "newline"),
        ({"served_model_name": "a\x00b"}, "served_model_name", "NUL"),
        ({"extra_args": ["--x\n"]}, "extra_args", "newline"),
        ({"env": {"HF_TOKEN": "a\nb"}}, "env", "newline"),
        ({"env": {"BAD NAME": "x"}}, "env", "not a valid environment variable name"),
        ({"files": {"relative/x.json": {"content": "{}"}}}, "files", "absolute"),
        ({"files": {"/a/../b": {"content": "{}"}}}, "files", ".."),
        ({"tp_size": 0}, "tp_size", ">= 1"),
        ({"host": "http://127.0.0.1"}, "host", "is a URL"),
        ({"host": "127.0.0.1:30000"}, "host", "give host='127.0.0.1' and port=30000"),
        ({"host": "[::1]:30000"}, "host", "give host='::1' and port=30000"),
        ({"host": "256.1.1.1"}, "host", "is no IPv4 address"),
        ({"host": " "}, "host", "blank"),
        ({"host": "gpu-1:"}, "host", "ends with a colon; give host='gpu-1'"),
        ({"typo_field": 1}, "typo_field", "ServerConfig: unknown field 'typo_field'"),
    ],
)
def test_bad_input_names_the_field(changes: dict[str, object], field: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        ServerConfig(**{**SEED, **changes})
    message = str(info.value)
    assert "\n" not in message
    assert field in message
    assert words in message


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"tp_sise": 4}, "ServerConfig: unknown field 'tp_sise' (did you mean 'tp_size'?)"),
        (
            {"speculative_num_step": 2, "zzz": 1},
            "ServerConfig: unknown field 'speculative_num_step' (did you mean "
            "'speculative_num_steps'?); unknown field 'zzz'",
        ),
    ],
)
def test_unknown_field_comes_first_with_the_closest_field(
    changes: dict[str, object], message: str
) -> None:
    """pytest's short summary cuts long lines: the typo leads, before the model path."""
    with pytest.raises(ConfigError) as info:
        ServerConfig(**{**SEED, **changes})
    assert str(info.value) == message


@pytest.mark.parametrize("host", ["0.0.0.0", "127.0.0.1", "::", "::1", "localhost", "gpu-1.lan"])
def test_an_address_or_a_name_is_a_host(host: str) -> None:
    """What SGLang's ``--host`` binds: an IPv4 or IPv6 address, or a name (never looked up)."""
    assert ServerConfig(model_path="m", host=host).host == host


def test_speculative_fields_without_algorithm_are_refused() -> None:
    with pytest.raises(ConfigError, match="speculative_num_steps: set, but speculative_algorithm"):
        ServerConfig(model_path="m", speculative_num_steps=2)


def test_topk_without_steps_is_refused() -> None:
    with pytest.raises(ConfigError, match="speculative_num_steps: required"):
        ServerConfig(model_path="m", speculative_algorithm="EAGLE", speculative_eagle_topk=1)


def test_config_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        ServerConfig(model_path="m", port=-1)


def test_file_spec_reads_source_and_content(tmp_path: Path) -> None:
    src = tmp_path / "E=256,N=256.json"
    src.write_text('{"1": {}}')
    cfg = ServerConfig(
        model_path="m",
        files={"/opt/k/a.json": str(src), "/opt/k/b.json": {"content": "x", "mode": 0o600}},
    )
    assert cfg.files["/opt/k/a.json"].data() == b'{"1": {}}'
    assert cfg.files["/opt/k/b.json"].data() == b"x"
    assert cfg.files["/opt/k/b.json"].mode == 0o600


def test_missing_file_source_names_the_path(tmp_path: Path) -> None:
    cfg = ServerConfig(model_path="m", files={"/opt/x": str(tmp_path / "nope.json")})
    with pytest.raises(ConfigError, match=r"nope\.json"):
        cfg.files["/opt/x"].data()


def test_repr_never_shows_environment_values() -> None:
    cfg = ServerConfig(model_path="m", env={"HF_TOKEN": "hf_secret_value", "A": "plain"})
    assert "hf_secret_value" not in repr(cfg)
    assert "plain" not in repr(cfg)
    assert "HF_TOKEN" in repr(cfg)
    assert cfg.env["HF_TOKEN"] == "hf_secret_value"


def test_pass_through_flags_of_every_catalog_type_are_expected_in_the_journal() -> None:
    """The journal check proves pass-through values of every type SGLang's parser has, read as
    it reads them (``16k`` is 16000; lists, JSON, ``None``, ``--no-`` switches)."""
    config = ServerConfig(
        model_path="/models/Qwen3-8B",
        extra_args=(
            "--max-total-tokens", "16k",
            "--gc-threshold", "700", "10", "10",
            "--bucket-time-to-first-token", "0.1", "0.5",
            "--default-chat-template-kwargs", '{"enable_thinking": false}',
            "--quantization-param-path", "None",
            "--no-enable-tf32-matmul",
            "--cuda-graph-prefill-max-context=4Ki",
        ),
    )  # fmt: skip
    expected = config.expected_journal().server_args
    assert expected["max_total_tokens"] == 16000
    assert expected["gc_threshold"] == [700, 10, 10]
    assert expected["bucket_time_to_first_token"] == [0.1, 0.5]
    assert expected["default_chat_template_kwargs"] == {"enable_thinking": False}
    assert expected["quantization_param_path"] is None
    assert expected["enable_tf32_matmul"] is False
    assert expected["cuda_graph_prefill_max_context"] == 4096
