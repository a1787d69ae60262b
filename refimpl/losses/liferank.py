r"""LifeRank's objective: eq. 5 without ``b``, its gradients (eq. 7) and constraints.

LifeRank (Pandey et al. 2018) looks for a transformation ``T`` (``n x k``,
orthonormal columns) and weights ``w`` (``k``) minimising a pairwise logistic
loss of the scores ``X T w`` (their eq. 5).  Its pieces: the loss
(:class:`refimpl.losses.PairwiseLogistic`), this objective, the solvers
(:func:`refimpl.solvers.liferank_solve` with the variants ``"bdmm"``,
``"stiefel"`` and ``"none"``; :func:`refimpl.solvers.stiefel_retraction`),
the feature-quality measures of its section 5.4.2 (in
:mod:`refimpl.features`) and the estimator
:class:`refimpl.estimators.LifeRank`.

Choices where the paper is silent or inconsistent, argued in the chapter:
the loss is a *mean* over the preference pairs ``P = {(i, j): q_i = q_j,
y_i > y_j}`` (each unordered pair once, so eq. 5's sum over ordered pairs
with ``y_ij = +-1`` is ``2p`` times ours, and ``lambda_paper = 2 p
lambda``); ``b`` is dropped (with both orientations of every pair the
objective is even in ``b``, so ``b* = 0`` and its gradient vanishes at
``b = 0``; with one orientation it would be unbounded); the multipliers
start at 0 and ascend (eq. 8) after the primal step.

Derived in: book/06_liferank_bdmm.md#liferank
"""

from __future__ import annotations

import numpy as np

from .._validation import check_nonnegative
from ..exceptions import DataError
from ._base import CachedObjective


class LifeRankObjective(CachedObjective):
    r"""LifeRank's eq. 5 without ``b`` and the pieces of its Lagrangian (eq. 6).

    With ``v = T w``,

    .. math::

        F(T, w) = \ell(T w) + \frac{\lambda}{2}\|w\|^2,

        \nabla_w F = T^T \nabla\ell(v) + \lambda w, \qquad
        \nabla_T F = \nabla\ell(v)\, w^T ,

    the matrix form of eq. 7 (column ``l`` of ``nabla_T F`` is ``w_l
    nabla ell``).  The constraints in the paper's signs are ``c_ij =
    t_i^T t_j`` (``i != j``) and ``c_ii = 1 - t_i^T t_i``, so
    ``||c|| = ||T^T T - I||_F`` and, for multipliers ``A = (alpha_ij)``,
    ``nabla_T sum_ij alpha_ij c_ij = T M`` with ``M = A + A^T`` off the
    diagonal and ``M_ll = -2 alpha_ll`` (the constraint part of eq. 7).

    As a problem for :func:`refimpl.solvers.bdmm` the variables are
    flattened, ``x = [vec(T); w]`` (``T`` row-major), and the multipliers
    are ``vec(A)``.

    Parameters
    ----------
    loss : PairwiseLogistic
        Or any object with ``fun(v)``, ``grad(v)`` and ``n_features``.
    n_components : int
        ``k``, ``1 <= k <= n``.
    lam : float
        ``lambda >= 0`` of the l2 term.

    Notes
    -----
    Cached state: :meth:`fun` stores ``x``, the loss value and ``nabla
    ell(v)``; :meth:`grad` at the same ``x`` reuses them.

    Derived in: book/06_liferank_bdmm.md#liferank
    """

    def __init__(self, loss, n_components, lam):
        n = int(loss.n_features)
        if isinstance(n_components, bool) or not isinstance(
                n_components, (int, np.integer)) or not 1 <= n_components <= n:
            raise DataError(
                f"n_components must be an integer in [1, {n}] (orthonormal "
                f"columns need k <= n_features), got {n_components!r}"
            )
        self.loss = loss
        self.n = n
        self.k = int(n_components)
        self.lam = check_nonnegative(lam, "lam")
        self._w = None
        self._G = None
        self.last_loss = None

    @property
    def n_features(self) -> int:
        """Length of the flat variable ``x = [vec(T); w]``."""
        return self.n * self.k + self.k

    @property
    def n_constraints(self) -> int:
        return self.k * self.k

    def pack(self, T, w) -> np.ndarray:
        """``x = [vec(T); w]``."""
        T = np.asarray(T, dtype=np.float64)
        w = np.asarray(w, dtype=np.float64)
        if T.shape != (self.n, self.k) or w.shape != (self.k,):
            raise DataError(
                f"T must have shape ({self.n}, {self.k}) and w ({self.k},), got "
                f"{T.shape} and {w.shape}"
            )
        return np.concatenate([T.ravel(), w])

    def unpack(self, x):
        """``(T, w)`` from ``x`` (views)."""
        x = self._check_w(x, "x")
        return x[: self.n * self.k].reshape(self.n, self.k), x[self.n * self.k:]

    # -- value and gradients ------------------------------------------------

    def value_and_grads(self, T, w):
        """``(F, nabla_T F, nabla_w F)`` at ``(T, w)`` (eq. 7 without ``b``)."""
        T = np.asarray(T, dtype=np.float64)
        w = np.asarray(w, dtype=np.float64)
        v = T @ w
        loss = float(self.loss.fun(v))
        G = np.asarray(self.loss.grad(v), dtype=np.float64)
        self.last_loss = loss
        F = loss + 0.5 * self.lam * float(w @ w)
        return F, np.outer(G, w), T.T @ G + self.lam * w

    def fun(self, x) -> float:
        """``F(T, w)``; caches the loss gradient at ``v = T w``."""
        T, w = self.unpack(x)
        v = T @ w
        loss = float(self.loss.fun(v))
        self._G = np.asarray(self.loss.grad(v), dtype=np.float64)
        self._w = np.array(x, dtype=np.float64, copy=True)
        self.last_loss = loss
        return loss + 0.5 * self.lam * float(w @ w)

    def grad(self, x) -> np.ndarray:
        """``[vec(nabla_T F); nabla_w F]``."""
        x = self._at(x, "x")
        T, w = self.unpack(x)
        return np.concatenate([np.outer(self._G, w).ravel(),
                               T.T @ self._G + self.lam * w])

    # -- constraints ----------------------------------------------------------

    def constraint(self, x) -> np.ndarray:
        """``vec(c)``: ``t_i^T t_j`` off the diagonal, ``1 - t_i^T t_i`` on it."""
        T, _ = self.unpack(x)
        C = T.T @ T
        d = np.diag_indices(self.k)
        C[d] = 1.0 - C[d]
        return C.ravel()

    def multiplier_matrix_grad(self, T, A) -> np.ndarray:
        """``nabla_T sum_ij alpha_ij c_ij = T M`` (the constraint part of eq. 7)."""
        A = np.asarray(A, dtype=np.float64).reshape(self.k, self.k)
        M = A + A.T
        d = np.diag_indices(self.k)
        M[d] = -2.0 * np.diag(A)
        return np.asarray(T) @ M

    def constraint_vjp(self, x, u) -> np.ndarray:
        """``J_c(x)^T u``: ``[vec(T M(u)); 0]``."""
        T, _ = self.unpack(x)
        return np.concatenate([self.multiplier_matrix_grad(T, u).ravel(),
                               np.zeros(self.k)])

    def lagrangian(self, T, w, A) -> float:
        """Eq. 6 without ``b``.

        ``F + sum_{i != j} alpha_ij t_i^T t_j + sum_i alpha_ii (1 - t_i^T t_i)``.
        """
        x = self.pack(T, w)
        A = np.asarray(A, dtype=np.float64).ravel()
        return self.fun(x) + float(A @ self.constraint(x))
