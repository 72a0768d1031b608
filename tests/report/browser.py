"""A tiny Chrome DevTools Protocol client for headless Chromium, over aiohttp's websocket.

Why not Playwright or Selenium: Debian's ``chromium`` is all the browser check needs, and a
dozen lines of CDP (navigate, evaluate, poll) keep the check free of a browser download. Every
wait is bounded; the browser runs with the flags known to work on a closed network and a fresh
profile, and is killed at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import aiohttp

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Page:
    """One page: ``navigate``, ``evaluate`` (JS expression, awaited) and ``wait_for``."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, session_id: str) -> None:
        self.ws = ws
        self.session_id = session_id
        self._next = 0

    async def send(self, method: str, timeout: float = 20.0, **params: Any) -> dict[str, Any]:
        self._next += 1
        msg_id = self._next
        await self.ws.send_str(
            json.dumps(
                {"id": msg_id, "method": method, "params": params, "sessionId": self.session_id}
            )
        )
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"CDP {method}: no answer within {timeout:g}s")
            msg = await self.ws.receive(timeout=left)
            if msg.type != aiohttp.WSMsgType.TEXT:
                raise RuntimeError(f"CDP websocket closed during {method}: {msg.type}")
            data = json.loads(msg.data)
            if data.get("id") == msg_id:
                if "error" in data:
                    raise RuntimeError(f"CDP {method}: {data['error']}")
                return dict(data.get("result", {}))

    async def evaluate(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"JS error: {result['exceptionDetails'].get('text')}: {expression}")
        return result.get("result", {}).get("value")

    async def navigate(self, url: str) -> None:
        await self.send("Page.navigate", url=url)

    async def wait_for(self, expression: str, timeout: float = 15.0, what: str = "") -> Any:
        """Poll a JS expression until it is truthy; TimeoutError naming ``what`` otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            value = await self.evaluate(
                f"(() => {{ try {{ return ({expression}); }} catch (e) {{ return null; }} }})()"
            )
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"not shown within {timeout:g}s: {what or expression}")
            await asyncio.sleep(0.2)


@contextmanager
def chromium() -> Iterator[str]:
    """Start headless Chromium; yields the browser's DevTools websocket URL."""
    binary = chromium_path()
    assert binary is not None
    profile = tempfile.mkdtemp(prefix="sglang-chromium-")
    proc = subprocess.Popen(
        [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        url = ""
        assert proc.stderr is not None
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {proc.returncode} before DevTools")
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                url = found.group(1)
                break
        if not url:
            raise RuntimeError("chromium did not announce DevTools within 30 s")
        # keep draining stderr so that chromium never blocks on a full pipe
        drain = subprocess.Popen(["cat"], stdin=proc.stderr, stdout=subprocess.DEVNULL)
        try:
            yield url
        finally:
            drain.kill()
            drain.wait(timeout=5)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)


async def open_page(http: aiohttp.ClientSession, browser_ws: str) -> tuple[Page, Any]:
    """A new page target attached over the browser websocket; returns (page, websocket)."""
    ws = await http.ws_connect(browser_ws, max_msg_size=0)
    page = Page(ws, session_id="")
    created = await page.send("Target.createTarget", url="about:blank")
    attached = await page.send("Target.attachToTarget", targetId=created["targetId"], flatten=True)
    page.session_id = attached["sessionId"]
    await page.send("Page.enable")
    await page.send("Runtime.enable")
    return page, ws
