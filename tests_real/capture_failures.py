"""Capture real start-up failures of the real SGLang package, verbatim, for the failure corpus.

Usage (with the real-SGLang tier's venv, ``make test-real`` builds it)::

    python tests_real/capture_failures.py OUT_DIR [--batch 14|15] [CASE_ID ...]

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
Each case
records the cause expected from what was broken (``expected``); the log and the way the process
ended are whatever the real package does. A case that serves anyway is recorded as serving (a
healthy start, the corpus's controls).

For each case ``OUT_DIR`` gets ``<id>.log`` (stdout and stderr as the server wrote them, merged)
and ``OUT_DIR/manifest.json`` one entry per case: ``id``, ``fault``, ``argv``, ``expected``,
``outcome`` (``ready``, ``exit N`` or ``timeout``), ``seconds``.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from real_host import CPU_FLAGS, RealSglang, find_real_sglang

READY = "The server is fired up and ready to roll!"
TIMEOUT_S = 150.0
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
    #: (file, how): ``removed``, ``truncated``, ``garbage``, or ``without:<key>`` (config.json)
    model_break: tuple[str, str] | None = None


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
    done = subprocess.run(
        [real.python, "-c", program], capture_output=True, text=True, timeout=300, check=True,
        env={**os.environ, **real.env},
    )  # fmt: skip
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    return [Flag(n, t, tuple(c), d, bool(one)) for n, t, c, d, one in rows]


def _flag_id(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_").replace(".", "_")


def cases(real: RealSglang, batch: str = "14") -> list[Case]:
    """The batch's cases, by its rule."""
    return {"14": cases14, "15": cases15}[batch](real)


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


def _break_model(source: Path, target: Path, name: str, how: str) -> None:
    shutil.copytree(source, target)
    path = target / name
    if how.startswith("without:"):
        config = json.loads(path.read_text())
        del config[how.partition(":")[2]]
        path.write_text(json.dumps(config, indent=2))
    elif how == "removed":
        path.unlink()
    elif how == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes(random.Random(f"{SEED}:{name}").randbytes(64))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def capture(real: RealSglang, case: Case, out_dir: Path, scratch: Path) -> dict[str, object]:
    """Run one case to its end (exit, ready or timeout) and keep its output verbatim."""
    model = real.model
    if case.model_break is not None:
        model = scratch / case.id
        _break_model(real.model, model, *case.model_break)
    qwen2 = scratch / "as_qwen2"
    if not qwen2.exists():
        shutil.copytree(real.model, qwen2)
        config = json.loads((qwen2 / "config.json").read_text())
        config.update(architectures=["Qwen2ForCausalLM"], model_type="qwen2")
        (qwen2 / "config.json").write_text(json.dumps(config, indent=2))
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    values = {
        "model_as_qwen2": str(qwen2),
        "busy_port": str(holder.getsockname()[1]),
    }
    extra = list(case.argv)
    for key, value in values.items():  # not str.format: an argument may hold braces (JSON)
        extra = [a.replace("{" + key + "}", value) for a in extra]
    argv = ["--model-path", str(model), *CPU_FLAGS.split(), "--host", "127.0.0.1"]
    if "--port" not in extra:
        argv += ["--port", str(_free_port())]
    argv += extra  # a later --model-path or --max-total-tokens wins, as argparse keeps the last
    log_path = out_dir / f"{case.id}.log"
    started = time.monotonic()
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [real.python, "-m", "sglang.launch_server", *argv],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **real.env},
            start_new_session=True,
        )  # fmt: skip
        outcome = "timeout"
        while time.monotonic() - started < TIMEOUT_S:
            if proc.poll() is not None:
                outcome = f"exit {proc.returncode}"
                break
            if READY in log_path.read_text(errors="replace"):
                outcome = "ready"
                break
            time.sleep(0.5)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # the main process alone ends it cleanly
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    holder.close()
    return {
        **{k: v for k, v in asdict(case).items() if k in ("id", "fault", "expected")},
        "argv": [real.python, "-m", "sglang.launch_server", *argv],
        "outcome": outcome,
        "seconds": round(time.monotonic() - started, 1),
    }


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
    with tempfile.TemporaryDirectory(prefix="capture-") as tmp:
        for case in batch:
            if (wanted and case.id not in wanted) or (not wanted and case.id in done):
                continue
            entry = capture(real, case, out_dir, Path(tmp))
            manifest = [e for e in manifest if e["id"] != case.id] + [entry]
            manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
            print(f"{case.id}: {entry['outcome']} in {entry['seconds']}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
