"""The book as its readers meet it: buttons, Binder, publishing, citation, outputs.

Configuration files are parsed and checked against each other (one version,
one repository URL, the README's build command in the workflow).  The
rendering is checked on scratch mini-books built in ``tmp_path`` with the
project's own ``_config.yml`` and ``book/_ext`` (never the whole book, which
executes every chapter): launch and repository buttons, and the citation's
url, appear when the repository URL is set and vanish while it is unset; a
cell printing
in several messages renders as one output box while the executed notebook
keeps the kernel's outputs, and nbval passes on it; the References page and
the text use the same author-year labels, with ℓ₁ rendered in titles.
"""

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "book" / "_ext"
sys.path.insert(0, str(EXT))

import book_links
import colab_notebooks

URL = "https://github.com/example-org/sparse-ltr"
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"


def _yaml(name):
    return yaml.safe_load((ROOT / name).read_text(encoding="utf-8"))


def _version():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


# --------------------------------------------------------------------------
# One version, one repository URL


def test_version_is_written_once_and_copied_equal():
    import refimpl

    version = _version()
    assert refimpl.__version__ == version
    config = _yaml("_config.yml")["sphinx"]["config"]
    assert config["version"] == config["release"] == version
    assert _yaml("CITATION.cff")["version"] == version
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    # a dated release, or the version being prepared ("not released": 0.1.0
    # was never published, so no aliases are kept for it)
    release = re.compile(r"^## \[(\d[^\]]*)\] - (?:\d{4}-\d\d-\d\d|not released)$",
                         re.MULTILINE)
    released = release.findall(changelog)
    assert released and released[0] == version, "newest CHANGELOG release"
    # the intro's citation is written by book_links from the build's release
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    assert "```{book-citation}" in intro and "version = {" not in intro


def test_repository_url_is_one_setting():
    config = _yaml("_config.yml")
    url, branch = config["repository"]["url"], config["repository"]["branch"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    cff = _yaml("CITATION.cff")
    # a badge is a line of its own; the README's how-to quotes one in backticks
    badges = re.findall(
        r"^\[!\[Binder\]\(https://mybinder\.org/badge_logo\.svg\)\]"
        r"\(https://mybinder\.org/v2/gh/([^/]+)/([^/]+)/([^?)]+)",
        readme, flags=re.MULTILINE,
    )
    if url:
        owner, repo = book_links.github_parts(url)
        assert cff["repository-code"] == url
        assert badges == [(owner, repo, branch)], "README's Binder badge"
        assert "mybinder.org/badge_logo.svg" in readme
    else:
        # unset: no address, no badge and no placeholder anywhere a reader looks
        assert "repository-code" not in cff
        assert badges == []
    for name in ("README.md", "CITATION.cff", "_config.yml", "book/intro.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        assert "OWNER/REPOSITORY" not in text, name
    # every launch provider the issue asks for, in JupyterLab
    launch = config["launch_buttons"]
    assert launch["notebook_interface"] == "jupyterlab"
    assert launch["binderhub_url"] == "https://mybinder.org"
    assert launch["colab_url"] == "https://colab.research.google.com"
    html = config["html"]
    # the buttons follow the URL (book_links); jupyter-book refuses them unset
    assert not {"use_repository_button", "use_issues_button",
                "use_edit_page_button"} & set(html)
    for key in ("favicon",):
        assert (ROOT / html[key]).is_file()
    assert (ROOT / config["logo"]).is_file()
    for path in (ROOT / "book" / "_static").iterdir():
        assert path.stat().st_size < 20_000, f"{path} is not small"


@pytest.mark.parametrize(
    "url", ["https://gitlab.com/a/b", "https://github.com/only-owner", "github.com/a/b"]
)
def test_repository_url_must_be_github(url):
    from sphinx.errors import ConfigError

    with pytest.raises(ConfigError, match="repository: url:"):
        book_links.github_parts(url)


# --------------------------------------------------------------------------
# Citable and reusable


def test_citation_cff_is_valid_cff_1_2_0():
    cff = _yaml("CITATION.cff")
    for key in ("cff-version", "message", "title", "authors"):  # CFF 1.2.0 required
        assert cff.get(key), key
    assert cff["cff-version"] == "1.2.0"
    # one author setting: _config.yml's author:, which the intro's citation reads
    assert cff["authors"] == [{"name": _yaml("_config.yml")["author"]}]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", str(cff["date-released"]))
    assert cff["license"] == ["BSD-3-Clause", "CC-BY-4.0"]
    assert cff["type"] == "software"


def test_licences():
    code = (ROOT / "LICENSE").read_text(encoding="utf-8")
    text = (ROOT / "LICENSE-TEXT").read_text(encoding="utf-8")
    assert code.startswith("BSD 3-Clause License")
    assert "Neither the name of the copyright holder" in code
    assert "Creative Commons Attribution 4.0 International Public License" in text
    assert "Section 8 -- Interpretation." in text  # the whole licence, not a stub
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == {"text": "BSD-3-Clause"}


def test_bibliography_labels_tell_same_author_year_apart():
    import bib_style
    from pybtex.database import parse_file
    from pybtex.plugin import find_plugin

    entries = parse_file(str(ROOT / "references.bib")).entries
    style = find_plugin("pybtex.style.formatting", "authoryear")()
    ordered = list(style.sort(entries.values()))
    labels = dict(zip((e.key for e in ordered), style.format_labels(ordered)))
    assert len(set(labels.values())) == len(labels), "labels must be unique"
    assert labels["lai2013fsmrank"] == "Lai et al., 2013a"
    assert labels["lai2013fenchelrank"] == "Lai et al., 2013b"
    assert labels["lee2014largescale"] == "Lee and Lin, 2014"
    assert labels["joachims2002optimizing"] == "Joachims, 2002"
    assert labels["jarvelin2002cumulated"] == "Järvelin and Kekäläinen, 2002"
    # a letter only where two labels would coincide
    bases = [bib_style.author_year_label(e) for e in ordered]
    for base, label in zip(bases, labels.values()):
        assert label == base or (bases.count(base) > 1 and label[:-1] == base)
    # no raw TeX math left in titles: pybtex prints it as "$\ell _1$"
    for key, entry in entries.items():
        assert "$" not in entry.fields.get("title", ""), key


# --------------------------------------------------------------------------
# Binder: every chapter opens as a notebook with its directives rendered


def test_binder_opens_chapters_as_notebooks_with_myst_rendered():
    overrides = json.loads(
        (ROOT / ".jupyter/labconfig/default_setting_overrides.json").read_text()
    )
    viewers = overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers == {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}
    # that name is the widget factory jupytext's installed lab extension registers
    labext = Path(sys.prefix, "share/jupyter/labextensions")
    bundles = (labext / "jupyterlab-jupytext").rglob("*.js")
    assert any("Jupytext Notebook" in p.read_text(errors="ignore") for p in bundles)
    requirements = (ROOT / "requirements.txt").read_text().splitlines()
    pins = dict(line.split("==") for line in requirements if "==" in line)
    assert "jupyterlab-myst" in pins and "jupytext" in pins
    assert (labext / "jupyterlab-myst" / "package.json").is_file()
    assert requirements[-1] == "-e .", "repo2docker installs refimpl from the repo"
    assert (ROOT / "runtime.txt").read_text().strip() == "python-3.11"
    assert "libarchive-tools" in (ROOT / "apt.txt").read_text().split()


# --------------------------------------------------------------------------
# Published where readers find it


def _readme_build_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```console\n(.*?)```", readme, re.DOTALL).group(1)
    return block.splitlines()[0].split("#")[0].strip()


def test_workflow_builds_with_the_readme_command_and_publishes():
    workflow = _yaml(".github/workflows/book.yml")
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads `on` as True
    assert on["push"]["branches"] == ["main"]
    steps = workflow["jobs"]["build"]["steps"]
    uses = [s.get("uses", "").split("@")[0] for s in steps]
    runs = [s.get("run", "") for s in steps]
    command = _readme_build_command()
    assert command == "make book"
    build = [i for i, run in enumerate(runs) if command in run.splitlines()]
    assert len(build) == 1, f"one step runs the README's {command!r}"
    build = build[0]
    python = steps[uses.index("actions/setup-python")]["with"]["python-version"]
    assert str(python) == "3.11"
    assert uses.index("actions/checkout") < build
    # MQ2008 fetched by refimpl.datasets, LETOR_HOME its parent, before the build
    fetch = [i for i, run in enumerate(runs) if 'fetch_letor("MQ2008"' in run]
    assert len(fetch) == 1 and fetch[0] < build
    assert ".parent" in runs[fetch[0]] and "LETOR_HOME=" in runs[fetch[0]]
    assert "GITHUB_ENV" in runs[fetch[0]]
    # ... and cached between runs, where fetch_letor keeps it, before the fetch
    cache = uses.index("actions/cache")
    assert cache < fetch[0]
    assert steps[cache]["with"]["path"] == "~/.cache/refimpl"
    assert any("REFIMPL_DATA=$HOME/.cache/refimpl" in run for run in runs[:cache])
    key_step = next(s for s in steps if s.get("id") == "letor")
    assert 'REGISTRY["MQ2008"]' in key_step["run"]
    assert steps[cache]["with"]["key"] == "${{ steps.letor.outputs.key }}"
    # published as the Pages recipe does
    upload = uses.index("actions/upload-pages-artifact")
    assert upload > build and steps[upload]["with"]["path"] == "_build/html"
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert deploy["steps"][-1]["uses"].startswith("actions/deploy-pages@")
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    # the Colab notebooks go to the branch the Colab button points at
    colab = next(run for run in runs if "colab_notebooks.py" in run)
    assert f" {book_links.NOTEBOOKS_BRANCH}\n" in colab.rstrip() + "\n"
    assert runs.index(colab) > build


# --------------------------------------------------------------------------
# Colab: an install cell in front of each executed chapter


def test_colab_install_cell_is_inert_off_colab_and_inserted_once(monkeypatch):
    source = colab_notebooks.install_cell(URL, "main")
    compile(source, "<install cell>", "exec")
    assert f'"{URL}"' in source and '"google.colab" in sys.modules' in source
    assert max(map(len, source.splitlines())) <= 79, "the book's column width"
    for package in colab_notebooks.COLAB_PACKAGES:
        assert f'"{package}"' in source

    def no_subprocess(*args, **kwargs):
        raise AssertionError("the install cell ran a command outside Colab")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(source, {})  # noqa: S102 - running the generated cell is the test

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    colab_notebooks.colab_notebook(nb, URL)
    colab_notebooks.colab_notebook(nb, URL)
    assert [c.source for c in nb.cells[1:]] == ["x = 1"]
    assert nb.cells[0].source == source
    assert nb.cells[0].metadata["tags"] == ["remove-cell"]


def test_colab_notebooks_need_the_repository_url(tmp_path, capsys):
    config = tmp_path / "_config.yml"
    config.write_text('repository:\n  url: ""\n')
    executed = tmp_path / "executed"
    executed.mkdir()
    nbformat.write(nbformat.v4.new_notebook(), executed / "ch.ipynb")
    argv = [str(executed), str(tmp_path / "out"), "--config", str(config)]
    with pytest.raises(SystemExit, match="not set"):
        colab_notebooks.main(argv)
    colab_notebooks.main(argv + ["--if-configured"])
    assert not (tmp_path / "out").exists()
    config.write_text(f"repository:\n  url: {URL}\n  branch: main\n")
    colab_notebooks.main(argv)
    written = nbformat.read(tmp_path / "out" / "book" / "ch.ipynb", as_version=4)
    assert colab_notebooks.has_install_cell(written)


# --------------------------------------------------------------------------
# Scratch mini-books built with the project's configuration

PAGE = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A page

```{code-cell} ipython3
import sys

for i in range(3):
    print("line", i)
    sys.stdout.flush()  # each flush is its own stream message
```
"""

INTRO = """\
# Intro

FenchelRank is {cite:t}`lai2013fenchelrank`, FSMRank {cite:t}`lai2013fsmrank`;
see also {cite:p}`candes2008enhancing`.

Math: $\\|w\\|_1 \\le t$ and

$$
\\min_w f(w)
$$ (eq-mini)

```{exercise} A first exercise (proof)
:label: mini-ex1

Show {eq}`eq-mini`.
```

```{admonition} Hint
:class: dropdown tip

A hint.
```

```{solution} mini-ex1
:class: dropdown

The solution.
```

After the solution.

```{book-citation}
```
"""


def _mini_book(path, url, execute):
    """A three-page book in ``path`` with the project's config and extensions."""
    (path / "book").mkdir(parents=True)
    for name in ("_ext", "_static"):
        src = ROOT / "book" / name
        dst = path / "book" / name
        dst.mkdir()
        for f in src.iterdir():
            if f.is_file():
                (dst / f.name).write_bytes(f.read_bytes())
    for name in ("references.bib", "CITATION.cff"):
        (path / name).write_bytes((ROOT / name).read_bytes())
    config = _yaml("_config.yml")
    config["repository"]["url"] = url
    config["execute"]["execute_notebooks"] = "force" if execute else "off"
    (path / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    (path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n"
        "- file: book/page\n- file: book/references\n"
    )
    (path / "book" / "intro.md").write_text(INTRO, encoding="utf-8")
    (path / "book" / "page.md").write_text(PAGE, encoding="utf-8")
    references = "# References\n\n```{bibliography}\n```\n"
    (path / "book" / "references.md").write_text(references)


def _build(path):
    """``jupyter-book build`` with the Makefile's flags (warnings are errors)."""
    return subprocess.run(
        [str(JUPYTER_BOOK), "build", str(path), "-n", "-W", "--keep-going"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,  # the callers assert on the return code and the log
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The mini-book with a repository URL set, its page executed."""
    path = tmp_path_factory.mktemp("book")
    _mini_book(path, URL, execute=True)
    result = _build(path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return path / "_build"


def _html(built, page):
    return (built / "html" / "book" / f"{page}.html").read_text(encoding="utf-8")


def test_launch_and_repository_buttons_from_the_url(built):
    page = _html(built, "page")
    binder = (
        "https://mybinder.org/v2/gh/example-org/sparse-ltr/main"
        "?urlpath=lab/tree/book/page.md"
    )
    colab = (
        "https://colab.research.google.com/github/example-org/sparse-ltr/blob/"
        f"{book_links.NOTEBOOKS_BRANCH}/book/page.ipynb"
    )
    hrefs = set(re.findall(r'href="([^"]+)"', page))
    assert binder in hrefs
    assert colab in hrefs
    assert URL in hrefs  # repository button
    assert f"{URL}/edit/main/book/page.md" in hrefs
    assert any(h.startswith(f"{URL}/issues/new?") for h in hrefs)
    assert "_static/logo.svg" in page and "_static/favicon.png" in page
    # a page that is not a notebook has repository buttons but nothing to launch
    intro = _html(built, "intro")
    assert f"{URL}/edit/main/book/intro.md" in intro
    assert "mybinder.org" not in intro


def test_citation_reads_the_settings(built):
    """The intro's BibTeX: CITATION.cff's title and year, the config's author,
    release and repository URL."""
    cff = _yaml("CITATION.cff")
    config = _yaml("_config.yml")
    expected = book_links.bibtex_record(
        cff["title"], config["author"], _version(),
        str(cff["date-released"])[:4], URL,
    )
    assert f"  url     = {{{URL}}}" in expected
    assert f"  version = {{{_version()}}}" in expected
    assert "url" not in book_links.bibtex_record("t", "a", "1", "2026")
    intro = re.sub(r"<[^>]+>", "", _html(built, "intro"))
    for line in expected.splitlines():
        assert line.strip() in intro, line


def test_one_output_box_and_executed_notebook_as_the_kernel_wrote_it(built):
    page = _html(built, "page")
    box = re.compile(r'<div class="output stream[^"]*">.*?<pre>(.*?)</pre>', re.DOTALL)
    boxes = box.findall(page)
    assert len(boxes) == 1
    assert boxes[0].replace("<span></span>", "") == "line 0\nline 1\nline 2\n"
    nb = nbformat.read(built / "jupyter_execute" / "book" / "page.ipynb", as_version=4)
    outputs = nb.cells[-1].outputs
    assert len(outputs) > 1, "the kernel sent several messages (the case to test)"
    assert "".join(o.text for o in outputs) == "line 0\nline 1\nline 2\n"


def test_nbval_passes_on_the_merged_build(built):
    env = dict(os.environ, PYTHONHASHSEED="0")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env",
         "--nbval-sanitize-with", str(ROOT / "tests" / "nbval_sanitize.cfg"),
         "-p", "no:python", "-p", "no:cacheprovider", "-q",
         str(built / "jupyter_execute")],
        capture_output=True, text=True, timeout=300, env=env, cwd=built, check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert "1 passed" in result.stdout


def test_references_page_uses_the_texts_author_year_labels(built):
    refs = _html(built, "references")
    labels = re.findall(r'<span class="label"><span class="fn-bracket">\[</span>'
                        r"(.*?)<span", refs)
    assert labels == ["Candès et al., 2008", "Lai et al., 2013a", "Lai et al., 2013b"]
    text = re.sub(r"<script.*?</script>", "", refs, flags=re.DOTALL)
    assert "ℓ₁" in text and "$" not in text
    intro = _html(built, "intro")
    cite = r'title="[^"]*?(Sparse learning-to-rank|FSMRank)[^"]*">(\d{4}[a-z]?)</a>'
    cited = re.findall(cite, intro)
    assert cited == [("Sparse learning-to-rank", "2013b"), ("FSMRank", "2013a")]


def test_mathjax_is_served_by_the_book(built):
    """MathJax 3 from the pinned package, copied into _static: no CDN."""
    import offline_mathjax

    config = _yaml("_config.yml")["sphinx"]
    assert config["config"]["mathjax_path"] == offline_mathjax.MATHJAX_PATH
    assert "offline_mathjax" in config["local_extensions"]
    requirements = (ROOT / "requirements.txt").read_text()
    assert f"{offline_mathjax.PACKAGE}==" in requirements
    assert offline_mathjax.version().startswith("3.")
    intro = _html(built, "intro")
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', intro)
    assert "../_static/mathjax/tex-chtml.js" in scripts
    static = built / "html" / "_static" / "mathjax"
    assert (static / "tex-chtml.js").stat().st_size > 500_000
    fonts = list((static / "output/chtml/fonts/woff-v2").glob("*.woff"))
    assert len(fonts) > 20, "CommonHTML web fonts"
    assert (static / "input/tex/extensions/physics.js").is_file(), "autoload"
    for page in (built / "html").rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        for src in re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"',
                              text):
            assert "://" not in src, f"{page.name} loads {src} at read time"


def test_solutions_stay_where_placed_and_fold(built):
    """No solution_follow_exercise: hint and solution are dropdowns, in order."""
    assert "exercise_style" not in _yaml("_config.yml")["sphinx"]["config"]
    intro = _html(built, "intro")
    exercise = intro.index('class="exercise admonition"')
    hint = intro.index('<div class="dropdown tip admonition">')
    solution = intro.index('<div class="solution dropdown admonition"')
    assert exercise < hint < solution < intro.index("After the solution.")


def test_inline_scripts_once_and_a_default_colour_mode(built):
    """book/_ext/html_fixes.py: no script declared twice, no empty mode."""
    intro = _html(built, "intro")
    inline = re.findall(r"<script>(.*?)</script>", intro, flags=re.DOTALL)
    assert inline and len(inline) == len(set(inline))
    assert sum("THEBE_JS_URL" in s for s in inline) <= 1
    assert 'localStorage.getItem("mode") || "auto"' in intro


def test_unset_url_leaves_the_buttons_and_the_citation_url_out(tmp_path):
    _mini_book(tmp_path, "", execute=False)
    result = _build(tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "repository: url: is not set" in result.stdout
    page = (tmp_path / "_build/html/book/page.html").read_text(encoding="utf-8")
    assert "mybinder.org" not in page and "colab.research" not in page
    assert "github.com/" not in page and "/edit/main/" not in page
    assert "_static/logo.svg" in page
    intro = (tmp_path / "_build/html/book/intro.html").read_text(encoding="utf-8")
    assert "sparse_ltr_book" in intro and "github.com/" not in intro


def test_non_github_url_stops_the_build():
    """config-inited rejects it, before any page is read (no build needed)."""
    from types import SimpleNamespace

    from sphinx.errors import ConfigError

    options = {"repository_url": "https://example.org/a/b", "use_issues_button": True}
    with pytest.raises(ConfigError, match="repository: url:"):
        book_links._check_repository(None, SimpleNamespace(html_theme_options=options))
    options = {"repository_url": URL + "/", "launch_buttons": {"colab_url": "x"}}
    book_links._check_repository(None, SimpleNamespace(html_theme_options=options))
    assert options["repository_url"] == URL and options["launch_buttons"]


def test_api_page_lists_every_estimator_from_the_package():
    """book/api.md is not hand-kept: its estimators come from all_estimators()."""
    import importlib.util

    from refimpl.estimators import all_estimators

    path = ROOT / "book" / "_ext" / "api_estimators.py"
    spec = importlib.util.spec_from_file_location("api_estimators", path)
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    text = "\n".join(ext.estimator_lines())
    import refimpl.estimators

    for name, cls in all_estimators():
        home = "refimpl.estimators" if name in refimpl.estimators.__all__ else cls.__module__
        assert f".. autoclass:: {home}.{name}\n" in text, name
    assert ".. refimpl-estimators::" in (ROOT / "book" / "api.md").read_text()
