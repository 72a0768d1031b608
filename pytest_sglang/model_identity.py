"""What a model is, read from its own ``config.json`` as SGLang reads it.

Why: SGLang decides by the model's ``config.json`` (``hf_config.architectures[0]`` picks the
automatic speculative step counts, ``get_context_length`` the context length, MLA/MoE/NextN
facts and ``quantization_config`` the kernels), not by the directory's name. Inferred from the
name alone, a DeepseekV3-architecture model under another name, or a smaller sibling of a known
family, is resolved as the wrong model. The plugin's offline predictor
(:mod:`pytest_sglang.resolution`) and the simulator (:mod:`pytest_sglang.sim`) read one
:class:`ModelIdentity` from here: reading a file is data, like :mod:`.aliases`, not a rule the
two should implement apart. The rules that *use* it stay separate in each.

Where the file cannot be read (a name-only directory, a hub id, a host without the path), the
identity falls back to what the directory's name suggests, and :attr:`ModelIdentity.note` says
so in one line (a note, never an error: a dry run or a sweep planned away from the host must
still work).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "AUTO_SPEC_3_1_4_ARCHITECTURES",
    "AUTO_SPEC_5_4_8_ARCHITECTURES",
    "CONFIG_NAME",
    "EXPERT_KEYS",
    "SELF_DRAFT_ARCHITECTURES",
    "ModelIdentity",
    "identity_from_config",
    "identity_from_name",
    "identity_from_text",
    "missing_among_models",
    "read_model_identity",
]

CONFIG_NAME = "config.json"

#: ``CONTEXT_LENGTH_KEYS`` of 0.5.23's ``sglang/srt/utils/hf_transformers/common.py``, in order
CONTEXT_LENGTH_KEYS = (
    "max_sequence_length",
    "seq_length",
    "max_seq_len",
    "model_max_length",
    "max_position_embeddings",
)
#: ``get_context_length``'s answer when a config names none of the keys
DEFAULT_CONTEXT_LENGTH = 2048
#: keys that count a MoE layer's routed experts (DeepSeek, Qwen-MoE, Mixtral/gpt-oss)
EXPERT_KEYS = ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts")
#: keys that count the checkpoint's own MTP / NextN layers (DeepSeek and GLM, Qwen3-Next/3.5)
_NEXTN_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")

#: ``_auto_choose_speculative_params`` of 0.5.23 (``arg_groups/speculative_hook.py``): the
#: architectures that get (steps, topk, draft) = (5, 4, 8), and (3, 1, 4), in every version.
#: Data read off the source, shared like :mod:`.aliases`; each side applies it on its own.
AUTO_SPEC_5_4_8_ARCHITECTURES = frozenset(
    {"LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM"}
)
AUTO_SPEC_3_1_4_ARCHITECTURES = frozenset(
    {
        "DeepseekV32ForCausalLM",
        "DeepseekV3ForCausalLM",
        "DeepseekV2ForCausalLM",
        "GptOssForCausalLM",
        "Glm4MoeForCausalLM",
        "Glm4MoeLiteForCausalLM",
        "GlmMoeDsaForCausalLM",
        "BailingMoeForCausalLM",
        "BailingMoeV2ForCausalLM",
        "BailingMoeV2_5ForCausalLM",
        "MistralLarge3ForCausalLM",
        "PixtralForConditionalGeneration",
        "MiMoV2ForCausalLM",
        "MiMoV2FlashForCausalLM",
    }
)
#: architectures whose NextN/MTP draft layer ships inside the checkpoint: under EAGLE without
#: ``--speculative-draft-model-path`` the draft model is the model itself (0.5.23's
#: ``_handle_eagle_family``)
SELF_DRAFT_ARCHITECTURES = (
    AUTO_SPEC_3_1_4_ARCHITECTURES
    - {"DeepseekV2ForCausalLM", "GptOssForCausalLM", "MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM"}
) | {
    "DeepseekV4ForCausalLM",
    "HYV3ForCausalLM",
    "HYV4ForCausalLM",
    "Qwen4ExpForConditionalGeneration",
}

#: Name fragments and the architecture they suggest, first match wins: the plugin's and the
#: simulator's earlier name rules merged (checked against the conformance goldens, whose model
#: directories are names only).
_NAME_ARCHITECTURES = (
    ("llama", "LlamaForCausalLM"),
    ("grok", "Grok1ForCausalLM"),
    ("deepseek", "DeepseekV3ForCausalLM"),
    ("qwen3.5", "Qwen3_5MoeForConditionalGeneration"),
    ("qwen3", "Qwen3MoeForCausalLM"),
    ("qwen2", "Qwen2ForCausalLM"),
    ("mistral", "MistralForCausalLM"),
    ("gpt-oss", "GptOssForCausalLM"),
    ("gptoss", "GptOssForCausalLM"),
    ("glm", "Glm4MoeForCausalLM"),
    ("bailing", "BailingMoeV2ForCausalLM"),
    ("ling-", "BailingMoeV2ForCausalLM"),
)
#: what a name without a known fragment is taken as
_DEFAULT_ARCHITECTURE = "Qwen2ForCausalLM"
#: ``model_type`` of the architectures the name rules give (what ``/get_model_info`` reports)
_NAME_MODEL_TYPES = {
    "LlamaForCausalLM": "llama",
    "Grok1ForCausalLM": "grok-1",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "Qwen3_5MoeForConditionalGeneration": "qwen3_5_moe",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "Qwen2ForCausalLM": "qwen2",
    "MistralForCausalLM": "mistral",
    "GptOssForCausalLM": "gpt_oss",
    "Glm4MoeForCausalLM": "glm4_moe",
    "BailingMoeV2ForCausalLM": "bailing_moe",
}
_MLA_ARCHITECTURES = frozenset(
    {"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM"}
)


@dataclass(frozen=True)
class ModelIdentity:
    """The facts about a model that SGLang's resolution and start-up read from its config.

    ``from_config`` is False where the facts were inferred from the directory's name; then
    ``note`` says why in one line, and the numbers the name cannot give (``context_length``,
    ``num_layers``, expert counts) are None, for each consumer to keep its own default.
    """

    path: str
    architecture: str
    model_type: str | None = None
    context_length: int | None = None
    num_layers: int | None = None
    hidden_size: int | None = None
    num_experts: int | None = None
    experts_per_token: int | None = None
    mla: bool = False
    nextn_layers: int = 0
    quantization: str | None = None
    sliding_window: int | None = None
    from_config: bool = False
    note: str | None = None
    #: the text model's fields as read (sizes for the simulator's cost model); empty by name
    text_config: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    #: sha256 of the config.json text it was read from (None by name): what the host's own
    #: resolution of a config is cached under (:mod:`pytest_sglang.lifecycle.host_resolve`)
    config_digest: str | None = field(default=None, compare=False, hash=False)

    @property
    def is_moe(self) -> bool:
        """Routed experts in the model (a MoE layer)."""
        return bool(self.num_experts and self.num_experts > 1)


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def identity_from_name(path: str, why: str | None = None) -> ModelIdentity:
    """The identity the directory's name suggests; ``why`` (no readable config.json) makes the
    one note that says so."""
    lowered = _name(path).lower()
    arch = next((a for key, a in _NAME_ARCHITECTURES if key in lowered), _DEFAULT_ARCHITECTURE)
    note = None
    if why is not None:
        note = (
            f"model {path}: no readable {CONFIG_NAME} ({why}); its identity is inferred from "
            "the directory name"
        )
    return ModelIdentity(
        path=path,
        architecture=arch,
        model_type=_NAME_MODEL_TYPES.get(arch),
        mla=arch in _MLA_ARCHITECTURES,
        note=note,
    )


def _positive_int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if value > 0 else None


def context_length_of(text: Mapping[str, Any]) -> int:
    """``get_context_length`` of 0.5.23: the first context key, times the rope scaling factor
    unless the scaling keeps its original length (``original_max_position_embeddings``) or is
    llama3's."""
    factor: float = 1
    rope = text.get("rope_scaling")
    if isinstance(rope, Mapping) and rope:
        factor = rope.get("factor", 1) or 1
        if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
            factor = 1
    for key in CONTEXT_LENGTH_KEYS:
        value = text.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(factor * value)
    return DEFAULT_CONTEXT_LENGTH


def _sliding_window(text: Mapping[str, Any]) -> int | None:
    """The attention window, where the config turns one on (Qwen2 lists one it disables)."""
    if text.get("use_sliding_window") is False:
        return None
    return _positive_int(text.get("sliding_window"))


def identity_from_config(path: str, config: Mapping[str, Any]) -> ModelIdentity:
    """The identity of a parsed ``config.json``. Text facts come from ``text_config`` where the
    model nests one (SGLang's ``get_hf_text_config`` for multimodal models).

    Raises ValueError for a config that names no architecture: SGLang cannot load it either.
    """
    archs = config.get("architectures")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
        raise ValueError("it names no architectures")
    nested = config.get("text_config")
    text: Mapping[str, Any] = nested if isinstance(nested, Mapping) else config
    quant = config.get("quantization_config") or text.get("quantization_config")
    method = quant.get("quant_method") if isinstance(quant, Mapping) else None
    experts = next((_positive_int(text.get(k)) for k in EXPERT_KEYS if text.get(k)), None)
    nextn = next((_positive_int(text.get(k)) for k in _NEXTN_KEYS if text.get(k)), None)
    model_type = config.get("model_type")
    return ModelIdentity(
        path=path,
        architecture=archs[0],
        model_type=model_type if isinstance(model_type, str) else None,
        context_length=context_length_of(text),
        num_layers=_positive_int(text.get("num_hidden_layers")),
        hidden_size=_positive_int(text.get("hidden_size")),
        num_experts=experts,
        experts_per_token=_positive_int(text.get("num_experts_per_tok")),
        mla=text.get("kv_lora_rank") is not None or archs[0] in _MLA_ARCHITECTURES,
        nextn_layers=nextn or 0,
        quantization=str(method) if method else None,
        sliding_window=_sliding_window(text),
        from_config=True,
        text_config=dict(text),
    )


def identity_from_text(path: str, text: str) -> ModelIdentity:
    """The identity of ``config.json``'s text (read here or on a host); the name's, with the
    note, where the text is no config."""
    try:
        config = json.loads(text)
    except ValueError as exc:
        return identity_from_name(path, f"not JSON: {exc}")
    if not isinstance(config, dict):
        return identity_from_name(path, "not a JSON object")
    try:
        identity = identity_from_config(path, config)
    except ValueError as exc:
        return identity_from_name(path, str(exc))
    return replace(identity, config_digest=hashlib.sha256(text.encode()).hexdigest())


def missing_among_models(path: str) -> bool:
    """Whether ``path`` is an absolute model directory that does not exist where other models'
    config.json files can be read next to it: a directory SGLang will not find (it then takes
    the path for a hub id and refuses it). A path whose parent holds no readable model says
    nothing (a sweep planned away from the host, a model only the host has)."""
    if not os.path.isabs(path) or os.path.isdir(path):
        return False
    parent = os.path.dirname(path.rstrip("/"))
    try:
        siblings = os.listdir(parent)
    except OSError:
        return False
    return any(os.path.isfile(os.path.join(parent, s, CONFIG_NAME)) for s in siblings)


def read_model_identity(path: str) -> ModelIdentity:
    """The identity of the model at ``path`` on this machine: its ``config.json`` where it can
    be read, else the name's with the note why."""
    config_path = os.path.join(path, CONFIG_NAME)
    if not os.path.isdir(path):
        return identity_from_name(path, "no such directory on this machine")
    try:
        with open(config_path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        return identity_from_name(path, exc.strerror or type(exc).__name__)
    return identity_from_text(path, text)
