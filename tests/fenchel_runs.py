"""Shared by the FenchelRank path tests: run a solve recording every iterate,
and compare two code paths (tree or all-active against explicit pairs).

Two paths compute the same quantities in different summation orders, so two
candidate vertices can tie to within rounding and the runs may then part, and
a gap can cross the tolerance one iteration apart.  What holds on every
machine: the same greedy choices, iterates, gaps and objective values while
both runs go on (and, with ``until_gap``, while the reference gap is above it),
and final objective values within the certified gaps of each other.  Iteration
counts and step counts are not compared across paths.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from refimpl.solvers import fenchelrank


def run(loss, r, **kw):
    """``fenchelrank(loss, r, **kw)`` and the array of its iterates (w_0 = 0 first)."""
    ws = [np.zeros(loss.n_features)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = fenchelrank(loss, r, callback=lambda w, info: ws.append(w), **kw)
    return res, np.array(ws)


def assert_same_run(other, reference, atol=1e-12, until_gap=None):
    """``other`` follows ``reference`` iteration by iteration (see the module)."""
    (ro, wo), (rr, wr) = other, reference
    ho, hr = ro.as_arrays(), rr.as_arrays()
    n = min(len(ho["j"]), len(hr["j"]))
    if until_gap is not None:
        below = np.nonzero(hr["gap"] <= until_gap)[0]
        n = min(n, int(below[0])) if below.size else n
        assert n > 10, "the window of identical iterations is too short to test"
    assert n >= 1
    np.testing.assert_array_equal(ho["j"][:n], hr["j"][:n])        # greedy choices
    np.testing.assert_allclose(wo[:n], wr[:n], rtol=0, atol=atol)  # every iterate
    np.testing.assert_allclose(ho["gap"][:n], hr["gap"][:n], rtol=0, atol=atol)
    np.testing.assert_allclose(ho["obj"][:n], hr["obj"][:n], rtol=0, atol=atol)
    # both ends certified: the objective values within the larger final gap
    bound = max(ho["gap"][-1], hr["gap"][-1]) + atol
    assert abs(ho["obj"][-1] - hr["obj"][-1]) <= bound


def letor_fold1_train(dataset="MQ2008"):
    """Fold 1's training set of ``dataset`` under ``LETOR_HOME``, or None."""
    if not os.environ.get("LETOR_HOME"):
        return None
    from refimpl.data import load_letor_fold
    try:
        return load_letor_fold(dataset, 1).train
    except (FileNotFoundError, OSError):
        return None
