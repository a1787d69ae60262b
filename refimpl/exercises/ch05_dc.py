"""Exercise checkers of Chapter 5 (DC reweighting).

* :func:`check_reweighting_weights` -- the weights ``beta_j = g'(|w_j|)``
  of Algorithm 2 for the log, smoothed l_p and MCP penalties, against
  :mod:`refimpl.nonconvex`;
* :func:`check_weighted_soft_threshold` -- the proximal map of
  ``t sum_j beta_j |w_j|``, against :class:`refimpl.penalties.WeightedL1`.

Derived in: book/05_dc_reweighting.md#dc-reweighting
"""

from __future__ import annotations

import numpy as np

from ..nonconvex import LogPenalty, LpPenalty, MCP
from ..penalties import WeightedL1
from ._harness import CheckResult, only_match, record, run_checker

__all__ = ["check_reweighting_weights", "check_weighted_soft_threshold"]

_RTOL, _ATOL = 1e-9, 1e-12

#: The parameters the student's function receives, per penalty.
_PARAMS = {"log": ("eps",), "lp": ("p", "eps"), "mcp": ("gamma", "lam")}


def _reference(penalty, params):
    if penalty == "log":
        return LogPenalty(**params)
    if penalty == "lp":
        return LpPenalty(**params)
    return MCP(**params)


def _close(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(
        np.allclose(a, b, rtol=_RTOL, atol=_ATOL, equal_nan=True))


def _weight_mistakes(penalty, params, w):
    """(name, wrong weights) pairs: the typical slips, in order of priority."""
    u, a = np.abs(w), w
    out = []
    with np.errstate(all="ignore"):
        if penalty == "log":
            eps = params["eps"]
            out += [("you return the penalty g(|w|) = log(1 + |w|/eps), not "
                     "its derivative g'(|w|)", np.log1p(u / eps)),
                    ("the epsilon is missing: 1/|w| is infinite at w = 0; "
                     "the weight is 1/(eps + |w|)", 1.0 / u),
                    ("the weights are evaluated at w, not at |w|: a negative "
                     "coefficient gets the wrong weight", 1.0 / (eps + a)),
                    ("you differentiate log(1 + |w|/eps) as 1/(1 + |w|/eps)"
                     ": the chain rule's 1/eps is missing",
                     1.0 / (1.0 + u / eps)),
                    ("you return the derivative of the l_p penalty, not of "
                     "the log penalty", 0.5 * (u + eps) ** -0.5)]
        elif penalty == "lp":
            p, eps = params["p"], params["eps"]
            out += [("you return the penalty g(|w|), not its derivative",
                     (u + eps) ** p - eps ** p),
                    ("the epsilon is missing: p |w|^(p-1) is infinite at "
                     "w = 0; smooth it as p (|w| + eps)^(p-1)",
                     p * u ** (p - 1.0)),
                    ("the weights are evaluated at w, not at |w|: a negative "
                     "coefficient gets the wrong weight",
                     p * (a + eps) ** (p - 1.0)),
                    ("the factor p of the derivative is missing",
                     (u + eps) ** (p - 1.0)),
                    ("wrong exponent: the derivative of u^p is p u^(p-1), "
                     "not p u^p or u^(p-1)/p", p * (u + eps) ** p),
                    ("you return the derivative of the log penalty, not of "
                     "the l_p penalty", 1.0 / (eps + u))]
        else:
            gam, lam = params["gamma"], params["lam"]
            t = gam * lam
            out += [("MCP's zero region is wrong: beyond the knee gamma*lam "
                     "the weight is 0, not negative (take max(., 0))",
                     1.0 - u / t),
                    ("the knee is at gamma*lam: you divide by lam alone",
                     np.maximum(1.0 - u / lam, 0.0)),
                    ("the knee is at gamma*lam: you divide by gamma alone",
                     np.maximum(1.0 - u / gam, 0.0)),
                    ("you return the penalty g(|w|), not its derivative",
                     np.where(u <= t, u - u * u / (2 * t), t / 2)),
                    ("the weights are evaluated at w, not at |w|: a negative "
                     "coefficient gets the wrong weight",
                     np.maximum(1.0 - a / t, 0.0)),
                    ("you return the derivative of the log penalty, not of "
                     "MCP", 1.0 / (0.1 + u))]
    return out


def _weights_diagnose(fn, penalty):
    def diagnose(case):
        w, params = case
        ref = _reference(penalty, params).weights(w)
        record(w=w.copy(), **params, expected=ref)
        got = fn(w.copy(), **params)
        record(got=got)
        got = np.asarray(got, dtype=float)
        if got.shape != ref.shape:
            return (f"your weights have shape {got.shape}; Algorithm 2 needs "
                    f"one weight per coefficient, shape {ref.shape}")
        if _close(got, ref):
            return None
        named = only_match(_weight_mistakes(penalty, params, w),
                           lambda wrong: _close(got, wrong))
        if named:
            return named
        bad0 = (w == 0) & ~np.isfinite(got)
        if penalty in ("log", "lp") and bad0.any():
            return ("your weight is infinite at w_j = 0: the epsilon must "
                    "keep g'(0) finite ("
                    + ("1/(eps + |w|)" if penalty == "log"
                       else "p (|w| + eps)^(p-1)") + ")")
        j = int(np.argmax(np.where(np.isfinite(got),
                                   np.abs(got - ref), np.inf)))
        return (f"your weight differs from g'(|w_j|) at w_j = {w[j]:.4g} "
                f"(coordinate {j})")
    return diagnose


def _weights_cases(penalty):
    base = {"log": {"eps": 0.1}, "lp": {"p": 0.5, "eps": 1e-3},
            "mcp": {"gamma": 2.0, "lam": 0.5}}[penalty]
    w = np.array([0.0, 0.05, -0.3, 0.7, -1.5, 2.5, 0.0])
    cases = [(w, dict(base))]
    if penalty == "log":
        cases.append((np.array([-0.2, 0.0, 4.0]), {"eps": 0.01}))
    elif penalty == "lp":
        cases.append((np.array([-0.2, 0.0, 4.0]), {"p": 0.3, "eps": 1e-2}))
    else:
        cases.append((np.array([-0.2, 0.0, 4.0, -3.0]),
                      {"gamma": 3.0, "lam": 1.0}))
    return cases


def _weights_strategy(penalty):
    from hypothesis import strategies as st

    vec = st.lists(st.floats(-3, 3, allow_nan=False) |
                   st.just(0.0), min_size=1, max_size=8).map(np.array)
    if penalty == "log":
        params = st.fixed_dictionaries({"eps": st.floats(1e-3, 1.0)})
    elif penalty == "lp":
        params = st.fixed_dictionaries({"p": st.floats(0.1, 0.9),
                                        "eps": st.floats(1e-4, 0.1)})
    else:
        params = st.fixed_dictionaries({"gamma": st.floats(1.1, 4.0),
                                        "lam": st.floats(0.1, 2.0)})
    return st.tuples(vec, params)


def check_reweighting_weights(fn, penalty="log", *,
                              max_examples=80) -> CheckResult:
    """Check ``fn(w, **params)``, the weights ``beta_j = g'(|w_j|)``.

    ``penalty`` is ``"log"`` (``fn(w, eps=...)``, ``g(u) = log(1 +
    u/eps)``), ``"lp"`` (``fn(w, p=..., eps=...)``, the smoothed ``g(u) =
    (u + eps)^p - eps^p``) or ``"mcp"`` (``fn(w, gamma=..., lam=...)``,
    Table II's MCP divided by ``lam``).  ``fn`` returns one weight per
    coefficient; the reference is
    :meth:`refimpl.nonconvex.ConcavePenalty.weights`.  Recognised
    mistakes: the penalty instead of its derivative, a missing epsilon,
    weights evaluated at ``w`` instead of ``|w|``, MCP's zero region or
    knee, the derivative of another penalty.

    Derived in: book/05_dc_reweighting.md#dc-reweighting
    """
    if penalty not in _PARAMS:
        raise ValueError(f"penalty must be one of {tuple(_PARAMS)}, "
                         f"got {penalty!r}")
    return run_checker(_weights_diagnose(fn, penalty),
                       adversarial=_weights_cases(penalty),
                       strategy=_weights_strategy(penalty),
                       max_examples=max_examples,
                       what=f"your {penalty} reweighting")


def _threshold_diagnose(fn):
    def diagnose(case):
        v, beta, step = case
        ref = WeightedL1(beta).prox(v, step)
        record(v=v.copy(), beta=beta.copy(), step=step, expected=ref)
        got = fn(v.copy(), beta.copy(), step)
        record(got=got)
        got = np.asarray(got, dtype=float)
        if got.shape != ref.shape:
            return (f"your result has shape {got.shape}, expected "
                    f"{ref.shape} (one coordinate per feature)")
        if _close(got, ref):
            return None
        au, sg = np.abs(v), np.sign(v)
        wrong = [
            ("the threshold must be step * beta_j: you left out the step",
             sg * np.maximum(au - beta, 0.0)),
            ("the threshold must be step * beta_j: you left out the weights "
             "beta_j", sg * np.maximum(au - step, 0.0)),
            ("negative coordinates are lost: soft-thresholding is sign(v) "
             "max(|v| - t beta, 0), not max(v - t beta, 0)",
             np.maximum(v - step * beta, 0.0)),
            ("that is hard thresholding (keep v_j when |v_j| > t beta_j); "
             "soft-thresholding also shrinks the survivors by t beta_j",
             np.where(au > step * beta, v, 0.0)),
            ("the shrinkage goes the wrong way: |v_j| grows by t beta_j "
             "instead of shrinking", sg * (au + step * beta)),
            ("the max(., 0) is missing: coordinates below the threshold "
             "change sign instead of becoming 0", sg * (au - step * beta)),
            ("the threshold is step * beta_j, not half of it (the prox of "
             "t beta|x| has no factor 1/2)",
             sg * np.maximum(au - step * beta / 2, 0.0)),
            ("the threshold is step * beta_j, not twice it",
             sg * np.maximum(au - 2 * step * beta, 0.0)),
        ]
        pos = beta > 0                    # step / beta_j: compare where defined
        if pos.any():
            div = sg * np.maximum(au - step / np.where(pos, beta, 1.0), 0.0)
            wrong.append(("the threshold is step * beta_j: you divide by "
                          "beta_j instead of multiplying",
                          np.where(pos, div, got)))
        named = only_match(wrong, lambda cand: _close(got, cand))
        if named:
            return named
        j = int(np.argmax(np.abs(got - ref)))
        return (f"coordinate {j} differs from sign(v) max(|v| - t beta, 0)"
                f" (v_j = {v[j]:.4g}, beta_j = {beta[j]:.4g})")
    return diagnose


def check_weighted_soft_threshold(fn, *, max_examples=80) -> CheckResult:
    """Check ``fn(v, beta, step)``, the prox of ``step * sum_j beta_j |w_j|``.

    The answer is ``sign(v_j) max(|v_j| - step beta_j, 0)``, the proximal
    step of every pass of Algorithm 2 (reference:
    :meth:`refimpl.penalties.WeightedL1.prox`).  Recognised mistakes: the
    step or the weights left out of the threshold, a threshold divided by
    the weights, halved or doubled, lost signs, hard thresholding, growth
    instead of shrinkage, a missing ``max(., 0)``.

    Derived in: book/05_dc_reweighting.md#dc-reweighting
    """
    from hypothesis import strategies as st

    adversarial = [
        (np.array([1.0, -2.0, 0.3, -0.05, 0.0]),
         np.array([0.5, 1.0, 0.0, 2.0, 1.0]), 0.4),
        (np.array([-3.0, 0.2, 5.0]), np.array([1.0, 10.0, 0.1]), 0.7),
    ]
    n = st.integers(1, 8)
    strategy = n.flatmap(lambda k: st.tuples(
        st.lists(st.floats(-5, 5), min_size=k, max_size=k).map(np.array),
        st.lists(st.floats(0, 3), min_size=k, max_size=k).map(np.array),
        st.floats(0.01, 2.0)))
    return run_checker(_threshold_diagnose(fn), adversarial=adversarial,
                       strategy=strategy, max_examples=max_examples,
                       what="your weighted soft-thresholding",
                       names=("v", "beta", "step"))
