"""Launch, repository, issue and edit buttons and the citation from one setting.

``repository: url:`` in ``_config.yml`` is the only place the book's public
address is written.  sphinx-book-theme derives from it the Binder link
(JupyterLab, ``lab/tree/book/<chapter>.md``, opened as a notebook by the
jupytext default viewer in ``.jupyter/labconfig``), the repository, issue and
edit buttons.  This extension adds three things the theme cannot do:

- **No public URL yet.**  While the setting is empty, every button would
  point at a repository that does not exist, so the buttons and launch links
  are left out of the pages (and the build says so once).  Any other value
  must be a ``https://github.com/<owner>/<repository>`` address: Binder's
  ``gh`` route and Colab only know GitHub, so anything else stops the build
  with an error naming the setting.  The repository, issue and edit buttons
  are switched on here, from the URL, not in ``_config.yml``: jupyter-book
  refuses ``use_*_button`` while the URL is empty.
- **The citation.**  The ``book-citation`` directive writes the BibTeX record
  of the book from ``CITATION.cff`` (title, version, year), the ``author:``
  of ``_config.yml`` and, once it is set, the repository URL, so the intro
  page shows no address while there is none.
- **Colab opens ``.ipynb`` files only.**  The theme's Colab link points at the
  chapter's ``.md`` source, which Colab cannot read.  The book workflow
  (``.github/workflows/book.yml``) therefore publishes every executed chapter,
  with a Colab install cell in front (:mod:`colab_notebooks`), to the branch
  :data:`NOTEBOOKS_BRANCH`, and the Colab link is pointed there.
"""

from __future__ import annotations

import re

from pathlib import Path

from docutils import nodes
from sphinx.errors import ConfigError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

#: The branch the book workflow publishes the Colab notebooks to.
NOTEBOOKS_BRANCH = "notebooks"
_GITHUB = re.compile(r"https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)")
_BUTTONS = ("use_repository_button", "use_issues_button", "use_edit_page_button")


def github_parts(url):
    """``(owner, repository)`` of a GitHub URL; ConfigError for anything else."""
    match = _GITHUB.fullmatch(url.rstrip("/").removesuffix(".git"))
    if match is None:
        raise ConfigError(
            f"_config.yml repository: url: {url!r} is not a GitHub repository "
            "address https://github.com/<owner>/<repository> (Binder's and "
            "Colab's launch links need one); leave it empty until the "
            "project has a public address"
        )
    return match.groups()


def _check_repository(app, config):
    options = config.html_theme_options
    url = options.get("repository_url") or ""
    if not url:
        for key in _BUTTONS:
            options[key] = False
        options["launch_buttons"] = {}
        options["repository_url"] = ""
        logger.info(
            "book_links: _config.yml repository: url: is not set; "
            "launch, repository, issue and edit buttons left out"
        )
        return
    owner, repo = github_parts(url)
    options["repository_url"] = f"https://github.com/{owner}/{repo}"
    for key in _BUTTONS:
        options[key] = True


def _colab_to_notebooks_branch(app, pagename, templatename, context, doctree):
    """Point the theme's Colab link at ``<page>.ipynb`` on the notebooks branch."""
    launch = app.config.html_theme_options.get("launch_buttons") or {}
    colab = launch.get("colab_url", "").rstrip("/")
    if not colab:
        return
    owner, repo = github_parts(app.config.html_theme_options["repository_url"])
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group["buttons"]:
            if button.get("text") == "Colab":
                button["url"] = (
                    f"{colab}/github/{owner}/{repo}/blob/"
                    f"{NOTEBOOKS_BRANCH}/{pagename}.ipynb"
                )


def bibtex_record(title, author, version, year, url=""):
    """The book's BibTeX entry; the ``url`` field only when ``url`` is set."""
    fields = [
        ("author", "{" + author + "}"),
        ("title", title),
        ("version", version),
        ("year", str(year)),
    ]
    if url:
        fields.append(("url", url))
    body = ",\n".join(f"  {key:<7} = {{{value}}}" for key, value in fields)
    return "@software{sparse_ltr_book,\n" + body + "\n}"


class BookCitation(SphinxDirective):
    """``book-citation``: the BibTeX record, from CITATION.cff and the config."""

    def run(self):
        import yaml

        path = Path(self.env.srcdir) / "CITATION.cff"
        if not path.is_file():
            raise self.error(f"book-citation: {path} not found")
        cff = yaml.safe_load(path.read_text(encoding="utf-8"))
        config = self.env.config
        text = bibtex_record(
            cff["title"],
            config.author,
            config.release,
            str(cff["date-released"])[:4],
            config.html_theme_options.get("repository_url") or "",
        )
        block = nodes.literal_block(text, text, language="bibtex")
        return [block]


def setup(app):
    app.add_directive("book-citation", BookCitation)
    # config-inited runs before the theme reads its options at builder-inited.
    app.connect("config-inited", _check_repository)
    # The theme adds its launch buttons at priority 501; rewrite after it.
    app.connect("html-page-context", _colab_to_notebooks_branch, priority=510)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
