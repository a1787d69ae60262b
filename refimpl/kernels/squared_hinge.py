"""Explicit-pairs kernels of the pairwise squared hinge loss.

They work on document scores ``z = X w`` only, so the cost per call is O(p)
on top of the two mat-vecs ``X w`` and ``X^T u`` that the caller does with
BLAS; the ``p x n`` pair matrix is never formed.
"""

from numba import njit


@njit(cache=True)
def value_dz(z, pi, pj, margin, dz, active):
    """Loss value and its gradient with respect to the scores.

    Returns ``sum_t max(0, margin - (z[pi[t]] - z[pj[t]]))**2``; writes
    ``dz = d loss / d z`` and ``active[t] = 1`` for the pairs with a positive
    residual (the support-vector pairs SV(w) of Lee & Lin 2014, eq. 14).

    Correct for pairs in any order; fastest when pairs sharing ``i`` are
    consecutive (as :func:`refimpl.pairs.preference_pairs` lists them), since
    ``dz[i]`` is then accumulated in a register instead of through memory,
    and the branch-free residual avoids mispredictions when about half the
    pairs are active.
    """
    dz[:] = 0.0
    total = 0.0
    cur = -1
    acc = 0.0
    zi = 0.0
    for t in range(len(pi)):
        i = pi[t]
        if i != cur:
            if cur >= 0:
                dz[cur] += acc
            cur = i
            acc = 0.0
            zi = z[i]
        j = pj[t]
        r = margin - (zi - z[j])
        on = r > 0.0
        r = r if on else 0.0
        total += r * r
        acc -= 2.0 * r
        dz[j] += 2.0 * r
        active[t] = on
    if cur >= 0:
        dz[cur] += acc
    return total


@njit(cache=True)
def value_only(z, pi, pj, margin):
    """Loss value alone (line searches evaluate it many times)."""
    total = 0.0
    for t in range(len(pi)):
        r = margin - (z[pi[t]] - z[pj[t]])
        if r > 0.0:
            total += r * r
    return total


@njit(cache=True)
def hess_dz(t_scores, pi, pj, active, out):
    """Generalised-Hessian product in score space.

    With ``t = X s``, writes ``out = 2 sum_{active} (e_i - e_j)(t_i - t_j)`` so
    that ``X^T out`` is the Hessian-vector product of Lee & Lin 2014, eq. 11.
    Same register accumulation of ``out[i]`` as :func:`value_dz`.
    """
    out[:] = 0.0
    cur = -1
    acc = 0.0
    ti = 0.0
    for k in range(len(pi)):
        i = pi[k]
        if i != cur:
            if cur >= 0:
                out[cur] += acc
            cur = i
            acc = 0.0
            ti = t_scores[i]
        j = pj[k]
        d = 2.0 * (ti - t_scores[j]) if active[k] else 0.0
        acc += d
        out[j] -= d
    if cur >= 0:
        out[cur] += acc
