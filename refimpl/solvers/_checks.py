"""Argument checks shared by several solvers (private)."""

from __future__ import annotations

import math

import numpy as np

from ..exceptions import ParameterError
from ._finite import check_finite


def check_int(value, name, minimum):
    """``value`` as an int ``>= minimum`` (``bool`` refused), else :class:`ParameterError`.

    The estimators' constraints say the same in scikit-learn's words; one
    mistake raises one exception type at every layer.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or value < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_choice(value, name, allowed, error=ValueError):
    """``value`` if it is one of ``allowed``, else ``error`` naming ``name`` and the choices."""
    if value not in allowed:
        raise error(f"{name} must be one of {allowed}, got {value!r}")
    return value


def check_budget(max_iter, tol):
    """``(max_iter, tol)`` as an int ``>= 1`` and a finite float ``>= 0``.

    ``tol=None`` (no tolerance) passes through; anything else raises
    :class:`ParameterError` naming the parameter, as the estimators do
    (``max_iter=True`` and ``max_iter=0`` are refused at both layers).
    """
    if tol is not None:
        if isinstance(tol, bool):
            raise ParameterError(f"tol must be a finite number >= 0, got {tol!r}")
        try:
            tol = float(tol)
        except (TypeError, ValueError):
            raise ParameterError(
                f"tol must be a finite number >= 0, got {tol!r}") from None
        if not (tol >= 0 and math.isfinite(tol)):
            raise ParameterError(f"tol must be finite and >= 0, got {tol!r}")
    return check_int(max_iter, "max_iter", 1), tol


def initial_point(w0, n, solver, objective):
    """The starting iterate: zeros for ``w0=None``, else a finite copy of shape ``(n,)``."""
    if w0 is None:
        return np.zeros(n)
    w = np.array(w0, dtype=np.float64, copy=True)
    if w.shape != (n,):
        raise ValueError(f"w0 must have shape ({n},), got {w.shape}")
    check_finite(w, solver, "w0", objective)
    return w


def check_fenchel_loss(loss, r):
    """Check that ``loss`` is a smooth objective and, if it declares them, eq. 4's.

    A loss with ``margin`` and ``normalize`` (the squared hinge) must be
    the mean squared hinge with margin ``1/r``; any other objective with
    ``fun``, ``grad``, ``hess_vec`` and ``n_features`` is taken as the
    ``ell`` of ``G = r^2 ell`` as given.

    Parameters
    ----------
    loss : SmoothObjective
    r : float
        Radius of the l1 ball of eq. 3 (> 0).

    Returns
    -------
    float
        ``r`` as a float.

    Raises
    ------
    ValueError
        If ``r`` is not a positive finite number, ``loss`` lacks one of
        ``fun``, ``grad``, ``hess_vec``, ``n_features``, or ``loss.normalize``
        is not true or ``loss.margin`` differs from ``1/r`` (relative 1e-12).

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """
    try:
        r = float(r)
    except (TypeError, ValueError):
        raise ValueError(f"r must be a positive number, got {r!r}") from None
    if not (math.isfinite(r) and r > 0):
        raise ValueError(f"r must be a positive finite number, got {r!r}")
    for attr in ("fun", "grad", "hess_vec", "n_features"):
        if not hasattr(loss, attr):
            raise ValueError(
                "loss must be a smooth objective (refimpl.losses.SmoothObjective, "
                f"e.g. PairwiseSquaredHinge); it has no attribute {attr!r}"
            )
    if hasattr(loss, "normalize") and not loss.normalize:
        raise ValueError(
            "FenchelRank's G(w) = (r^2/p) sum max(0, 1/r - w^T(x_i - x_j))^2 "
            "(eq. 4) is a mean over pairs: build the loss with normalize=True"
        )
    if hasattr(loss, "margin") and abs(loss.margin * r - 1.0) > 1e-12:
        raise ValueError(
            f"loss.margin must be 1/r = {1.0 / r!r} for eq. 4, got "
            f"{loss.margin!r}: build PairwiseSquaredHinge(..., margin=1/r)"
        )
    return r
