r"""Concave sparsity penalties ``Omega(w) = sum_j g(|w_j|)`` (Laporte et al. 2014, eq. 2).

Each penalty is a non-decreasing function ``g`` on ``[0, inf)`` with
``g(0) = 0``, concave there, so that

.. math::

    g(u) \le g(u_0) + g'(u_0)\,(u - u_0) \qquad (u, u_0 \ge 0),

the majorisation of their section IV-C.  Writing ``g(u) = u g'(0) - h(u)``
with ``h`` convex shows ``Omega`` is a difference of convex functions; the
reweighted-l1 scheme (their Algorithm 2, :func:`refimpl.solvers.reweighted_l1`)
minimises the majoriser, a weighted l1 problem with ``beta_j =
g'(|w_j^k|)`` (their eq. 13, Table II).

The penalties are scaled as in the paper's eq. 13 once both sides are
multiplied by ``C``: the objective is ``C ell(w) + sum_j g(|w_j|)`` (``ell``
the pairwise squared hinge, the paper's ``J_1``) and ``g'(0) = 1`` for the
l1-like start of MCP and SCAD.

* l1: ``g(u) = u``, ``g'(u) = 1``;
* log: ``g(u) = log(1 + u / eps)``, ``g'(u) = 1 / (eps + u)`` (Table II);
* lp: ``g(u) = (u + eps)^p - eps^p``, ``g'(u) = p (u + eps)^(p - 1)``;
* mcp: ``g(u) = u - u^2 / (2 gamma lam)`` up to ``gamma lam``, then
  ``gamma lam / 2``; ``g'(u) = max(1 - u / (gamma lam), 0)`` (Table II);
* scad: ``g(u) = u`` up to ``lam``, quadratic up to ``a lam``, then
  ``(a + 1) lam / 2``; ``g'(u) = 1``, then ``(a lam - u)_+ / ((a - 1) lam)``
  (Fan & Li 2001).

Numerical choices (explained in the chapter):

* Table II's ``lp`` derivative ``p u^(p-1)`` is infinite at ``u = 0``: a
  coefficient that reaches zero would get an infinite weight and could never
  return.  We use the standard smoothing ``(u + eps)^p`` with ``eps > 0``
  (default ``1e-3``), which bounds ``g'(0) = p eps^(p-1)``.
* The log penalty's weight at 0 is ``1 / eps`` (10 at the paper's
  ``eps = 0.1``), so ``eps`` sets how much harder a zero coefficient is to
  revive than in the first (l1) pass; ``eps`` is in the units of ``w``.
* In MCP and SCAD, ``lam`` is the regularisation level of eq. 13, ``lam =
  1 / C`` (the estimator sets it), as in Table II.

Derived in: book/05_dc_reweighting.md#dc-reweighting
"""

from __future__ import annotations

import math

import numpy as np

from .exceptions import DataError

__all__ = [
    "CONCAVE_PENALTIES",
    "MCP",
    "SCAD",
    "ConcavePenalty",
    "L1Concave",
    "LogPenalty",
    "LpPenalty",
    "make_concave_penalty",
]


def _check_param(value, name, *, low=0.0, high=math.inf, low_open=True, high_open=True):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise DataError(f"{name} must be a real number, got {value!r}") from None
    ok_low = value > low if low_open else value >= low
    ok_high = value < high if high_open else value <= high
    if not (math.isfinite(value) and ok_low and ok_high):
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        raise DataError(f"{name} must lie in {lo}{low:g}, {high:g}{hi}, got {value!r}")
    return value


def _abs_vector(w):
    u = np.abs(np.asarray(w, dtype=np.float64))
    if not np.all(np.isfinite(u)):
        raise DataError("w must be finite")
    return u


class ConcavePenalty:
    """Base class: ``value(w) = sum_j g(|w_j|)`` and ``weights(w) = g'(|w|)``.

    Subclasses define the elementwise ``g(u)`` and ``derivative(u)`` for
    ``u >= 0``.

    Derived in: book/05_dc_reweighting.md#dc-reweighting
    """

    name = "concave"

    def g(self, u):
        """``g(u)`` elementwise, ``u >= 0``."""
        raise NotImplementedError

    def derivative(self, u):
        """``g'(u)`` elementwise, ``u >= 0`` (right derivative at 0)."""
        raise NotImplementedError

    def value(self, w) -> float:
        """``Omega(w) = sum_j g(|w_j|)`` (eq. 2)."""
        return float(np.sum(self.g(_abs_vector(w))))

    def weights(self, w) -> np.ndarray:
        """The reweighting ``beta_j = g'(|w_j|)`` of eq. 13 / Algorithm 2 line 5."""
        return np.asarray(self.derivative(_abs_vector(w)), dtype=np.float64)

    def majorizer(self, w, w_ref) -> float:
        """``sum_j g(|w_ref_j|) + g'(|w_ref_j|) (|w_j| - |w_ref_j|)`` (section IV-C)."""
        u, u0 = _abs_vector(w), _abs_vector(w_ref)
        return float(np.sum(self.g(u0) + self.derivative(u0) * (u - u0)))


class L1Concave(ConcavePenalty):
    """``g(u) = u``: the lasso as the (trivially concave) member of the family.

    Reweighting with it keeps ``beta = 1``, so Algorithm 2 stops after one
    pass at the RankSVM-l1 solution.

    Derived in: book/05_dc_reweighting.md#dc-reweighting
    """

    name = "l1"

    def g(self, u):
        return np.asarray(u, dtype=np.float64)

    def derivative(self, u):
        return np.ones_like(np.asarray(u, dtype=np.float64))

    def __repr__(self):
        return "L1Concave()"


class LogPenalty(ConcavePenalty):
    """Log penalty ``g(u) = log(1 + u / eps)``, ``g'(u) = 1 / (eps + u)`` (Table II).

    Derived in: book/05_dc_reweighting.md#dc-reweighting

    Parameters
    ----------
    eps : float, default 0.1
        Smoothing (> 0), in the units of ``w``; the paper's value.
    """

    name = "log"

    def __init__(self, eps=0.1):
        self.eps = _check_param(eps, "eps")

    def g(self, u):
        return np.log1p(np.asarray(u, dtype=np.float64) / self.eps)

    def derivative(self, u):
        return 1.0 / (self.eps + np.asarray(u, dtype=np.float64))

    def __repr__(self):
        return f"LogPenalty(eps={self.eps!r})"


class LpPenalty(ConcavePenalty):
    """Smoothed l_p pseudo-norm, ``g(u) = (u + eps)^p - eps^p``, ``0 < p < 1``.

    Table II's derivative ``p u^(p-1)`` is the ``eps -> 0`` limit; it is
    infinite at 0, so the smoothing is what lets a zeroed coefficient
    re-enter (``g'(0) = p eps^(p-1)``, 15.8 at the defaults).

    Derived in: book/05_dc_reweighting.md#dc-reweighting

    Parameters
    ----------
    p : float, default 0.5
        Exponent in ``(0, 1)``; the paper reports ``p = 0.5``.
    eps : float, default 1e-3
        Smoothing (> 0).
    """

    name = "lp"

    def __init__(self, p=0.5, eps=1e-3):
        self.p = _check_param(p, "p", low=0.0, high=1.0)
        self.eps = _check_param(eps, "eps")

    def g(self, u):
        u = np.asarray(u, dtype=np.float64)
        return (u + self.eps) ** self.p - self.eps ** self.p

    def derivative(self, u):
        return self.p * (np.asarray(u, dtype=np.float64) + self.eps) ** (self.p - 1.0)

    def __repr__(self):
        return f"LpPenalty(p={self.p!r}, eps={self.eps!r})"


class MCP(ConcavePenalty):
    """Minimax concave penalty (Zhang 2010) divided by ``lam``, as in Table II.

    ``g'(u) = max(1 - u / (gamma lam), 0)``: l1 near 0, no penalty growth
    (so no shrinkage bias) beyond ``gamma lam``.

    Derived in: book/05_dc_reweighting.md#dc-reweighting

    Parameters
    ----------
    gamma : float, default 2.0
        Concavity (> 0); the paper's value.
    lam : float, default 1.0
        Regularisation level (> 0); :class:`refimpl.estimators.SparseRankSVM` sets
        ``lam = 1 / C`` as in eq. 13.
    """

    name = "mcp"

    def __init__(self, gamma=2.0, lam=1.0):
        self.gamma = _check_param(gamma, "gamma")
        self.lam = _check_param(lam, "lam")

    def g(self, u):
        u = np.asarray(u, dtype=np.float64)
        t = self.gamma * self.lam
        return np.where(u <= t, u - u * u / (2.0 * t), 0.5 * t)

    def derivative(self, u):
        u = np.asarray(u, dtype=np.float64)
        return np.maximum(1.0 - u / (self.gamma * self.lam), 0.0)

    def __repr__(self):
        return f"MCP(gamma={self.gamma!r}, lam={self.lam!r})"


class SCAD(ConcavePenalty):
    """Smoothly clipped absolute deviation (Fan & Li 2001) divided by ``lam``.

    ``g'(u) = 1`` for ``u <= lam``, ``(a lam - u)_+ / ((a - 1) lam)`` beyond.

    Derived in: book/05_dc_reweighting.md#dc-reweighting

    Parameters
    ----------
    a : float, default 3.7
        Shape (> 2); Fan & Li's value.
    lam : float, default 1.0
        Regularisation level (> 0), ``1 / C`` in the estimator.
    """

    name = "scad"

    def __init__(self, a=3.7, lam=1.0):
        self.a = _check_param(a, "a", low=2.0)
        self.lam = _check_param(lam, "lam")

    def g(self, u):
        u = np.asarray(u, dtype=np.float64)
        a, lam = self.a, self.lam
        mid = (2.0 * a * lam * u - u * u - lam * lam) / (2.0 * (a - 1.0) * lam)
        return np.where(u <= lam, u, np.where(u <= a * lam, mid, 0.5 * (a + 1.0) * lam))

    def derivative(self, u):
        u = np.asarray(u, dtype=np.float64)
        a, lam = self.a, self.lam
        return np.where(u <= lam, 1.0, np.maximum(a * lam - u, 0.0) / ((a - 1.0) * lam))

    def __repr__(self):
        return f"SCAD(a={self.a!r}, lam={self.lam!r})"


#: name -> class of the concave penalties Algorithm 2 accepts.
CONCAVE_PENALTIES = {"l1": L1Concave, "log": LogPenalty, "lp": LpPenalty, "mcp": MCP,
                     "scad": SCAD}


def make_concave_penalty(name, *, C=1.0, eps=None, p=0.5, gamma=2.0, a=3.7, lam=None):
    """Build the concave penalty ``name`` with the paper's defaults.

    ``lam`` defaults to ``1 / C`` for MCP and SCAD (eq. 13); ``eps``
    defaults to 0.1 for the log penalty (the paper) and 1e-3 for ``lp``.

    Derived in: book/05_dc_reweighting.md#dc-reweighting

    Raises
    ------
    DataError
        Unknown name or a parameter out of range.
    """
    if not isinstance(name, str) or name not in CONCAVE_PENALTIES:
        raise DataError(f"penalty must be one of {tuple(CONCAVE_PENALTIES)}, got {name!r}")
    C = _check_param(C, "C")
    lam = 1.0 / C if lam is None else lam
    if name == "log":
        return LogPenalty(eps=0.1 if eps is None else eps)
    if name == "lp":
        return LpPenalty(p=p, eps=1e-3 if eps is None else eps)
    if name == "mcp":
        return MCP(gamma=gamma, lam=lam)
    if name == "scad":
        return SCAD(a=a, lam=lam)
    return L1Concave()
