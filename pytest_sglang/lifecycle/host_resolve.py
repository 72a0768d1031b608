"""The host's own SGLang as the authority on what a config resolves to.

Why: the built-in rules (:mod:`pytest_sglang.resolution`) predict what SGLang makes of a config;
the host's SGLang knows. Before anything on a host changes, the plugin runs
:mod:`.resolver_program` in the launcher's Python, once for all of a session's configs (one
round trip), which parses and resolves each config as ``launch_server`` does before it logs
``server_args=``, and starts no server. Then (:func:`adopt`):

- a config the host's SGLang refuses (argparse, or resolution raising a ``ValueError``,
  ``AssertionError``, ``TypeError``, ``NotImplementedError`` or ``KeyError``) is refused with
  SGLang's own last line (:class:`~pytest_sglang.errors.ConfigRefused`) and production is never
  stopped for it. Any other failure (no SGLang in that Python, an import error, CUDA, a timeout)
  is no verdict on the config: a note says so and the built-in predictor's values are checked;
- the values the host resolves are what the journal check expects, for every key the predictor
  checks (its own address and the random seed aside); a predicted warning it does not log is not
  required. Where the host and the predictor disagree, a note says so, never a failure.

The predictor stays what dry runs, sweeps planned without a host and the simulator use.

The answers are kept across sessions under ``<cache>/resolved/`` (:func:`.launcher_cache.cache_dir`)
by a digest of the launcher's identity (interpreter and the installed package's stamp, as the
probes read it) and environment, the SGLang version, the GPU profile (``nvidia-smi``'s name,
memory and compute capability of each GPU), the model's config.json, and the config's flags (its
address left out) and environment; ``--sglang-refresh`` asks again. Secret values are never
stored: a value that holds one is left out of the answer, and that key keeps the predictor's
value.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cmdline import flag_groups, split_at_first_flag
from ..container import launcher_end
from ..errors import ConfigRefused, PreflightError
from .journal import same_value
from .launcher import Launcher
from .launcher_cache import Identity, cache_dir

if TYPE_CHECKING:
    from ..secrets import Redactor
    from .launch_plan import LaunchPlan

__all__ = [
    "HostAnswer",
    "Resolution",
    "adopt",
    "ask_host",
    "request_key",
    "resolver_flags",
]

_PROGRAM_PATH = Path(__file__).parent / "resolver_program.py"
PROGRAM = _PROGRAM_PATH.read_text()
MARKER = "PYTEST_SGLANG_RESOLVED "
FORMAT = 1
#: The GPUs resolution sizes itself by (it reads ``nvidia-smi``'s ``memory.total`` itself):
#: part of what an answer is cached under; empty where the host has none.
#: The flags of this plan's own address: a free port differs from plan to plan, not the answer.
_ADDRESS_FLAGS = ("--port", "--host")
#: Keys of the answer never checked: the plan's own address, the seed drawn at random.
_OWN_KEYS = frozenset({"port", "host", "random_seed"})
#: What SGLang raises when it refuses a value combination ("usage": argparse's exit status 2).
REFUSALS = frozenset(
    {"usage", "ValueError", "AssertionError", "TypeError", "NotImplementedError", "KeyError"}
)
#: Longest request on one command line (the remote shell gets it as one word: 128 KiB at most).
_MAX_REQUEST = 64_000
#: Lines of a refusal's output kept (the traceback's end).
_REFUSAL_LOG_LINES = 20
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))\b:?")


class _Unreadable:
    """A value the host could not send as JSON (its ``repr`` only): never checked."""


_UNREADABLE = _Unreadable()


def _decode(value: Any) -> Any:
    """A value from the program's JSON, with its tuples back (the log line shows tuples)."""
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"__tuple__"}:
            return tuple(_decode(v) for v in value["__tuple__"])
        if set(value) == {"__repr__"}:
            return _UNREADABLE
        return {k: _decode(v) for k, v in value.items()}
    return value


def _readable(value: Any) -> bool:
    """Whether no part of ``value`` came as a ``repr`` only."""
    if value is _UNREADABLE:
        return False
    if isinstance(value, (list, tuple)):
        return all(_readable(v) for v in value)
    if isinstance(value, dict):
        return all(_readable(v) for v in value.values())
    return True


def _encode(value: Any) -> Any:
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class HostAnswer:
    """What the host's SGLang made of one config: its resolved ``server_args``, or the line it
    refused it with (``kind``: the exception's type, ``usage`` for argparse), and what it
    logged meanwhile."""

    server_args: Mapping[str, Any] | None = None
    error: str = ""
    kind: str = ""
    log: tuple[str, ...] = ()

    @property
    def refused(self) -> bool:
        """SGLang refuses the config (not: it could not be asked)."""
        return self.server_args is None and self.kind in REFUSALS

    @classmethod
    def from_program(cls, data: Mapping[str, Any]) -> HostAnswer:
        """From one config's result of the program."""
        log = tuple(str(line) for line in data.get("log") or ())
        server_args = data.get("server_args")
        if isinstance(server_args, dict):
            values = {k: _decode(v) for k, v in server_args.items()}
            return cls(server_args={k: v for k, v in values.items() if _readable(v)}, log=log)
        error = str(data.get("error") or data.get("type") or "no answer")
        kind = str(data.get("type") or "")
        named = _EXCEPTION_LINE.match(error)
        if kind == "SystemExit":
            # argparse exits 2 after its message; the simulator prints resolution's traceback
            # and exits 1 as the server does: the exception is then on its last line
            kind = named.group(1) if named and data.get("code") != 2 else "usage"
        # argparse's usage text is no use later: the last lines say what happened
        return cls(error=error, kind=kind.rsplit(".", 1)[-1], log=log[-_REFUSAL_LOG_LINES:])

    def as_json(self) -> dict[str, Any]:
        return {
            "server_args": _encode(dict(self.server_args))
            if self.server_args is not None
            else None,
            "error": self.error,
            "kind": self.kind,
            "log": list(self.log),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HostAnswer:
        server_args = data.get("server_args")
        return cls(
            server_args=(
                {k: _decode(v) for k, v in server_args.items()}
                if isinstance(server_args, dict)
                else None
            ),
            error=str(data.get("error") or ""),
            kind=str(data.get("kind") or ""),
            log=tuple(str(line) for line in data.get("log") or ()),
        )

    def without_secrets(self, redactor: Redactor) -> HostAnswer:
        """The answer less every value that holds one of the session's secrets (an API key
        resolves to itself): those keys keep the predictor's value, and nothing stored or
        shown carries a secret."""
        if self.server_args is None:
            return replace(
                self, error=redactor.redact(self.error), log=tuple(map(redactor.redact, self.log))
            )
        kept = {
            k: v
            for k, v in self.server_args.items()
            if not redactor.contains_secret(json.dumps(_encode(v), default=str))
        }
        return replace(self, server_args=kept, log=tuple(map(redactor.redact, self.log)))


@dataclass
class Resolution:
    """The answers of one batch, by :func:`request_key`.

    ``failure`` says why configs got no answer (the host's SGLang could not be asked);
    ``asked`` how many configs went to the host, ``cached`` how many answers an earlier session
    stored; ``seconds`` the round trip; ``import_s`` the program's import of SGLang within it.
    """

    answers: dict[str, HostAnswer] = field(default_factory=dict)
    failure: str = ""
    asked: int = 0
    cached: int = 0
    seconds: float = 0.0
    import_s: float | None = None


def resolver_flags(plan: LaunchPlan) -> list[str]:
    """The words ``launch_server`` parses for ``plan``: the launcher's own flags, then the
    plan's (after SGLang's entry point where the launcher names it: a container's options are
    the engine's)."""
    end = launcher_end(plan.argv)
    return plan.argv[end:] if end is not None else split_at_first_flag(plan.argv)[1]


def _sent_env(
    plan: LaunchPlan, redactor: Redactor, service: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The service's and the config's own environment, as the server gets them (the
    launcher's comes with the command), less the variables whose names are secret: resolution
    has no use for a token."""
    env = {**(service or {}), **plan.deployed.env}
    return {k: v for k, v in env.items() if not redactor.is_secret_name(k)}


def _masked(flags: Sequence[str]) -> list[str]:
    out = list(flags)
    for group in flag_groups(flags):
        if group.flag in _ADDRESS_FLAGS:
            if group.inline is not None:
                out[group.index] = f"{group.flag}=*"
            elif group.following:
                out[group.index + 1] = "*"
    return out


def request_key(plan: LaunchPlan, redactor: Redactor) -> str:
    """The config as resolution sees it: its flags (the address left out), environment and
    named launcher."""
    parts: list[Any] = [_masked(resolver_flags(plan)), sorted(_sent_env(plan, redactor).items())]
    if plan.config.launcher is not None:  # the same flags on another release: another answer
        parts.append(plan.config.launcher)
    text = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# -- the cache across sessions -----------------------------------------------------------------


def _cache_path(
    identity: Identity, env: Mapping[str, str], plan: LaunchPlan, gpu: str, key: str
) -> Path:
    model = plan.model
    model_key = (model.config_digest or f"name:{model.path}") if model is not None else ""
    text = json.dumps(
        [FORMAT, identity.as_json(), sorted(env.items()), plan.sglang_version, gpu, model_key, key],
        sort_keys=True,
    )
    return cache_dir() / "resolved" / f"{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"


def _load(path: Path) -> HostAnswer | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    answer = data.get("answer")
    return HostAnswer.from_json(answer) if isinstance(answer, dict) else None


def _save(path: Path, host: str, answer: HostAnswer) -> None:
    """Keep an answer for later sessions (atomically; a cache that cannot be written is only
    slower, never an error)."""
    record = {
        "format": FORMAT,
        "host": host,
        "saved": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "answer": answer.as_json(),
    }
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(record, handle)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


# -- asking the host ---------------------------------------------------------------------------


def _chunks(configs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The configs in requests short enough for one command line each (one, mostly)."""
    chunks: list[list[dict[str, Any]]] = [[]]
    size = 0
    for config in configs:
        length = len(json.dumps(config)) + 2
        if chunks[-1] and size + length > _MAX_REQUEST:
            chunks.append([])
            size = 0
        chunks[-1].append(config)
        size += length
    return chunks


def _why(rc: int, out: str, err: str) -> str:
    tail = ((err or out).strip().splitlines() or [f"rc={rc}, no output"])[-1].strip()
    return f"rc={rc}: {tail}"


def ask_host(
    launcher: Launcher, plans: Sequence[LaunchPlan], redactor: Redactor, service: dict[str, str]
) -> Resolution:
    """Every plan's answer: from the cache where an earlier session stored it, the rest from
    the host's SGLang in one round trip (more only for a request too long for one command)."""
    unique = {request_key(plan, redactor): plan for plan in plans}
    resolution = Resolution()
    paths: dict[str, Path] = {}
    identity = launcher.identity()
    if identity is not None:
        gpu = launcher.gpu_profile()
        env = {**launcher.env(), **service}
        for key, plan in unique.items():
            paths[key] = _cache_path(identity, env, plan, gpu, key)
            cached = None if launcher.refresh else _load(paths[key])
            if cached is not None:
                resolution.answers[key] = cached
                resolution.cached += 1
    missing = {k: p for k, p in unique.items() if k not in resolution.answers}
    if not missing:
        return resolution
    configs = [
        {"key": key, "argv": resolver_flags(plan), "env": _sent_env(plan, redactor, service)}
        for key, plan in missing.items()
    ]
    python, engine = launcher.resolver_python()
    started = time.monotonic()
    resolution.asked = len(configs)
    for chunk in _chunks(configs):
        request = json.dumps({"format": FORMAT, "engine": engine, "configs": chunk})
        try:
            rc, out, err = launcher.run(
                [python, "-c", PROGRAM, request], timeout=300 + 30 * len(chunk)
            )
        except PreflightError as exc:
            resolution.failure = str(exc)
            break
        line = next(
            (x for x in reversed(out.splitlines()) if x.startswith(MARKER)),
            None,
        )
        try:
            data = json.loads(line[len(MARKER) :]) if line is not None else None
        except ValueError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
            resolution.failure = redactor.redact(_why(rc, out, err))
            break
        import_s = data.get("import_s")
        if isinstance(import_s, (int, float)):
            resolution.import_s = (resolution.import_s or 0.0) + float(import_s)
        for key, result in data["results"].items():
            if key in missing and isinstance(result, dict):
                answer = HostAnswer.from_program(result).without_secrets(redactor)
                resolution.answers[key] = answer
                if key in paths and (answer.server_args is not None or answer.refused):
                    _save(paths[key], launcher.spec.name, answer)
    resolution.seconds = time.monotonic() - started
    return resolution


# -- what the answer changes in a plan ------------------------------------------------------


def adopt(plan: LaunchPlan, answer: HostAnswer) -> tuple[LaunchPlan, list[str]]:
    """``plan`` with the host's answer as what its journal must show, and a note per
    disagreement with the predictor; ConfigRefused where the host's SGLang refuses it.

    An answer that is no verdict (the host's SGLang could not resolve it for another reason)
    leaves the plan as predicted, with one note why.
    """
    where = f"{plan.host} {plan.config.id}"
    if answer.server_args is None:
        if answer.refused:
            raise ConfigRefused(
                f"host {plan.host!r} (SGLang {plan.sglang_version}) refuses config "
                f"{plan.config.id} (fix the config; nothing on the host was changed): "
                f"{answer.error}"
            )
        return plan, [
            f"{where}: the host's SGLang could not resolve it ({answer.error}); the built-in "
            "predictor's values are checked"
        ]
    expected = plan.expected
    host = answer.server_args
    merged = dict(expected.server_args)
    notes: list[str] = []
    for key, predicted in expected.server_args.items():
        if key in _OWN_KEYS or key not in host:
            continue
        if not same_value(predicted, host[key]):
            notes.append(
                f"{where}: the host's SGLang {plan.sglang_version} resolves {key} to "
                f"{host[key]!r}, the built-in predictor to {predicted!r}; the host's value is "
                "checked"
            )
        merged[key] = host[key]
    # what the host's resolution logged is all it logs before server_args=
    warnings = tuple(w for w in expected.warnings if any(w in line for line in answer.log))
    for warning in expected.warnings:
        if warning not in warnings:
            notes.append(
                f"{where}: the built-in predictor expects the warning {warning!r}; the host's "
                "SGLang does not log it, so it is not required"
            )
    bound = expected.max_running_requests
    if "max_running_requests" in host:
        value = host["max_running_requests"]
        bound = value if isinstance(value, int) and not isinstance(value, bool) else None
    adopted = replace(
        expected,
        server_args=merged,
        warnings=warnings,
        max_running_requests=bound,
        notes={**expected.notes, **{f"host {i}": note for i, note in enumerate(notes)}},
    )
    return replace(plan, expected=adopted), notes
