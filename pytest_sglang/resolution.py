"""SGLang's own resolution rules, and the startup-log facts they imply.

SGLang rewrites part of what it is given before it logs ``server_args`` (``ServerArgs``
post-init; ``arg_groups/speculative_hook.py`` in 0.5.18+): NEXTN becomes EAGLE, the draft-token
count follows the step count under topk 1, ``max_running_requests`` drops to 48 under speculative
decoding, deprecated spellings become their new names (:mod:`.aliases`). A journal check that
compared the *requested* values with the *logged* ones would fail on a healthy server, so checks
compare against the values computed here. Sources: ``shared/reference/sglang-facts.md`` section 2.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .aliases import rename_deprecated
from .argv_parse import catalog_arg, human_readable_int
from .gpu_rules import GpuFacts
from .model_identity import (
    AUTO_SPEC_3_1_4_ARCHITECTURES,
    AUTO_SPEC_5_4_8_ARCHITECTURES,
    SELF_DRAFT_ARCHITECTURES,
    ModelIdentity,
    read_model_identity,
)
from .refusals import check_refusals
from .versions import has, log_field

__all__ = [
    "ADJUST_DRAFT_TOKENS_WARNING",
    "MAX_RUNNING_48_WARNING",
    "NGRAM_DRAFT_TOKENS_WARNING",
    "NGRAM_MIXED_CHUNK_WARNING",
    "ExpectedJournal",
    "expected_journal",
    "extra_arg_values",
    "resolve",
]

ADJUST_DRAFT_TOKENS_WARNING = (
    "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
    "speculative_eagle_topk == 1"
)
MAX_RUNNING_48_WARNING = (
    "Max running requests is reset to 48 for speculative decoding. You can override this by "
    "explicitly setting --max-running-requests."
)
NGRAM_DRAFT_TOKENS_WARNING = (
    "speculative_num_draft_tokens is set to 12 by default for ngram speculative decoding. You can "
    "override this by explicitly setting --speculative-num-draft-tokens."
)
NGRAM_MIXED_CHUNK_WARNING = (
    "The mixed chunked prefill are disabled because of using ngram speculative decoding."
)
#: ``--speculative-ngram-max-bfs-breadth``'s default: NGRAM's topk when the flag is unset
NGRAM_BFS_BREADTH = 10

EAGLE_FAMILY = frozenset({"EAGLE", "EAGLE3", "STANDALONE"})


def _auto_speculative_params(
    model: ModelIdentity, algorithm: str, version: str
) -> tuple[int, int, int]:
    """``auto_choose_speculative_params``: (steps, topk, draft tokens) when steps are unset.

    SGLang decides by ``architectures[0]`` of the model's config.json; ``model`` is read from
    it where it can be (:mod:`.model_identity`), else inferred from the directory's name.
    """
    if algorithm == "STANDALONE":
        return (3, 1, 4)
    if model.architecture in AUTO_SPEC_5_4_8_ARCHITECTURES:
        return (5, 4, 8)
    if model.architecture in AUTO_SPEC_3_1_4_ARCHITECTURES:
        return (3, 1, 4)
    return (3, 1, 4) if has("auto_spec_params_3_1_4", version) else (5, 4, 8)


def resolve(
    tuned: Mapping[str, Any],
    version: str,
    passthrough: Mapping[str, Any] | None = None,
    model: ModelIdentity | None = None,
    env: Mapping[str, str] | None = None,
    gpu: GpuFacts | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Apply SGLang's rules to the explicitly set fields.

    ``passthrough`` holds the values that pass-through flags set (:func:`extra_arg_values`):
    some rules read them (NGRAM's BFS breadth, a deprecated ``--tool-call-parser``). ``model``
    is the model's identity (read on the host when deploying); without it, it is read here
    (:func:`~.model_identity.read_model_identity`), when a rule needs it. ``gpu``: the host's
    GPU where it is known (the refusals that depend on it are checked only then). Returns the
    values that change (or get filled in), pass-through fields among them, and the warnings
    SGLang logs for them, in the order it logs them.
    """
    given = {**(passthrough or {}), **tuned}
    check_refusals(given, model or read_model_identity(str(tuned["model_path"])), env, gpu)
    values, warnings = rename_deprecated(given)
    tuned = {**tuned, **{k: v for k, v in values.items() if k in tuned}}
    if tuned.get("served_model_name") is None:
        values["served_model_name"] = tuned["model_path"]
    algo = tuned.get("speculative_algorithm")
    if algo is None:
        return values, warnings
    if algo == "NEXTN":
        algo = values["speculative_algorithm"] = "EAGLE"
    if algo == "NGRAM":
        ngram_48 = has("ngram_max_running_48", version)
        if ngram_48 and tuned.get("max_running_requests") is None:
            values["max_running_requests"] = 48
            warnings.append(MAX_RUNNING_48_WARNING)
        draft = tuned.get("speculative_num_draft_tokens")
        if draft is None and has("ngram_draft_tokens_12", version):
            draft = values["speculative_num_draft_tokens"] = 12
            warnings.append(NGRAM_DRAFT_TOKENS_WARNING)
        if ngram_48:
            # topk is the BFS breadth whatever was given, and the steps follow from it: fewer
            # draft tokens than the breadth make 0 steps, which SGLang runs
            breadth = int(given.get("speculative_ngram_max_bfs_breadth") or NGRAM_BFS_BREADTH)
            values["speculative_eagle_topk"] = breadth
            if tuned.get("speculative_num_steps") is None and draft is not None:
                values["speculative_num_steps"] = int(draft) // breadth
            warnings.append(NGRAM_MIXED_CHUNK_WARNING)
        return values, warnings
    if algo in EAGLE_FAMILY and tuned.get("max_running_requests") is None:
        values["max_running_requests"] = 48
        if has("max_running_48_warning", version):
            warnings.append(MAX_RUNNING_48_WARNING)
    identity = model or read_model_identity(str(tuned["model_path"]))
    if (
        algo in EAGLE_FAMILY
        and identity.architecture in SELF_DRAFT_ARCHITECTURES
        and tuned.get("speculative_draft_model_path") is None
    ):
        # the NextN/MTP layer ships inside the checkpoint: the model drafts for itself
        values["speculative_draft_model_path"] = tuned["model_path"]
    steps = tuned.get("speculative_num_steps")
    topk = tuned.get("speculative_eagle_topk")
    draft = tuned.get("speculative_num_draft_tokens")
    if steps is None:
        steps, topk, draft = _auto_speculative_params(identity, algo, version)
        values.update(
            speculative_num_steps=steps,
            speculative_eagle_topk=topk,
            speculative_num_draft_tokens=draft,
        )
    if topk == 1 and draft != steps + 1:
        values["speculative_num_draft_tokens"] = steps + 1
        warnings.append(ADJUST_DRAFT_TOKENS_WARNING)
    return values, warnings


@dataclass(frozen=True)
class ExpectedJournal:
    """Facts the startup journal must show for a config.

    ``server_args`` maps log keys (as the version logs them) to the values they must have;
    ``warnings`` are messages that must appear before the ``server_args`` line;
    ``max_running_requests`` is the upper bound for the scheduler's effective value;
    ``notes`` says, by subject, what the prediction could not know for sure (``model``: no
    readable config.json, the model inferred from its directory's name): shown, never failed.
    """

    server_args: dict[str, Any]
    warnings: tuple[str, ...] = ()
    max_running_requests: int | None = None
    sglang_version: str = ""
    notes: dict[str, str] = field(default_factory=dict)


#: How a pass-through flag's words become the value SGLang logs, by the catalog's ``type``
#: (SGLang's own argparse ``type=`` callables): a flag of a type not listed here is not checked.
_VALUE_READERS: dict[str | None, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "str": str,
    None: str,
    "human_readable_int": human_readable_int,
    "nullable_str": lambda raw: None if not raw or raw == "None" else raw,
    "loads": json.loads,
    "json_list_type": json.loads,
}


def _read_value(arg: Mapping[str, Any], words: list[str]) -> tuple[bool, Any]:
    """``(True, value)`` as SGLang's parser reads ``words`` for ``arg``; ``(False, None)`` for a
    type the catalog names but no reader here knows, or words it would refuse."""
    reader = _VALUE_READERS.get(arg["type"])
    if reader is None:
        return False, None
    try:
        values = [reader(word) for word in words]
    except (ValueError, TypeError):
        return False, None
    if arg["nargs"] in ("+", "*"):
        return True, values
    return (True, values[0]) if len(values) == 1 else (False, None)


def extra_arg_values(extra_args: Sequence[str]) -> dict[str, Any]:
    """Values that pass-through flags set, read as SGLang's parser reads them: every value type
    of the flag catalog (``int``, ``float``, ``str``, ``human_readable_int`` such as
    ``--max-total-tokens 16k``, ``nullable_str``, JSON ``loads``/``json_list_type``), lists for
    ``nargs`` ``+``/``*``, store-true and ``--flag``/``--no-flag`` switches."""
    values: dict[str, Any] = {}
    tokens = list(extra_args)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("--"):
            continue
        flag, eq, inline = token.partition("=")
        arg = catalog_arg(flag)
        if arg is None:
            continue
        action = arg["action"]
        if action in ("_StoreTrueAction", "DeprecatedStoreTrueAction") and not eq:
            values[arg["dest"]] = True
        elif action == "BooleanOptionalAction" and not eq:
            values[arg["dest"]] = not flag.startswith("--no-")
        elif action == "_StoreAction" and arg["nargs"] in (None, "+", "*"):
            if eq:
                words = [inline]
            elif arg["nargs"] is None:
                words = tokens[i : i + 1]
            else:
                words = list(itertools.takewhile(lambda w: not w.startswith("--"), tokens[i:]))
            i += 0 if eq else len(words)
            if not words and arg["nargs"] != "*":
                continue
            known, value = _read_value(arg, words)
            if known:
                values[arg["dest"]] = value
    return values


def expected_journal(
    tuned: dict[str, Any],
    extra_args: tuple[str, ...],
    version: str,
    model: ModelIdentity | None = None,
    env: Mapping[str, str] | None = None,
    gpu: GpuFacts | None = None,
) -> ExpectedJournal:
    """The facts a server started with ``tuned`` + ``extra_args`` (and ``env``) must log;
    ``model`` and ``gpu`` as for :func:`resolve` (the model read here without it)."""
    passthrough = extra_arg_values(extra_args)
    model = model or read_model_identity(str(tuned["model_path"]))
    changes, warnings = resolve(tuned, version, passthrough, model, env, gpu)
    effective = {**tuned, **changes}
    server_args = {log_field(k, version): v for k, v in effective.items()}
    for key, value in passthrough.items():
        server_args.setdefault(key, value)
    dp = server_args.get("dp_size")
    if (
        server_args.get("enable_dp_attention")
        and has("dp_attention_to_attn_dp_size", version)
        and isinstance(dp, int)
        and dp > 1
    ):
        # SGLang folds the deprecated spelling into attn_dp_size before anything reads it
        server_args["attn_dp_size"] = dp
        server_args["dp_size"] = 1
    return ExpectedJournal(
        server_args=server_args,
        warnings=tuple(warnings),
        max_running_requests=effective.get("max_running_requests"),
        sglang_version=version,
        notes={"model": model.note} if model.note else {},
    )
