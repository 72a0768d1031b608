"""The simulator answering as the host's SGLang: one config's flags parsed and resolved, no
server started.

Why: the plugin asks a host's own SGLang what each config resolves to before it changes anything
there (:mod:`pytest_sglang.lifecycle.host_resolve`; the program it runs is
:mod:`pytest_sglang.lifecycle.resolver_program`). Where the launcher is ``python -m
pytest_sglang.sim``, that program calls :func:`resolve_argv`, so the same protocol is tested on
the simulator (and over the systemd test host) as it runs against the real package.

It does what ``python -m pytest_sglang.sim`` does up to its ``server_args=`` line, with the
knobs it reads from the environment (version, GPU): argparse's exit status 2 and message on a
bad command line; resolution's traceback and exit status 1 where SGLang's resolution raises;
otherwise the warnings logged, and the values the ``server_args`` line would show. The
``SGLANG_SIM_IGNORE_FLAG`` fault is not applied: it plays a server that does not honour a flag
it resolved, which the journal check must still catch.
"""

from __future__ import annotations

import sys
from typing import Any

from ..versions import has
from .cli import parse_args
from .fields import DICT_FIELDS, EXTRA_DEFAULTS, REPR_FIELDS
from .knobs import SimSettings
from .logs import log, setup_logging
from .post_init import ResolutionError, resolve_args

__all__ = ["resolve_argv"]


def resolve_argv(argv: list[str]) -> dict[str, Any]:
    """``server_args`` as the simulator started with ``argv`` would log them."""
    settings = SimSettings.from_env()
    setup_logging()
    parsed = parse_args(argv, settings.version)
    try:
        resolved = resolve_args(parsed, settings.version, settings.gpu)
    except ResolutionError as exc:
        for warning in exc.warnings:
            log(warning)
        sys.stderr.write(exc.traceback_text())
        sys.stderr.flush()
        raise SystemExit(1) from None
    for warning in resolved.warnings:
        log(warning)
    values = dict(EXTRA_DEFAULTS)
    values.update(resolved.args)
    fields = DICT_FIELDS if has("server_args_dict", settings.version) else REPR_FIELDS
    return {name: values.get(name) for name in fields}
