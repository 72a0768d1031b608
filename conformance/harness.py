"""Write the conformance goldens: what the real SGLang 0.5.23 parser and resolution produce.

Run by ``make conformance`` with the conformance venv's Python (real ``sglang==0.5.23``)::

    python conformance/harness.py --out tests/data/conformance

One child process per GPU profile (the fake device is process-wide), and within it one forked
child per config (resolution leaves state behind: environment variables, caches, a sealed
record), so every config starts from the same freshly imported package. Each config runs the
real entry point's steps: ``prepare_server_args(argv)`` (the ``sglang serve`` parser, logging
set up as the server does), ``resolve_once()``, then ``resolved_dict()`` is what the server logs
as ``server_args=``. Output: ``<out>/<profile>.json``; see conformance/README.md for its shape.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from matrix import CONFIGS, MODELS, PROFILES, TRICKY_ARGV, TRICKY_VALUES, expand  # noqa: E402
from stubs import GpuProfile, install  # noqa: E402
from wide import WIDE_CONFIGS, WIDE_MODELS, WIDE_PROFILES, held_out  # noqa: E402
from wide2 import WIDE2_MODELS, WIDE2_PROFILES, configs_for  # noqa: E402

CONFIG_TIMEOUT_S = 300
_LOG_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\] (.*)$")


def _jsonable(value: Any) -> Any:
    """A JSON value for ``value``; what JSON cannot hold is kept as its ``repr``."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return (
            value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
        )
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return {"__repr__": repr(value)}


#: published config.json keys that transformers' class rewrites into a form of its own that
#: SGLang's config class does not read (5.19's NemotronHConfig turns ``hybrid_override_pattern``
#: into a ``layers_block_type`` of its own vocabulary, which SGLang's NemotronHConfig refuses):
#: the published key is kept and the rewrite dropped, as the published file has it
_PUBLISHED_FORM = {"hybrid_override_pattern": "layers_block_type"}


def model_configs(models: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each model's ``config.json`` as transformers' config class writes it."""
    import transformers

    written: dict[str, dict[str, Any]] = {}
    for name, (cls_name, overrides) in models.items():
        config = getattr(transformers, cls_name)(**overrides)
        data = config.to_dict()
        for key in ("architectures", "quantization_config", "draft_vocab_size"):
            if key in overrides:
                data[key] = overrides[key]  # kept even where the config class drops it
        for key, rewritten in _PUBLISHED_FORM.items():
            if key in overrides:
                data.pop(rewritten, None)
                data[key] = overrides[key]
        written[name] = json.loads(json.dumps(data))
    return written


def write_models(root: str, models: dict[str, tuple[str, dict[str, Any]]] | None = None) -> None:
    """A directory per model holding only ``config.json`` (and a LoRA adapter's config)."""
    for name, data in model_configs(MODELS if models is None else models).items():
        path = os.path.join(root, name)
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "config.json"), "w") as handle:
            json.dump(data, handle, indent=1)
    lora = os.path.join(root, "lora-sql")
    os.makedirs(lora, exist_ok=True)
    with open(os.path.join(lora, "adapter_config.json"), "w") as handle:
        json.dump(
            {
                "peft_type": "LORA",
                "r": 16,
                "lora_alpha": 32,
                "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"],
                "base_model_name_or_path": "meta-llama/Llama-3.1-8B-Instruct",
                "task_type": "CAUSAL_LM",
            },
            handle,
        )


def _frame(frame: traceback.FrameSummary) -> dict[str, Any]:
    """One traceback frame: file relative to site-packages, line number, function, source line."""
    filename = frame.filename
    marker = "site-packages" + os.sep
    if marker in filename:
        filename = filename.split(marker, 1)[1]
    return {"file": filename, "line": frame.lineno, "function": frame.name, "code": frame.line}


def _temp_path(prefix: str) -> str:
    """A fresh file's path, for a forked child to write and the parent to read."""
    handle, path = tempfile.mkstemp(prefix=prefix)
    os.close(handle)
    return path


def run_config(argv: list[str]) -> dict[str, Any]:
    """Parse and resolve ``argv`` in a forked child; what the server would log and exit with."""
    from sglang.srt.server_args import prepare_server_args

    out_path = _temp_path("conf-out-")
    res_path = _temp_path("conf-res-")
    pid = os.fork()
    if pid == 0:  # child: never returns
        code = 0
        result: dict[str, Any] = {}
        fd = os.open(out_path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", 0), write_through=True)
        sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", 0), write_through=True)
        try:
            import signal

            signal.alarm(CONFIG_TIMEOUT_S)
            server_args = prepare_server_args(argv)
            server_args.resolve_once()
            resolved = server_args.resolved_dict()
            import logging

            logging.getLogger("sglang.srt.entrypoints.engine").info(f"server_args={resolved}")
            # drawn at random when unset: kept out so the goldens are reproducible
            resolved["random_seed"] = "<random>"
            result["server_args"] = _jsonable(resolved)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException as exc:
            traceback.print_exc()
            frames = traceback.extract_tb(exc.__traceback__)
            # SGLang's own frames (the harness's first frame stands where launch_server is)
            result["traceback"] = [_frame(f) for f in frames if "site-packages" in f.filename]
            code = 1
        try:
            with open(res_path, "w") as handle:
                json.dump(result, handle)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    with open(out_path, errors="replace") as handle:
        output = handle.read()
    with open(res_path) as handle:
        text = handle.read()
    os.unlink(out_path)
    os.unlink(res_path)
    result = json.loads(text) if text else {}
    lines = [line for line in output.splitlines() if line.strip()]
    before: list[str] = []
    other: list[str] = []
    for line in lines:
        match = _LOG_LINE.match(line)
        if match:
            if match.group(1).startswith("server_args="):
                break
            before.append(match.group(1))
        else:
            other.append(line)
    entry: dict[str, Any] = {"exit_code": code, "log_before_server_args": before}
    if other:
        entry["other_output"] = other[-20:]
    if code != 0:
        entry["last_line"] = lines[-1] if lines else ""
    entry.update(result)
    return entry


def warm_imports(argvs: list[list[str]]) -> None:
    """Import, in this process, what resolving ``argvs`` imports, so each forked config starts warm.

    Resolution imports much of SGLang lazily (model configs, quantization, kernels' stubs); done
    once per config it would take ~5 s each. Only imports are carried over: the resolutions
    themselves run in a throwaway child.
    """
    import importlib

    listing_path = _temp_path("conf-mods-")
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        before = set(sys.modules)
        try:
            from sglang.srt.server_args import prepare_server_args

            for argv in argvs:
                with contextlib.suppress(BaseException):
                    prepare_server_args(argv).resolve_once()
        finally:
            with open(listing_path, "w") as handle:
                handle.write("\n".join(m for m in list(sys.modules) if m not in before))
            os._exit(0)
    os.waitpid(pid, 0)
    with open(listing_path) as handle:
        names = handle.read().split()
    os.unlink(listing_path)
    for name in names:
        with contextlib.suppress(BaseException):
            importlib.import_module(name)


def run_tricky() -> list[dict[str, Any]]:
    """How the real ``sglang serve`` parser reads each tricky value (before resolution)."""
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    dest_of = {flag: action.dest for action in parser._actions for flag in action.option_strings}
    cases: list[tuple[str, list[str]]] = [
        (f"{flag} {value!r}", [flag, value]) for flag, value in TRICKY_VALUES
    ]
    cases += list(TRICKY_ARGV.items())
    rows: list[dict[str, Any]] = []
    for name, tail in cases:
        argv = ["--model-path", "m", *tail]
        err = io.StringIO()
        row: dict[str, Any] = {"name": name, "argv": tail}
        try:
            with contextlib.redirect_stderr(err):
                namespace = parser.parse_args(argv)
        except SystemExit as exc:
            row["exit_code"] = exc.code
            lines = [line for line in err.getvalue().splitlines() if line.strip()]
            row["last_line"] = lines[-1] if lines else ""
        else:
            flag = tail[0]
            dest = dest_of.get(flag) or dest_of.get(
                next((f for f in dest_of if f.startswith(flag)), flag), flag
            )
            row["exit_code"] = 0
            row["dest"] = dest
            row["value"] = _jsonable(getattr(namespace, dest, None))
        rows.append(row)
    return rows


def write_catalog(out_path: str) -> None:
    """The real ``sglang serve`` parser, one row per option string: what argparse does with it."""
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    rows = []
    for action in parser._actions:
        if not action.option_strings or action.dest == "help":
            continue
        row = {
            "dest": action.dest,
            "action": type(action).__name__,
            "type": getattr(action.type, "__name__", None),
            "default": _jsonable(action.default),
            "choices": _jsonable(list(action.choices)) if action.choices is not None else None,
            "nargs": action.nargs,
            "const": _jsonable(action.const),
            "required": action.required,
        }
        for flag in action.option_strings:
            rows.append({"flag": flag, **row})
    with open(out_path, "w") as handle:
        json.dump({"sglang_version": _version(), "options": rows}, handle, indent=0)
        handle.write("\n")


def _version() -> str:
    import sglang

    return str(sglang.__version__)


def _compact(configs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Values shared by most configs stored once (``common``), each config keeping its diff."""
    resolved = [c["server_args"] for c in configs.values() if "server_args" in c]
    common: dict[str, Any] = {}
    keys = {k for d in resolved for k in d}
    for key in sorted(keys):
        counts = collections.Counter(json.dumps(d.get(key), sort_keys=True) for d in resolved)
        common[key] = json.loads(counts.most_common(1)[0][0])
    for entry in configs.values():
        if "server_args" in entry:
            full = entry.pop("server_args")
            entry["server_args_diff"] = {
                k: v
                for k, v in full.items()
                if json.dumps(v, sort_keys=True) != json.dumps(common.get(k), sort_keys=True)
            }
            missing = [k for k in common if k not in full]
            if missing:
                entry["server_args_missing"] = missing
    return common


#: configs whose resolution imports, once, what the rest of a matrix's resolutions import
_WARM = {
    "narrow": ("q3_tp1", "q35_eagle_s2", "ds_nextn_auto", "llama_eagle3_auto", "q3_fp8"),
    "wide": ("qmoe_tp1", "r1_nextn_auto", "oss_eagle3_auto", "qnext_nextn_auto", "nemo_tp1"),
    "wide2": ("q235_tp8", "v31_nextn_auto", "l8_eagle3_auto", "gemma_tp1", "mm2_tp4"),
}
#: where each matrix's goldens go under ``--out``, its GPU profiles and its models
_MATRICES = {
    "narrow": ("", PROFILES, MODELS),
    "wide": ("wide", WIDE_PROFILES, WIDE_MODELS),
    "wide2": ("wide2", WIDE2_PROFILES, WIDE2_MODELS),
}


def _configs(matrix: str, profile: str) -> dict[str, list[str]]:
    """The configs of ``matrix`` run on ``profile``."""
    if matrix == "wide2":
        return configs_for(profile)
    return WIDE_CONFIGS if matrix == "wide" else CONFIGS


def _held_out(matrix: str, profile: str, config: str) -> bool:
    """The wide matrix's held-out rule; the fresh extension (wide2) is held out entirely."""
    return matrix == "wide2" or held_out(profile, config)


def run_profile(
    profile: GpuProfile, out_path: str, only: list[str] | None, matrix: str = "narrow"
) -> None:
    """Everything for one GPU profile, in this (fresh) process."""
    wide = matrix != "narrow"
    all_configs = _configs(matrix, profile.key)
    model_table = _MATRICES[matrix][2]
    work = tempfile.mkdtemp(prefix=f"sglang-conformance-{profile.key}-")
    install(profile, os.path.join(work, "bin"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    models = os.path.join(work, "models")
    write_models(models, model_table)
    import sglang

    warm_imports([expand(all_configs[name], models) for name in _WARM[matrix]])
    configs: dict[str, dict[str, Any]] = {}
    for name, template in all_configs.items():
        if only and name not in only:
            continue
        entry = run_config(expand(template, models))
        text = (
            json.dumps(entry)
            .replace(models, "{models}")
            .replace(work, "{work}")
            .replace(os.path.dirname(sglang.__path__[0]) + os.sep, "{site-packages}/")
            .replace(HERE + os.sep, "conformance/")
        )
        configs[name] = {"argv": template, **json.loads(text)}
        if wide:
            configs[name]["held_out"] = _held_out(matrix, profile.key, name)
        print(f"[{profile.key}] {name}: exit {entry['exit_code']}", file=sys.__stderr__, flush=True)
    common = _compact(configs)
    golden = {
        "sglang_version": sglang.__version__,
        "profile": {
            "key": profile.key,
            "name": profile.name,
            "count": profile.count,
            "total_mib": profile.total_mib,
            "capability": list(profile.capability),
        },
        "models": {name: cls for name, (cls, _) in model_table.items()},
        "common_server_args": common,
        "configs": configs,
    }
    if not wide:
        golden["tricky"] = run_tricky()
    with open(out_path, "w") as handle:
        json.dump(golden, handle, indent=1, sort_keys=False)
        handle.write("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tests/data/conformance")
    parser.add_argument("--profile", help="run one profile in this process (internal)")
    parser.add_argument("--only", nargs="*", help="config names (for debugging the harness)")
    parser.add_argument("--catalog", action="store_true", help="write catalog.json only")
    parser.add_argument(
        "--matrix",
        choices=tuple(_MATRICES),
        default="narrow",
        help="matrix.py's configs, wide.py's (under <out>/wide/) or wide2.py's (<out>/wide2/)",
    )
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.catalog:
        install(PROFILES[0], tempfile.mkdtemp(prefix="sglang-conformance-bin-"))
        write_catalog(os.path.join(args.out, "catalog.json"))
        return
    sub, profiles, model_table = _MATRICES[args.matrix]
    out = os.path.join(args.out, sub) if sub else args.out
    os.makedirs(out, exist_ok=True)
    if args.profile:
        profile = next(p for p in profiles if p.key == args.profile)
        run_profile(profile, os.path.join(out, f"{profile.key}.json"), args.only, args.matrix)
        return
    if sub:
        with open(os.path.join(out, "models.json"), "w") as handle:
            json.dump(model_configs(model_table), handle, indent=1, sort_keys=True)
            handle.write("\n")
    for profile in profiles:
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "--out",
            args.out,
            "--matrix",
            args.matrix,
            "--profile",
            profile.key,
        ]
        if args.only:
            cmd += ["--only", *args.only]
        subprocess.run(cmd, check=True)
    if sub:
        print(f"goldens written to {out}")
        return
    subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--out", args.out, "--catalog"], check=True
    )
    print(f"goldens written to {args.out}")


if __name__ == "__main__":
    main()
