"""Write the chapters as Colab notebooks: the executed notebook, an install cell first.

Colab opens ``.ipynb`` files from GitHub, not the book's MyST ``.md``
chapters, and starts from an environment without ``refimpl``.  The book
workflow (``.github/workflows/book.yml``) therefore runs, after the build::

    python book/_ext/colab_notebooks.py _build/jupyter_execute/book OUT

and publishes ``OUT`` to the ``notebooks`` branch, where the Colab launch
button points (``book_links.NOTEBOOKS_BRANCH``).  Each notebook is the
executed chapter (so the reader sees the outputs before running anything)
with :func:`install_cell` in front: on Colab only, it clones the repository
named by ``repository: url:`` in ``_config.yml`` and installs ``refimpl``
(editable, so chapters find the repository's ``results/``) with the packages
the chapters import beyond Colab's own.  Elsewhere (the build, nbval, Binder,
a local JupyterLab) it does nothing.  A notebook whose first code cell
already tests for ``google.colab`` is left as it is.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from book_links import github_parts

#: What chapters import beyond refimpl's own dependencies and Colab's image.
COLAB_PACKAGES = (
    "cvxpy",
    "clarabel",
    "pooch",
    "rarfile",
    "pytrec-eval-terrier",
    "lightgbm",
    "distributed",
)

_TEMPLATE = '''\
# On Colab only: fetch the book's repository and install refimpl (editable,
# so the chapter also finds the repository's results/) with what the chapters
# import.  Elsewhere (Binder, a local clone) this cell does nothing.
import sys

if "google.colab" in sys.modules:
    import pathlib
    import subprocess

    url = "{url}"
    repo = pathlib.Path("/content/{name}")
    if not repo.exists():
        subprocess.run(["git", "clone", "--depth", "1", "--branch", "{branch}",
                        url, str(repo)], check=True)
    extras = [{packages}]
    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    "-e", str(repo), *extras], check=True)
    sys.path.insert(0, str(repo))  # the running kernel predates the install
'''


def install_cell(url, branch="main"):
    """The source of the Colab install cell for repository ``url``."""
    _, name = github_parts(url)
    indent = " " * len('    extras = [')
    packages = textwrap.fill(
        ", ".join(f'"{p}"' for p in COLAB_PACKAGES),
        width=78,
        initial_indent=indent,
        subsequent_indent=indent,
        break_on_hyphens=False,
    )[len(indent):]
    return _TEMPLATE.format(url=url, branch=branch, name=name, packages=packages)


def has_install_cell(nb):
    """Whether the first code cell already installs for Colab."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    return bool(code) and "google.colab" in code[0].source


def colab_notebook(nb, url, branch="main"):
    """``nb`` with the install cell in front (tagged ``remove-cell``)."""
    if not has_install_cell(nb):
        cell = nbformat.v4.new_code_cell(install_cell(url, branch))
        cell.metadata["tags"] = ["remove-cell"]
        nb.cells.insert(0, cell)
    return nb


def repository(config_path):
    """``(url, branch)`` from ``_config.yml``; ``(None, None)`` while it is unset."""
    config = yaml.safe_load(Path(config_path).read_text(encoding="utf-8"))
    repo = config.get("repository") or {}
    url = repo.get("url") or ""
    if not url:
        return None, None
    github_parts(url)
    return url, repo.get("branch", "main")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("executed", type=Path, help="e.g. _build/jupyter_execute/book")
    parser.add_argument("out", type=Path, help="written as OUT/book/<chapter>.ipynb")
    parser.add_argument("--config", default="_config.yml", type=Path)
    parser.add_argument(
        "--if-configured",
        action="store_true",
        help="write nothing (and succeed) while repository: url: is not set",
    )
    args = parser.parse_args(argv)
    url, branch = repository(args.config)
    if url is None:
        message = (
            f"{args.config}: repository: url: is not set; "
            "no Colab notebooks written (set the public GitHub address first)"
        )
        if args.if_configured:
            print(message)
            return
        raise SystemExit(message)
    sources = sorted(args.executed.glob("*.ipynb"))
    if not sources:
        raise SystemExit(f"{args.executed}: no executed notebooks (build the book)")
    (args.out / "book").mkdir(parents=True, exist_ok=True)
    for path in sources:
        nb = colab_notebook(nbformat.read(path, as_version=4), url, branch)
        nbformat.write(nb, args.out / "book" / path.name)
        print(args.out / "book" / path.name)


if __name__ == "__main__":
    main()
