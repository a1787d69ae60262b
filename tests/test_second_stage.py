"""GAS-E's and FSMSVM's RankSVM stage: what ``converged_`` certifies.

The stage aims at eq. 38 with ``SECOND_STAGE_TOL``; where double precision
resolves no further reduction of ``f`` first (raw-scale features), it counts
as converged iff eq. 38 holds at ``SECOND_STAGE_CERTIFIED_TOL``.  An
unreachable target (1e-300) forces that early stop on any machine.
"""

import numpy as np
import pytest

from refimpl.data import make_synthetic_letor
from refimpl.estimators import FSMSVM, GASRanker
from refimpl.estimators import ranksvm


@pytest.fixture(scope="module")
def data():
    d = make_synthetic_letor(n_queries=30, seed=3)
    return d.X * np.logspace(0, 3, d.X.shape[1]), d.y, d.qid   # raw-scale columns


@pytest.mark.parametrize("cls", [GASRanker, FSMSVM])
def test_early_stop_certified_at_the_registry_tolerance(monkeypatch, data, cls):
    monkeypatch.setattr(ranksvm, "SECOND_STAGE_TOL", 1e-300)
    model = cls(n_features_to_select=5).fit(*data)
    g = model.history_["gnorm"]
    assert not model.ranksvm_.converged_            # 1e-300 never holds
    assert model.ranksvm_.n_iter_ < model.ranksvm_.max_iter
    assert g[-1] <= ranksvm.SECOND_STAGE_CERTIFIED_TOL * g[0]
    assert model.converged_


def test_early_stop_not_certified_without_the_registry_tolerance(monkeypatch, data):
    monkeypatch.setattr(ranksvm, "SECOND_STAGE_TOL", 1e-300)
    monkeypatch.setattr(ranksvm, "SECOND_STAGE_CERTIFIED_TOL", 0.0)
    model = GASRanker(n_features_to_select=5).fit(*data)
    assert model.history_["gnorm"][-1] > 0
    assert not model.converged_
