"""Full-page screenshots of the built book, one PNG per chapter.

    python tools/screenshots.py [_build/html] [_build/screenshots]

Headless Chromium (Debian's ``chromium``) opens every ``book/*.html`` page
of the build at a 1280-px wide window; the page's height is measured in
the browser (DevTools protocol), then the whole page is captured.  Math
that needs MathJax from the network may show as TeX when offline.  Used by
``make screenshots``; not part of ``make test``.
"""

import asyncio
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from io import BytesIO
from pathlib import Path

from PIL import Image
from tornado.websocket import websocket_connect

WIDTH = 1280
TILE = 2048           # height of one capture, px
BUDGET_S = 8          # time for fonts, images and scripts after the load event


async def _capture(ws_url, url, out):
    ws = await websocket_connect(ws_url, max_message_size=1 << 30)
    ids = iter(range(1, 1 << 30))

    async def call(method, **params):
        i = next(ids)
        await ws.write_message(json.dumps({"id": i, "method": method,
                                           "params": params}))
        while True:
            msg = json.loads(await ws.read_message())
            if msg.get("id") == i:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    await call("Page.enable")
    await call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=900,
               deviceScaleFactor=1, mobile=False)
    await call("Page.navigate", url=url)
    await asyncio.sleep(BUDGET_S)
    height = (await call("Runtime.evaluate", returnByValue=True,
                         expression="document.documentElement.scrollHeight")
              )["result"]["value"]
    await call("Emulation.setDeviceMetricsOverride", width=WIDTH,
               height=int(height), deviceScaleFactor=1, mobile=False)
    await asyncio.sleep(1)
    # in tiles: one capture of a whole long page comes out shifted sideways
    # by a varying amount (the sidebar cut off), tiles of the laid-out page
    # do not
    page = Image.new("RGB", (WIDTH, int(height)), "white")
    for y in range(0, int(height), TILE):
        shot = await call("Page.captureScreenshot", format="png",
                          captureBeyondViewport=False,
                          clip={"x": 0, "y": y, "width": WIDTH,
                                "height": min(TILE, int(height) - y),
                                "scale": 1})
        page.paste(Image.open(BytesIO(base64.b64decode(shot["data"]))), (0, y))
    page.save(out)
    ws.close()
    return int(height)


def main(html="_build/html", dest="_build/screenshots"):
    html, dest = Path(html).resolve(), Path(dest)
    pages = sorted((html / "book").glob("*.html"))
    if not pages:
        sys.exit(f"{html}/book: no HTML pages (build the book first)")
    dest.mkdir(parents=True, exist_ok=True)
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        sys.exit("chromium not found (Debian: apt-get install chromium)")
    port = 9300 + os.getpid() % 500
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.Popen(
            [browser, "--headless", "--no-sandbox", "--disable-gpu",
             "--hide-scrollbars", f"--window-size={WIDTH},900",
             f"--remote-debugging-port={port}",
             f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version")
                    break
                except OSError:
                    time.sleep(0.1)
            for page in pages:
                req = urllib.request.Request(
                    f"http://127.0.0.1:{port}/json/new?about:blank", method="PUT")
                target = json.load(urllib.request.urlopen(req))
                out = dest / f"{page.stem}.png"
                h = asyncio.run(_capture(target["webSocketDebuggerUrl"],
                                         page.as_uri(), out))
                urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/json/close/{target['id']}")
                print(f"{out}  {WIDTH} x {h}")
        finally:
            proc.terminate()
            proc.wait(timeout=10)


if __name__ == "__main__":
    main(*sys.argv[1:])
