r"""Exercise checkers of Chapter 2 (the convex-analysis toolkit).

* :func:`check_soft_threshold`: the proximal operator of ``t ||.||_1``,
  against :meth:`refimpl.penalties.L1.prox`;
* :func:`check_project_l1_ball`: the Euclidean projection onto
  ``{w : ||w||_1 <= r}``, against
  :func:`refimpl.solvers.subgradient.project_l1_ball`;
* :func:`check_conjugate_squared_hinge`: the Fenchel conjugate of the
  squared hinge ``h(z) = max(0, 1 - z)^2``, against its closed form
  ``h*(s) = s + s^2/4`` for ``s <= 0`` and ``+inf`` for ``s > 0``
  (:func:`squared_hinge_conjugate`).

Derived in: book/02_convex_toolkit.md#convex-toolkit
"""

from __future__ import annotations

import numpy as np

from ..penalties import L1
from ..solvers.subgradient import project_l1_ball
from ._harness import CheckResult, only_match, record, run_checker

__all__ = ["check_conjugate_squared_hinge", "check_project_l1_ball",
           "check_soft_threshold", "squared_hinge_conjugate"]


def _close(a, b, scale=1.0) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(
        np.allclose(a, b, rtol=1e-9, atol=1e-10 * max(1.0, scale)))


def _as_output(out, v, name="your function"):
    """The student's answer as a float vector, or a message saying why not."""
    try:
        out = np.asarray(out, dtype=float)
    except (TypeError, ValueError):
        return None, f"{name} returned {type(out).__name__}, not an array"
    if out.shape != v.shape:
        return None, (f"{name} returned shape {out.shape} for an input of "
                      f"shape {v.shape}")
    if not np.all(np.isfinite(out)):
        return None, f"{name} returned a non-finite value"
    return out, None


# -- soft-thresholding -------------------------------------------------------

def _soft(v, t):
    return L1(1.0).prox(v, t)


def _diagnose_soft(fn, case):
    v, t = case
    v_in = v.copy()
    ref = _soft(v, t)
    record(v=v.copy(), t=t, expected=ref)
    got = fn(v_in, t)
    record(got=got)
    out, msg = _as_output(got, v)
    if msg:
        return msg
    if not np.array_equal(v_in, v):
        return "your function modified its input v in place"
    scale = float(np.max(np.abs(v), initial=1.0))
    if _close(out, ref, scale):
        return None
    cands = [
        ("hard thresholding: you keep v_j unchanged when |v_j| > t; "
         "soft-thresholding also shrinks it by t",
         np.where(np.abs(v) > t, v, 0.0)),
        ("no clipping at 0: entries with |v_j| <= t must become exactly 0, "
         "not change sign", np.sign(v) * (np.abs(v) - t)),
        ("you subtract t from every entry; soft-thresholding moves each v_j "
         "towards 0 by t (the sign of v_j matters)", v - t),
        ("sign lost: you return max(|v_j| - t, 0), the magnitude without "
         "the sign of v_j", np.maximum(np.abs(v) - t, 0.0)),
        ("wrong sign: your result is the negative of the prox", -ref),
        ("wrong box in the Moreau form: v - clip(v, -t, t) is the prox; "
         "you return the projection clip(v, -t, t) itself",
         np.clip(v, -t, t)),
    ]
    if t > 0:
        cands += [("wrong threshold: you threshold at t/2 instead of t (the "
                   "prox of t||.||_1 shrinks by t)", _soft(v, t / 2)),
                  ("wrong threshold: you threshold at 2t instead of t (the "
                   "prox of t||.||_1 shrinks by t)", _soft(v, 2 * t))]
    if t != 1.0:
        cands.append(("you ignore t: your result is the prox for t = 1",
                      _soft(v, 1.0)))
    named = only_match(cands, lambda c: _close(out, c, scale))
    if named:
        return named
    j = int(np.argmax(np.abs(out - ref)))
    return (f"differs from refimpl at coordinate {j}: yours "
            f"{out[j]:.6g}, soft-thresholding gives {ref[j]:.6g}")


def _vectors(min_size=1, max_size=12, bound=10.0):
    from hypothesis import strategies as st
    return st.lists(st.floats(-bound, bound, allow_nan=False,
                              allow_infinity=False, allow_subnormal=False),
                    min_size=min_size, max_size=max_size).map(
        lambda xs: np.array(xs, dtype=float))


def check_soft_threshold(fn, *, max_examples=100) -> CheckResult:
    r"""Check ``fn(v, t)`` = the prox of ``t ||.||_1`` (soft-thresholding).

    The answer must be ``sign(v_j) max(|v_j| - t, 0)`` coordinate-wise
    (:meth:`refimpl.penalties.L1.prox` with ``alpha = 1``); ``v`` must not be
    modified.  Recognised mistakes: hard thresholding, no clipping at 0, the
    sign lost, a threshold of ``t/2`` or ``2t``, ``t`` ignored, ``v - t``.

    Derived in: book/02_convex_toolkit.md#convex-toolkit

    Parameters
    ----------
    fn : callable
        ``fn(v, t) -> ndarray`` with ``v`` a 1-d float array, ``t >= 0``.
    max_examples : int
        Random cases after the adversarial ones.
    """
    from hypothesis import strategies as st

    adversarial = [
        (np.array([3.0, -3.0, 0.5, -0.5, 0.0, 1.0]), 1.0),
        (np.array([2.5, -0.2, 0.7, -4.0]), 0.6),
        (np.array([-1.0, 2.0]), 0.0),
        (np.array([0.3, -0.3]), 2.0),
        (np.array([5.0, -2.0, 1.5]), 3.0),
    ]
    strategy = st.tuples(_vectors(), st.floats(0.0, 5.0, allow_nan=False,
                                               allow_subnormal=False))
    return run_checker(lambda c: _diagnose_soft(fn, c), adversarial=adversarial,
                       strategy=strategy, max_examples=max_examples,
                       what="your soft-thresholding", names=("v", "t"))


# -- projection onto the l1 ball ---------------------------------------------

def _thresholds(v, r):
    """theta_k = (sum of the k largest |v_i| - r) / k for k = 1..d."""
    u = np.sort(np.abs(v))[::-1]
    k = np.arange(1, len(u) + 1)
    theta = (np.cumsum(u) - r) / k
    rho = int(np.flatnonzero(u - theta > 0)[-1]) + 1
    return theta, rho


def _diagnose_l1_ball(fn, case):
    v, r = case
    v_in = v.copy()
    ref = project_l1_ball(v, r)
    record(v=v.copy(), r=r, expected=ref)
    got = fn(v_in, r)
    record(got=got)
    out, msg = _as_output(got, v)
    if msg:
        return msg
    if not np.array_equal(v_in, v):
        return "your function modified its input v in place"
    scale = float(max(np.max(np.abs(v), initial=1.0), r))
    if _close(out, ref, scale):
        return None
    n1 = float(np.abs(v).sum())
    if n1 <= r:
        return only_match([
            ("sign lost: you return |w_j| without the sign of v_j",
             np.abs(ref)),
            ("wrong sign: your result is the negative of the projection",
             -ref)], lambda c: _close(out, c, scale)) or (
            f"v is already in the ball (||v||_1 = {n1:.4g} <= r) and must "
            "be returned unchanged")
    theta, rho = _thresholds(v, r)
    u_up = np.sort(np.abs(v))
    theta_up = (np.cumsum(u_up) - r) / np.arange(1, len(v) + 1)
    up = np.flatnonzero(u_up - theta_up > 0)

    def soft(th):
        return np.sign(v) * np.maximum(np.abs(v) - th, 0)
    cands = [
        ("sign lost: you return |w_j| without the sign of v_j", np.abs(ref)),
        ("wrong sign: your result is the negative of the projection", -ref),
        ("scaling instead of projecting: r v / ||v||_1 lies in the ball but "
         "is not the nearest point; soft-threshold v at the right theta "
         "instead", v * (r / n1)),
        ("the first k with u_k > theta_k instead of the last: rho is the "
         "LARGEST such k", soft(theta[0])),
    ]
    if len(up):
        cands.append(("sorted increasingly: the rule sorts |v| in "
                      "decreasing order (np.sort(...)[::-1])",
                      soft(theta_up[up[-1]])))
    for k, name in ((rho - 1, "rho - 1"), (rho + 1, "rho + 1")):
        if 1 <= k <= len(v):
            cands.append((f"off by one in the sort-based rule: your "
                          f"threshold uses the {name} largest entries "
                          "(0-based index where the formula counts from 1?)",
                          soft(theta[k - 1])))
    named = only_match(cands, lambda c: _close(out, c, scale))
    if named:
        return named
    if np.any((out != 0) & (np.sign(out) != np.sign(v))):
        return ("sign error: a coordinate of your result has the opposite "
                "sign of v_j (the projection never flips a sign)")
    n_out = float(np.abs(out).sum())
    if n_out > r * (1 + 1e-9) + 1e-12:
        return f"your result is outside the ball: ||w||_1 = {n_out:.6g} > r"
    if n_out < r * (1 - 1e-9):
        return ("your result is strictly inside the ball (||w||_1 = "
                f"{n_out:.6g} < r); the projection of a point outside lies "
                "on the sphere ||w||_1 = r")
    j = int(np.argmax(np.abs(out - ref)))
    return (f"differs from refimpl at coordinate {j}: yours {out[j]:.6g}, "
            f"the projection gives {ref[j]:.6g}")


def check_project_l1_ball(fn, *, max_examples=100) -> CheckResult:
    r"""Check ``fn(v, r)`` = the Euclidean projection onto ``||w||_1 <= r``.

    Compared with :func:`refimpl.solvers.subgradient.project_l1_ball` (the
    sort-based rule of Duchi et al. 2008).  Recognised mistakes: ``v``
    changed although it is inside the ball, scaling ``r v / ||v||_1``
    instead of projecting, lost or flipped signs, an off-by-one threshold
    index, a result outside the ball or strictly inside it.

    Derived in: book/02_convex_toolkit.md#convex-toolkit

    Parameters
    ----------
    fn : callable
        ``fn(v, r) -> ndarray`` with ``v`` a 1-d float array, ``r > 0``.
    max_examples : int
        Random cases after the adversarial ones.
    """
    from hypothesis import strategies as st

    adversarial = [
        (np.array([0.2, -0.3, 0.1]), 1.0),              # inside
        (np.array([3.0, -1.0, 0.5, -0.2]), 1.0),        # rho = 1
        (np.array([1.0, -0.9, 0.8, 0.1]), 1.5),         # rho = 3
        (np.array([-2.0, 2.0, 2.0]), 3.0),              # ties
        (np.array([5.0]), 2.0),
        (np.array([0.6, -0.5, 0.4, -0.3, 0.2]), 1.0),
    ]
    strategy = st.tuples(_vectors(), st.floats(0.1, 10.0, allow_nan=False))
    return run_checker(lambda c: _diagnose_l1_ball(fn, c),
                       adversarial=adversarial, strategy=strategy,
                       max_examples=max_examples,
                       what="your l1-ball projection", names=("v", "r"))


# -- the conjugate of the squared hinge --------------------------------------

def squared_hinge_conjugate(s):
    r"""Fenchel conjugate of ``h(z) = max(0, 1 - z)^2``.

    ``h*(s) = sup_z (s z - h(z)) = s + s^2 / 4`` for ``s <= 0`` (attained at
    ``z = 1 + s/2``) and ``+inf`` for ``s > 0`` (let ``z -> +inf``).

    Derived in: book/02_convex_toolkit.md#convex-toolkit
    """
    s = np.asarray(s, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(s <= 0, s + s * s / 4, np.inf)


def _diagnose_conj(fn, s):
    ref = squared_hinge_conjugate(s)
    record(s=s, expected=ref)
    out = []
    for si in s:
        out.append(fn(float(si)))
        record(got=np.array(out + [np.nan] * (len(s) - len(out)), float))
    out = np.array([float(o) for o in out])
    record(got=out)
    fin = np.isfinite(ref)
    if np.array_equal(np.isfinite(out), fin) and np.all(
            out[~fin] > 0) and _close(out[fin], ref[fin], 1.0 + np.max(
                np.abs(s), initial=0.0) ** 2):
        return None
    if np.any(np.isnan(out)):
        return "your conjugate returned NaN"
    if np.any(out[~fin] < np.inf) and np.all(np.isfinite(out[fin])):
        if np.all(np.isfinite(out)) and _close(out, s + s * s / 4, 1.0):
            return ("domain missing: for s > 0 the supremum is +inf (let "
                    "z -> +inf, where h(z) = 0 and s z grows); you return "
                    "s + s^2/4 there")
        return "domain missing: for s > 0 the conjugate must be +inf (np.inf)"
    neg, pos = s < 0, s > 0
    if np.any(np.isinf(out[neg])) and np.all(np.isfinite(out[pos])):
        return ("domain on the wrong side: h*(s) is finite for s <= 0 and "
                "+inf for s > 0")
    if np.all(np.isfinite(out[neg])) and np.any(np.isinf(out[s == 0])):
        return ("domain boundary: s = 0 belongs to the domain, h*(0) = 0 "
                "(every z >= 1 attains it); test s <= 0, not s < 0")
    if np.any(~np.isfinite(out[fin])):
        return "you return +inf where the conjugate is finite"
    sf, of = s[fin], out[fin]
    sc = 1.0 + np.max(np.abs(sf), initial=0.0) ** 2
    named = only_match([
        ("missing factor 1/2: you have s^2/2 where the maximiser "
         "z = 1 + s/2 gives s^2/4", sf + sf * sf / 2),
        ("wrong sign of the quadratic term: h* is convex, so its s^2 term "
         "is +s^2/4", sf - sf * sf / 4),
        ("wrong sign of the linear term: the slope of h* at s = 0 is +1 "
         "(z = 1)", -sf + sf * sf / 4),
        ("missing the linear term s (it comes from s z at z = 1 + s/2)",
         sf * sf / 4),
        ("wrong quadratic coefficient: s^2 instead of s^2/4 (the maximiser "
         "is z = 1 + s/2)", sf + sf * sf),
        ("you return the maximiser z = 1 + s/2, not the value s z - h(z) "
         "there", 1 + sf / 2),
    ], lambda c: _close(of, c, sc))
    if named:
        return named
    j = int(np.argmax(np.abs(of - ref[fin])))
    return (f"at s = {sf[j]:.6g} you return {of[j]:.6g}, the supremum of "
            f"s z - max(0, 1 - z)^2 is {ref[fin][j]:.6g}")


def check_conjugate_squared_hinge(fn, *, max_examples=100) -> CheckResult:
    r"""Check ``fn(s)`` = the conjugate of ``h(z) = max(0, 1 - z)^2``.

    ``fn`` is called on one float at a time and must return ``+inf``
    (``np.inf``) outside the domain of the conjugate.  Recognised mistakes:
    the domain forgotten or on the wrong side, a missing factor in the
    quadratic term, wrong signs, the linear term dropped.

    Derived in: book/02_convex_toolkit.md#convex-toolkit

    Parameters
    ----------
    fn : callable
        ``fn(s) -> float``.
    max_examples : int
        Random cases after the adversarial ones.
    """
    adversarial = [np.array([-2.0, -1.0, -0.5, 0.0]),
                   np.array([0.5, 1.0, 3.0]),
                   np.array([-4.0, -0.1, 0.0, 0.1, 2.0])]
    strategy = _vectors(max_size=6, bound=8.0)
    return run_checker(lambda s: _diagnose_conj(fn, s),
                       adversarial=adversarial, strategy=strategy,
                       max_examples=max_examples,
                       what="your conjugate of the squared hinge",
                       names=("s",))
