"""The API page's estimators, generated from ``refimpl.estimators.all_estimators``.

``.. refimpl-estimators::`` (inside an ``{eval-rst}`` block of
``book/api.md``) expands to an ``automodule`` of each estimator family's
module, in the order the estimators are first listed, followed by an
``autoclass`` of each of its estimators with the methods a user calls.  A
new estimator module of ``refimpl.estimators`` appears on the page with no
edit of the page (issue 26: the API page is not hand-kept); an estimator
the package exports is documented under its exported name
(``refimpl.estimators.RankSVM``), any other under its module's.
"""

from docutils.statemachine import StringList
from docutils import nodes
from sphinx.util.docutils import SphinxDirective

#: The methods shown for each estimator, when it has them.
METHODS = ("fit", "transform", "fit_transform", "predict", "score")


def estimator_lines():
    """The reST that documents every public estimator, one family at a time."""
    import refimpl.estimators
    from refimpl.estimators import all_estimators

    families = {}
    for name, cls in all_estimators():
        families.setdefault(cls.__module__, []).append((name, cls))
    lines = []
    for module, members in families.items():
        lines += [f".. automodule:: {module}", ""]
        for name, cls in members:
            shown = ", ".join(m for m in METHODS if callable(getattr(cls, m, None)))
            home = ("refimpl.estimators" if name in refimpl.estimators.__all__
                    else module)
            lines += [f".. autoclass:: {home}.{name}",
                      f"   :members: {shown}", ""]
    return lines


class RefimplEstimators(SphinxDirective):
    """``.. refimpl-estimators::``: every estimator of ``all_estimators()``."""

    has_content = False

    def run(self):
        container = nodes.container()
        self.state.nested_parse(StringList(estimator_lines(), source="all_estimators()"),
                                self.content_offset, container)
        return container.children


def setup(app):
    app.add_directive("refimpl-estimators", RefimplEstimators)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
