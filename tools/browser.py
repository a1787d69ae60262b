"""Headless Chromium over the DevTools protocol, for the built book.

Shared by ``tools/screenshots.py`` (full-page PNGs) and
``tests/test_browser.py`` (the real-browser check of every page).  No
browser-automation package: Debian's ``chromium`` is started with a fresh
profile and ``--remote-debugging-port=0``; the port it picked is read from
the profile's ``DevToolsActivePort`` file, tabs are opened and closed over
its ``/json`` HTTP endpoints, and each tab is driven over a websocket
(tornado's client, already installed with Jupyter).

    with Chromium() as browser:
        async with browser.tab() as tab:     # inside asyncio.run(...)
            await tab.call("Page.navigate", url=...)

Offline by construction: background networking, component updates, sync
and QUIC are off, so the browser itself asks nothing of the network; what a
page requests is for the caller to watch (``Tab.events``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from tornado.websocket import websocket_connect

WIDTH, HEIGHT = 1280, 900
NO_CHROMIUM = ("no chromium found (apt-get install chromium, or set CHROMIUM "
               "to the browser's path)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions",
         "--disable-breakpad", "--disable-crash-reporter",
         "--hide-scrollbars", "--mute-audio"]


def find_chromium() -> str | None:
    """The browser: $CHROMIUM, else ``chromium``/``chromium-browser`` on PATH."""
    env = os.environ.get("CHROMIUM")
    if env:
        return env if Path(env).is_file() else shutil.which(env)
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Tab:
    """One page's DevTools session: ``call`` a method, read ``events``."""

    def __init__(self, ws):
        self._ws = ws
        self._ids = iter(range(1, 1 << 30))
        self._pending: dict[int, asyncio.Future] = {}
        self.events: list[tuple[str, dict]] = []
        self._waiters: list[tuple[str, asyncio.Future]] = []
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self):
        while True:
            raw = await self._ws.read_message()
            if raw is None:                      # closed
                for fut in self._pending.values():
                    if not fut.done():
                        fut.set_exception(ConnectionError("tab closed"))
                return
            msg = json.loads(raw)
            if "id" in msg:
                fut = self._pending.pop(msg["id"], None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
            else:
                self.events.append((msg["method"], msg.get("params", {})))
                for name, fut in list(self._waiters):
                    if name == msg["method"] and not fut.done():
                        fut.set_result(msg.get("params", {}))

    async def call(self, method: str, **params):
        """Send one DevTools command and return its result."""
        i = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._pending[i] = fut
        await self._ws.write_message(json.dumps(
            {"id": i, "method": method, "params": params}))
        msg = await fut
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg["result"]

    def expect(self, event: str) -> asyncio.Future:
        """A future for the next ``event`` (register before triggering it)."""
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append((event, fut))
        return fut

    async def evaluate(self, expression: str, await_promise=False):
        """The value of a JavaScript expression (JSON-serialisable)."""
        res = await self.call("Runtime.evaluate", expression=expression,
                              returnByValue=True, awaitPromise=await_promise)
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expression[:60]!r}: "
                               f"{res['exceptionDetails'].get('text')} "
                               f"{res['result'].get('description', '')}")
        return res["result"].get("value")

    async def open(self, url: str, timeout: float = 30.0):
        """Navigate and wait for the load event (images, scripts, CSS)."""
        loaded = self.expect("Page.loadEventFired")
        await self.call("Page.navigate", url=url)
        await asyncio.wait_for(loaded, timeout)

    async def mathjax_done(self, timeout: float = 30.0) -> bool:
        """Wait until MathJax (if the page loads it) has typeset the page.

        ``False`` when the page has no MathJax.  The script is deferred, so
        at the load event ``MathJax.startup`` exists; its promise resolves
        after the first typesetting pass.
        """
        js = ("(window.MathJax && MathJax.startup && MathJax.startup.promise)"
              " ? MathJax.startup.promise.then(() => true) : false")
        return await asyncio.wait_for(
            self.evaluate(js, await_promise=True), timeout)

    async def close(self):
        self._reader.cancel()
        self._ws.close()


class Chromium:
    """A headless Chromium with a fresh profile, as a context manager."""

    def __init__(self, executable: str | None = None, width=WIDTH,
                 height=HEIGHT, flags=()):
        self.executable = executable or find_chromium()
        if self.executable is None:
            raise FileNotFoundError(NO_CHROMIUM)
        self.width, self.height = width, height
        self.flags = list(flags)
        self.port = None

    def __enter__(self):
        self._profile = profile = Path(tempfile.mkdtemp(prefix="chromium-"))
        # its own process group: the renderer and helper processes it
        # starts are ended with it (and with nothing else)
        self.proc = subprocess.Popen(
            [self.executable, *FLAGS, *self.flags,
             f"--window-size={self.width},{self.height}",
             "--remote-debugging-port=0", f"--user-data-dir={profile}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        try:
            self.port = self._wait_port(profile / "DevToolsActivePort")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_port(self, path: Path, timeout: float = 30.0) -> int:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.executable} exited with "
                                   f"{self.proc.returncode} at start")
            with contextlib.suppress(OSError, ValueError, IndexError):
                port = int(path.read_text().splitlines()[0])
                urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/json/version", timeout=5)
                return port
            time.sleep(0.05)
        raise TimeoutError(f"{self.executable}: no DevTools port after "
                           f"{timeout:.0f} s")

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)   # helpers left over
        for _ in range(50):          # helpers may still be writing the profile
            shutil.rmtree(self._profile, ignore_errors=True)
            if not self._profile.exists():
                break
            time.sleep(0.1)

    def _json(self, path: str, method="GET"):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/{path}",
                                     method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body.startswith(b"{") else body

    @contextlib.asynccontextmanager
    async def tab(self):
        """A new blank tab, sized ``width`` x ``height``, closed afterwards."""
        target = self._json("new?about:blank", method="PUT")
        ws = await websocket_connect(target["webSocketDebuggerUrl"],
                                     max_message_size=1 << 30)
        tab = Tab(ws)
        try:
            await tab.call("Page.enable")
            await tab.call("Emulation.setDeviceMetricsOverride",
                           width=self.width, height=self.height,
                           deviceScaleFactor=1, mobile=False)
            yield tab
        finally:
            await tab.close()
            with contextlib.suppress(OSError):
                self._json(f"close/{target['id']}")
