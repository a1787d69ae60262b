"""Exercise checkers of Chapter 7 (order-statistic trees, TRON).

``check_pair_counts`` compares the student's per-document counts of active
pairs with :func:`refimpl.sv_stats.sv_statistics`; ``check_steihaug_cg``
and ``check_radius_update`` compare one truncated-CG solve and one
trust-region radius update with :func:`refimpl.solvers.tron`'s rules
(``refimpl.solvers.tron._steihaug_cg`` and the constants ``eta0 .. eta2``,
``sigma1 .. sigma3`` of LIBLINEAR's ``tron.cpp``); ``check_hinge_plane``
compares the most violated constraint of SVMrank's 1-slack problem with
``refimpl.losses.pairwise_hinge.PairwiseHinge``'s.

Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
"""

from __future__ import annotations

import importlib
import math

import numpy as np

from .._validation import group_queries
from ..sv_stats import sv_statistics
from ._harness import (CheckResult, Suspects, only_match, record,
                       run_checker)

# the module (``refimpl.solvers.tron`` the attribute is the function)
_tron_mod = importlib.import_module("refimpl.solvers.tron")

__all__ = ["check_pair_counts", "check_steihaug_cg", "check_radius_update",
           "check_hinge_plane"]


def _strategies():
    from hypothesis import strategies as st
    return st


# --------------------------------------------------------------------------
# l_i^+ and l_i^-: the active pairs in which a document is lower / higher
# --------------------------------------------------------------------------


def _counts_ref(z, y, qid):
    g = group_queries(qid)
    lp, lm, _, _ = sv_statistics(z, np.zeros(len(z)), y, g.order, g.indptr)
    return np.asarray(lp, dtype=np.int64), np.asarray(lm, dtype=np.int64)


def _counts_variant(z, y, qid, *, strict=True, same_query=True,
                    label_ties=False, margin_sign=1.0, use_margin=True):
    """Brute-force counts with one rule changed (to name a mistake)."""
    n = len(z)
    lp = np.zeros(n, dtype=np.int64)
    lm = np.zeros(n, dtype=np.int64)
    for i in range(n):
        for j in range(n):
            if i == j or (same_query and qid[i] != qid[j]):
                continue
            higher = y[j] >= y[i] if label_ties else y[j] > y[i]
            if not higher:
                continue
            r = 1.0 - margin_sign * (z[j] - z[i])  # pair (j, i), j above
            active = (r > 0 if strict else r >= 0) if use_margin else True
            if active:
                lp[i] += 1          # i is the lower document of (j, i)
                lm[j] += 1          # j is the higher one
    return lp, lm


def check_pair_counts(fn) -> CheckResult:
    """Check ``fn(z, y, qid) -> (l_plus, l_minus)``, integer arrays.

    ``l_plus[i]`` counts the documents ``j`` of ``i``'s query with
    ``y_j > y_i`` and ``1 - (z_j - z_i) > 0`` (the active pairs ``(j, i)``
    in which ``i`` is the *lower* document); ``l_minus[i]`` the documents
    with ``y_i > y_j`` and ``1 - (z_i - z_j) > 0`` (``i`` is the higher
    one).  Reference: :func:`refimpl.sv_stats.sv_statistics`.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    def diagnose(case):
        z, y, qid = (np.asarray(a) for a in case)
        z = z.astype(float)
        ref_p, ref_m = _counts_ref(z, y, qid)
        record(z=z.copy(), y=y.copy(), qid=qid.copy(),
               expected=(ref_p, ref_m))
        got = fn(z.copy(), y.copy(), qid.copy())
        record(got=got)
        try:
            gp, gm = (np.asarray(a) for a in got)
        except (TypeError, ValueError):
            return ("your function must return two arrays (l_plus, "
                    f"l_minus), got {type(got).__name__}")
        if gp.shape != ref_p.shape or gm.shape != ref_m.shape:
            return (f"wrong shape: expected two arrays of length {len(z)}, "
                    f"got {gp.shape} and {gm.shape}")
        if np.array_equal(gp, ref_p) and np.array_equal(gm, ref_m):
            return None
        if np.array_equal(gp, ref_m) and np.array_equal(gm, ref_p):
            return ("l_plus and l_minus swapped: l_plus[i] counts the more "
                    "relevant documents j above i (pairs (j, i)), l_minus "
                    "the less relevant ones")
        variants = [
            (dict(strict=False),
             "pairs exactly on the margin counted as active: a pair is "
             "active only if 1 - (z_i - z_j) > 0 (strict), so a score "
             "difference of exactly 1 does not count"),
            (dict(same_query=False),
             "pairs across queries counted: only documents of the same "
             "query form pairs"),
            (dict(label_ties=True),
             "documents with equal labels counted as pairs: a pair needs "
             "y_i > y_j (strict)"),
            (dict(margin_sign=-1.0),
             "wrong sign of the score difference: pair (i, j) with "
             "y_i > y_j is active when z_i - z_j < 1, not z_j - z_i < 1"),
            (dict(use_margin=False),
             "you count all preference pairs, not only the active ones "
             "(1 - (z_i - z_j) > 0)"),
        ]
        named = only_match(
            ((msg, _counts_variant(z, y, qid, **kw)) for kw, msg in variants),
            lambda v: (np.array_equal(gp, v[0]) and np.array_equal(gm, v[1]))
            or (np.array_equal(gp, v[1]) and np.array_equal(gm, v[0])))
        if named:
            return named
        dp, dm = gp - ref_p, gm - ref_m
        for name, d, mine, ref in (("l_plus", dp, gp, ref_p),
                                   ("l_minus", dm, gm, ref_m)):
            if np.any(d) and set(np.unique(d[d != 0]).tolist()) <= {-1, 1}:
                i = int(np.flatnonzero(d)[0])
                return (f"off by one in {name}: {int(ref[i])} expected for "
                        f"document {i}, you give {int(mine[i])}")
        i = int(np.flatnonzero((dp != 0) | (dm != 0))[0])
        return f"differs from refimpl first at document {i}"

    st = _strategies()
    adversarial = [
        # one pair exactly on the margin, one inactive, one misordered by
        # more than the margin: the margin rules all differ here
        ([2.0, 1.0, 0.0, 4.0], [1, 0, 0, 0], [1, 1, 1, 1]),
        ([0.0, 0.5, 3.0], [0, 1, 2], [1, 1, 1]),
        ([0.0, 0.0, 0.0, 0.0], [1, 1, 0, 2], [1, 1, 1, 1]),   # label ties
        ([0.0, 0.2, 0.1, 0.3], [1, 0, 1, 0], [1, 1, 2, 2]),   # two queries
        ([2.0, 0.0, 1.0, -1.0, 0.5], [0, 2, 1, 2, 0], [3, 3, 3, 3, 3]),
        ([5.0], [1], [1]),
    ]

    @st.composite
    def cases(draw):
        n = draw(st.integers(1, 9))
        z = draw(st.lists(st.integers(-6, 6), min_size=n, max_size=n))
        y = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        q = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
        return (np.array(z) / 2.0, np.array(y), np.array(q))

    return run_checker(diagnose, adversarial=adversarial, strategy=cases(),
                       max_examples=80, what="your pair-count function",
                       names=("z", "y", "qid"))


# --------------------------------------------------------------------------
# Steihaug-Toint truncated conjugate gradients
# --------------------------------------------------------------------------


class _Quadratic:
    def __init__(self, H):
        self.H = H

    def hess_vec(self, v):
        return self.H @ v


def _cg_ref(H, g, delta, eps_cg):
    s, r, n_cg, hit, _ = _tron_mod._steihaug_cg(
        _Quadratic(H), g, delta, eps_cg, len(g))
    return s, r, hit


def _cg_variant(H, g, delta, eps_cg, kind):
    """Truncated CG with one planted rule, to name the student's mistake."""
    s, r = np.zeros_like(g), -g
    d, rr = r.copy(), float(r @ r)
    tol = eps_cg * math.sqrt(rr)
    for _ in range(len(g)):
        if math.sqrt(rr) <= tol:
            break
        Hd = H @ d
        alpha = rr / float(d @ Hd)
        nxt = s + alpha * d
        if kind != "no_boundary" and float(nxt @ nxt) > delta * delta:
            sd, dd, ss = float(s @ d), float(d @ d), float(s @ s)
            rad = math.sqrt(max(sd * sd + dd * (delta * delta - ss), 0.0))
            if kind == "negative_root":
                tau = (-sd - rad) / dd
            elif kind == "clip":
                return delta * nxt / math.sqrt(float(nxt @ nxt)), None
            else:
                tau = (-sd + rad) / dd
            return s + tau * d, r - tau * Hd
        s, r = nxt, r - alpha * Hd
        rr, old = float(r @ r), rr
        d = r + (rr / old) * d
    return s, r


def check_steihaug_cg(fn) -> CheckResult:
    """Check ``fn(hess_vec, g, delta, eps_cg) -> (s, r, ...)``.

    Steihaug-Toint truncated CG for ``min g^T s + s^T H s / 2`` subject to
    ``||s|| <= delta``, started at ``s = 0``: stop when
    ``||r|| <= eps_cg ||g||`` (``r = -g - H s``) or, when the next iterate
    would leave the ball, at ``s + tau d`` with the ``tau >= 0`` that solves
    ``||s + tau d|| = delta``.  ``fn`` returns ``s`` and ``r`` (further
    return values, such as a CG count, are ignored).  Reference:
    ``refimpl.solvers.tron._steihaug_cg``.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    def diagnose(case):
        H, g, delta, eps_cg = case
        s_ref, r_ref, hit = _cg_ref(H, g, delta, eps_cg)
        record(hess_vec="v -> H v", H=H.copy(), g=g.copy(), delta=delta,
               eps_cg=eps_cg, expected=(s_ref, r_ref))
        out = fn(lambda v: H @ np.asarray(v, dtype=float), g.copy(),
                 float(delta), float(eps_cg))
        record(got=out)
        if not isinstance(out, (tuple, list)) or len(out) < 2:
            return ("your function must return (s, r) (the step and the "
                    f"residual -g - H s), got {type(out).__name__}")
        s, r = (np.asarray(a, dtype=float) for a in out[:2])
        scale = max(float(np.linalg.norm(s_ref)), 1e-300)
        tol = 1e-8 * scale
        ok_s = np.linalg.norm(s - s_ref) <= tol
        sn = float(np.linalg.norm(s))
        if ok_s:
            r_true = -g - H @ s
            rscale = max(float(np.linalg.norm(r_true)), 1e-12 *
                         float(np.linalg.norm(g)))
            if np.linalg.norm(r - r_true) <= 1e-7 * rscale + 1e-12:
                return None
            if np.linalg.norm(r + r_true) <= 1e-7 * rscale + 1e-12:
                return ("wrong sign of the residual: r must be -g - H s "
                        "(you return g + H s)")
            return ("the step is right but the residual is not -g - H s: "
                    "update r with the same tau or alpha as s")
        if hit:
            sv, _ = _cg_variant(H, g, delta, eps_cg, "negative_root")
            if np.linalg.norm(s - sv) <= tol:
                return ("wrong boundary step tau: you took the negative root "
                        "of ||s + tau d|| = Delta; tau must be >= 0")
        if np.linalg.norm(s + s_ref) <= tol:
            return ("wrong sign: your step is the negative of the correct "
                    "one; CG starts from r = -g, d = -g")
        if sn > delta * (1 + 1e-9):
            return (f"your step leaves the trust region: ||s|| = {sn:.4g} "
                    f"> Delta = {delta:.4g}; stop at the boundary when the "
                    "next CG iterate would leave it")
        if hit:
            sv, _ = _cg_variant(H, g, delta, eps_cg, "clip")
            if np.linalg.norm(s - sv) <= tol:
                return ("wrong boundary step: you scaled the next CG iterate "
                        "back onto the sphere instead of following the "
                        "current direction d to it (tau solves "
                        "||s + tau d|| = Delta)")
            if abs(sn - delta) > 1e-8 * delta:
                return (f"wrong boundary step tau: ||s|| = {sn:.6g} but the "
                        f"step should end on the boundary, ||s|| = Delta = "
                        f"{delta:.6g}; tau is the positive root of "
                        "||s + tau d|| = Delta")
            return ("your step is on the boundary but at the wrong point: "
                    "move along the current CG direction d from the last "
                    "iterate inside the region")
        return (f"your step differs from refimpl's by "
                f"{np.linalg.norm(s - s_ref):.2e} (||s|| = {sn:.4g}) inside "
                "the region: check the CG recurrences and the stopping rule "
                "||r|| <= eps_cg ||g||")

    def make(n, delta, eps_cg, seed):
        r = np.random.default_rng(seed)
        B = r.normal(size=(n, n))
        return (np.eye(n) + B @ B.T, r.normal(size=n), delta, eps_cg)

    adversarial = [make(4, 1e3, 0.1, 1), make(4, 0.05, 0.1, 2),
                   make(6, 0.3, 0.01, 3), make(5, 2.0, 1e-6, 4),
                   make(1, 0.1, 0.1, 5)]
    st = _strategies()
    cases = st.builds(
        make, st.integers(1, 7),
        st.sampled_from([0.01, 0.1, 0.5, 1.0, 3.0, 1e3]),
        st.sampled_from([0.1, 0.01, 1e-6]), st.integers(0, 10**6))
    return run_checker(diagnose, adversarial=adversarial, strategy=cases,
                       max_examples=60, what="your truncated CG")


# --------------------------------------------------------------------------
# the trust-region radius update of tron.cpp
# --------------------------------------------------------------------------


def _alpha(gs, actred, variant=None):
    q = -actred - gs                     # f(w + s) - f(w) - g^T s
    s1, s3 = _tron_mod.sigma1, _tron_mod.sigma3
    if variant == "q_sign":
        q = -actred + gs
    if variant == "no_half":
        return s3 if q <= 0 else max(s1, -gs / q)
    return s3 if q <= 0 else max(s1, -0.5 * (gs / q))


def _radius(delta, snorm, gs, actred, prered, alpha=None, swap=False,
            eta_le=False):
    """tron.py's update, or a planted variant of it."""
    t = _tron_mod
    if alpha is None:
        alpha = _alpha(gs, actred)
    s2, s3 = (t.sigma3, t.sigma2) if swap else (t.sigma2, t.sigma3)
    lt = (lambda a, b: a <= b) if eta_le else (lambda a, b: a < b)
    if lt(actred, t.eta0 * prered):
        return min(max(alpha, t.sigma1) * snorm, s2 * delta)
    if lt(actred, t.eta1 * prered):
        return max(t.sigma1 * delta, min(alpha * snorm, s2 * delta))
    if lt(actred, t.eta2 * prered):
        return max(t.sigma1 * delta, min(alpha * snorm, s3 * delta))
    return max(delta, min(alpha * snorm, s3 * delta))


def _interval(delta, snorm, actred, prered):
    """The interval the case allows (the chapter's eq-radius, Lee & Lin eq. 37)."""
    t = _tron_mod
    if actred < t.eta1 * prered:
        return t.sigma1 * min(snorm, delta), t.sigma2 * delta
    if actred < t.eta2 * prered:
        return t.sigma1 * delta, t.sigma3 * delta
    return delta, t.sigma3 * delta


def _case_name(actred, prered):
    t = _tron_mod
    if actred < t.eta0 * prered:
        return "rho < eta0 (step rejected)"
    if actred < t.eta1 * prered:
        return "eta0 <= rho < eta1"
    if actred < t.eta2 * prered:
        return "eta1 <= rho < eta2"
    return "rho >= eta2"


def _radius_mistakes(case):
    """(diagnosis, the radius that mistake returns) for the usual ones."""
    delta, snorm, gs, actred, prered = case
    return [
        ("ties at a threshold handled wrong: the cases are "
         "actred < eta * prered (strict); at rho exactly equal to eta0, "
         "eta1 or eta2 the next case applies",
         _radius(*case, eta_le=True)),
        ("sigma2 and sigma3 swapped: shrink by sigma2 = 0.5, grow by at "
         "most sigma3 = 4", _radius(*case, swap=True)),
        ("wrong step scale alpha: wrong curvature q of the fitted "
         "parabola: q = f(w+s) - f(w) - g^T s = -actred - g^T s",
         _radius(*case, alpha=_alpha(gs, actred, "q_sign"))),
        ("wrong step scale alpha: missing factor 1/2 in the interpolated "
         "step: alpha = max(sigma1, -g^T s / (2 q)), the minimiser of "
         "the parabola f + t g^T s + t^2 q",
         _radius(*case, alpha=_alpha(gs, actred, "no_half"))),
    ]


def check_radius_update(fn) -> CheckResult:
    """Check ``fn(delta, snorm, gs, actred, prered) -> new delta``.

    The trust-region radius update of LIBLINEAR's ``tron.cpp`` as in
    :func:`refimpl.solvers.tron` (Lee & Lin eq. 37): with
    ``q = f(w+s) - f(w) - g^T s = -actred - gs``, ``alpha = sigma3`` if
    ``q <= 0`` else ``max(sigma1, -gs / (2 q))``; then the four cases
    ``actred < eta0 prered``, ``< eta1 prered``, ``< eta2 prered`` and
    otherwise (see the chapter).  ``snorm = ||s||``, ``gs = g^T s``.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """
    t = _tron_mod
    suspects = Suspects()

    def diagnose(case):
        delta, snorm, gs, actred, prered = case
        ref = _radius(*case)
        record(expected=ref)
        got = fn(*case)
        record(got=got)
        try:
            got = float(got)
        except (TypeError, ValueError):
            return f"your function returned {got!r}, not a number"

        def same(x):
            return math.isclose(got, x, rel_tol=1e-12, abs_tol=1e-300)
        cands = _radius_mistakes(case)
        if same(ref):
            suspects.clear(cands, same)
            return None
        rho = actred / prered if prered else float("nan")
        where = f"(rho = {rho:.4g}, case {_case_name(actred, prered)})"

        named = suspects.name(cands, same)
        if named:
            return f"{named} {where}"
        q = -actred - gs
        if q <= 0 and not same(ref):
            for a in (t.sigma1, 1.0, -0.5 * gs / q if q else 0.0):
                if same(_radius(*case, alpha=a)):
                    return ("wrong step scale alpha when the fitted "
                            "curvature q = f(w+s) - f(w) - g^T s <= 0: "
                            "alpha = sigma3 then " + where)
        lo, hi = _interval(delta, snorm, actred, prered)
        if got < lo * (1 - 1e-12) or got > hi * (1 + 1e-12):
            return (f"new radius {got:.6g} outside the interval [{lo:.6g}, "
                    f"{hi:.6g}] that the case allows " + where)
        if same(lo) or same(hi) or same(delta):
            return (f"you return {got:.6g}, a fixed multiple of Delta; TRON "
                    f"takes alpha ||s|| = {ref:.6g} (alpha from the "
                    "quadratic fit, max(sigma1, -g^T s / (2 q))) clipped "
                    "into the case's interval " + where)
        return f"new radius {got:.6g} instead of {ref:.6g} " + where

    # (delta, snorm, gs, actred, prered) with snorm <= delta, gs < 0
    adversarial = [
        # first a case whose right answer and typical wrong ones all lie
        # inside the interval, so that the first failure is diagnosable
        (1.0, 1.0, -1.0, 0.3, 0.6),                  # eta1 <= rho < eta2
        (1.0, 0.5, -1.0, 0.9, 0.6),                  # rho >= eta2
        (1.0, 1.0, -1.0, 0.05, 0.6),                 # eta0 <= rho < eta1
        (1.0, 0.8, -1.0, -0.2, 0.6),                 # rejected
        (2.0, 2.0, -1.0, 0.25 * 0.5, 0.5),           # rho == eta1 exactly
        (2.0, 1.0, -1.0, 0.75 * 0.5, 0.5),           # rho == eta2 exactly
        (1.0, 1.0, -0.1, 0.5, 1.0),                  # q < 0: alpha = sigma3
        (1.0, 0.3, -1.0, 0.999, 0.5),                # q = 0.001 > 0
    ]
    st = _strategies()

    @st.composite
    def cases(draw):
        delta = draw(st.sampled_from([0.1, 1.0, 7.0]))
        snorm = delta * draw(st.sampled_from([0.05, 0.5, 1.0]))
        gs = -draw(st.sampled_from([0.1, 1.0, 3.0]))
        prered = draw(st.sampled_from([0.01, 0.5, 2.0]))
        rho = draw(st.sampled_from([-1.0, 0.0, 1e-4, 0.1, 0.25, 0.5, 0.75,
                                    0.9, 1.0, 1.5]))
        return (delta, snorm, gs, rho * prered, prered)

    return run_checker(diagnose, adversarial=adversarial, strategy=cases(),
                       max_examples=100, what="your radius update",
                       names=("delta", "snorm", "gs", "actred", "prered"))


# --------------------------------------------------------------------------
# The most violated constraint of the 1-slack problem (SVMrank)
# --------------------------------------------------------------------------


def _plane_ref(X, y, qid, w):
    from .._validation import ranking_problem
    from ..losses.pairwise_hinge import PairwiseHinge

    loss = PairwiseHinge(ranking_problem(X, y, qid))
    _, c, n_violated = loss.risk(w)
    n = len(np.unique(qid))
    return loss.direction(c) / n, n_violated / n


def _plane_variant(X, y, qid, w, *, strict=True, ties=False, margin=1.0,
                   n_with_pairs=False):
    """Explicit-pairs plane with one rule changed (to name a mistake)."""
    z = X @ w
    a, b = np.zeros(X.shape[1]), 0.0
    queries = set()
    for i in range(len(z)):
        for j in range(len(z)):
            if i == j or qid[i] != qid[j]:
                continue
            if not (y[i] >= y[j] if ties else y[i] > y[j]):
                continue
            if y[i] > y[j]:
                queries.add(qid[i])
            r = margin - (z[i] - z[j])
            if r > 0 if strict else r >= 0:
                a += X[i] - X[j]
                b += 1.0
    n = max(len(queries), 1) if n_with_pairs else len(np.unique(qid))
    return a / n, b / n


def check_hinge_plane(fn) -> CheckResult:
    """Check ``fn(X, y, qid, w) -> (a, b)``, the plane of eq. (7.13).

    ``a = sum_{(i, j) violated} (x_i - x_j) / n`` and ``b`` = (number of
    violated pairs) / n, over the preference pairs (``q_i = q_j``,
    ``y_i > y_j``) with ``1 - w^T (x_i - x_j) > 0``, and ``n`` the number
    of queries (all of them, as SVMrank counts).  Reference:
    ``refimpl.losses.pairwise_hinge.PairwiseHinge``.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-hinge
    """
    def diagnose(case):
        X, y, qid, w = (np.asarray(v) for v in case)
        X = X.astype(float)
        w = w.astype(float)
        ref_a, ref_b = _plane_ref(X, y, qid, w)
        record(X=X.copy(), y=y.copy(), qid=qid.copy(), w=w.copy(),
               expected=(ref_a, ref_b))
        got = fn(X.copy(), y.copy(), qid.copy(), w.copy())
        record(got=got)
        try:
            a, b = got
            a = np.asarray(a, dtype=float).ravel()
            b = float(b)
        except (TypeError, ValueError):
            return ("your function must return (a, b): a vector of length "
                    f"{X.shape[1]} and a number, got {type(got).__name__}")
        if a.shape != ref_a.shape:
            return (f"wrong shape: a must have {X.shape[1]} entries (one per "
                    f"feature), got {a.shape}")
        where = f"(scores X w = {np.round(X @ w, 3).tolist()})"

        def same(pa, pb):
            return (np.allclose(a, pa, rtol=1e-9, atol=1e-12)
                    and math.isclose(b, pb, rel_tol=1e-9, abs_tol=1e-12))

        if same(ref_a, ref_b):
            return None
        n = len(np.unique(qid))
        if same(-ref_a, ref_b) and np.any(ref_a):
            return ("wrong sign: a is the sum of x_i - x_j over the violated "
                    f"pairs (i preferred to j), you return its negative {where}")
        if n > 1 and same(n * ref_a, n * ref_b):
            return ("missing factor 1/n: SVMrank's plane is the sum over the "
                    f"violated pairs divided by the number of queries n = {n} "
                    f"{where}")
        variants = [
            (dict(strict=False),
             "pairs exactly on the margin counted as violated: a pair is "
             "violated only if 1 - w^T (x_i - x_j) > 0 (strict)"),
            (dict(ties=True),
             "documents with equal labels counted as pairs: a pair needs "
             "y_i > y_j (strict)"),
            (dict(margin=0.0),
             "you count only the misordered pairs (z_i - z_j < 0): the "
             "hinge is violated whenever z_i - z_j < 1 (margin 1)"),
            (dict(n_with_pairs=True),
             "wrong n: SVMrank divides by the number of all training "
             "queries, including those without a preference pair"),
        ]
        named = only_match(
            ((msg, _plane_variant(X, y, qid, w, **kw))
             for kw, msg in variants), lambda v: same(*v))
        if named:
            return f"{named} {where}"
        if np.allclose(a, ref_a, rtol=1e-9, atol=1e-12):
            return ("a is right, b differs from refimpl's (the number of "
                    f"violated pairs over n) {where}")
        k = int(np.argmax(np.abs(a - ref_a)))
        return f"a differs from refimpl's first at a[{k}] {where}"

    st = _strategies()
    adversarial = [
        # exactly on the margin, and just inside it
        (np.array([[1.0], [0.0]]), [1, 0], [1, 1], [1.0]),
        (np.array([[1.0, 0.0], [0.0, 0.0], [2.0, 1.0]]), [2, 0, 1], [1, 1, 1],
         [0.5, 0.25]),
        # label ties, a query without pairs, a one-document query
        (np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [1.0], [0.0]]),
         [1, 1, 0, 2, 2, 1, 0], [1, 1, 1, 2, 2, 3, 3], [0.0]),
        (np.array([[0.0], [1.0], [5.0]]), [1, 0, 1], [1, 1, 3], [0.25]),
        # misordered and correctly ordered within the margin
        (np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]]), [1, 0, 2],
         [4, 4, 4], [1.0, -0.5]),
    ]

    @st.composite
    def cases(draw):
        n = draw(st.integers(1, 8))
        d = draw(st.integers(1, 3))
        X = draw(st.lists(st.integers(-4, 4), min_size=n * d, max_size=n * d))
        y = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
        q = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
        w = draw(st.lists(st.integers(-2, 2), min_size=d, max_size=d))
        return (np.array(X, dtype=float).reshape(n, d) / 2.0, np.array(y),
                np.array(q), np.array(w, dtype=float) / 2.0)

    return run_checker(diagnose, adversarial=adversarial, strategy=cases(),
                       max_examples=80, what="your plane function",
                       names=("X", "y", "qid", "w"))
