"""Write tests/data/real_aliases_0.5.23.json: what real 0.5.23 makes of deprecated spellings.

Why apart from the goldens: these command lines reach ``handle_deprecated_args`` (values it
renames, with a warning) and argparse's choices; one GPU profile is enough, and adding them to
the matrix would move every golden's common values. Run with the conformance venv's Python::

    $(CONFORMANCE_VENV)/bin/python conformance/aliases.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402
from matrix import PROFILES, expand  # noqa: E402
from stubs import install  # noqa: E402

OUT = os.path.join(HERE, "..", "tests", "data", "real_aliases_0.5.23.json")
PROFILE = "h200x8"
MODEL = "Qwen3-8B"
CONFIGS: dict[str, list[str]] = {
    "glm45": ["--tool-call-parser", "glm45"],
    "qwen25": ["--tool-call-parser", "qwen25"],
    "compressed": ["--attention-backend", "compressed"],
    "prefill_tokenspeed": ["--prefill-attention-backend", "tokenspeed_mla"],
    "fast_image": ["--disable-fast-image-processor"],
    "grpc": ["--grpc-mode"],
    "fi_fusion": ["--enable-flashinfer-allreduce-fusion"],
    "ngram_d8_b4": [
        "--speculative-algorithm",
        "NGRAM",
        "--speculative-num-draft-tokens",
        "8",
        "--speculative-ngram-max-bfs-breadth",
        "4",
    ],
    "kv_fp8": ["--kv-cache-dtype", "fp8"],
}
#: the resolved keys these command lines touch
KEYS = (
    "tool_call_parser",
    "attention_backend",
    "prefill_attention_backend",
    "decode_attention_backend",
    "kv_cache_dtype",
    "image_processor_backend",
    "disable_fast_image_processor",
    "smg_grpc_mode",
    "grpc_mode",
    "grpc_port",
    "enable_flashinfer_allreduce_fusion",
    "flashinfer_allreduce_fusion_backend",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "moe_runner_backend",
    "moe_a2a_backend",
    "speculative_attention_mode",
)


def main() -> None:
    profile = next(p for p in PROFILES if p.key == PROFILE)
    work = tempfile.mkdtemp(prefix="sglang-aliases-")
    install(profile, os.path.join(work, "bin"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    models = os.path.join(work, "models")
    harness.write_models(models)
    configs: dict[str, Any] = {}
    for name, argv in CONFIGS.items():
        entry = harness.run_config(expand(["--model-path", f"{{models}}/{MODEL}", *argv], models))
        kept: dict[str, Any] = {
            "argv": argv,
            "exit_code": entry["exit_code"],
            "log_before_server_args": entry["log_before_server_args"],
        }
        if entry["exit_code"]:
            kept["last_line"] = entry.get("last_line")
        else:
            kept["server_args"] = {k: entry["server_args"][k] for k in KEYS}
        configs[name] = kept
        print(f"{name}: exit {entry['exit_code']}", file=sys.stderr, flush=True)
    golden = {
        "sglang_version": "0.5.23",
        "profile": PROFILE,
        "model": MODEL,
        "how": (
            "the real package's parser and resolve_once() run by conformance/harness.py "
            f"run_config on the {PROFILE} profile, model {{models}}/{MODEL} "
            "(conformance/aliases.py)"
        ),
        "configs": configs,
    }
    with open(OUT, "w") as handle:
        json.dump(golden, handle, indent=1)
        handle.write("\n")


if __name__ == "__main__":
    main()
