"""How far the simulator and the plugin agree with the goldens of the real SGLang 0.5.23.

The goldens (tests/data/conformance/<profile>.json) come from ``make conformance``: the real
package's parser and ``ServerArgs.resolve_once()`` on each GPU profile. This module replays
every golden config through the simulator's parser and resolution (in-process: no server is
started) and counts agreement; the tests hold the counts to the issue's bars and
benchmarks/conformance_agreement.py prints them. Kept free of pytest so it also runs against an
older checkout of the simulator (the "before" figures).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GOLDENS = Path(__file__).resolve().parent.parent / "data" / "conformance"
MODELS = "/models"
VERSION = "0.5.23"

#: server_args keys compared: what the plugin, a user's journal assertion or the simulator's
#: own behaviour reads (issue 15, point 2)
KEY_FIELDS = (
    "model_path",
    "served_model_name",
    "tokenizer_path",
    "tp_size",
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "speculative_draft_model_path",
    "max_running_requests",
    "mem_fraction_static",
    "chunked_prefill_size",
    "max_prefill_tokens",
    "max_total_tokens",
    "context_length",
    "cuda_graph_config",
    "cuda_graph_max_bs_decode",
    "disable_cuda_graph",
    "attention_backend",
    "prefill_attention_backend",
    "decode_attention_backend",
    "sampling_backend",
    "page_size",
    "dtype",
    "quantization",
    "kv_cache_dtype",
    "enable_lora",
    "lora_paths",
    "max_lora_rank",
    "max_loras_per_batch",
    "disable_overlap_schedule",
    "enable_mixed_chunk",
    "disable_radix_cache",
    "enable_metrics",
    "api_key",
)


@dataclass(frozen=True)
class Profile:
    """One golden file: the GPU it was taken on and its configs."""

    key: str
    name: str
    total_mib: int
    capability: tuple[int, int]
    golden: dict[str, Any]
    #: where the golden's ``{models}`` lies when replayed (a directory of config.json files for
    #: the wide matrix, whose models the simulator and the predictor read)
    models: str = MODELS

    def resolved(self, config: str) -> dict[str, Any]:
        """The real resolved server_args of ``config`` (common values + its differences)."""
        entry = self.golden["configs"][config]
        values = dict(self.golden["common_server_args"])
        values.update(entry.get("server_args_diff", {}))
        return _expand(values, self.models)

    def argv(self, config: str) -> list[str]:
        """``config``'s command line with the model root in place."""
        return argv_of(self.golden["configs"][config], self.models)


def load_profiles(directory: Path = GOLDENS, models: str = MODELS) -> list[Profile]:
    profiles = []
    for path in sorted(directory.glob("*.json")):
        if path.name in ("catalog.json", "models.json"):
            continue
        golden = json.loads(path.read_text())
        info = golden["profile"]
        profiles.append(
            Profile(
                info["key"],
                info["name"],
                int(info["total_mib"]),
                (int(info["capability"][0]), int(info["capability"][1])),
                golden,
                models,
            )
        )
    return profiles


def _expand(value: Any, root: str = MODELS) -> Any:
    """Golden values with ``{models}`` placed under the simulator's model root."""
    if isinstance(value, str):
        return value.replace("{models}", root)
    if isinstance(value, list):
        return [_expand(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v, root) for k, v in value.items()}
    return value


def argv_of(entry: dict[str, Any], root: str = MODELS) -> list[str]:
    return [str(_expand(a, root)) for a in entry["argv"]]


def same(a: Any, b: Any) -> bool:
    """Equal as the log line shows them (floats to 1e-9: the goldens went through JSON)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) < 1e-9
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


@dataclass
class SimOutcome:
    """What the simulator did with one golden config."""

    exit_code: int
    last_line: str = ""
    warnings: list[str] = field(default_factory=list)
    args: dict[str, Any] = field(default_factory=dict)
    frames: list[tuple[str, int, str, str]] = field(default_factory=list)


def run_sim(argv: list[str], profile: Profile) -> SimOutcome:
    """The simulator's parser + resolution on ``argv`` for ``profile``'s GPU, in-process."""
    from pytest_sglang.sim import cli, post_init
    from pytest_sglang.sim.perf import GpuSpec

    try:
        gpu = GpuSpec(
            name=profile.name,
            memory_gb=profile.total_mib / 1019.66,
            total_mib=profile.total_mib,  # type: ignore[call-arg]
            capability=profile.capability,  # type: ignore[call-arg]
        )
    except TypeError:  # a simulator from before the goldens: memory in GB only
        gpu = GpuSpec(name=profile.name, memory_gb=round(profile.total_mib / 1019.66))
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parsed = cli.parse_args(argv, VERSION)
    except SystemExit as exc:
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        return SimOutcome(int(exc.code or 0), lines[-1] if lines else "")
    error = getattr(post_init, "ResolutionError", None)
    try:
        resolved = post_init.resolve_args(parsed, VERSION, gpu)
    except Exception as exc:
        if error is not None and isinstance(exc, error):
            return SimOutcome(1, exc.line, list(exc.warnings), frames=list(exc.frames))
        name = type(exc).__name__
        return SimOutcome(1, f"{name}: {exc}" if str(exc) else name)
    return SimOutcome(0, "", list(resolved.warnings), dict(resolved.args))


@dataclass
class Agreement:
    """Counts over every profile x config."""

    field_pairs: int = 0
    field_agree: int = 0
    warn_configs: int = 0
    warn_agree: int = 0
    fail_configs: int = 0
    fail_agree: int = 0
    trace_configs: int = 0
    trace_agree: int = 0
    tricky: int = 0
    tricky_agree: int = 0
    misses: list[str] = field(default_factory=list)

    def line(self) -> str:
        def pct(a: int, b: int) -> str:
            return f"{a}/{b} ({100.0 * a / b:.1f}%)" if b else "0/0"

        return (
            f"resolved fields {pct(self.field_agree, self.field_pairs)}; "
            f"warnings {pct(self.warn_agree, self.warn_configs)}; "
            f"failures {pct(self.fail_agree, self.fail_configs)}; "
            f"traceback frames {pct(self.trace_agree, self.trace_configs)}; "
            f"tricky values {pct(self.tricky_agree, self.tricky)}"
        )


def measure(
    profiles: list[Profile] | None = None, select: Callable[[dict[str, Any]], bool] | None = None
) -> Agreement:
    """Replay every golden (or those ``select`` keeps) through the simulator, count agreement."""
    result = Agreement()
    for profile in profiles or load_profiles():
        for name, entry in profile.golden["configs"].items():
            if select is not None and not select(entry):
                continue
            sim = run_sim(profile.argv(name), profile)
            where = f"{profile.key}/{name}"
            if entry["exit_code"] != 0:
                result.fail_configs += 1
                real_last = str(_expand(entry["last_line"], profile.models)).strip()
                if sim.exit_code == entry["exit_code"] and sim.last_line.strip() == real_last:
                    result.fail_agree += 1
                else:
                    result.misses.append(
                        f"{where}: exit {sim.exit_code} {sim.last_line!r} "
                        f"!= {entry['exit_code']} {real_last!r}"
                    )
                if "traceback" in entry:
                    result.trace_configs += 1
                    real = [(f["file"], f["line"], f["code"]) for f in entry["traceback"]]
                    mine = [
                        (fn.split("dist-packages/", 1)[-1], ln, code)
                        for fn, ln, _, code in sim.frames
                    ]
                    if mine[-len(real) :] == real:
                        result.trace_agree += 1
                    else:
                        result.misses.append(f"{where}: traceback {mine[-1:]} != {real[-1:]}")
                if entry["exit_code"] == 1:
                    _count_warnings(result, where, sim, entry, profile.models)
                continue
            if sim.exit_code != 0:
                result.misses.append(f"{where}: simulator failed: {sim.last_line}")
                result.field_pairs += len(KEY_FIELDS)
                result.warn_configs += 1
                continue
            real = profile.resolved(name)
            for key in KEY_FIELDS:
                result.field_pairs += 1
                if same(sim.args.get(key), real.get(key)):
                    result.field_agree += 1
                else:
                    result.misses.append(
                        f"{where}: {key} sim={_short(sim.args.get(key))} real={_short(real.get(key))}"
                    )
            _count_warnings(result, where, sim, entry, profile.models)
        _count_tricky(result, profile)
    return result


def _count_warnings(
    result: Agreement, where: str, sim: SimOutcome, entry: dict[str, Any], root: str = MODELS
) -> None:
    result.warn_configs += 1
    real = [_expand(w, root) for w in entry["log_before_server_args"]]
    if sim.warnings == real:
        result.warn_agree += 1
    else:
        result.misses.append(f"{where}: warnings sim={sim.warnings} real={real}")


def _count_tricky(result: Agreement, profile: Profile) -> None:
    """The parser on tricky values: same value, or same exit status and error line."""
    from pytest_sglang.sim import cli

    for row in profile.golden.get("tricky", []):
        result.tricky += 1
        argv = ["--model-path", "m", *row["argv"]]
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                parsed = cli.parse_args(argv, VERSION)
        except SystemExit as exc:
            lines = [line for line in err.getvalue().splitlines() if line.strip()]
            ok = row["exit_code"] == exc.code and lines and lines[-1] == row.get("last_line")
            shown = f"exit {exc.code}: {lines[-1] if lines else ''}"
        else:
            value = parsed.get(row.get("dest", ""))
            ok = row["exit_code"] == 0 and same(value, row.get("value"))
            shown = repr(value)
        if ok:
            result.tricky_agree += 1
        else:
            expected = row.get("value") if row["exit_code"] == 0 else row.get("last_line")
            result.misses.append(
                f"{profile.key}/tricky {row['name']}: sim {shown} real {expected!r}"
            )


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) < 120 else text[:117] + "..."


def main() -> None:
    parser = argparse.ArgumentParser(description="simulator vs real SGLang 0.5.23 goldens")
    parser.add_argument("--misses", type=int, default=40, help="how many differences to list")
    args = parser.parse_args()
    result = measure()
    print(result.line())
    for miss in result.misses[: args.misses]:
        print("  " + miss)
    if len(result.misses) > args.misses:
        print(f"  ... {len(result.misses) - args.misses} more")


if __name__ == "__main__":
    main()


@dataclass
class JournalAgreement:
    """The plugin's ``expected_journal()`` against what real 0.5.23 logs."""

    configs: int = 0
    checked_values: int = 0
    checked_warnings: int = 0
    refused: int = 0
    mismatches: list[str] = field(default_factory=list)


def gpu_kwargs(profile: Profile) -> dict[str, Any]:
    """``gpu=`` for the predictor on ``profile``'s GPU, as a host's ``nvidia-smi`` names it;
    nothing for a checkout whose predictor knows no GPU (the "before" figures)."""
    try:
        from pytest_sglang.gpu_rules import GpuFacts
    except ImportError:
        return {}
    return {"gpu": GpuFacts(profile.name, profile.capability)}


def measure_journal(
    profiles: list[Profile] | None = None, select: Callable[[dict[str, Any]], bool] | None = None
) -> JournalAgreement:
    """Every golden config the plugin can express: its expected values and warnings vs real,
    the predictor knowing the profile's GPU (``refused`` counts the configs it then refuses
    though real SGLang starts them)."""
    from pytest_sglang.config import ServerConfig

    result = JournalAgreement()
    for profile in profiles or load_profiles():
        for name, entry in profile.golden["configs"].items():
            if entry["exit_code"] != 0 or (select is not None and not select(entry)):
                continue
            try:
                config = ServerConfig.from_argv(profile.argv(name), VERSION)
                expected = config.expected_journal(VERSION, **gpu_kwargs(profile))
            except Exception:  # the plugin refuses the config up front: nothing to mismatch
                result.refused += 1
                continue
            result.configs += 1
            real = profile.resolved(name)
            where = f"{profile.key}/{name}"
            for key, value in expected.server_args.items():
                result.checked_values += 1
                if not same(value, real.get(key)):
                    result.mismatches.append(
                        f"{where}: {key} expected={value!r} real={_short(real.get(key))}"
                    )
            logged = [_expand(w, profile.models) for w in entry["log_before_server_args"]]
            for warning in expected.warnings:
                result.checked_warnings += 1
                if warning not in logged:
                    result.mismatches.append(f"{where}: warning not logged: {warning}")
            mrr = expected.max_running_requests
            if mrr is not None and real.get("max_running_requests") not in (None, mrr):
                result.mismatches.append(
                    f"{where}: max_running_requests bound {mrr} real {real.get('max_running_requests')}"
                )
    return result


def measure_catalog() -> tuple[int, int, list[str]]:
    """Option strings whose argparse behaviour (action, dest, type, default, choices, nargs,
    const, required) is identical in the simulator's parser and the real one."""
    from pytest_sglang.sim import cli

    real = json.loads((GOLDENS / "catalog.json").read_text())["options"]
    parser = cli.build_parser(VERSION)
    mine = {flag: action for action in parser._actions for flag in action.option_strings}
    agree = 0
    misses: list[str] = []
    for row in real:
        action = mine.get(row["flag"])
        if action is None:
            misses.append(f"{row['flag']}: missing")
            continue
        got = {
            "dest": action.dest,
            "action": type(action).__name__,
            "type": getattr(action.type, "__name__", None),
            "default": action.default,
            "choices": list(action.choices) if action.choices is not None else None,
            "nargs": action.nargs,
            "const": action.const,
            "required": action.required,
        }
        if row["flag"] == "--sampling-backend" and got["choices"] is not None:
            # 0.5.23 registers these choices as a set: their order changes from run to run
            got["choices"] = sorted(got["choices"])
            row = {**row, "choices": sorted(row["choices"])}
        diff = [k for k in got if not same(got[k], row[k])]
        if diff:
            misses.append(
                f"{row['flag']}: " + ", ".join(f"{k} sim={got[k]!r} real={row[k]!r}" for k in diff)
            )
        else:
            agree += 1
    return agree, len(real), misses
