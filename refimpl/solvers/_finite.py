"""Non-finite quantities in a solver: detection, overflow-safe norms, messages.

A solver that meets a NaN or an infinity must stop with an error, never
report convergence: ``inf <= tol * inf`` is true, so a relative stopping test
such as TRON's ``||g|| <= tol ||g0||`` (Lee & Lin 2014, eq. 38) "holds" at
``w = 0`` when the gradient norm overflows, and the solver returns an
untouched iterate as converged.  Every solver of :mod:`refimpl.solvers`
therefore checks the quantities its stopping test uses (objective, gradient
or gradient-mapping norm, duality gap, step) with :func:`check_finite`, and
takes norms with :func:`safe_norm`, which overflows only when the norm itself
exceeds the largest double, not when its square does.

The usual cause is the scale of the features: the pairwise losses and their
derivatives grow with the first and second powers of ``|X|``, so features
of magnitude ``1e100`` overflow a Hessian product and ``1e160`` the squared
norm of a finite gradient.  The error message says so, with the largest
feature magnitude when the objective exposes its ``X``, and names the remedy.
"""

from __future__ import annotations

import math

import numpy as np

from ..exceptions import NonFiniteError
from ..losses._protocol import feature_magnitude

__all__ = [
    "NonFiniteError",
    "check_finite",
    "nonfinite_message",
    "safe_norm",
]


def nonfinite_message(solver, what, value=None, objective=None, where=""):
    """The text of a :class:`NonFiniteError`: what, cause and remedy."""
    shown = ""
    if value is not None:
        v = np.asarray(value)
        if v.ndim == 0:
            shown = f" ({float(v)!r})"
        else:
            n_bad = int(np.count_nonzero(~np.isfinite(v)))
            shown = f" ({n_bad} of {v.size} entries NaN or infinite)"
    m = feature_magnitude(objective) if objective is not None else None
    if m is None:
        cause = ("features (or a regularisation parameter) of extreme "
                 "magnitude")
    elif not math.isfinite(m):
        cause = "X itself contains NaN or infinite values"
    else:
        cause = (f"the scale of the features: X has entries of magnitude up to "
                 f"{m:.1e}, and the loss, its gradient and its Hessian grow "
                 f"like |X|, |X| and |X|^2")
    where = f" {where}" if where else ""
    return (
        f"{solver}: {what} is not finite{shown}{where}, so no stopping test can "
        f"be trusted. Likely cause: {cause}. Remedy: rescale X so that its "
        f"features are of order 1 (e.g. refimpl.data.query_level_normalize, "
        f"or sklearn.preprocessing.StandardScaler / MaxAbsScaler), or reduce "
        f"the regularisation weight if it is extreme."
    )


def check_finite(value, solver, what, objective=None, where=""):
    """Raise :class:`NonFiniteError` unless every entry of ``value`` is finite."""
    if isinstance(value, float):
        ok = math.isfinite(value)
    else:
        ok = bool(np.all(np.isfinite(value)))
    if not ok:
        raise NonFiniteError(nonfinite_message(solver, what, value, objective,
                                               where))
    return value


def safe_norm(v) -> float:
    """Euclidean norm of ``v`` without overflow of the intermediate squares.

    ``np.linalg.norm`` squares the entries (BLAS ``nrm2`` is scaled on some
    builds, not on others), so a vector of finite entries near ``1e160`` can
    have an infinite norm; here the entries are divided by their largest
    magnitude first.  The result is ``inf`` only when the norm itself exceeds
    the largest double, and NaN or inf when an entry is.
    """
    v = np.asarray(v, dtype=np.float64).ravel()
    if v.size == 0:
        return 0.0
    m = float(np.max(np.abs(v)))
    if m == 0.0 or not math.isfinite(m):
        return m if not np.any(np.isnan(v)) else math.nan
    if 1e-150 < m < 1e150:
        return float(np.linalg.norm(v))
    return m * float(np.linalg.norm(v / m))
