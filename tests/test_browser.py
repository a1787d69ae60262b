"""The built book in a real browser (issue 25): what a reader sees offline.

    BOOK_HTML=_build/html python -m pytest tests/test_browser.py

``make test`` runs it after building the book.  Headless Chromium
(``tools/browser.py``; Debian's ``chromium``) opens every page of
``$BOOK_HTML/book/`` from disk at a 1280 x 900 window, waits for the load
event and for MathJax's first typesetting pass, and asserts:

* **math typeset**: every Sphinx math element (``span.math``/``div.math``,
  what ``$..$``, ``$$..$$``, ``{math}`` and amsmath environments become)
  holds a MathJax container and no MathJax error (``mjx-merror``: an
  undefined macro, a bad ``\\begin``); and the page's text, outside code,
  has no raw TeX left: no ``\\(``, ``\\[``, ``\\begin{``, ``$$`` or
  ``$..$`` pair.
* **images loaded**: every ``<img>`` is complete with ``naturalWidth > 0``.
* **a quiet console**: no JavaScript exception, no ``console.error``, no
  browser log entry of level error (a missing file is one), no failed
  request, and no request leaving the machine (anything but ``file:``,
  ``data:``, ``blob:``, ``about:``): the book must work with no network.
* **no horizontal overflow** of the main column (``article.bd-article``):
  no element sticks out to its right unless it sits in a box that scrolls
  or clips (code cells and wide tables scroll by design), the page itself
  has no horizontal scroll bar, no display equation is wider than the
  column (its box would scroll and hide the formula's end) and no equation
  number is drawn over its equation.

Without ``BOOK_HTML`` the tests skip (the plain ``pytest tests`` run comes
before any build); without Chromium they skip with "browser check SKIPPED:
no chromium found ...".  All pages take a few seconds each; the page
list is read from the build, so new chapters are checked without edits.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from browser import NO_CHROMIUM, Chromium, find_chromium  # noqa: E402

HTML = os.environ.get("BOOK_HTML")
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:", "devtools:")

# What the page reports, computed in the browser after typesetting.
PROBE = r"""
(() => {
  const main = document.querySelector("article.bd-article")
            || document.querySelector("main") || document.body;
  const describe = (el) => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += "#" + el.id;
    if (el.classList.length) s += "." + [...el.classList].slice(0, 3).join(".");
    const t = (el.textContent || "").trim().replace(/\s+/g, " ");
    return s + (t ? " " + JSON.stringify(t.slice(0, 60)) : "");
  };
  // math: Sphinx math nodes, MathJax containers and errors
  const math = [...main.querySelectorAll("span.math, div.math")];
  const untypeset = math.filter(m => !m.querySelector("mjx-container"))
                        .map(m => m.textContent.trim().slice(0, 80));
  const merrors = [...main.querySelectorAll("mjx-merror")].map(e =>
      (e.getAttribute("data-mjx-error") || "") + " in " +
      ((e.closest(".math") || e).textContent || "").slice(0, 60));
  // text outside code and typeset math, to look for raw TeX
  const clone = main.cloneNode(true);
  clone.querySelectorAll(
      "pre, code, script, style, mjx-container, .highlight, .output, " +
      "textarea, kbd, samp").forEach(e => e.remove());
  const text = clone.textContent;
  // images
  const images = [...document.images]
      .filter(i => !i.complete || i.naturalWidth === 0)
      .map(i => i.getAttribute("src"));
  // horizontal overflow of the main column
  const box = main.getBoundingClientRect();
  const clips = (el) => {
    for (let a = el.parentElement; a && a !== main; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (o === "auto" || o === "scroll" || o === "hidden" || o === "clip")
        return true;
    }
    return false;
  };
  const overflow = [];
  for (const el of main.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > box.right + 1 && !clips(el)) {
      // report the outermost offender only
      if (!overflow.some(o => o.el.contains(el)))
        overflow.push({el, by: Math.round(r.right - box.right)});
    }
  }
  // display equations: Sphinx floats the number (span.eqno) at the right
  // of div.math; a display wider than the column runs under it, or past
  // the edge of its box (which then scrolls, hiding the formula's end)
  const right = (els) => Math.max(...els.map(e => e.getBoundingClientRect().right));
  const labelOverlaps = [], cutDisplays = [];
  for (const m of main.querySelectorAll("div.math")) {
    const c = m.querySelector("mjx-container");
    const chars = c ? [...c.querySelectorAll("mjx-math mjx-c")] : [];
    if (!chars.length) continue;
    const end = right(chars), edge = c.getBoundingClientRect().right;
    const eqno = m.querySelector("span.eqno");
    const name = (m.id || "").replace(/^equation-/, "") ||
                 m.textContent.trim().slice(0, 40);
    if (eqno && end > eqno.getBoundingClientRect().left + 1)
      labelOverlaps.push(`${name} ${eqno.textContent.replace("#", "").trim()}`);
    else if (end > edge + 1)
      cutDisplays.push(`${name}: ${Math.round(end - edge)}px past its box`);
  }
  return {
    labelOverlaps, cutDisplays,
    math: math.length,
    containers: main.querySelectorAll("mjx-container").length,
    untypeset, merrors, text, images,
    overflow: overflow.slice(0, 5).map(o => describe(o.el) + ` by ${o.by}px`),
    pageOverflow: document.documentElement.scrollWidth - window.innerWidth,
    mainFound: main.matches("article.bd-article"),
  };
})()
"""

RAW_TEX = [
    (re.compile(r"\\\("), r"\( delimiter"),
    (re.compile(r"\\\["), r"\[ delimiter"),
    (re.compile(r"\\begin\{"), r"\begin{...} environment"),
    (re.compile(r"\$\$"), "$$ delimiters"),
    (re.compile(r"\$[^$\n]{1,200}?\$"), "$...$ pair"),
]


def raw_tex(text: str) -> list[str]:
    """Snippets of raw TeX delimiters found in rendered text."""
    found = []
    for pattern, what in RAW_TEX:
        for m in pattern.finditer(text):
            a, b = max(m.start() - 30, 0), min(m.end() + 30, len(text))
            snippet = re.sub(r"\s+", " ", text[a:b])
            found.append(f"{what}: ...{snippet}...")
            if len(found) >= 5:
                return found
    return found


def console_problems(events) -> list[str]:
    """Errors and outside requests among a tab's DevTools events."""
    out, requests = [], {}
    for method, p in events:
        if method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            desc = (d.get("exception") or {}).get("description") or d.get("text")
            out.append(f"JS exception: {str(desc).splitlines()[0]} "
                       f"({d.get('url', '')}:{d.get('lineNumber', '')})")
        elif method == "Runtime.consoleAPICalled" and p["type"] in ("error",
                                                                     "assert"):
            args = " ".join(str(a.get("value", a.get("description", "")))
                            for a in p.get("args", []))
            out.append(f"console.{p['type']}: {args[:200]}")
        elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
            e = p["entry"]
            out.append(f"browser log ({e.get('source')}): {e['text'][:200]} "
                       f"{e.get('url', '')}")
        elif method == "Network.requestWillBeSent":
            url = p["request"]["url"]
            requests[p["requestId"]] = url
            if not url.startswith(LOCAL_SCHEMES):
                out.append(f"request leaves the machine: {url[:200]}")
        elif method == "Network.loadingFailed" and not p.get("canceled"):
            out.append(f"failed request: {requests.get(p['requestId'], '?')}"
                       f" ({p.get('errorText')})")
    return out


async def inspect_page(browser, path: Path) -> dict:
    async with browser.tab() as tab:
        for domain in ("Runtime", "Log", "Network"):
            await tab.call(f"{domain}.enable")
        await tab.open(path.as_uri())
        has_mathjax = await tab.mathjax_done()
        report = await tab.evaluate(PROBE)
        report["mathjax"] = has_mathjax
        report["console"] = console_problems(tab.events)
        return report


def pages() -> list[Path]:
    if not HTML:
        return []
    return sorted((Path(HTML).resolve() / "book").glob("*.html"))


def problems(page: Path, r: dict) -> list[str]:
    """Everything wrong with one page, one line each."""
    out = []
    if not r["mainFound"]:
        out.append("no article.bd-article: the theme's layout changed, the "
                   "checks below looked at the whole page")
    if r["math"] and not r["mathjax"]:
        out.append(f"{r['math']} math elements but MathJax did not load")
    if r["untypeset"]:
        out.append(f"{len(r['untypeset'])} of {r['math']} math elements not "
                   f"typeset, e.g. {r['untypeset'][:3]}")
    out += [f"MathJax error: {e}" for e in r["merrors"][:5]]
    out += [f"raw TeX in the text: {s}" for s in raw_tex(r["text"])]
    out += [f"image not loaded: {src}" for src in r["images"]]
    out += r["console"]
    out += [f"sticks out of the main column: {o}" for o in r["overflow"]]
    out += [f"equation number drawn over its equation (too wide for the "
            f"column): {o}" for o in r["labelOverlaps"]]
    out += [f"display equation wider than the column (the reader must "
            f"scroll it): {o}" for o in r["cutDisplays"]]
    if r["pageOverflow"] > 1:
        out.append(f"the page scrolls sideways by {r['pageOverflow']} px")
    return out


@pytest.fixture(scope="module")
def reports():
    if not HTML:
        pytest.skip("browser check: set BOOK_HTML to a built book's html "
                    "directory (make test does: BOOK_HTML=_build/html)")
    if find_chromium() is None:
        pytest.skip(f"browser check SKIPPED: {NO_CHROMIUM}")
    found = pages()
    assert found, f"{HTML}/book: no HTML pages (build the book first)"
    start = time.perf_counter()
    out = {}
    with Chromium() as browser:
        for page in found:
            out[page.stem] = asyncio.run(inspect_page(browser, page))
    elapsed = time.perf_counter() - start
    print(f"\nbrowser check: {len(found)} pages in {elapsed:.1f} s")
    return out


@pytest.mark.parametrize("name", [p.stem for p in pages()] or ["(no build)"])
def test_page_renders_offline(reports, name):
    """Math typeset, images loaded, console quiet, no sideways overflow."""
    bad = problems(Path(name), reports[name])
    assert not bad, f"book/{name}.html:\n  " + "\n  ".join(bad)


def test_every_chapter_was_checked(reports):
    """Each book/*.md has its page in the build (none silently missing)."""
    chapters = {p.stem for p in (ROOT / "book").glob("*.md")}
    missing = sorted(chapters - set(reports))
    assert not missing, f"{HTML}: no page for {missing}"


# -- the checks themselves, without a browser --------------------------------

def test_raw_tex_finder():
    assert raw_tex("the loss $f(w)$ is") and raw_tex(r"see \(x\)")
    assert raw_tex(r"\begin{align} a \end{align}") and raw_tex("$$x$$")
    assert raw_tex(r"\[ x \]")
    assert not raw_tex("costs 5 dollars; x = (a, b); [1, 2]")


def test_console_problems_flags_errors_and_outside_requests():
    events = [
        ("Network.requestWillBeSent", {"requestId": "1", "request": {
            "url": "file:///b/_static/x.js"}}),
        ("Network.requestWillBeSent", {"requestId": "2", "request": {
            "url": "https://cdn.jsdelivr.net/npm/mathjax@3/tex-chtml.js"}}),
        ("Network.loadingFailed", {"requestId": "2",
                                   "errorText": "net::ERR_FAILED"}),
        ("Network.loadingFailed", {"requestId": "1", "canceled": True}),
        ("Runtime.consoleAPICalled", {"type": "log", "args": []}),
        ("Runtime.consoleAPICalled", {"type": "error",
                                      "args": [{"value": "boom"}]}),
        ("Runtime.exceptionThrown", {"exceptionDetails": {
            "text": "Uncaught", "exception": {
                "description": "TypeError: x is undefined\n at y"}}}),
        ("Log.entryAdded", {"entry": {"level": "warning", "text": "w"}}),
        ("Log.entryAdded", {"entry": {"level": "error", "source": "network",
                                      "text": "Failed to load resource",
                                      "url": "file:///b/img.png"}}),
    ]
    found = console_problems(events)
    assert len(found) == 5, found
    assert "leaves the machine: https://cdn.jsdelivr.net" in found[0]
    assert "failed request: https://cdn" in found[1]
    assert found[2] == "console.error: boom"
    assert "TypeError: x is undefined" in found[3]
    assert "img.png" in found[4]
