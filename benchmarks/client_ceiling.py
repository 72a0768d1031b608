"""Is our client ever the bottleneck? Streamed tokens/s and client CPU per token, next to AIPerf.

Two phases, each against a fresh ``python -m pytest_sglang.sim`` (no speculation, so every
token is its own SSE chunk: the client's worst case), chat completions, ``--concurrency``
streams (256), 32-word prompts, greedy, ignore_eos, every client run one after the other:

- ceiling: the simulator at full speed (SGLANG_SIM_TIME_SCALE=0), ``--requests`` x ``--tokens``;
  whoever burns less CPU per token streams more. ``--trials`` runs per client, alternating, and
  the best counts: on a shared 2-core machine other work only ever slows a run down.
- agreement: the simulator paces every stream (TTFT 50 ms, ITL 200 ms) and both clients send
  the same load, 1024 requests x 64 tokens at a constant 20 requests/s with at most 256 in
  flight (~253 run at once), far below both clients' ceilings: both must report the same tok/s
  (within 3 %). Both compute it as bench_serving does: output tokens from the server's usage
  over first request sent to last response done.

Each client runs in its own process. A sampler polls the server's ``generation_tokens_total``
and the CPU time of the client's and the simulator's process trees (``/proc``, see
:class:`ProcessTree`) every 50 ms; the
figures come from the streaming window (first to last sample in which tokens were generated),
so start-up (AIPerf imports pandas and transformers and starts a dozen processes) is left out
for both. Per run: the client's own tok/s figure, the server's tok/s over the window, client CPU
microseconds per token, and the cores the client and the simulator used.

AIPerf is not a project dependency; install it apart (about 1.2 GB, no torch, ~2 min):
``python3 -m venv /tmp/aiperf-venv && /tmp/aiperf-venv/bin/pip install aiperf``. It is found via
``--aiperf PATH``, ``$AIPERF``, ``aiperf`` on PATH or /tmp/aiperf-venv/bin/aiperf; without it the
peer is skipped with that hint. It needs a tokenizer on disk: one is built from the simulator's
vocabulary with the ``tokenizers`` and ``transformers`` of AIPerf's own environment, and
``--use-server-token-count`` makes it count tokens from the server's usage as we do.
``--httpx-python PY`` adds a minimal httpx client (the HTTP library choice, see loadgen.py).

``--via-host`` puts the simulator on the systemd test host of tests/testhost.py (as its service,
reachable at its address) and runs our client two ways against it, alternating: from here
straight to that address ("ours") and as the on-host generator of ``bench_from = "host"``
("on-host": started over SSH, run from memory, its records sent back as JSON lines). Its CPU is
that of the generator's process tree on the host (visible here: the container's processes are
in this machine's process table). Same figures, so the two rows say whether the generator keeps
the client's ceiling and its cost per token. Needs root, systemd-nspawn and sshd; AIPerf is
not run there.
Usage: ``python benchmarks/client_ceiling.py [--concurrency 256] [--requests 1024] [--tokens 128]
[--trials 3] [--phase both|ceiling|agreement] [--paced-rate 20] [--paced-itl 200]
[--httpx-python /tmp/aiperf-venv/bin/python] [--via-host]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from pytest_sglang.bench import RandomPrompts, Workload
from pytest_sglang.bench.prometheus import parse_prometheus
from pytest_sglang.sim.launch import start_simulator

MODEL = "qwen3-8b"
INSTALL_HINT = (
    "python3 -m venv /tmp/aiperf-venv && /tmp/aiperf-venv/bin/pip install aiperf  "
    "(~1.2 GB, no torch), then rerun (or pass --aiperf /tmp/aiperf-venv/bin/aiperf)"
)
SAMPLE_S = 0.05
#: The agreement phase: the simulator sets the pace (TTFT 50 ms, a token every 200 ms per
#: stream) and both clients send the same evenly spaced arrivals (20 requests/s, at most 256 in
#: flight: 64 tokens take 12.65 s, so ~253 streams run at once, ~1,270 chunks/s), so both must
#: report the same tok/s. Why not fixed concurrency here: with identical requests every stream
#: ends at once, and the client re-dispatches 256 requests per wave; AIPerf's single worker on
#: 2 cores takes 0.4-0.9 s for that (and lags reading while it files 256 records), 3-11 % of
#: the run, which measures its dispatcher rather than the server. At 100 ms per token AIPerf
#: (~300 us per separately arriving chunk) fell behind the streams themselves.
PACED_TTFT_MS = 50
PACED_ITL_MS = 200.0
PACED_RATE = 20.0
PACED_REQUESTS = 1024
PACED_TOKENS = 64
CLIENT_TIMEOUT_S = 600
TICKS = os.sysconf("SC_CLK_TCK")

TOKENIZER_SCRIPT = """
import sys
from tokenizers import Tokenizer, models, pre_tokenizers, decoders
from transformers import PreTrainedTokenizerFast
from pytest_sglang.sim.tokenizer import VOCAB
vocab = {"[UNK]": 0, "<|im_end|>": 1}
for word in VOCAB:
    vocab.setdefault(word, len(vocab))
tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok.decoder = decoders.WordPiece(prefix="##")
fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="<|im_end|>")
fast.save_pretrained(sys.argv[1])
"""

OURS_SCRIPT = """
import json, math, sys
from pytest_sglang.bench import RandomPrompts, Workload, run_workload
url, conc, n, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rate, warmup = float(sys.argv[6]), int(sys.argv[7])
options = dict(output_tokens=tokens, prompts=RandomPrompts(32), warmup_requests=warmup)
if rate > 0:
    w = Workload.rate(rate, n, max_concurrency=conc, burstiness=math.inf, **options)
else:
    w = Workload.fixed_concurrency(conc, num_requests=n, **options)
r = run_workload(url, w, model=sys.argv[5])
print(json.dumps({"tok_s": r.output_throughput, "completed": r.completed, "failed": r.failed,
                  "ttft": r.median_ttft_ms, "itl": r.median_itl_ms}))
"""


HTTPX_SCRIPT = """
import asyncio, json, sys, time
import httpx
url, model = sys.argv[1], sys.argv[5]
conc, n, tokens = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
words = "the of and to in is you that it he was for on are as with his they at be".split()
prompt = " ".join(words[i % len(words)] for i in range(32))
body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": tokens,
        "temperature": 0, "ignore_eos": True, "stream": True,
        "stream_options": {"include_usage": True}}
async def main():
    limits = httpx.Limits(max_connections=conc + 2, max_keepalive_connections=conc + 2)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(300.0)) as client:
        gate, total = asyncio.Semaphore(conc), [0, 0]
        async def one():
            async with gate:
                async with client.stream("POST", url + "/v1/chat/completions", json=body) as r:
                    buf = b""
                    async for piece in r.aiter_bytes():
                        buf += piece
                        while b"\\n\\n" in buf:
                            event, buf = buf.split(b"\\n\\n", 1)
                            data = event[5:].strip()
                            if data == b"[DONE]":
                                total[1] += 1
                                continue
                            usage = json.loads(data).get("usage")
                            if usage:
                                total[0] += usage["completion_tokens"]
        await one()
        total[:] = [0, 0]
        began = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(n)))
        duration = time.perf_counter() - began
    print(json.dumps({"tok_s": total[0] / duration, "completed": total[1], "failed": n - total[1]}))
asyncio.run(main())
"""


@dataclass
class Sample:
    at: float
    server_tokens: float
    cpu_s: float
    server_cpu_s: float


@dataclass
class Window:
    samples: list[Sample] = field(default_factory=list)

    def take(self, url: str, client: ProcessTree, server: ProcessTree) -> None:
        """One sample now (the last token count again when /metrics did not answer)."""
        try:
            tokens = _server_tokens(url)
        except requests.RequestException:
            tokens = self.samples[-1].server_tokens if self.samples else 0.0
        self.samples.append(Sample(time.perf_counter(), tokens, client.cpu_s(), server.cpu_s()))

    def streaming(self) -> tuple[float, float, float, float] | None:
        """(seconds, server tokens, client CPU s, server CPU s) between the first and the last
        sample in which the server's token counter moved."""
        moving = [
            i
            for i in range(1, len(self.samples))
            if self.samples[i].server_tokens > self.samples[i - 1].server_tokens
        ]
        if not moving:
            return None
        a, b = self.samples[moving[0] - 1], self.samples[moving[-1]]
        return (
            b.at - a.at,
            b.server_tokens - a.server_tokens,
            b.cpu_s - a.cpu_s,
            b.server_cpu_s - a.server_cpu_s,
        )


class ProcessTree:
    """CPU seconds (utime + stime, reaped children included) of a process and its descendants.

    Finding the descendants means reading every /proc/<pid>/stat (2-3 ms with ~80 processes);
    done at every 50 ms sample for two trees, that alone took a tenth of a core from the
    machine under test. The tree is rescanned once a second; in between only its own members'
    stat files are read (a process that exits in between has its time in its parent's c*time).
    """

    RESCAN_S = 1.0

    def __init__(self, root: int) -> None:
        self.root = root
        self.members: list[int] = [root]
        self.scanned = 0.0

    def _rescan(self) -> None:
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                raw = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(raw[raw.rindex(")") + 2 :].split()[1]), []).append(int(entry))
        members, todo = [], [self.root]
        while todo:
            pid = todo.pop()
            members.append(pid)
            todo.extend(children.get(pid, []))
        self.members = members

    def cpu_s(self) -> float:
        now = time.monotonic()
        if now - self.scanned >= self.RESCAN_S:
            self._rescan()
            self.scanned = now
        total = 0.0
        for pid in self.members:
            try:
                raw = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            fields = raw[raw.rindex(")") + 2 :].split()
            # utime, stime, cutime, cstime: reaped children's time is kept in the parent's c*time
            total += sum(int(x) for x in fields[11:15]) / TICKS
        return total


def _server_tokens(url: str) -> float:
    sample = parse_prometheus(requests.get(url + "/metrics", timeout=5).text)
    if "sglang:generation_tokens_total" not in sample:
        raise SystemExit("the simulator's /metrics has no sglang:generation_tokens_total")
    return sum(sample["sglang:generation_tokens_total"][1])


def _run_sampled(
    argv: list[str], url: str, env: dict[str, str], server_pid: int
) -> tuple[str, Window, int]:
    """Run a client process to completion while sampling; returns (stdout, window, rc)."""
    window = Window()
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stop = threading.Event()
    client_tree, server_tree = ProcessTree(proc.pid), ProcessTree(server_pid)

    def sample() -> None:
        while not stop.is_set():
            window.take(url, client_tree, server_tree)
            stop.wait(SAMPLE_S)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = proc.communicate(timeout=CLIENT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    stop.set()
    sampler.join()
    if proc.returncode != 0:
        sys.stderr.write(err.decode(errors="replace")[-2000:])
    return out.decode(errors="replace"), window, proc.returncode


def _find_aiperf(given: str | None) -> str | None:
    for candidate in (given, os.environ.get("AIPERF"), shutil.which("aiperf")):
        if candidate and Path(candidate).is_file():
            return candidate
    default = Path("/tmp/aiperf-venv/bin/aiperf")
    return str(default) if default.is_file() else None


def _aiperf_argv(
    aiperf: str, url: str, tokenizer: Path, out: Path, args: argparse.Namespace
) -> list[str]:
    return [
        aiperf,
        "profile",
        "--model",
        MODEL,
        "--url",
        url,
        "--endpoint-type",
        "chat",
        "--streaming",
        "--tokenizer",
        str(tokenizer),
        "--use-server-token-count",
        "--concurrency",
        str(args.concurrency),
        "--request-count",
        str(args.requests),
        *(["--warmup-request-count", str(args.warmup)] if args.warmup else []),
        "--synthetic-input-tokens-mean",
        "32",
        "--output-tokens-mean",
        str(args.tokens),
        "--output-tokens-stddev",
        "0",
        "--extra-inputs",
        "ignore_eos:true",
        "--extra-inputs",
        "temperature:0",
        *(
            ["--request-rate", str(args.rate), "--arrival-pattern", "constant"]
            if args.rate > 0
            else []
        ),
        "--artifact-dir",
        str(out),
        "--ui-type",
        "none",
        # side work this comparison does not use: scraping the server's /metrics (it would
        # load the simulator), polling DCGM exporters, per-request JSONL records
        "--no-server-metrics",
        "--no-gpu-telemetry",
        "--export-level",
        "summary",
    ]


def _aiperf_tok_s(out: Path) -> tuple[float | None, str]:
    files = sorted(out.rglob("profile_export_aiperf.json"))
    if not files:
        return None, "no profile_export_aiperf.json"
    data = json.loads(files[0].read_text())
    metric = data.get("output_token_throughput") or {}
    value = metric.get("avg") if isinstance(metric, dict) else None
    count = (data.get("request_count") or {}).get("avg")
    errors = (data.get("error_request_count") or {}).get("avg")
    note = f"requests {count}, errors {errors}"
    ttft = (data.get("time_to_first_token") or {}).get("p50")
    itl = (data.get("inter_token_latency") or {}).get("p50")
    if ttft is not None and itl is not None:
        note += f", p50 TTFT {ttft:.1f} ms, p50 ITL {itl:.2f} ms"
    return (float(value) if value is not None else None), note


@dataclass
class Run:
    """One client run: its own tok/s figure and the sampled streaming window."""

    client: str
    tok_s: float | None
    window: Window
    note: str

    def figures(self) -> tuple[float, float, float, float] | None:
        """(server tok/s, client CPU us/token, client cores, server cores) over the window."""
        stream = self.window.streaming()
        if stream is None or stream[1] <= 0:
            return None
        seconds, tokens, cpu, server_cpu = stream
        return tokens / seconds, cpu * 1e6 / tokens, cpu / seconds, server_cpu / seconds

    def row(self) -> str:
        figures = self.figures()
        own = f"{self.tok_s:10.0f}" if self.tok_s is not None else f"{'-':>10}"
        if figures is None:
            return f"{self.client:<8} {own}   no tokens streamed ({self.note})"
        server_tok_s, us_per_token, cores, server_cores = figures
        return (
            f"{self.client:<8} {own} {server_tok_s:12.0f} {us_per_token:14.1f} {cores:8.2f} "
            f"{server_cores:8.2f}   {self.note}"
        )


def _client_argv(python: str, script: str, url: str, args: argparse.Namespace) -> list[str]:
    return [
        python,
        "-c",
        script,
        url,
        str(args.concurrency),
        str(args.requests),
        str(args.tokens),
        MODEL,
        str(args.rate),
        str(args.warmup),
    ]


def _script_run(
    client: str, argv: list[str], url: str, env: dict[str, str], server_pid: int
) -> Run:
    out, window, rc = _run_sampled(argv, url, env, server_pid)
    lines = out.strip().splitlines()
    figures = json.loads(lines[-1]) if rc == 0 and lines else {}
    note = f"completed {figures.get('completed')}, failed {figures.get('failed')}"
    if figures.get("ttft") is not None:
        note += f", p50 TTFT {figures['ttft']:.1f} ms, p50 ITL {figures['itl']:.2f} ms"
    return Run(client, figures.get("tok_s"), window, note if rc == 0 else f"exit {rc}")


def _aiperf_run(
    aiperf: str, url: str, env: dict[str, str], server_pid: int, args: argparse.Namespace
) -> Run:
    with tempfile.TemporaryDirectory(prefix="client-ceiling-") as tmp:
        tokenizer = Path(tmp) / "tokenizer"
        subprocess.run(
            [str(Path(aiperf).with_name("python")), "-c", TOKENIZER_SCRIPT, str(tokenizer)],
            check=True,
            env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
            stderr=subprocess.DEVNULL,
        )
        # AIPerf refuses a local tokenizer path when HF_HUB_OFFLINE is set
        peer_env = {k: v for k, v in env.items() if k != "HF_HUB_OFFLINE"}
        artifacts = Path(tmp) / "aiperf"
        argv = _aiperf_argv(aiperf, url, tokenizer, artifacts, args)
        _, window, rc = _run_sampled(argv, url, peer_env, server_pid)
        tok_s, note = _aiperf_tok_s(artifacts)
        return Run("aiperf", tok_s, window, f"exit {rc}, {note}")


def _workload(args: argparse.Namespace) -> Workload:
    """What OURS_SCRIPT runs, as a Workload (the on-host generator gets the same)."""
    options: dict[str, Any] = dict(
        output_tokens=args.tokens, prompts=RandomPrompts(32), warmup_requests=args.warmup
    )
    if args.rate:
        return Workload.rate(
            args.rate,
            args.requests,
            max_concurrency=args.concurrency,
            burstiness=math.inf,
            **options,
        )
    return Workload.fixed_concurrency(args.concurrency, num_requests=args.requests, **options)


def _host_run(
    deployment: Any, route: Any, url: str, server_pid: int, ns: str, args: argparse.Namespace
) -> Run:
    """One run of the on-host generator, sampled like a client process here: the server's
    token counter through its address, the CPU of the generator's process tree on the host."""
    from helpers import pids_matching  # tests/ is on the path since the host was booted

    from pytest_sglang.bench.route import run_round

    done: dict[str, Any] = {}

    def go() -> None:
        try:
            done["round"] = run_round(deployment, _workload(args), model=MODEL, route=route)
        except Exception as exc:  # reported in the row
            done["error"] = f"{type(exc).__name__}: {exc}"

    runner = threading.Thread(target=go)
    runner.start()
    window, server_tree = Window(), ProcessTree(server_pid)
    client_tree: ProcessTree | None = None
    while runner.is_alive():
        if client_tree is None:
            roots = pids_matching("<pytest-sglang>/", ns)
            client_tree = ProcessTree(roots[0]) if roots else None
        if client_tree is not None:  # samples only once its CPU can be read
            window.take(url, client_tree, server_tree)
        time.sleep(SAMPLE_S)
    runner.join()
    if "error" in done:
        return Run("on-host", None, window, done["error"][:200])
    result = done["round"].result
    note = f"completed {result.completed}, failed {result.failed}"
    if result.median_ttft_ms is not None:
        note += f", p50 TTFT {result.median_ttft_ms:.1f} ms, p50 ITL {result.median_itl_ms:.2f} ms"
    if done["round"].disturbed:
        note += f", disturbed: {done['round'].disturbed}"
    return Run("on-host", result.output_throughput, window, note)


@contextmanager
def _local_server(knobs: dict[str, str]) -> Iterator[tuple[str, int, Callable[[], Run] | None]]:
    """The simulator here: its URL, its PID, and no on-host run."""
    flags = ("--served-model-name", MODEL, "--enable-metrics", "--max-running-requests", "1024")
    with start_simulator(*flags, env=knobs) as sim:
        yield sim.url, sim.pid, None


def _test_host_server(
    args: argparse.Namespace,
) -> Callable[[dict[str, str]], Any]:
    """The simulator as the systemd test host's service (listening on its address): its URL,
    its PID in this machine's process table, and a run of the on-host generator."""

    @contextmanager
    def server(knobs: dict[str, str]) -> Iterator[tuple[str, int, Callable[[], Run] | None]]:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from helpers import booted_test_host, container_namespace, deployed_on, pids_matching

        from pytest_sglang.bench.route import route_of
        from pytest_sglang.config import ServerConfig

        config = ServerConfig(
            model_path="/models/sim",
            served_model_name=MODEL,
            host="0.0.0.0",
            max_running_requests=1024,
            extra_args=("--enable-metrics",),
        )
        env = {**knobs, "SGLANG_SIM_STARTUP_SCALE": "0"}
        with (
            booted_test_host("client_ceiling", "ceil") as host,
            deployed_on(host, "sglang-ceiling.service", config, env) as deployment,
        ):
            route = route_of(deployment, "host")
            direct = route_of(deployment, "direct").base_url
            ns = container_namespace(host.name)
            (server_pid,) = pids_matching("-m pytest_sglang.sim", ns)
            yield (
                direct,
                server_pid,
                lambda: _host_run(deployment, route, direct, server_pid, ns, args),
            )

    return server


def _best(runs: list[Run], client: str) -> float | None:
    figures = [r.tok_s for r in runs if r.client == client and r.tok_s]
    return max(figures) if figures else None


def _phase(
    title: str,
    knobs: dict[str, str],
    args: argparse.Namespace,
    aiperf: str | None,
    trials: int,
) -> list[Run]:
    """Run every client ``trials`` times, alternating, against one fresh simulator."""
    env = dict(os.environ)
    runs: list[Run] = []
    server = _test_host_server(args) if args.via_host else _local_server
    with server(knobs) as (url, server_pid, on_host):
        for _ in range(max(1, trials)):
            ours_argv = _client_argv(sys.executable, OURS_SCRIPT, url, args)
            runs.append(_script_run("ours", ours_argv, url, env, server_pid))
            if on_host is not None:
                runs.append(on_host())
            if args.httpx_python and not args.rate:
                httpx_argv = _client_argv(args.httpx_python, HTTPX_SCRIPT, url, args)
                runs.append(_script_run("httpx", httpx_argv, url, env, server_pid))
            if aiperf is not None:
                runs.append(_aiperf_run(aiperf, url, env, server_pid, args))
    knob_text = " ".join(f"{k}={v}" for k, v in knobs.items())
    arrivals = f"constant {args.rate:g} req/s, at most " if args.rate else ""
    print(
        f"\n{title}: {arrivals}concurrency {args.concurrency}, {args.requests} requests x "
        f"{args.tokens} tokens, {knob_text}; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'client':<8} {'own tok/s':>10} {'server tok/s':>12} {'CPU us/token':>14} "
        f"{'cores':>8} {'sim cores':>8}"
    )
    for run in runs:
        print(run.row())
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--requests", type=int, default=1024)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument(
        "--trials",
        type=int,
        default=3,
        help="ceiling runs per client, alternating; the best counts (others' load only slows)",
    )
    parser.add_argument("--aiperf", default=None, help="path to the aiperf executable")
    parser.add_argument("--skip-peer", action="store_true")
    parser.add_argument("--phase", choices=("both", "ceiling", "agreement"), default="both")
    parser.add_argument(
        "--paced-rate",
        type=float,
        default=PACED_RATE,
        help="requests per second (evenly spaced) in the agreement phase",
    )
    parser.add_argument(
        "--paced-requests",
        type=int,
        default=PACED_REQUESTS,
        help="requests in the agreement phase",
    )
    parser.add_argument(
        "--paced-itl",
        type=float,
        default=PACED_ITL_MS,
        help="inter-token latency (ms) the simulator keeps in the agreement phase",
    )
    parser.add_argument(
        "--paced-tokens",
        type=int,
        default=PACED_TOKENS,
        help="output tokens per request in the agreement phase",
    )
    parser.add_argument(
        "--httpx-python",
        default=None,
        help="a Python with httpx installed: adds a minimal httpx client row (for the choice "
        "of HTTP library; AIPerf's venv has httpx)",
    )
    parser.add_argument(
        "--via-host",
        action="store_true",
        help="the simulator on the systemd test host; our client from here and as the on-host "
        "generator (bench_from = host), side by side",
    )
    args = parser.parse_args()
    if args.via_host:
        args.skip_peer = True
    args.rate = 0.0  # the ceiling phase: fixed concurrency, every stream at once
    args.warmup = 1
    aiperf = None if args.skip_peer else _find_aiperf(args.aiperf)
    if aiperf is None:
        print(f"AIPerf peer skipped (not found or --skip-peer). To install: {INSTALL_HINT}")
    ceiling: list[Run] = []
    agreement: list[Run] = []
    if args.phase in ("both", "ceiling"):
        ceiling = _phase("ceiling", {"SGLANG_SIM_TIME_SCALE": "0"}, args, aiperf, args.trials)
    if args.phase in ("both", "agreement"):
        paced_args = argparse.Namespace(**vars(args))
        paced_args.requests = args.paced_requests
        paced_args.tokens = args.paced_tokens
        paced_args.rate = args.paced_rate
        # no warmup request: at 200 ms a token it would stream alone for seconds, and the
        # server's tok/s over the sampled window would count that idle time
        paced_args.warmup = 0
        knobs = {"SGLANG_SIM_TTFT_MS": str(PACED_TTFT_MS), "SGLANG_SIM_ITL_MS": str(args.paced_itl)}
        agreement = _phase("agreement (server-paced)", knobs, paced_args, aiperf, 1)
    _side_by_side(ceiling, agreement, "on-host", "ours")
    _side_by_side(ceiling, agreement, "ours", "aiperf")


def _side_by_side(ceiling: list[Run], agreement: list[Run], client: str, peer: str) -> None:
    """``client``'s best ceiling tok/s against ``peer``'s, and their agreement (when both ran)."""
    mine, theirs = _best(ceiling, client), _best(ceiling, peer)
    if mine and theirs:
        gap = mine / theirs - 1
        print(
            f"\nceiling, best tok/s: {client} {mine:.0f}, {peer} {theirs:.0f} ({gap:+.1%}); "
            f"{client} at least as fast: {'yes' if gap >= 0 else 'NO'}"
        )
    mine, theirs = _best(agreement, client), _best(agreement, peer)
    if mine and theirs:
        gap = mine / theirs - 1
        print(
            f"agreement, tok/s: {client} {mine:.0f}, {peer} {theirs:.0f} ({gap:+.1%}); "
            f"agree within 3 %: {'yes' if abs(gap) <= 0.03 else 'NO'}"
        )


if __name__ == "__main__":
    main()
