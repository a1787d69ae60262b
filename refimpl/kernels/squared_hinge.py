"""Explicit-pairs kernels of the pairwise squared hinge loss.

They work on document scores ``z = X w`` only, so the cost per call is O(p)
on top of the two mat-vecs ``X w`` and ``X^T u`` that the caller does with
BLAS; the ``p x n`` pair matrix is never formed.

The active set is kept LIBLINEAR-style (``l2r_l2_svc_fun::grad`` builds the
index list ``I`` that ``Hv`` then loops over): :func:`value_dz` compacts the
support-vector pairs into preallocated index arrays, and :func:`hess_dz`
visits only those, O(|SV(w)|) per product instead of O(p).
"""

from numba import njit


@njit(cache=True)
def value_dz(z, pi, pj, margin, dz, act_i, act_j):
    """Loss value, its gradient with respect to the scores, and the active set.

    Returns ``(sum_t max(0, margin - (z[pi[t]] - z[pj[t]]))**2, n_act)``;
    writes ``dz = d loss / d z`` and the ``n_act`` pairs with a positive
    residual (the support-vector pairs SV(w) of Lee & Lin 2014, eq. 14), in
    their input order, to ``act_i[:n_act]``, ``act_j[:n_act]`` (arrays of
    length ``len(pi)``, any integer dtype that holds the indices).

    Correct for pairs in any order; fastest when pairs sharing ``i`` are
    consecutive (as :func:`refimpl.pairs.preference_pairs` lists them), since
    ``dz[i]`` is then accumulated in a register instead of through memory.
    The residual and the compaction are branch-free (every pair is written
    at position ``n_act``, which advances only for active pairs), which
    avoids mispredictions when about half the pairs are active.
    """
    dz[:] = 0.0
    total = 0.0
    cur = -1
    acc = 0.0
    zi = 0.0
    m = 0
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
        act_i[m] = i
        act_j[m] = j
        m += on
    if cur >= 0:
        dz[cur] += acc
    return total, m


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
def hess_dz(t_scores, act_i, act_j, n_act, out):
    """Generalised-Hessian product in score space.

    With ``t = X s`` and the active pairs ``act_i[:n_act], act_j[:n_act]``
    of the last :func:`value_dz`, writes
    ``out = 2 sum_{active} (e_i - e_j)(t_i - t_j)`` so that ``X^T out`` is
    the Hessian-vector product of Lee & Lin 2014, eq. 11.  Same register
    accumulation of ``out[i]`` as :func:`value_dz` (compaction keeps pairs
    sharing ``i`` consecutive).
    """
    out[:] = 0.0
    cur = -1
    acc = 0.0
    ti = 0.0
    for k in range(n_act):
        i = act_i[k]
        if i != cur:
            if cur >= 0:
                out[cur] += acc
            cur = i
            acc = 0.0
            ti = t_scores[i]
        j = act_j[k]
        d = 2.0 * (ti - t_scores[j])
        acc += d
        out[j] -= d
    if cur >= 0:
        out[cur] += acc
