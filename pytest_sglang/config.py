"""The SGLang server configuration under test.

``ServerConfig`` names its fields exactly as SGLang's own ``ServerArgs`` does, so a value can be
compared one-to-one with the ``server_args`` line the server logs at startup. It is immutable and
validated on construction: a bad config fails here, with the field named, before anything touches
a host.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .addresses import host_problem
from .aliases import choice_error
from .argv_parse import read_launch, split_flags
from .errors import ConfigError
from .gpu_rules import GpuFacts
from .model_identity import ModelIdentity
from .resolution import ExpectedJournal, expected_journal, extra_arg_values, resolve
from .topology import Topology
from .versions import DEFAULT_SGLANG_VERSION, cli_catalog, field_flag, field_flags

__all__ = ["PRODUCTION_MODEL", "FileSpec", "ServerConfig", "SpeculativeAlgorithm"]

#: The ``model_path`` of a placeholder that stands for a host's production config with changes
#: (:func:`pytest_sglang.lifecycle.production.production`): its fields are changes, checked
#: once applied.
PRODUCTION_MODEL = "<production>"

SpeculativeAlgorithm = Literal["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"]

#: The SGLang fields ServerConfig types, in the order ``to_argv`` emits them.
SGLANG_FIELDS: tuple[str, ...] = (
    "model_path",
    "served_model_name",
    "host",
    "port",
    "tp_size",
    "mem_fraction_static",
    "max_running_requests",
    "context_length",
    "chunked_prefill_size",
    "attention_backend",
    "kv_cache_dtype",
    "quantization",
    "cuda_graph_max_bs",
    "speculative_algorithm",
    "speculative_draft_model_path",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
)

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: SGLang flags that change what the host keeps, not only how the server runs, with what they
#: do: ``--delete-ckpt-after-loading`` deletes the model's checkpoint directory once the
#: weights are loaded (0.5.23; found when a capture of real starts lost its model to it), the
#: files production serves from too.
DESTRUCTIVE_FLAGS: dict[str, str] = {
    "--delete-ckpt-after-loading": (
        "deletes the model's checkpoint on the host once it is loaded (the files production "
        "serves from, too): pytest-sglang does not deploy it"
    ),
}


class FileSpec(BaseModel):
    """A file placed on the host with the deployment (e.g. a MoE kernel-config JSON).

    Either ``source`` (a local path, read when deploying) or ``content`` (inline text).
    A bare string in a config file is shorthand for ``source``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Path | None = None
    content: str | None = None
    mode: int = Field(default=0o644, ge=0, le=0o7777)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, (str, Path)):
            return {"source": value}
        return value

    @model_validator(mode="after")
    def _one_origin(self) -> FileSpec:
        if (self.source is None) == (self.content is None):
            raise ValueError("give exactly one of 'source' (a local path) or 'content'")
        return self

    def data(self) -> bytes:
        """The bytes to upload; a missing source is a ConfigError naming the path."""
        if self.content is not None:
            return self.content.encode("utf-8")
        assert self.source is not None
        try:
            return self.source.expanduser().read_bytes()
        except OSError as exc:
            raise ConfigError(f"files: cannot read {self.source}: {exc.strerror}") from None


def _typed_flags() -> dict[str, str]:
    """Every spelling of every typed field's flag, in any supported version -> field name."""
    flags: dict[str, str] = {}
    typed = set(SGLANG_FIELDS) | {"cuda_graph_max_bs_decode"}
    for arg in cli_catalog():
        if arg["dest"] in typed:
            field = (
                "cuda_graph_max_bs" if arg["dest"] == "cuda_graph_max_bs_decode" else arg["dest"]
            )
            for flag in arg["flags"]:
                flags[flag] = field
    for field in SGLANG_FIELDS:
        for flag in field_flags(field):
            flags.setdefault(flag, field)
    return flags


def _all_catalog_flags() -> set[str]:
    return {flag for arg in cli_catalog() for flag in arg["flags"]}


class ServerConfig(BaseModel):
    """One SGLang server configuration: launch flags, environment and extra files.

    Only the fields you set are passed to SGLang; everything else keeps SGLang's own default.
    ``resolved()`` tells what SGLang will actually run with, ``expected_journal()`` what its
    startup log must then show.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Optional readable id; otherwise ``id`` is derived from the tuned fields.
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+=-]*$")

    model_path: str = Field(min_length=1)
    served_model_name: str | None = None
    host: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    tp_size: int | None = Field(default=None, ge=1)
    mem_fraction_static: float | None = Field(default=None, gt=0, lt=1)
    max_running_requests: int | None = Field(default=None, ge=1)
    context_length: int | None = Field(default=None, ge=1)
    chunked_prefill_size: int | None = Field(default=None, ge=-1)
    attention_backend: str | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    cuda_graph_max_bs: int | None = Field(default=None, ge=1)
    speculative_algorithm: SpeculativeAlgorithm | None = None
    speculative_draft_model_path: str | None = None
    #: 0 only under NGRAM, whose steps SGLang derives as draft tokens // BFS breadth
    speculative_num_steps: int | None = Field(default=None, ge=0)
    speculative_eagle_topk: int | None = Field(default=None, ge=1)
    speculative_num_draft_tokens: int | None = Field(default=None, ge=1)

    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    files: dict[str, FileSpec] = Field(default_factory=dict)
    #: Which of the host's named launchers runs this config (``[hosts.X.launchers]``, e.g. one
    #: venv per SGLang release); None: the host's own. Part of the id (``tp4-on-0.5.22``) and
    #: the digest: the same flags on two releases are two deployments.
    launcher: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+=-]*$")
    #: Several replicas of this server behind SGLang's router (:mod:`pytest_sglang.topology`);
    #: None: one server. Part of the id (``tp4-dp2-round-robin``) and, when set, the digest.
    topology: Topology | None = None

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigError(describe_validation_error(exc, data)) from None

    def __hash__(self) -> int:
        return hash(self.digest)

    # -- validation -------------------------------------------------------------------------

    @model_validator(mode="after")
    def _check(self) -> ServerConfig:
        self._check_strings()
        self._check_host()
        self._check_env_and_files()
        self._check_choices()
        self._check_not_destructive()
        if self.model_path != PRODUCTION_MODEL:  # changes alone: checked once applied
            self._check_speculative()
        self._check_extra_args()
        return self

    def _check_strings(self) -> None:
        def bad(value: str) -> bool:
            return "\n" in value or "\r" in value or "\x00" in value

        for field in (*SGLANG_FIELDS, "name", "launcher"):
            value = getattr(self, field)
            if isinstance(value, str) and bad(value):
                raise ValueError(f"{field}: must not contain a newline or NUL character")
        for i, arg in enumerate(self.extra_args):
            if bad(arg):
                raise ValueError(f"extra_args[{i}]: must not contain a newline or NUL character")
        for key, val in self.env.items():
            if bad(key) or bad(val):
                raise ValueError(f"env.{key!r}: must not contain a newline or NUL character")
        for dest, spec in self.files.items():
            if bad(dest) or (spec.source is not None and bad(str(spec.source))):
                raise ValueError(f"files.{dest!r}: must not contain a newline or NUL character")

    def _check_host(self) -> None:
        """An address SGLang's server cannot bind, refused before anything is deployed: SGLang
        0.5.23 checks none of these itself, and fails late (at its own warmup request, in
        torch.distributed's rendezvous) or never becomes ready (``256.1.1.1``)."""
        if self.host is None:
            return
        problem = host_problem(self.host)
        if problem is not None:
            raise ValueError(f"host: {self.host!r} {problem}")

    def _check_env_and_files(self) -> None:
        for key in self.env:
            if not _ENV_NAME.match(key):
                raise ValueError(f"env.{key!r}: not a valid environment variable name")
        for dest in self.files:
            path = PurePosixPath(dest)
            if not path.is_absolute():
                raise ValueError(f"files.{dest!r}: destination must be an absolute path")
            if ".." in path.parts:
                raise ValueError(f"files.{dest!r}: destination must not contain '..'")

    def _check_speculative(self) -> None:
        algo = self.speculative_algorithm
        steps, topk, draft = (
            self.speculative_num_steps,
            self.speculative_eagle_topk,
            self.speculative_num_draft_tokens,
        )
        if algo is None:
            for field in (
                "speculative_draft_model_path",
                "speculative_num_steps",
                "speculative_eagle_topk",
                "speculative_num_draft_tokens",
            ):
                if getattr(self, field) is not None:
                    raise ValueError(f"{field}: set, but speculative_algorithm is not")
            return
        if algo == "NGRAM":
            return
        if steps == 0:
            raise ValueError("speculative_num_steps: must be >= 1 (got 0); only NGRAM runs 0 steps")
        if steps is None and (topk is not None or draft is not None):
            # SGLang asserts on this combination at startup.
            raise ValueError(
                "speculative_num_steps: required when speculative_eagle_topk or "
                "speculative_num_draft_tokens is set"
            )
        if steps is not None and topk is None:
            raise ValueError("speculative_eagle_topk: required when speculative_num_steps is set")
        if topk is not None and steps is not None and topk > 1:
            if draft is None:
                raise ValueError(
                    "speculative_num_draft_tokens: required when speculative_eagle_topk > 1"
                )
            if draft < steps + 1:
                raise ValueError(
                    f"speculative_num_draft_tokens: must be >= speculative_num_steps + 1 "
                    f"({steps + 1}) when speculative_eagle_topk > 1, got {draft}"
                )

    def _check_choices(self) -> None:
        """Values outside a flag's fixed choices, refused as SGLang's parser refuses them.

        A typed field is checked under its current spelling; a pass-through flag under the one
        it stands for (an argparse abbreviation), each of its words (``--lora-target-modules``
        takes several). Flags without a fixed set of choices take any value.
        """
        for field in SGLANG_FIELDS:
            value = getattr(self, field)
            if value is not None:
                problem = choice_error(field_flag(field), value)
                if problem is not None:
                    raise ValueError(f"{field}: {problem}")
        for group in split_flags(self.extra_args):
            flag = group.resolved
            if flag is None:
                continue
            for value in group.values:
                problem = choice_error(flag, value)
                if problem is not None:
                    raise ValueError(f"extra_args: {problem}")

    def _check_not_destructive(self) -> None:
        """A flag that changes the host's files beyond the server's own, refused: a test config
        must leave the host as it found it, and no restore brings a deleted checkpoint back
        (:data:`DESTRUCTIVE_FLAGS`; any spelling argparse takes, abbreviations included)."""
        for group in split_flags(self.extra_args):
            if group.resolved in DESTRUCTIVE_FLAGS:
                raise ValueError(
                    f"extra_args: {group.resolved} {DESTRUCTIVE_FLAGS[group.resolved]}"
                )

    def _check_extra_args(self) -> None:
        typed = _typed_flags()
        catalog = _all_catalog_flags()
        for arg in self.extra_args:
            if not arg.startswith("--"):
                continue
            flag = arg.split("=", 1)[0]
            if flag in typed:
                raise ValueError(
                    f"extra_args: {flag} duplicates the typed field {typed[flag]}; set that "
                    "field instead"
                )
            if flag not in catalog:
                prefixed = sorted(f for f in typed if f.startswith(flag))
                if prefixed:
                    raise ValueError(
                        f"extra_args: {flag} abbreviates {prefixed[0]} (field "
                        f"{typed[prefixed[0]]}); set that field instead"
                    )

    @classmethod
    def from_argv(
        cls, argv: Sequence[str] | str, sglang_version: str = DEFAULT_SGLANG_VERSION
    ) -> ServerConfig:
        """The config a launch command line runs (e.g. a production unit's ``ExecStart``).

        The launcher (words before the first ``--flag``) is left out; every spelling of a typed
        field's flag, in any release, abbreviated or as ``--flag=value``, sets that field (the
        last of a repeated flag wins); every other flag stays verbatim, in order, in
        ``extra_args``. ``argv_parse.read_launch`` gives the launcher and the notes too.
        """
        line = read_launch(argv, _typed_flags(), sglang_version)
        return cls(**line.fields, extra_args=line.extra_args)

    # -- derived views ----------------------------------------------------------------------

    def replace(self, **changes: Any) -> ServerConfig:
        """A validated copy with some fields changed."""
        data = self.model_dump(exclude_defaults=True)
        data.update(changes)
        return type(self)(**data)

    def tuned(self) -> dict[str, Any]:
        """The SGLang fields this config sets explicitly (the rest are SGLang's defaults)."""
        return {f: getattr(self, f) for f in SGLANG_FIELDS if getattr(self, f) is not None}

    def to_argv(self, sglang_version: str = DEFAULT_SGLANG_VERSION) -> list[str]:
        """The ``launch_server`` flags for this config, spelled as that SGLang version has them."""
        argv: list[str] = []
        for field, value in self.tuned().items():
            argv += [field_flag(field, sglang_version), _flag_value(value)]
        argv += list(self.extra_args)
        return argv

    def resolved(
        self,
        sglang_version: str = DEFAULT_SGLANG_VERSION,
        model: ModelIdentity | None = None,
        gpu: GpuFacts | None = None,
    ) -> ServerConfig:
        """The configuration SGLang will actually run with, after its own resolution rules.

        ``model``: the model's identity as the host's config.json gives it (the launch plan
        reads it there); without it, the model's config.json is read on this machine, else its
        directory's name stands in (:mod:`.model_identity`). ``gpu``: the host's GPU where it
        is known (:func:`.gpu_rules.gpu_facts`): what it cannot run is refused here too."""
        values, _warnings = resolve(
            self.tuned(), sglang_version, extra_arg_values(self.extra_args), model, self.env, gpu
        )
        return self.replace(**{k: v for k, v in values.items() if k in SGLANG_FIELDS})

    def expected_journal(
        self,
        sglang_version: str = DEFAULT_SGLANG_VERSION,
        model: ModelIdentity | None = None,
        gpu: GpuFacts | None = None,
    ) -> ExpectedJournal:
        """What the startup log must show: resolved ``server_args`` values and warnings;
        ``model`` and ``gpu`` as for :meth:`resolved` (the model's note, if any, in
        ``notes["model"]``)."""
        return expected_journal(self.tuned(), self.extra_args, sglang_version, model, self.env, gpu)

    def without_launcher(self) -> ServerConfig:
        """The same config on the host's own launcher: what its baselines are kept under (the
        release it ran on is in their fingerprint, so runs on two launchers are an upgrade
        comparison, never two unrelated configs)."""
        return self if self.launcher is None else self.replace(launcher=None)

    def replica(self) -> ServerConfig:
        """What each replica of a topology runs: this config without its topology (so that a
        sweep over router settings keeps the same replicas up)."""
        return self if self.topology is None else self.replace(topology=None)

    @property
    def id(self) -> str:
        """A short readable id for test ids, e.g. ``eagle-s3-k1`` or ``tp4-mem0.85``; a
        config on a named launcher ends in ``-on-<launcher>`` (``tp4-on-0.5.22``)."""
        own = self._own_id()
        if self.topology is not None:
            own += f"-{self.topology.id}"
        return f"{own}-on-{self.launcher}" if self.launcher else own

    def _own_id(self) -> str:
        if self.name:
            return self.name
        parts: list[str] = []
        if self.speculative_algorithm:
            spec = self.speculative_algorithm.lower()
            if self.speculative_num_steps is not None:
                spec += f"-s{self.speculative_num_steps}"
            if self.speculative_eagle_topk is not None:
                spec += f"-k{self.speculative_eagle_topk}"
            if self.speculative_num_draft_tokens is not None:
                spec += f"-d{self.speculative_num_draft_tokens}"
            parts.append(spec)
        short = {
            "tp_size": "tp",
            "mem_fraction_static": "mem",
            "max_running_requests": "mrr",
            "context_length": "ctx",
            "chunked_prefill_size": "cp",
            "cuda_graph_max_bs": "cgbs",
            "attention_backend": "attn-",
            "kv_cache_dtype": "kv-",
            "quantization": "q-",
        }
        for field, prefix in short.items():
            value = getattr(self, field)
            if value is not None:
                parts.append(f"{prefix}{value}")
        if self.extra_args or self.env or self.files:
            blob = json.dumps(
                self.model_dump(mode="json", include={"extra_args", "env", "files"}),
                sort_keys=True,
            )
            parts.append("x" + hashlib.sha256(blob.encode()).hexdigest()[:6])
        return "-".join(parts) or "base"

    @property
    def digest(self) -> str:
        """A stable content hash (12 hex digits) of everything that is deployed."""
        # launcher only when set: a config on the host's own launcher keeps its digest
        exclude = {"name", "files"} | (set() if self.launcher else {"launcher"})
        exclude |= set() if self.topology else {"topology"}
        payload = self.model_dump(mode="json", exclude=exclude)
        payload["files"] = {
            dest: {
                "mode": spec.mode,
                "sha256": hashlib.sha256(
                    spec.content.encode() if spec.content is not None else str(spec.source).encode()
                ).hexdigest(),
            }
            for dest, spec in sorted(self.files.items())
        }
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def __str__(self) -> str:
        return f"ServerConfig({self.id})"

    def __repr_args__(self) -> Any:
        """Environment values stay out of reprs: pytest-benchmark and tracebacks print them."""
        for name, value in super().__repr_args__():
            if name == "env" and value:
                value = dict.fromkeys(value, "<redacted>")
            yield name, value


def _flag_value(value: object) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def describe_validation_error(exc: ValidationError, data: Mapping[str, Any] | None = None) -> str:
    """One line naming each bad field and why: ``speculative_num_steps: must be >= 1 (got 0)``.

    A misspelt field leads the line, with the closest real one
    (``ServerConfig: unknown field 'tp_sise' (did you mean 'tp_size'?)``): pytest's short
    summary cuts long lines, and the typo is what the reader has to see.
    """
    errors = exc.errors()
    unknown = [e for e in errors if e["type"] == "extra_forbidden" and len(e["loc"]) == 1]
    if unknown:
        return "ServerConfig: " + "; ".join(_unknown_field(str(e["loc"][0])) for e in unknown)
    problems: list[str] = []
    for err in errors:
        loc = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"])
        if err["type"] == "value_error":
            msg = msg.removeprefix("Value error, ")
            problems.append(msg if not loc else f"{loc}: {msg}")
            continue
        ctx = err.get("ctx") or {}
        bounds = {
            "greater_than_equal": ">=",
            "greater_than": ">",
            "less_than_equal": "<=",
            "less_than": "<",
        }
        if err["type"] in bounds:
            limit = next(iter(ctx.values()), "?")
            msg = f"must be {bounds[err['type']]} {limit}"
        got = err.get("input")
        shown = "" if isinstance(got, dict) else f" (got {got!r})"
        if err["type"] == "extra_forbidden":
            msg = "not a field"
        problems.append(f"{loc or 'config'}: {msg}{shown}")
    name = (data or {}).get("name") or (data or {}).get("model_path") or ""
    where = f"ServerConfig {name!r}" if name else "ServerConfig"
    return f"invalid {where}: " + "; ".join(problems)


def _unknown_field(name: str) -> str:
    """``unknown field 'tp_sise' (did you mean 'tp_size'?)``."""
    return f"unknown field {name!r}{did_you_mean(name)}"


def did_you_mean(name: str) -> str:
    """`` (did you mean 'tp_size'?)`` for a misspelt ServerConfig field; empty when no field
    is close (a hint that guesses wildly misleads more than none)."""
    close = difflib.get_close_matches(name, list(ServerConfig.model_fields), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
