r"""The Stiefel manifold ``{T : T^T T = I}``: retractions, Riemannian gradient, violation.

The tools LifeRank's ``"stiefel"`` treatment of the orthonormality
constraint (eq. 4 of Pandey et al. 2018) needs; see
:func:`refimpl.solvers.liferank_solve`.

Derived in: book/06_liferank_bdmm.md#liferank
"""

from __future__ import annotations

import numpy as np

from ..exceptions import DataError

#: Retractions onto the Stiefel manifold.
RETRACTIONS = ("polar", "qr")


def orthonormality_error(T) -> float:
    """``||T^T T - I||_F``, the constraint violation of eq. 4.

    Derived in: book/06_liferank_bdmm.md#liferank
    """
    T = np.asarray(T, dtype=np.float64)
    if T.ndim != 2:
        raise DataError(f"T must be a matrix, got shape {T.shape}")
    return float(np.linalg.norm(T.T @ T - np.eye(T.shape[1])))


def stiefel_retraction(T, method="polar") -> np.ndarray:
    r"""Map ``T`` (full column rank) to a matrix with orthonormal columns.

    ``"polar"``: ``U V^T`` from the thin SVD ``T = U S V^T``, the nearest
    orthonormal matrix in the Frobenius norm (``T (T^T T)^{-1/2}``).
    ``"qr"``: ``Q`` of the thin QR factorisation with the signs fixed so that
    ``diag(R) > 0`` (then ``Q`` is unique and continuous in ``T``).  Both are
    retractions: ``R(T + t xi) = T + t xi + O(t^2)`` for orthonormal ``T``
    and tangent ``xi``.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    T : array-like of shape (n, k), ``k <= n``
    method : {"polar", "qr"}

    Returns
    -------
    ndarray of shape (n, k)
        ``Q`` with ``Q^T Q = I`` to rounding.
    """
    T = np.asarray(T, dtype=np.float64)
    if T.ndim != 2 or T.shape[1] > T.shape[0]:
        raise DataError(f"T must be an n x k matrix with k <= n, got shape {T.shape}")
    if not np.all(np.isfinite(T)):
        raise DataError("T contains NaN or infinite values")
    if method == "polar":
        U, _, Vt = np.linalg.svd(T, full_matrices=False)
        return U @ Vt
    if method == "qr":
        Q, R = np.linalg.qr(T)
        sign = np.where(np.diag(R) < 0, -1.0, 1.0)
        return Q * sign
    raise DataError(f"method must be one of {RETRACTIONS}, got {method!r}")


def stiefel_gradient(T, G) -> np.ndarray:
    r"""Riemannian gradient on the Stiefel manifold: ``G - T sym(T^T G)``.

    The projection of the Euclidean gradient ``G`` onto the tangent space
    ``{xi : T^T xi + xi^T T = 0}`` at an orthonormal ``T`` (embedded
    metric); it vanishes exactly at the KKT points of ``min F(T)`` subject
    to ``T^T T = I``.

    Derived in: book/06_liferank_bdmm.md#liferank
    """
    T = np.asarray(T, dtype=np.float64)
    G = np.asarray(G, dtype=np.float64)
    S = T.T @ G
    return G - T @ (0.5 * (S + S.T))
