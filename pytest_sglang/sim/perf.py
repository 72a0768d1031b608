"""The simulator's performance model: pure functions, no I/O, every parameter documented here.

Why a model and not constants: the plugin's job is to tell configurations apart (speculative
steps, TP size, concurrency), so the simulator must react to them the way a real server does:
diminishing returns from more draft steps, lower acceptance when sampling, slower per-request
decode as concurrency rises, a longer TTFT for a longer prompt, and a smaller effective
``max_running_requests`` as draft tokens rise.

Decode step time (milliseconds) for a batch of ``bs`` requests, ``n`` tokens each
(n = 1 without speculation, n = draft tokens when verifying), T = bs * n tokens in the step:

    t_target = memory_ms + layers * (LAUNCH_MS_PER_LAYER + 2 * ALLREDUCE_MS [tp > 1])
               + T * token_ms
    memory_ms  = streamed_b(T) * bytes_per_param / tp / (GPU bandwidth * BANDWIDTH_EFFICIENCY),
                 for MoE at least layers * MOE_MS_PER_LAYER (the MoE layers' latency floor)
    streamed_b = dense: active params; MoE: always-active params + the experts the T tokens
                 were routed to, E * (1 - (1 - k / E) ** T) of them (:func:`streamed_params_b`)
    token_ms   = 2 * active_params / (tp * GPU FLOPS * FLOPS_EFFICIENCY)      (compute per token)

Why the expert term: a verify step of a speculative MoE server reads every expert that any of
its batch x draft tokens was routed to, so its cost grows with draft tokens x batch, and the
speedup of speculation, largest at batch 1, shrinks as the batch grows (module table below).
At batch 1 the few experts of 2-5 tokens stream within the layers' latency floor, so single-
stream speed stays what the seeds measured.

A speculative step adds ``steps`` draft forwards of a one-layer draft head,
``t_draft = DRAFT_LAYERS * (LAUNCH_MS_PER_LAYER + 2 * ALLREDUCE_MS [tp > 1]) + bs * token_ms / 8``,
and yields ``accept_length`` tokens per request: ``1 + sum_i prod_{j<=i} a_j`` where
``a_j = ACCEPT_FIRST * ACCEPT_DECAY ** (j - 1)`` is the conditional acceptance of draft position
j (:func:`greedy_acceptance`), scaled down by ``exp(-TEMPERATURE_PENALTY * temperature)`` when
sampling and by the algorithm's factor.

What is fitted, what is taken from the literature, what is derived
------------------------------------------------------------------
The seeds (shared/reference/seed-workflow.md): Qwen3.5-122B-A10B, TP 4, 4x RTX PRO 6000
Blackwell 96 GB, EAGLE topk 1, greedy, one request: steps 1 / 2 / 3 (draft tokens 2 / 3 / 4)
-> 123 / 186 / 234 tok/s; max_running_requests logged 21 at steps 2 and 17 at steps 3.

- Fitted to those figures: :data:`ACCEPT_FIRST` (0.966, to the three tok/s: least maximum
  relative error) and :data:`SPEC_SLOTS_PER_FREE_GB` (to 21 / 17). Two constants, five figures.
- From the literature: :data:`ACCEPT_DECAY` = 0.97, the median per-position decay of the
  conditional acceptance (log-linear fit over positions) in five published chain-drafting logs:
  0.970 and 0.981, Qwen3.6-27B MTP in vLLM, per-position 0.917/0.837/0.648/0.538/0.451/0.348
  and 0.912/0.782/0.667/0.556/0.471/0.379 ("[bench] bare metal P2P 2x3090, vLLM 0.20.1,
  Qwen3.6-27B (MTP)", https://github.com/noonghunna/club-3090/issues/105); 0.974, EAGLE-3 in
  llama.cpp, 0.805/0.632/0.483 ("spec: add spec metrics mean acceptance length and acceptance
  rate per position", https://github.com/ggml-org/llama.cpp/pull/24536); 0.89 and 0.964, GLM-5
  MTP 3 in vllm-ascend, 0.938/0.769/0.572 and 0.877/0.749/0.610
  (https://github.com/vllm-project/vllm-ascend/issues/9803). Not all drafters decay: a
  multi-layer MTP log rises from 0.76 to 0.87 conditional (vLLM PR #48892,
  https://github.com/vllm-project/vllm/pull/48892). Published first-position acceptance, for
  comparison with the fitted 0.966: 0.85-0.90 for DeepSeek-V3's MTP ("DeepSeek-V3 Technical
  Report" section 5.4.3, https://arxiv.org/abs/2412.19437), ~0.9 (accept length ~1.9 with one
  draft token) in SGLang ("Support NextN (MTP) speculative decoding for DeepSeek-V3/R1",
  https://github.com/sgl-project/sglang/pull/3582), 0.83-0.94 in the logs above.
- Engineering estimates, neither fitted here nor measured: the step-time constants
  (LAUNCH_MS_PER_LAYER ... DRAFT_LAYERS, MOE_EXPERTS, MOE_EXPERTS_PER_TOKEN), the GPU figures
  in :class:`GpuSpec`, TEMPERATURE_PENALTY, ALGORITHM_ACCEPTANCE and the topk tree bonus. The
  step-time level (15.3 ms per target step here, 15.6 per steps-1 verify step) and
  ACCEPT_FIRST are confounded: only their ratio is seen.
- Derived, i.e. predictions: the shape across steps (tok/s for steps 4+, the peak), the fall of
  per-request speed with batch size (compute per token), TTFT against prompt length, and
  max_running_requests at other step counts (the draft_tokens + 1 shape, from SGLang's
  MambaPool: one recurrent state per request plus one per draft token).

The model against the seeds (the figures ``tests/sim/test_perf.py`` checks):

    steps                 1       2       3       4       5       6       7       8
    model tok/s       126.1   181.3   229.6   269.2   292.3   307.8   316.9   320.9
    seeds tok/s         123     186     234       -
    error             +2.5%   -2.5%   -1.9%
    accept length      1.97    2.87    3.70    4.43    5.05    5.57    5.99    6.31
    max_running_req      28      21      17      14      12      10       9       8
    seeds                 -      21      17       -          (exact)

It peaks at steps 9 (321 tok/s). Over the published decays 0.89-0.98 (ACCEPT_FIRST refitted
each time) the prediction for steps 4 spans 248-273 tok/s and the peak steps 5-10, so those
are predictions with that spread, not measurements. No model of this form (chain acceptance,
non-decreasing step time) can fit steps 1 and 2 both within +-1.3 %: 186 / 123 = 1.512, while
(1 + a1 + a1 a2) / (1 + a1) <= 1.5 and the step time grows 1.6 % from steps 1 to 2.

Under load (per-request tok/s; step ms in brackets), derived, not fitted:

    batch                    1             8            16            28
    no speculation     65.2 (15.3)   57.9 (17.3)   47.2 (21.2)   39.0 (25.6)
    steps 1           126.1 (15.6)   91.7 (21.5)   72.7 (27.0)   61.8 (31.8)
    steps 3           229.6 (16.1)  134.4 (27.5)  110.8 (33.4)      - (limit 17)
    speedup, steps 3   3.52x         2.32x         2.35x

TTFT = one target step + prompt_tokens * prefill_token_ms, where prefill_token_ms is
token_ms / PREFILL_BATCH_GAIN (prefill runs at high arithmetic intensity).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model_identity import EXPERT_KEYS, ModelIdentity, identity_from_name

__all__ = [
    "ACCEPT_DECAY",
    "ACCEPT_FIRST",
    "GpuSpec",
    "ModelSpec",
    "SpecConfig",
    "accept_length",
    "decode_step_ms",
    "decode_tok_per_s",
    "effective_max_running_requests",
    "free_gb_per_gpu",
    "greedy_acceptance",
    "parse_model",
    "prefill_ms",
    "streamed_params_b",
]

#: Conditional acceptance of draft position 1 under greedy sampling (EAGLE/MTP head, topk 1).
#: FITTED: the one constant fitted to the seeds' three tok/s figures (least maximum relative
#: error with :data:`ACCEPT_DECAY` held at its literature value). Published values are lower,
#: 0.83-0.94 (see the module docstring); the seeds' greedy prompt was easier than those
#: benchmarks' averages, or the step-time level is a few per cent off: the two are confounded.
ACCEPT_FIRST = 0.967
#: Each further draft position is accepted (given the previous one was) ACCEPT_DECAY times as
#: often: ``a_i = ACCEPT_FIRST * ACCEPT_DECAY ** (i - 1)``. FROM THE LITERATURE: the median of
#: the per-position decays of five published chain-drafting logs (0.89-0.98, module docstring).
ACCEPT_DECAY = 0.97
#: Acceptance scale per algorithm (NGRAM guesses from the prompt, so it is right less often).
#: A guess, not checked against data.
ALGORITHM_ACCEPTANCE = {"EAGLE": 1.0, "EAGLE3": 1.0, "STANDALONE": 0.9, "NGRAM": 0.55}
#: acceptance *= exp(-TEMPERATURE_PENALTY * temperature): sampling disagrees with the draft.
#: A guess, not checked against data: the one published pair found (model card of
#: https://huggingface.co/nebius/MTP-DeepSeek-V3-0324, original MTP head: tau 3.20 at T=0,
#: 3.09 at T=1) drops by 3 %, this by ~30 %; read temperature effects as qualitative.
TEMPERATURE_PENALTY = 0.3

LAUNCH_MS_PER_LAYER = 0.03  # kernel launch + scheduling per layer, with CUDA graphs
#: routing, token permutation and grouped-GEMM latency per MoE layer: the floor under which
#: streaming the step's experts hides (a step of a few tokens is latency-bound, not bandwidth)
MOE_MS_PER_LAYER = 0.089
#: Routed experts per MoE layer and experts per token: Qwen3-Next-style sparsity (Qwen3-Next-80B-
#: A3B: 512 experts, 10 routed; Qwen3-235B-A22B: 128, 8), taken as 256 / 8 for every MoE model.
#: An estimate, not read from the checkpoint.
MOE_EXPERTS = 256
MOE_EXPERTS_PER_TOKEN = 8
ALLREDUCE_MS = 0.10  # one TP all-reduce over PCIe (RTX PRO 6000 has no NVLink), 2 per layer
BANDWIDTH_EFFICIENCY = 0.75  # fraction of HBM bandwidth a decode GEMV reaches
FLOPS_EFFICIENCY = 0.4  # fraction of peak FLOPS a batched forward reaches
PREFILL_BATCH_GAIN = 1.0  # prefill FLOPs/token equal decode's; kept as a knob
DRAFT_LAYERS = 1  # EAGLE/MTP draft head depth

#: Per-request speculative workspace in "slots": each running request holds draft_tokens + 1
#: (the shape, from SGLang's MambaPool for hybrid models like Qwen3.5: one recurrent state per
#: request plus ``intermediate_ssm_state_cache`` of ``speculative_num_draft_tokens`` states,
#: python/sglang/srt/mem_cache/memory_pool.py). FITTED: SPEC_SLOTS_PER_FREE_GB slots per GB
#: left per GPU after weights, to the seeds' 21 (steps 2) and 17 (steps 3): 65.5 GB -> 86 slots,
#: 86 // 4 = 21, 86 // 5 = 17. Any value in [1.298, 1.343) gives both exactly.
SPEC_SLOTS_PER_FREE_GB = 1.32


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model; the default is the seeds' RTX PRO 6000 Blackwell 96 GB."""

    name: str = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    memory_gb: float = 96.0
    bandwidth_tbps: float = 1.79
    tflops: float = 500.0  # dense BF16/FP8 tensor throughput used for compute-bound phases
    #: what ``nvidia-smi --query-gpu=memory.total`` reports, MiB (SGLang sizes from it);
    #: None: derived from ``memory_gb`` (the three profiles' ratio, 96 GB -> 97887 MiB)
    total_mib: int | None = None
    capability: tuple[int, int] = (12, 0)

    @property
    def memory_mib(self) -> int:
        """Total memory as the driver reports it, in MiB."""
        return self.total_mib if self.total_mib is not None else round(self.memory_gb * 1019.66)


@dataclass(frozen=True)
class ModelSpec:
    """The model as the cost model sees it: sizes in billions of parameters.

    ``identity`` is what its config.json says (or its name, where there is none): sizes and
    depth come from the config's shapes where it has them, else from the name.
    """

    path: str
    total_b: float
    active_b: float
    layers: int
    bytes_per_param: float
    architecture: str
    experts: int = MOE_EXPERTS
    experts_per_token: int = MOE_EXPERTS_PER_TOKEN
    identity: ModelIdentity | None = field(default=None, compare=False)

    @property
    def is_moe(self) -> bool:
        return self.active_b < self.total_b

    @property
    def weights_gb(self) -> float:
        return self.total_b * self.bytes_per_param


@dataclass(frozen=True)
class SpecConfig:
    """Resolved speculative settings; ``algorithm`` None means no speculation."""

    algorithm: str | None = None
    num_steps: int = 0
    topk: int = 1
    draft_tokens: int = 0


_SIZE = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)[Bb](?![A-Za-z])")
_ACTIVE = re.compile(r"[-_]A(\d+(?:\.\d+)?)[Bb](?![A-Za-z])")


def _layers(total_b: float, moe: bool) -> int:
    """A typical depth for the size: ~28 layers at 1-3B, 32 at 8B, 80 at 70B, 48 for big MoEs."""
    if moe:
        return 48 if total_b >= 100 else 40
    for limit, depth in ((4, 28), (10, 32), (20, 40), (40, 64), (90, 80)):
        if total_b <= limit:
            return depth
    return 126


def _int(config: Mapping[str, Any], key: str, default: int = 0) -> int:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return int(value)


def config_params_b(config: Mapping[str, Any]) -> tuple[float, float] | None:
    """(total, active) billions of parameters from a text config's shapes; None without them.

    Embeddings (twice unless tied), attention as q/k/v/o projections of ``head_dim`` heads
    (MLA's low-rank projections are close to that), a gated MLP (3 matrices) per dense layer,
    and per MoE layer every routed and shared expert in the total but only the routed
    ``num_experts_per_tok`` and the shared ones in the active count. DeepSeek-V3's config
    gives 672B total and 37B active (published: 671B, 37B).
    """
    hidden, layers = _int(config, "hidden_size"), _int(config, "num_hidden_layers")
    if not hidden or not layers:
        return None
    heads = _int(config, "num_attention_heads", max(1, hidden // 128))
    kv_heads = _int(config, "num_key_value_heads", heads)
    head_dim = _int(config, "head_dim", hidden // heads)
    attention = 2 * hidden * head_dim * (heads + kv_heads)
    intermediate = _int(config, "intermediate_size", 4 * hidden)
    experts = next((_int(config, k) for k in EXPERT_KEYS if _int(config, k)), 0)
    routed = _int(config, "num_experts_per_tok", 1)
    shared = _int(config, "n_shared_experts")
    expert_mlp = 3 * hidden * _int(config, "moe_intermediate_size", intermediate)
    dense_layers = layers if experts <= 1 else min(layers, _int(config, "first_k_dense_replace"))
    moe_layers = layers - dense_layers
    embed = _int(config, "vocab_size") * hidden * (1 if config.get("tie_word_embeddings") else 2)
    common = embed + layers * attention + dense_layers * 3 * hidden * intermediate
    total = common + moe_layers * (experts + shared) * expert_mlp
    active = common + moe_layers * (min(routed, experts) + shared) * expert_mlp
    return total / 1e9, active / 1e9


def parse_model(
    path: str, quantization: str | None = None, identity: ModelIdentity | None = None
) -> ModelSpec:
    """The model at ``path`` for the cost model; ``identity`` is what its config.json says
    (:func:`pytest_sglang.model_identity.read_model_identity`: the caller reads, this stays
    free of I/O), else its name alone is read.

    From a config: sizes from its shapes (:func:`config_params_b`), depth from
    ``num_hidden_layers``, 1 byte per parameter for an FP8/INT8 ``quantization_config`` or
    ``--quantization``, 0.5 for FP4/INT4 ones, 2 (BF16) without one. From a name:
    "Qwen3.5-122B-A10B" -> 122B total, 10B active; FP8/INT8 names or ``--quantization fp8``
    give 1 byte per parameter, FP4/INT4/AWQ/GPTQ 0.5, BF16 2; otherwise MoE checkpoints are
    taken as FP8 (the seeds' 122B is 119 GB) and dense ones as BF16. A path without a size is
    treated as a 7B dense model.
    """
    identity = identity or identity_from_name(path)
    name = path.rstrip("/").rsplit("/", 1)[-1]
    sizes = [float(m) for m in _SIZE.findall(name)]
    active_match = _ACTIVE.search(name)
    active = float(active_match.group(1)) if active_match else None
    candidates = [s for s in sizes if active is None or s != active]
    total = max(candidates) if candidates else (active or 7.0)
    active = active if active is not None else total
    shapes = config_params_b(identity.text_config or {}) if identity.from_config else None
    if shapes is not None:
        total, active = shapes
    moe = active < total
    if identity.from_config:
        lowered = f"{quantization or ''} {identity.quantization or ''}".lower()
    else:
        lowered = (name + " " + (quantization or "")).lower()
    if any(k in lowered for k in ("fp4", "int4", "awq", "gptq", "w4a")):
        bpp = 0.5
    elif any(k in lowered for k in ("fp8", "int8", "w8a8")):
        bpp = 1.0
    elif "bf16" in lowered or "fp16" in lowered or identity.from_config:
        bpp = 2.0
    else:
        bpp = 1.0 if moe else 2.0
    arch = identity.architecture
    if not identity.from_config and arch == "Qwen3MoeForCausalLM" and not moe:
        arch = "Qwen3ForCausalLM"
    return ModelSpec(
        path,
        total,
        active,
        identity.num_layers or _layers(total, moe),
        bpp,
        arch,
        experts=identity.num_experts or MOE_EXPERTS,
        experts_per_token=identity.experts_per_token or MOE_EXPERTS_PER_TOKEN,
        identity=identity,
    )


def _token_ms(model: ModelSpec, tp: int, gpu: GpuSpec) -> float:
    return 2 * model.active_b * 1e9 / (tp * gpu.tflops * 1e12 * FLOPS_EFFICIENCY) * 1e3


def _layer_overhead_ms(model: ModelSpec, tp: int) -> float:
    per_layer = LAUNCH_MS_PER_LAYER
    if tp > 1:
        per_layer += 2 * ALLREDUCE_MS
    return model.layers * per_layer


def streamed_params_b(model: ModelSpec, tokens: int) -> float:
    """Billions of parameters one forward of ``tokens`` tokens reads from memory.

    Dense: the active ones. MoE: the always-active part plus every expert at least one token
    was routed to; with independent top-k routing the expected count of distinct experts is
    ``E * (1 - (1 - k / E) ** tokens)`` (the expert-loading model of "MoESD: Unveil Speculative
    Decoding's Potential for Accelerating Sparse MoE", arXiv 2505.19645): a verify step of
    batch x draft tokens soon reads every expert.
    """
    if not model.is_moe:
        return model.active_b
    experts, per_token = model.experts, min(model.experts_per_token, model.experts - 1)
    per_expert = (model.total_b - model.active_b) / (experts - per_token)
    always = model.active_b - per_token * per_expert
    touched = experts * (1.0 - (1.0 - per_token / experts) ** max(1, tokens))
    return always + per_expert * touched


def _target_ms(model: ModelSpec, tp: int, gpu: GpuSpec, tokens: int) -> float:
    bandwidth = gpu.bandwidth_tbps * BANDWIDTH_EFFICIENCY
    streamed_ms = streamed_params_b(model, tokens) * model.bytes_per_param / tp / bandwidth
    if model.is_moe:
        # the experts' streaming hides under the MoE layers' latency floor until it outgrows it
        streamed_ms = max(model.layers * MOE_MS_PER_LAYER, streamed_ms)
    return streamed_ms + _layer_overhead_ms(model, tp) + tokens * _token_ms(model, tp, gpu)


def _draft_ms(model: ModelSpec, tp: int, gpu: GpuSpec, bs: int) -> float:
    per_layer = LAUNCH_MS_PER_LAYER + (2 * ALLREDUCE_MS if tp > 1 else 0.0)
    return DRAFT_LAYERS * per_layer + bs * _token_ms(model, tp, gpu) / 8


def greedy_acceptance(position: int) -> float:
    """Conditional greedy acceptance of draft ``position`` (1-based), EAGLE/MTP, topk 1."""
    return ACCEPT_FIRST * ACCEPT_DECAY ** (max(1, position) - 1)


def accept_length(spec: SpecConfig, temperature: float = 0.0) -> float:
    """Expected tokens per request per verify step (>= 1; exactly 1 without speculation)."""
    if spec.algorithm is None or spec.num_steps <= 0:
        return 1.0
    scale = ALGORITHM_ACCEPTANCE.get(spec.algorithm, 1.0)
    scale *= math.exp(-TEMPERATURE_PENALTY * max(0.0, temperature))
    # topk > 1 verifies a tree: each position gets topk chances, bounded by the token budget.
    # The 0.5 per extra candidate is a guess, not checked against data.
    depth = min(spec.num_steps, max(1, spec.draft_tokens - 1))
    tries = 1.0 + 0.5 * (max(1, spec.topk) - 1)
    total, prob = 1.0, 1.0
    for i in range(1, depth + 1):
        a = min(0.995, greedy_acceptance(i) * scale)
        a = 1.0 - (1.0 - a) ** tries
        prob *= a
        total += prob
    return total


def decode_step_ms(
    model: ModelSpec, tp: int, spec: SpecConfig, batch: int, gpu: GpuSpec | None = None
) -> float:
    """Wall time of one decode (or draft + verify) step for ``batch`` running requests."""
    gpu = gpu or GpuSpec()
    batch = max(1, batch)
    if spec.algorithm is None or spec.num_steps <= 0:
        return _target_ms(model, tp, gpu, batch)
    verify = _target_ms(model, tp, gpu, batch * max(2, spec.draft_tokens))
    return verify + spec.num_steps * _draft_ms(model, tp, gpu, batch)


def decode_tok_per_s(
    model: ModelSpec | str,
    tp: int,
    spec: SpecConfig,
    concurrency: int = 1,
    temperature: float = 0.0,
    gpu: GpuSpec | None = None,
) -> float:
    """Steady-state decode speed of ONE request while ``concurrency`` requests run together."""
    if isinstance(model, str):
        model = parse_model(model)
    step = decode_step_ms(model, tp, spec, concurrency, gpu)
    return accept_length(spec, temperature) * 1000.0 / step


def prefill_ms(model: ModelSpec, tp: int, prompt_tokens: int, gpu: GpuSpec | None = None) -> float:
    """Time to first token for one request alone: a forward step plus the prompt's compute."""
    gpu = gpu or GpuSpec()
    per_token = _token_ms(model, tp, gpu) / PREFILL_BATCH_GAIN
    return _target_ms(model, tp, gpu, 1) + max(0, prompt_tokens) * per_token


def free_gb_per_gpu(model: ModelSpec, tp: int, gpu: GpuSpec | None = None) -> float:
    """GPU memory per GPU left after weights (what KV cache and workspaces share)."""
    gpu = gpu or GpuSpec()
    return gpu.memory_gb - model.weights_gb / tp


def effective_max_running_requests(
    model: ModelSpec, tp: int, spec: SpecConfig, requested: int, gpu: GpuSpec | None = None
) -> int:
    """The scheduler's effective limit: under speculation, bounded by the spec workspace."""
    if spec.algorithm is None or spec.num_steps <= 0:
        return requested
    slots = int(SPEC_SLOTS_PER_FREE_GB * free_gb_per_gpu(model, tp, gpu))
    return max(1, min(requested, slots // (spec.draft_tokens + 1)))
