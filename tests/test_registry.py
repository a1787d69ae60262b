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
