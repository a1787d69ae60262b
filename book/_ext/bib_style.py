"""Author-year labels for the References page, told apart by a letter.

sphinxcontrib-bibtex's ``author_year`` reference style writes citations in the
text as "Lai et al. (2013)", but the References page keeps the labels of the
bibliography's pybtex style (``alpha``: "[LPL+13]"), so a reader cannot match
one to the other, and two papers by the same authors in the same year
("Lai et al., 2013", FenchelRank and FSMRank) cannot be told apart in either.

This extension registers

- a pybtex label style ``author_year`` giving "Joachims, 2002", "Lee and Lin,
  2014", "Lai et al., 2013a" / "Lai et al., 2013b": a letter is added only
  where two entries would share a label, in the order of the bibliography
  (sorted by label, then title);
- a pybtex formatting style ``authoryear`` (``unsrt`` formatting, those labels,
  that order), set as ``bibtex_default_style``;
- a reference style ``author_year_letter`` (sphinxcontrib-bibtex's
  ``author_year`` whose year carries the same letter), set as
  ``bibtex_reference_style``, so that the text says "Lai et al. (2013a)"
  exactly where the References page says "[Lai et al., 2013a]".
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from collections import Counter
from dataclasses import dataclass

from pybtex.plugin import register_plugin as register_pybtex_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting import BaseSortingStyle
from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.referencing.author_year import (
    AuthorYearReferenceStyle,
)
from sphinxcontrib.bibtex.style.referencing.basic_author_year import (
    BasicAuthorYearParentheticalReferenceStyle,
    BasicAuthorYearTextualReferenceStyle,
)
from sphinxcontrib.bibtex.style.referencing.extra_year import ExtraYearReferenceStyle
from sphinxcontrib.bibtex.style.template import (
    join,
    join2,
    node,
    post_text,
    pre_text,
    reference,
)

_YEAR_AT_END = re.compile(r"(\d{4}[a-z]?|n\.d\.[a-z]?)$")


@functools.cache
def _plain(latex):
    """LaTeX as plain text, accents decoded (pybtex's parser: ~10 ms a call)."""
    return Text.from_latex(latex).render_as("text")


def _surname(person):
    """A person's surname as plain text."""
    return _plain(" ".join(person.prelast_names + person.last_names))


def _fold(text):
    """Lower case without accents, so "Järvelin" sorts with "Jarvelin"."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore")
    return ascii_text.decode().lower()


def author_year_label(entry):
    """The label of one entry without its letter: "Lai et al., 2013"."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_surname(p) for p in persons]
    if not names:
        who = _plain(entry.fields.get("title", entry.key))
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabelStyle(BaseLabelStyle):
    """Author-year labels, with a letter where two entries would share one."""

    def format_labels(self, sorted_entries):
        bases = [author_year_label(entry) for entry in sorted_entries]
        counts, seen = Counter(bases), Counter()
        for base in bases:
            if counts[base] == 1:
                yield base
            else:
                yield base + string.ascii_lowercase[seen[base]]
                seen[base] += 1


class LabelTitleSorting(BaseSortingStyle):
    """Sort by the author-year label, then title: the order the letters follow."""

    def sorting_key(self, entry):
        title = _plain(entry.fields.get("title", ""))
        return (_fold(author_year_label(entry)), _fold(title))


class AuthorYearStyle(UnsrtStyle):
    """``unsrt`` formatting, author-year labels, sorted by label then title."""

    default_label_style = "author_year"
    default_sorting_style = "label_title"


@node
def year_with_letter(children, data):
    """The year as the entry's label ends: "2013a" where a letter tells it apart."""
    assert not children
    label = data["formatted_entry"].label
    match = _YEAR_AT_END.search(label)
    if match is None:  # a label this extension did not make: say so in the text
        raise ValueError(f"bibliography label {label!r} does not end with a year")
    return Text(match.group(1))


@dataclass
class _Parenthetical(BasicAuthorYearParentheticalReferenceStyle):
    def inner(self, role_name):
        return join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[
            pre_text,
            reference[
                join(sep=self.author_year_sep)[
                    self.person.author_or_editor_or_title(full="s" in role_name),
                    year_with_letter,
                ]
            ],
            post_text,
        ]


@dataclass
class _Textual(BasicAuthorYearTextualReferenceStyle):
    def inner(self, role_name):
        return join(sep=self.text_reference_sep)[
            self.person.author_or_editor_or_title(full="s" in role_name),
            join[
                self.bracket.left,
                join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[
                    pre_text,
                    reference[year_with_letter],
                    post_text,
                ],
                self.bracket.right,
            ],
        ]


@dataclass
class _Year(ExtraYearReferenceStyle):
    def inner(self, role_name):
        return reference[year_with_letter]


@dataclass
class AuthorYearLetterReferenceStyle(AuthorYearReferenceStyle):
    """sphinxcontrib-bibtex's ``author_year``, the year carrying the label's letter."""

    def __post_init__(self):
        super().__post_init__()
        ours = {
            BasicAuthorYearParentheticalReferenceStyle: _Parenthetical,
            BasicAuthorYearTextualReferenceStyle: _Textual,
            ExtraYearReferenceStyle: _Year,
        }
        self.styles[:] = [
            ours[type(s)](**vars(s)) if type(s) in ours else s for s in self.styles
        ]
        self.role_style.update(
            (role, style) for style in self.styles for role in style.role_names()
        )


register_pybtex_plugin("pybtex.style.labels", "author_year", AuthorYearLabelStyle)
register_pybtex_plugin("pybtex.style.sorting", "label_title", LabelTitleSorting)
register_pybtex_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)
register_plugin(
    "sphinxcontrib.bibtex.style.referencing",
    "author_year_letter",
    AuthorYearLetterReferenceStyle,
)


def setup(app):
    """Nothing to connect: the styles are registered on import, before the build."""
    return {"parallel_read_safe": True, "parallel_write_safe": True}
