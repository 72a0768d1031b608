"""Do our figures mean what bench_serving's mean? Both clients against the same simulator.

SGLang's own ``sglang.benchmark.serving`` (the real 0.5.23 package, run offline by
``bench_serving_runner.py``) and our load generator are run one after the other, alternating,
``--trials`` times each, against one ``python -m pytest_sglang.sim`` serving an EAGLE config
(speculative decoding: 2-4 tokens per chunk, where per-token ITL and chunk gaps differ) at a
real time scale. Both send the same requests: the same prompts (a local ShareGPT-format file of
32-word prompts, read by both), 128 output tokens (``--tokens``), greedy, ignore_eos, one warmup
request, and the same arrival gaps (ours, from :meth:`Workload.arrival_delays`, replayed into
bench_serving in place of its own Poisson draw). Three loads: single stream, concurrency 16,
Poisson 8/s.

Printed per load and metric: bench_serving's figure and ours (medians over the trials) and
ours / theirs. Targets: throughput, TPOT, E2E and per-token ITL within 3 %; TTFT differs by
where the clock starts (bench_serving: before it connects and serialises; ours: as the bytes
are written on a connection opened in advance, see docs/metrics.md), so it is printed, not held
to 3 %. The same offset is in E2E (and so in throughput, when requests start in lock-step
waves): the line ``mean E2E - mean TTFT`` shows what is left once it cancels out.

The endpoint is ``/generate`` (bench_serving's default ``sglang`` backend) by default;
``--endpoint completions`` (``sglang-oai``) or ``chat`` (``sglang-oai-chat``) compares those, where
bench_serving re-tokenizes each chunk's text with the local tokenizer to spread the gap.

bench_serving is not a project dependency: ``--install`` creates its venv (default
``~/.cache/pytest-sglang/bench-serving``) with ``pip install --no-deps sglang==0.5.23`` plus
only what bench_serving imports (no torch; a few minutes). Its tokenizer is a word-level one
built from the simulator's vocabulary with ``tokenizers`` (one word, one token, as on the
simulator) and saved to a directory; nothing is downloaded at run time.
Shared prefixes (``--loads gsp-c16,gsp-rate8``): our ``Workload.shared_prefix`` and bench_serving's
``--dataset-name generated-shared-prefix`` with the same ``--gsp-*`` arguments (``--gsp`` GROUPS,
PER_GROUP, SYSTEM_LEN, QUESTION_LEN; output ``--tokens``), both flushing the cache after the
warmup request. First the structure is held to be the same: bench_serving's own generator is
run (its module, its seeding) and each request's prompt length, output length and group (the
system prompt it shares) are compared with ours, request by request, group by group
(``--gsp-ordered``, the default) or shuffled (``--no-gsp-ordered``: both draw the shuffle from
the same seed the same way).
Then the figures, as above, with the cache hit rate (both from ``meta_info.cached_tokens``;
bench_serving's ``--cache-report``).

Usage: ``python benchmarks/peer_bench_serving.py [--install | --venv DIR] [--trials 3]
[--endpoint generate] [--loads single,c16,rate8,gsp-c16,gsp-rate8] [--tokens 128]
[--gsp 8,8,1024,64] [--no-gsp-ordered]``. Not part of ``make test``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from client_ceiling import TOKENIZER_SCRIPT

from pytest_sglang.bench import ShareGPTPrompts, Workload, run_workload
from pytest_sglang.sim.launch import start_simulator
from pytest_sglang.sim.tokenizer import VOCAB

MODEL = "qwen3-8b"
DEFAULT_VENV = Path.home() / ".cache" / "pytest-sglang" / "bench-serving"
PACKAGES = (
    "aiohttp",
    "numpy",
    "msgspec",
    "orjson",
    "pybase64",
    "requests",
    "tqdm",
    "transformers",
    "tokenizers",
    "pillow",
)
EAGLE = (
    *("--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3"),
    *("--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"),
)
BACKENDS = {"generate": "sglang", "completions": "sglang-oai", "chat": "sglang-oai-chat"}
PROMPT_WORDS = 32
#: (metric, held to the 3 % target)
METRICS = (
    ("output_throughput", True),
    ("request_throughput", True),
    ("mean_tpot_ms", True),
    ("median_tpot_ms", True),
    ("mean_e2e_latency_ms", True),
    ("median_e2e_latency_ms", True),
    ("mean_itl_ms", True),
    ("median_itl_ms", True),
    ("p99_itl_ms", False),
    ("mean_ttft_ms", False),
    ("median_ttft_ms", False),
    ("total_output_tokens", True),
    ("total_input_tokens", False),
)


def install(venv: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "-q"]
    subprocess.run([*pip, "--no-deps", "sglang==0.5.23"], check=True)
    subprocess.run([*pip, *PACKAGES], check=True)


#: bench_serving's ``--seed`` and our shared-prefix workload's: the same requests in the same
#: order on both sides (SharedPrefixPrompts draws its words and its shuffle as bench_serving does).
SEED = 1


@dataclasses.dataclass(frozen=True)
class Gsp:
    """The generated-shared-prefix arguments both clients get."""

    groups: int
    per_group: int
    system_len: int
    question_len: int
    output_len: int
    ordered: bool

    def workload(self, concurrency: int | None, rate: float | None) -> Workload:
        return Workload.shared_prefix(
            self.groups, self.per_group, self.system_len, self.question_len, self.output_len,
            concurrency=concurrency, request_rate=rate, ordered=self.ordered, api="generate",
            flush_cache=True, seed=SEED,
        )  # fmt: skip

    def flags(self) -> list[str]:
        """bench_serving's flags for the same dataset (its cache flushed after the warmup)."""
        return [
            *("--dataset-name", "generated-shared-prefix"),
            *("--gsp-num-groups", str(self.groups), "--gsp-prompts-per-group", str(self.per_group)),
            *("--gsp-system-prompt-len", str(self.system_len)),
            *("--gsp-question-len", str(self.question_len)),
            *("--gsp-output-len", str(self.output_len), "--flush-cache"),
            *(["--gsp-ordered"] if self.ordered else []),
            "--cache-report",
        ]


def loads(
    names: list[str], prompts: ShareGPTPrompts, tokens: int, gsp: Gsp
) -> list[tuple[Workload, Gsp | None]]:
    common: dict[str, Any] = dict(output_tokens=tokens, prompts=prompts, api="generate")
    out: list[tuple[Workload, Gsp | None]] = []
    for name in names:
        if name == "gsp-c16":
            out.append((gsp.workload(16, None), gsp))
        elif name == "gsp-rate8":
            out.append((gsp.workload(None, 8.0), gsp))
        elif name == "single":
            out.append(Workload.single_stream(requests=12, **common))
        elif name == "c16":
            out.append(Workload.fixed_concurrency(16, num_requests=64, **common))
        elif name == "rate8":
            out.append(Workload.rate(8.0, num_requests=64, seed=3, **common))
        else:
            raise SystemExit(f"--loads: unknown load {name!r} (single, c16, rate8)")
    return out


def write_prompts(path: Path, count: int, tokens: int) -> None:
    """ShareGPT-format conversations with 32-word prompts (one word, one token on both sides)."""
    rows = []
    for i in range(count):
        words = [VOCAB[(i * 7 + k * 13) % len(VOCAB)] for k in range(PROMPT_WORDS)]
        reply = [VOCAB[(i + k) % len(VOCAB)] for k in range(tokens)]
        rows.append(
            {
                "conversations": [
                    {"from": "human", "value": " ".join(words)},
                    {"from": "gpt", "value": " ".join(reply)},
                ]
            }
        )
    path.write_text(json.dumps(rows))


#: bench_serving's generated-shared-prefix rows, from its own generator seeded as its CLI seeds
#: it (``random`` and ``numpy`` with ``--seed``): [prompt, prompt_len, output_len] each.
GSP_SCRIPT = """
import json, random, sys
import numpy as np
from bench_serving_runner import _mount_sglang
_mount_sglang()
from transformers import AutoTokenizer
from sglang.benchmark.datasets.generated_shared_prefix import (
    sample_generated_shared_prefix_requests,
)
tokenizer_dir, seed, groups, per, system, question, output, ordered = sys.argv[1:9]
random.seed(int(seed))
np.random.seed(int(seed))
rows = sample_generated_shared_prefix_requests(
    num_groups=int(groups), prompts_per_group=int(per), system_prompt_len=int(system),
    question_len=int(question), output_len=int(output), range_ratio=1.0,
    tokenizer=AutoTokenizer.from_pretrained(tokenizer_dir), seed=int(seed),
    ordered=ordered == "1",
)
print(json.dumps([[r.prompt, r.prompt_len, r.output_len] for r in rows]))
"""


def peer_env(work: Path, gsp: Gsp | None = None) -> dict[str, str]:
    """bench_serving's environment: no HF_HUB_OFFLINE (it refuses a local tokenizer directory
    then, peer-clients.md), and HOME in the scratch directory: it caches generated datasets
    under ~/.cache/sglang keyed by the lengths and the tokenizer's class, not by the
    vocabulary nor ``--gsp-ordered``, so each ordering gets a home of its own."""
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    home = work / ("home" if gsp is None else f"home-{'ordered' if gsp.ordered else 'shuffled'}")
    home.mkdir(exist_ok=True)
    return {**env, "HOME": str(home)}


def structure(rows: list[tuple[str, int, int]]) -> list[tuple[int, int, int]]:
    """(prompt tokens, output tokens, group) per request; groups numbered by first appearance
    of their system prompt (the text before the blank line), one word one token."""
    seen: dict[str, int] = {}
    return [
        (len(prompt.split()), output, seen.setdefault(prompt.split("\n\n")[0], len(seen)))
        for prompt, output in ((r[0], r[2]) for r in rows)
    ]


def check_structure(python: Path, work: Path, workload: Workload, gsp: Gsp) -> None:
    """The same lengths and sharing on both sides, or exit naming the first difference."""
    script = [str(python), "-c", GSP_SCRIPT, str(work / "tokenizer"), str(SEED)]
    args = [gsp.groups, gsp.per_group, gsp.system_len, gsp.question_len, gsp.output_len]
    run = subprocess.run(
        [*script, *map(str, args), "1" if gsp.ordered else "0"],
        capture_output=True, text=True, timeout=600, env={
            **peer_env(work, gsp), "PYTHONPATH": str(Path(__file__).resolve().parent)
        },
    )  # fmt: skip
    if run.returncode != 0:
        raise SystemExit(f"bench_serving's generator failed: {run.stderr[-2000:]}")
    peer = structure([tuple(r) for r in json.loads(run.stdout.splitlines()[-1])])
    mine = structure([(p, 0, n) for p, n in workload.requests()])
    sizes = sorted(Counter(g for *_, g in mine).values())
    shared = [sum(1 for i in range(1, len(r)) if r[i][2] == r[i - 1][2]) for r in (peer, mine)]
    print(
        f"  structure: {len(mine)} requests, {len(set(g for *_, g in mine))} groups of "
        f"{sizes[0]}-{sizes[-1]}, prompt {mine[0][0]} tokens, output {mine[0][1]}, "
        f"{'ordered' if gsp.ordered else 'shuffled'}; request by request: "
        f"{'same' if peer == mine else 'DIFFERENT'} (consecutive same-group pairs: theirs "
        f"{shared[0]}, ours {shared[1]})"
    )
    if peer != mine:
        first = next((i for i, (a, b) in enumerate(zip(peer, mine)) if a != b), len(mine))
        raise SystemExit(
            f"structure differs at request {first} of {len(peer)} / {len(mine)}: theirs "
            f"{peer[first] if first < len(peer) else None}, "
            f"ours {mine[first] if first < len(mine) else None}"
        )


def theirs(
    python: Path,
    work: Path,
    url: str,
    workload: Workload,
    backend: str,
    dataset: Path,
    gsp: Gsp | None = None,
) -> dict[str, Any]:
    gaps = work / "gaps.json"
    gaps.write_text(json.dumps(workload.arrival_delays()[: workload.num_requests - 1]))
    out = work / "result.jsonl"
    out.unlink(missing_ok=True)
    if gsp is None:
        data = [
            *("--dataset-name", "sharegpt", "--dataset-path", str(dataset)),
            *("--sharegpt-output-len", str(workload.output_tokens)),
        ]
    else:
        data = gsp.flags()
    flags = [
        *("--backend", backend, "--base-url", url, "--model", MODEL),
        *("--tokenizer", str(work / "tokenizer"), *data),
        *("--num-prompts", str(workload.num_requests), "--output-file", str(out)),
        *("--warmup-requests", "1", "--disable-tqdm", "--seed", str(SEED)),
        *("--request-rate", str(workload.request_rate or "inf")),
    ]
    if workload.concurrency is not None:
        flags += ["--max-concurrency", str(workload.concurrency)]
    runner = Path(__file__).with_name("bench_serving_runner.py")
    run = subprocess.run(
        [str(python), str(runner), str(gaps), "--", *flags],
        capture_output=True,
        text=True,
        env=peer_env(work, gsp),
        timeout=600,
    )
    if run.returncode != 0 or not out.is_file():
        raise SystemExit(f"bench_serving failed ({run.returncode}): {run.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(out.read_text().splitlines()[-1])
    return result


def ours(url: str, workload: Workload, api: str) -> dict[str, Any]:
    w = dataclasses.replace(workload, api=api)
    result = run_workload(url, w, model=MODEL)
    if result.failed:
        raise SystemExit(f"our client: {result.failed} failed: {result.errors[:2]}")
    return result.as_dict()


def report(name: str, mine: list[dict[str, Any]], peer: list[dict[str, Any]]) -> None:
    print(f"\n{name}: medians of {len(mine)} trials each (bench_serving | ours | ours/theirs)")
    for metric, held in METRICS:
        a = statistics.median(float(r[metric]) for r in peer)
        b = statistics.median(float(r[metric]) for r in mine)
        ratio = b / a if a else float("nan")
        mark = ("ok" if abs(ratio - 1) <= 0.03 else "OFF") if held else "-"
        print(f"  {metric:<24} {a:12.3f} {b:12.3f} {ratio:8.3f}  {mark}")
    # E2E minus TTFT: what is left once the clocks' different starts cancel out
    span = [
        statistics.median(r["mean_e2e_latency_ms"] - r["mean_ttft_ms"] for r in rows)
        for rows in (peer, mine)
    ]
    print(
        f"  {'mean E2E - mean TTFT':<24} {span[0]:12.3f} {span[1]:12.3f} {span[1] / span[0]:8.3f}"
    )
    if all("cache_report" in r for r in peer):  # theirs a percentage, ours a fraction
        a = statistics.median(float(r["cache_report"]["cache_hit_rate_pct"]) / 100 for r in peer)
        b = statistics.median(float(r.get("cache_hit_rate") or 0.0) for r in mine)
        print(f"  {'cache_hit_rate':<24} {a:12.3f} {b:12.3f} {b / a if a else float('nan'):8.3f}")
    chunk = statistics.median(float(r["median_chunk_gap_ms"]) for r in mine)
    print(f"  {'median_chunk_gap_ms':<24} {'':>12} {chunk:12.3f}  (ours only)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    parser.add_argument("--install", action="store_true", help="create the bench_serving venv")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--endpoint", choices=sorted(BACKENDS), default="generate")
    parser.add_argument("--loads", default="single,c16,rate8")
    parser.add_argument("--tokens", type=int, default=128, help="output tokens per request")
    parser.add_argument(
        "--gsp", default="8,8,1024,64", help="GROUPS,PER_GROUP,SYSTEM_LEN,QUESTION_LEN"
    )
    parser.add_argument("--no-gsp-ordered", dest="gsp_ordered", action="store_false")
    args = parser.parse_args()
    groups, per_group, system_len, question_len = (int(x) for x in args.gsp.split(","))
    gsp = Gsp(groups, per_group, system_len, question_len, args.tokens, args.gsp_ordered)
    sys.stdout.reconfigure(line_buffering=True)  # each load's table as soon as it is done
    python = args.venv / "bin" / "python"
    if args.install and not python.exists():
        install(args.venv)
    if not python.exists():
        raise SystemExit(f"no bench_serving venv at {args.venv}: rerun with --install")
    with tempfile.TemporaryDirectory(prefix="peer-bench-serving-") as tmp:
        work = Path(tmp)
        subprocess.run(
            [str(python), "-c", TOKENIZER_SCRIPT, str(work / "tokenizer")],
            check=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
            stderr=subprocess.DEVNULL,
        )
        dataset = work / "prompts.json"
        write_prompts(dataset, 256, args.tokens)
        prompts = ShareGPTPrompts(dataset, max_prompt_tokens=64)
        with start_simulator(*EAGLE, "--served-model-name", MODEL) as sim:
            for workload, shared in loads(args.loads.split(","), prompts, args.tokens, gsp):
                if shared is not None:
                    print(f"\n{workload.name}: {shared}")
                    check_structure(python, work, workload, shared)
                mine: list[dict[str, Any]] = []
                peer: list[dict[str, Any]] = []
                backend = BACKENDS[args.endpoint]
                for _ in range(args.trials):
                    peer.append(theirs(python, work, sim.url, workload, backend, dataset, shared))
                    mine.append(ours(sim.url, workload, args.endpoint))
                report(f"{workload.name} ({workload.arrivals}, {args.endpoint})", mine, peer)


if __name__ == "__main__":
    main()
