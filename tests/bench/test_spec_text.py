"""Speculative decoding on the text it will meet: the one-line note when a speculative config is
measured on generated prompts or with ``ignore_eos``, and the accept length per workload."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import use_simulator_env

from pytest_sglang.bench import JsonlPrompts, Workload
from pytest_sglang.bench.spec_text import (
    accept_table,
    is_speculative,
    off_text_reasons,
    speculative_text_note,
)


def test_generated_prompts_and_ignore_eos_are_off_text(tmp_path: Path) -> None:
    assert off_text_reasons(Workload.single_stream(64)) == [
        "generated random-word prompts (random-32)",
        "ignore_eos",
    ]
    assert off_text_reasons(Workload.shared_prefix(2, 2, 8, 4, 4, ignore_eos=False)) == [
        "generated random-word prompts (shared-prefix-2x2)"
    ]
    own = tmp_path / "traffic.jsonl"
    own.write_text('{"prompt": "What is the capital of France?"}\n')
    assert off_text_reasons(Workload.fixed_concurrency(2, prompts=JsonlPrompts(own))) == [
        "ignore_eos"
    ]
    assert (
        off_text_reasons(Workload.fixed_concurrency(2, prompts=JsonlPrompts(own), ignore_eos=False))
        == []
    )


def test_speculative_is_read_from_the_config_or_the_accept_length() -> None:
    assert is_speculative({"config": {"speculative_algorithm": "EAGLE"}})
    assert is_speculative({"config": {"extra_args": ["--speculative-algorithm", "NGRAM"]}})
    assert is_speculative({"config": {}, "accept_length": 2.5})
    assert not is_speculative({"config": {"tp_size": 4}, "accept_length": None})


def test_the_note_is_one_line_naming_every_config_and_reason() -> None:
    results = [
        {"config_id": "s1", "speculative_text": ["generated random-word prompts (random-32)"]},
        {"config_id": "s3", "speculative_text": ["ignore_eos"]},
        {"config_id": "s3", "speculative_text": ["ignore_eos"]},
        {"config_id": "plain"},
    ]
    note = speculative_text_note(results)
    assert "\n" not in note
    assert note.startswith(
        "speculative decoding (s1, s3) was measured with generated random-word prompts "
        "(random-32) and ignore_eos: "
    )
    assert "ShareGPTPrompts" in note and "ignore_eos=False" in note
    assert speculative_text_note([{"config_id": "plain"}]) == ""


def test_the_accept_table_has_a_column_per_workload() -> None:
    results = [
        {"config_id": "s1", "workload": "concurrency-1", "accept_length": 1.9},
        {"config_id": "s1", "workload": "concurrency-16", "accept_length": 1.7},
        {"config_id": "s3", "workload": "concurrency-1", "accept_length": 3.41},
        {"config_id": "plain", "workload": "concurrency-1", "accept_length": None},
    ]
    lines = [line for line, _ in accept_table(results).lines()]
    assert lines[0].split() == ["config", "concurrency-1", "concurrency-16"]
    assert lines[1].split() == ["s1", "1.90", "1.70"]
    assert lines[2].split() == ["s3", "3.41", "-"]
    assert len(lines) == 3
    assert not accept_table([]).rows


TEST = """
import pytest
from pytest_sglang import JsonlPrompts, ServerConfig, Workload

EAGLE = ServerConfig(
    model_path="/models/Qwen3-8B", served_model_name="qwen3-8b", name="eagle",
    speculative_algorithm="EAGLE", speculative_num_steps=2, speculative_eagle_topk=1,
)
OWN = JsonlPrompts("traffic.jsonl")


@pytest.mark.parametrize("workload", Workload.sweep([1, 4], rounds=1, output_tokens=8), ids=str)
@pytest.mark.parametrize("sglang_server", [EAGLE], indirect=True)
def test_random_words(sglang_bench, workload):
    assert sglang_bench(workload, rounds=1).failed == 0


@pytest.mark.parametrize("sglang_server", [EAGLE], indirect=True)
def test_own_traffic(sglang_bench):
    workload = Workload.fixed_concurrency(2, 4, 8, prompts=OWN, ignore_eos=False)
    assert sglang_bench(workload, rounds=1).failed == 0
"""


def test_the_summary_reports_accept_length_per_level_and_says_once_what_to_use(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_simulator_env(monkeypatch)
    pytester.makepyfile(TEST)
    pytester.path.joinpath("traffic.jsonl").write_text(
        '{"prompt": "What is the capital of France?"}\n{"prompt": "Name three rivers."}\n'
    )
    result = pytester.runpytest("-p", "pytest_sglang.bench.pytest_plugin")
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    section = out[out.index("sglang accept length") :].splitlines()
    assert section[1].split() == ["config", "concurrency-1", "concurrency-4", "concurrency-2"]
    assert section[2].split()[0] == "eagle" and float(section[2].split()[1]) > 1.0
    notes = [line for line in result.stdout.lines if line.startswith("speculative decoding (")]
    assert notes == [
        "speculative decoding (eagle) was measured with generated random-word prompts "
        "(random-128) and ignore_eos: acceptance depends on the text generated, so its accept "
        "length and speed are not production's; measure it with your own traffic "
        "(ShareGPTPrompts, JsonlPrompts or PromptList) and ignore_eos=False"
    ]
