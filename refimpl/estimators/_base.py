"""What every estimator of :mod:`refimpl.estimators` shares.

The ``predict`` / ``score`` of the linear rankers, the empty-model warning
and the threshold of the regularisation at which every weight vanishes.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import validate_X
from ..exceptions import DataError, EmptyModelWarning
from ..metrics import mean_ndcg
from ..solvers._finite import check_predictions


class _LinearRanker(BaseEstimator):
    """Shared ``predict`` / ``score`` of the linear rankers.

    ``predict`` checks ``X`` as scikit-learn does (``refimpl._validation.validate_X``):
    the number of columns, and for a data frame fitted with string column
    names, the names and their order (``feature_names_in_``).
    """

    def predict(self, X):
        """Ranking scores ``X @ coef_`` (sort each query by decreasing score)."""
        check_is_fitted(self, "coef_")
        X = validate_X(self, X, reset=False)
        return check_predictions(np.asarray(X @ self.coef_).ravel(),
                                 type(self).__name__, X, self.coef_)

    def score(self, X, y, qid=None):
        """Mean NDCG (LETOR 4.0 convention) of the predicted ranking."""
        return mean_ndcg(y, self.predict(X), qid)


def _grad_at_zero(loss):
    """``grad L(0)`` of a smooth loss (``fun`` first: the losses cache their state)."""
    z = np.zeros(loss.n_features)
    loss.fun(z)
    return np.asarray(loss.grad(z), dtype=np.float64)


def _l1_null_C(g, beta=None):
    """The largest ``C`` for which ``w = 0`` minimises ``sum_j beta_j |w_j| + C L(w)``.

    ``0`` is optimal iff ``0`` is in ``C grad L(0) + [-beta, beta]``, i.e.
    ``C |g_j| <= beta_j`` for every ``j``: ``C <= min_j beta_j / |g_j|`` (over
    ``g_j != 0``; ``inf`` when ``g = 0``).  The analogue of scikit-learn's
    ``alpha_max = ||X^T y||_inf / n`` for a loss weight instead of a penalty
    weight.
    """
    g = np.abs(np.asarray(g, dtype=np.float64))
    beta = np.ones_like(g) if beta is None else np.asarray(beta, dtype=np.float64)
    nz = g > 0
    if not np.any(nz):
        return math.inf
    return float(np.min(beta[nz] / g[nz]))


def _warn_empty(estimator, message, *, parameter=None, value=None, threshold=None,
                stacklevel=3):
    """Emit :class:`~refimpl.exceptions.EmptyModelWarning` when ``coef_`` is all zero.

    ``stacklevel`` 3 points at the caller of a ``fit`` that calls this directly.
    """
    if np.any(estimator.coef_):
        return
    warnings.warn(
        EmptyModelWarning(
            f"{type(estimator).__name__} has no non-zero weight (a constant "
            f"ranker, n_iter_ = {estimator.n_iter_}): {message}",
            parameter=parameter, value=value, threshold=threshold),
        stacklevel=stacklevel)


def _check_max_iter(max_iter, name="max_iter"):
    if not isinstance(max_iter, (int, np.integer)) or isinstance(max_iter, bool) \
            or max_iter < 1:
        raise DataError(f"{name} must be a positive integer, got {max_iter!r}")



def _check_int(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or value < minimum:
        raise DataError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)
