"""MathJax 3 served by the book itself, never by a CDN at read time.

Sphinx's default ``mathjax_path`` is a jsDelivr address: a reader offline (a
lecture hall, a train) or behind a strict proxy sees raw TeX.  The PyPI
package ``django-static-mathjax`` (pinned in ``requirements.txt``; no
dependencies, it is plain files) ships the official MathJax 3 ES5 build.
This extension

* checks, when the configuration is read, that ``mathjax_path`` (set in
  ``_config.yml`` under ``sphinx: config:``) is the local file this
  extension copies (``mathjax/tex-chtml.js``, which Sphinx prefixes with
  ``_static/``), and that the package is installed;
* copies the parts of that build a page can load into
  ``<html>/_static/mathjax/`` at the end of an HTML build: the combined
  TeX-to-CommonHTML component, its web fonts, the TeX extensions that
  ``autoload`` and ``\\require`` fetch on demand, and the menu's
  accessibility components (assistive MathML, the explorer and its speech
  rule engine), so that every choice in MathJax's right-click menu works
  offline too.  The SVG output and the other combined builds are left out.

myst-parser's ``dollarmath``/``amsmath`` output (``\\(..\\)``, ``\\[..\\]``
and ``\\begin{align}`` in ``math`` elements) and the ``mathjax3_config`` that
myst-parser and jupyter-book set are untouched: only where the script comes
from changes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.errors import ConfigError

PACKAGE = "django-static-mathjax"
COMPONENT = "tex-chtml.js"
TARGET = "mathjax"                  # under the build's _static/
MATHJAX_PATH = f"{TARGET}/{COMPONENT}"
# what a page may load, relative to the package's es5/ directory
PARTS = (COMPONENT, "output/chtml", "input/tex/extensions", "ui", "a11y", "sre")


def source() -> Path:
    """The ES5 build inside the installed package."""
    try:
        import mathjax
    except ImportError as err:
        raise ConfigError(
            f"MathJax is served from the book: pip install {PACKAGE} "
            "(pinned in requirements.txt)") from err
    es5 = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (es5 / COMPONENT).is_file():
        raise ConfigError(f"{PACKAGE} has no {COMPONENT} under {es5}")
    return es5


def version() -> str:
    from importlib.metadata import version as v
    return v(PACKAGE)


def _check(app, config):
    source()
    if config.mathjax_path != MATHJAX_PATH:
        raise ConfigError(
            f"mathjax_path is {config.mathjax_path!r}: set it to "
            f"{MATHJAX_PATH!r} in _config.yml (sphinx: config:), the copy "
            "that book/_ext/offline_mathjax.py serves from _static/")


def copy_mathjax(outdir) -> Path:
    """Copy the MathJax parts into ``outdir/_static/mathjax``; return it.

    Skipped when that folder already holds this package version.
    """
    es5 = source()
    dest = Path(outdir) / "_static" / TARGET
    stamp = dest / ".version"
    if stamp.is_file() and stamp.read_text() == version():
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    for part in PARTS:
        src = es5 / part
        if src.is_dir():
            shutil.copytree(src, dest / part)
        else:
            (dest / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / part)
    stamp.write_text(version())
    return dest


def _copy(app, exc):
    if app.builder.format == "html" and Path(app.outdir).is_dir():
        copy_mathjax(app.outdir)


def setup(app):
    app.connect("config-inited", _check)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
