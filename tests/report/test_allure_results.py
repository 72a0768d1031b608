"""Allure results and the HTML summary of a real session on the embedded simulator.

One pytester session deploys two configs of a steps sweep (real simulator processes, real
HTTP), benchmarks each, and writes ``--alluredir`` and ``--sglang-html``; the tests read the
files back. A config carries a secret in ``env`` and in ``--api-key`` (which the journal's
server_args line repeats): it must appear in no file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import FAST_SIM, child_env, child_pytest_argv

from pytest_sglang.report.allure_output import CATEGORIES

SECRET = "hf_sekrit_value_42"
API_KEY = "sk-apikey-0123456789"


def _ids() -> tuple[str, str]:
    from pytest_sglang import ServerConfig, sweep

    base = ServerConfig(
        model_path="/models/Qwen3-8B",
        speculative_algorithm="EAGLE",
        speculative_num_steps=1,
        speculative_eagle_topk=1,
        env={"HF_TOKEN": SECRET},
        extra_args=("--api-key", API_KEY),
    )
    one, two = sweep(base, speculative_num_steps=[1, 2])
    return one.id, two.id


S1, S2 = _ids()  # eagle-s1-k1-x<hash of env and extra_args>

SESSION = f"""
import pytest
from pytest_sglang import ServerConfig, sweep
from pytest_sglang.bench import Workload

BASE = ServerConfig(
    model_path="/models/Qwen3-8B",
    served_model_name="qwen3-8b",
    host="0.0.0.0",
    speculative_algorithm="EAGLE",
    speculative_num_steps=1,
    speculative_eagle_topk=1,
    env={{"HF_TOKEN": "{SECRET}"}},
    extra_args=("--api-key", "{API_KEY}"),
)
CONFIGS = sweep(BASE, speculative_num_steps=[1, 2])

@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_decode(sglang_bench):
    print("token is {SECRET}")
    assert sglang_bench(Workload.single_stream(8)).failed == 0

@pytest.mark.parametrize("sglang_server", CONFIGS[:1], indirect=True)
def test_journal_check(sglang_server):
    sglang_server.journal.expect("no such line anywhere")
"""


def plots_expected() -> bool:
    """matplotlib is in the dev extra; where it is missing the plots are skipped with a note."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("matplotlib is missing under CI=true: install '.[dev]'")
        return False
    return True


#: The module fixtures below are measured once for all the tests here: under pytest-xdist the
#: tests share one worker, so that no other worker measures them again.
pytestmark = pytest.mark.xdist_group("allure-results")


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run the session once for the whole module (a subprocess: its own allure plugin state)."""
    root = tmp_path_factory.mktemp("report-session")
    (root / "test_session.py").write_text(SESSION)
    results = root / "allure-results"
    html = root / "summary.html"
    proc = subprocess.run(
        child_pytest_argv(
            "-q",
            "--alluredir",
            str(results),
            "--sglang-html",
            str(html),
            "--sglang-baseline-dir",
            str(root / "baselines"),
            str(root / "test_session.py"),
        ),
        cwd=root,
        env=child_env(FAST_SIM),
        capture_output=True,
        text=True,
        timeout=180,
    )
    return {"root": root, "results": results, "html": html, "proc": proc}


def results_of(results: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in results.glob("*-result.json")]


def by_name(results: Path, name: str) -> dict[str, Any]:
    found = [r for r in results_of(results) if r["name"] == name]
    assert found, f"no result named {name}: {[r['name'] for r in results_of(results)]}"
    return found[0]


def attachment(results: Path, result: dict[str, Any], name: str) -> str:
    for att in result.get("attachments", []):
        if att["name"] == name:
            return (results / att["source"]).read_text(errors="replace")
    raise AssertionError(f"{result['name']}: no attachment {name!r}")


def test_session_ran(session: dict[str, Any]) -> None:
    proc = session["proc"]
    assert "1 failed, 2 passed" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_config_fields_are_parameters_and_hosts_stay_out_of_the_history(
    session: dict[str, Any],
) -> None:
    result = by_name(session["results"], f"test_decode[{S2}]")
    params = {p["name"]: p for p in result["parameters"]}
    assert params["sglang_server"]["value"] == f"'{S2}'"  # the id, never repr(config)
    assert params["speculative_num_steps"]["value"] == "2"
    assert params["model_path"]["value"] == "'/models/Qwen3-8B'"
    assert params["sglang host"]["value"] == "'local'"
    assert params["sglang host"].get("excluded") is True
    assert params["host"].get("excluded") is True
    assert params["env"]["value"] == "'HF_TOKEN'"  # names only
    assert not params["speculative_num_steps"].get("excluded")


def test_deployment_and_benchmark_attachments(session: dict[str, Any]) -> None:
    results = session["results"]
    result = by_name(results, f"test_decode[{S1}]")
    argv = json.loads(attachment(results, result, "argv"))
    assert "--speculative-num-steps" in argv
    server_args = json.loads(attachment(results, result, "server_args"))
    assert server_args["speculative_num_draft_tokens"] == 2
    journal = attachment(results, result, "journal")
    assert "The server is fired up and ready to roll!" in journal
    assert "<redacted>" in journal  # the server_args line carries the api key
    bench = json.loads(attachment(results, result, "benchmark"))
    assert bench["config_id"] == S1 and bench["total_output_tokens"] == 8
    header, values = attachment(results, result, "benchmark.csv").splitlines()
    assert "output_throughput" in header.split(",")
    assert len(values.split(",")) == len(header.split(","))
    comparison = attachment(results, result, "baseline comparison")
    assert 'class="sglang-comparisons"' in comparison and "output_throughput" in comparison


def test_no_secret_in_any_file(session: dict[str, Any]) -> None:
    files = [*session["results"].iterdir(), session["html"]]
    for path in files:
        data = path.read_bytes()
        assert SECRET.encode() not in data, path.name
        assert API_KEY.encode() not in data, path.name


def test_environment_and_categories(session: dict[str, Any]) -> None:
    results = session["results"]
    env = dict(
        line.split("=", 1) for line in (results / "environment.properties").read_text().splitlines()
    )
    assert env["host"] == "local"
    assert env["gpus"].startswith("simulated")
    assert env["sglang_version"] == "0.5.23"
    assert env["model"] == "/models/Qwen3-8B"
    names = [c["name"] for c in json.loads((results / "categories.json").read_text())]
    assert names == [
        "Not ready in time",
        "Journal assertion",
        "SSH/infrastructure",
        "Deploy failed",
        "Performance regression",
    ]
    failed = by_name(results, f"test_journal_check[{S1}]")
    assert categories_of(failed["statusDetails"]["message"]) == ["Journal assertion"]


def test_performance_metrics_file(session: dict[str, Any]) -> None:
    (perf,) = session["results"].glob("*-perf.json")
    samples = json.loads(perf.read_text())
    keys = {(s["id"], s["key"]) for s in samples}
    assert (f"test_session.py::test_decode[{S2}]", "sglang.output_throughput") in keys
    assert (f"test_session.py::test_decode[{S2}]", "sglang.median_ttft_ms") in keys
    for sample in samples:
        assert isinstance(sample["value"], (int, float))
        assert sample["start"] <= sample["stop"]
        assert sample["better"] in ("higher", "lower")


def test_sweep_summary_result(session: dict[str, Any]) -> None:
    results = session["results"]
    summary = by_name(results, "sglang sweep summary")
    names = [a["name"] for a in summary["attachments"]]
    title = "test_decode on local: sweep of speculative_num_steps"
    assert f"table: {title}" in names
    assert "baseline comparison" in names
    table = attachment(results, summary, f"table: {title}")
    assert 'class="sglang-sweep"' in table and S2 in table
    if plots_expected():
        (png,) = [a for a in summary["attachments"] if a["name"] == f"plot: {title}"]
        assert (results / png["source"]).read_bytes().startswith(b"\x89PNG")


def test_html_summary_is_self_contained(session: dict[str, Any]) -> None:
    page = session["html"].read_text()
    assert 'class="sglang-sweep"' in page
    # a first run: no baselines yet, said in one sentence naming the tests (not a table of
    # dashes); tests/report/test_report_parts.py renders the table of a compared run
    assert 'class="sglang-missing-baselines"' in page and "--sglang-baseline-save" in page
    assert 'class="sglang-deployments"' in page
    assert not re.search(r"""(src|href)=["'](https?:|//)""", page)  # nothing from outside
    if plots_expected():
        assert 'src="data:image/png;base64,' in page
    else:
        assert "pip install 'pytest-sglang[report]'" in page


def categories_of(message: str) -> list[str]:
    """Categories as Allure 2 (Java, whole message) matches them; Allure 3 searches instead."""
    full = [c["name"] for c in CATEGORIES if re.fullmatch(c["messageRegex"], message)]
    search = [c["name"] for c in CATEGORIES if re.search(c["messageRegex"], message)]
    assert full == search
    return full
