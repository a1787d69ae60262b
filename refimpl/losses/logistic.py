r"""The mean pairwise logistic loss (LifeRank's eq. 5, a linear RankNet).

Derived in: book/06_liferank_bdmm.md#liferank
"""

from __future__ import annotations

import numpy as np

from .._validation import ranking_problem
from ..exceptions import DataError
from ..kernels import logistic as _k
from ..pairs import preference_pairs
from ._base import CachedObjective

#: Implementations of the pairwise logistic loss (see :class:`PairwiseLogistic`).
LOSS_BACKENDS = ("numba", "direct", "numpy")


def logistic_pair_bytes(n_docs, n_pairs, n_components):
    """Memory of LifeRank's loss beyond the data, in bytes.

    :class:`PairwiseLogistic` has no tree backend: an int64 ``(i, j)`` per
    preference pair (16 bytes), per-document work arrays, ``X T`` and its
    gradient (``n_components`` columns each), the order of the pairs'
    queries.  The estimators' memory model (``estimate_memory``) uses it.
    """
    return 16 * n_pairs + 8 * n_docs * (4 + 2 * n_components)


class PairwiseLogistic(CachedObjective):
    r"""Mean pairwise logistic loss ``(1/p) sum_P log(1 + exp(-(x_i - x_j)^T v))``.

    ``P = {(i, j) : q_i = q_j, y_i > y_j}``, ``p = |P|``; this is the loss
    part of LifeRank's eq. 5 as a function of ``v = T w`` (divided by its
    number of pairs, see :mod:`refimpl.losses.liferank`), and the loss of a linear
    RankNet.  Its gradient is ``X^T ds`` with ``ds = d loss / d s`` at the
    scores ``s = X v``: ``ds_i = -(1/p) sum_{(i,j) in P} sigma(-(s_i - s_j))
    + (1/p) sum_{(j,i) in P} sigma(-(s_j - s_i))``.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (m, n), or RankingProblem
        The features, or the validated problem
        (:class:`~refimpl._validation.RankingProblem`; ``y`` and ``qid`` then
        not given), which is not checked or grouped again.
    y : array-like of shape (m,)
    qid : array-like of shape (m,), optional
    normalize : bool, default True
        Divide by ``p``; ``False`` gives the sum of eq. 5.
    backend : {"numba", "direct", "numpy"}, default "numba"
        ``"numba"``: one O(p) loop over the pair index arrays with one
        exponential per document (``refimpl.kernels.logistic.value_ds``);
        ``"direct"``: the same loop with one exponential and one logarithm
        per pair (``value_ds_direct``); ``"numpy"``: the vectorised
        reference (``logaddexp`` and ``bincount`` on the same index arrays).

    Notes
    -----
    Cached state: :meth:`fun` stores ``v`` and ``ds``; :meth:`grad` at the
    same ``v`` reuses them.

    Derived in: book/06_liferank_bdmm.md#liferank
    """

    def __init__(self, X, y=None, qid=None, *, normalize=True, backend="numba"):
        self.problem = ranking_problem(X, y, qid)
        self.X, self.y, self.groups = self.problem.X, self.problem.y, self.problem.groups
        if backend not in LOSS_BACKENDS:
            raise DataError(f"backend must be one of {LOSS_BACKENDS}, got {backend!r}")
        self.backend = backend
        self.pairs = preference_pairs(self.problem)
        self.n_pairs = len(self.pairs)
        self.scale = 1.0 / self.n_pairs if normalize else 1.0
        self.normalize = bool(normalize)
        self._ds = np.empty(self.X.shape[0])
        self._a = np.empty(self.X.shape[0])
        self._w = None
        self._value = None

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    def scores(self, v) -> np.ndarray:
        """Document scores ``X v``."""
        return np.asarray(self.X @ self._check_w(v, "v"), dtype=np.float64).ravel()

    def value_ds(self, s):
        """Unscaled sum over ``P`` and ``d sum / d s`` at scores ``s``."""
        pi, pj = self.pairs.i, self.pairs.j
        s = np.ascontiguousarray(s, dtype=np.float64)
        if self.backend == "numba":
            value = _k.value_ds(s, self.groups.order, self.groups.indptr, pi, pj,
                                self._a, self._ds)
            return float(value), self._ds
        if self.backend == "direct":
            value = _k.value_ds_direct(s, pi, pj, self._ds)
            return float(value), self._ds
        m = s[pi] - s[pj]
        g = np.exp(-np.logaddexp(0.0, m))          # sigma(-m) without overflow
        n = len(s)
        ds = np.bincount(pj, g, n) - np.bincount(pi, g, n)
        return float(np.logaddexp(0.0, -m).sum()), ds

    def fun(self, v) -> float:
        """Loss value at ``v``; caches ``d loss / d s``."""
        v = self._check_w(v, "v")
        value, ds = self.value_ds(self.scores(v))
        self._w = v.copy()
        self._value = self.scale * value
        self._ds = ds
        return self._value

    def grad(self, v) -> np.ndarray:
        """``X^T ds``, the gradient at ``v`` (recomputed if ``v`` changed)."""
        v = self._at(v, "v")
        return self.scale * np.asarray(self.X.T @ self._ds).ravel()
