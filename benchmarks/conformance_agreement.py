"""Print how far the simulator agrees with real SGLang 0.5.23 (tests/data/conformance goldens).

Figures: flag catalog (option strings parsed identically), resolved server_args values (the
compared keys, and all keys), warnings before server_args, failing configs (exit status + last
line), tracebacks, tricky parser values, the plugin's expected_journal() mismatches, startup
log lines of the seed config in 0.5.23's formats and placement, and routes with real methods.
Then the wide goldens (tests/data/conformance/wide/: model families from their published
config.json on seven GPU profiles, conformance/wide.py), the tuned part and the held-out part
apart: key fields, warnings before server_args identical (text and order), failing configs
failing the same way, and the plugin refusing before deploy what the real package refuses;
then the fresh held-out extension (tests/data/conformance/wide2/, conformance/wide2.py), apart.
Run against another checkout with PYTHONPATH=<checkout> to compare (the "before" figures).

    .venv/bin/python benchmarks/conformance_agreement.py [--wide-only] [--misses N]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "conformance"))
sys.path.insert(0, str(ROOT / "tests"))

import agreement  # noqa: E402
import log_formats  # noqa: E402
import requests  # noqa: E402
import wide_agreement  # noqa: E402
from helpers import EAGLE_FLAGS  # noqa: E402

SEED = [
    "--model-path",
    "/shared/models/Qwen3.5-122B-A10B",
    "--tp-size",
    "4",
    *EAGLE_FLAGS,
    "--speculative-num-draft-tokens",
    "3",
    "--enable-metrics",
]
ROUTES = [
    ("GET", "/v1/models"),
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/completions"),
    ("POST", "/generate"),
    ("PUT", "/generate"),
    ("GET", "/health"),
    ("GET", "/health_generate"),
    ("GET", "/ready"),
    ("GET", "/ping"),
    ("GET", "/get_model_info"),
    ("GET", "/model_info"),
    ("GET", "/get_server_info"),
    ("GET", "/server_info"),
    ("GET", "/metrics"),
    ("GET", "/flush_cache"),
    ("POST", "/flush_cache"),
    ("GET", "/start_profile"),
    ("POST", "/start_profile"),
    ("GET", "/stop_profile"),
    ("POST", "/stop_profile"),
]
BODIES = {
    "/v1/chat/completions": {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
    "/v1/completions": {"prompt": "hi", "max_tokens": 2},
    "/generate": {"text": "hi", "sampling_params": {"max_new_tokens": 2}},
}


def _seed_run() -> tuple[str, int]:
    """Start the seed config, let it serve one request, stop it: (stderr, routes answered)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "SGLANG_SIM_STARTUP_SCALE": "0"}
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest_sglang.sim", *SEED, "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(600):
                try:
                    if requests.get(url + "/health", timeout=1).status_code == 200:
                        break
                except requests.RequestException:
                    pass
                time.sleep(0.05)
            answered = 0
            for method, path in ROUTES:
                resp = requests.request(method, url + path, json=BODIES.get(path), timeout=30)
                answered += resp.status_code == 200
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        err.seek(0)
        return err.read().decode(errors="replace"), answered


def _wide(misses: int) -> None:
    """The wide matrix's figures, tuned and held-out part apart; then the fresh held-out
    extension's (conformance/wide2.py), apart from both."""
    parts = [("wide ", wide_agreement.load_wide(), part) for part in wide_agreement.PARTS]
    parts.append(("wide2 fresh ", wide_agreement.load_wide(wide_agreement.WIDE2), "held_out"))
    for label, profiles, part in parts:
        figures = wide_agreement.measure_part(part, profiles)
        print(label + figures.line())
        listed = figures.sim.misses + figures.refusals.misses + figures.journal.mismatches
        for miss in listed[:misses]:
            print("  " + miss)
        if len(listed) > misses:
            print(f"  ... {len(listed) - misses} more")


def main() -> None:
    import argparse

    import pytest_sglang

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wide-only", action="store_true", help="the wide goldens' figures only")
    parser.add_argument("--misses", type=int, default=0, help="differences listed per wide part")
    args = parser.parse_args()
    print(f"simulator: {Path(pytest_sglang.__file__).parent}")
    if args.wide_only:
        _wide(args.misses)
        return
    agree, total, _ = agreement.measure_catalog()
    print(f"flag catalog: {agree}/{total} option strings parse identically")
    result = agreement.measure()
    print(result.line())
    journal = agreement.measure_journal()
    print(
        f"expected_journal(): {len(journal.mismatches)} mismatches in "
        f"{journal.checked_values} values + {journal.checked_warnings} warnings "
        f"over {journal.configs} configs"
    )
    stderr, answered = _seed_run()
    good, misses = log_formats.check_startup(stderr, tp=4)
    print(f"seed startup log: {good}/{good + len(misses)} lines in 0.5.23's format and placement")
    for miss in misses[:12]:
        print("  " + miss)
    print(f"routes: {answered}/{len(ROUTES)} (method, path) pairs answered 200")
    _wide(args.misses)


if __name__ == "__main__":
    main()
