"""Solvers: pure functions of an objective object, returning :class:`SolverResult`.

Solvers never see data.  A smooth solver such as :func:`tron` talks to the
objective only through ``fun(w)``, ``grad(w)`` and ``hess_vec(s)`` (see
:class:`refimpl.losses.SmoothObjective`), as LIBLINEAR's ``TRON`` talks to its
``function`` class.

A solver that meets a NaN or an infinity (objective, gradient or its norm,
gap, step) raises :class:`NonFiniteError`, naming the likely cause (the scale
of the features) and the remedy; it never reports convergence then.
"""

from ._finite import NonFiniteError
from ._result import SolverResult
from .apg import apg, hessian_matrix, lipschitz_constant
from .bdmm import BDMMResult, bdmm
from .fenchelrank import fenchelrank
from .liferank import LifeRankResult, fit_weights, liferank_solve
from .prox_newton import prox_newton
from .reweighted import dc_stationarity, reweighted_l1
from .stiefel import orthonormality_error, stiefel_gradient, stiefel_retraction
from .subgradient import projected_subgradient, truncated_gradient
from .tron import tron

__all__ = [
    "BDMMResult",
    "LifeRankResult",
    "NonFiniteError",
    "SolverResult",
    "apg",
    "bdmm",
    "dc_stationarity",
    "fenchelrank",
    "fit_weights",
    "hessian_matrix",
    "liferank_solve",
    "lipschitz_constant",
    "orthonormality_error",
    "projected_subgradient",
    "prox_newton",
    "reweighted_l1",
    "stiefel_gradient",
    "stiefel_retraction",
    "tron",
    "truncated_gradient",
]
