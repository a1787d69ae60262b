"""A method chapter is a lecture: at most about 5,500 words of prose.

Issue 35 (item 4) and STYLE.md ("a lecture-sized read"): each method chapter
of Part II (``book/02_*.md`` to ``book/07_*.md``; chapter 2 is the toolkit the
lectures draw on and is held to the same size) carries at most about 5,500
words of prose.  The test allows 5,600.

What counts as a word of prose (:func:`prose_words`):

- **Counted:** running text, headings, lists, tables, admonitions and the
  text of theorem, proof, definition and algorithm directives (derivations
  are what a lecturer reads out).  Each inline math span ``$...$`` counts as
  one word, whatever its length.
- **Not counted:** the jupytext front matter; every fenced block whose
  directive is not prose (``{code-cell}``, ``{literalinclude}``, ``{math}``,
  plain code fences such as ``python``, ``console`` or ``bibtex``); display
  math between ``$$`` lines; MyST targets ``(label)=``, comments, directive
  lines (a directive's title and options such as ``:label:``); and the
  whole ``## Exercises`` section (exercises, hints and solutions), up to the
  next level-2 heading.
- A word is a whitespace-separated token holding a letter or a digit
  (punctuation and markup alone are not words).
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 5_600
CHAPTERS = sorted((ROOT / "book").glob("0[2-7]_*.md"))

_FENCE = re.compile(r"^(`{3,}|:{3,})\s*(\{([\w:-]+)\})?\s*(.*)$")
# directives whose body is prose; every other fenced block is code or math
_PROSE = re.compile(
    r"^(admonition|note|tip|important|warning|caution|attention|hint|seealso|"
    r"dropdown|glossary|epigraph|margin|sidebar|topic|figure|table|"
    r"prf:[\w-]+)$"
)
_INLINE_MATH = re.compile(r"\$[^$\n]+\$")
_WORD = re.compile(r"[A-Za-z0-9]")


def _strip_front_matter(lines):
    if lines and lines[0].strip() == "---":
        for end, line in enumerate(lines[1:], start=1):
            if line.strip() == "---":
                return lines[end + 1:]
    return lines


def prose_lines(text):
    """The lines of ``text`` that count as prose (see the module docstring)."""
    lines = _strip_front_matter(text.splitlines())
    out = []
    stack = []  # open fences: (marker, is_prose)
    in_display_math = in_exercises = in_comment = False
    for line in lines:
        stripped = line.strip()
        if in_comment:
            in_comment = "-->" not in stripped
            continue
        if stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        match = _FENCE.match(stripped)
        in_code = bool(stack) and not stack[-1][1]
        if match and stack and stripped == stack[-1][0]:
            stack.pop()  # the closing fence of the innermost block
            continue
        if match and not in_code:
            marker, _, name, _ = match.groups()
            stack.append((marker, bool(name and _PROSE.match(name))))
            continue
        if stack and not all(prose for _, prose in stack):
            continue
        if re.match(r"^##\s", line):
            in_exercises = line[3:].strip().lower() == "exercises"
        if in_exercises:
            continue
        if stripped.startswith("$$"):
            if not (len(stripped) > 2 and stripped.endswith("$$")):
                in_display_math = not in_display_math
            continue
        if in_display_math:
            continue
        if re.match(r"^\([\w-]+\)=$", stripped) or stripped.startswith("%"):
            continue
        if stripped.startswith(":") and re.match(r"^:[\w-]+:", stripped):
            continue  # a directive option such as :label: or :class:
        out.append(line)
    return out


def prose_words(text):
    """The number of words of prose in a chapter's MyST source."""
    body = _INLINE_MATH.sub(" MATH ", "\n".join(prose_lines(text)))
    return sum(1 for token in body.split() if _WORD.search(token))


def test_counter_follows_its_rule():
    text = "\n".join([
        "---", "jupytext: {}", "---", "(label)=", "# Title words",
        "Two words $x + y$ here.", "", "```{code-cell} ipython3",
        "a = 1  # not prose", "```", "$$", "a + b = c", "$$",
        "```{prf:theorem} Named", ":label: thm", "Theorem text.", "```",
        "````{admonition} Note", "Inside.", "```python", "code()", "```",
        "````", "## Exercises", "```{exercise} E", "Not counted.", "```",
        "## Summary", "Counted again.",
    ])
    # Title words | Two words MATH here. | Theorem text. | Inside.
    # | Summary Counted again.
    assert prose_words(text) == 2 + 4 + 2 + 1 + 3


@pytest.mark.parametrize(
    "path",
    CHAPTERS,
    ids=lambda p: p.name,
)
def test_method_chapter_is_lecture_sized(path):
    words = prose_words(path.read_text(encoding="utf-8"))
    assert words <= LIMIT, (
        f"{path.relative_to(ROOT)}: {words} words of prose, more than {LIMIT} "
        "(code cells, display math and the Exercises section not counted)"
    )
