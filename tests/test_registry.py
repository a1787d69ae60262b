"""One declaration per parameter: composite estimators and the registry."""

import inspect

import pytest

from refimpl.estimators import FSMSVM, FSMRank, LifeRank, LifeRankPipeline, RankSVM


def _defaults(cls):
    return {p.name: p.default for p in inspect.signature(cls).parameters.values()}


@pytest.mark.parametrize(("composite", "stage", "names"), [
    (FSMSVM, FSMRank, ("lambda1", "lambda2", "tol", "max_iter")),
    (FSMSVM, RankSVM, ("C",)),
    (LifeRankPipeline, LifeRank, ("n_components", "lam", "lr", "max_iter",
                                  "random_state")),
    (LifeRankPipeline, RankSVM, ("C",)),
])
def test_composites_take_their_stages_declarations(composite, stage, names):
    """A stage's range and default are the composite's: declared once."""
    for name in names:
        assert composite._parameter_constraints[name] is stage._parameter_constraints[name]
        assert _defaults(composite)[name] == _defaults(stage)[name]


from refimpl.experiments.registry import METHODS  # noqa: E402

#: Pins equal to the estimator's default, each with its reason in the
#: registry: a paper's stated setting, or the parameter that names the method.
SAME_AS_DEFAULT = {
    ("fenchelrank", "tol"), ("fenchelrank", "max_iter"),   # Lai et al. 2013a, 8.3
    ("ranksvm-mcp", "gamma"), ("ranksvm-lp", "p"),         # Laporte et al., V-C
    ("ranksvm-l1", "penalty"), ("liferank-ranksvm", "ranker"),
}


def test_fixed_settings_differ_from_the_defaults():
    """The registry fixes only what differs from the estimator's default."""
    same = set()
    for method in METHODS.values():
        defaults = _defaults(method.factory)
        for name, value in method.fixed.items():
            default = defaults[name]
            if type(default) is type(value) and default == value:
                same.add((method.name, name))
    assert same == SAME_AS_DEFAULT


def test_every_method_declares_its_family_and_colour():
    """Chapter 8's panels and colours come from the registry: a family's
    methods are told apart by colour (and the marker that goes with it)."""
    families = {}
    for method in METHODS.values():
        assert method.family != "other" and method.color != "0.5", method.name
        families.setdefault(method.family, []).append(method.color)
    for family, colors in families.items():
        assert len(set(colors)) == len(colors), family
