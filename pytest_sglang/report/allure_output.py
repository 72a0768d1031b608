"""Everything pytest-sglang writes for Allure.

Per test (through allure-pytest's ``allure.dynamic`` and ``allure.attach``, so the data lands in
the test's own result): the config's fields as parameters, the rendered unit, the argv, the
parsed ``server_args``, the redacted startup journal, the benchmark figures and the baseline
comparison. Per session (files written straight into the ``--alluredir`` results directory):
``environment.properties``, ``categories.json``, an Allure 3 ``*-perf.json`` of every run's
tok/s and latencies (so reports trend them across runs), and one "sglang sweep summary" result
that carries the sweep plots and tables and the whole comparison table.

Why the deployment host is an *excluded* parameter: Allure's history id hashes the parameters,
so a host in it would split one test's trend into one per machine.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .records import BenchRecord
from .tables import bench_csv, comparison_table, html_document

if TYPE_CHECKING:
    from ..config import ServerConfig
    from ..lifecycle.deployment import Deployment

__all__ = [
    "CATEGORIES",
    "PERF_METRICS",
    "attach_bench",
    "attach_comparisons",
    "attach_deployment",
    "perf_samples",
    "set_parameters",
    "write_json_atomic",
    "write_session_files",
    "write_summary_result",
]

#: Where a test's host goes: shown as a parameter, kept out of the history id.
HOST_PARAMETER = "sglang host"


def _any(*needles: str) -> str:
    r"""A messageRegex matching a message that contains any needle.

    ``[\s\S]*`` instead of ``.*`` with a DOTALL flag: Allure 2 (Java, whole-message match) and
    Allure 3 (JavaScript, search) read the same file, and JavaScript has no inline ``(?s)``.
    """
    return r"[\s\S]*(" + "|".join(needles) + r")[\s\S]*"


#: Allure categories for the failures the plugin classifies, matched on its one-line messages.
CATEGORIES: list[dict[str, Any]] = [
    {
        "name": "Not ready in time",
        "matchedStatuses": ["failed", "broken"],
        "messageRegex": _any(r"not ready in time"),
    },
    {
        "name": "Journal assertion",
        "matchedStatuses": ["failed", "broken"],
        "messageRegex": _any(
            r"JournalError",
            r"value\(s\) in server_args differ",
            r"no journal line since the restart matches",
            r"forbidden pattern",
            r"expected warning missing",
            r"scheduler runs max_running_requests=",
            r"server_args line since the restart",
            r"unreadable server_args line",
        ),
    },
    {
        "name": "SSH/infrastructure",
        "matchedStatuses": ["failed", "broken"],
        "messageRegex": _any(
            r"TransportError",
            r"ConnectError",
            r"HostKeyError",
            r"CommandTimeout",
            r"unknown host key",
            r"host key CHANGED",
            r"known_hosts file",
            r"authentication failed",
            r"passphrases are never prompted",
            r"cannot connect",
            r"cannot resolve",
            r"connection timed out",
            r"SSH handshake failed",
            r"closed the connection",
            r"SSH connection lost",
            r"cannot open an SSH session",
            r"cannot start SFTP",
            r"jump host",
            r"lost the host while waiting",
            r"ran past its [0-9.]+s timeout",
            r"cannot run the launcher",
        ),
    },
    {
        "name": "Deploy failed",
        "matchedStatuses": ["failed", "broken"],
        "messageRegex": _any(
            r"DeployError",
            r"ServerStartError",
            r"PreflightError",
            r": (out of memory|CUDA graph capture|warmup failed|crashed|bad flag) (after|\()",
            r"\(SGLang [^)]*\) has no flag",
            r"cannot detect the SGLang version",
            r"--help' failed",
            r"restore of \S+ incomplete",
            r"cannot start the server",
            r"the server wrapper did not start",
        ),
    },
    {
        "name": "Performance regression",
        "matchedStatuses": ["failed", "broken"],
        "messageRegex": _any(r"[Rr]egression", r"regressed"),
    },
]

#: Metrics that go into the Allure 3 performance file: key -> (title, unit, better, group).
PERF_METRICS: dict[str, tuple[str, str, str, str]] = {
    "output_throughput": ("Output throughput", "tok/s", "higher", "throughput"),
    "total_throughput": ("Total throughput", "tok/s", "higher", "throughput"),
    "request_throughput": ("Request throughput", "req/s", "higher", "throughput"),
    "median_ttft_ms": ("TTFT p50", "ms", "lower", "latency"),
    "p99_ttft_ms": ("TTFT p99", "ms", "lower", "latency"),
    "median_itl_ms": ("ITL p50", "ms", "lower", "latency"),
    "mean_tpot_ms": ("TPOT mean", "ms", "lower", "latency"),
    "median_e2e_latency_ms": ("E2E p50", "ms", "lower", "latency"),
    "cache_hit_rate": ("Prefix cache hit rate", "fraction", "higher", "cache"),
    "server_cache_hit_rate": ("Server prefix cache hit rate", "fraction", "higher", "cache"),
}
_GROUP_TITLES = {
    "throughput": "SGLang throughput",
    "latency": "SGLang latency",
    "cache": "SGLang prefix cache",
}


def _allure() -> Any:
    import allure  # allure-pytest is a dependency; imported here so the module loads without it

    return allure


# -- per test ------------------------------------------------------------------------------


def set_parameters(config: ServerConfig, host: str, redact: Any) -> None:
    """The config's fields as Allure parameters; hosts shown but kept out of the history id."""
    allure = _allure()
    allure.dynamic.parameter(HOST_PARAMETER, host, excluded=True)
    for name, value in config.tuned().items():
        allure.dynamic.parameter(name, value, excluded=name == "host" or None)
    if config.extra_args:
        allure.dynamic.parameter("extra_args", redact(" ".join(config.extra_args)))
    if config.env:
        names = ", ".join(sorted(config.env))
        allure.dynamic.parameter("env", names)


def attach_deployment(deployment: Deployment, redact: Any) -> None:
    """Unit file, argv, parsed server_args and the journal since the restart (all redacted)."""
    allure = _allure()
    text = allure.attachment_type.TEXT
    artifacts = deployment.artifacts
    if artifacts.get("unit"):
        allure.attach(redact(artifacts["unit"]), name="unit file", attachment_type=text)
    if artifacts.get("argv"):
        try:
            argv = json.dumps(json.loads(artifacts["argv"]), indent=2)
        except ValueError:
            argv = artifacts["argv"]
        allure.attach(redact(argv), name="argv", attachment_type=allure.attachment_type.JSON)
    server_args = json.dumps(deployment.server_args, indent=2, sort_keys=True, default=str)
    allure.attach(
        redact(server_args), name="server_args", attachment_type=allure.attachment_type.JSON
    )
    allure.attach(redact(deployment.journal.text), name="journal", attachment_type=text)


def attach_bench(info: Mapping[str, Any], redact: Any) -> None:
    """A benchmark's figures as JSON (everything) and CSV (the flat figures), and why a round
    was disturbed (when one was)."""
    allure = _allure()
    body = json.dumps(dict(info), indent=2, sort_keys=True, default=str)
    allure.attach(redact(body), name="benchmark", attachment_type=allure.attachment_type.JSON)
    allure.attach(
        redact(bench_csv(info)), name="benchmark.csv", attachment_type=allure.attachment_type.CSV
    )
    notes = info.get("disturbed") or []
    if notes:  # rounds the stall check repeated: in view, not only inside the JSON
        allure.attach(
            redact("\n".join(notes)), name="disturbed", attachment_type=allure.attachment_type.TEXT
        )


def attach_comparisons(rows: Sequence[Mapping[str, Any]]) -> None:
    allure = _allure()
    page = html_document("baseline comparison", comparison_table(rows))
    allure.attach(page, name="baseline comparison", attachment_type=allure.attachment_type.HTML)


# -- session files --------------------------------------------------------------------------


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, path)


def perf_samples(records: Sequence[BenchRecord]) -> list[dict[str, Any]]:
    """Allure 3 metric samples: one per (run, metric); ``id`` is the node id (no host)."""
    samples: list[dict[str, Any]] = []
    for record in records:
        for key, (title, unit, better, group) in PERF_METRICS.items():
            value = record.metric(key)
            if value is None:
                continue
            samples.append(
                {
                    "id": record.nodeid,
                    "key": f"sglang.{key}",
                    "value": round(value, 3),
                    "start": record.start_ms,
                    "stop": record.stop_ms,
                    "title": title,
                    "unit": unit,
                    "better": better,
                    "group": group,
                    "groupTitle": _GROUP_TITLES[group],
                }
            )
    return samples


def write_session_files(
    results_dir: Path,
    *,
    environment: str,
    records: Sequence[BenchRecord],
) -> None:
    """``environment.properties``, ``categories.json`` and the performance-metrics file."""
    results_dir.mkdir(parents=True, exist_ok=True)
    if environment:
        (results_dir / "environment.properties").write_text(environment)
    write_json_atomic(results_dir / "categories.json", CATEGORIES)
    samples = perf_samples(records)
    if samples:
        write_json_atomic(results_dir / f"sglang-{uuid.uuid4()}-perf.json", samples)


def write_summary_result(
    results_dir: Path,
    *,
    attachments: Sequence[tuple[str, bytes | str, str, str]],
    description: str,
    failed: bool,
    start_ms: int,
) -> None:
    """One Allure result, "sglang sweep summary", carrying session-level attachments.

    ``attachments`` are ``(name, body, mime type, extension)``. The history id is fixed so the
    summary has a history of its own across runs.
    """
    results_dir.mkdir(parents=True, exist_ok=True)
    listed = []
    for name, body, mime, ext in attachments:
        source = f"{uuid.uuid4()}-attachment.{ext}"
        data = body.encode("utf-8") if isinstance(body, str) else body
        (results_dir / source).write_bytes(data)
        listed.append({"name": name, "source": source, "type": mime})
    full_name = "pytest_sglang.report#sweep summary"
    result_uuid = str(uuid.uuid4())
    result: dict[str, Any] = {
        "uuid": result_uuid,
        "historyId": "pytest-sglang-sweep-summary",
        "testCaseId": "pytest-sglang-sweep-summary",
        "fullName": full_name,
        "name": "sglang sweep summary",
        "status": "failed" if failed else "passed",
        "stage": "finished",
        "description": description,
        "start": start_ms,
        "stop": int(time.time() * 1000),
        "attachments": listed,
        "labels": [
            {"name": "suite", "value": "sglang"},
            {"name": "framework", "value": "pytest-sglang"},
        ],
    }
    if failed:
        result["statusDetails"] = {"message": "performance regression against the baseline"}
    write_json_atomic(results_dir / f"{result_uuid}-result.json", result)
