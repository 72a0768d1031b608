"""The simulator and the plugin held to the wide goldens of the real SGLang 0.5.23 (issue 32).

The wide goldens (tests/data/conformance/wide/) cover model families read from their published
config.json (MoE with and without MTP/NextN, MLA with and without MTP, MXFP4 with sliding
windows, DeepseekV3-architecture models under other names, EAGLE/EAGLE3 heads, standalone draft
models, hybrid/mamba, dense) on seven GPU profiles (sm80, sm89, sm90 x2, sm100 x2, sm120).
Part of the matrix is held out (conformance/wide.py): the simulator and the predictor were never
tuned on it. The tuned part is held to the figures measured when the fixes landed; the held-out
part to its own measured figures, kept apart because they are what predicts a user's first run
(benchmarks/conformance_agreement.py prints both). The fresh held-out extension
(tests/data/conformance/wide2/, conformance/wide2.py: new models and GPU profiles, decided and
committed before it was measured) is a third part, measured once and held to that measurement.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from wide_agreement import PARTS, WIDE, WIDE2, Part, load_wide, measure_part

#: (key fields %, warnings identical %, failing the same way %, refused up front by the offline
#: predictor knowing the host's GPU %, the same without a GPU %, refused before deploy with the
#: host's resolution %) per part, as measured (benchmarks/conformance_agreement.py), rounded
#: down; a drop below any is a regression. Without a GPU the predictor cannot see the refusals
#: that depend on it (TRT-LLM MLA off Blackwell, TRT-LLM MHA prefill before Hopper, NGRAM's
#: breadth on a paged sm100 backend); a host's plan knows its GPU (pytest_sglang.gpu_rules).
#: ``fresh``: the fresh held-out extension (conformance/wide2.py), measured once, never tuned on.
BARS = {
    "tuned": (100.0, 100.0, 100.0, 100.0, 89.3, 100.0),
    "held_out": (99.9, 99.9, 99.9, 99.9, 79.9, 99.9),
    "fresh": (100.0, 99.5, 95.8, 95.8, 62.4, 95.8),
}

#: failing configs whose traceback shows SGLang's real frames (file, line, source), % per part
TRACEBACK_BARS = {"tuned": 100.0, "held_out": 99.9, "fresh": 95.3}

#: configs real SGLang starts that the predictor (knowing the GPU) refuses, at most, per part:
#: the typed fields' own checks (EAGLE with 0 steps or topk 0, which 0.5.23 runs), none from
#: the GPU's rules
FALSE_REFUSALS = {"tuned": 10, "held_out": 4, "fresh": 2}


#: The module fixtures below are measured once for all the tests here: under pytest-xdist the
#: tests share one worker, so that no other worker measures them again.
pytestmark = pytest.mark.xdist_group("wide-goldens")


@pytest.fixture(scope="module")
def parts() -> dict[str, Part]:
    profiles = load_wide()
    figures = {part: measure_part(part, profiles) for part in PARTS}
    figures["fresh"] = measure_part("held_out", load_wide(WIDE2))
    return figures


def test_wide_goldens_cover_the_issue_matrix() -> None:
    profiles = load_wide()
    assert len(profiles) >= 6
    caps = {p.capability for p in profiles}
    assert {(9, 0), (10, 0)} <= caps and len(caps) >= 4
    models = json.loads((WIDE / "models.json").read_text())
    archs = Counter(m["architectures"][0] for m in models.values())
    for arch in (
        "Qwen3MoeForCausalLM",
        "Glm4MoeForCausalLM",
        "DeepseekV2ForCausalLM",
        "DeepseekV3ForCausalLM",
        "GptOssForCausalLM",
        "Qwen3NextForCausalLM",
        "NemotronHForCausalLM",
        "LlamaForCausalLMEagle3",
        "LlamaForCausalLMEagle",
        "LlamaForCausalLM",
    ):
        assert arch in archs
    # the DeepseekV3 architecture under more than one name
    assert archs["DeepseekV3ForCausalLM"] >= 3
    for profile in profiles:
        assert profile.golden["sglang_version"] == "0.5.23"
        configs = profile.golden["configs"]
        assert len(configs) >= 100
        held = sum(bool(e["held_out"]) for e in configs.values())
        assert 0 < held <= len(configs)
        assert sum(e["exit_code"] != 0 for e in configs.values()) >= 8
    assert all(
        e["held_out"] for p in profiles if p.key == "l40sx4" for e in p.golden["configs"].values()
    )


def test_the_fresh_extension_is_new_and_held_out_entirely() -> None:
    """conformance/wide2.py: models and GPU profiles the wide matrix does not have, every
    config held out."""
    fresh = load_wide(WIDE2)
    old_models = json.loads((WIDE / "models.json").read_text())
    new_models = set(json.loads((WIDE2 / "models.json").read_text())) - set(old_models)
    assert len(new_models) >= 4
    old_profiles = {p.key for p in load_wide()}
    assert {p.key for p in fresh} - old_profiles
    for profile in fresh:
        assert profile.golden["sglang_version"] == "0.5.23"
        assert all(e["held_out"] for e in profile.golden["configs"].values())


@pytest.mark.parametrize("part", list(BARS))
def test_wide_agreement_holds(parts: dict[str, Part], part: str) -> None:
    figures = parts[part]
    key_fields, warnings, failures, refused, without_gpu, with_host = BARS[part]
    listed = "\n".join((figures.sim.misses + figures.refusals.misses)[:30])
    assert figures.key_fields >= key_fields, f"{figures.line()}\n{listed}"
    assert figures.warnings >= warnings, f"{figures.line()}\n{listed}"
    assert figures.failures >= failures, f"{figures.line()}\n{listed}"
    assert figures.refused >= refused, f"{figures.line()}\n{listed}"
    assert figures.refused_without_gpu >= without_gpu, f"{figures.line()}\n{listed}"
    assert figures.refused_with_host >= with_host, f"{figures.line()}\n{listed}"
    assert figures.journal.refused <= FALSE_REFUSALS[part], figures.line()
    traced = Part.pct(figures.sim.trace_agree, figures.sim.trace_configs)
    assert traced >= TRACEBACK_BARS[part], f"{figures.line()}\n{listed}"


def test_expected_journal_never_contradicts_real_on_the_wide_matrix(
    parts: dict[str, Part],
) -> None:
    for figures in parts.values():
        assert figures.journal.checked_values >= 500
        assert figures.journal.mismatches == [], "\n".join(figures.journal.mismatches[:30])
