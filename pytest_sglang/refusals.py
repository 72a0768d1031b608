"""What SGLang 0.5.23's resolution refuses, predicted offline before anything is deployed.

Why: a config real SGLang refuses stops production for nothing if it is deployed first. On a
real host the host's own SGLang is asked (:mod:`.deploy.host_resolve`); this is the offline
predictor's share, for dry runs and sweeps planned without a host: the refusals that follow
from the command line and the model's config.json alone (not from the GPU, which only the
host knows). Each raises :class:`~pytest_sglang.errors.ConfigError` with SGLang's own error
line, so the reason reads as the server would have said it. The rules are read off 0.5.23's
source (``ModelConfig._derive_context_length``, ``handle_data_parallelism``,
``load_pointer_head``), independently of the simulator's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ConfigError
from .model_identity import ModelIdentity, missing_among_models

__all__ = ["check_refusals"]

_LONGER_CONTEXT_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"


def _missing(field: str, path: str) -> ConfigError:
    return ConfigError(
        f"{field}: SGLang would refuse it: OSError: Repo id must be in the form 'repo_name' or "
        f"'namespace/repo_name': '{path}'. Use `repo_type` argument if needed."
    )


def check_refusals(
    given: Mapping[str, Any], model: ModelIdentity, env: Mapping[str, str] | None = None
) -> None:
    """Raise :class:`ConfigError` where 0.5.23 refuses ``given`` (typed and pass-through
    values as set) for ``model`` before it logs ``server_args``; return where it would not.
    ``env`` is the environment the server gets (the config's): some refusals are lifted there,
    never by this process's own."""
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
    dp = given.get("dp_size")
    tp = int(given.get("tp_size") or 1)
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
