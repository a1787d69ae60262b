"""The Chapter 7 checkers accept correct answers and name planted mistakes."""

import importlib
import math

import numpy as np
import pytest

from refimpl.exercises import (check_hinge_plane, check_pair_counts,
                               check_radius_update,
                               check_steihaug_cg)

from test_exercises_ch01 import assert_diagnosed

tron_mod = importlib.import_module("refimpl.solvers.tron")


# ---------------------------------------------------------------- counts


def counts(z, y, qid, *, strict=True, swap=False, cross=False, ties=False,
           sign=1.0, extra=0):
    n = len(z)
    lp, lm = np.zeros(n, int), np.zeros(n, int)
    for i in range(n):
        for j in range(n):
            if i == j or (not cross and qid[i] != qid[j]):
                continue
            if not (y[j] >= y[i] if ties else y[j] > y[i]):
                continue
            r = 1.0 - sign * (z[j] - z[i])
            if (r > 0) if strict else (r >= 0):
                lp[i] += 1
                lm[j] += 1
    lp = lp + extra
    return (lm, lp) if swap else (lp, lm)


def counts_sorted(z, y, qid):
    """Per query, sort by score and count with searchsorted per level:
    no pair is ever formed."""
    lp, lm = np.zeros(len(z), int), np.zeros(len(z), int)
    for q in np.unique(qid):
        idx = np.flatnonzero(qid == q)
        for i in idx:
            for lev in np.unique(y[idx]):
                zs = np.sort(z[idx][y[idx] == lev])
                if lev > y[i]:      # j above i, active: z_j < z_i + 1
                    lp[i] += np.searchsorted(zs, z[i] + 1, side="left")
                elif lev < y[i]:    # j below i, active: z_j > z_i - 1
                    lm[i] += len(zs) - np.searchsorted(zs, z[i] - 1,
                                                       side="right")
    return lp, lm


def counts_broadcast(z, y, qid):
    same = qid[:, None] == qid[None, :]
    act = (y[None, :] > y[:, None]) & same & (z[None, :] - z[:, None] < 1)
    return act.sum(axis=1), act.sum(axis=0)


@pytest.mark.parametrize("fn", [counts, counts_sorted, counts_broadcast])
def test_reference_accepted(fn):
    res = check_pair_counts(fn)
    assert res.passed, res.message


def test_refimpl_sv_statistics_accepted():
    from refimpl._validation import group_queries
    from refimpl.sv_stats import sv_statistics

    def fn(z, y, qid):
        g = group_queries(qid)
        lp, lm, _, _ = sv_statistics(z, np.zeros(len(z)), y, g.order,
                                     g.indptr, method="direct")
        return lp, lm
    assert check_pair_counts(fn).passed


@pytest.mark.parametrize("kw, word", [
    (dict(strict=False), "margin"),
    (dict(swap=True), "swapped"),
    (dict(cross=True), "across queries"),
    (dict(ties=True), "equal labels"),
    (dict(sign=-1.0), "sign"),
    (dict(extra=1), "off by one"),
])
def test_pair_count_bugs(kw, word):
    assert_diagnosed(check_pair_counts(lambda z, y, q: counts(z, y, q, **kw)),
                     word)


# ---------------------------------------------------------------- CG


def cg(hv, g, delta, eps_cg, *, bug=None):
    s, r = np.zeros_like(g), -g
    if bug == "sign":
        r = g.copy()
    d, rr = r.copy(), r @ r
    tol = eps_cg * np.sqrt(rr)
    for _ in range(len(g)):
        if np.sqrt(rr) <= tol:
            break
        Hd = hv(d)
        alpha = rr / (d @ Hd)
        nxt = s + alpha * d
        if bug != "no_boundary" and nxt @ nxt > delta ** 2:
            sd, dd, ss = s @ d, d @ d, s @ s
            rad = np.sqrt(sd * sd + dd * (delta ** 2 - ss))
            tau = (-sd - rad) / dd if bug == "neg_root" else (rad - sd) / dd
            if bug == "clip":
                s = delta * nxt / np.linalg.norm(nxt)
                return (s, -g - hv(s), 0)
            if bug == "tau_alpha":
                tau = alpha * delta / np.linalg.norm(nxt)
            s, r = s + tau * d, r - tau * Hd
            return (s, -r if bug == "res_sign" else r, 0)
        s, r = nxt, r - alpha * Hd
        rr, old = r @ r, rr
        d = r + (rr / old) * d
    return (s, -r if bug == "res_sign" else r, 0)


def cg_via_lanczos_free_loop(hv, g, delta, eps_cg):
    """The same CG, written with the quadratic model's own step rule:
    tau from np.roots of ||s + tau d||^2 = Delta^2."""
    s = np.zeros_like(g)
    r = -g.copy()
    d = r.copy()
    for _ in range(len(g)):
        if np.linalg.norm(r) <= eps_cg * np.linalg.norm(g):
            break
        Hd = hv(d)
        alpha = (r @ r) / (d @ Hd)
        if np.linalg.norm(s + alpha * d) > delta:
            tau = max(np.roots([d @ d, 2 * s @ d, s @ s - delta ** 2]).real)
            return s + tau * d, r - tau * Hd
        s = s + alpha * d
        r_new = r - alpha * Hd
        d = r_new + (r_new @ r_new) / (r @ r) * d
        r = r_new
    return s, r


@pytest.mark.parametrize("fn", [cg, cg_via_lanczos_free_loop])
def test_cg_reference_accepted(fn):
    res = check_steihaug_cg(fn)
    assert res.passed, res.message


def test_cg_refimpl_accepted():
    class Q:
        def __init__(self, hv):
            self.hess_vec = hv

    def fn(hv, g, delta, eps_cg):
        s, r, *_ = tron_mod._steihaug_cg(Q(hv), g, delta, eps_cg, len(g))
        return s, r
    assert check_steihaug_cg(fn).passed


@pytest.mark.parametrize("bug, word", [
    ("no_boundary", "leaves the trust region"),
    ("neg_root", "negative root"),
    ("clip", "scaled"),
    ("tau_alpha", "boundary"),
    ("res_sign", "residual"),
    ("sign", "sign"),
])
def test_cg_bugs(bug, word):
    assert_diagnosed(check_steihaug_cg(lambda *a: cg(*a, bug=bug)), word)


# ---------------------------------------------------------------- radius


def radius(delta, snorm, gs, actred, prered, *, bug=None):
    t = tron_mod
    q = -actred + gs if bug == "q_sign" else -actred - gs
    if q <= 0:
        alpha = 1.0 if bug == "q0" else t.sigma3
    elif bug == "no_half":
        alpha = max(t.sigma1, -gs / q)
    else:
        alpha = max(t.sigma1, -0.5 * gs / q)
    s2, s3 = (t.sigma3, t.sigma2) if bug == "swap" else (t.sigma2, t.sigma3)
    lt = (lambda a, b: a <= b) if bug == "le" else (lambda a, b: a < b)
    if lt(actred, t.eta0 * prered):
        return min(max(alpha, t.sigma1) * snorm, s2 * delta)
    if lt(actred, t.eta1 * prered):
        return max(t.sigma1 * delta, min(alpha * snorm, s2 * delta))
    if lt(actred, t.eta2 * prered):
        return max(t.sigma1 * delta, min(alpha * snorm, s3 * delta))
    return max(delta, min(alpha * snorm, s3 * delta))


def radius_by_table(delta, snorm, gs, actred, prered):
    """The four cases as a table of (lower, upper) bounds on alpha ||s||."""
    t = tron_mod
    q = -actred - gs
    alpha = t.sigma3 if q <= 0 else max(t.sigma1, -gs / (2 * q))
    step = alpha * snorm
    rho = actred / prered
    if rho < t.eta0:
        return min(max(alpha, t.sigma1) * snorm, t.sigma2 * delta)
    lo, hi = [(t.sigma1 * delta, t.sigma2 * delta),
              (t.sigma1 * delta, t.sigma3 * delta),
              (delta, t.sigma3 * delta)][(rho >= t.eta1) + (rho >= t.eta2)]
    return float(np.clip(step, lo, hi))


@pytest.mark.parametrize("fn", [radius, radius_by_table])
def test_radius_reference_accepted(fn):
    res = check_radius_update(fn)
    assert res.passed, res.message


def test_radius_reference_replays_tron():
    """The checker's rule reproduces tron()'s radii on a real run."""
    from refimpl import data
    from refimpl.losses import L2Regularized, PairwiseSquaredHinge

    syn = data.make_synthetic_letor(n_queries=8, seed=3)
    obj = L2Regularized(PairwiseSquaredHinge(syn.X, syn.y, syn.qid), 1.0)
    calls = []
    orig = obj.grad

    def grad(w):
        g = orig(w)
        calls.append((w.copy(), g.copy()))
        return g
    obj.grad = grad
    infos = []
    res = tron_mod.tron(obj, tol=1e-8,
                        callback=lambda w, info: infos.append((w, info)))
    deltas = res.history["delta"]
    n_checked = 0
    for k, (w, info) in enumerate(infos):
        if not info["accepted"] or k == 0:
            continue
        w_prev, g_prev = calls[k][0], calls[k][1]
        if not infos[k - 1][1]["accepted"]:
            continue
        s = w - w_prev
        got = radius(deltas[k], np.linalg.norm(s), g_prev @ s,
                     info["actred"], info["prered"])
        assert math.isclose(got, deltas[k + 1], rel_tol=1e-9)
        n_checked += 1
    assert n_checked >= 2


@pytest.mark.parametrize("bug, word", [
    ("swap", "swapped"),
    ("le", "threshold"),
    ("q_sign", "curvature q"),
    ("no_half", "factor 1/2"),
    ("q0", "curvature"),
])
def test_radius_bugs(bug, word):
    assert_diagnosed(check_radius_update(lambda *a: radius(*a, bug=bug)),
                     word)


def test_radius_textbook_rule_named():
    """A fixed factor per case (no quadratic fit) is named as such."""
    t = tron_mod

    def textbook(delta, snorm, gs, actred, prered):
        rho = actred / prered
        if rho < t.eta1:
            return t.sigma1 * delta
        return t.sigma3 * delta if rho > t.eta2 else delta
    res = check_radius_update(textbook)
    assert not res.passed
    assert "fixed multiple of Delta" in res.message, res.message


# ---------------------------------------------------------------- the plane


def plane(X, y, qid, w, *, sign=1.0, scale=True, strict=True, ties=False,
          margin=1.0, n_pairs_only=False):
    z = X @ w
    a, b, with_pairs = np.zeros(X.shape[1]), 0.0, set()
    for i in range(len(z)):
        for j in range(len(z)):
            if qid[i] != qid[j] or i == j:
                continue
            if y[i] > y[j]:
                with_pairs.add(qid[i])
            if not (y[i] >= y[j] if ties else y[i] > y[j]):
                continue
            r = margin - (z[i] - z[j])
            if (r > 0) if strict else (r >= 0):
                a += X[i] - X[j]
                b += 1
    n = max(len(with_pairs), 1) if n_pairs_only else len(np.unique(qid))
    if not scale:
        n = 1
    return sign * a / n, b / n


def plane_from_counts(X, y, qid, w):
    """From l+ and l- (counted by broadcasting), as the exercise asks."""
    z = X @ w
    same = qid[:, None] == qid[None, :]
    act = (y[None, :] > y[:, None]) & same & (z[None, :] - z[:, None] < 1)
    lp, lm = act.sum(axis=1), act.sum(axis=0)
    n = len(np.unique(qid))
    return X.T @ (lm - lp) / n, lm.sum() / n


@pytest.mark.parametrize("fn", [plane, plane_from_counts])
def test_plane_reference_accepted(fn):
    res = check_hinge_plane(fn)
    assert res.passed, res.message


def test_plane_refimpl_accepted():
    from refimpl._validation import ranking_problem
    from refimpl.losses.pairwise_hinge import PairwiseHinge

    def fn(X, y, qid, w):
        loss = PairwiseHinge(ranking_problem(X, y, qid))
        _, c, nv = loss.risk(w)
        n = len(np.unique(qid))
        return loss.direction(c) / n, nv / n
    assert check_hinge_plane(fn).passed


@pytest.mark.parametrize("kw, word", [
    (dict(sign=-1.0), "sign"),
    (dict(scale=False), "1/n"),
    (dict(strict=False), "margin"),
    (dict(ties=True), "equal labels"),
    (dict(margin=0.0), "misordered"),
    (dict(n_pairs_only=True), "wrong n"),
])
def test_plane_bugs(kw, word):
    assert_diagnosed(check_hinge_plane(
        lambda X, y, q, w: plane(X, y, q, w, **kw)), word)
