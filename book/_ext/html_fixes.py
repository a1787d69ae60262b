"""Two console errors every reader's browser showed, found by tests/test_browser.py.

* **Inline scripts twice.**  Under Sphinx 7.4 the configuration snippets
  that sphinx-togglebutton and sphinx-thebe add with ``app.add_js_file(None,
  body=...)`` after the builder has started reach each page twice (once as
  the builder's own asset, once from the registry, with ``None`` and ``""``
  as file names, so Sphinx's de-duplication misses them).  The second
  ``const THEBE_JS_URL = ...`` is a ``SyntaxError: Identifier 'THEBE_JS_URL'
  has already been declared`` on every page.  ``html-page-context`` drops
  every inline script whose body was already included.
* **No default colour mode.**  pydata-sphinx-theme's first script sets
  ``data-mode`` from ``localStorage`` or the template variable
  ``default_mode`` (``html_context``), empty by default, and then logs
  ``Got invalid theme mode: .`` on a reader's first visit.  ``default_mode``
  becomes ``"auto"`` (what the theme falls back to anyway) unless
  ``html_context`` sets it.
"""


def _default_mode(app, config):
    if not config.html_context.get("default_mode"):
        config.html_context["default_mode"] = "auto"


def _unique_inline_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for js in scripts:
        body = getattr(js, "attributes", {}).get("body")
        if not getattr(js, "filename", None) and body is not None:
            if body in seen:
                continue
            seen.add(body)
        kept.append(js)
    if len(kept) < len(scripts):
        context["script_files"] = kept


def setup(app):
    app.connect("config-inited", _default_mode)
    # late, after extensions that add page-specific scripts
    app.connect("html-page-context", _unique_inline_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
