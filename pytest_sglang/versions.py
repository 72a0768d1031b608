"""SGLang version numbers and the flag and log differences between releases.

SGLang renames flags between releases (``--cuda-graph-max-bs`` became
``--cuda-graph-max-bs-decode``) and changed the format of its ``server_args`` log line. Everything
that depends on the release is looked up here, so the rest of the code asks one question:
"what is this called in version X?".
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = [
    "DEFAULT_SGLANG_VERSION",
    "cli_catalog",
    "field_flag",
    "log_field",
    "parse_version",
    "server_args_format",
]

DEFAULT_SGLANG_VERSION = "0.5.23"


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


def _at_least(version: str, minimum: tuple[int, ...]) -> bool:
    return parse_version(version) >= minimum


def field_flag(field: str, version: str = DEFAULT_SGLANG_VERSION) -> str:
    """The command-line flag that sets ``field`` in that SGLang version."""
    if field == "cuda_graph_max_bs":
        # 0.5.18 registers --cuda-graph-max-bs only as a deprecated alias; 0.5.23 dropped it.
        return (
            "--cuda-graph-max-bs-decode"
            if _at_least(version, (0, 5, 18))
            else ("--cuda-graph-max-bs")
        )
    return "--" + field.replace("_", "-")


def log_field(field: str, version: str = DEFAULT_SGLANG_VERSION) -> str:
    """The key under which ``field`` appears in that version's ``server_args`` log line."""
    if field == "cuda_graph_max_bs" and _at_least(version, (0, 5, 18)):
        return "cuda_graph_max_bs_decode"
    return field


def server_args_format(version: str = DEFAULT_SGLANG_VERSION) -> str:
    """``"dict"`` (``server_args={...}``, 0.5.19+) or ``"repr"`` (``ServerArgs(...)``, older)."""
    return "dict" if _at_least(version, (0, 5, 19)) else "repr"


@cache
def cli_catalog() -> tuple[dict[str, Any], ...]:
    """Every ``launch_server`` argument of SGLang 0.5.23 as captured from its real parser."""
    text = resources.files("pytest_sglang").joinpath("data/sglang_cli_flags_0.5.23.json")
    data = json.loads(text.read_text(encoding="utf-8"))
    return tuple(data["args"])
