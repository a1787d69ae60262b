"""Coordinate descent on an l1-regularised quadratic (the proximal Newton model).

Minimises ``q(d) = g^T d + d^T H d / 2 + sum_j beta_j |w_j + d_j|`` over
``d`` for a symmetric ``H`` with a positive diagonal, cyclically, each
coordinate in closed form (a soft-thresholded Newton step), as LIBLINEAR's
newGLMNET does for its inner problem.  Used by
:func:`refimpl.solvers.prox_newton`.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def model_violation(H, g, w, beta, d):
    """``||v||_2`` of the minimum-norm subgradient of ``q`` at ``d``."""
    n = g.size
    total = 0.0
    for j in range(n):
        gj = g[j]
        for i in range(n):
            gj += H[j, i] * d[i]
        u = w[j] + d[j]
        if u > 0:
            v = gj + beta[j]
        elif u < 0:
            v = gj - beta[j]
        else:
            v = abs(gj) - beta[j]
            if v < 0:
                v = 0.0
        total += v * v
    return np.sqrt(total)


@njit(cache=True)
def cd_quadratic_l1(H, g, w, beta, tol, max_sweeps, d):
    """Cyclic coordinate descent on ``q``; writes the direction into ``d``.

    ``d`` is the start (usually zeros) and the result.  Stops when the
    minimum-norm subgradient of ``q`` has norm ``<= tol`` (checked before
    every sweep) or after ``max_sweeps`` sweeps; returns the sweeps done.
    """
    n = g.size
    Hd = np.zeros(n)
    for i in range(n):
        di = d[i]
        if di != 0.0:
            for j in range(n):
                Hd[j] += H[j, i] * di
    sweeps = 0
    while True:
        total = 0.0
        for j in range(n):
            gj = g[j] + Hd[j]
            u = w[j] + d[j]
            if u > 0:
                v = gj + beta[j]
            elif u < 0:
                v = gj - beta[j]
            else:
                v = abs(gj) - beta[j]
                if v < 0:
                    v = 0.0
            total += v * v
        if np.sqrt(total) <= tol or sweeps >= max_sweeps:
            return sweeps
        sweeps += 1
        for j in range(n):
            a = H[j, j]
            u = w[j] + d[j]
            z = u - (g[j] + Hd[j]) / a
            t = beta[j] / a
            if z > t:
                unew = z - t
            elif z < -t:
                unew = z + t
            else:
                unew = 0.0
            delta = unew - u
            if delta != 0.0:
                d[j] += delta
                for i in range(n):
                    Hd[i] += delta * H[i, j]


@njit(cache=True)
def active_laplacian_matmul(z, pi, pj, margin, X, out):
    """``out = Lap_A X`` for the pairs with ``margin - (z_i - z_j) > 0``.

    ``Lap_A = sum_{(i,j) active} (e_i - e_j)(e_i - e_j)^T``; ``X`` dense
    C-contiguous ``(l, n)``, ``out`` zeroed ``(l, n)``.  Returns the number
    of active pairs.  O(|A| n): one pass over the pairs, rows of ``X`` read
    in place.
    """
    n = X.shape[1]
    count = 0
    for k in range(pi.size):
        i = pi[k]
        j = pj[k]
        if margin - (z[i] - z[j]) > 0:
            count += 1
            for c in range(n):
                diff = X[i, c] - X[j, c]
                out[i, c] += diff
                out[j, c] -= diff
    return count
