r"""Non-smooth penalties for composite solvers: ``value(w)`` and ``prox(v, step)``.

A composite problem ``min_w f(w) + g(w)`` with ``f`` smooth and ``g`` one of
these penalties is solved by proximal-gradient methods
(:func:`refimpl.solvers.apg`), which touch ``g`` only through

.. math::

    \operatorname{prox}_{t g}(v) = \arg\min_w \tfrac12 \|w - v\|_2^2 + t\, g(w)

(``prox(v, step=t)``) and its value ``g(w)``.  All three are separable, so
the proximal map acts coordinate-wise in closed form:

* :class:`L1`: ``g(w) = alpha ||w||_1``, soft-thresholding (Laporte et al.
  2014, eq. 11) -- the penalty of RankSVM-l1, their eq. 7;
* :class:`WeightedL1`: ``g(w) = sum_j beta_j |w_j|``, soft-thresholding
  with per-coordinate thresholds (Laporte et al. eq. 12) -- the convex
  subproblem of every DC / reweighted-l1 step (their eq. 13);
* :class:`NonNegWeightedL1`: ``g(w) = sum_i c_i w_i + indicator(w >= 0)``,
  whose prox ``max(0, v - t c)`` is the closed-form projection step of
  FSMRank (Lai et al. 2013, eq. 3 and the formula after Algorithm 1) with
  ``c_i = lambda_2 / s_i``;
* :class:`Zero`: ``g(w) = 0``, whose prox is the identity -- proximal
  gradient on a smooth objective alone (an l2 term then sits in the smooth
  part, :class:`refimpl.losses.L2Regularized`), which is plain accelerated
  gradient descent.

Derived in: book/04_fsmrank_nesterov.md#fsmrank
"""

from __future__ import annotations

import math

import numpy as np

from .exceptions import DataError

__all__ = ["L1", "NonNegWeightedL1", "WeightedL1", "Zero"]


def _check_step(step):
    try:
        step = float(step)
    except (TypeError, ValueError):
        raise DataError(f"step must be a real number, got {step!r}") from None
    if not (step >= 0 and math.isfinite(step)):
        raise DataError(f"step must be finite and >= 0, got {step!r}")
    return step


def _check_weights(weights, name="weights"):
    try:
        c = np.array(weights, dtype=np.float64, copy=True)
    except (TypeError, ValueError):
        raise DataError(f"{name} must be an array of real numbers, got {weights!r}") from None
    if c.ndim != 1 or c.size == 0:
        raise DataError(f"{name} must be a non-empty 1-d array, got shape {c.shape}")
    if not np.all(np.isfinite(c)):
        bad = int(np.flatnonzero(~np.isfinite(c))[0])
        raise DataError(f"{name} must be finite; {name}[{bad}] = {c[bad]!r}")
    if np.any(c < 0):
        bad = int(np.flatnonzero(c < 0)[0])
        raise DataError(f"{name} must be >= 0; {name}[{bad}] = {c[bad]!r}")
    c.setflags(write=False)
    return c


def _as_vector(v, n, name):
    v = np.asarray(v, dtype=np.float64)
    if v.ndim != 1 or (n is not None and v.shape != (n,)):
        want = f"({n},)" if n is not None else "(n,)"
        raise DataError(f"{name} must have shape {want}, got {v.shape}")
    return v


class L1:
    r"""The lasso penalty ``g(w) = alpha ||w||_1``.

    Its proximal map is soft-thresholding (Laporte et al. 2014, eq. 11),

    .. math::

        \operatorname{prox}_{t g}(v)_j = \operatorname{sign}(v_j)
        \max(|v_j| - t\,\alpha, 0),

    and with ``alpha = 1`` it is the regulariser of RankSVM-l1 (their eq. 7).

    Derived in: book/02_convex_toolkit.md#tk-prox

    Parameters
    ----------
    alpha : float, default 1.0
        Penalty weight, finite and >= 0.
    """

    def __init__(self, alpha=1.0):
        try:
            a = float(alpha)
        except (TypeError, ValueError):
            raise DataError(f"alpha must be a real number, got {alpha!r}") from None
        if not (a >= 0 and math.isfinite(a)):
            raise DataError(f"alpha must be finite and >= 0, got {alpha!r}")
        self.alpha = a

    def value(self, w) -> float:
        """``alpha * sum_j |w_j|``."""
        w = _as_vector(w, None, "w")
        return self.alpha * float(np.abs(w).sum())

    def prox(self, v, step) -> np.ndarray:
        """Soft-thresholding of ``v`` at ``step * alpha`` (eq. 11)."""
        v = _as_vector(v, None, "v")
        t = _check_step(step) * self.alpha
        return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)

    def __repr__(self):
        return f"L1(alpha={self.alpha!r})"


class Zero:
    r"""The zero penalty ``g(w) = 0``: ``prox`` is the identity.

    With it, :func:`refimpl.solvers.apg` minimises its smooth part alone
    (FISTA without a non-smooth term, Beck & Teboulle 2009 with ``g = 0``):
    the first-order path for a smooth objective such as
    :class:`refimpl.losses.L2Regularized` of a loss without a Hessian.

    Derived in: book/02_convex_toolkit.md#tk-prox-grad
    """

    def value(self, w) -> float:
        """``0`` (for a 1-d ``w``)."""
        _as_vector(w, None, "w")
        return 0.0

    def prox(self, v, step) -> np.ndarray:
        """``v`` itself (a copy; ``step`` is checked, not used)."""
        v = _as_vector(v, None, "v")
        _check_step(step)
        return v.copy()

    def __repr__(self):
        return "Zero()"


class _Weighted:
    """What the weighted penalties share: checked read-only weights, one per feature."""

    def __init__(self, weights):
        self.weights = _check_weights(weights)

    @property
    def n_features(self) -> int:
        return int(self.weights.size)

    def __repr__(self):
        return f"{type(self).__name__}(weights=<{self.n_features} values>)"


class WeightedL1(_Weighted):
    r"""The weighted lasso ``g(w) = sum_j beta_j |w_j|`` (Laporte et al. eq. 12).

    Proximal map: coordinate-wise soft-thresholding at ``t beta_j``,

    .. math::

        \operatorname{prox}_{t g}(v)_j = \operatorname{sign}(v_j)
        \max(|v_j| - t\,\beta_j, 0).

    This is the convex subproblem of the reweighted-l1 (DC) scheme,
    Laporte et al. eq. 13, with ``beta_j = g'(|w_j^k|)``; a weight of 0
    leaves its coordinate unpenalised.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    weights : array-like of shape (n_features,)
        The ``beta_j``, finite and >= 0.

    Attributes
    ----------
    weights : ndarray (read-only)
    n_features : int
    """

    def value(self, w) -> float:
        """``sum_j beta_j |w_j|``."""
        w = _as_vector(w, self.n_features, "w")
        return float(self.weights @ np.abs(w))

    def prox(self, v, step) -> np.ndarray:
        """Soft-thresholding of ``v_j`` at ``step * beta_j`` (eq. 12)."""
        v = _as_vector(v, self.n_features, "v")
        t = _check_step(step) * self.weights
        return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)


class NonNegWeightedL1(_Weighted):
    r"""A linear penalty on the non-negative orthant: ``sum_i c_i w_i + I(w >= 0)``.

    FSMRank's non-smooth part ``r(w) = lambda_2 sum_i w_i / s_i`` on
    ``w in R^{2d}_+`` (Lai et al. 2013, eq. 2) with ``c = lambda_2 / s``.
    Its proximal map is the closed-form solution of the projection step
    eq. 3,

    .. math::

        \operatorname{prox}_{t r}(v)_i = \max(0,\, v_i - t\, c_i),

    which with ``v = z - g/L`` and ``t = 1/L`` is the paper's
    ``w_i = (L z_i - g_i - lambda_2/s_i)/L`` if positive, else 0.
    On ``w >= 0`` the penalty equals the weighted l1 norm, so it is a
    weighted lasso restricted to the orthant.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    weights : array-like of shape (n_features,)
        The ``c_i``, finite and >= 0.

    Attributes
    ----------
    weights : ndarray (read-only)
    n_features : int
    """

    def value(self, w) -> float:
        """``sum_i c_i w_i`` if every ``w_i >= 0``, else ``inf``."""
        w = _as_vector(w, self.n_features, "w")
        if np.any(w < 0):
            return math.inf
        return float(self.weights @ w)

    def prox(self, v, step) -> np.ndarray:
        """``max(0, v - step * c)`` (FSMRank's projection step)."""
        v = _as_vector(v, self.n_features, "v")
        return np.maximum(v - _check_step(step) * self.weights, 0.0)
