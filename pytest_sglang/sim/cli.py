"""The simulator's command line: SGLang's real ``launch_server`` parser, rebuilt from its catalog.

Why rebuild instead of hand-writing a few flags: the plugin's preflight and the unit files it
writes must behave exactly as against real SGLang, so every flag of the target version exists
with its real name, type, choices and default, and argparse's own rules apply (prefix
abbreviation such as ``--tp 4``, exit status 2 with argparse's message for unknown or ambiguous
flags). The catalog is :func:`pytest_sglang.versions.cli_catalog` (captured from the real
parser); the version table's differences are applied on top of it (:func:`catalog_for`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..versions import cli_catalog, has

__all__ = ["build_parser", "catalog_for", "parse_args"]

_PROG = "python3 -m sglang.launch_server"


def catalog_for(version: str) -> list[dict[str, Any]]:
    """The flag catalog of ``version``: 0.5.23's, plus 0.5.18's deprecated ``--cuda-graph-max-bs``.

    0.5.18 registers ``--cuda-graph-max-bs`` as a deprecated alias that stores into
    ``cuda_graph_max_bs_decode``; 0.5.23 no longer has it (sglang-facts.md section 1).
    """
    catalog = [dict(entry) for entry in cli_catalog()]
    if not has("cuda_graph_max_bs_alias_dropped", version):
        alias = {
            "flags": ["--cuda-graph-max-bs"],
            "dest": "cuda_graph_max_bs_decode",
            "type": "int",
            "action": "_StoreAction",
            "default": None,
            "choices": None,
            "nargs": None,
            "deprecated": True,
        }
        index = next(i for i, e in enumerate(catalog) if e["dest"] == "cuda_graph_max_bs_decode")
        catalog.insert(index, alias)
    return catalog


def _human_readable_int(text: str) -> int:
    """SGLang's ``human_readable_int``: ``32768``, ``32k``, ``1M`` (binary-free, powers of 1000)."""
    cleaned = text.strip().lower().replace("_", "")
    scale = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}
    if cleaned and cleaned[-1] in scale:
        return int(float(cleaned[:-1]) * scale[cleaned[-1]])
    return int(cleaned)


def _nullable_str(text: str) -> str | None:
    return None if text.lower() in ("", "none", "null") else text


def _json_list(text: str) -> list[Any]:
    value = json.loads(text)
    if not isinstance(value, list):
        raise argparse.ArgumentTypeError(f"expected a JSON list, got {text!r}")
    return value


def _cuda_graph_backend(text: str) -> str:
    return text.strip().lower()


_TYPES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "loads": json.loads,
    "human_readable_int": _human_readable_int,
    "nullable_str": _nullable_str,
    "json_list_type": _json_list,
    "parse_cuda_graph_backend_arg": _cuda_graph_backend,
    "parse_cuda_graph_config_arg": json.loads,
}


def build_parser(version: str) -> argparse.ArgumentParser:
    """An ``argparse`` parser with every ``launch_server`` flag of ``version``."""
    parser = argparse.ArgumentParser(prog=_PROG)
    for entry in catalog_for(version):
        kwargs: dict[str, Any] = {"dest": entry["dest"], "default": entry["default"]}
        action = entry["action"]
        if action in ("_StoreTrueAction", "DeprecatedStoreTrueAction"):
            kwargs["action"] = "store_true"
        elif action == "BooleanOptionalAction":
            kwargs["action"] = argparse.BooleanOptionalAction
            flags = [f for f in entry["flags"] if not f.startswith("--no-")]
            parser.add_argument(*flags, **kwargs)
            continue
        elif action == "DeprecatedStoreConstAction":
            kwargs["choices"] = entry["choices"]
        else:
            if entry["type"] is not None:
                kwargs["type"] = _TYPES.get(entry["type"], str)
            if entry["choices"] is not None:
                kwargs["choices"] = entry["choices"]
            if entry["nargs"] not in (None, 0):
                kwargs["nargs"] = entry["nargs"]
            if entry["dest"] == "model_path":
                kwargs["required"] = True
        parser.add_argument(*entry["flags"], **kwargs)
    return parser


def parse_args(argv: list[str], version: str) -> dict[str, Any]:
    """Parse ``argv`` like SGLang ``version``; argparse exits 2 on a bad command line."""
    namespace = build_parser(version).parse_args(argv)
    return dict(vars(namespace))
