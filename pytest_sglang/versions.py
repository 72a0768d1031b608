"""SGLang version numbers and the flag and log differences between releases.

SGLang renames flags between releases (``--cuda-graph-max-bs`` became
``--cuda-graph-max-bs-decode``), changed the format of its ``server_args`` log line and some of
its resolution rules. Every such fact is one row of :data:`CHANGES`; the plugin's flag naming
(:func:`field_flag`), the log keys it expects (:func:`log_field`), its resolution rules and the
simulator all read that table through :func:`has`, so the rest of the code asks one question:
"what is this called, or how does it behave, in version X?". Versions are read by
:func:`parse_version` only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

__all__ = [
    "CATALOG_VERSION",
    "CHANGES",
    "CLI_CATALOG",
    "DEFAULT_SGLANG_VERSION",
    "SIMULATED_VERSIONS",
    "TRI_STATE_FEATURE_FLAGS",
    "Change",
    "ChangeName",
    "cli_catalog",
    "field_flag",
    "field_flags",
    "has",
    "log_field",
    "parse_version",
]

#: The release whose ``launch_server`` parser the flag catalog was captured from.
CATALOG_VERSION = "0.5.23"
#: That catalog, a resource of this package: every argument with its flags, type and default.
CLI_CATALOG = f"data/sglang_cli_flags_{CATALOG_VERSION}.json"
#: The release assumed where a host's is not known: the newest one the catalog describes.
DEFAULT_SGLANG_VERSION = CATALOG_VERSION
#: The releases the simulator plays (``SGLANG_SIM_VERSION``).
SIMULATED_VERSIONS = ("0.5.18", "0.5.19", "0.5.20", "0.5.22", "0.5.23")

ChangeName = Literal[
    "max_running_48_warning",
    "ngram_max_running_48",
    "dp_attention_to_attn_dp_size",
    "cuda_graph_max_bs_decode",
    "auto_spec_params_3_1_4",
    "ngram_draft_tokens_12",
    "spec_v2_non_overlap_warning",
    "server_args_dict",
    "cuda_graph_max_bs_alias_dropped",
    "tri_state_feature_flags",
]


#: ``(field, new spelling)`` pairs.
Renames = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Change:
    """One difference between SGLang releases: in effect from ``since`` on.

    ``flags`` and ``log_keys`` are ``(field, new spelling)`` pairs: the field's command-line
    flag, and its key in the ``server_args`` log line, from that release on.
    """

    since: str
    name: ChangeName
    what: str
    flags: Renames = ()
    log_keys: Renames = ()


#: Every version difference the plugin and the simulator know, oldest first
#: (sources: ``shared/reference/sglang-facts.md`` sections 1 and 2).
CHANGES: tuple[Change, ...] = (
    Change(
        "0.5.0",
        "max_running_48_warning",
        "speculative decoding logs 'Max running requests is reset to 48'",
    ),
    Change(
        "0.5.18",
        "cuda_graph_max_bs_decode",
        "--cuda-graph-max-bs is now --cuda-graph-max-bs-decode (the old flag a deprecated alias)",
        flags=(("cuda_graph_max_bs", "--cuda-graph-max-bs-decode"),),
        log_keys=(("cuda_graph_max_bs", "cuda_graph_max_bs_decode"),),
    ),
    Change(
        "0.5.18",
        "auto_spec_params_3_1_4",
        "auto_choose_speculative_params gives (3, 1, 4) for other architectures, was (5, 4, 8)",
    ),
    Change(
        "0.5.18",
        "ngram_draft_tokens_12",
        "NGRAM without --speculative-num-draft-tokens gets 12, with a warning",
    ),
    Change(
        "0.5.18",
        "spec_v2_non_overlap_warning",
        "eagle-family decoding with --disable-overlap-schedule warns of synchronous spec v2",
    ),
    Change(
        "0.5.19",
        "server_args_dict",
        "server_args is logged as a dict (server_args={...}), was ServerArgs(...)",
    ),
    Change(
        "0.5.23",
        "ngram_max_running_48",
        "NGRAM resets max_running_requests to 48 (with the warning), topk to its BFS breadth (10) "
        "and derives the steps from the draft tokens (real 0.5.23 goldens; older releases "
        "unverified)",
    ),
    Change(
        "0.5.23",
        "dp_attention_to_attn_dp_size",
        "--enable-dp-attention --dp-size N is logged as attn_dp_size=N, dp_size=1",
    ),
    Change(
        "0.5.23",
        "cuda_graph_max_bs_alias_dropped",
        "the deprecated --cuda-graph-max-bs alias is gone",
    ),
    Change(
        "0.5.23",
        "tri_state_feature_flags",
        "--enable-tf32-matmul, --enable-fused-qk-norm-rope, --mm-enable-dp-encoder and "
        "--enable-decoder-swa-bounded-replay take --no-... and default to None (decided at "
        "start; a Llama keeps None for the fused QK-norm-RoPE and the SWA replay), were "
        "store-true flags defaulting to False (both parsers, pip install --no-deps; "
        "tests_real/test_release_settings.py)",
    ),
)

#: The flags :data:`CHANGES`' ``tri_state_feature_flags`` made three-valued (None: decided at
#: start); before 0.5.23, store-true flags that default to False.
TRI_STATE_FEATURE_FLAGS = (
    "enable_tf32_matmul",
    "enable_fused_qk_norm_rope",
    "mm_enable_dp_encoder",
    "enable_decoder_swa_bounded_replay",
)


def parse_version(version: str) -> tuple[int, ...]:
    """``"0.5.23"`` -> ``(0, 5, 23)``; post/rc suffixes are ignored (``0.4.10.post2`` -> 0.4.10)."""
    parts: list[int] = []
    for piece in version.strip().lstrip("v").split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
    if not parts:
        raise ValueError(f"not an SGLang version: {version!r}")
    return tuple(parts)


_SINCE = {change.name: parse_version(change.since) for change in CHANGES}


def has(change: ChangeName, version: str) -> bool:
    """Whether SGLang ``version`` has the change named ``change`` (a row of :data:`CHANGES`)."""
    return parse_version(version) >= _SINCE[change]


def _spelled(field: str, version: str, spelling: str, renames: Callable[[Change], Renames]) -> str:
    """``spelling`` after every rename of ``field`` in ``renames`` that ``version`` has."""
    for change in CHANGES:
        for name, renamed in renames(change):
            if name == field and has(change.name, version):
                spelling = renamed
    return spelling


def field_flag(field: str, version: str = DEFAULT_SGLANG_VERSION) -> str:
    """The command-line flag that sets ``field`` in that SGLang version."""
    return _spelled(field, version, "--" + field.replace("_", "-"), lambda c: c.flags)


def field_flags(field: str) -> tuple[str, ...]:
    """Every spelling ``field``'s flag has had, oldest first."""
    renames = [new for change in CHANGES for name, new in change.flags if name == field]
    return ("--" + field.replace("_", "-"), *renames)


def log_field(field: str, version: str = DEFAULT_SGLANG_VERSION) -> str:
    """The key under which ``field`` appears in that version's ``server_args`` log line."""
    return _spelled(field, version, field, lambda c: c.log_keys)


@cache
def cli_catalog() -> tuple[dict[str, Any], ...]:
    """Every ``launch_server`` argument of :data:`CATALOG_VERSION`, captured from its parser."""
    text = resources.files("pytest_sglang").joinpath(CLI_CATALOG)
    data = json.loads(text.read_text(encoding="utf-8"))
    return tuple(data["args"])
