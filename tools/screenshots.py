"""Full-page screenshots of the built book, one PNG per chapter.

    python tools/screenshots.py [_build/html] [_build/screenshots]

Headless Chromium (Debian's ``chromium``, driven by ``tools/browser.py``)
opens every ``book/*.html`` page of the build at a 1280-px wide window,
waits for the load event and for MathJax (served by the book itself, so
math is typeset offline too) to finish typesetting, measures the page's
height in the browser, then captures the whole page.  Used by ``make
screenshots``; not part of ``make test`` (``tests/test_browser.py`` is the
browser check that is).
"""

import asyncio
import base64
import sys
from io import BytesIO
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser import NO_CHROMIUM, WIDTH, Chromium, find_chromium  # noqa: E402

TILE = 2048           # height of one capture, px
SETTLE_S = 1.0        # fonts and layout after the load event and MathJax


async def _capture(browser, url, out):
    async with browser.tab() as tab:
        await tab.open(url)
        await tab.mathjax_done()
        await asyncio.sleep(SETTLE_S)
        height = int(await tab.evaluate(
            "document.documentElement.scrollHeight"))
        await tab.call("Emulation.setDeviceMetricsOverride", width=WIDTH,
                       height=height, deviceScaleFactor=1, mobile=False)
        await asyncio.sleep(SETTLE_S)
        # in tiles: one capture of a whole long page comes out shifted
        # sideways by a varying amount (the sidebar cut off), tiles of the
        # laid-out page do not
        page = Image.new("RGB", (WIDTH, height), "white")
        for y in range(0, height, TILE):
            shot = await tab.call(
                "Page.captureScreenshot", format="png",
                captureBeyondViewport=False,
                clip={"x": 0, "y": y, "width": WIDTH,
                      "height": min(TILE, height - y), "scale": 1})
            page.paste(Image.open(BytesIO(base64.b64decode(shot["data"]))),
                       (0, y))
        page.save(out)
        return height


def main(html="_build/html", dest="_build/screenshots", *only):
    html, dest = Path(html).resolve(), Path(dest)
    pages = sorted((html / "book").glob("*.html"))
    if only:
        pages = [p for p in pages if p.stem in only]
    if not pages:
        sys.exit(f"{html}/book: no HTML pages (build the book first)")
    if find_chromium() is None:
        sys.exit(NO_CHROMIUM)
    dest.mkdir(parents=True, exist_ok=True)
    with Chromium() as browser:
        for page in pages:
            out = dest / f"{page.stem}.png"
            h = asyncio.run(_capture(browser, page.as_uri(), out))
            print(f"{out}  {WIDTH} x {h}")


if __name__ == "__main__":
    main(*sys.argv[1:])
