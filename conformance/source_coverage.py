"""Which of 0.5.23's messages and refusals before ``server_args=`` the simulator and the
predictor model: every one, enumerated from the real package's source.

Why: the goldens reach only the configs someone chose; this reads the source instead. It walks
the modules ``launch_server`` runs before it logs ``server_args=`` (``server_args.py``,
``arg_groups/**``, ``configs/model_config.py``, ``speculative/spec_info.py``,
``utils/hf_transformers/config.py``) with ``ast`` (nothing is imported, so any Python runs it)
and lists each ``logger.warning``/``info``/``warning_once``/``error``, ``warnings.warn``,
``print``, ``raise`` and ``assert`` with its condition's function. Each is *modelled* where a
its text's constant parts (8 characters or more; the longest 16 or more) are all strings of
one of the simulator's or the predictor's modules, or, for a bare ``assert``/``raise``, where their
traceback tables name its file and line. Not modelled: the module's reason
(``REASONS``). Writes conformance/coverage_0.5.23.md and its per-file summary into
conformance/README.md (between the coverage markers).

    python conformance/source_coverage.py [--site <the real venv's site-packages>]
"""

from __future__ import annotations

import argparse
import ast
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SITE = Path.home() / ".cache/pytest-sglang/real-0.5.23/lib/python3.11/site-packages"
OUT = ROOT / "conformance" / "coverage_0.5.23.md"
SOURCES = (
    "sglang/srt/server_args.py",
    "sglang/srt/arg_groups",
    "sglang/srt/configs/model_config.py",
    "sglang/srt/speculative/spec_info.py",
    "sglang/srt/utils/hf_transformers/config.py",
)
#: the project's modules that play or predict resolution
MODELS = (
    "pytest_sglang/sim/post_init.py",
    "pytest_sglang/sim/model_rules.py",
    "pytest_sglang/sim/tracebacks.py",
    "pytest_sglang/sim/cli.py",
    "pytest_sglang/gpu_rules.py",
    "pytest_sglang/aliases.py",
    "pytest_sglang/resolution.py",
    "pytest_sglang/refusals.py",
    "pytest_sglang/model_identity.py",
    "pytest_sglang/model_config_rules.py",
    "pytest_sglang/argv_parse.py",
)
LOG_METHODS = {"warning", "warn", "info", "warning_once", "info_once", "error", "critical"}
#: why a module's messages are not modelled (by path under sglang/srt, longest prefix wins)
REASONS = {
    "arg_groups/pd_disaggregation_hook.py": "PD disaggregation is not simulated",
    "arg_groups/hicache_hook.py": "HiCache is not simulated",
    "arg_groups/hisparse_hook.py": "hierarchical sparse attention is not simulated",
    "arg_groups/deepseek_v4_hook.py": "DeepSeek-V4 (DSA) is not among the families",
    "arg_groups/model_overrides/deepseek_v4.py": "DeepSeek-V4 (DSA) is not among the families",
    "arg_groups/dllm_hook.py": "diffusion LMs are not simulated",
    "arg_groups/kimi_k3_hook.py": "Kimi-K3 is not among the families",
    "arg_groups/muse_spark_hook.py": "MuseSpark is not among the families",
    "arg_groups/glm5_next_hook.py": "GLM-5 is not among the families",
    "arg_groups/platform_hook.py": "ROCm/NPU/HPU/XPU/CPU/MPS platforms: the simulator is CUDA",
    "arg_groups/kv_shard_hook.py": "KV-cache sharding is not simulated",
    "arg_groups/layernorm_sp_hook.py": "layernorm sequence parallelism is not simulated",
    "arg_groups/cp_tp_group_sharing_hook.py": "context parallelism is not simulated",
    "arg_groups/expert_pack_hook.py": "expert packing is not simulated",
    "arg_groups/mega_moe_hook.py": "MegaMoE is not simulated",
    "arg_groups/lora_hook.py": "LoRA is parsed, its resolution checks are not simulated",
    "arg_groups/mamba_hook.py": "mamba backends beyond the radix strategy are not simulated",
    "arg_groups/model_overrides": "an architecture outside the simulated families",
    "arg_groups/model_overrides/deepseek_v2.py": "modelled: sm100 TRT-LLM MLA; not: DSA, FP4 "
    "and ModelOpt checkpoints, ROCm/NPU",
    "arg_groups/model_overrides/gpt_oss.py": "modelled: attention, bf16, MoE runners on CUDA; "
    "not: ROCm/NPU/XPU, driver checks",
    "arg_groups/model_overrides/nemotron_h.py": "modelled: MoE runner and attention of an "
    "unquantized checkpoint; not: ModelOpt/W4A16 checkpoints, EPLB and redundant experts",
    "arg_groups/model_overrides/qwen3_moe.py": "modelled: sm100 MoE runner; not: ROCm, "
    "quantized variants",
    "arg_groups/model_overrides/glm4_moe.py": "modelled: TF32 and the sm100 MoE runner",
    "arg_groups/model_overrides/gemma2_gemma3.py": "modelled",
    "arg_groups/model_overrides/olmo2.py": "modelled",
    "arg_groups/model_overrides/minimax_m2.py": "modelled: TF32 and the sm100 ModelOpt FP4 "
    "MoE runner",
    "arg_groups/model_overrides/llama4.py": "modelled on CUDA; not: ROCm/XPU/CPU",
    "arg_groups/model_overrides/gemma4.py": "modelled (not the diffusion variant)",
    "arg_groups/model_overrides/cohere2_moe.py": "modelled for unquantized checkpoints; not: "
    "NVFP4-packed ones",
    "arg_groups/fields": "the parser's own checks (argparse, typed fields)",
    "arg_groups/argparse_actions.py": "deprecated actions (aliases table) and the parser",
    "arg_groups/serving_hook.py": "serving options beyond the seeds' (grammar, tokenizer, "
    "encoder, load format, environment): not simulated",
    "arg_groups/validation_hook.py": "cross-option validations of options the simulator does "
    "not simulate (MPS, PP, deterministic inference, ...)",
    "arg_groups/parallel_hook.py": "pipeline/context parallelism, DP routers, elastic EP: "
    "not simulated",
    "arg_groups/moe_hook.py": "MoE runner/a2a compatibility asserts of backends not simulated",
    "arg_groups/kv_cache_hook.py": "KV-cache dtype/layout compatibility of backends not "
    "simulated (fp4, mxfp8, page-major layout)",
    "arg_groups/attention_hook.py": "attention backends and options not simulated "
    "(deterministic, multi-item scoring, linear attention, NSA)",
    "arg_groups/speculative_hook.py": "speculative paths beyond EAGLE/EAGLE3/STANDALONE/NGRAM "
    "(DFLASH, UNO, DSPARK, FROZEN_KV_MTP, spec v2 variants)",
    "arg_groups/cuda_graph_hook.py": "CUDA-graph options beyond the default capture lists",
    "arg_groups/memory_hook.py": "memory options beyond the default sizing",
    "arg_groups/model_hook.py": "architectures outside the simulated families",
    "arg_groups/overrides.py": "overrides of architectures, quantizations and backends not "
    "simulated",
    "arg_groups": "options the simulator does not resolve",
    "configs/model_config.py": "modelled: multimodal and Gemma dtype notes, context length, "
    "FP8/MXFP4 checkpoints' quantization checks; not: other checkpoint formats (AWQ/GPTQ, "
    "ModelOpt, GGUF), drafts, encoder-only, remote configs",
    "speculative/spec_info.py": "speculative algorithms not simulated",
    "utils/hf_transformers/config.py": "remote and GGUF configs: the simulator reads a "
    "local config.json",
    "server_args.py": "ports, MPS/MLX, the request-level API",
}


@dataclass
class Site:
    """One message or refusal in the source."""

    path: str
    line: int
    function: str
    kind: str
    text: str
    modelled_in: str = ""


def _skeleton(node: ast.expr | None) -> str:
    """A message's text with each interpolated value as ``{}``."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp):
        return _skeleton(node.left) + _skeleton(node.right)
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            return _skeleton(node.func.value)
        if node.args:
            return _skeleton(node.args[0])
    return "{}"


def _kind(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name) and func.id == "print":
        return "print"
    if isinstance(func, ast.Attribute):
        owner = func.value
        name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
        if name == "warnings" and func.attr == "warn":
            return "warn"
        if "log" in name.lower() and func.attr in LOG_METHODS:
            return func.attr
    return None


class _Visitor(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.stack: list[str] = []
        self.sites: list[Site] = []

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def _add(self, node: ast.AST, kind: str, text: str) -> None:
        function = self.stack[-1] if self.stack else "<module>"
        self.sites.append(Site(self.path, node.lineno, function, kind, text))  # type: ignore[attr-defined]

    def visit_Call(self, node: ast.Call) -> None:
        kind = _kind(node)
        if kind is not None:
            self._add(node, kind, _skeleton(node.args[0] if node.args else None))
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if exc is None:
            self._add(node, "raise", "(re-raise)")
        else:
            name = exc.func if isinstance(exc, ast.Call) else exc
            label = getattr(name, "id", getattr(name, "attr", "?"))
            text = _skeleton(exc.args[0]) if isinstance(exc, ast.Call) and exc.args else ""
            self._add(node, "raise", f"{label}: {text}" if text else label)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        text = "AssertionError: " + _skeleton(node.msg) if node.msg else "AssertionError"
        self._add(node, "assert", text)
        self.generic_visit(node)


def enumerate_sites(site: Path) -> list[Site]:
    """Every message and refusal of the resolution sources under ``site``."""
    files: list[Path] = []
    for source in SOURCES:
        path = site / source
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    sites: list[Site] = []
    for path in files:
        relative = str(path.relative_to(site / "sglang" / "srt"))
        visitor = _Visitor(relative)
        visitor.visit(ast.parse(path.read_text(), str(path)))
        sites.extend(visitor.sites)
    return sites


def _project_strings() -> dict[str, str]:
    """Each project module's string constants, joined (one text per module)."""
    texts: dict[str, str] = {}
    for module in MODELS:
        tree = ast.parse((ROOT / module).read_text())
        parts = [
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
        ]
        texts[module] = _normal("\n".join(parts))
    return texts


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _frames() -> set[tuple[str, int]]:
    """The (file, line) pairs the project's traceback tables name."""
    found: set[tuple[str, int]] = set()
    for module in MODELS:
        text = (ROOT / module).read_text()
        for match in re.finditer(r'"sglang/srt/([\w/]+\.py)",\s*(\d+)', text):
            found.add((match.group(1), int(match.group(2))))
    return found


def mark_modelled(sites: list[Site]) -> None:
    """Fill ``modelled_in`` for every site the project models."""
    texts = _project_strings()
    frames = _frames()
    for site in sites:
        text = re.sub(r"%[-0-9.]*[sdrfi]", "{}", site.text.split(": ", 1)[-1])
        fragments = [_normal(f).strip() for f in re.split(r"\{\}", text)]
        fragment = max(fragments, key=len, default="")
        needed = [f for f in fragments if len(f) >= 8]
        where = []
        if len(fragment) >= 16:
            where = [Path(m).name for m, text in texts.items() if all(f in text for f in needed)]
        if not where and (site.path, site.line) in frames:
            where = ["tracebacks"]
        site.modelled_in = ", ".join(where)


def reason(path: str) -> str:
    best = max((p for p in REASONS if path.startswith(p)), key=len, default="")
    return REASONS.get(best, "")


def render(sites: list[Site]) -> str:
    """The markdown: a summary per source file, then every site."""
    lines = [
        "# What 0.5.23 logs or refuses before `server_args=`, and what the project models",
        "",
        "Generated by `conformance/source_coverage.py` from the real package's source; do not "
        "edit.",
        "",
        "| Source (sglang/srt/) | messages | modelled | refusals | modelled "
        "| why the rest is not |",
        "|---|---|---|---|---|---|",
    ]
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for site in sites:
        group = "refusals" if site.kind in ("raise", "assert") else "messages"
        per[site.path][group] += 1
        if site.modelled_in:
            per[site.path][group + "_modelled"] += 1
    total: Counter[str] = Counter()
    for path, counts in sorted(per.items()):
        total.update(counts)
        lines.append(
            f"| {path} | {counts['messages']} | {counts['messages_modelled']} | "
            f"{counts['refusals']} | {counts['refusals_modelled']} | {reason(path)} |"
        )
    lines.append(
        f"| **all** | {total['messages']} | {total['messages_modelled']} | "
        f"{total['refusals']} | {total['refusals_modelled']} | |"
    )
    lines += [
        "",
        "## Every site",
        "",
        "| Source:line | function | kind | text (`{}`: a value) | modelled in |",
        "|---|---|---|---|---|",
    ]
    for site in sites:
        text = site.text.replace("|", "\\|").replace("\n", " ")
        text = text if len(text) <= 110 else text[:107] + "..."
        lines.append(
            f"| {site.path}:{site.line} | {site.function} | {site.kind} | {text} | "
            f"{site.modelled_in or '-'} |"
        )
    return "\n".join(lines) + "\n"


README = ROOT / "conformance" / "README.md"
BEGIN, END = "<!-- coverage:begin -->", "<!-- coverage:end -->"


def update_readme(markdown: str, readme: Path = README) -> None:
    """Put the per-file summary (the generated file's first table) between the README's
    markers, so the README's coverage table is the generated one."""
    summary = markdown.split("\n## Every site")[0].split("\n\n", 2)[2].strip()
    text = readme.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    readme.write_text(f"{head}{BEGIN}\n{summary}\n{END}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=SITE, help="the real package's site-packages")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    sites = enumerate_sites(args.site)
    mark_modelled(sites)
    markdown = render(sites)
    args.out.write_text(markdown)
    if BEGIN in README.read_text():
        update_readme(markdown)
    modelled = sum(bool(s.modelled_in) for s in sites)
    print(f"{len(sites)} sites, {modelled} modelled -> {args.out}")


if __name__ == "__main__":
    main()
