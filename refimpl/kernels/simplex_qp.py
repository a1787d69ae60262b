"""The cutting-plane dual: a quadratic over a scaled simplex, by SMO.

``min_a  a^T G a / 2 - b^T a  s.t.  a >= 0, sum(a) = C`` with ``G`` a
positive semidefinite Gram matrix of the cutting planes (eq. (7.14) of the
book).  Sequential minimal optimisation: each step moves mass between two
coordinates, from ``j`` (``a_j > 0``, largest gradient by the second-order
rule of Fan, Chen & Lin 2005) to ``i`` (smallest gradient), with the exact
minimiser of the quadratic on that segment.  At any feasible ``a`` the
optimality gap is at most ``sum_k a_k (g_k - min g) <= C viol`` with
``viol = max_{a_j > 0} g_j - min_k g_k``, the quantity the loop drives
below ``tol``.

Derived in: book/07_ranksvm_ostree.md#ranksvm-hinge
"""

import numpy as np
from numba import njit


@njit(cache=True)
def simplex_qp(G, b, alpha, g, m, tol, max_steps):
    """Improve the feasible ``alpha[:m]`` in place; returns ``(steps, viol)``.

    ``G[:m, :m]``, ``b[:m]``: the problem; ``g[:m]`` receives the gradient
    ``G alpha - b`` (recomputed from scratch first and every 500 steps, so
    that rounding does not accumulate).  Stops when ``viol <= tol`` or after
    ``max_steps`` steps.
    """
    for k in range(m):
        s = -b[k]
        for l in range(m):
            s += G[k, l] * alpha[l]
        g[k] = s
    steps = 0
    viol = np.inf
    while True:
        i = 0
        for k in range(1, m):
            if g[k] < g[i]:
                i = k
        gmax = -np.inf
        for k in range(m):
            if alpha[k] > 0.0 and g[k] > gmax:
                gmax = g[k]
        viol = gmax - g[i]
        if viol <= tol or steps >= max_steps:
            break
        # second-order choice of j among the coordinates that can decrease
        j = -1
        best = 0.0
        for k in range(m):
            if alpha[k] > 0.0 and g[k] > g[i]:
                d = g[k] - g[i]
                eta = G[i, i] + G[k, k] - 2.0 * G[i, k]
                if eta <= 1e-300:
                    score = np.inf
                else:
                    score = d * d / eta
                if j < 0 or score > best:
                    j = k
                    best = score
        if j < 0:
            break
        d = g[j] - g[i]
        eta = G[i, i] + G[j, j] - 2.0 * G[i, j]
        t = alpha[j]
        if eta > 1e-300 and d / eta < t:
            t = d / eta
        if t >= alpha[j]:
            t = alpha[j]
            alpha[i] += t
            alpha[j] = 0.0
        else:
            alpha[i] += t
            alpha[j] -= t
        for k in range(m):
            g[k] += t * (G[k, i] - G[k, j])
        steps += 1
        if steps % 500 == 0:
            for k in range(m):
                s = -b[k]
                for l in range(m):
                    s += G[k, l] * alpha[l]
                g[k] = s
    return steps, viol
