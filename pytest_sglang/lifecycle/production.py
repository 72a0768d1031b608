"""Production as the starting point: "the host's production config, with these changes".

Engineers tune production, as the seeds did: "production, with ``--speculative-num-steps 3``".
``production(**changes)`` stands for exactly that, wherever a :class:`ServerConfig` goes
(``sweep(production(), speculative_num_steps=[1, 3])``, ``parametrize("sglang_server", ...,
indirect=True)``). It is a placeholder until the host is known: the session then reads the
host's production config (its unit's effective ExecStart, or the inventory's ``production``
command line on the ``local`` simulator) and applies the changes (:func:`apply_production`);
the journal check, reports and baselines see the full config. Test ids name only the changes
(``production-s3``).
"""

from __future__ import annotations

from typing import Any

from ..argv_parse import FlagWords, catalog_arg, split_flags
from ..config import PRODUCTION_MODEL, ServerConfig, did_you_mean
from ..errors import ConfigError
from ..sweep import change_label

__all__ = ["apply_production", "is_production", "merged_extra_args", "production"]

_PLACEHOLDER_KEYS = {"model_path", "name"}


def production(**changes: Any) -> ServerConfig:
    """The host's production config with ``changes`` (ServerConfig fields) applied."""
    for key in changes:
        if key in _PLACEHOLDER_KEYS:
            raise ConfigError(
                f"production(): {key!r} cannot be changed (production's model and the test id "
                "come from the host); write a ServerConfig for another model"
            )
        if key not in ServerConfig.model_fields:
            raise ConfigError(
                f"production(): {key!r} is not a ServerConfig field to change{did_you_mean(key)}"
            )
    label = change_label(changes)
    return ServerConfig(
        model_path=PRODUCTION_MODEL,
        name=f"production-{label}" if label else "production",
        **changes,
    )


def is_production(config: ServerConfig) -> bool:
    """Whether ``config`` is a :func:`production` placeholder."""
    return config.model_path == PRODUCTION_MODEL


def apply_production(placeholder: ServerConfig, base: ServerConfig, *, host: str) -> ServerConfig:
    """``base`` (the host's production config) with the placeholder's changes, validated now;
    it keeps the placeholder's name, so test ids and reports name only the changes."""
    changes = {
        key: value
        for key, value in placeholder.model_dump(exclude_defaults=True).items()
        if key not in _PLACEHOLDER_KEYS
    }
    if "extra_args" in changes:
        changes["extra_args"] = merged_extra_args(base.extra_args, tuple(changes["extra_args"]))
    if "env" in changes:
        changes["env"] = {**base.env, **changes["env"]}
    try:
        return base.replace(**changes, name=placeholder.name)
    except ConfigError as exc:
        raise ConfigError(
            f"host {host!r}: production with {changes or 'no changes'} is not a valid config: {exc}"
        ) from None


def _destination(group: FlagWords) -> str:
    """What a flag sets: the catalog's destination of the one flag it stands for, else the flag
    as written (``--enable-x`` and ``--no-enable-x`` set the same one)."""
    arg = catalog_arg(group.resolved or group.flag)
    return str(arg["dest"]) if arg is not None else group.flag


def merged_extra_args(base: tuple[str, ...], change: tuple[str, ...]) -> tuple[str, ...]:
    """Production's pass-through flags with a change's: "production, with these flags too".

    A flag the change sets replaces production's flag of the same destination (in any of its
    spellings); production's other flags stay, in their order, before the change's. Replacing
    production's flags wholesale would silently drop what production needs to run (its
    ``--device``, ``--max-total-tokens``, a parser), which no test of "production with a change"
    means.
    """
    changed = {_destination(g) for g in split_flags(change) if g.flag}
    kept = [
        word
        for group in split_flags(base)
        if not group.flag or _destination(group) not in changed
        for word in group.words
    ]
    return (*kept, *change)
