"""Solvers: pure functions of an objective object, returning :class:`SolverResult`.

Solvers never see data.  They talk to the objective through the loss
protocol of ``refimpl.losses._protocol``: ``fun(w)``, ``grad(w)`` and
``hess_vec(s)`` under LIBLINEAR's caching contract
(:class:`refimpl.losses.SmoothObjective`; the objective, gradient and
generalised Hessian of Lee & Lin 2014, eqs. 9-11), as LIBLINEAR's ``TRON``
talks to its ``function`` class, and the optional capabilities of
``refimpl.losses.CAPABILITIES``, which each solver asks for with
:func:`refimpl.losses.capability` and replaces by its generic path when
the objective does not offer them:

* :func:`tron`: ``score_reuse`` (trial points evaluated from their
  scores); without it, ``fun`` at the trial point;
* :func:`prox_newton`: ``dense_hessian`` (the matrix of eq. 11 for the
  coordinate-descent subproblem); without it, ``n_features`` Hessian-vector
  products (:func:`hessian_matrix`);
* :func:`fenchelrank`: ``score_space`` (the scores carried along the
  steps of eqs. 18-21, with the exact step on them); without it, ``fun``,
  ``grad`` and ``hess_vec`` at each point, with safeguarded Newton for the
  step.  Its ``"pairs"`` and ``"blocks"`` line searches and closed-form
  step also read the members of
  :class:`refimpl.losses.PairwiseLineSearchObjective` the loss has.

No solver tests a loss's class or reads its ``X``, labels, query groups or
backend: what is specific to a loss lives in :mod:`refimpl.losses`, behind
a capability.  ``tests/test_solver_protocol.py`` runs every solver on a
quadratic that holds no data.

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
