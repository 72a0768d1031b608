"""The simulator's startup log line by line against 0.5.23's message formats and placement.

The formats come from the real package's source (log_formats.REAL_FORMATS, file named per
entry); every line from ``server_args=`` to the ready line must match one, printed by the ranks
that print it in 0.5.23 (every rank, rank 0 only, or the main process).
"""

from __future__ import annotations

import pytest
from helpers import EAGLE_FLAGS
from log_formats import check_startup

from pytest_sglang.sim.launch import start_simulator

CASES = {
    "seed-eagle-tp4": (
        "/shared/models/Qwen3.5-122B-A10B",
        ["--tp-size", "4", *EAGLE_FLAGS, "--speculative-num-draft-tokens", "3"],
        4,
    ),
    "llama-tp1": ("/models/Llama-3.1-8B-Instruct", [], 1),
    "qwen3-eagle3-steps1-tp2": (
        "/models/Qwen3-8B",
        [
            "--tp-size",
            "2",
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-draft-model-path",
            "/models/Qwen3-8B-EAGLE3",
            "--speculative-num-steps",
            "1",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "2",
        ],
        2,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_startup_lines_have_the_real_formats_and_ranks(case: str) -> None:
    model, flags, tp = CASES[case]
    with start_simulator(*flags, model_path=model) as sim:
        output = sim.output_tail(limit=200_000)
    good, misses = check_startup(output, tp)
    assert good >= 8
    assert misses == []
    if "steps1" in case:  # one step: no draft decode graph in 0.5.23
        assert "Capture draft decode" not in output and "Capture draft extend" in output
