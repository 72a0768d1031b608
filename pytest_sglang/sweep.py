"""Many configurations from one: sweeps, and configs kept in YAML, TOML or JSON files."""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .config import ServerConfig, did_you_mean
from .errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["change_label", "load_configs", "sweep"]


def sweep(base: ServerConfig, **axes: Iterable[Any]) -> list[ServerConfig]:
    """The cartesian product of ``base`` with the given field values, first axis outermost.

    ``sweep(base, speculative_num_steps=[1, 2, 3, 4])`` gives four configs whose ids
    (``eagle-s1-k1`` ...) become the test ids when used in ``pytest.mark.parametrize``.
    ``launcher=["0.5.22", "0.5.23"]`` runs every config on each of the host's named launchers
    (``eagle-s1-k1-on-0.5.22`` ...): two releases in one session.
    ``topology=[Topology(router=Router(policy=p)) for p in ROUTER_POLICIES]`` runs the config
    as replicas behind the router under each policy (``tp4-dp2-round-robin`` ...).
    """
    fields = ServerConfig.model_fields
    names = list(axes)
    values: list[list[Any]] = []
    for name in names:
        if name not in fields or name == "name":
            raise ConfigError(f"sweep: {name!r} is not a ServerConfig field{did_you_mean(name)}")
        axis = axes[name]
        if isinstance(axis, (str, bytes)) or not isinstance(axis, Iterable):
            raise ConfigError(f"sweep: {name} must be a list of values, got {axis!r}")
        axis_values = list(axis)
        if not axis_values:
            raise ConfigError(f"sweep: {name} has no values")
        values.append(axis_values)
    configs: list[ServerConfig] = []
    for combo in itertools.product(*values):
        changes = dict(zip(names, combo))
        if base.name:
            label = change_label(changes)
            changes["name"] = f"{base.name}-{label}" if label else base.name
        try:
            configs.append(base.replace(**changes))
        except ConfigError as exc:
            raise ConfigError(f"sweep point {changes}: {exc}") from None
    ids = [c.id for c in configs]
    duplicates = {i for i in ids if ids.count(i) > 1}
    if duplicates:
        raise ConfigError(
            f"sweep: configs share the id(s) {sorted(duplicates)}; give the base config a 'name'"
        )
    return configs


def change_label(changes: dict[str, Any]) -> str:
    """A short test-id label of field changes: ``{"speculative_num_steps": 3}`` -> ``s3``.
    A ``launcher`` and a ``topology`` are left out: a config's id ends in ``-on-<launcher>`` and
    its topology's id (``-dp2-round-robin``) by itself."""
    own = ("launcher", "topology")
    return "-".join(f"{_short(k)}{_label(v)}" for k, v in changes.items() if k not in own)


def _short(field: str) -> str:
    return {
        "speculative_num_steps": "s",
        "speculative_eagle_topk": "k",
        "speculative_num_draft_tokens": "d",
        "tp_size": "tp",
        "mem_fraction_static": "mem",
        "max_running_requests": "mrr",
    }.get(field, field.replace("_", "-") + "=")


def _label(value: Any) -> str:
    if isinstance(value, (list, tuple, dict)):
        blob = json.dumps(value, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:6]
    return str(value)


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None
    suffix = path.suffix.lower()
    try:
        if suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError:
                raise ConfigError(
                    f"{path}: YAML configs need PyYAML; pip install 'pytest-sglang[yaml]'"
                ) from None
            return yaml.safe_load(text)
        if suffix == ".toml":
            return tomllib.loads(text)
        if suffix == ".json":
            return json.loads(text)
    except ConfigError:
        raise
    except Exception as exc:  # each parser has its own error type; all mean "not valid"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"{path}: not valid {suffix[1:].upper()}: {first}") from None
    raise ConfigError(f"{path}: unknown config file type {suffix!r} (use .yaml, .toml or .json)")


def _with_file_sources(data: Mapping[str, Any], root: Path) -> dict[str, Any]:
    """Make relative ``files`` sources relative to the config file, not the working directory."""
    result = dict(data)
    files = result.get("files")
    if isinstance(files, Mapping):
        fixed: dict[str, Any] = {}
        for dest, spec in files.items():
            if isinstance(spec, str):
                spec = {"source": spec}
            if isinstance(spec, Mapping) and isinstance(spec.get("source"), str):
                source = Path(spec["source"]).expanduser()
                spec = {**spec, "source": str(source if source.is_absolute() else root / source)}
            fixed[dest] = spec
        result["files"] = fixed
    return result


def _build(data: Any, path: Path, where: str) -> ServerConfig:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: {where} must be a table/mapping of ServerConfig fields")
    try:
        return ServerConfig(**_with_file_sources(data, path.parent))
    except ConfigError as exc:
        raise ConfigError(f"{path}: {where}: {exc}") from None


def load_configs(path: str | Path) -> list[ServerConfig]:
    """Configs from a YAML, TOML or JSON file.

    Accepted shapes: one config (a mapping with ``model_path``); a list of configs; or a mapping
    with ``base`` (merged under every entry), ``configs`` (a list) and/or ``sweep``
    (``{field: [values]}``, applied to ``base``).
    """
    path = Path(path)
    data = _read(path)
    if isinstance(data, list):
        return [_build(item, path, f"config #{i + 1}") for i, item in enumerate(data)]
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping or a list of configs")
    if "model_path" in data:
        return [_build(data, path, "config")]
    unknown = set(data) - {"base", "configs", "sweep"}
    if unknown:
        raise ConfigError(
            f"{path}: unknown top-level key(s) {sorted(unknown)}; use base, configs and sweep"
        )
    base_data = data.get("base", {})
    if not isinstance(base_data, Mapping):
        raise ConfigError(f"{path}: base must be a mapping of ServerConfig fields")
    configs: list[ServerConfig] = []
    for i, item in enumerate(data.get("configs", [])):
        if not isinstance(item, Mapping):
            raise ConfigError(f"{path}: config #{i + 1} must be a mapping")
        configs.append(_build({**base_data, **item}, path, f"config #{i + 1}"))
    if "sweep" in data:
        axes = data["sweep"]
        if not isinstance(axes, Mapping):
            raise ConfigError(f"{path}: sweep must map field names to lists of values")
        base = _build(base_data, path, "base")
        try:
            configs += sweep(base, **axes)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    if not configs:
        raise ConfigError(f"{path}: no configs in file")
    return configs
