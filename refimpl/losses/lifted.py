r"""FSMRank's lifted objective (Lai, Pan, Tang & Yu 2013, eq. 2).

The loss of ``\hat w`` seen as a function of ``w = [w^+; w^-]`` on the
doubled features ``[X, -X]`` (:class:`LiftedLoss`) and the smooth part
``psi(w) = (lambda_1/2) w^T A w + f(w)`` with Theorem 1's Lipschitz bound
(:class:`FSMRankSmooth`); the problem they belong to is set out in
:mod:`refimpl.fsmrank`.

Derived in: book/04_fsmrank_nesterov.md#fsmrank
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..exceptions import DataError
from ..pairs import pair_counts
from ._base import CachedObjective


def _check_symmetric(A, name="A"):
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise DataError(f"{name} must be a square matrix, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise DataError(f"{name} contains NaN or infinite values")
    scale = max(1.0, float(np.abs(A).max(initial=0.0)))
    if not np.allclose(A, A.T, rtol=0, atol=1e-12 * scale):
        raise DataError(f"{name} must be symmetric")
    return 0.5 * (A + A.T)



class LiftedLoss(CachedObjective):
    r"""A loss of ``\hat w`` seen as a function of ``w = [w^+; w^-]``.

    ``L2(w) = L(w^+ - w^-)``, the loss on the doubled features ``[X, -X]``
    (Lai et al., eq. 2) without forming them: ``grad L2 = [g, -g]`` and
    ``H2 s = [h, -h]`` with ``g = grad L(\hat w)``, ``h = H (s^+ - s^-)``.
    Equal to ``PairwiseSquaredHinge`` on ``np.hstack([X, -X])`` at half the
    cost.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    loss : object
        A smooth loss of ``d`` variables (``fun``, ``grad``, ``hess_vec``,
        ``n_features``), e.g. :class:`refimpl.losses.PairwiseSquaredHinge`.

    Notes
    -----
    Cached state is the wrapped loss's, at ``\hat w`` of the last
    :meth:`fun`.
    """

    def __init__(self, loss):
        self.base = loss
        self.d = int(loss.n_features)

    @property
    def n_features(self) -> int:
        return 2 * self.d

    def collapse(self, w):
        """``\\hat w = w^+ - w^-`` for ``w`` of length ``2d``."""
        w = self._check_w(w)
        return w[: self.d] - w[self.d:]

    def fun(self, w) -> float:
        """``L(w^+ - w^-)``."""
        return float(self.base.fun(self.collapse(w)))

    def grad(self, w) -> np.ndarray:
        """``[g, -g]``, ``g = grad L(w^+ - w^-)``."""
        g = np.asarray(self.base.grad(self.collapse(w)), dtype=np.float64)
        return np.concatenate([g, -g])

    def hess_vec(self, s) -> np.ndarray:
        """``[h, -h]``, ``h = H (s^+ - s^-)`` at the last :meth:`fun`."""
        h = np.asarray(self.base.hess_vec(self.collapse(s)), dtype=np.float64)
        return np.concatenate([h, -h])

    def scores(self, w) -> np.ndarray:
        """Document scores ``X (w^+ - w^-)``."""
        return self.base.scores(self.collapse(w))


def _sum_pair_inf_norm_sq(loss):
    r"""``sum_P ||x_i - x_j||_inf^2`` for a pairwise loss (or an upper bound).

    Exact with explicit pairs; with the pair-free tree backend, the bound
    ``sum_q p_q r_q^2`` with ``r_q`` the largest feature range inside
    query ``q``.
    """
    X = loss.X
    pairs = getattr(loss, "pairs", None)
    if pairs is not None:
        total = 0.0
        chunk = 1 << 16
        for a in range(0, len(pairs.i), chunk):
            D = X[pairs.i[a:a + chunk]] - X[pairs.j[a:a + chunk]]
            if sp.issparse(D):
                m = np.asarray(abs(D).max(axis=1).todense()).ravel()
            else:
                m = np.abs(D).max(axis=1, initial=0.0)
            total += float(m @ m)
        return total
    groups = loss.groups
    which = getattr(loss, "which", "all")
    problem = getattr(loss, "problem", None)
    # the loss's validated problem: its labels are not checked again
    counts = (pair_counts(problem, which=which) if problem is not None
              else pair_counts(loss.y, which=which, groups=groups))
    total = 0.0
    for q in range(groups.n_queries):
        if counts[q] == 0:
            continue
        rows = X[groups.order[groups.indptr[q]:groups.indptr[q + 1]]]
        if sp.issparse(rows):
            rows = rows.toarray()
        r = float(np.ptp(rows, axis=0).max(initial=0.0))
        total += counts[q] * r * r
    return total


class FSMRankSmooth(CachedObjective):
    r"""The smooth part of FSMRank's eq. 2: ``psi(w) = (lambda_1/2) w^T A w + f(w)``.

    Gradient ``lambda_1 A w + grad f(w)``, Hessian ``lambda_1 A + H_f``.
    With ``f`` the squared hinge averaged over pairs on ``2d`` features,
    Theorem 1 bounds the Lipschitz constant of ``grad psi`` by

    .. math::

        L_0 = \frac{4d}{p} \sum_{(i,j) \in P} \|x_i - x_j\|_\infty^2
              + 2 d \lambda_1 \le (4 + 2\lambda_1) d

    for features in [0, 1] (``n = 2d`` variables).  In general
    :meth:`lipschitz_bound` returns ``2 s n sum_P ||x_i - x_j||_inf^2 +
    lambda_1 n max|A_ij|`` with ``s`` the loss scale (``1/p`` for the mean),
    from ``u^T k k^T u <= ||k||_inf^2 ||u||_1^2 <= n ||k||_inf^2 ||u||^2``
    (eq. I.2) and ``u^T A u <= max|A_ij| ||u||_1^2`` (eq. I.3, which needs
    ``|A_ij| <= 1``, true of ``[[A, -A], [-A, A]]`` too).

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    loss2 : object
        Smooth loss of ``n = 2d`` variables: :class:`LiftedLoss` of a
        ``PairwiseSquaredHinge(..., normalize=True)``, or that loss built on
        ``np.hstack([X, -X])``.
    A2 : array-like of shape (n, n)
        Symmetric similarity matrix (:func:`refimpl.fsmrank.lift_similarity`).
    lambda1 : float
        ``>= 0``.

    Notes
    -----
    Cached state: :meth:`fun` stores ``w`` and ``A w`` and lets the loss
    cache its own; :meth:`grad` at the same ``w`` reuses both.
    """

    def __init__(self, loss2, A2, lambda1):
        n = int(loss2.n_features)
        A2 = _check_symmetric(A2, "A2")
        if A2.shape != (n, n):
            raise DataError(f"A2 must have shape ({n}, {n}), got {A2.shape}")
        try:
            lam = float(lambda1)
        except (TypeError, ValueError):
            raise DataError(f"lambda1 must be a real number, got {lambda1!r}") from None
        if not (lam >= 0 and math.isfinite(lam)):
            raise DataError(f"lambda1 must be finite and >= 0, got {lambda1!r}")
        self.loss = loss2
        self.A = A2
        self.lambda1 = lam
        self._w = None
        self._Aw = None

    @property
    def n_features(self) -> int:
        return int(self.loss.n_features)

    def fun(self, w) -> float:
        """``(lambda_1/2) w^T A w + f(w)``; caches ``A w`` and the loss state."""
        w = self._check_w(w)
        Aw = self.A @ w
        value = 0.5 * self.lambda1 * float(w @ Aw) + float(self.loss.fun(w))
        self._w, self._Aw = w.copy(), Aw
        return value

    def grad(self, w) -> np.ndarray:
        """``lambda_1 A w + grad f(w)``."""
        w = self._at(w)
        return self.lambda1 * self._Aw + np.asarray(self.loss.grad(w), dtype=np.float64)

    def hess_vec(self, s) -> np.ndarray:
        """``lambda_1 A s + H_f s`` (``H_f`` at the last :meth:`fun`)."""
        s = self._direction(s)
        return self.lambda1 * (self.A @ s) + np.asarray(self.loss.hess_vec(s))

    def lipschitz_bound(self) -> float:
        """Theorem 1's bound on the Lipschitz constant of ``grad psi`` (see above)."""
        base = getattr(self.loss, "base", self.loss)
        n = self.n_features
        S = _sum_pair_inf_norm_sq(base)
        scale = float(getattr(base, "scale", 1.0))
        return 2.0 * scale * n * S + self.lambda1 * n * float(np.abs(self.A).max(initial=0.0))
