"""The book's layout rules (issue 17), checked on every chapter.

Source checks (always; they read ``book/*.md``):

* **cell length**: a code cell has at most ``MAX_CELL_LINES`` = 25 lines of
  code.  Not counted: the cell's option header (the ``---`` YAML block or
  the ``:tags:``-style lines right after the fence) and leading and
  trailing blank lines.  Folded (``hide-input``) cells count too: a reader who unfolds one
  meets the same wall.
* **code width**: no line of a code cell is wider than ``MAX_WIDTH`` = 79
  characters.
* **figure captions**: a cell that shows a matplotlib figure
  (``plt.show()``, or ``plt.subplots(``/``plt.figure(`` outside a
  function and without ``plt.close(``) or glues one either has a caption
  in its ``mystnb: figure: caption:`` option (myst-nb then renders the
  image as a numbered ``figure`` with that caption, named by ``name:``), or
  glues the figure (``glue("key", fig, display=False)``) into a
  ``{glue:figure}`` directive that has a ``:name:`` and a caption.

Output checks (they need the executed notebooks, ``_build/jupyter_execute``
after a build): run with ``pytest tests/test_book_layout.py --executed
_build/jupyter_execute``, which ``make test`` does after the book is built.
Without ``--executed`` (the plain unit run, before any build) they are
skipped; with it, a missing chapter notebook is a failure, not a skip.

* **figures**: every image output is glued (its output metadata names a
  scrapbook key, and the key is in a ``{glue:figure}``) or sits in a cell
  whose ``mystnb.figure.caption`` is set: no figure reaches the page
  without a number and a caption.
* **output width**: no printed line (stream output, or the ``text/plain``
  of a result that has no HTML form) is wider than ``MAX_WIDTH`` = 79
  characters, the PEP 8 width the code cells keep too.  Measured in the
  built book (headless Chromium, sphinx-book-theme): a 1280-px window's code
  and output column is 640 px wide, 75 characters of the theme's 14-px
  code font; ``_static/code_width.css`` sets 13 px, which makes it 81, so a
  79-character line does not scroll there; from about 1340 px on the column
  is 754 px, 89 characters at 14 px.

Limits: the checks read what the chapters say, not how the browser lays it
out (the screenshots of ``make screenshots`` are the visual check); a
figure drawn by a library without ``plt`` in the cell is caught only by the
output check; markdown text and math are not width-checked (they wrap).

``KNOWN_VIOLATIONS`` lists the violations of chapters 2-5 that existed when
the checker was written, while those chapters were being rewritten (issue
16); a violation not listed fails, and a listed one that no longer occurs
is reported as a warning so that its entry can be removed.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
MAX_CELL_LINES = 25
MAX_WIDTH = 79

CHAPTERS = sorted(p for p in BOOK.glob("*.md")
                  if p.name not in ("references.md",))

_FIGURE_CALL = re.compile(r"\bplt\.(show|subplots|figure|subplot)\(")
_GLUE_CALL = re.compile(r"""\bglue\(\s*["']([^"']+)["']""")
_CODE_START = re.compile(r"^```\{code-cell\}")

# Violations in chapters 2-5 when this checker was written, while other
# engineers rewrite those chapters (issue 16); fix them, then delete the
# entry.  Key: (chapter file, kind, the first KEY_LEN characters of the
# first line of the cell's code).
KEY_LEN = 60
_REASON = "being rewritten by issue 16 work"
KNOWN_VIOLATIONS: dict[tuple[str, str, str], str] = {
}


@dataclass
class Cell:
    """One code cell of a MyST chapter."""

    chapter: str
    index: int          # 1-based among the chapter's code cells
    line: int           # line of the opening fence in the .md file
    section: str        # the last heading above it
    options: dict       # parsed header (YAML block or :key: value lines)
    code: list          # the code lines, header and trailing blanks removed

    @property
    def key(self) -> str:
        """First non-blank code line: the cell's name in the allowlist."""
        return next((c.strip() for c in self.code if c.strip()), "")

    def where(self) -> str:
        return (f"{self.chapter}:{self.line} (code cell {self.index}, "
                f"section {self.section!r}, starting {self.key[:40]!r})")


def _parse_header(lines):
    """Options of a code cell and the number of header lines."""
    if lines and lines[0].strip() == "---":
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
        import yaml
        return yaml.safe_load("\n".join(lines[1:end])) or {}, end + 1
    opts, n = {}, 0
    while n < len(lines) and re.match(r"^:[\w-]+:", lines[n]):
        k, _, v = lines[n][1:].partition(":")
        opts[k.strip()] = v.strip()
        n += 1
    return opts, n


def read_cells(path: Path) -> list[Cell]:
    """The code cells of a MyST-markdown chapter."""
    lines = path.read_text(encoding="utf-8").splitlines()
    cells, section, i = [], "", 0
    while i < len(lines):
        if lines[i].startswith("#") and not lines[i].startswith("#!"):
            section = lines[i].lstrip("#").strip()
        if _CODE_START.match(lines[i]):
            start = i
            j = i + 1
            while lines[j].rstrip() != "```":
                j += 1
            body = lines[i + 1:j]
            opts, n = _parse_header(body)
            code = body[n:]
            while code and not code[-1].strip():
                code.pop()
            while code and not code[0].strip():     # after ":tags:" lines
                code.pop(0)
            cells.append(Cell(path.name, len(cells) + 1, start + 1, section,
                              opts, code))
            i = j
        i += 1
    return cells


def glue_figures(path: Path) -> dict[str, dict]:
    """``{glue:figure}`` directives of a chapter: key -> name and caption."""
    text = path.read_text(encoding="utf-8")
    out = {}
    for m in re.finditer(r"^(`{3,}|:{3,})\{glue:figure\}\s*(\S+)\s*\n(.*?)^\1\s*$",
                         text, flags=re.MULTILINE | re.DOTALL):
        body = m.group(3).splitlines()
        opts = {ln.split(":")[1]: ln.split(":", 2)[2].strip()
                for ln in body if re.match(r"^:[\w-]+:", ln)}
        caption = " ".join(ln for ln in body
                           if ln.strip() and not re.match(r"^:[\w-]+:", ln))
        out[m.group(2)] = {"name": opts.get("name"), "caption": caption.strip()}
    return out


def _caption(cell: Cell) -> str | None:
    fig = (cell.options.get("mystnb") or {}).get("figure") or {}
    return fig.get("caption") if isinstance(fig, dict) else None


def source_violations(path: Path) -> list[tuple[str, Cell, str]]:
    """(kind, cell, message) of every source rule the chapter breaks."""
    out = []
    glued = glue_figures(path)
    for cell in read_cells(path):
        if len(cell.code) > MAX_CELL_LINES:
            out.append(("long-cell", cell,
                        f"{len(cell.code)} lines > {MAX_CELL_LINES}"))
        wide = [n for n, c in enumerate(cell.code, 1) if len(c) > MAX_WIDTH]
        if wide:
            out.append(("wide-source", cell,
                        (f"{len(wide)} line(s) wider than {MAX_WIDTH} "
                        f"(cell lines {wide[:5]}, widest "
                        f"{max(len(cell.code[n - 1]) for n in wide)})")))
        src = "\n".join(cell.code)
        keys = _GLUE_CALL.findall(src)
        # a figure created and closed without plt.show() or glue is never
        # displayed (e.g. drawn inside a function whose numbers are kept)
        top = "\n".join(c for c in cell.code if not c[:1].isspace())
        shown = "plt.show()" in src or bool(_FIGURE_CALL.search(top) and
                                            "plt.close(" not in src)
        if shown or keys:
            if _caption(cell):
                if not (cell.options.get("mystnb") or {})["figure"].get("name"):
                    out.append(("figure-caption", cell,
                                "figure caption without a name"))
            elif keys:
                for key in keys:
                    g = glued.get(key)
                    if g is None or not g["caption"] or not g["name"]:
                        out.append(("figure-caption", cell,
                                    (f"glued {key!r} has no {{glue:figure}} "
                                    "with :name: and a caption")))
            else:
                out.append(("figure-caption", cell,
                            ("draws a figure without a caption (mystnb: "
                            "figure: caption:, or glue into {glue:figure})")))
    return out


def _known(chapter, kind, cell_key) -> bool:
    return (chapter, kind, cell_key[:KEY_LEN]) in KNOWN_VIOLATIONS


def _check(found, label):
    new = [f"{kind}: {where} -- {msg}" for kind, chapter, key, where, msg in found
           if not _known(chapter, kind, key)]
    assert not new, f"{label}:\n  " + "\n  ".join(new)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_source_layout(path):
    """Cell length, code width and figure captions of one chapter."""
    found = [(kind, c.chapter, c.key, c.where(), msg)
             for kind, c, msg in source_violations(path)]
    _check(found, f"{path.name} breaks the book's layout rules")


def test_known_violations_are_current():
    """The allowlist names only chapters 2-5, each entry with its reason;
    entries that no longer occur are reported (a warning) for removal."""
    allowed = {"07_ranksvm_ostree.md", "03_fenchelrank_duality.md",
               "04_fsmrank_nesterov.md", "05_dc_reweighting.md"}
    for (chapter, kind, _), reason in KNOWN_VIOLATIONS.items():
        assert chapter in allowed, chapter
        assert kind in ("long-cell", "wide-source", "figure-caption",
                        "wide-output"), kind
        assert reason == _REASON
    current = {(c.chapter, kind, c.key[:KEY_LEN]) for p in CHAPTERS
               for kind, c, _ in source_violations(p)}
    stale = [k for k in KNOWN_VIOLATIONS
             if k[1] != "wide-output" and k not in current]
    if stale:
        warnings.warn("KNOWN_VIOLATIONS entries that no longer occur "
                      f"(remove them): {stale}", stacklevel=1)


def test_checker_catches_violations(tmp_path):
    """The rules fire on a chapter that breaks each of them."""
    long_cell = "\n".join(f"x{i} = {i}" for i in range(MAX_CELL_LINES + 1))
    ok_cell = "\n".join(f"x{i} = {i}" for i in range(MAX_CELL_LINES))
    md = tmp_path / "bad.md"
    md.write_text(
        "# A\n\n```{code-cell} ipython3\n:tags: [hide-input]\n\n"
        f"{ok_cell}\n\n```\n\n"
        f"```{{code-cell}} ipython3\n{long_cell}\n```\n\n"
        f"```{{code-cell}} ipython3\ny = '{'z' * 80}'\n```\n\n"
        "## B\n\n```{code-cell} ipython3\nfig, ax = plt.subplots()\n"
        "plt.show()\n```\n\n"
        "```{code-cell} ipython3\n---\nmystnb:\n  figure:\n"
        "    caption: A caption.\n    name: fig-ok\n---\nplt.show()\n```\n\n"
        "```{code-cell} ipython3\nfig = plt.figure()\n"
        "glue('g1', fig, display=False)\n```\n\n"
        "```{code-cell} ipython3\nfig = plt.figure()\n"
        "glue('g2', fig, display=False)\n```\n\n"
        "```{glue:figure} g1\n:name: fig-g1\n\nWhat to see.\n```\n\n"
        "```{glue:figure} g2\n```\n")
    found = [(kind, c.index) for kind, c, _ in source_violations(md)]
    assert found == [("long-cell", 2), ("wide-source", 3),
                     ("figure-caption", 4), ("figure-caption", 7)]
    assert len(read_cells(md)[0].code) == MAX_CELL_LINES


# -- executed notebooks ------------------------------------------------------

@pytest.fixture(scope="module")
def executed(request):
    d = request.config.getoption("--executed")
    if d is None:
        pytest.skip("output checks need the executed chapters: run with "
                    "--executed _build/jupyter_execute (make test does)")
    d = Path(d)
    nbs = {p.stem: p for p in d.rglob("*.ipynb")
           if ".ipynb_checkpoints" not in p.parts}
    missing = [p.stem for p in CHAPTERS if p.stem not in nbs
               and read_cells(p)]
    assert not missing, f"{d}: no executed notebook for {missing}"
    return nbs


def output_violations(nb: dict, chapter: Path):
    """(kind, cell key, where, message) for the outputs of one notebook."""
    glued = glue_figures(chapter)
    code_cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    out = []
    for i, cell in enumerate(code_cells, 1):
        src = cell["source"] if isinstance(cell["source"], str) \
            else "".join(cell["source"])
        key = next((ln.strip() for ln in src.splitlines() if ln.strip()), "")
        where = f"{chapter.name} code cell {i} (starting {key[:40]!r})"
        caption = ((cell.get("metadata", {}).get("mystnb") or {})
                   .get("figure") or {}).get("caption")
        texts = []      # results' text; the streams are one box on the page
        for o in cell.get("outputs", []):
            if o["output_type"] == "stream":
                continue                    # joined below
            if o["output_type"] in ("display_data", "execute_result"):
                data = o.get("data", {})
                if any(m.startswith("image/") for m in data):
                    name = (o.get("metadata", {}).get("scrapbook") or {}).get("name")
                    if name is not None:
                        if name not in glued:
                            out.append(("figure-caption", key, where,
                                        (f"glued figure {name!r} is in no "
                                        "{glue:figure}")))
                    elif not caption:
                        out.append(("figure-caption", key, where,
                                    "image output without a caption"))
                elif "text/plain" in data and "text/html" not in data:
                    t = data["text/plain"]
                    texts.append(t if isinstance(t, str) else "".join(t))
        stream = "".join(o["text"] if isinstance(o["text"], str)
                         else "".join(o["text"])
                         for o in cell.get("outputs", [])
                         if o["output_type"] == "stream")
        wide = [ln for t in [stream, *texts] for ln in t.splitlines()
                if len(ln) > MAX_WIDTH]
        if wide:
            out.append(("wide-output", key, where,
                        (f"{len(wide)} printed line(s) wider than "
                        f"{MAX_WIDTH} (widest {max(map(len, wide))}: "
                        f"{max(wide, key=len)[:60]!r}...)")))
    return out


@pytest.mark.parametrize("path", [p for p in CHAPTERS], ids=lambda p: p.stem)
def test_outputs_layout(path, executed):
    """Printed line width and figure captions in one executed chapter."""
    if path.stem not in executed:
        pytest.skip(f"{path.name} has no code")
    nb = json.loads(executed[path.stem].read_text(encoding="utf-8"))
    found = [(kind, path.name, key, where, msg)
             for kind, key, where, msg in output_violations(nb, path)]
    _check(found, f"{path.name}: executed outputs break the layout rules")


def test_output_checker_catches_violations(tmp_path):
    """Wide printed lines (split streams joined) and uncaptioned images."""
    md = tmp_path / "ch.md"
    md.write_text("```{glue:figure} g\n:name: fig-g\n\nCaption.\n```\n")

    def cell(src, outputs, caption=None):
        meta = {"mystnb": {"figure": {"caption": caption}}} if caption else {}
        return {"cell_type": "code", "source": src, "metadata": meta,
                "outputs": outputs}

    png = {"image/png": "iVBOR", "text/plain": "<Figure>"}
    nb = {"cells": [
        cell("print(w)", [{"output_type": "stream", "name": "stdout",
                           "text": "a" * 50},
                          {"output_type": "stream", "name": "stdout",
                           "text": "b" * 30 + "\n"}]),
        cell("ok", [{"output_type": "stream", "name": "stdout",
                     "text": "c" * MAX_WIDTH + "\n"}]),
        cell("plt.show()", [{"output_type": "display_data", "data": png,
                             "metadata": {}}]),
        cell("plt.show()", [{"output_type": "display_data", "data": png,
                             "metadata": {}}], caption="What to see."),
        cell("glue('g', fig)", [{"output_type": "display_data", "data": png,
                                 "metadata": {"scrapbook": {"name": "g"}}}]),
        cell("glue('h', fig)", [{"output_type": "display_data", "data": png,
                                 "metadata": {"scrapbook": {"name": "h"}}}]),
        cell("df", [{"output_type": "execute_result", "data": {
            "text/html": "<table/>", "text/plain": "x" * 200}}]),
    ]}
    found = [(kind, key) for kind, key, _, _ in output_violations(nb, md)]
    assert found == [("wide-output", "print(w)"),
                     ("figure-caption", "plt.show()"),
                     ("figure-caption", "glue('h', fig)")]


# -- chapter anatomy (issue 25: a book a lecturer adopts unchanged) ----------
#
# Source checks of what every chapter must have (see the chapter rules in
# the README/STYLE): an Overview with learning outcomes, a Summary, at least
# five exercises, a proof exercise in each method chapter (03-07), checkers
# that exist and are named and tested, and no engineering in the method
# chapters (it lives in Part III, chapters 09-10).  Strict: a chapter that
# is still being rewritten fails them, with a message naming what it lacks.

ANATOMY_CHAPTERS = [p for p in CHAPTERS
                    if p.name not in ("intro.md", "api.md", "references.md")]
METHOD_PREFIXES = ("03", "04", "05", "06", "07")
MIN_EXERCISES = 5
_EXERCISE = re.compile(r"^[`:]{3,}\{exercise\}[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_OUTCOMES = re.compile(r"after this chapter you can|you will be able to",
                       re.IGNORECASE)
_CHECKER_REF = re.compile(r"refimpl\.exercises\.(check_\w+)")
_CHECKER_IMPORT = re.compile(
    r"from[ \t]+refimpl\.exercises[ \t]+import[ \t]+"
    r"(?:\(([\w\s,]+)\)|([\w \t,]+))")
# engineering that belongs to Part III: (pattern, what)
ENGINEERING = [
    (re.compile(r"double-double", re.IGNORECASE), "double-double"),
    (re.compile(r"SIMD"), "SIMD"),
    (re.compile(r"prefetch", re.IGNORECASE), "prefetch"),
    (re.compile(r"\{literalinclude\}\s+\S*refimpl/kernels/"),
     "literalinclude of refimpl/kernels/"),
]


def _is_method(path: Path) -> bool:
    return path.name.startswith(METHOD_PREFIXES)


def overview_problems(text: str) -> list[str]:
    """An Overview section whose learning outcomes form a list (3-5 items)."""
    m = re.search(r"^##\s+Overview\s*$", text, re.MULTILINE)
    if m is None:
        return ["no '## Overview' section"]
    end = re.search(r"^##\s", text[m.end():], re.MULTILINE)
    section = text[m.end():m.end() + end.start()] if end else text[m.end():]
    intro = _OUTCOMES.search(section)
    if intro is None:
        return ["the Overview has no learning outcomes introduced by "
                "'After this chapter you can' (or 'you will be able to')"]
    items, started = 0, False
    for line in section[intro.end():].splitlines()[1:]:
        if re.match(r"^\s*(?:[-*+]|\d+[.)])\s+\S", line):
            items, started = items + 1, True
        elif started and line.strip() and not line.startswith((" ", "\t")):
            break
    if items < 3:
        return [f"the learning outcomes are {items} list item(s) after "
                "'After this chapter you can'; 3-5 expected"]
    return []


def exercise_titles(text: str) -> list[str]:
    return _EXERCISE.findall(text)


def checkers_named(text: str) -> set[str]:
    """Checker names a chapter cites (``refimpl.exercises.check_x`` or an
    import from ``refimpl.exercises``)."""
    names = set(_CHECKER_REF.findall(text))
    for groups in _CHECKER_IMPORT.findall(text):
        names |= {n for n in re.split(r"[\s,]+", "".join(groups))
                  if n.startswith("check_")}
    return names


def engineering_found(text: str) -> list[str]:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for pattern, what in ENGINEERING:
            if pattern.search(line):
                out.append(f"line {n}: {what}: {line.strip()[:70]!r}")
    return out


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", ANATOMY_CHAPTERS, ids=lambda p: p.stem)
def test_overview_has_learning_outcomes(path):
    """'## Overview' with a list of outcomes: 'After this chapter you can'."""
    bad = overview_problems(_text(path))
    assert not bad, f"{path.name}: " + "; ".join(bad)


@pytest.mark.parametrize("path", ANATOMY_CHAPTERS, ids=lambda p: p.stem)
def test_summary_section(path):
    """Every chapter closes with a '## Summary' in prose."""
    assert re.search(r"^## Summary\s*$", _text(path), re.MULTILINE), \
        f"{path.name}: no '## Summary' section"


@pytest.mark.parametrize("path", ANATOMY_CHAPTERS, ids=lambda p: p.stem)
def test_at_least_five_exercises(path):
    """At least five ``{exercise}`` directives (fence at column 0)."""
    titles = exercise_titles(_text(path))
    assert len(titles) >= MIN_EXERCISES, (
        f"{path.name}: {len(titles)} exercise(s), at least {MIN_EXERCISES} "
        f"expected (found: {titles})")


@pytest.mark.parametrize("path", [p for p in ANATOMY_CHAPTERS
                                  if _is_method(p)], ids=lambda p: p.stem)
def test_method_chapter_has_a_proof_exercise(path):
    """Method chapters (03-07): an exercise whose title ends '(proof)'."""
    titles = exercise_titles(_text(path))
    assert any(t.endswith("(proof)") for t in titles), (
        f"{path.name}: no exercise title ends with '(proof)' "
        f"(titles: {titles})")


@pytest.mark.parametrize("path", [p for p in ANATOMY_CHAPTERS
                                  if _is_method(p)], ids=lambda p: p.stem)
def test_no_engineering_in_method_chapters(path):
    """Double-double sums, SIMD, prefetching and kernel listings belong to
    Part III (09_making_it_fast): a method chapter links there instead."""
    found = engineering_found(_text(path))
    assert not found, (f"{path.name} has Part III engineering (move it to "
                       "09_making_it_fast and link with {ref}):\n  "
                       + "\n  ".join(found))


def _exercise_api():
    import refimpl.exercises as ex
    return ex, [n for n in ex.__all__
                if n not in ("CheckResult", "FailingCase", "run_checker")]


def test_checkers_named_by_chapters_exist():
    """Every ``refimpl.exercises.check_*`` a chapter names can be imported."""
    ex, _ = _exercise_api()
    missing = [f"{p.name}: {name}" for p in CHAPTERS
               for name in sorted(checkers_named(_text(p)))
               if not hasattr(ex, name)]
    assert not missing, ("chapters name checkers that refimpl.exercises "
                         "lacks:\n  " + "\n  ".join(missing))


def test_every_checker_is_posed_and_tested():
    """Each checker in ``refimpl.exercises.__all__`` is named by a chapter
    and exercised by tests/test_exercises_*.py."""
    _, names = _exercise_api()
    chapters = "\n".join(_text(p) for p in CHAPTERS)
    tests = "\n".join(p.read_text(encoding="utf-8") for p in
                      (BOOK.parent / "tests").glob("test_exercises_*.py"))
    unnamed = [n for n in names if not re.search(rf"\b{n}\b", chapters)]
    untested = [n for n in names if not re.search(rf"\b{n}\b", tests)]
    assert not unnamed, f"checkers no chapter names: {unnamed}"
    assert not untested, f"checkers no tests/test_exercises_*.py mentions: " \
                         f"{untested}"


def test_anatomy_checks_catch_violations():
    """The anatomy rules fire on a chapter that breaks each of them."""
    bad = ("# T\n\n## Overview\n\nAfter this chapter you can\n\n- one\n"
           "- two\n\nText.\n\n## More\n\n```{exercise} Bound it\n:label: "
           "t-ex1\n```\n\nWe use SIMD lanes and prefetching.\n\n"
           "```{literalinclude} ../refimpl/kernels/ostree.py\n```\n"
           "See `refimpl.exercises.check_nothing_here(f)`.\n")
    assert overview_problems(bad) == [
        "the learning outcomes are 2 list item(s) after 'After this chapter"
        " you can'; 3-5 expected"]
    assert overview_problems("# T\n\n## Intro\n") == ["no '## Overview' "
                                                        "section"]
    assert "no learning outcomes" in overview_problems("## Overview\n\nHi\n")[0]
    good = ("## Overview\n\nAfter this chapter you can:\n\n1. a\n2. b\n"
            "3. c,\n   continued\n\nPrerequisites.\n\n## Next\n")
    assert overview_problems(good) == []
    assert exercise_titles(bad) == ["Bound it"]
    assert exercise_titles(":::{exercise} P (proof)\n:::\n") == ["P (proof)"]
    assert exercise_titles(" ```{exercise} indented\n") == []
    assert [f.split(":")[1].strip() for f in engineering_found(bad)] == [
        "SIMD", "prefetch", "literalinclude of refimpl/kernels/"]
    assert checkers_named(bad) == {"check_nothing_here"}
    assert checkers_named("from refimpl.exercises import (check_a,\n"
                          "    check_b)\n") == {"check_a", "check_b"}
    assert checkers_named("from refimpl.exercises import check_c, x\n\n"
                          "def check_d(): pass\n") == {"check_c"}
