"""What SGLang 0.5.23's resolution refuses, predicted offline before anything is deployed.

Why: a config real SGLang refuses stops production for nothing if it is deployed first. On a
real host the host's own SGLang is asked (:mod:`.lifecycle.host_resolve`); this is the offline
predictor's share, for dry runs and sweeps planned without a host: the refusals that follow
from the command line and the model's config.json alone, and, where the host's GPU is known
(the launcher's ``nvidia-smi`` answer, :func:`~pytest_sglang.gpu_rules.gpu_facts`), those that
follow from the GPU too (TRT-LLM MLA off Blackwell, TRT-LLM MHA prefill before Hopper, NGRAM's
BFS breadth on a paged backend other than FlashInfer); without a known GPU those stay silent.
Each raises :class:`~pytest_sglang.errors.ConfigError` with SGLang's own error
line, so the reason reads as the server would have said it. The rules are read off 0.5.23's
source (``ModelConfig._derive_context_length``, ``handle_data_parallelism``,
``load_pointer_head``), independently of the simulator's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import gpu_rules
from .errors import ConfigError
from .gpu_rules import GpuFacts
from .model_config_rules import verify_quantization
from .model_identity import ModelIdentity, missing_among_models

__all__ = ["check_gpu_refusals", "check_refusals"]

_LONGER_CONTEXT_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
#: ``--speculative-ngram-max-bfs-breadth``'s default: NGRAM's topk when the flag is unset
NGRAM_BFS_BREADTH = 10


def _missing(field: str, path: str) -> ConfigError:
    return ConfigError(
        f"{field}: SGLang would refuse it: OSError: Repo id must be in the form 'repo_name' or "
        f"'namespace/repo_name': '{path}'. Use `repo_type` argument if needed."
    )


def check_refusals(
    given: Mapping[str, Any],
    model: ModelIdentity,
    env: Mapping[str, str] | None = None,
    gpu: GpuFacts | None = None,
) -> None:
    """Raise :class:`ConfigError` where 0.5.23 refuses ``given`` (typed and pass-through
    values as set) for ``model`` before it logs ``server_args``; return where it would not.
    ``env`` is the environment the server gets (the config's): some refusals are lifted there,
    never by this process's own. ``gpu``: the host's GPU where it is known; the refusals that
    depend on it are checked only then (:func:`check_gpu_refusals`)."""
    env = env or {}
    path = str(given.get("model_path") or "")
    if missing_among_models(path):
        raise _missing("model_path", path)
    requested = given.get("context_length")
    if (
        requested is not None
        and model.from_config
        and model.context_length is not None
        and int(requested) > model.context_length
        and env.get(_LONGER_CONTEXT_ENV, "").lower() not in ("1", "true")
    ):
        raise ConfigError(
            f"context_length: SGLang would refuse it: User-specified context_length "
            f"({requested}) is greater than the derived context_length "
            f"({model.context_length}); set {_LONGER_CONTEXT_ENV}=1 to allow it"
        )
    quantization = given.get("quantization")
    check = verify_quantization(
        None if quantization is None else str(quantization), model.quantization
    )
    if check.error is not None:
        raise ConfigError(f"quantization: SGLang would refuse {quantization}: {check.error}")
    if model.architecture == gpu_rules.OLMO2 and given.get("attention_backend") == "flashinfer":
        raise ConfigError(
            f"attention_backend: SGLang would refuse flashinfer for {model.architecture}: "
            f"{gpu_rules.OLMO2_FLASHINFER_ERROR}"
        )
    dp = given.get("dp_size")
    tp = int(given.get("tp_size") or 1)
    algo = str(given.get("speculative_algorithm") or "").upper()
    dp_attention = given.get("enable_dp_attention") and isinstance(dp, int) and dp > 1
    if dp_attention and algo in ("STANDALONE", "NGRAM"):
        name = algo.lower()
        raise ConfigError(
            f"speculative_algorithm: SGLang would refuse {algo} with DP attention: "
            f"ValueError: Currently {name} speculative decoding does not support dp attention."
        )
    if given.get("enable_dp_attention") and isinstance(dp, int) and dp > 1 and tp % dp:
        raise ConfigError(
            f"dp_size: SGLang would refuse it: with DP attention tp_size ({tp}) must be a "
            f"multiple of dp_size ({dp}) (AssertionError in handle_data_parallelism)"
        )
    draft = given.get("speculative_draft_model_path")
    if (
        draft is not None
        and given.get("speculative_algorithm") is not None
        and missing_among_models(str(draft))
    ):
        raise _missing("speculative_draft_model_path", str(draft))
    if gpu is not None:
        check_gpu_refusals(given, model, gpu)


def _attention_backends(
    given: Mapping[str, Any], model: ModelIdentity, capability: tuple[int, int], algo: str | None
) -> tuple[str | None, str | None, str | None] | None:
    """``(attention, decode, prefill)`` backends as 0.5.23 settles them on a GPU of compute
    ``capability`` (the architecture's override, else ``get_default_attn_backend``);
    None where an override this predictor does not model decides (the hybrid Qwen3.5 family
    on sm100, whose choice reads the radix cache strategy)."""
    backend = given.get("attention_backend")
    decode = given.get("decode_attention_backend")
    prefill = given.get("prefill_attention_backend")
    if prefill is not None and prefill == decode:
        backend = prefill
    arch = model.architecture
    unset = backend is None and decode is None and prefill is None
    topk = given.get("speculative_eagle_topk")
    backend = gpu_rules.override_attention(arch, capability, algo, topk, unset, backend) or backend
    major = capability[0]
    if backend is None and arch in gpu_rules.QWEN3_5_HYBRID and major == 10:
        return None
    if backend is None:
        sinks = arch == gpu_rules.GPT_OSS
        backend = gpu_rules.default_attention(major, model.mla, algo, topk, sinks)
    return backend, decode, prefill


def check_gpu_refusals(given: Mapping[str, Any], model: ModelIdentity, gpu: GpuFacts) -> None:
    """Raise :class:`ConfigError` where ``gpu`` cannot run what ``given`` settles on, as
    0.5.23's resolution refuses it (the rules are :mod:`.gpu_rules`', shared with the
    simulator): one line naming the flag, its value and the GPU."""
    algo = given.get("speculative_algorithm")
    algo = None if algo is None else str(algo).upper()
    major = gpu.capability[0]
    backends = _attention_backends(given, model, gpu.capability, algo)
    if backends is None:
        return
    backend, decode, prefill = backends
    refusal = gpu_rules.gpu_refusal(backend, decode, prefill, major)
    if refusal is not None:
        field, value, line = refusal
        raise ConfigError(f"{field}: SGLang would refuse {value} on {gpu.label}: {line}")
    page, _warnings = gpu_rules.snapped_page(backend, decode, prefill, given.get("page_size"))
    if backend == "fa3" and given.get("kv_cache_dtype") == "fp8_e5m2":
        backend = "triton"  # _attention_backend_fa3_fp8_fallback
    topk_given = given.get("speculative_eagle_topk")
    if algo in ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE") and topk_given is not None:
        eagle = gpu_rules.eagle_backend_refusal(
            int(topk_given), int(page or 1), backend, decode, prefill
        )
        if eagle is not None:
            raise ConfigError(
                f"speculative_eagle_topk: SGLang would refuse {topk_given} with the {backend} "
                f"attention backend at page size {page} on {gpu.label}: {eagle[1]}"
            )
    if algo == "NGRAM":
        topk = int(given.get("speculative_ngram_max_bfs_breadth") or NGRAM_BFS_BREADTH)
        if gpu_rules.ngram_paged_refused(topk, int(page or 1), backend):
            line = gpu_rules.NGRAM_PAGED_ERROR.format(topk=topk, page=page)
            raise ConfigError(
                f"speculative_algorithm: SGLang would refuse NGRAM with the {backend} attention "
                f"backend at page size {page} on {gpu.label}: {line}"
            )
