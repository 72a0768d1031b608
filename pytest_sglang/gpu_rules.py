"""SGLang 0.5.23's attention rules that depend on the GPU: one copy for the simulator and the
offline predictor.

Why shared: which attention backend a config ends up with, the page size that backend forces,
and whether the GPU can run it at all are decided by the GPU generation; the simulator plays
them in resolution's order (:mod:`.sim.post_init`, :mod:`.sim.model_rules`) and the predictor
(:mod:`.refusals`) uses them to refuse, before anything is deployed, a config the host's GPU
cannot run. Both read the decisions from here, so a rule read off 0.5.23's source exists once:
``get_default_attn_backend`` (``attention_hook.py``), the DeepSeek and gpt-oss attention
overrides (``model_overrides/``), the TRT-LLM/FlashMLA page-size snaps and GPU checks
(``_mla_backend_page_constraints``, ``handle_attention_backend_compatibility``) and
``_handle_ngram``'s paged-topk check (``speculative_hook.py``).

The GPU is what ``nvidia-smi --query-gpu=name,memory.total,compute_cap`` says
(:func:`gpu_facts`, read from :meth:`.lifecycle.launcher.Launcher.gpu_profile`); without one
nothing here is asked.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "GPT_OSS",
    "NEMOTRON_H",
    "NGRAM_PAGED_ERROR",
    "OLMO2_FLASHINFER_ERROR",
    "PAGE_TREE_ERROR",
    "QWEN3_5_HYBRID",
    "TRTLLM_MHA_GPU_ERROR",
    "TRTLLM_MHA_TOPK_ERROR",
    "TRTLLM_MLA_GPU_ERROR",
    "GpuFacts",
    "deepseek_attention",
    "default_attention",
    "eagle_backend_refusal",
    "gemma4_attention",
    "gpt_oss_attention",
    "gpu_facts",
    "gpu_refusal",
    "llama4_attention",
    "nemotron_h_attention",
    "ngram_paged_refused",
    "olmo2_attention",
    "override_attention",
    "snapped_page",
]

TRTLLM_MLA_GPU_ERROR = (
    "ValueError: TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x). "
    "Please use a different backend."
)
TRTLLM_MHA_GPU_ERROR = (
    "ValueError: TRTLLM MHA backend for prefill requires Hopper (SM90), Blackwell (SM100), or "
    "SM120 GPUs. Please use a different prefill backend."
)
NGRAM_PAGED_ERROR = (
    "ValueError: speculative_eagle_topk({topk}) > 1 with page_size({page}) > 1 is unstable and "
    "produces incorrect results for paged attention backends. This combination is only "
    "supported for the 'flashinfer' backend."
)
#: gpt-oss's architecture: its override picks the attention backend, and it has attention sinks
GPT_OSS = "GptOssForCausalLM"
#: ``_qwen3_5_hybrid_overrides``' architectures (hybrid linear attention): on sm100 their
#: override picks the attention backend from the radix cache strategy
QWEN3_5_HYBRID = frozenset(
    {
        "Qwen3NextForCausalLM",
        "Qwen3_5MoeForConditionalGeneration",
        "Qwen3_5ForConditionalGeneration",
    }
)
#: ``_nemotron_h_overrides``' architectures (``model_overrides/nemotron_h.py``): on Blackwell
#: their override picks the attention backend
NEMOTRON_H = frozenset(
    {"NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "NemotronH_Omni_Reasoning_V3"}
)
FLASHMLA_PAGE_WARNING = "FlashMLA only supports a page_size of 64, change page_size to 64."
TRTLLM_MLA_PAGE_WARNING = (
    "TensorRT-LLM MLA only supports page_size of 32 or 64, changing page_size from {page} to 64."
)
TRTLLM_MHA_PAGE_WARNING = (
    "TensorRT-LLM MHA only supports page_size of 16, 32, 64 or 128, changing page_size from "
    "{page} to 64."
)


@dataclass(frozen=True)
class GpuFacts:
    """A host's GPU as the driver names it: enough for the rules here."""

    name: str
    capability: tuple[int, int]

    @property
    def label(self) -> str:
        """``NVIDIA H100 80GB HBM3 (sm90)``: how a refusal names the GPU."""
        return f"{self.name} (sm{self.capability[0]}{self.capability[1]})"


def gpu_facts(profile: str) -> GpuFacts | None:
    """The first GPU of an ``nvidia-smi --query-gpu=name,memory.total,compute_cap`` answer (one
    CSV line per GPU); None where there is none or it cannot be read (no driver, no GPU)."""
    for line in profile.splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) < 3 or not parts[0]:
            continue
        major, _dot, minor = parts[-1].partition(".")
        if major.isdigit() and minor.isdigit():
            return GpuFacts(parts[0], (int(major), int(minor)))
    return None


def default_attention(
    major: int, mla: bool, algo: str | None, explicit_topk: int | None, sinks: bool = False
) -> str:
    """``get_default_attn_backend`` on a CUDA GPU of compute capability ``major``: FA3 on
    Hopper, TRT-LLM MHA on sm100 where the speculative topk is known to be 1 (set, or no
    speculation), else FlashInfer (Triton for a model with attention sinks, which FlashInfer
    cannot serve)."""
    hopper = major == 9
    sm100 = major == 10
    if mla:
        return "fa3" if hopper else ("flashinfer" if sm100 else "triton")
    topk_one = algo is None or explicit_topk is None or explicit_topk == 1
    if hopper and topk_one:
        return "fa3"
    if sm100 and topk_one and (algo is None or explicit_topk is not None or algo == "DFLASH"):
        return "trtllm_mha"
    return "triton" if sinks else "flashinfer"


def deepseek_attention(architecture: str, major: int) -> str | None:
    """``model_overrides/deepseek_v2.py``: TRT-LLM MLA for the DeepSeek-V3 architecture on
    sm100 where no attention backend is set; None where the override does not apply."""
    return "trtllm_mla" if architecture == "DeepseekV3ForCausalLM" and major == 10 else None


def gpt_oss_attention(major: int) -> str:
    """``model_overrides/gpt_oss.py``: gpt-oss's attention backend where none is set."""
    return "trtllm_mha" if major == 10 else ("fa3" if major == 9 else "triton")


def nemotron_h_attention(
    architecture: str, major: int, algo: str | None, explicit_topk: int | None
) -> str | None:
    """``model_overrides/nemotron_h.py``: Nemotron-H's attention backend where none is set, on
    Blackwell (``is_blackwell``: sm10x-sm12x). Without speculation TRT-LLM MHA on sm100 only;
    with it TRT-LLM MHA on sm100 where the topk is unset or 1, else Triton. None where the
    override leaves the default to ``get_default_attn_backend``."""
    if architecture not in NEMOTRON_H or major not in (10, 11, 12):
        return None
    if algo is None:
        return "trtllm_mha" if major == 10 else None
    return "trtllm_mha" if major == 10 and explicit_topk in (None, 1) else "triton"


#: ``_llama4_overrides``' architectures
LLAMA4 = frozenset({"Llama4ForConditionalGeneration", "Llama4ForCausalLM"})
#: ``_olmo2_overrides``' architecture
OLMO2 = "Olmo2ForCausalLM"
#: ``handle_model_specific_adjustments``' OLMo 2 branch: the assertion on a FlashInfer backend
OLMO2_FLASHINFER_ERROR = (
    "AssertionError: FlashInfer backend can significantly degrade the performance of Olmo3 models."
)


def llama4_attention(major: int) -> tuple[str, str]:
    """``model_overrides/llama4.py`` on a CUDA GPU: (backend, the platform its warning names)."""
    if major == 10:
        return "trtllm_mha", "sm100"
    if major == 9:
        return "fa3", "sm90"
    return "triton", "other platforms"


def olmo2_attention(capability: tuple[int, int]) -> str:
    """``model_overrides/olmo2.py`` on a CUDA GPU: TRT-LLM MHA on sm100, FA3 from sm80 on."""
    if capability[0] == 10:
        return "trtllm_mha"
    return "fa3" if capability[0] * 10 + capability[1] >= 80 else "triton"


#: ``_gemma4_overrides``' architectures (the diffusion one aside: not simulated)
GEMMA4 = frozenset(
    {"Gemma4ForConditionalGeneration", "Gemma4ForCausalLM", "Gemma4UnifiedForConditionalGeneration"}
)


def gemma4_attention(major: int) -> str:
    """``model_overrides/gemma4.py``: TRT-LLM MHA on sm100, else Triton."""
    return "trtllm_mha" if major == 10 else "triton"


def override_attention(
    architecture: str,
    capability: tuple[int, int],
    algo: str | None,
    explicit_topk: int | None,
    attention_unset: bool,
    attention_backend: str | None,
) -> str | None:
    """The attention backend an architecture's registered override sets on a CUDA GPU (the
    DeepSeek-V3, gpt-oss, Nemotron-H, Gemma 4, Llama 4 and OLMo 2 overrides); None where it
    sets none.
    ``attention_unset``: no attention, prefill or decode backend given; Gemma 4's, Llama 4's
    and OLMo 2's overrides read ``attention_backend`` (Gemma 4 also sets it where only a
    prefill or decode backend is given)."""
    major = capability[0]
    if attention_unset:
        for backend in (
            deepseek_attention(architecture, major),
            gpt_oss_attention(major) if architecture == GPT_OSS else None,
            nemotron_h_attention(architecture, major, algo, explicit_topk),
        ):
            if backend is not None:
                return backend
    if attention_backend is None and architecture in GEMMA4:
        return gemma4_attention(major)
    if attention_backend is None and architecture in LLAMA4:
        return llama4_attention(major)[0]
    if attention_backend is None and architecture == OLMO2:
        return olmo2_attention(capability)
    return None


def snapped_page(
    backend: str | None, decode: str | None, prefill: str | None, page: int | None
) -> tuple[int | None, list[str]]:
    """``_mla_backend_page_constraints`` and the TRT-LLM MHA snap: the page size the backends
    force (None: left unset), with the warnings 0.5.23 logs, in its order."""
    warnings: list[str] = []
    if "flashmla" in (backend, decode):
        warnings.append(FLASHMLA_PAGE_WARNING)
        page = 64
    if "trtllm_mla" in (backend, decode) and page not in (32, 64):
        warnings.append(TRTLLM_MLA_PAGE_WARNING.format(page=page))
        page = 64
    if "trtllm_mha" in (backend, decode, prefill) and page not in (16, 32, 64, 128):
        warnings.append(TRTLLM_MHA_PAGE_WARNING.format(page=page))
        page = 64
    return page, warnings


def gpu_refusal(
    backend: str | None, decode: str | None, prefill: str | None, major: int
) -> tuple[str, str, str] | None:
    """``(field, backend, error line)`` where the GPU cannot run the chosen attention backends
    (TRT-LLM MLA off Blackwell, TRT-LLM MHA prefill before Hopper); None where it can."""
    if "trtllm_mla" in (backend, decode) and major not in (10, 12):
        field = "attention_backend" if backend == "trtllm_mla" else "decode_attention_backend"
        return field, "trtllm_mla", TRTLLM_MLA_GPU_ERROR
    if (prefill or backend) == "trtllm_mha" and major not in (9, 10, 12):
        field = "prefill_attention_backend" if prefill else "attention_backend"
        return field, "trtllm_mha", TRTLLM_MHA_GPU_ERROR
    return None


TRTLLM_MHA_TOPK_ERROR = (
    "ValueError: trtllm_mha backend only supports topk = 1 for speculative decoding."
)
#: ``_PAGE_TREE_SPEC_BACKENDS``: the backends that draft a tree (topk > 1) on pages
PAGE_TREE_SPEC_BACKENDS = ("flashinfer", "fa3", "triton")
PAGE_TREE_ERROR = (
    "ValueError: speculative_eagle_topk > 1 with page_size > 1 is only supported on "
    "('flashinfer', 'fa3', 'triton'); got attention_backend={backend!r}. Use page_size == 1 "
    "or one of those backends."
)


def eagle_backend_refusal(
    topk: int,
    page: int,
    backend: str | None,
    decode: str | None,
    prefill: str | None,
) -> tuple[str, str] | None:
    """``_handle_eagle_family``'s checks of the EAGLE tree's breadth against the attention
    backends: TRT-LLM MHA (prefill or decode, ``attention_backends_of``) only drafts a chain,
    and a paged tree needs FlashInfer, FA3 or Triton. ``(which, error line)``; None where it
    runs."""
    if "trtllm_mha" in (prefill or backend, decode or backend) and topk > 1:
        return "trtllm_mha_topk", TRTLLM_MHA_TOPK_ERROR
    if topk > 1 and page > 1 and backend not in PAGE_TREE_SPEC_BACKENDS:
        return "page_tree", PAGE_TREE_ERROR.format(backend=backend)
    return None


def ngram_paged_refused(topk: int, page: int, backend: str | None) -> bool:
    """``_handle_ngram``: a BFS breadth above 1 on a paged backend other than FlashInfer."""
    return topk > 1 and page > 1 and backend != "flashinfer"
