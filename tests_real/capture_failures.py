"""Capture real start-up failures of the real SGLang package, verbatim, for the failure corpus.

Usage (as root, with the project's venv; the real-SGLang tier's venv, which ``make test-real``
builds, is the server's)::

    .venv/bin/python tests_real/capture_failures.py OUT_DIR [--batch N] [CASE_ID ...]  # N: 14 to 59

Why: public bug reports are a thin and noisy source of unseen failures (their logs are excerpts,
and two engineers reading one name the same cause only half to two thirds of the time). A failure
this machine causes on purpose is verbatim and its cause is known from what was broken, so it can
be scored against that cause rather than against a reader's judgement.

The cases are fixed by rule, so that what is captured is not picked to suit the classifier. The
fourteenth batch (:func:`cases14`): every file of the tier's tiny model broken three ways; a
seeded sample of the real parser's numeric flags given a negative value; and a fixed list of
first-run mistakes. The fifteenth (:func:`cases15`): every key of the tiny model's
``config.json`` removed in turn; a seeded sample of the parser's free-text flags given a path that
does not exist; a seeded sample of its flags with choices given a choice other than the default.
The sixteenth (:func:`cases16`): the model's config and the process's surroundings rather than its
flags: every non-zero number of ``config.json`` doubled; a seeded sample of SGLang's own typed
environment variables given a value of no type; signals to the server's processes while they
start; a cap on the address space; a full disk for its caches; a busy port. The seventeenth
(:func:`cases17`): the weights and the tokenizer's files: each tensor of the first layer and outside
the layers removed, or with its first dimension halved; each top-level key of the tokenizer's two
JSON files removed. The eighteenth (:func:`cases18`): a seeded sample of the parser's switches,
each turned on alone; a seeded sample of its integer flags, each given 0 (from this batch on,
each server runs in a network namespace of its own with only loopback up). The nineteenth
(:func:`cases19`): a seeded sample of its free-text flags, each given the empty string. The
twentieth (:func:`cases20`): the Python environment rather than SGLang's own inputs: a seeded
sample of the distributions it requires, each with its modules shadowed by empty packages; a
seeded sample of those it requires at a version, each claiming a version older than any. The
twenty-first (:func:`cases21`): each key of ``config.json`` given a value of another type; the
weights as a sharded checkpoint, broken as an interrupted download or copy leaves one. The
twenty-second (:func:`cases22`): a seeded sample of the architectures SGLang serves, each named
by the tiny Llama's ``config.json``; each key of its ``tokenizer_config.json`` given a value of
another type. The twenty-third (:func:`cases23`): where the server is pointed: ``--model-path``
given paths and names that hold no model, as they are typed or copied by mistake; the server's
own address given values no socket takes. The twenty-fourth (:func:`cases24`): the parser's
float flags given ``nan``, and a seeded sample of them given ``inf``. The twenty-fifth
(:func:`cases25`): each key of the generation config and the special-tokens map given a value of
another type, or removed. The twenty-sixth (:func:`cases26`): a seeded sample of pairs of the
parser's switches, each pair turned on together; ``--chat-template`` given what a user can point
it at by mistake. The twenty-seventh (:func:`cases27`): the model's ``config.json`` edited by
hand: ``rope_scaling`` set as a user stretches a context, right or with one thing wrong; a key
given a value that no longer agrees with the rest of the config or the weights. The
twenty-eighth (:func:`cases28`): the tokenizer class ``tokenizer_config.json`` names, as a copy
from another model leaves it; a special token's id in ``config.json`` out of the vocabulary.
The twenty-ninth (:func:`cases29`): the sizes a tuning sweep sets (memory, prefill, pages,
context, parallelism), each given a value at or past its edge. The thirtieth (:func:`cases30`):
the backends and speculation a tuning run chooses: each attention backend the parser offers;
each speculative algorithm with the model as its own draft and the seed workflow's steps;
STANDALONE speculation's steps, top-k and draft tokens at their edges. The thirty-first
(:func:`cases31`): the numeric formats (quantization, KV cache and weight dtypes) and the other
kernels (sampling, grammar) a tuning run chooses, each choice alone. The thirty-second
(:func:`cases32`): a seeded sample of every other flag's choices, each alone. The thirty-third
(:func:`cases33`): a seeded sample of pairs of the settings a tuning run changes by choosing
(every flag's choices and every switch), each pair changed together. The thirty-fourth
(:func:`cases34`): the same, drawn only from the settings no earlier batch changed. The
thirty-fifth (:func:`cases35`): the same again, sixty pairs, the thirty-third's and thirty-fourth's
settings now counted as changed. The thirty-sixth and thirty-seventh (:func:`cases36`,
:func:`cases37`): the same again. The thirty-eighth (:func:`cases38`): every setting no earlier
batch changed, each once, in pairs. The thirty-ninth (:func:`cases39`): a seeded sample of
triples of those settings, drawn from them all, each triple changed together. The fortieth
(:func:`cases40`): the same again, sixteen triples. The forty-first (:func:`cases41`): a seeded
sample of the parser's integer flags no earlier batch gave a value, each given one past what a
32-bit signed integer holds. The forty-second (:func:`cases42`): every flag that takes JSON
written inline, given an object in Python's quoting and an object with a key it does not take.
The forty-third (:func:`cases43`): a seeded sample of SGLang's own boolean environment variables
that are off by default, each turned on alone. The forty-fourth (:func:`cases44`): every float
flag, given 0 and given 100. The forty-fifth (:func:`cases45`): the settings written in a YAML
file given with ``--config``, the file, its text, its keys and its values each wrong as a hand
edit gets them wrong. The forty-sixth (:func:`cases46`): a seeded sample of the
integer and float flags, each given a number in the forms a person types one in that Python's
``int`` or ``float`` may or may not read. The forty-seventh (:func:`cases47`): the thirty-ninth's
triples again, drawn anew, to measure the settings a tuning run changes after six batches of
other sources. The forty-eighth (:func:`cases48`): the environment variables of the libraries
SGLang runs on (Python, OpenMP, torch, Hugging Face, tokenizers), each set wrong as a unit's
``Environment=`` line can set it. The forty-ninth (:func:`cases49`): the server as a systemd
service on the test host, its unit given each hardening setting, resource limit and path setting
a production unit carries, alone; its record is the unit's journal. The fiftieth
(:func:`cases50`): the same service under a service account (``User=nobody``), with the model,
the install and the directories it writes left as root made them or made private one at a time.
The fifty-first (:func:`cases51`): the same, on a baseline that serves (the account given a home).
The fifty-second (:func:`cases52`): the forty-ninth's limits and path settings at other values.
The fifty-third (:func:`cases53`): the same service, a place it writes (``/tmp``, ``/dev/shm``,
its caches, its ``HOME``) full or out of inodes. The fifty-fourth (:func:`cases54`): the same at
other sizes and inode counts. The fifty-fifth (:func:`cases55`): the same service, a stray module
in its working directory shadowing one the server imports. The fifty-sixth (:func:`cases56`):
the model as the Hugging Face hub's cache holds it, read offline by its id, the cache pruned,
partial or pointed at wrongly. The fifty-seventh (:func:`cases57`): the systemd service, one of
a seeded sample of the shared objects the server maps broken as a cut-off copy, a full disk or a
saved error page leaves it. The fifty-eighth (:func:`cases58`): the same for a seeded sample of
the Python source files the server imports. The fifty-ninth (:func:`cases59`): the fifty-sixth's
cases with the hub's client online, on a host that reaches no network.

Each case records the cause expected from what was broken (``expected``); the log and the way
the process ended are whatever the real package does. A case that serves anyway is recorded as
serving (a healthy start, the corpus's controls).

For each case ``OUT_DIR`` gets ``<id>.log`` (stdout and stderr as the server wrote them, merged)
and ``OUT_DIR/manifest.json`` one entry per case: ``id``, ``fault``, ``argv``, ``expected``,
``outcome`` (``ready``, ``ready, then died``, ``exit N`` or ``timeout``), ``seconds``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from real_host import CPU_FLAGS, RealSglang, find_real_sglang
from unit_capture import SystemdTestHost, UnitHost, run_in_unit, unit_name

READY = "The server is fired up and ready to roll!"
TIMEOUT_S = 150.0
#: How long a server that logged its ready line is watched for dying (since the sixteenth batch:
#: a 10 ms watchdog let 0.5.23 log ready and then end its tree seconds later).
AFTER_READY_S = 15.0
SEED = 14

#: The tiny model's files, each broken three ways (rule A).
MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
)
BREAKS = ("removed", "truncated", "garbage")

#: The cause expected when a model file is broken (rule A): the model's own description and
#: weights are the model; the tokenizer's files are the tokenizer. A missing config.json makes
#: the path no model at all (``MISSING_CONFIG``).
MISSING_CONFIG = "model not found"
FILE_CAUSE = {
    "config.json": "model loading",
    "generation_config.json": "model loading",
    "model.safetensors": "model loading",
    "special_tokens_map.json": "tokenizer",
    "tokenizer.json": "tokenizer",
    "tokenizer_config.json": "tokenizer",
}

#: Rule C: first-run mistakes, fixed here before any capture: (id, fault, extra argv, expected).
#: ``{model}`` is the tiny model's path, ``{busy_port}`` a port another process listens on.
MISTAKES: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("model_path_missing", "--model-path names no directory", ("--model-path", "/srv/models/nope"),
     "model not found"),
    ("port_in_use", "--port is held by another listener", ("--port", "{busy_port}"),
     "port in use"),
    ("tokenizer_path_missing", "--tokenizer-path names no directory",
     ("--tokenizer-path", "/srv/tokenizers/nope"), "model not found"),
    ("chat_template_missing", "--chat-template names no file",
     ("--chat-template", "/srv/templates/nope.jinja"), "invalid config"),
    ("override_args_not_json", "--json-model-override-args is not JSON",
     ("--json-model-override-args", "{rope_scaling: 2"), "invalid config"),
    ("load_format_gguf", "--load-format gguf on a safetensors model", ("--load-format", "gguf"),
     "model loading"),
    ("quantization_fp8", "--quantization fp8 on CPU", ("--quantization", "fp8"),
     "invalid config"),
    ("kv_cache_dtype_fp8", "--kv-cache-dtype fp8_e4m3 on CPU", ("--kv-cache-dtype", "fp8_e4m3"),
     "invalid config"),
    ("eagle_without_draft", "--speculative-algorithm EAGLE without a draft model",
     ("--speculative-algorithm", "EAGLE"), "invalid config"),
    ("lora_path_missing", "--lora-paths names no adapter",
     ("--enable-lora", "--lora-paths", "a=/srv/lora/nope"), "model not found"),
    ("dp_size_2", "--dp-size 2 on one CPU node", ("--dp-size", "2"), "invalid config"),
    ("architecture_swapped", "config.json says Qwen2ForCausalLM over Llama weights",
     ("--model-path", "{model_as_qwen2}"), "model loading"),
    ("draft_model_missing", "--speculative-draft-model-path names no directory",
     ("--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", "/srv/models/draft"),
     "model not found"),
    ("mem_fraction_above_one", "--mem-fraction-static 1.5", ("--mem-fraction-static", "1.5"),
     "invalid config"),
    ("max_total_tokens_tiny", "--max-total-tokens 8 (below one request)",
     ("--max-total-tokens", "8"), "out of memory"),
)  # fmt: skip


@dataclass(frozen=True)
class Case:
    """One failure to cause: what is broken, the command line, the cause it should read as."""

    id: str
    fault: str
    argv: tuple[str, ...]
    expected: str
    #: (file, how): ``removed``, ``truncated``, ``garbage``, ``without:<key>``,
    #: ``doubled:<key>``, ``retyped:<key>``, ``set:<key>=<JSON>`` or ``architecture:<name>`` (a
    #: JSON file's key; the last, config.json's architectures), ``tensor_without:<name>`` or
    #: ``tensor_halved:<name>`` (model.safetensors); (``sharded``, how): the weights as two shards
    #: and an index, then broken (:data:`SHARD_BREAKS`)
    model_break: tuple[str, str] | None = None
    #: environment variables set for the server (``{full_disk}``: a full tmpfs mounted for it)
    env: tuple[tuple[str, str], ...] = ()
    #: a cap on the server's address space, bytes (``RLIMIT_AS``, inherited by its processes)
    address_space: int | None = None
    #: (a line the log shows, the process title, the signal): the signal sent to each of the
    #: server's processes with that title once the line is logged
    kill: tuple[str, str, str] | None = None
    #: top-level modules each shadowed by an empty package ahead of site-packages
    shadow: tuple[str, ...] = ()
    #: a distribution given a ``.dist-info`` claiming :data:`OLD_VERSION` ahead of the real one
    old_version: str | None = None
    #: files written for the case, (name, text), in a folder of its own that ``{files}`` in
    #: ``argv`` names (a name ending in ``/``: an empty folder)
    files: tuple[tuple[str, str], ...] = ()
    #: ``[Service]`` settings of the unit the server runs as, on the systemd test host (from the
    #: forty-ninth batch: :func:`cases49`); ``{model}``, ``{copy}``, ``{venv}`` as in ``host_setup``
    unit: tuple[tuple[str, str], ...] = ()
    #: shell run as root on the test host before the unit starts, and after it ends (``{model}``:
    #: the tiny model's path, ``{copy}``: the case's own copy's, ``{venv}``: the tier's venv)
    host_setup: str = ""
    host_undo: str = ""
    #: the model as the hub's cache holds it, laid out this way (:func:`_hub_cache`; from the
    #: fifty-sixth batch): ``{hub_home}``, ``{hub_repo}`` and ``{hub_snapshot}`` name it
    hub: str | None = None


@dataclass(frozen=True)
class Flag:
    """One flag of the real parser, as its ``argparse`` action describes it."""

    name: str  # the longest option string
    type: str  # the type's name ('' for none: a string)
    choices: tuple[str, ...]
    default: str
    takes_one: bool  # one value (not a switch, not a list)


def _parser_flags(real: RealSglang) -> list[Flag]:
    """Every flag of the real parser that takes a value, sorted by name."""
    program = (
        "import argparse, json\n"
        "from sglang.srt.server_args import ServerArgs\n"
        "p = argparse.ArgumentParser()\n"
        "ServerArgs.add_cli_args(p)\n"
        "out = []\n"
        "for a in p._actions:\n"
        "    if not a.option_strings or a.nargs == 0:\n"
        "        continue\n"
        "    out.append([sorted(a.option_strings, key=len)[-1],\n"
        "                getattr(a.type, '__name__', '') if a.type else '',\n"
        "                [str(c) for c in a.choices or ()], str(a.default),\n"
        "                a.nargs in (None, '?')])\n"
        "print(json.dumps(sorted(out)))\n"
    )
    rows = _ask(real, program)
    return [Flag(n, t, tuple(c), d, bool(one)) for n, t, c, d, one in rows]


def _spellings(real: RealSglang) -> dict[str, list[str]]:
    """Every option string of each flag of the real parser (``--tp-size`` beside
    ``--tensor-parallel-size``), by its longest one (:attr:`Flag.name`)."""
    program = (
        "import argparse, json\n"
        "from sglang.srt.server_args import ServerArgs\n"
        "p = argparse.ArgumentParser()\n"
        "ServerArgs.add_cli_args(p)\n"
        "print(json.dumps([a.option_strings for a in p._actions if a.option_strings]))\n"
    )
    return {sorted(names, key=len)[-1]: list(names) for names in _ask(real, program)}


def _ask(real: RealSglang, program: str) -> list[Any]:
    """What ``program``, run by the real package's Python, prints as JSON on its last line."""
    done = subprocess.run(
        [real.python, "-c", program], capture_output=True, text=True, timeout=300, check=True,
        env={**os.environ, **real.env},
    )  # fmt: skip
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def _ask_names(real: RealSglang, program: str) -> list[str]:
    """The names ``program``, run by the real package's Python, prints as a JSON list."""
    return [str(name) for name in _ask(real, program)]


def _file_case(ident: str, fault: str, expected: str, model_break: tuple[str, str]) -> Case:
    """A case that breaks one of the model's files and passes no other flag."""
    return Case(id=ident, fault=fault, argv=(), expected=expected, model_break=model_break)


def _flag_id(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_").replace(".", "_")


def cases(real: RealSglang, batch: str = "14") -> list[Case]:
    """The batch's cases, by its rule."""
    return {
        "14": cases14,
        "15": cases15,
        "16": cases16,
        "17": cases17,
        "18": cases18,
        "19": cases19,
        "20": cases20,
        "21": cases21,
        "22": cases22,
        "23": cases23,
        "24": cases24,
        "25": cases25,
        "26": cases26,
        "27": cases27,
        "28": cases28,
        "29": cases29,
        "30": cases30,
        "31": cases31,
        "32": cases32,
        "33": cases33,
        "34": cases34,
        "35": cases35,
        "36": cases36,
        "37": cases37,
        "38": cases38,
        "39": cases39,
        "40": cases40,
        "41": cases41,
        "42": cases42,
        "43": cases43,
        "44": cases44,
        "45": cases45,
        "46": cases46,
        "47": cases47,
        "48": cases48,
        "49": cases49,
        "50": cases50,
        "51": cases51,
        "52": cases52,
        "53": cases53,
        "54": cases54,
        "55": cases55,
        "56": cases56,
        "57": cases57,
        "58": cases58,
        "59": cases59,
    }[batch](real)


def cases14(real: RealSglang) -> list[Case]:
    """The batch, by rule: A (model files broken), B (seeded negative numbers), C (mistakes)."""
    out = [
        Case(
            id=f"{name.split('.')[0]}_{how}",
            fault=f"the model's {name} {how}",
            argv=(),
            expected=(
                MISSING_CONFIG if (name, how) == ("config.json", "removed") else FILE_CAUSE[name]
            ),
            model_break=(name, how),
        )
        for name in MODEL_FILES
        for how in BREAKS
    ]
    numeric = [
        (f.name, f.type)
        for f in _parser_flags(real)
        if f.type in ("int", "float") and not f.choices and f.takes_one
    ]
    for flag, kind in sorted(random.Random(SEED).sample(numeric, 12)):
        value = "-7" if kind == "int" else "-0.5"
        out.append(
            Case(
                id=f"negative_{flag.lstrip('-').replace('-', '_')}",
                fault=f"{flag} {value}",
                argv=(flag, value),
                expected="invalid config",
            )
        )
    for ident, fault, argv, expected in MISTAKES:
        out.append(Case(id=ident, fault=fault, argv=argv, expected=expected))
    return out


#: The fifteenth batch's seed, and the cause expected when a key of ``config.json`` is removed
#: (rule A): the model's identity (``architectures``, ``model_type``) is the model SGLang cannot
#: serve; any other key is the model's description no longer matching its weights.
SEED15 = 15
IDENTITY_KEYS = ("architectures", "model_type")
#: Rule B: a free-text flag that names a model, tokenizer, draft or adapter by its path or revision
#: (``--tokenizer-path``, ``--speculative-draft-model-revision``) points at a model that is not
#: there; any other is a value of the config.
MODEL_FLAG = re.compile(r"(model|tokenizer|draft|lora)[\w-]*-(path|paths|revision)$")
MISSING_PATH = "/srv/pytest-sglang/nope"


def cases15(real: RealSglang) -> list[Case]:
    """The fifteenth batch, by rule: A (each config.json key removed), B (seeded free-text flags
    given a missing path), C (seeded flags with choices given another choice: the last of its
    choices that is not its default). Rule C expects invalid config (a choice this machine or
    model cannot run)."""
    config = json.loads((real.model / "config.json").read_text())
    out = [
        Case(
            id=f"config_without_{key}",
            fault=f"the model's config.json without {key!r}",
            argv=(),
            expected="unsupported model" if key in IDENTITY_KEYS else "model loading",
            model_break=("config.json", f"without:{key}"),
        )
        for key in sorted(config)
    ]
    flags = [f for f in _parser_flags(real) if f.takes_one and f.name != "--model-path"]
    free_text = [f for f in flags if f.type in ("", "str") and not f.choices]
    for flag in sorted(random.Random(SEED15).sample(free_text, 10), key=lambda f: f.name):
        model_like = MODEL_FLAG.search(flag.name) is not None
        out.append(
            Case(
                id=f"missing_path_{_flag_id(flag.name)}",
                fault=f"{flag.name} {MISSING_PATH}",
                argv=(flag.name, MISSING_PATH),
                expected="model not found" if model_like else "invalid config",
            )
        )
    with_choices = [f for f in flags if len(f.choices) >= 2]
    for flag in sorted(random.Random(SEED15).sample(with_choices, 10), key=lambda f: f.name):
        other = next(c for c in reversed(flag.choices) if c != flag.default)
        out.append(
            Case(
                id=f"choice_{_flag_id(flag.name)}_{_flag_id(other)}",
                fault=f"{flag.name} {other}",
                argv=(flag.name, other),
                expected="invalid config",
            )
        )
    return out


#: The sixteenth batch's seed and its rule C, fixed before any capture: (id, fault, case fields,
#: expected). A signal from outside that ends a process (``SIGKILL``, ``SIGTERM``) is the process
#: killed; one that a fault of its own raises (``SIGSEGV``, ``SIGABRT``, ``SIGBUS``) is a crash.
SEED16 = 16
LOAD_BEGINS = "Load weight begin"
SERVING_BEGINS = "Started server process"
GiB = 1 << 30
SURROUNDINGS: tuple[tuple[str, str, dict[str, object], str], ...] = (
    ("scheduler_sigkill_loading", "SIGKILL to the scheduler as its weights load",
     {"kill": (LOAD_BEGINS, "sglang::scheduler", "SIGKILL")}, "killed"),
    ("scheduler_sigterm_loading", "SIGTERM to the scheduler as its weights load",
     {"kill": (LOAD_BEGINS, "sglang::scheduler", "SIGTERM")}, "killed"),
    ("scheduler_sigsegv_loading", "SIGSEGV to the scheduler as its weights load",
     {"kill": (LOAD_BEGINS, "sglang::scheduler", "SIGSEGV")}, "crashed"),
    ("scheduler_sigabrt_loading", "SIGABRT to the scheduler as its weights load",
     {"kill": (LOAD_BEGINS, "sglang::scheduler", "SIGABRT")}, "crashed"),
    ("scheduler_sigbus_loading", "SIGBUS to the scheduler as its weights load",
     {"kill": (LOAD_BEGINS, "sglang::scheduler", "SIGBUS")}, "crashed"),
    ("detokenizer_sigkill_loading", "SIGKILL to the detokenizer as the weights load",
     {"kill": (LOAD_BEGINS, "sglang::detokenizer", "SIGKILL")}, "killed"),
    ("scheduler_sigkill_warmup", "SIGKILL to the scheduler once the HTTP server starts",
     {"kill": (SERVING_BEGINS, "sglang::scheduler", "SIGKILL")}, "killed"),
    ("scheduler_sigsegv_warmup", "SIGSEGV to the scheduler once the HTTP server starts",
     {"kill": (SERVING_BEGINS, "sglang::scheduler", "SIGSEGV")}, "crashed"),
    ("address_space_2g", "the address space capped at 2 GiB", {"address_space": 2 * GiB},
     "out of memory"),
    ("address_space_6g", "the address space capped at 6 GiB", {"address_space": 6 * GiB},
     "out of memory"),
    ("full_disk_caches", "HOME, TMPDIR and every cache directory on a full disk",
     {"env": tuple((k, "{full_disk}") for k in (
         "HOME", "TMPDIR", "XDG_CACHE_HOME", "HF_HOME", "TRITON_CACHE_DIR",
         "TORCHINDUCTOR_CACHE_DIR", "SGLANG_CACHE_DIR"))}, "no space left"),
    ("nccl_port_in_use", "--nccl-port is held by another listener",
     {"argv": ("--nccl-port", "{busy_port}")}, "port in use"),
    ("watchdog_timeout_tiny", "--watchdog-timeout 0.01", {"argv": ("--watchdog-timeout", "0.01")},
     "watchdog timeout"),
)  # fmt: skip
# Left out of rule C after its one capture: ``--host`` given an address this machine does not
# have makes SGLang's distributed init connect to that address, traffic off this machine.

#: Rule B's value for a typed environment variable: of no type (not a number, not a boolean).
NO_TYPE = "not-a-value"


def _typed_env_vars(real: RealSglang) -> list[str]:
    """SGLang's own environment variables with a number or boolean type, sorted by name."""
    program = (
        "import json\n"
        "from sglang.srt import environ as e\n"
        "typed = (e.EnvInt, e.EnvFloat, e.EnvBool)\n"
        "print(json.dumps(sorted(k for k, v in vars(e.Envs).items() if isinstance(v, typed))))\n"
    )
    return _ask_names(real, program)


def cases16(real: RealSglang) -> list[Case]:
    """The sixteenth batch, by rule: A (each non-zero number of config.json doubled: the model's
    description no longer matches its weights, model loading), B (a seeded sample of 14 of
    SGLang's typed environment variables given a value of no type: invalid config), C (the
    process's surroundings, :data:`SURROUNDINGS`)."""
    config = json.loads((real.model / "config.json").read_text())
    numbers = [
        k
        for k, v in sorted(config.items())
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v != 0
    ]
    out = [
        _file_case(
            f"config_doubled_{key}",
            f"the model's config.json with {key} doubled",
            "model loading",
            ("config.json", f"doubled:{key}"),
        )
        for key in numbers
    ]
    for name in sorted(random.Random(SEED16).sample(_typed_env_vars(real), 14)):
        out.append(
            Case(
                id=f"env_{name.lower()}",
                fault=f"{name}={NO_TYPE}",
                argv=(),
                expected="invalid config",
                env=((name, NO_TYPE),),
            )
        )
    for ident, fault, fields, expected in SURROUNDINGS:
        argv = fields.get("argv", ())
        out.append(
            Case(
                id=ident,
                fault=fault,
                argv=argv,  # type: ignore[arg-type]
                expected=expected,
                env=fields.get("env", ()),  # type: ignore[arg-type]
                address_space=fields.get("address_space"),  # type: ignore[arg-type]
                kill=fields.get("kill"),  # type: ignore[arg-type]
            )
        )
    return out


#: The seventeenth batch's rule A and B: the tensors of the tiny model's first layer and those
#: outside its layers (its second layer's are the first's again).
FIRST_LAYER = re.compile(r"^(?!model\.layers\.)|^model\.layers\.0\.")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def cases17(real: RealSglang) -> list[Case]:
    """The seventeenth batch, by rule: A (each tensor of :data:`FIRST_LAYER` removed from
    ``model.safetensors``) and B (each with its first dimension halved), expected *model
    loading* (the weights no longer match the model's description); C (each top-level key of
    ``tokenizer.json`` and of ``tokenizer_config.json`` removed), expected *tokenizer*."""
    header, _data = _safetensors(real.model / "model.safetensors")
    tensors = sorted(k for k in header if k != "__metadata__" and FIRST_LAYER.match(k))
    out = [
        _file_case(
            f"tensor_{how.partition('_')[2]}_{name.replace('.', '_')}",
            f"model.safetensors {how.replace('_', ' ')} {name}",
            "model loading",
            ("model.safetensors", f"{how}:{name}"),
        )
        for how in ("tensor_without", "tensor_halved")
        for name in tensors
    ]
    for file in TOKENIZER_FILES:
        keys = sorted(json.loads((real.model / file).read_text()))
        out.extend(
            _file_case(
                f"{file.split('.')[0]}_without_{key}",
                f"the model's {file} without {key!r}",
                "tokenizer",
                (file, f"without:{key}"),
            )
            for key in keys
        )
    return out


#: The eighteenth batch's seed, and the switches it leaves out: those whose name says they reach
#: another service (a Ray cluster, a remote instance, a trace collector), so that the capture's
#: traffic stays on this machine.
SEED18 = 18
REACHES_OUT = re.compile(r"ray|remote|trace")


def _switches(real: RealSglang) -> list[str]:
    """Every switch of the real parser (a flag that takes no value) that turns something on:
    its ``--flag`` spelling, not ``--no-flag``; ``--help`` and ``--version`` left out."""
    program = (
        "import argparse, json\n"
        "from sglang.srt.server_args import ServerArgs\n"
        "p = argparse.ArgumentParser()\n"
        "ServerArgs.add_cli_args(p)\n"
        "out = set()\n"
        "for a in p._actions:\n"
        "    names = [o for o in a.option_strings if o.startswith('--')]\n"
        "    if a.nargs != 0 or not names or '--help' in names or '--version' in names:\n"
        "        continue\n"
        "    on = [o for o in names if not o.startswith('--no-')] or names\n"
        "    out.add(sorted(on, key=len)[-1])\n"
        "print(json.dumps(sorted(out)))\n"
    )
    return _ask_names(real, program)


def cases18(real: RealSglang) -> list[Case]:
    """The eighteenth batch, by rule: A (a seeded sample of 16 of the parser's switches, each
    turned on alone) and B (a seeded sample of 10 of its integer flags, each given 0), expected
    *invalid config* (a feature or a bound this machine or model cannot run)."""
    out = [
        Case(id=f"switch_{_flag_id(flag)}", fault=flag, argv=(flag,), expected="invalid config")
        for flag in sorted(
            random.Random(SEED18).sample(
                [f for f in _switches(real) if not REACHES_OUT.search(f)], 16
            )
        )
    ]
    integers = [
        f.name for f in _parser_flags(real) if f.type == "int" and not f.choices and f.takes_one
    ]
    for flag in sorted(random.Random(SEED18).sample(integers, 10)):
        out.append(
            Case(
                id=f"zero_{_flag_id(flag)}",
                fault=f"{flag} 0",
                argv=(flag, "0"),
                expected="invalid config",
            )
        )
    return out


#: The nineteenth batch's seed. (A huge number was not taken: a count such as
#: ``--tensor-parallel-size`` may start as many processes before it is refused.)
SEED19 = 19


def cases19(real: RealSglang) -> list[Case]:
    """The nineteenth batch, by rule: a seeded sample of 14 of the parser's free-text flags
    (one value, no choices, ``--model-path`` left out), each given the empty string. Expected:
    *model not found* for a flag that names a model, tokenizer, draft or adapter by its path or
    revision (the fifteenth batch's rule B), else *invalid config*."""
    flags = [f for f in _parser_flags(real) if f.takes_one and f.name != "--model-path"]
    free_text = [f for f in flags if f.type in ("", "str") and not f.choices]
    return [
        Case(
            id=f"empty_{_flag_id(f.name)}",
            fault=f"{f.name} ''",
            argv=(f.name, ""),
            expected="model not found" if MODEL_FLAG.search(f.name) else "invalid config",
        )
        for f in sorted(random.Random(SEED19).sample(free_text, 14), key=lambda f: f.name)
    ]


#: The twentieth batch's seed, and the version its rule B claims: older than any release of any
#: distribution SGLang requires.
SEED20 = 20
OLD_VERSION = "0.0.1"


def _requirements(real: RealSglang) -> list[tuple[str, bool, list[str]]]:
    """The distributions ``sglang`` requires (no extra) that are installed: each name, whether
    its requirement names a version, and the top-level modules it installs (sorted)."""
    program = (
        "import importlib.metadata as m, json, re\n"
        "tops = {}\n"
        "for module, dists in m.packages_distributions().items():\n"
        "    for d in dists:\n"
        "        tops.setdefault(re.sub(r'[-_.]+', '-', d).lower(), set()).add(module)\n"
        "out = []\n"
        "for r in m.requires('sglang'):\n"
        "    if 'extra ==' in r:\n"
        "        continue\n"
        "    name = re.match(r'[A-Za-z0-9_.-]+', r).group(0)\n"
        "    try:\n"
        "        m.version(name)\n"
        "    except m.PackageNotFoundError:\n"
        "        continue\n"
        "    spec = r.split(';')[0][len(name):]\n"
        "    key = re.sub(r'[-_.]+', '-', name).lower()\n"
        "    modules = sorted(t for t in tops.get(key, ()) if t.isidentifier())\n"
        "    out.append([name, any(c in spec for c in '<>=~'), modules])\n"
        "print(json.dumps(sorted(out)))\n"
    )
    return [(str(n), bool(v), [str(t) for t in tops]) for n, v, tops in _ask(real, program)]


def cases20(real: RealSglang) -> list[Case]:
    """The twentieth batch, by rule: the Python environment SGLang runs in, broken as an upgrade,
    a second install or a stale path breaks it. A (a seeded sample of 16 of the distributions
    ``sglang`` requires, each with every top-level module it installs shadowed by an empty
    package ahead of site-packages: a module of that name without the names it should have) and
    B (a seeded sample of 12 of those whose requirement names a version, each claiming
    :data:`OLD_VERSION` by a ``.dist-info`` ahead of the real one). Expected: *broken install*;
    a case that serves anyway is a control."""
    requirements = _requirements(real)
    shadowable = [(name, tops) for name, _, tops in requirements if tops]
    out = [
        Case(
            id=f"shadowed_{_flag_id(name).lower()}",
            fault=f"{name}'s modules ({', '.join(tops)}) shadowed by empty packages",
            argv=(),
            expected="broken install",
            shadow=tuple(tops),
        )
        for name, tops in sorted(random.Random(SEED20).sample(shadowable, 16))
    ]
    pinned = [name for name, versioned, _ in requirements if versioned]
    out.extend(
        Case(
            id=f"old_{_flag_id(name).lower()}",
            fault=f"{name} claims version {OLD_VERSION}",
            argv=(),
            expected="broken install",
            old_version=name,
        )
        for name in sorted(random.Random(SEED20).sample(pinned, 12))
    )
    return out


#: The twenty-first batch's rule A: the value of another JSON type a ``config.json`` key is given
#: (a number for a string; a string for anything else: a number, a boolean, a list).
WRONG_TYPE_STRING = "not-a-value"
WRONG_TYPE_NUMBER = 7
#: Rule B: the weights as a sharded checkpoint (two shards and ``model.safetensors.index.json``,
#: as the hub serves a larger model), broken the ways an interrupted or partial download or copy
#: leaves one: (how, what it is).
SHARDS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
SHARD_INDEX = "model.safetensors.index.json"
SHARD_BREAKS: tuple[tuple[str, str], ...] = (
    ("second_shard_removed", "the second shard missing"),
    ("second_shard_truncated", "the second shard cut at half its bytes"),
    ("second_shard_empty", "the second shard an empty file"),
    ("second_shard_garbage", "the second shard 64 random bytes"),
    ("index_names_other_shard", "the index naming the second shard by another file's name"),
    ("index_without_weight_map", "the index without its weight_map"),
    ("index_truncated", "the index cut at half its bytes"),
    ("index_removed", "the shards without their index"),
)


def cases21(real: RealSglang) -> list[Case]:
    """The twenty-first batch, by rule: A (each key of ``config.json`` given a value of another
    JSON type: :data:`WRONG_TYPE_NUMBER` for a string, :data:`WRONG_TYPE_STRING` for anything
    else), expected as the fifteenth batch's rule A (*unsupported model* for the model's
    identity, *model loading* for any other key); B (the weights as a sharded checkpoint broken
    as :data:`SHARD_BREAKS` says), expected *model loading* (the model's files incomplete)."""
    config = json.loads((real.model / "config.json").read_text())
    out = [
        _file_case(
            f"config_retyped_{key}",
            f"the model's config.json with {key} given {_wrong_type(value)!r}",
            "unsupported model" if key in IDENTITY_KEYS else "model loading",
            ("config.json", f"retyped:{key}"),
        )
        for key, value in sorted(config.items())
    ]
    out.extend(
        _file_case(f"sharded_{how}", f"a sharded checkpoint, {what}", "model loading",
                   ("sharded", how))
        for how, what in SHARD_BREAKS
    )  # fmt: skip
    return out


#: The twenty-second batch's seed.
SEED22 = 22


def _architectures(real: RealSglang) -> list[str]:
    """Every architecture SGLang's model registry serves, sorted."""
    program = (
        "import json\n"
        "from sglang.srt.models.registry import ModelRegistry\n"
        "print(json.dumps(sorted(ModelRegistry.get_supported_archs())))\n"
    )
    return _ask_names(real, program)


def cases22(real: RealSglang) -> list[Case]:
    """The twenty-second batch, by rule: A (a seeded sample of 16 of the architectures SGLang's
    registry serves, other than the tiny model's own, each written as the only entry of
    ``architectures`` in ``config.json`` over the Llama weights, ``model_type`` kept: a model
    whose description names another model), expected *model loading*, as the fourteenth
    batch's ``architecture_swapped``; B (each key of ``tokenizer_config.json`` given a value of
    another JSON type, as the twenty-first batch's rule A), expected *tokenizer*."""
    own = json.loads((real.model / "config.json").read_text())["architectures"]
    others = [name for name in _architectures(real) if name not in own]
    out = [
        _file_case(
            f"architecture_{name}",
            f"the model's config.json with architectures [{name!r}]",
            "model loading",
            ("config.json", f"architecture:{name}"),
        )
        for name in sorted(random.Random(SEED22).sample(others, 16))
    ]
    tokenizer = json.loads((real.model / "tokenizer_config.json").read_text())
    out.extend(
        _file_case(
            f"tokenizer_config_retyped_{key}",
            f"the model's tokenizer_config.json with {key} given {_wrong_type(value)!r}",
            "tokenizer",
            ("tokenizer_config.json", f"retyped:{key}"),
        )
        for key, value in sorted(tokenizer.items())
    )
    return out


#: The twenty-third batch's rule A: ``--model-path`` given what an engineer types or copies by
#: mistake, each a path or name that holds no model (expected *model not found*): (id, fault,
#: value). ``{model}`` is the tiny model's directory, ``{empty_dir}`` an empty directory,
#: ``{tokenizer_only}`` a directory with the model's tokenizer files alone, ``{models_dir}`` the
#: directory that holds the model's directory.
MODEL_PATH_MISTAKES: tuple[tuple[str, str, str], ...] = (
    ("model_path_repo_id_offline", "a hub repo id that is not cached, the hub offline",
     "acme-labs/not-a-model-7b"),
    ("model_path_config_file", "the model's config.json, not its directory", "{model}/config.json"),
    ("model_path_weights_file", "the model's weights file, not its directory",
     "{model}/model.safetensors"),
    ("model_path_empty_dir", "an empty directory", "{empty_dir}"),
    ("model_path_tokenizer_only", "a directory with the tokenizer's files alone",
     "{tokenizer_only}"),
    ("model_path_relative", "a relative path that is not there", "models/tiny-llama"),
    ("model_path_tilde", "a path starting with ~ (no shell expands it)", "~/models/tiny-llama"),
    ("model_path_trailing_space", "the model's directory with a trailing space", "{model} "),
    ("model_path_parent_dir", "the directory that holds the model's directory", "{models_dir}"),
)  # fmt: skip
#: Rule B: the server's own address given a value no socket takes (expected *invalid config*):
#: (id, fault, flag, value). A name under ``.invalid`` never resolves (RFC 2606), and the
#: server's network namespace has no route off the machine for a lookup to take.
ADDRESS_MISTAKES: tuple[tuple[str, str, str, str], ...] = (
    ("port_above_65535", "--port 99999", "--port", "99999"),
    ("port_negative", "--port -1", "--port", "-1"),
    ("host_not_resolving", "--host names no host", "--host", "not-a-host.invalid"),
    ("host_not_an_address", "--host 256.1.1.1", "--host", "256.1.1.1"),
    ("host_with_port", "--host 127.0.0.1:30000", "--host", "127.0.0.1:30000"),
    ("host_url", "--host http://127.0.0.1", "--host", "http://127.0.0.1"),
)  # fmt: skip


def cases23(real: RealSglang) -> list[Case]:
    """The twenty-third batch, by rule: where the server is pointed rather than what it is
    given. A (:data:`MODEL_PATH_MISTAKES`), expected *model not found*; B
    (:data:`ADDRESS_MISTAKES`), expected *invalid config*."""
    out = [
        Case(id=ident, fault=f"--model-path: {fault}", argv=("--model-path", value),
             expected="model not found")
        for ident, fault, value in MODEL_PATH_MISTAKES
    ]  # fmt: skip
    out.extend(
        Case(id=ident, fault=fault, argv=(flag, value), expected="invalid config")
        for ident, fault, flag, value in ADDRESS_MISTAKES
    )
    return out


#: The twenty-fourth batch's seed.
SEED24 = 24


def cases24(real: RealSglang) -> list[Case]:
    """The twenty-fourth batch, by rule: A (every float flag of the parser, one value and no
    choices, given ``nan``, which Python's ``float`` takes and no bound check refuses) and B (a
    seeded sample of 8 of them given ``inf``). Expected: *invalid config*."""
    floats = [
        f.name for f in _parser_flags(real) if f.type == "float" and not f.choices and f.takes_one
    ]
    out = [
        Case(id=f"nan_{_flag_id(flag)}", fault=f"{flag} nan", argv=(flag, "nan"),
             expected="invalid config")
        for flag in floats
    ]  # fmt: skip
    out.extend(
        Case(id=f"inf_{_flag_id(flag)}", fault=f"{flag} inf", argv=(flag, "inf"),
             expected="invalid config")
        for flag in sorted(random.Random(SEED24).sample(floats, 8))
    )  # fmt: skip
    return out


#: The twenty-fifth batch's files: the model's two small JSON files no earlier rule took apart
#: key by key, each with the cause its breakage is expected to read as (:data:`FILE_CAUSE`).
SMALL_FILES = ("generation_config.json", "special_tokens_map.json")


def cases25(real: RealSglang) -> list[Case]:
    """The twenty-fifth batch, by rule: each key of :data:`SMALL_FILES` given a value of another
    JSON type (A, as the twenty-first batch's rule A) or removed (B, as the fifteenth's).
    Expected: the file's cause in :data:`FILE_CAUSE` (*model loading* for the generation config,
    *tokenizer* for the special tokens)."""
    out: list[Case] = []
    for file in SMALL_FILES:
        stem = file.split(".")[0]
        for key, value in sorted(json.loads((real.model / file).read_text()).items()):
            out.append(
                _file_case(
                    f"{stem}_retyped_{key}",
                    f"the model's {file} with {key} given {_wrong_type(value)!r}",
                    FILE_CAUSE[file],
                    (file, f"retyped:{key}"),
                )
            )
            out.append(
                _file_case(
                    f"{stem}_without_{key}",
                    f"the model's {file} without {key!r}",
                    FILE_CAUSE[file],
                    (file, f"without:{key}"),
                )
            )
    return out


#: The twenty-sixth batch's seed.
SEED26 = 26

#: The twenty-sixth batch's rule B: ``--chat-template`` given what a user can point it at by
#: mistake (id, what it is, the value; ``{templates}``: a directory of the files below, written
#: for the run; ``{model}``: the tiny model's directory).
CHAT_TEMPLATE_MISTAKES = (
    ("chat_template_missing_file", "a .jinja path that does not exist",
     "{templates}/missing.jinja"),
    ("chat_template_unknown_name", "a template name SGLang does not know", "no-such-template"),
    ("chat_template_syntax_error", "a Jinja file that does not parse",
     "{templates}/syntax_error.jinja"),
    ("chat_template_unknown_filter", "a Jinja file naming a filter Jinja does not have",
     "{templates}/unknown_filter.jinja"),
    ("chat_template_raises", "a Jinja file that raises as it renders",
     "{templates}/raises.jinja"),
    ("chat_template_empty", "an empty .jinja file", "{templates}/empty.jinja"),
    ("chat_template_binary", "a .jinja file that is not UTF-8", "{templates}/binary.jinja"),
    ("chat_template_directory", "the model's directory", "{model}"),
    ("chat_template_model_config", "the model's config.json", "{model}/config.json"),
)  # fmt: skip

#: The files of ``{templates}`` (:data:`CHAT_TEMPLATE_MISTAKES`).
CHAT_TEMPLATE_FILES = {
    "syntax_error.jinja": b"{% for m in messages %}{{ m.content }",
    "unknown_filter.jinja": b"{% for m in messages %}{{ m.content | no_such_filter }}{% endfor %}",
    "raises.jinja": b"{{ raise_exception('this template refuses every conversation') }}",
    "empty.jinja": b"",
    "binary.jinja": bytes(range(128, 256)),
}


def cases26(real: RealSglang) -> list[Case]:
    """The twenty-sixth batch, by rule: A (a seeded sample of 14 pairs of the parser's switches,
    the switches drawn as the eighteenth batch draws them, each pair turned on together) and B
    (``--chat-template`` given each of :data:`CHAT_TEMPLATE_MISTAKES`). Expected: *invalid
    config* for both (two features this machine or model cannot run together; a flag's value
    the server cannot use)."""
    switches = sorted(f for f in _switches(real) if not REACHES_OUT.search(f))
    draw = random.Random(SEED26)
    pairs: list[tuple[str, str]] = []
    while len(pairs) < 14:
        first, second = sorted(draw.sample(switches, 2))
        if (first, second) not in pairs:
            pairs.append((first, second))
    out = [
        Case(id=f"pair_{_flag_id(a)}__{_flag_id(b)}", fault=f"{a} {b}", argv=(a, b),
             expected="invalid config")
        for a, b in sorted(pairs)
    ]  # fmt: skip
    out.extend(
        Case(id=case_id, fault=f"--chat-template: {what}", argv=("--chat-template", value),
             expected="invalid config")
        for case_id, what, value in CHAT_TEMPLATE_MISTAKES
    )  # fmt: skip
    return out


#: The twenty-seventh batch's rule A: ``rope_scaling`` as a user adds it to a model's
#: ``config.json`` to stretch its context, right or with one thing wrong (id, the value).
ROPE_SCALINGS: tuple[tuple[str, object], ...] = (
    ("linear", {"rope_type": "linear", "factor": 2.0}),
    ("dynamic", {"rope_type": "dynamic", "factor": 2.0}),
    ("yarn", {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}),
    ("yarn_without_original", {"rope_type": "yarn", "factor": 4.0}),
    ("llama3_without_freq_factors", {"rope_type": "llama3", "factor": 8.0}),
    ("longrope_short_factors", {"rope_type": "longrope", "short_factor": [1.0],
                                "long_factor": [1.0]}),
    ("unknown_type", {"rope_type": "no-such-rope", "factor": 2.0}),
    ("linear_without_factor", {"rope_type": "linear"}),
    ("linear_factor_below_one", {"rope_type": "linear", "factor": 0.5}),
    ("linear_factor_a_string", {"rope_type": "linear", "factor": "2"}),
    ("without_type", {"factor": 2.0}),
    ("old_type_key", {"type": "linear", "factor": 2.0}),
    ("a_string", "linear"),
    ("yarn_beta_a_string", {"rope_type": "yarn", "factor": 4.0,
                            "original_max_position_embeddings": 4096, "beta_fast": "fast"}),
)  # fmt: skip

#: The twenty-seventh batch's rule B: a key of the tiny model's ``config.json`` given a value
#: that no longer agrees with the rest of it or with its weights (key, the value).
INCONSISTENT_VALUES: tuple[tuple[str, object], ...] = (
    ("num_key_value_heads", 3),
    ("num_attention_heads", 3),
    ("num_attention_heads", 8),
    ("head_dim", 48),
    ("hidden_act", "swish-glu"),
    ("hidden_act", "gelu_pytorch_tanh"),
    ("torch_dtype", "float8_e4m3fn"),
    ("torch_dtype", "int8"),
    ("vocab_size", 500),
    ("rope_theta", 0),
    ("rms_norm_eps", -1.0),
    ("num_hidden_layers", 3),
)


def cases27(real: RealSglang) -> list[Case]:
    """The twenty-seventh batch, by rule: the model's ``config.json`` edited by hand: A (each of
    :data:`ROPE_SCALINGS` set as its ``rope_scaling``) and B (each of
    :data:`INCONSISTENT_VALUES` set). Expected: *model loading* (the model's own description at
    fault, as the sixteenth and twenty-first batches have it)."""
    out = [
        _file_case(f"rope_scaling_{name}", f"the model's config.json with rope_scaling "
                   f"{json.dumps(value)}", "model loading",
                   ("config.json", f"set:rope_scaling={json.dumps(value)}"))
        for name, value in ROPE_SCALINGS
    ]  # fmt: skip
    out.extend(
        _file_case(f"config_{key}_{_value_id(value)}", f"the model's config.json with {key} "
                   f"{json.dumps(value)}", "model loading",
                   ("config.json", f"set:{key}={json.dumps(value)}"))
        for key, value in INCONSISTENT_VALUES
    )  # fmt: skip
    return out


def _value_id(value: object) -> str:
    """``value`` as a part of a case id (``-1.0``: ``minus_1_0``; ``swish-glu``: ``swish_glu``)."""
    sign = "_minus_" if isinstance(value, (int, float)) else "_"
    return re.sub(r"\W+", "_", str(value).replace("-", sign)).strip("_")


#: The twenty-eighth batch's rule A: the tokenizer class a model's ``tokenizer_config.json`` names,
#: as a copy from another model or a hand edit leaves it (the tiny model has ``tokenizer.json``
#: alone, a fast tokenizer's file).
TOKENIZER_CLASSES = (
    "NoSuchTokenizer", "LlamaTokenizer", "LlamaTokenizerFast", "GPT2Tokenizer",
    "GPT2TokenizerFast", "BertTokenizer", "T5Tokenizer", "Qwen2Tokenizer", "Qwen2TokenizerFast",
    "GemmaTokenizerFast", "CodeLlamaTokenizer", "AutoTokenizer", "",
)  # fmt: skip

#: The twenty-eighth batch's rule B: a special token's id in the model's ``config.json`` (key,
#: value) outside the vocabulary of 1000, negative, a list, or unset.
TOKEN_IDS: tuple[tuple[str, object], ...] = (
    ("bos_token_id", 5000),
    ("eos_token_id", 5000),
    ("pad_token_id", 5000),
    ("eos_token_id", -1),
    ("eos_token_id", [2, 5000]),
    ("bos_token_id", None),
)


def cases28(real: RealSglang) -> list[Case]:
    """The twenty-eighth batch, by rule: A (the ``tokenizer_class`` of ``tokenizer_config.json``
    given each of :data:`TOKENIZER_CLASSES`; expected *tokenizer*) and B (each of
    :data:`TOKEN_IDS` set in ``config.json``; expected *model loading*, the model's own
    description at fault)."""
    out = [
        _file_case(f"tokenizer_class_{_value_id(name) or 'empty'}",
                   f"the model's tokenizer_config.json with tokenizer_class {name!r}", "tokenizer",
                   ("tokenizer_config.json", f"set:tokenizer_class={json.dumps(name)}"))
        for name in TOKENIZER_CLASSES
    ]  # fmt: skip
    out.extend(
        _file_case(f"config_{key}_{_value_id(value) or 'null'}", f"the model's config.json with "
                   f"{key} {json.dumps(value)}", "model loading",
                   ("config.json", f"set:{key}={json.dumps(value)}"))
        for key, value in TOKEN_IDS
    )  # fmt: skip
    return out


#: The twenty-ninth batch's rule: the sizes a tuning sweep sets, given values at or past their
#: edges (flag, value). The memory sizes (:data:`MEMORY_SIZES`) are expected to read as *out of
#: memory*, as the corpus has a pool too small since its first batches; the others as *invalid
#: config*.
SIZING_EDGES: tuple[tuple[str, str], ...] = (
    ("--mem-fraction-static", "0.001"),
    ("--mem-fraction-static", "1.5"),
    ("--max-total-tokens", "64"),
    ("--max-total-tokens", "16"),
    ("--max-prefill-tokens", "1"),
    ("--max-prefill-tokens", "16"),
    ("--chunked-prefill-size", "1"),
    ("--chunked-prefill-size", "3"),
    ("--page-size", "3"),
    ("--page-size", "4096"),
    ("--context-length", "8"),
    ("--context-length", "4097"),
    ("--max-running-requests", "1"),
    ("--tp-size", "2"),
    ("--dp-size", "2"),
    ("--num-continuous-decode-steps", "1000"),
)
MEMORY_SIZES = ("--mem-fraction-static", "--max-total-tokens")


def cases29(real: RealSglang) -> list[Case]:
    """The twenty-ninth batch, by rule: each of :data:`SIZING_EDGES`, alone. Expected: *out of
    memory* for :data:`MEMORY_SIZES`, else *invalid config*."""
    return [
        Case(id=f"{_flag_id(flag)}_{_value_id(value)}", fault=f"{flag} {value}",
             argv=(flag, value),
             expected="out of memory" if flag in MEMORY_SIZES else "invalid config")
        for flag, value in SIZING_EDGES
    ]  # fmt: skip


#: The thirtieth batch's own settings: the attention backend the tier runs with (its choices
#: other than this are rule A's) and the seed workflow's speculative settings (rule B).
TIER_ATTENTION_BACKEND = "torch_native"
SEED_SPECULATION = ("--speculative-num-steps", "2", "--speculative-eagle-topk", "1",
                    "--speculative-num-draft-tokens", "3")  # fmt: skip

#: The thirtieth batch's rule C: STANDALONE speculation's (steps, top-k, draft tokens), the
#: seed workflow's values and values at or past their edges.
SPECULATION_EDGES: tuple[tuple[int, int, int], ...] = (
    (1, 1, 2),
    (4, 1, 5),
    (0, 1, 1),
    (2, 1, 1),
    (2, 1, 64),
    (64, 1, 65),
    (2, 4, 3),
    (2, 0, 3),
)


def _speculative_algorithms(real: RealSglang) -> list[str]:
    """The names the real package's ``--speculative-algorithm`` takes: each built-in algorithm
    (``NONE`` left out) and each reserved alias."""
    program = (
        "import json\n"
        "from sglang.srt.speculative import spec_info as s\n"
        "names = [a.name for a in s.SpeculativeAlgorithm if a.name != 'NONE']\n"
        "print(json.dumps(names + sorted(s._RESERVED_ALIASES)))\n"
    )
    return _ask_names(real, program)


def cases30(real: RealSglang) -> list[Case]:
    """The thirtieth batch, by rule: A (``--attention-backend`` given each of the real parser's
    choices other than :data:`TIER_ATTENTION_BACKEND`), B (``--speculative-algorithm`` given each
    of :func:`_speculative_algorithms`, with the tiny model as its own draft and
    :data:`SEED_SPECULATION`) and C (STANDALONE speculation, the tiny model as its own draft, with
    each of :data:`SPECULATION_EDGES`). Expected: *invalid config* (a choice this machine or model
    cannot run, or settings that cannot run together)."""
    (backend,) = [f for f in _parser_flags(real) if f.name == "--attention-backend"]
    out = [
        Case(id=f"attention_backend_{_value_id(choice)}", fault=f"--attention-backend {choice}",
             argv=("--attention-backend", choice), expected="invalid config")
        for choice in backend.choices
        if choice != TIER_ATTENTION_BACKEND
    ]  # fmt: skip
    draft = ("--speculative-draft-model-path", "{model}")
    out.extend(
        Case(id=f"speculative_{name.lower()}", fault=f"--speculative-algorithm {name}, the model "
             "as its own draft, the seed's steps", expected="invalid config",
             argv=("--speculative-algorithm", name, *draft, *SEED_SPECULATION))
        for name in _speculative_algorithms(real)
    )  # fmt: skip
    out.extend(
        Case(id=f"standalone_steps{steps}_topk{topk}_draft{tokens}", expected="invalid config",
             fault=f"STANDALONE, the model as its own draft, steps {steps}, top-k {topk}, "
             f"draft tokens {tokens}",
             argv=("--speculative-algorithm", "STANDALONE", *draft, "--speculative-num-steps",
                   str(steps), "--speculative-eagle-topk", str(topk),
                   "--speculative-num-draft-tokens", str(tokens)))
        for steps, topk, tokens in SPECULATION_EDGES
    )  # fmt: skip
    return out


#: The thirty-first batch's flags: the numeric formats a tuning run chooses, and the kernels
#: it picks besides attention, each given every choice of the real parser but its default and
#: the tier's own (:data:`TIER_CHOICES`).
FORMAT_AND_KERNEL_FLAGS = (
    "--quantization",
    "--kv-cache-dtype",
    "--dtype",
    "--sampling-backend",
    "--grammar-backend",
)
TIER_CHOICES = {"--sampling-backend": "pytorch"}


def cases31(real: RealSglang) -> list[Case]:
    """The thirty-first batch, by rule: each flag of :data:`FORMAT_AND_KERNEL_FLAGS` given each
    of the real parser's choices for it other than its default and the tier's own, alone.
    Expected: *invalid config* (a format or kernel this machine, model or checkpoint cannot
    run, as the fifteenth batch's rule C labelled another choice)."""
    flags = {f.name: f for f in _parser_flags(real)}
    return [
        Case(id=f"{_flag_id(name)}_{_value_id(choice)}", fault=f"{name} {choice}",
             argv=(name, choice), expected="invalid config")
        for name in FORMAT_AND_KERNEL_FLAGS
        for choice in flags[name].choices
        if choice not in (flags[name].default, TIER_CHOICES.get(name))
    ]  # fmt: skip


SEED32 = 32
#: The flags the thirtieth and thirty-first batches gave every choice of.
ENUMERATED = ("--attention-backend", *FORMAT_AND_KERNEL_FLAGS)


def cases32(real: RealSglang) -> list[Case]:
    """The thirty-second batch, by rule: a seeded sample of 40 of the real parser's (flag,
    choice) pairs, over every flag that takes one value from a set of choices but those of
    :data:`ENUMERATED` and those that reach off the machine (:data:`REACHES_OUT`), each choice
    other than the flag's default, each alone. Expected: *invalid config* (a choice this
    machine, model or checkpoint cannot run, as the fifteenth batch's rule C labelled
    another choice)."""
    pairs = sorted(
        (flag.name, choice)
        for flag in _parser_flags(real)
        if flag.takes_one and flag.choices and flag.name not in ENUMERATED
        and not REACHES_OUT.search(flag.name)
        for choice in flag.choices
        if choice != flag.default
    )  # fmt: skip
    return [
        Case(id=f"{_flag_id(name)}_{_value_id(choice)}", fault=f"{name} {choice}",
             argv=(name, choice), expected="invalid config")
        for name, choice in sorted(random.Random(SEED32).sample(pairs, 40))
    ]  # fmt: skip


SEED33 = 33


def _settings(real: RealSglang) -> list[tuple[str, ...]]:
    """Every single setting a tuning run can change by choosing: each flag that takes one value
    from a set of choices given each choice other than its default and the tier's own, and each
    switch turned on; those that reach off the machine (:data:`REACHES_OUT`) left out."""
    chosen = [
        (flag.name, choice)
        for flag in _parser_flags(real)
        if flag.takes_one and flag.choices and not REACHES_OUT.search(flag.name)
        for choice in flag.choices
        if choice not in (flag.default, TIER_CHOICES.get(flag.name))
    ]  # fmt: skip
    switched = [(flag,) for flag in _switches(real) if not REACHES_OUT.search(flag)]
    return sorted([*chosen, *switched])


def cases33(real: RealSglang) -> list[Case]:
    """The thirty-third batch, by rule: a seeded sample of 50 pairs of :func:`_settings`, two
    different flags in each, each pair changed together (as a tuning run changes two things at
    once). Expected: *invalid config* (settings this machine, model or checkpoint cannot run,
    alone or together, as the twenty-sixth batch labelled its pairs)."""
    return _paired(_settings(real), SEED33, "pair33")


SEED34 = 34
#: The failure corpus, whose index says what every earlier batch changed (its ``source``).
CORPUS_INDEX = Path(__file__).parent.parent / "tests" / "data" / "failures" / "index.json"
#: Words a flag's name carries for where a setting applies, not what it sets: the
#: ``--prefill-attention-backend`` and ``--decode-attention-backend`` choose the same backends
#: as ``--attention-backend``, the draft model's ``--speculative-draft-model-quantization`` the
#: same methods as ``--quantization``.
WHERE_WORDS = frozenset({"speculative", "draft", "prefill", "decode", "model"})


def _kind(flag: str) -> str:
    """What a flag sets, without the words that only say where (:data:`WHERE_WORDS`)."""
    return "-".join(w for w in flag.lstrip("-").split("-") if w not in WHERE_WORDS) or flag


def _settings_changed_before(batch: int) -> set[tuple[str, ...]]:
    """Every setting a real-package batch before ``batch`` changed, by what it sets and its
    value (a switch by itself): the flags and values of each such corpus case (its ``source``
    ends ``with <what was changed>``). Later batches are left out, so that the rule draws the
    same sample once its own batch and those after it are in the corpus."""
    seen: set[tuple[str, ...]] = set()
    for case in json.loads(CORPUS_INDEX.read_text()):
        number = re.match(r"fresh(\d*)_", str(case["file"]))
        if number is None or int(number[1] or 1) >= batch:
            continue
        changed = str(case["source"]).partition(" with ")[2]
        words = changed.split()
        for at, word in enumerate(words):
            if not word.startswith("--"):
                continue
            value = (
                words[at + 1]
                if at + 1 < len(words) and not words[at + 1].startswith("--")
                else None
            )
            seen.add((_kind(word),) if value is None else (_kind(word), value))
    return seen


def _settings_unseen_before(real: RealSglang, batch: int) -> list[tuple[str, ...]]:
    """The :func:`_settings` no real-package batch before ``batch`` changed
    (:func:`_settings_changed_before`)."""
    seen = _settings_changed_before(batch)
    return [
        setting for setting in _settings(real)
        if (_kind(setting[0]), *setting[1:]) not in seen
    ]  # fmt: skip


def cases34(real: RealSglang) -> list[Case]:
    """The thirty-fourth batch, by rule: as the thirty-third (a seeded sample of 50 pairs of
    :func:`_settings`, two different flags in each, changed together), drawn only from the
    settings no earlier batch changed (:func:`_settings_changed_before`, a backend or format
    counted as changed under any flag that chooses it). Expected: *invalid config*."""
    settings = _settings_unseen_before(real, 34)
    return _paired(settings, SEED34, "pair34")


SEED35 = 35


def cases35(real: RealSglang) -> list[Case]:
    """The thirty-fifth batch, by rule: as the thirty-fourth (pairs of :func:`_settings` no
    earlier batch changed, each pair changed together), sixty pairs, the settings of every batch
    before it counted as changed (the thirty-third's and thirty-fourth's among them). Expected:
    *invalid config*."""
    settings = _settings_unseen_before(real, 35)
    return _paired(settings, SEED35, "pair35", count=60)


SEED36 = 36


def cases36(real: RealSglang) -> list[Case]:
    """The thirty-sixth batch, by rule: as the thirty-fifth (sixty pairs of :func:`_settings` no
    earlier batch changed, each pair changed together), seed 36, the thirty-fifth's settings
    counted as changed too. Expected: *invalid config*."""
    settings = _settings_unseen_before(real, 36)
    return _paired(settings, SEED36, "pair36", count=60)


SEED37 = 37


def cases37(real: RealSglang) -> list[Case]:
    """The thirty-seventh batch, by rule: as the thirty-sixth (pairs of :func:`_settings` no
    earlier batch changed, each pair changed together), seed 37, thirty pairs (the time the
    capture had), the thirty-sixth's settings counted as changed too. Expected: *invalid
    config*."""
    settings = _settings_unseen_before(real, 37)
    return _paired(settings, SEED37, "pair37", count=30)


SEED38 = 38

#: A setting two earlier batches drew that waited for a checkpoint engine, with no error line,
#: until the readiness limit (left out both times): drawing it again spends the limit on nothing.
NEVER_READY = ("--checkpoint-engine-wait-weights-before-ready",)


def cases38(real: RealSglang) -> list[Case]:
    """The thirty-eighth batch, by rule: every setting of :func:`_settings` no earlier batch
    changed (but :data:`NEVER_READY`), each exactly once: shuffled with seed 38 and paired in
    that order, each with the next one on another flag; one left without a partner is changed
    alone. Expected: *invalid config*."""
    settings = [s for s in _settings_unseen_before(real, 38) if s[0] not in NEVER_READY]
    random.Random(SEED38).shuffle(settings)
    cases: list[Case] = []
    while settings:
        first = settings.pop(0)
        partner = next((s for s in settings if s[0] != first[0]), None)
        if partner is not None:
            settings.remove(partner)
        group = [first] if partner is None else sorted((first, partner))
        cases.append(_changed_together("pair38", group))
    return cases


def _changed_together(prefix: str, group: Sequence[tuple[str, ...]]) -> Case:
    """The case that changes every setting of ``group`` at once, expected *invalid config*."""
    return Case(
        id=f"{prefix}_" + "__".join(_setting_id(s) for s in group),
        fault=" ".join(word for s in group for word in s),
        argv=tuple(word for s in group for word in s),
        expected="invalid config",
    )


SEED39 = 39


def cases39(real: RealSglang) -> list[Case]:
    """The thirty-ninth batch, by rule: a seeded sample of 32 triples of :func:`_settings` (but
    :data:`NEVER_READY`), three different flags in each, each triple changed together, as a
    tuning run changes several things at once; settings earlier batches changed are drawn as
    any other. Expected: *invalid config*."""
    return _tripled(real, SEED39, "triple39", 32)


SEED40 = 40


def cases40(real: RealSglang) -> list[Case]:
    """The fortieth batch, by rule: the thirty-ninth's again with seed 40, 16 triples (the time
    the capture had); a triple the thirty-ninth changed is drawn again only by chance."""
    return _tripled(real, SEED40, "triple40", 16)


SEED47 = 47


def cases47(real: RealSglang) -> list[Case]:
    """The forty-seventh batch, by rule: the thirty-ninth's again with seed 47, 32 triples: the
    settings a tuning run changes, measured again once the rules had met six batches from other
    sources (the forty-first to forty-sixth)."""
    return _tripled(real, SEED47, "triple47", 32)


SEED41 = 41
#: The forty-first batch's value: one past the largest 32-bit signed integer, the edge a counter,
#: a tensor's index or a C API's ``int`` meets first, and what an extra digit or two typed into a
#: size reaches.
PAST_INT32 = str(2**31)
#: Words of a flag's name that say it sizes memory (a pool, a cache, a buffer): given
#: :data:`PAST_INT32`, such a flag is expected to read *out of memory*, as the twenty-ninth
#: batch labelled its memory sizes.
MEMORY_WORDS = re.compile(r"-(gb|mb|capacity)(-|$)|cache-(size|len)|buffer-size|max-states")
#: Words of a flag's name that say it sets how many processes or threads to start: given
#: :data:`PAST_INT32`, such a flag could fill the capturing machine itself, so it is left out.
STARTS_MANY = re.compile(r"worker-num|threadpool-count|threads")


def cases41(real: RealSglang) -> list[Case]:
    """The forty-first batch, by rule: a seeded sample (seed 41) of 32 of the parser's integer
    flags that take one value without choices, that no earlier batch gave a value under any of
    its spellings (:func:`_settings_changed_before` by what a flag sets, :func:`_spellings`, and
    the thirtieth's speculative steps), that reach nothing off the machine (:data:`REACHES_OUT`)
    and start no processes by the number (:data:`STARTS_MANY`), each given :data:`PAST_INT32`
    alone. Expected: *out of memory* for a flag :data:`MEMORY_WORDS` says sizes memory, else
    *invalid config*."""
    seen = {setting[0] for setting in _settings_changed_before(41)}
    seen |= {_kind(flag) for flag in SEED_SPECULATION[::2]}  # the 30th's sources say "steps"
    named = _spellings(real)
    flags = [
        flag.name for flag in _parser_flags(real)
        if flag.type == "int" and not flag.choices and flag.takes_one
        and not seen & {_kind(spelling) for spelling in named[flag.name]}
        and not REACHES_OUT.search(flag.name) and not STARTS_MANY.search(flag.name)
    ]  # fmt: skip
    return [
        Case(id=f"int32_{_flag_id(flag)}", fault=f"{flag} {PAST_INT32}", argv=(flag, PAST_INT32),
             expected="out of memory" if MEMORY_WORDS.search(flag) else "invalid config")
        for flag in sorted(random.Random(SEED41).sample(flags, 32))
    ]  # fmt: skip


#: The forty-second batch's flags: every flag of the 0.5.23 parser that takes one value whose
#: help says it is JSON written inline (an object or an array; read once from the parser's help,
#: a file's path only left out), and the values a hand edit gets wrong: an object in Python's
#: quoting (a dict pasted from Python) and a well-formed object with a key the setting does not
#: take.
INLINE_JSON_FLAGS = (
    "--cuda-graph-config",
    "--deepep-config",
    "--default-chat-template-kwargs",
    "--extra-metric-labels",
    "--forward-hooks",
    "--hicache-storage-backend-extra-config",
    "--hierarchical-sparse-attention-extra-config",
    "--json-model-override-args",
    "--kv-events-config",
    "--limit-mm-data-per-request",
    "--mm-process-config",
    "--model-loader-extra-config",
    "--modelexpress-config",
    "--preferred-sampling-params",
    "--radix-eviction-policy-config",
    "--sidecar-args",
    "--unified-cache-external-linker-config",
    "--watermark-config",
)
JSON_MISTAKES = (("python_quoted", "{'unknown_key': 1}"), ("unknown_key", '{"unknown_key": 1}'))


def cases42(real: RealSglang) -> list[Case]:
    """The forty-second batch, by rule: each of :data:`INLINE_JSON_FLAGS` given each of
    :data:`JSON_MISTAKES`, alone. Expected: *invalid config*."""
    return [
        Case(id=f"json_{_flag_id(flag)}_{how}", fault=f"{flag} {value}", argv=(flag, value),
             expected="invalid config")
        for flag in INLINE_JSON_FLAGS
        for how, value in JSON_MISTAKES
    ]  # fmt: skip


SEED43 = 43


def _switched_off_env_vars(real: RealSglang) -> list[str]:
    """SGLang's own boolean environment variables (its ``Envs`` registry) whose default is off,
    sorted by name."""
    program = (
        "import json\n"
        "from sglang.srt import environ as e\n"
        "print(json.dumps(sorted(k for k, v in vars(e.Envs).items()\n"
        "                        if isinstance(v, e.EnvBool) and v.default is False)))\n"
    )
    return _ask_names(real, program)


def cases43(real: RealSglang) -> list[Case]:
    """The forty-third batch, by rule: a seeded sample (seed 43) of 40 of
    :func:`_switched_off_env_vars` whose names reach nothing off the machine
    (:data:`REACHES_OUT`, case aside), each set to ``1`` alone, as a unit's ``Environment=`` line
    or a launch script's ``export`` turns one on; no flag changed. Expected: *invalid config*
    (a setting this machine or model cannot run, as the sixteenth batch labelled its environment
    variables)."""
    names = [
        name for name in _switched_off_env_vars(real) if not REACHES_OUT.search(name.lower())
    ]  # fmt: skip
    return [
        Case(id=f"env_on_{name.lower()}", fault=f"{name}=1", argv=(), expected="invalid config",
             env=((name, "1"),))
        for name in sorted(random.Random(SEED43).sample(names, 40))
    ]  # fmt: skip


#: The forty-fourth batch's values: where a sweep starts, and a percentage typed where a fraction,
#: a ratio or a number of seconds is meant.
FLOAT_VALUES = ("0", "100")
#: Words of a float flag's name that say it sizes memory (expected *out of memory*, as the
#: twenty-ninth batch labelled ``--mem-fraction-static``) or is the scheduler's watchdog
#: (expected *watchdog timeout*, as the sixteenth batch labelled ``--watchdog-timeout 0.01``).
FLOAT_MEMORY = re.compile(r"mem-|memory")
FLOAT_WATCHDOG = re.compile(r"watchdog-timeout$")


def cases44(real: RealSglang) -> list[Case]:
    """The forty-fourth batch, by rule: every float flag of the parser that takes one value
    without choices, each given each of :data:`FLOAT_VALUES`, alone (the twenty-fourth gave every
    one ``nan``; none was given 0 or a percentage). Expected: *out of memory* for a flag
    :data:`FLOAT_MEMORY` says sizes memory, *watchdog timeout* for one :data:`FLOAT_WATCHDOG`
    says is the watchdog, else *invalid config*."""

    def expected(flag: str) -> str:
        if FLOAT_MEMORY.search(flag):
            return "out of memory"
        return "watchdog timeout" if FLOAT_WATCHDOG.search(flag) else "invalid config"

    flags = [
        flag.name for flag in _parser_flags(real)
        if flag.type == "float" and not flag.choices and flag.takes_one
    ]  # fmt: skip
    return [
        Case(id=f"float_{_flag_id(flag)}_{value}", fault=f"{flag} {value}", argv=(flag, value),
             expected=expected(flag))
        for value in FLOAT_VALUES
        for flag in flags
    ]  # fmt: skip


SEED45 = 45
#: The forty-fifth batch's file: one setting that serves, as a hand-written ``--config`` file
#: holds it (0.5.23 merges the file's keys into the command line ahead of it).
CONFIG_SETTING = ("max-running-requests", "8")
#: The file itself, wrong: (id, argv, files, expected). Named but absent, named with another
#: suffix (a JSON file, a text file), a folder named like a YAML file: *invalid config*, as the
#: fifteenth batch labelled a path that does not exist; ``--config`` given twice or with no path:
#: the command line's shape, *bad flag*.
CONFIG_FILE_MISTAKES: tuple[tuple[str, tuple[str, ...], tuple[tuple[str, str], ...], str], ...] = (
    ("absent", ("--config", "{files}/server.yaml"), (), "invalid config"),
    ("json_named", ("--config", "{files}/server.json"),
     (("server.json", '{"max-running-requests": 8}\n'),), "invalid config"),
    ("txt_named", ("--config", "{files}/server.txt"),
     (("server.txt", "max-running-requests: 8\n"),), "invalid config"),
    ("folder", ("--config", "{files}/server.yaml"), (("server.yaml/", ""),), "invalid config"),
    ("twice", ("--config", "{files}/server.yaml", "--config", "{files}/server.yaml"),
     (("server.yaml", "max-running-requests: 8\n"),), "bad flag"),
    ("no_path", ("--config",), (), "bad flag"),
)  # fmt: skip
#: The file's text, wrong as a hand edit leaves it (each around :data:`CONFIG_SETTING`):
#: *invalid config*.
CONFIG_TEXT_MISTAKES = (
    ("tab_indent", "model-loader-extra-config:\n\tkey: 1\nmax-running-requests: 8\n"),
    ("unclosed_quote", 'served-model-name: "tiny\nmax-running-requests: 8\n'),
    ("unclosed_list", "cuda-graph-bs: [1, 2\nmax-running-requests: 8\n"),
    ("two_documents", "max-running-requests: 8\n---\nmax-running-requests: 4\n"),
    ("list_root", "- max-running-requests: 8\n"),
    ("command_line", "--max-running-requests 8\n"),
    ("no_space", "max-running-requests:8\n"),
)
#: The values a YAML file gives that are not a flag's type, each as the file merges it into the
#: command line (``true``, ``None``, two words, JSON): a list is a second word (*bad flag*, the
#: command line's shape); the rest a value the flag's type refuses (*invalid config*) or, for a
#: flag with choices, no choice (*bad flag*, ``invalid choice``).
CONFIG_VALUES = (("true", "true"), ("null", "null"), ("list", "[1, 2]"), ("mapping", "{a: 1}"))
#: A switch given a value other than a YAML boolean: a second word after it (*bad flag*).
CONFIG_SWITCH_VALUES = (("quoted_yes", '"yes"'), ("one", "1"))


def _config_file_only_keys(real: RealSglang) -> list[str]:
    """The keys 0.5.23's config merger refuses (a flag a YAML file cannot hold), sorted."""
    program = (
        "import argparse, json\n"
        "from sglang.srt.server_args import ServerArgs\n"
        "from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger\n"
        "p = argparse.ArgumentParser()\n"
        "ServerArgs.add_cli_args(p)\n"
        "print(json.dumps(sorted(ConfigArgumentMerger(p).unsupported_actions)))\n"
    )
    return _ask_names(real, program)


def _config_case(id_: str, text: str, expected: str) -> Case:
    return Case(id=f"yaml_{id_}", fault=f"--config server.yaml: {text!r}",
                argv=("--config", "{files}/server.yaml"), expected=expected,
                files=(("server.yaml", text),))  # fmt: skip


def cases45(real: RealSglang) -> list[Case]:
    """The forty-fifth batch, by rule: a YAML file given with ``--config`` (no earlier batch gave
    one), wrong in each of four ways, alone. The file (:data:`CONFIG_FILE_MISTAKES`); its text
    (:data:`CONFIG_TEXT_MISTAKES`, *invalid config*); its keys: :data:`CONFIG_SETTING`'s key
    with a flag's dashes kept, in capitals, with its last letter dropped, and the first key the
    merger refuses (:func:`_config_file_only_keys`), each *bad flag*; its values: a seeded sample
    (seed 45) of two integer flags, two float flags and two flags with choices (one value each,
    :data:`REACHES_OUT` left out), each given each of :data:`CONFIG_VALUES`, and two switches,
    each given each of :data:`CONFIG_SWITCH_VALUES`."""
    key, value = CONFIG_SETTING
    found = [
        Case(id=f"yaml_{id_}", fault=f"--config: {id_}", argv=argv, expected=expected,
             files=files)
        for id_, argv, files, expected in CONFIG_FILE_MISTAKES
    ]  # fmt: skip
    found += [_config_case(id_, text, "invalid config") for id_, text in CONFIG_TEXT_MISTAKES]
    keys = (
        ("dashes_kept", f"--{key}"),
        ("capitals", key.upper().replace("-", "_")),
        ("misspelled", key[:-1]),
        ("file_cannot_hold", _config_file_only_keys(real)[0]),
    )
    found += [_config_case(f"key_{id_}", f"{name}: {value}\n", "bad flag") for id_, name in keys]
    draw = random.Random(SEED45)
    flags = [f for f in _parser_flags(real) if f.takes_one and not REACHES_OUT.search(f.name)]
    for kind in ("int", "float", "choices"):
        sample = [
            f for f in flags
            if (bool(f.choices) if kind == "choices" else f.type == kind and not f.choices)
        ]  # fmt: skip
        for flag in sorted(draw.sample(sample, 2), key=lambda f: f.name):
            for id_, text in CONFIG_VALUES:
                expected = "bad flag" if id_ == "list" or flag.choices else "invalid config"
                name = flag.name.removeprefix("--")
                found.append(_config_case(f"{_flag_id(flag.name)}_{id_}", f"{name}: {text}\n",
                                          expected))  # fmt: skip
    switches = [s for s in _switches(real) if not REACHES_OUT.search(s)]
    for switch in sorted(draw.sample(switches, 2)):
        for id_, text in CONFIG_SWITCH_VALUES:
            name = switch.removeprefix("--")
            found.append(_config_case(f"{_flag_id(switch)}_{id_}", f"{name}: {text}\n",
                                      "bad flag"))  # fmt: skip
    return found


SEED46 = 46
#: The forty-sixth batch's forms of a number, as a person types one: with a unit, in scientific
#: notation, with its digits grouped, as a float where an integer is meant; for a float, as a
#: percentage and with a decimal comma. Python reads some of them (``int("1_000")``,
#: ``float("1e4")``), so the value reaches SGLang's own checks, or serves.
INT_FORMS = (("unit", "8k"), ("scientific", "1e4"), ("grouped", "1_000"), ("float", "8.0"))
FLOAT_FORMS = (("percent", "50%"), ("grouped", "1_000.5"), ("decimal_comma", "0,5"))


def cases46(real: RealSglang) -> list[Case]:
    """The forty-sixth batch, by rule: a seeded sample (seed 46) of 8 of the parser's integer
    flags and 6 of its float flags that take one value without choices, leaving out those that
    reach off the machine (:data:`REACHES_OUT`), start processes or threads by the number
    (:data:`STARTS_MANY`) or size memory (:data:`MEMORY_WORDS`, :data:`FLOAT_MEMORY`: a thousand
    of a size could fill the capturing machine itself), each integer flag given each of
    :data:`INT_FORMS` and each float flag each of :data:`FLOAT_FORMS`, alone. Expected: *invalid
    config* (a value typed wrong, whether the parser or SGLang refuses it)."""
    flags = [
        f for f in _parser_flags(real)
        if f.takes_one and not f.choices and not REACHES_OUT.search(f.name)
        and not STARTS_MANY.search(f.name) and not MEMORY_WORDS.search(f.name)
        and not FLOAT_MEMORY.search(f.name)
    ]  # fmt: skip
    draw = random.Random(SEED46)
    found: list[Case] = []
    for kind, count, forms in (("int", 8, INT_FORMS), ("float", 6, FLOAT_FORMS)):
        sample = sorted(draw.sample([f.name for f in flags if f.type == kind], count))
        found += [
            Case(id=f"form_{_flag_id(flag)}_{how}", fault=f"{flag} {value}", argv=(flag, value),
                 expected="invalid config")
            for flag in sample
            for how, value in forms
        ]  # fmt: skip
    return found


#: The forty-eighth batch's variables: those the libraries SGLang runs on document (Python's
#: interpreter, OpenMP and MKL, torch, Hugging Face's hub and transformers, tokenizers and its
#: thread pool, glibc's allocator), fixed before capture; each is set as a unit's
#: ``Environment=`` line sets it. A setting's value: :data:`NO_TYPE`.
LIBRARY_SETTINGS = (
    "HF_HUB_DOWNLOAD_TIMEOUT",
    "HF_HUB_ENABLE_HF_TRANSFER",
    "HF_HUB_OFFLINE",
    "KMP_AFFINITY",
    "MALLOC_ARENA_MAX",
    "MKL_NUM_THREADS",
    "OMP_NUM_THREADS",
    "OMP_PROC_BIND",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "PYTHONMALLOC",
    "PYTHONWARNINGS",
    "PYTORCH_CUDA_ALLOC_CONF",
    "RAYON_NUM_THREADS",
    "TOKENIZERS_PARALLELISM",
    "TORCHINDUCTOR_COMPILE_THREADS",
    "TORCH_CPP_LOG_LEVEL",
    "TORCH_LOGS",
    "TORCH_SHOW_CPP_STACKTRACES",
    "TRANSFORMERS_VERBOSITY",
)
#: Its directories, each given a path no process can create or write (below ``/proc``).
LIBRARY_DIRECTORIES = (
    "HF_HOME",
    "HOME",
    "OUTLINES_CACHE_DIR",
    "TMPDIR",
    "TORCHINDUCTOR_CACHE_DIR",
    "TORCH_HOME",
    "TRITON_CACHE_DIR",
    "XDG_CACHE_HOME",
)
UNWRITABLE = "/proc/sglang-unwritable"


def cases48(real: RealSglang) -> list[Case]:
    """The forty-eighth batch, by rule: each of :data:`LIBRARY_SETTINGS` given :data:`NO_TYPE`
    and each of :data:`LIBRARY_DIRECTORIES` given :data:`UNWRITABLE`, alone; no flag changed (the
    sixteenth batch typed SGLang's own variables wrong and put every cache on a full disk at
    once). Expected: *invalid config* (the unit's environment, which a config's ``env`` sets)."""
    return [
        Case(id=f"libenv_{name.lower()}", fault=f"{name}={value}", argv=(),
             expected="invalid config", env=((name, value),))
        for names, value in ((LIBRARY_SETTINGS, NO_TYPE), (LIBRARY_DIRECTORIES, UNWRITABLE))
        for name in names
    ]  # fmt: skip


#: The causes the forty-ninth batch's rule expects, by what a unit's setting takes away.
SETUP_FAILED = "service setup failed"  # the program, its user or its directory
#: The forty-ninth batch's settings, fixed before its capture: (``[Service]`` setting, value,
#: expected). The hardening ``systemd-analyze security`` recommends, each at the value it
#: recommends; the resource limits (``Limit*=``) at values copied from other units and examples;
#: the scheduling a shared host gives a batch job; the model's directory hidden, emptied or made
#: read-only by a path setting. Expected, by what the setting takes away: the program, its user
#: or its directory, *service setup failed*; the model, *model not found*; memory, *out of
#: memory*; anything else the server meets as it runs, *invalid config* (the unit is the
#: configuration the server runs under). Left out: the cgroup settings (``MemoryMax=``,
#: ``TasksMax=``, ``CPUQuota=``): the test host has no controllers delegated, so they would not
#: take effect.
SERVICE_SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("PrivateDevices", "yes", "invalid config"),
    ("PrivateTmp", "yes", "invalid config"),
    ("PrivateNetwork", "yes", "invalid config"),
    ("PrivateUsers", "yes", "invalid config"),
    ("PrivateMounts", "yes", "invalid config"),
    ("PrivateIPC", "yes", "invalid config"),
    ("ProtectSystem", "strict", "invalid config"),
    ("ProtectSystem", "full", "invalid config"),
    ("ProtectHome", "yes", SETUP_FAILED),
    ("ProtectHome", "tmpfs", SETUP_FAILED),
    ("ProtectHome", "read-only", "invalid config"),
    ("ProtectKernelTunables", "yes", "invalid config"),
    ("ProtectKernelModules", "yes", "invalid config"),
    ("ProtectKernelLogs", "yes", "invalid config"),
    ("ProtectControlGroups", "yes", "invalid config"),
    ("ProtectClock", "yes", "invalid config"),
    ("ProtectHostname", "yes", "invalid config"),
    ("ProtectProc", "invisible", "invalid config"),
    ("ProcSubset", "pid", "invalid config"),
    ("NoNewPrivileges", "yes", "invalid config"),
    ("RestrictNamespaces", "yes", "invalid config"),
    ("RestrictRealtime", "yes", "invalid config"),
    ("RestrictSUIDSGID", "yes", "invalid config"),
    ("LockPersonality", "yes", "invalid config"),
    ("MemoryDenyWriteExecute", "yes", "invalid config"),
    ("RestrictAddressFamilies", "AF_INET AF_INET6", "invalid config"),
    ("RestrictAddressFamilies", "AF_UNIX", "invalid config"),
    ("SystemCallFilter", "@system-service", "invalid config"),
    ("SystemCallFilter", "~@resources", "invalid config"),
    ("SystemCallArchitectures", "native", "invalid config"),
    ("CapabilityBoundingSet", "CAP_NET_BIND_SERVICE", "invalid config"),
    ("KeyringMode", "private", "invalid config"),
    ("UMask", "0077", "invalid config"),
    ("RemoveIPC", "yes", "invalid config"),
    ("User", "nobody", SETUP_FAILED),
    ("DynamicUser", "yes", SETUP_FAILED),
    ("Group", "sglang", SETUP_FAILED),
    ("WorkingDirectory", "/srv/sglang", SETUP_FAILED),
    ("LimitNOFILE", "64", "invalid config"),
    ("LimitNOFILE", "1024", "invalid config"),
    ("LimitNPROC", "64", "invalid config"),
    ("LimitSTACK", "256K", "invalid config"),
    ("LimitFSIZE", "0", "invalid config"),
    ("LimitCPU", "10", "invalid config"),
    ("LimitCORE", "0", "invalid config"),
    ("LimitSIGPENDING", "0", "invalid config"),
    ("LimitMSGQUEUE", "0", "invalid config"),
    ("LimitAS", "4G", "out of memory"),
    ("LimitAS", "16G", "out of memory"),
    ("LimitDATA", "2G", "out of memory"),
    ("LimitMEMLOCK", "0", "out of memory"),
    ("Nice", "19", "invalid config"),
    ("OOMScoreAdjust", "1000", "invalid config"),
    ("InaccessiblePaths", "{model}", "model not found"),
    ("TemporaryFileSystem", "{model}", "model not found"),
    ("ReadOnlyPaths", "{model}", "model not found"),
)


def cases49(real: RealSglang) -> list[Case]:
    """The forty-ninth batch, by rule: the server as a systemd service on the test host, its
    unit given each of :data:`SERVICE_SETTINGS` alone; no flag changed. Its records are the
    journal's messages, the service manager's lines among the server's (:mod:`unit_capture`)."""
    return [
        Case(id=f"unit_{key.lower()}_{re.sub(r'[^a-z0-9]+', '_', value.lower()).strip('_')}",
             fault=f"the unit's {key}={value} (a systemd service on the test host, its journal"
                   " the record)", argv=(), expected=expected,
             unit=((key, value),))
        for key, value, expected in SERVICE_SETTINGS
    ]  # fmt: skip


#: The fifty-second batch's settings, fixed before its capture: the forty-ninth's limits and
#: path settings at other values, and the pair a hardened unit most often carries
#: (``ProtectSystem=strict`` with the one directory it writes opened); expected by the
#: forty-ninth's scheme (the program hidden, *service setup failed*; memory, *out of memory*;
#: anything else the server meets, *invalid config*).
SERVICE_SETTINGS_AGAIN: tuple[tuple[tuple[tuple[str, str], ...], str], ...] = (
    ((("LimitNOFILE", "16"),), "invalid config"),
    ((("LimitNOFILE", "128"),), "invalid config"),
    ((("LimitNOFILE", "256"),), "invalid config"),
    ((("LimitAS", "1G"),), "out of memory"),
    ((("LimitAS", "2G"),), "out of memory"),
    ((("LimitAS", "8G"),), "out of memory"),
    ((("LimitDATA", "512M"),), "out of memory"),
    ((("LimitDATA", "1G"),), "out of memory"),
    ((("LimitDATA", "4G"),), "out of memory"),
    ((("LimitSTACK", "64K"),), "invalid config"),
    ((("LimitSTACK", "1M"),), "invalid config"),
    ((("LimitFSIZE", "1M"),), "invalid config"),
    ((("LimitCPU", "3"),), "invalid config"),
    ((("ReadOnlyPaths", "/root/.cache"),), "invalid config"),
    ((("ReadOnlyPaths", "/tmp"),), "invalid config"),
    ((("InaccessiblePaths", "/tmp"),), "invalid config"),
    ((("TemporaryFileSystem", "/root/.cache/sglang"),), "invalid config"),
    ((("InaccessiblePaths", "/proc/cpuinfo"),), "invalid config"),
    ((("InaccessiblePaths", "/proc/meminfo"),), "invalid config"),
    ((("ProtectSystem", "strict"), ("ReadWritePaths", "/root/.cache/sglang")), "invalid config"),
    ((("InaccessiblePaths", "{venv}"),), SETUP_FAILED),
)


def cases52(real: RealSglang) -> list[Case]:
    """The fifty-second batch, by rule: the server as a systemd service on the test host, its
    unit given each of :data:`SERVICE_SETTINGS_AGAIN` (the forty-ninth's source at other
    values); no flag changed."""
    cases = []
    for settings, expected in SERVICE_SETTINGS_AGAIN:
        said = " ".join(f"{key}={value}" for key, value in settings)
        cases.append(
            Case(id="again_" + re.sub(r"[^a-z0-9]+", "_", said.lower()).strip("_"),
                 fault=f"the unit's {said} (a systemd service on the test host, its journal the"
                 " record)", argv=(), expected=expected, unit=settings)
        )  # fmt: skip
    return cases


#: The fiftieth batch's cases, fixed before its capture: (id, what is done on the host, the shell
#: that does it, the shell that undoes it, extra ``[Service]`` settings, expected). Each runs as
#: ``User=nobody`` on its own copy of the model (``{copy}``: directories 755, files 644, owned
#: by root, as an installer leaves them), with ``/root`` opened to others (711) so that the
#: tier's venv under it can be run, as a service account is given the install.
SERVICE_USER_CASES: tuple[tuple[str, str, str, str, tuple[tuple[str, str], ...], str], ...] = (
    ("as_installed", "nothing else changed (its HOME, /nonexistent)", "", "", (),
     "invalid config"),
    ("model_dir_700", "the model's directory 700", "chmod 700 {copy}", "", (),
     "model access denied"),
    ("models_parent_700", "the directory above the model's 700", "chmod 700 /srv/models",
     "chmod 755 /srv/models", (), "model access denied"),
    ("config_json_600", "config.json 600", "chmod 600 {copy}/config.json", "", (),
     "model access denied"),
    ("weights_600", "model.safetensors 600", "chmod 600 {copy}/model.safetensors", "", (),
     "model access denied"),
    ("tokenizer_json_600", "tokenizer.json 600", "chmod 600 {copy}/tokenizer.json", "", (),
     "model access denied"),
    ("tokenizer_config_600", "tokenizer_config.json 600",
     "chmod 600 {copy}/tokenizer_config.json", "", (), "model access denied"),
    ("generation_config_600", "generation_config.json 600",
     "chmod 600 {copy}/generation_config.json", "", (), "model access denied"),
    ("special_tokens_600", "special_tokens_map.json 600",
     "chmod 600 {copy}/special_tokens_map.json", "", (), "model access denied"),
    ("sglang_package_700", "the venv's sglang package 700",
     "chmod 700 {venv}/lib/python3.11/site-packages/sglang",
     "chmod 755 {venv}/lib/python3.11/site-packages/sglang", (), "broken install"),
    ("torch_package_700", "the venv's torch package 700",
     "chmod 700 {venv}/lib/python3.11/site-packages/torch",
     "chmod 755 {venv}/lib/python3.11/site-packages/torch", (), "broken install"),
    ("venv_700", "the venv's directory 700", "chmod 700 {venv}", "chmod 755 {venv}", (),
     SETUP_FAILED),
    ("home_root", "HOME=/root (root's, not writable for it)", "", "",
     (("Environment", "HOME=/root"),), "invalid config"),
    ("home_state_directory", "HOME its own StateDirectory=sglang", "", "",
     (("StateDirectory", "sglang"), ("Environment", "HOME=/var/lib/sglang")), "invalid config"),
    ("tmpdir_root", "TMPDIR=/root", "", "", (("Environment", "TMPDIR=/root"),),
     "invalid config"),
    ("working_directory_root", "WorkingDirectory=/root (not readable for it)", "", "",
     (("WorkingDirectory", "/root"),), "invalid config"),
    ("dynamic_user", "DynamicUser=yes in place of User=nobody", "", "",
     (("DynamicUser", "yes"),), "invalid config"),
)  # fmt: skip


def cases50(real: RealSglang) -> list[Case]:
    """The fiftieth batch, by rule: the server as a systemd service under a service account
    (``User=nobody``), with the files it needs left as root made them or made private one at a
    time (:data:`SERVICE_USER_CASES`); no flag changed but ``--model-path``, the case's copy.
    Expected, by what the account cannot do: read the model, *model access denied*; import the
    install, *broken install*; run the program, *service setup failed*; anything else (write its
    home, its temporary files), *invalid config*."""
    return _as_service_account("user", ())


#: The fifty-first batch's baseline: the account given a home of its own (the fiftieth's one
#: control), so that each break is met by a start that otherwise serves.
OWN_HOME = (("StateDirectory", "sglang"), ("Environment", "HOME=/var/lib/sglang"))


def cases51(real: RealSglang) -> list[Case]:
    """The fifty-first batch, by rule: the fiftieth's cases but its own control, each on a
    baseline that serves (:data:`OWN_HOME`; the fiftieth's baseline, ``nobody``'s ``HOME`` of
    ``/nonexistent``, failed first in every case that did not set one, so that the model's
    breaks were never reached). A case's own ``Environment=HOME=`` comes after the baseline's
    and wins. Expected as the fiftieth's."""
    return _as_service_account("home", OWN_HOME, leave_out=("home_state_directory",))


#: The fifty-third batch's cases, fixed before its capture: (id, ``[Service]`` settings). Each
#: puts a place the server or its libraries may write on a small or inode-poor tmpfs of its own
#: (``TemporaryFileSystem=PATH:OPTIONS``), as a full disk, a container's small ``/dev/shm`` or
#: an exhausted inode table leaves it; or points ``HOME``, ``TMPDIR`` or a cache variable at one.
#: Sizes from a page to docker's default ``/dev/shm`` (64M). Expected for every failure: *no
#: space left* (whatever the server meets, it meets because a place it writes is full). The
#: caches are reached by ``XDG_CACHE_HOME``, not by mounting over ``/root/.cache``: the tier's
#: install and model live under it (fixed while the first capture ran, before any record was
#: read, one outcome printed, ``tmp_4k`` ready: the first draft's four such cases would have
#: hidden the program, not filled a disk; every case was captured again).
STORAGE_CASES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("tmp_4k", (("TemporaryFileSystem", "/tmp:size=4k"),)),
    ("tmp_64k", (("TemporaryFileSystem", "/tmp:size=64k"),)),
    ("tmp_1m", (("TemporaryFileSystem", "/tmp:size=1M"),)),
    ("tmp_64m", (("TemporaryFileSystem", "/tmp:size=64M"),)),
    ("tmp_4_inodes", (("TemporaryFileSystem", "/tmp:nr_inodes=4"),)),
    ("shm_4k", (("TemporaryFileSystem", "/dev/shm:size=4k"),)),
    ("shm_64k", (("TemporaryFileSystem", "/dev/shm:size=64k"),)),
    ("shm_1m", (("TemporaryFileSystem", "/dev/shm:size=1M"),)),
    ("shm_64m", (("TemporaryFileSystem", "/dev/shm:size=64M"),)),
    ("shm_4_inodes", (("TemporaryFileSystem", "/dev/shm:nr_inodes=4"),)),
    ("cache_4k", (("TemporaryFileSystem", "/mnt:size=4k"), ("Environment", "XDG_CACHE_HOME=/mnt"))),
    ("cache_64k",
     (("TemporaryFileSystem", "/mnt:size=64k"), ("Environment", "XDG_CACHE_HOME=/mnt"))),
    ("cache_1m", (("TemporaryFileSystem", "/mnt:size=1M"), ("Environment", "XDG_CACHE_HOME=/mnt"))),
    ("cache_4_inodes",
     (("TemporaryFileSystem", "/mnt:nr_inodes=4"), ("Environment", "XDG_CACHE_HOME=/mnt"))),
    ("var_tmp_4k", (("TemporaryFileSystem", "/var/tmp:size=4k"),)),
    ("home_4k", (("TemporaryFileSystem", "/mnt:size=4k"), ("Environment", "HOME=/mnt"))),
    ("home_4_inodes", (("TemporaryFileSystem", "/mnt:nr_inodes=4"), ("Environment", "HOME=/mnt"))),
    ("tmpdir_4k", (("TemporaryFileSystem", "/mnt:size=4k"), ("Environment", "TMPDIR=/mnt"))),
    ("hf_home_4k", (("TemporaryFileSystem", "/mnt:size=4k"), ("Environment", "HF_HOME=/mnt"))),
    ("triton_cache_4k",
     (("TemporaryFileSystem", "/mnt:size=4k"), ("Environment", "TRITON_CACHE_DIR=/mnt"))),
    ("inductor_cache_4k",
     (("TemporaryFileSystem", "/mnt:size=4k"), ("Environment", "TORCHINDUCTOR_CACHE_DIR=/mnt"))),
)  # fmt: skip


def cases53(real: RealSglang) -> list[Case]:
    """The fifty-third batch, by rule: the server as a systemd service on the test host, each
    of :data:`STORAGE_CASES` (a place it writes, full or out of inodes) alone; no flag changed.
    Expected: *no space left*."""
    return _on_small_mounts("storage", STORAGE_CASES)


def _on_small_mounts(
    prefix: str, cases: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
) -> list[Case]:
    """``cases`` (id, ``[Service]`` settings) as cases ``<prefix>_<id>``, expected *no space
    left*."""
    return [
        Case(id=f"{prefix}_{id_}", fault="the unit's " + " ".join(f"{k}={v}" for k, v in settings)
             + " (a systemd service on the test host, its journal the record)", argv=(),
             expected="no space left", unit=settings)
        for id_, settings in cases
    ]  # fmt: skip


#: The fifty-fourth batch's cases, fixed before its capture, after the fifty-third's family: the
#: fifty-third's source drawn again at other sizes and inode counts (on the CPU path a page of
#: most places was enough, an inode or a page of ``/dev/shm`` was not), to measure what that
#: source's reading holds on records it was not written from. Expected: *no space left*.
STORAGE_CASES_AGAIN: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("shm_8k", (("TemporaryFileSystem", "/dev/shm:size=8k"),)),
    ("shm_16k", (("TemporaryFileSystem", "/dev/shm:size=16k"),)),
    ("shm_32k", (("TemporaryFileSystem", "/dev/shm:size=32k"),)),
    ("shm_2_inodes", (("TemporaryFileSystem", "/dev/shm:nr_inodes=2"),)),
    ("tmp_2_inodes", (("TemporaryFileSystem", "/tmp:nr_inodes=2"),)),
    ("tmp_8_inodes", (("TemporaryFileSystem", "/tmp:nr_inodes=8"),)),
    ("tmp_16_inodes", (("TemporaryFileSystem", "/tmp:nr_inodes=16"),)),
    ("tmp_64_inodes", (("TemporaryFileSystem", "/tmp:nr_inodes=64"),)),
    ("home_2_inodes", (("TemporaryFileSystem", "/mnt:nr_inodes=2"), ("Environment", "HOME=/mnt"))),
    ("home_8_inodes", (("TemporaryFileSystem", "/mnt:nr_inodes=8"), ("Environment", "HOME=/mnt"))),
    ("home_16_inodes",
     (("TemporaryFileSystem", "/mnt:nr_inodes=16"), ("Environment", "HOME=/mnt"))),
    ("home_64_inodes",
     (("TemporaryFileSystem", "/mnt:nr_inodes=64"), ("Environment", "HOME=/mnt"))),
    ("cache_8_inodes",
     (("TemporaryFileSystem", "/mnt:nr_inodes=8"), ("Environment", "XDG_CACHE_HOME=/mnt"))),
    ("tmpdir_4_inodes",
     (("TemporaryFileSystem", "/mnt:nr_inodes=4"), ("Environment", "TMPDIR=/mnt"))),
    ("hf_home_4_inodes",
     (("TemporaryFileSystem", "/mnt:nr_inodes=4"), ("Environment", "HF_HOME=/mnt"))),
    ("triton_cache_4_inodes",
     (("TemporaryFileSystem", "/mnt:nr_inodes=4"), ("Environment", "TRITON_CACHE_DIR=/mnt"))),
    ("inductor_cache_4_inodes",
     (("TemporaryFileSystem", "/mnt:nr_inodes=4"),
      ("Environment", "TORCHINDUCTOR_CACHE_DIR=/mnt"))),
    ("var_tmp_4_inodes", (("TemporaryFileSystem", "/var/tmp:nr_inodes=4"),)),
    ("home_and_tmp_4k", (("TemporaryFileSystem", "/mnt:size=4k"), ("Environment", "HOME=/mnt"),
                         ("TemporaryFileSystem", "/tmp:size=4k"))),
)  # fmt: skip


def cases54(real: RealSglang) -> list[Case]:
    """The fifty-fourth batch, by rule: :data:`STORAGE_CASES_AGAIN` as the fifty-third's cases
    (the fifty-third's source at other sizes); no flag changed. Expected: *no space left*."""
    return _on_small_mounts("again", STORAGE_CASES_AGAIN)


#: The fifty-fifth batch's modules, fixed before its capture: each left in the unit's working
#: directory as a stray file (``NAME.py``, empty) or an empty package (``NAME/__init__.py``), as
#: a script or a clone of a repository leaves one there. ``python -m`` puts the working
#: directory first on ``sys.path``, so each shadows the module of that name the server or a
#: library imports, installed or standard; a name nothing imports serves. Expected for every
#: failure: *broken install* (what Python imports is not what was installed).
SHADOWING_FILES: tuple[str, ...] = (
    "torch.py", "numpy.py", "zmq.py", "transformers/__init__.py", "sglang/__init__.py",
    "fastapi.py", "uvicorn.py", "requests.py", "psutil.py", "safetensors.py", "json.py",
    "logging.py", "queue.py", "random.py", "triton.py", "tokenizers.py", "aiohttp.py",
    "pydantic.py", "setproctitle.py", "config.py",
)  # fmt: skip


def cases55(real: RealSglang) -> list[Case]:
    """The fifty-fifth batch, by rule: the server as the forty-ninth's systemd service with
    ``WorkingDirectory=/srv/wd``, that directory holding one of :data:`SHADOWING_FILES` (empty);
    no flag changed. Expected: *broken install*."""
    cases = []
    for name in SHADOWING_FILES:
        path = shlex.quote(f"/srv/wd/{name}")
        cases.append(
            Case(id="shadow_" + re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_"),
                 fault=f"a stray {name} (empty) in the unit's WorkingDirectory=/srv/wd (a systemd"
                 " service on the test host, its journal the record)", argv=(),
                 expected="broken install", unit=(("WorkingDirectory", "/srv/wd"),),
                 host_setup=f"mkdir -p $(dirname {path}) && touch {path}",
                 host_undo="rm -rf /srv/wd")
        )  # fmt: skip
    return cases


#: The fifty-sixth batch's layout: the tiny model as the Hugging Face hub's cache holds a download
#: (``HF_HOME/hub/models--tiny--llama``: ``blobs/`` named by content, ``snapshots/<revision>/``
#: of relative links to them, ``refs/main`` naming the revision), read offline by its id.
HUB_ID = "tiny/llama"
HUB_REVISION = "0123456789abcdef0123456789abcdef01234567"
HUB_OTHER_REVISION = "89abcdef0123456789abcdef0123456789abcdef"

#: Rule B of the fifty-sixth batch: where the server is pointed at the cache, or the cache is
#: pointed at, as a person gets it wrong: (id, fault, argv, environment), ``{hub_home}`` the
#: cache's ``HF_HOME``, ``{hub_repo}`` the model's folder in it. Expected: *model not found*.
HUB_MISTAKES: tuple[tuple[str, str, tuple[str, ...], tuple[tuple[str, str], ...]], ...] = (
    ("id_cased", "the id typed in another case", ("--model-path", "Tiny/Llama"), ()),
    ("id_without_org", "the id without its owner", ("--model-path", "llama"), ()),
    ("revision_branch_absent", "--revision names a branch the cache never held",
     ("--revision", "v2"), ()),
    ("revision_commit_absent", "--revision names a commit the cache never held",
     ("--revision", HUB_OTHER_REVISION), ()),
    ("hf_home_is_hub", "HF_HOME set to the cache's hub folder", (),
     (("HF_HOME", "{hub_home}/hub"),)),
    ("hub_cache_is_home", "HF_HUB_CACHE set to HF_HOME, one folder above the hub",
     (), (("HF_HUB_CACHE", "{hub_home}"),)),
    ("download_dir_home", "--download-dir given HF_HOME, HF_HOME unset",
     ("--download-dir", "{hub_home}"), (("HF_HOME", ""),)),
    ("download_dir_hub", "--download-dir given the hub folder, HF_HOME unset",
     ("--download-dir", "{hub_home}/hub"), (("HF_HOME", ""),)),
    ("path_repo_folder", "--model-path given the model's folder in the cache",
     ("--model-path", "{hub_repo}"), ()),
    ("path_snapshots_folder", "--model-path given the cache's snapshots folder",
     ("--model-path", "{hub_repo}/snapshots"), ()),
    ("path_blobs_folder", "--model-path given the cache's blobs folder",
     ("--model-path", "{hub_repo}/blobs"), ()),
    ("tokenizer_id_absent", "--tokenizer-path an id the cache never held",
     ("--tokenizer-path", "tiny/tokenizer"), ()),
)  # fmt: skip

#: Rule C: controls, the cache read as a person rightly points at it.
HUB_RIGHT: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("by_id", "the id, offline, from the cache", ()),
    ("by_snapshot", "--model-path given the snapshot folder", ("--model-path", "{hub_snapshot}")),
    ("revision_main", "--revision main", ("--revision", "main")),
    ("revision_commit", "--revision the snapshot's commit", ("--revision", HUB_REVISION)),
    ("tokenizer_id", "--tokenizer-path the model's id", ("--tokenizer-path", HUB_ID)),
)  # fmt: skip


def cases56(real: RealSglang) -> list[Case]:
    """The fifty-sixth batch, by rule: the tiny model as the hub's cache holds it, the server
    given its id (:data:`HUB_ID`) offline. A, each of :data:`MODEL_FILES` with its blob gone
    (a pruned cache: the snapshot's link dangling) and with its link never made (a download that
    left it out), expected as the fourteenth batch's removed file; the cache's refs, its blobs
    or its snapshot wrong as a copy or an earlier partial download leaves them (the config and
    weights only: *tokenizer*; the JSON files only: *model loading*; else *model not found*).
    B, :data:`HUB_MISTAKES`. C, :data:`HUB_RIGHT` (expected to serve)."""
    out: list[Case] = []
    for name in MODEL_FILES:
        expected = MISSING_CONFIG if name == "config.json" else FILE_CAUSE[name]
        for how, fault in (
            ("blob_removed", "its blob gone, the snapshot's link dangling"),
            ("link_removed", "never downloaded, no link in the snapshot"),
        ):
            out.append(_hub_case(f"{how}_{_flag_id(name)}", f"{name}: {fault}",
                                 expected, f"{how}:{name}"))  # fmt: skip
    for how, fault, expected in (
        ("ref_unknown", "refs/main names a revision with no snapshot", MISSING_CONFIG),
        ("ref_removed", "no refs/main (a cache copied without its refs)", MISSING_CONFIG),
        ("blobs_removed", "the snapshot copied without the blobs its links name", MISSING_CONFIG),
        (
            "weights_only",
            "refs/main names a snapshot of config.json and the weights only",
            "tokenizer",
        ),
        (
            "json_only",
            "refs/main names a snapshot of the JSON files only (no weights)",
            "model loading",
        ),
    ):
        out.append(_hub_case(how, fault, expected, how))
    for id_, fault, argv, env in HUB_MISTAKES:
        out.append(_hub_case(id_, fault, MISSING_CONFIG, "whole", argv, env))
    for id_, fault, argv in HUB_RIGHT:
        out.append(_hub_case(f"right_{id_}", fault, "serves", "whole", argv))
    return out


#: What the fifty-ninth batch sets: the hub's client and transformers online (0.5.23's tier
#: sets both offline), on a server whose network namespace reaches nothing but loopback.
ONLINE = (("HF_HUB_OFFLINE", "0"), ("TRANSFORMERS_OFFLINE", "0"))


def cases59(real: RealSglang) -> list[Case]:
    """The fifty-ninth batch, by rule: the fifty-sixth's cases again, the hub's client online
    (:data:`ONLINE`) on a host that reaches no network, as a GPU host without internet access
    runs a server whose unit does not say offline. Expected: the fifty-sixth's."""
    return [
        dataclasses.replace(
            case, id="online_" + case.id.removeprefix("hub_"), env=(*case.env, *ONLINE),
            fault=case.fault.replace("read offline", "read online with no network", 1),
        )
        for case in cases56(real)
    ]  # fmt: skip


def _hub_case(
    id_: str, fault: str, expected: str, how: str, argv: tuple[str, ...] = (),
    env: tuple[tuple[str, str], ...] = (),
) -> Case:  # fmt: skip
    """A fifty-sixth batch's case: the cache laid out ``how`` (:func:`_hub_cache`), the server
    given the model's id and ``HF_HOME`` unless ``argv`` and ``env`` say otherwise."""
    settings = dict((("HF_HOME", "{hub_home}"), *env))
    settings = {key: value for key, value in settings.items() if value}  # "": left unset
    return Case(
        id=f"hub_{id_}", fault=f"the model as the hub's cache holds it, read offline: {fault}",
        argv=("--model-path", HUB_ID, *argv), expected=expected, hub=how,
        env=tuple(settings.items()),
    )  # fmt: skip


def _hub_cache(source: Path, home: Path, how: str) -> tuple[Path, Path]:
    """The model at ``source`` as the hub's cache under ``home`` holds it, laid out ``how``
    (:func:`cases56`); returns its folder and its snapshot's."""
    repo = home / "hub" / ("models--" + HUB_ID.replace("/", "--"))
    snapshot = repo / "snapshots" / HUB_REVISION
    snapshot.mkdir(parents=True)
    (repo / "blobs").mkdir()
    what, _, name = how.partition(":")
    keep = {
        "weights_only": ("config.json", "generation_config.json", "model.safetensors"),
        "json_only": tuple(n for n in MODEL_FILES if n.endswith(".json")),
    }.get(what, MODEL_FILES)
    revision = HUB_REVISION
    if what in ("weights_only", "json_only"):  # the full download under another revision
        shutil.copytree(source, repo / "snapshots" / HUB_OTHER_REVISION)
    for file in MODEL_FILES:
        data = (source / file).read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        if file not in keep or (what == "link_removed" and file == name):
            continue
        if not (what == "blob_removed" and file == name):
            blob.write_bytes(data)
        (snapshot / file).symlink_to(Path("../../blobs") / blob.name)
    if what == "blobs_removed":
        shutil.rmtree(repo / "blobs")
    if what == "ref_unknown":
        revision = HUB_OTHER_REVISION
    if what != "ref_removed":
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(revision)
    return repo, snapshot


#: The fifty-seventh batch's libraries, fixed before its capture: a seeded sample
#: (``random.Random("56:mapped").sample(sorted(names), 24)``) of the 186 shared objects of the
#: tier's venv that a serving server's processes had mapped once it was ready (read from
#: ``/proc/<pid>/maps`` of its tree, on this machine, 2026-12-07), under ``site-packages``.
MAPPED_LIBRARIES: tuple[str, ...] = (
    "scipy/linalg/_decomp_interpolative.cpython-311-x86_64-linux-gnu.so",
    "scipy/_cyutility.cpython-311-x86_64-linux-gnu.so",
    "pillow.libs/libharfbuzz-fb49c9fc.so.0.61450.0",
    "numpy/fft/_pocketfft_umath.cpython-311-x86_64-linux-gnu.so",
    "zstandard/backend_c.cpython-311-x86_64-linux-gnu.so",
    "scipy/special/_ufuncs_cxx.cpython-311-x86_64-linux-gnu.so",
    "numpy.libs/libscipy_openblas64_-fdde5778.so",
    "scipy.libs/libquadmath-828275a7.so.0.0.0",
    "torch/lib/libshm.so",
    "torchaudio/lib/_torchaudio.abi3.so",
    "scipy/spatial/_qhull.cpython-311-x86_64-linux-gnu.so",
    "aiohttp/_http_parser.cpython-311-x86_64-linux-gnu.so",
    "torchcodec.libs/libavif-e4168294.so.16.4.2",
    "scipy/linalg/_flapack.cpython-311-x86_64-linux-gnu.so",
    "aiohttp/_http_writer.cpython-311-x86_64-linux-gnu.so",
    "_cffi_backend.cpython-311-x86_64-linux-gnu.so",
    "PIL/_imaging.cpython-311-x86_64-linux-gnu.so",
    "nvidia/nccl/lib/libnccl.so.2",
    "torchcodec.libs/libpng16-37856f38.so.16.58.0",
    "cuda/bindings/cynvrtc.cpython-311-x86_64-linux-gnu.so",
    "scipy/linalg/_batched_linalg.cpython-311-x86_64-linux-gnu.so",
    "pillow.libs/libpng16-1d1ba958.so.16.58.0",
    "scipy/fft/_pocketfft/pypocketfft.cpython-311-x86_64-linux-gnu.so",
    "scipy.libs/libscipy_openblas-6cdc3b4a.so",
)
#: How each library is broken, by its place in :data:`MAPPED_LIBRARIES` (``i % 3``), each as a
#: copy or a download leaves one: its first half only (a copy cut off), empty (a disk full as it
#: was written), and a proxy's error page saved in its place.
LIBRARY_BREAKS: tuple[tuple[str, str], ...] = (
    ("truncated", 'head -c "$(( $(stat -c %s {library}) / 2 ))" {library} > {broken}'),
    ("emptied", ": > {broken}"),
    ("error_page", "printf '%s\\n' '<!DOCTYPE html>' '<html><body><h1>403 Forbidden</h1>"
     "</body></html>' > {broken}"),
)  # fmt: skip


def cases57(real: RealSglang) -> list[Case]:
    """The fifty-seventh batch, by rule: the server as the forty-ninth's systemd service, one of
    :data:`MAPPED_LIBRARIES` broken as :data:`LIBRARY_BREAKS` says; no flag changed. Expected:
    *broken install*."""
    return _broken_in_place(real, "library", MAPPED_LIBRARIES)


#: The fifty-eighth batch's modules, fixed before its capture: a seeded sample
#: (``random.Random("58:imported").sample(sorted(files), 24)``) of the 7253 Python source files
#: of the tier's venv that a server imported by the time it was ready (``PYTHONPROFILEIMPORTTIME``
#: in every process of its tree, each module's ``.py`` or package ``__init__.py`` under
#: ``site-packages``, on this machine, 2026-12-07).
IMPORTED_MODULES: tuple[str, ...] = (
    "torch/_functorch/_aot_autograd/graph_compile.py",
    "openai/types/realtime/response_content_part_done_event.py",
    "sympy/polys/domains/pythonrational.py",
    "torch/_dynamo/variables/torch.py",
    "sglang/srt/configs/bailing_moe_v2.py",
    "sympy/matrices/expressions/_shape.py",
    "openai/types/graders/text_similarity_grader_param.py",
    "PIL/ImagePalette.py",
    "transformers/models/glmasr/modeling_glmasr.py",
    "networkx/algorithms/bipartite/projection.py",
    "sglang/srt/models/deepseek_v4_platform_stage.py",
    "flashinfer/gemm/cake_grouped_fp8_fused_silu_quant.py",
    "torch/utils/_pallas.py",
    "sglang/srt/arg_groups/cp_tp_group_sharing_hook.py",
    "sglang/kernels/ops/speculative/reject_sampling.py",
    "sglang/srt/arg_groups/model_overrides/exaone.py",
    "aiohttp/tcp_helpers.py",
    "sympy/strategies/rl.py",
    "flashinfer/triton/kernels/cascade.py",
    "networkx/algorithms/link_analysis/__init__.py",
    "transformers/integrations/compressed_tensors.py",
    "networkx/algorithms/components/strongly_connected.py",
    "triton/experimental/gluon/language/amd/gfx1250/tdm.py",
    "sympy/logic/inference.py",
)


def cases58(real: RealSglang) -> list[Case]:
    """The fifty-eighth batch, by rule: the fifty-seventh's, for the install's Python source
    files: one of :data:`IMPORTED_MODULES` broken as :data:`LIBRARY_BREAKS` says; no flag
    changed. Expected: *broken install*."""
    return _broken_in_place(real, "module", IMPORTED_MODULES, ".py")


def _broken_in_place(
    real: RealSglang, prefix: str, names: tuple[str, ...], suffix: str = ".so"
) -> list[Case]:
    """A case ``<prefix>_<how>_<name>`` for each file of the venv's ``site-packages`` in
    ``names``, broken as :data:`LIBRARY_BREAKS` says by its place: the broken copy bound over the
    file in the unit's own mount namespace (``BindReadOnlyPaths=``), so the host's install is
    left as it is. Expected: *broken install*."""
    site = real.venv / "lib" / "python3.11" / "site-packages"
    cases = []
    for index, name in enumerate(names):
        how, command = LIBRARY_BREAKS[index % len(LIBRARY_BREAKS)]
        library, broken = site / name, f"/var/tmp/sgl-broken/{index}{suffix}"
        stem = re.split(r"\.(?:cpython-|abi3\.|so\b)", name)[0]
        ident = re.sub(r"[^a-z0-9]+", "_", stem.lower()).strip("_")
        cases.append(
            Case(id=f"{prefix}_{how}_{ident}",
                 fault=f"site-packages/{name} {how.replace('_', ' ')} (a systemd service on the"
                 " test host, its journal the record)", argv=(), expected="broken install",
                 unit=(("BindReadOnlyPaths", f"{broken}:{library}"),),
                 host_setup="mkdir -p /var/tmp/sgl-broken && " + _filled(
                     command, {"library": shlex.quote(str(library)), "broken": broken}),
                 host_undo="rm -rf /var/tmp/sgl-broken")
        )  # fmt: skip
    return cases


def _as_service_account(
    prefix: str, baseline: tuple[tuple[str, str], ...], leave_out: tuple[str, ...] = ()
) -> list[Case]:
    """:data:`SERVICE_USER_CASES` as cases ``<prefix>_<id>``, each unit given ``baseline``
    settings after its account."""
    user = ("User", "nobody")  # the one account every case runs as
    opened = "chmod 711 /root && mkdir -p /srv/models && cp -r {model} {copy}"
    opened += " && chmod 755 {copy} && chmod 644 {copy}/*"
    return [
        Case(id=f"{prefix}_{id_}", fault=f"the unit's User=nobody, {what} (a systemd service on"
             " the test host, its journal the record)", argv=("--model-path", "{copy}"),
             expected=expected,
             unit=(*(() if dict(settings).get("DynamicUser") else (user,)), *baseline, *settings),
             host_setup=f"{opened} && {setup}" if setup else opened,
             host_undo=f"{undo + ' ; ' if undo else ''}rm -rf {{copy}} ; chmod 700 /root")
        for id_, what, setup, undo, settings, expected in SERVICE_USER_CASES
        if id_ not in leave_out
    ]  # fmt: skip


def _tripled(real: RealSglang, seed: int, prefix: str, count: int) -> list[Case]:
    """A seeded sample of ``count`` triples of :func:`_settings` (but :data:`NEVER_READY`) on
    three different flags, each changed together, as cases expected to read *invalid config*."""
    settings = [s for s in _settings(real) if s[0] not in NEVER_READY]
    draw = random.Random(seed)
    triples: list[tuple[tuple[str, ...], ...]] = []
    while len(triples) < count:
        triple = tuple(sorted(draw.sample(settings, 3)))
        if len({s[0] for s in triple}) == 3 and triple not in triples:
            triples.append(triple)
    return [_changed_together(prefix, triple) for triple in triples]


def _paired(settings: list[tuple[str, ...]], seed: int, prefix: str, count: int = 50) -> list[Case]:
    """A seeded sample of ``count`` pairs of ``settings`` on two different flags, each pair
    changed together, as cases expected to read *invalid config*."""
    draw = random.Random(seed)
    pairs: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    while len(pairs) < count:
        first, second = sorted(draw.sample(settings, 2))
        if first[0] != second[0] and (first, second) not in pairs:
            pairs.append((first, second))
    return [
        Case(id=f"{prefix}_{_setting_id(a)}__{_setting_id(b)}", fault=" ".join((*a, *b)),
             argv=(*a, *b), expected="invalid config")
        for a, b in pairs
    ]  # fmt: skip


def _setting_id(setting: tuple[str, ...]) -> str:
    return "_".join((_flag_id(setting[0]), *(_value_id(value) for value in setting[1:])))


def _wrong_type(value: object) -> object:
    return WRONG_TYPE_NUMBER if isinstance(value, str) else WRONG_TYPE_STRING


def _shard(target: Path, how: str) -> None:
    """``target``'s ``model.safetensors`` as :data:`SHARDS` and :data:`SHARD_INDEX` (its tensors
    by name, the first half in the first shard), then broken ``how`` (:data:`SHARD_BREAKS`)."""
    whole = target / "model.safetensors"
    header, data = _safetensors(whole)
    names = sorted(k for k in header if k != "__metadata__")
    halves = (names[: len(names) // 2], names[len(names) // 2 :])
    weight_map: dict[str, str] = {}
    for shard, part in zip(SHARDS, halves):
        out_header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
        chunks: list[bytes] = []
        at = 0
        for key in part:
            info = dict(header[key])
            begin, end = info["data_offsets"]
            info["data_offsets"] = [at, at + end - begin]
            out_header[key] = info
            chunks.append(data[begin:end])
            at += end - begin
            weight_map[key] = shard
        encoded = json.dumps(out_header).encode()
        encoded += b" " * (-len(encoded) % 8)
        (target / shard).write_bytes(
            len(encoded).to_bytes(8, "little") + encoded + b"".join(chunks)
        )
    whole.unlink()
    index: dict[str, Any] = {"metadata": {"total_size": len(data)}, "weight_map": weight_map}
    second = target / SHARDS[1]
    if how == "index_names_other_shard":
        index["weight_map"] = {
            k: v.replace("-of-00002", "-of-00003") if v == SHARDS[1] else v
            for k, v in weight_map.items()
        }
    elif how == "index_without_weight_map":
        del index["weight_map"]
    (target / SHARD_INDEX).write_text(json.dumps(index, indent=2))
    if how == "second_shard_removed":
        second.unlink()
    elif how == "second_shard_truncated":
        second.write_bytes(second.read_bytes()[: second.stat().st_size // 2])
    elif how == "second_shard_empty":
        second.write_bytes(b"")
    elif how == "second_shard_garbage":
        second.write_bytes(random.Random(f"{SEED}:{SHARDS[1]}").randbytes(64))
    elif how == "index_truncated":
        raw = (target / SHARD_INDEX).read_bytes()
        (target / SHARD_INDEX).write_bytes(raw[: len(raw) // 2])
    elif how == "index_removed":
        (target / SHARD_INDEX).unlink()


def _python_path(root: Path, case: Case, rest: str) -> str:
    """The server's ``PYTHONPATH``: ``root`` with the case's shadows and old version, then
    ``rest`` (the tier's own)."""
    root.mkdir(parents=True, exist_ok=True)
    for module in case.shadow:
        (root / module).mkdir()
        (root / module / "__init__.py").write_text("")
    if case.old_version is not None:
        info = root / f"{re.sub(r'[-_.]+', '_', case.old_version)}-{OLD_VERSION}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {case.old_version}\nVersion: {OLD_VERSION}\n"
        )
    return f"{root}:{rest}" if rest else str(root)


def _processes_titled(root: int, title: str) -> list[int]:
    """The descendants of ``root`` whose command line (their title) starts with ``title``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            cmdline = (Path("/proc") / str(pid) / "cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.replace(b"\0", b" ").strip().startswith(title.encode()):
            found.append(pid)
    return found


def _break_model(source: Path, target: Path, name: str, how: str) -> None:
    shutil.copytree(source, target)
    if name == "sharded":
        _shard(target, how)
        return
    path = target / name
    if how.startswith("without:"):
        config = json.loads(path.read_text())
        del config[how.partition(":")[2]]
        path.write_text(json.dumps(config, indent=2))
    elif how.startswith("doubled:"):
        config = json.loads(path.read_text())
        config[how.partition(":")[2]] *= 2
        path.write_text(json.dumps(config, indent=2))
    elif how.startswith("architecture:"):
        config = json.loads(path.read_text())
        config["architectures"] = [how.partition(":")[2]]
        path.write_text(json.dumps(config, indent=2))
    elif how.startswith("set:"):
        config = json.loads(path.read_text())
        key, _, value = how.partition(":")[2].partition("=")
        config[key] = json.loads(value)
        path.write_text(json.dumps(config, indent=2))
    elif how.startswith("retyped:"):
        config = json.loads(path.read_text())
        key = how.partition(":")[2]
        config[key] = _wrong_type(config[key])
        path.write_text(json.dumps(config, indent=2))
    elif how.startswith(("tensor_without:", "tensor_halved:")):
        _rewrite_tensor(path, *how.split(":", 1))
    elif how == "removed":
        path.unlink()
    elif how == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes(random.Random(f"{SEED}:{name}").randbytes(64))


def _safetensors(path: Path) -> tuple[dict[str, Any], bytes]:
    """A safetensors file's header (name -> dtype, shape, data_offsets) and its data."""
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    return json.loads(raw[8 : 8 + size]), raw[8 + size :]


def _rewrite_tensor(path: Path, how: str, name: str) -> None:
    """The safetensors file without tensor ``name`` (``tensor_without``), or with its first
    dimension halved (``tensor_halved``: its first rows kept, as a smaller model's would be)."""
    header, data = _safetensors(path)
    out_header: dict[str, Any] = {"__metadata__": header.pop("__metadata__", {})}
    chunks: list[bytes] = []
    at = 0
    for key in sorted(header, key=lambda k: header[k]["data_offsets"][0]):
        info = dict(header[key])
        begin, end = info["data_offsets"]
        chunk = data[begin:end]
        if key == name and how == "tensor_without":
            continue
        if key == name:
            info["shape"] = [info["shape"][0] // 2, *info["shape"][1:]]
            chunk = chunk[: len(chunk) // 2]
        info["data_offsets"] = [at, at + len(chunk)]
        out_header[key] = info
        chunks.append(chunk)
        at += len(chunk)
    encoded = json.dumps(out_header).encode()
    encoded += b" " * (-len(encoded) % 8)
    path.write_bytes(len(encoded).to_bytes(8, "little") + encoded + b"".join(chunks))


def _mount_full_disk(path: Path) -> None:
    """A 1 MiB tmpfs at ``path``, filled: every write to it fails with ENOSPC."""
    path.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(path)], check=True)
    with (path / "filler").open("wb") as filler:
        try:
            while True:
                filler.write(b"\0" * 65536)
                filler.flush()
        except OSError:
            pass


def _address_space_cap(limit: int | None):  # type: ignore[no-untyped-def]
    """A ``preexec_fn`` capping the child's address space, or None for no cap."""
    if limit is None:
        return None

    def cap() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return cap


def _after_ready(proc: subprocess.Popen[bytes], log_path: Path) -> str:
    """``ready``; or ``ready, then died`` for a server that, within AFTER_READY_S, ends or says
    it is ending its tree (``SIGQUIT received``: 0.5.23 then waits a minute for diagnostics)."""
    deadline = time.monotonic() + AFTER_READY_S
    while time.monotonic() < deadline:
        after = log_path.read_text(errors="replace").partition(READY)[2]
        if proc.poll() is not None or _TREE_ENDING.search(after):
            return "ready, then died"
        time.sleep(0.5)
    return "ready"


_TREE_ENDING = re.compile(r"SIGQUIT received|Received sigquit|scheduler is dead")


#: A command prefix: a new network namespace with loopback up, then the command (same pid).
ISOLATED = ("unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "isolated")


#: The lowest port the server is given: below the kernel's ephemeral range, as the plugin's own
#: ``free_port`` picks (pytest_sglang.lifecycle.launch_plan).
PORT_LOW = 20000


def _free_port() -> int:
    """A port nothing listens on, below the ephemeral range: a port ``bind(0)`` hands out is one
    an outgoing connection of the server's own processes (torch.distributed's store client, in
    the server's own network namespace) may take before the server binds it, which the
    thirty-third batch's first capture of one pair met as ``[Errno 98] address already in use``."""
    try:
        low, _ = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        ephemeral_low = int(low)
    except (OSError, ValueError):
        ephemeral_low = 32768
    for port in random.sample(range(PORT_LOW, ephemeral_low), 64):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port between {PORT_LOW} and {ephemeral_low}")


#: Flags that change the model's directory itself: ``--delete-ckpt-after-loading`` deletes the
#: checkpoint once it is loaded (the thirty-fifth batch's first capture lost the shared tiny model
#: to it, and every case after it failed for that). A case with one runs on a copy of its own.
CHANGES_THE_MODEL = ("--delete-ckpt-after-loading",)


def capture(
    real: RealSglang,
    case: Case,
    out_dir: Path,
    scratch: Path,
    isolated: bool = False,
    *,
    batch: int = 14,
    host: SystemdTestHost | None = None,
) -> dict[str, object]:
    """Run one case to its end (exit, ready or timeout) and keep its output verbatim.

    ``isolated`` (from the eighteenth batch on): the server runs in a network namespace of its
    own with only loopback up, so that whatever a broken setting makes it reach for stays on
    this machine (``unshare`` and ``ip``, as root). A case with :attr:`Case.unit` settings runs
    as a systemd service on ``host`` instead (:mod:`unit_capture`), and its log is the unit's
    journal."""
    if not (real.model / "config.json").exists():
        raise RuntimeError(f"the tiny model {real.model} is gone: no case can be captured on it")
    model = real.model
    if case.model_break is not None:
        model = scratch / case.id
        _break_model(real.model, model, *case.model_break)
    elif any(flag in case.argv for flag in CHANGES_THE_MODEL):
        model = scratch / case.id
        shutil.copytree(real.model, model)  # the case's own copy, for the flag to change
    qwen2 = scratch / "as_qwen2"
    if not qwen2.exists():
        shutil.copytree(real.model, qwen2)
        config = json.loads((qwen2 / "config.json").read_text())
        config.update(architectures=["Qwen2ForCausalLM"], model_type="qwen2")
        (qwen2 / "config.json").write_text(json.dumps(config, indent=2))
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    empty_dir = scratch / "empty"
    empty_dir.mkdir(exist_ok=True)
    tokenizer_only = scratch / "tokenizer_only"
    if not tokenizer_only.exists():
        tokenizer_only.mkdir()
        for name in ("special_tokens_map.json", *TOKENIZER_FILES):
            shutil.copy(real.model / name, tokenizer_only / name)
    templates = scratch / "templates"
    templates.mkdir(exist_ok=True)
    for name, data in CHAT_TEMPLATE_FILES.items():
        (templates / name).write_bytes(data)
    files = scratch / "files" / case.id
    files.mkdir(parents=True, exist_ok=True)
    for name, text in case.files:
        if name.endswith("/"):
            (files / name).mkdir()
        else:
            (files / name).write_text(text)
    values = {
        "files": str(files),
        "templates": str(templates),
        "model": str(real.model),
        "empty_dir": str(empty_dir),
        "tokenizer_only": str(tokenizer_only),
        "models_dir": str(real.model.parent),
        "model_as_qwen2": str(qwen2),
        "busy_port": str(holder.getsockname()[1]),
        "copy": f"/srv/models/{case.id}",
        "venv": str(real.venv),
    }
    if case.hub is not None:
        hub_home = scratch / case.id / "hf_home"
        repo, snapshot = _hub_cache(real.model, hub_home, case.hub)
        values.update(hub_home=str(hub_home), hub_repo=str(repo), hub_snapshot=str(snapshot))
    extra = list(case.argv)
    extra = [_filled(a, values) for a in extra]  # not str.format: an argument may hold braces
    argv = ["--model-path", str(model), *CPU_FLAGS.split(), "--host", "127.0.0.1"]
    if "--port" not in extra:
        argv += ["--port", str(_free_port())]
    argv += extra  # a later --model-path or --max-total-tokens wins, as argparse keeps the last
    env = {**os.environ, **real.env}
    full_disk = scratch / "full_disk"
    if any(value == "{full_disk}" for _, value in case.env):
        _mount_full_disk(full_disk)
    env.update((key, value.replace("{full_disk}", str(full_disk))) for key, value in case.env)
    if case.hub is not None:
        env.pop("HF_HOME", None)  # the case's own, or none
        env.update((key, _filled(value, values)) for key, value in case.env)
    if case.shadow or case.old_version is not None:
        env["PYTHONPATH"] = _python_path(scratch / "path", case, env.get("PYTHONPATH", ""))
    log_path = out_dir / f"{case.id}.log"
    started = time.monotonic()
    if case.unit:
        if host is None:
            raise RuntimeError(f"{case.id}: a unit's case runs on the systemd test host only")
        on_host = {key: values[key] for key in ("model", "copy", "venv")}
        if case.host_setup:
            host.ssh(_filled(case.host_setup, on_host), check=True, timeout=120)
        ran = run_in_unit(
            host, unit_name(case.id, batch), [real.python, "-m", "sglang.launch_server", *argv],
            dict(real.env),
            [(key, _filled(value, on_host)) for key, value in case.unit],
            ready_line=READY, tree_ending=_TREE_ENDING, timeout_s=TIMEOUT_S,
            after_ready_s=AFTER_READY_S,
        )  # fmt: skip
        if case.host_undo:
            host.ssh(_filled(case.host_undo, on_host), check=True, timeout=120)
        holder.close()
        log_path.write_text(ran.journal)
        return {
            **{k: v for k, v in asdict(case).items() if k in ("id", "fault", "expected")},
            "argv": ["systemd-run", *(f"--property={k}={v}" for k, v in case.unit), "--",
                     real.python, "-m", "sglang.launch_server", *argv],
            "outcome": ran.outcome,
            "seconds": round(time.monotonic() - started, 1),
        }  # fmt: skip
    signalled: list[int] = []
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [*(ISOLATED if isolated else ()), real.python, "-m", "sglang.launch_server", *argv],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            preexec_fn=_address_space_cap(case.address_space),
        )  # fmt: skip
        outcome = "timeout"
        while time.monotonic() - started < TIMEOUT_S:
            if proc.poll() is not None:
                outcome = f"exit {proc.returncode}"
                break
            text = log_path.read_text(errors="replace")
            if READY in text:
                outcome = _after_ready(proc, log_path)
                break
            if case.kill is not None and not signalled and case.kill[0] in text:
                signalled = _processes_titled(proc.pid, case.kill[1])
                for pid in signalled:
                    os.kill(pid, getattr(signal, case.kill[2]))
            time.sleep(0.2)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # the main process alone ends it cleanly
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    holder.close()
    if full_disk.is_mount():
        subprocess.run(["umount", str(full_disk)], check=True)
    shutil.rmtree(scratch / "path", ignore_errors=True)
    if case.kill is not None and not signalled:
        outcome += f" (no {case.kill[1]} process was signalled)"
    return {
        **{k: v for k, v in asdict(case).items() if k in ("id", "fault", "expected")},
        "argv": [real.python, "-m", "sglang.launch_server", *argv],
        "outcome": outcome,
        "seconds": round(time.monotonic() - started, 1),
    }


def _filled(text: str, values: dict[str, str]) -> str:
    """``text`` with each ``{key}`` of ``values`` replaced (not str.format: shell has braces)."""
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


_STAMP = re.compile(r"^\[\d{4}-\d\d-\d\d [^]]*\] ")


_CHAINED = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)
#: A process's death said by itself (faulthandler) or by its parent, with no error line.
#: The service manager's own lines about a unit's process (systemd.exec(5), "Process Exit Codes").
_FAILED_AT_STEP = re.compile(r"\.service: Failed at step \S+ spawning ")
_MAIN_PROCESS_ENDED = re.compile(r"\.service: Main process exited, code=")
_DIED = re.compile(
    r"^Fatal Python error: |Subprocess \S+ \(pid=\d+\) crashed|scheduler (is dead|died)"
)


def must_contain(text: str, *, batch: int) -> str | None:
    """The line a failure's reason must cite, by the batches' fixed rule (not by reading it).

    The exception line that ends the first traceback, else argparse's ``error:`` line, else the
    first ``ERROR`` line (its timestamp removed), else the first line where a process's death is
    said (faulthandler's ``Fatal Python error:``, a parent's ``Subprocess ... crashed``), else the
    last line logged that is not blank nor a progress bar. None for an empty log.

    Since the sixteenth batch (its measurement showed the first rule's two weak readings): of a
    chained traceback, the first link that says more than its type (a bare ``EOFError``, the
    parent's read of the pipe of a child that died, says nothing; the summary raised while
    handling it does), as before the first link where every link speaks; and a process killed
    from outside, which leaves no error line, is cited where its death is said, not by the
    parent's last line (``kill_process_tree called``).

    Since the forty-ninth batch (the first whose records are a unit's journal, where the service
    manager's own lines follow the server's): before the last line, the service manager's line
    naming the step it failed at (``Failed at step EXEC spawning ...: Permission denied``), else
    its line saying how the main process ended (``Main process exited, code=killed,
    status=31/SYS``), as an engineer cites them; its closing ``Failed with result ...`` says less.

    Since the thirty-fifth batch (``batch``, the batch the case is captured for, said at every
    call so that no earlier batch is relabelled by default; the same reasoning as the
    sixteenth's): a bare ``AssertionError`` says nothing but its type, and the failed ``assert``
    statement printed just above it (under its ``^^^`` markers) says what was checked, so that
    statement is cited, as the corpus's public reports cite one (``assert isinstance(...)``).
    """
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.endswith("Traceback (most recent call last):"):
            found = _first_said_link(lines, i)
            statement = _failed_assert(lines, i, found) if batch >= 35 else None
            return statement or found
    for line in lines:
        if ": error: " in line:
            return line
    for line in lines:
        if re.search(r"\bERROR\b", line):
            return _STAMP.sub("", line)
    for line in lines:
        if _DIED.search(_STAMP.sub("", line)):
            return _STAMP.sub("", line)
    for said in (_FAILED_AT_STEP, _MAIN_PROCESS_ENDED) if batch >= 49 else ():
        for line in lines:
            if said.search(line):
                return line
    logged = [line for line in lines if line.strip() and "it/s]" not in line]
    return _STAMP.sub("", logged[-1]) if logged else None


def _failed_assert(lines: list[str], header: int, exception: str | None) -> str | None:
    """The ``assert`` statement a bare ``AssertionError`` line (``exception``, of the traceback
    opened on ``header``) was raised by: the source line just above it, past Python's ``^^^``
    markers; None otherwise."""
    if exception is None or exception.strip() != "AssertionError":
        return None
    at = lines.index(exception, header) - 1
    while at >= 0 and lines[at].strip() and not lines[at].strip().strip("^~ "):
        at -= 1
    statement = lines[at].strip() if at >= 0 else ""
    return statement if re.match(r"assert\b", statement) else None


def _first_said_link(lines: list[str], header: int) -> str | None:
    """The exception line of the first link, of the chain whose first traceback opens on
    ``header``, that says more than its type (else its last link)."""
    found: str | None = None
    at = header + 1
    while at < len(lines):
        line = lines[at]
        continued = not line.strip() or line[0] in " \t" or _STAMP.match(line)
        if continued or line.startswith("Traceback"):
            at += 1
            continue
        found = line
        if line.partition(":")[2].strip():
            return found
        after = next((j for j in range(at + 1, len(lines)) if lines[j].strip()), None)
        if after is None or lines[after].strip() not in _CHAINED:
            return found
        at = after + 1
    return found


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = Path(argv[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    rest = argv[1:]
    which = "14"
    if rest[:1] == ["--batch"]:
        which, rest = rest[1], rest[2:]
    real = find_real_sglang()
    batch = cases(real, which)
    wanted = set(rest)
    manifest_path = out_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else []
    done = {entry["id"] for entry in manifest}
    on_host = UnitHost() if any(case.unit for case in batch) else contextlib.nullcontext()
    with tempfile.TemporaryDirectory(prefix="capture-") as tmp, on_host as host:
        for case in batch:
            if (wanted and case.id not in wanted) or (not wanted and case.id in done):
                continue
            entry = capture(
                real, case, out_dir, Path(tmp), isolated=int(which) >= 18, batch=int(which),
                host=host,
            )  # fmt: skip
            shutil.rmtree(Path(tmp) / case.id, ignore_errors=True)
            manifest = [e for e in manifest if e["id"] != case.id] + [entry]
            manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
            print(f"{case.id}: {entry['outcome']} in {entry['seconds']}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
