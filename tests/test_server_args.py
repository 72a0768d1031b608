"""parse_server_args on the real lines captured from SGLang 0.5.23 (both formats)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_sglang import parse_server_args

CASES = ["minimal", "seed_eagle_steps2", "eagle3_draft"]

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("case", CASES)
def test_dict_and_repr_formats_agree(case: str) -> None:
    as_dict = parse_server_args((DATA / f"server_args_dict_{case}.txt").read_text())
    as_repr = parse_server_args((DATA / f"server_args_repr_{case}.txt").read_text())
    assert len(as_dict) > 500
    # resolved_dict() (0.5.19+) fills a few defaults the raw dataclass leaves None, and adds the
    # watermark fields; every other field reads the same in both formats.
    resolved_by_dict = {
        "enable_tf32_matmul",
        "swa_full_tokens_ratio",
        "mamba_full_memory_ratio",
        "mm_enable_dp_encoder",
    }
    assert set(as_dict) - set(as_repr) == {"watermark_key", "watermark_key_b", "watermark_config"}
    differing = {k for k in as_repr if as_dict[k] != as_repr[k]}
    assert differing == resolved_by_dict


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("fmt", ["dict", "repr"])
def test_values_match_the_argv_that_produced_them(case: str, fmt: str) -> None:
    argv = json.loads((DATA / f"server_args_argv_{case}.json").read_text())
    parsed = parse_server_args((DATA / f"server_args_{fmt}_{case}.txt").read_text())
    assert parsed["model_path"] == argv[argv.index("--model-path") + 1]
    if "--speculative-num-steps" in argv:
        steps = int(argv[argv.index("--speculative-num-steps") + 1])
        assert parsed["speculative_num_steps"] == steps
    if "--tp" in argv:
        assert parsed["tp_size"] == int(argv[argv.index("--tp") + 1])
    if "--kv-cache-dtype" in argv:
        assert parsed["kv_cache_dtype"] == "fp8_e4m3"
        assert parsed["mem_fraction_static"] == 0.8


def test_seed_line_values() -> None:
    parsed = parse_server_args((DATA / "server_args_dict_seed_eagle_steps2.txt").read_text())
    assert parsed["served_model_name"] == "qwen3.5-122b"
    assert parsed["speculative_algorithm"] == "EAGLE"
    assert parsed["speculative_eagle_topk"] == 1
    assert parsed["port"] == 30000
    assert parsed["host"] == "0.0.0.0"


@pytest.mark.parametrize(
    "prefix",
    [
        "",
        "[2026-11-30 19:50:01] ",
        "[2026-11-30 19:50:01.123 TP0] ",
        "[2026-02-27 14:33:03] INFO server_args.py:1697: ",
        "Nov 30 19:50:01 llm-two python[881448]: [2026-11-30 19:50:01] ",
    ],
)
def test_prefixes_are_tolerated(prefix: str) -> None:
    assert parse_server_args(prefix + "server_args={'tp_size': 4}") == {"tp_size": 4}
    assert parse_server_args(prefix + "server_args=ServerArgs(tp_size=4)") == {"tp_size": 4}


def test_non_literal_values_are_kept_as_text() -> None:
    line = (
        "server_args=ServerArgs(model_path='m', lora_paths=[LoRARef(lora_id='a', name='x')], "
        "fn=<function f at 0x7f>, port=1)"
    )
    parsed = parse_server_args(line)
    assert parsed["model_path"] == "m"
    assert parsed["lora_paths"] == "[LoRARef(lora_id='a', name='x')]"
    assert parsed["fn"] == "<function f at 0x7f>"
    assert parsed["port"] == 1


def test_non_literal_in_dict_format() -> None:
    parsed = parse_server_args("server_args={'a': inf, 'b': <object at 0x1>, 'c': 'x, y'}")
    assert parsed["a"] == float("inf")
    assert parsed["b"] == "<object at 0x1>"
    assert parsed["c"] == "x, y"


def test_a_cut_short_line_keeps_the_complete_fields() -> None:
    full = (DATA / "server_args_dict_seed_eagle_steps2.txt").read_text()
    cut = full[: full.index("'speculative_num_steps'") + 10]
    parsed = parse_server_args(cut)
    assert parsed["model_path"] == "/shared/models/Qwen3.5-122B-A10B"
    assert parsed["speculative_algorithm"] == "EAGLE"
    assert "speculative_num_steps" not in parsed
    repr_full = (DATA / "server_args_repr_seed_eagle_steps2.txt").read_text()
    parsed = parse_server_args(repr_full[:3000])
    assert parsed["model_path"] == "/shared/models/Qwen3.5-122B-A10B"


def test_line_without_server_args_is_refused() -> None:
    with pytest.raises(ValueError, match="not a server_args line"):
        parse_server_args("[2026-11-30 19:50:01] Load weight begin. avail mem=78.50 GB")
