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
import functools
import json
import re
import sys
from decimal import Decimal
from typing import Any

from ..versions import TRI_STATE_FEATURE_FLAGS, cli_catalog, has

__all__ = ["build_parser", "catalog_for", "parse_args"]

#: 0.5.23 builds its parser with this name whichever entry point starts it (``sglang serve``
#: or ``python -m sglang.launch_server``), so argparse's errors start with it
_PROG = "sglang serve"


def catalog_for(version: str) -> list[dict[str, Any]]:
    """The flag catalog of ``version``: 0.5.23's, plus 0.5.18's deprecated ``--cuda-graph-max-bs``,
    and before 0.5.23 the store-true flags defaulting to False that 0.5.23 made three-valued.

    0.5.18 registers ``--cuda-graph-max-bs`` as a deprecated alias that stores into
    ``cuda_graph_max_bs_decode``; 0.5.23 no longer has it (sglang-facts.md section 1). 0.5.22
    defines :data:`~pytest_sglang.versions.TRI_STATE_FEATURE_FLAGS` as store-true flags
    (default False); 0.5.23 as ``--flag``/``--no-flag`` defaulting to None (read from both
    releases' parsers: a default that changed under the same command line).
    """
    catalog = [dict(entry) for entry in cli_catalog()]
    if not has("tri_state_feature_flags", version):
        for entry in catalog:
            if entry["dest"] in TRI_STATE_FEATURE_FLAGS:
                entry.update(
                    flags=[f for f in entry["flags"] if not f.startswith("--no-")],
                    action="_StoreTrueAction",
                    default=False,
                )
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


def human_readable_int(value: str) -> int:
    """SGLang's ``human_readable_int``: ``32768``, SI ``32k``/``1M``, IEC ``1Ki``/``1Mi``.

    Case-sensitive like the real one: ``1K`` and ``1m`` are refused, decimals only with SI.
    """
    value = value.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
    if match:
        number, suffix = match.groups()
        if suffix in _IEC:
            if "." in number:
                raise argparse.ArgumentTypeError(
                    f"Decimals are not allowed with IEC suffixes like '{suffix}'. "
                    f"Use an integer IEC value such as '{int(Decimal(number))}{suffix}', "
                    f"or an SI value such as '{number}{suffix[0]}'."
                )
            return int(number) * _IEC[suffix]
        return int(Decimal(number) * _SI[suffix])
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"Invalid integer value: '{value}'. "
            "Use a plain integer, SI suffixes (1k, 1M), or IEC suffixes (1Ki, 1Mi). "
            "Suffixes are case-sensitive."
        ) from None


_SI = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def nullable_str(val: str) -> str | None:
    """Empty or ``None`` (that spelling only) means unset."""
    if not val or val == "None":
        return None
    return val


def json_list_type(value: str) -> Any:
    """Any JSON value (the real one does not check that it is a list)."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raise argparse.ArgumentTypeError(
            f"Invalid JSON list: {value}. Please provide a valid JSON list."
        ) from None


def parse_cuda_graph_backend_arg(raw: str) -> str:
    """Kept verbatim (argparse's choices then refuse ``FULL``); the retired name is refused."""
    if raw == "tc_piecewise":
        raise argparse.ArgumentTypeError(
            "tc_piecewise was removed; select breakable, full, or disabled"
        )
    return raw


_GRAPH_PHASES = ("decode", "prefill")
_GRAPH_KEYS = {
    "decode": ("backend", "max_bs", "bs"),
    "prefill": (
        "backend",
        "max_bs",
        "bs",
        "max_context_size",
        "full_prefill_max_req",
        "full_prefill_prefix_chunk_tokens",
        "max_seq_len",
    ),
}


def parse_cuda_graph_config_arg(raw: str) -> dict[str, dict[str, Any]]:
    """``--cuda-graph-config``: a JSON object of phase -> settings, keys checked per phase."""
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"--cuda-graph-config must be JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(
            f"--cuda-graph-config must be a JSON object, got {type(parsed).__name__}"
        )
    result: dict[str, dict[str, Any]] = {}
    for phase, settings in parsed.items():
        phase = str(phase)
        if phase not in _GRAPH_PHASES:
            raise argparse.ArgumentTypeError(
                f"--cuda-graph-config: unknown phase '{phase}', expected one of {_GRAPH_PHASES}"
            )
        if not isinstance(settings, dict):
            raise argparse.ArgumentTypeError(
                f"--cuda-graph-config['{phase}'] must be a JSON object, got "
                f"{type(settings).__name__}"
            )
        if "backend" in settings:
            parse_cuda_graph_backend_arg(settings["backend"])
        allowed = _GRAPH_KEYS[phase]
        result[phase] = {}
        for key, value in settings.items():
            if key not in allowed:
                raise argparse.ArgumentTypeError(
                    f"--cuda-graph-config['{phase}']: unknown key '{key}', expected one of "
                    f"{allowed}"
                )
            result[phase][key] = value
    return result


class LoRAPathAction(argparse.Action):
    """``--lora-paths``: ``name=path``, a plain path, or a JSON object with lora_name/lora_path."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        lora_paths: list[Any] = []
        for lora_path in values or []:
            lora_path = lora_path.strip()
            if lora_path.startswith("{") and lora_path.endswith("}"):
                obj = json.loads(lora_path)
                assert "lora_path" in obj and "lora_name" in obj, (
                    f"{lora_path!r} looks like a JSON str, "
                    "but it does not contain 'lora_name' and 'lora_path' keys."
                )
                lora_paths.append(obj)
            else:
                lora_paths.append(lora_path)
        setattr(namespace, self.dest, lora_paths)


#: the replacement each retired flag's warning names (0.5.23's ``new_flag=``)
_NEW_FLAGS = {
    "--disable-cuda-graph": "--cuda-graph-backend-{decode,prefill}=disabled",
    "--enable-dp-attention": "--attn-dp-size <dp-size>",
    "--monokernel-backend": "--enable-amd-monokernel",
}


def _deprecated_warning(option_string: str | None) -> None:
    """``print_deprecated_warning``: logged before logging is set up, so bare on stderr."""
    new_flag = _NEW_FLAGS.get(option_string or "")
    replacement = f" Use '{new_flag}' instead." if new_flag else ""
    sys.stderr.write(
        f"\033[1;33m'{option_string}' is deprecated and will be removed in a future "
        f"release.{replacement}\033[0m\n"
    )


class DeprecatedStoreTrueAction(argparse.Action):
    """A retired boolean that still stores True, with the deprecation warning."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("default", False)
        super().__init__(option_strings, dest, nargs=0, const=True, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        _deprecated_warning(option_string)
        setattr(namespace, self.dest, True)


class DeprecatedStoreConstAction(argparse.Action):
    """A retired valued flag whose one accepted value became a boolean (``--monokernel-backend
    amd`` -> ``enable_amd_monokernel=True``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        _deprecated_warning(option_string)
        setattr(namespace, self.dest, True)


_TYPES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "loads": json.loads,
    "human_readable_int": human_readable_int,
    "nullable_str": nullable_str,
    "json_list_type": json_list_type,
    "parse_cuda_graph_backend_arg": parse_cuda_graph_backend_arg,
    "parse_cuda_graph_config_arg": parse_cuda_graph_config_arg,
}


def build_parser(version: str) -> argparse.ArgumentParser:
    """An ``argparse`` parser with every ``launch_server`` flag of ``version``."""
    parser = argparse.ArgumentParser(prog=_PROG)
    for entry in catalog_for(version):
        kwargs: dict[str, Any] = {"dest": entry["dest"], "default": entry["default"]}
        action = entry["action"]
        if action == "_StoreTrueAction":
            kwargs["action"] = "store_true"
        elif action == "DeprecatedStoreTrueAction":
            kwargs["action"] = DeprecatedStoreTrueAction
        elif action == "LoRAPathAction":
            kwargs.update(action=LoRAPathAction, nargs=entry["nargs"], type=str)
        elif action == "BooleanOptionalAction":
            kwargs["action"] = argparse.BooleanOptionalAction
            flags = [f for f in entry["flags"] if not f.startswith("--no-")]
            parser.add_argument(*flags, **kwargs)
            continue
        elif action == "DeprecatedStoreConstAction":
            kwargs.update(action=DeprecatedStoreConstAction, choices=entry["choices"])
        else:
            if entry["type"] is not None:
                kwargs["type"] = _TYPES.get(entry["type"], str)
            if entry["choices"] is not None:
                kwargs["choices"] = entry["choices"]
            if entry["nargs"] not in (None, 0):
                kwargs["nargs"] = entry["nargs"]
            if entry["nargs"] == "?":
                kwargs["const"] = ""  # --model-checksum alone: checksum from the hub
            if entry["dest"] == "model_path":
                kwargs["required"] = True
        parser.add_argument(*entry["flags"], **kwargs)
    return parser


@functools.lru_cache(maxsize=8)
def _parser_of(version: str) -> argparse.ArgumentParser:
    """One parser per version: building one adds about 530 arguments (about 80 ms), and
    parsing leaves it as it was, so a process that parses many command lines (the conformance
    replay, a sweep's plans) builds each version's once."""
    return build_parser(version)


def parse_args(argv: list[str], version: str) -> dict[str, Any]:
    """Parse ``argv`` like SGLang ``version``; argparse exits 2 on a bad command line."""
    namespace = _parser_of(version).parse_args(argv)
    return dict(vars(namespace))
