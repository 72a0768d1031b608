"""The reports as a reviewer sees them: the seed scenarios' Allure report and HTML summary,
opened in real headless Chromium.

The scenarios run once (startup scaled to 0 on the simulator) with ``--alluredir`` and
``--sglang-html``; the Allure 3 command-line tool from the npm registry generates the report;
both are served from a loopback HTTP server and driven over the DevTools protocol: the sweep's
plot must load as an image, the comparison table must render in its attachment frame, and the
journal attachment must show the server's ready line.

Needs Node.js, the Allure CLI (``make report-deps`` installs it into ``.cache/allure-cli``) and
Chromium (Debian's ``chromium``); without them the test skips with the reason, except under
``CI=true``, where it fails: CI must run it.
"""

from __future__ import annotations

import asyncio
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from helpers import child_env, child_pytest_argv

sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser import chromium, chromium_path, open_page

ROOT = Path(__file__).resolve().parents[2]
ALLURE_CLI = Path(
    os.environ.get(
        "SGLANG_ALLURE_CLI", ROOT / ".cache" / "allure-cli" / "node_modules" / ".bin" / "allure"
    )
)
PLOT = "plot: test_single_stream_decode on local: sweep of speculative_num_steps"
READY_LINE = "The server is fired up and ready to roll!"


def require(condition: bool, reason: str) -> None:
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true needs it: make test installs it)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def tools() -> None:
    require(shutil.which("node") is not None, "Node.js is not installed")
    require(ALLURE_CLI.exists(), f"the Allure CLI is not installed at {ALLURE_CLI}")
    require(chromium_path() is not None, "Chromium is not installed (apt-get install chromium)")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        require(False, "matplotlib is not installed (pip install '.[report]')")


@pytest.fixture(scope="module")
def scenarios_run(tools: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser")
    proc = subprocess.run(
        child_pytest_argv(
            "-q",
            str(ROOT / "scenarios"),
            # as ``make scenarios``: the tuning searches add a minute and no report part
            # the browser checks (tests/report/test_tuning.py covers the verdict's HTML)
            "-m",
            "not tuning",
            "--alluredir",
            str(out / "allure-results"),
            "--sglang-html",
            str(out / "site" / "summary.html"),
            "--sglang-baseline-dir",
            str(out / "baselines"),
        ),
        cwd=ROOT,
        env=child_env({"SGLANG_SIM_STARTUP_SCALE": "0"}),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    gen = subprocess.run(
        [
            str(ALLURE_CLI),
            "generate",
            str(out / "allure-results"),
            "-o",
            str(out / "site" / "allure"),
        ],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert gen.returncode == 0, gen.stdout[-2000:] + gen.stderr[-2000:]
    return out / "site"


@pytest.fixture(scope="module")
def site(scenarios_run: Path) -> Iterator[str]:
    """The site served on a loopback port (Allure's app fetches its data, file:// won't do)."""
    handler = functools.partial(QuietHandler, directory=str(scenarios_run))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def result_ids(site_dir: Path) -> dict[str, str]:
    data = json.loads((site_dir / "allure" / "test-results.json").read_text())
    return {entry["name"]: test_id for test_id, entry in data["byId"].items()}


CLICK_TEXT = """(() => {
  const hits = [...document.querySelectorAll('*')].filter(
    e => e.children.length === 0 && e.textContent.trim() === %s);
  hits.forEach(e => e.click());
  return hits.length;
})()"""

PLOT_LOADED = """[...document.querySelectorAll('img')].some(
  i => i.complete && i.naturalWidth > 300 && i.src.startsWith('blob:'))"""

FRAME_TABLE_ROWS = """Math.max(0, ...[...document.querySelectorAll('iframe')].map(f => {
  try { return f.contentDocument.querySelectorAll('table.%s tbody tr').length; }
  catch (e) { return 0; } }))"""


async def check_allure(base: str, ids: dict[str, str]) -> None:
    async with aiohttp.ClientSession() as http_session:
        with chromium() as browser_ws:
            page, ws = await open_page(http_session, browser_ws)
            try:
                summary = ids["sglang sweep summary"]
                await page.navigate(f"{base}/allure/index.html#{summary}")
                await page.wait_for(f"document.body.innerText.includes({json.dumps(PLOT)})", 20)
                await page.evaluate(CLICK_TEXT % json.dumps(PLOT))
                await page.wait_for(PLOT_LOADED, 15, what="the sweep plot image")
                await page.evaluate(CLICK_TEXT % json.dumps("baseline comparison"))
                rows = await page.wait_for(
                    FRAME_TABLE_ROWS % "sglang-comparisons", 15, what="the comparison table"
                )
                assert rows >= 4

                journal_test = ids["test_flags_took_effect[eagle-s1-k1-tp4]"]
                await page.navigate(f"{base}/allure/index.html#{journal_test}")
                await page.wait_for("document.body.innerText.includes('journal')", 20)
                await page.evaluate(CLICK_TEXT % json.dumps("journal"))
                await page.wait_for(
                    f"document.body.innerText.includes({json.dumps(READY_LINE)})",
                    15,
                    what="the journal attachment's ready line",
                )
            finally:
                await ws.close()


async def check_html(base: str) -> None:
    async with aiohttp.ClientSession() as http_session:
        with chromium() as browser_ws:
            page, ws = await open_page(http_session, browser_ws)
            try:
                await page.navigate(f"{base}/summary.html")
                await page.wait_for(
                    "[...document.querySelectorAll('img.plot')].filter("
                    "i => i.complete && i.naturalWidth > 300).length >= 2",
                    15,
                    what="both sweep plots",
                )
                # a first run (fresh baselines): one sentence names the tests without one
                missing = await page.wait_for(
                    "document.querySelector('p.sglang-missing-baselines')?.innerText",
                    10,
                    what="the missing-baselines sentence",
                )
                assert "--sglang-baseline-save" in missing and "test_" in missing
                sweep_rows = await page.evaluate(
                    "document.querySelectorAll('table.sglang-sweep tbody tr').length"
                )
                assert sweep_rows == 4 + 3 + 2  # steps 1..4, concurrency 1/4/16, production s1/s3
            finally:
                await ws.close()


def test_allure_report_shows_plot_comparisons_and_journal(site: str, scenarios_run: Path) -> None:
    asyncio.run(asyncio.wait_for(check_allure(site, result_ids(scenarios_run)), 120))


def test_html_summary_shows_plots_and_comparisons(site: str) -> None:
    asyncio.run(asyncio.wait_for(check_html(site), 60))
