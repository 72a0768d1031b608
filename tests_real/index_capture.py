"""Add a capture's cases to the failure corpus, labelled by the batch's rule and nothing else.

Usage (after ``capture_failures.py OUT_DIR --batch N``)::

    python tests_real/index_capture.py OUT_DIR PREFIX N     # e.g. /tmp/cap38 fresh38_ 38

Why: a held-out batch measures the classifier only if no one chose its labels by reading the
logs. Each captured log is copied into ``tests/data/failures/`` as ``PREFIX + "real_" + id``
and given its ``index.json`` entry mechanically: a case that served is a control; any other that
ended is a failure whose ``category`` is the cause the batch's rule fixed before capture and
whose ``must_contain`` is the line :func:`capture_failures.must_contain` cites; a case that timed
out says nothing and is left out (and printed). Cases already in the index are kept as they are.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

from capture_failures import READY, must_contain

CORPUS = Path(__file__).parent.parent / "tests" / "data" / "failures"
#: The tier's surroundings every real-package case was captured in (its ``source`` says them).
SOURCE = (
    "real SGLang 0.5.23 on CPU (the real-SGLang tier's venv and tiny Llama, "
    "SGLANG_USE_CPU_ENGINE=1, --device cpu --attention-backend torch_native "
    "--sampling-backend pytorch --disable-cuda-graph --max-total-tokens 16384)"
)


def entry(case: dict[str, Any], text: str, file: str, batch: int) -> dict[str, Any] | None:
    """The index entry of one captured case, or None for one that timed out."""
    outcome, fault = str(case["outcome"]), case["fault"]
    common = {"file": file, "source": f"{SOURCE} with {fault}"}
    if outcome == "ready":
        ready = next(line for line in text.splitlines() if READY in line)
        return {
            **common,
            "category": None,
            "exit": "ready",
            "key_lines": [ready],
            "must_contain": "",
            "note": f"captured verbatim up to the ready line; broken on purpose ({fault}), "
            "and it serves",
            "split": "held-out",
        }
    if not outcome.startswith("exit "):
        return None  # a timeout, or a server that died after its ready line: read by hand
    code = outcome.split()[1]
    line = must_contain(text, batch=batch)
    return {
        **common,
        "category": case["expected"],
        "exit": signal.Signals(-int(code)).name if int(code) < 0 else int(code),
        "key_lines": [line],
        "must_contain": line,
        "note": f"captured verbatim; broken on purpose ({fault}), expected cause fixed by the "
        "batch's rule before capture; must_contain by the batch's rule "
        "(tests_real/capture_failures.py: must_contain)",
        "split": "held-out",
    }


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    captured, prefix, batch = Path(argv[0]), argv[1], int(argv[2])
    index: list[dict[str, Any]] = json.loads((CORPUS / "index.json").read_text())
    have = {case["file"] for case in index}
    added = 0
    for case in json.loads((captured / "manifest.json").read_text()):
        file = f"{prefix}real_{case['id']}.log"
        log = captured / f"{case['id']}.log"
        new = entry(case, log.read_text(), file, batch) if file not in have else None
        if new is None:
            if file not in have:
                print(f"left out: {case['id']} ({case['outcome']})")
            continue
        shutil.copy(log, CORPUS / file)
        index.append(new)
        added += 1
    (CORPUS / "index.json").write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n")
    print(f"{added} cases added to {CORPUS / 'index.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
