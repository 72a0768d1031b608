"""The rules behind /server_info and /model_info that the CPU recording cannot show: a decode
server's retraction backup, an embedding server's plan, the field table and the redaction."""

from __future__ import annotations

from pytest_sglang.sim.cli import parse_args
from pytest_sglang.sim.fields import DICT_FIELDS
from pytest_sglang.sim.info import (
    WATERMARK_SECRETS,
    embedding_plan,
    resolved_server_args,
    retraction_backup,
)
from pytest_sglang.sim.post_init import resolve_args


def _args(*flags: str) -> dict[str, object]:
    return dict(
        resolve_args(parse_args(["--model-path", "/m/Llama-3-8B", *flags], "0.5.23"), "0.5.23").args
    )


def test_server_args_are_the_field_table_with_secrets_redacted() -> None:
    out = resolved_server_args(_args("--random-seed", "7"), {"pp_max_micro_batch_size": 3})
    assert list(out) == list(DICT_FIELDS)  # argparse-only keys such as ``config`` stay out
    assert [out[k] for k in WATERMARK_SECRETS] == ["<redacted>"] * 3
    assert (out["random_seed"], out["pp_max_micro_batch_size"]) == (7, 3)


def test_retraction_backup_is_host_pool_only_on_a_plain_decode_server() -> None:
    assert retraction_backup(_args()) == "cpu_tensor"
    assert retraction_backup({"disaggregation_mode": "decode"}) == "host_pool"
    radix = {"disaggregation_mode": "decode", "disaggregation_decode_enable_radix_cache": True}
    assert retraction_backup(radix) == "cpu_tensor"
    chosen = {"disaggregation_mode": "null", "disaggregation_decode_retraction_backup": "host_pool"}
    assert retraction_backup(chosen) == "host_pool"


def test_embedding_plan_follows_is_embedding() -> None:
    causal = embedding_plan(_args())
    assert (causal["family"], causal["enabled"], causal["bcg_eligibility"]) == (
        "none",
        False,
        "disabled",
    )
    embed = embedding_plan(_args("--is-embedding"))
    assert (embed["task"], embed["enabled"], embed["requires_embedding_flag"]) == (
        "embed",
        True,
        True,
    )
