"""The interfaces the objectives offer to the solvers: the loss protocol.

A solver of :mod:`refimpl.solvers` sees an objective through two things
only, and never reads its data (no ``X``, labels, query groups or backend
internals):

*Declared methods* (:class:`SmoothObjective`): ``n_features``, ``fun(w)``,
``grad(w)`` and ``hess_vec(s)`` under LIBLINEAR's caching contract.  Every
solver works with these alone; that is its *generic path*.

*Optional capabilities*: an objective may offer more, each under a name of
:data:`CAPABILITIES`, as an attribute whose value is the capability (an
object implementing it, or ``True`` when its methods live on the objective
itself) or a false value (``None``, ``False``) when it cannot offer it in its
present configuration (e.g. a backend without pair arrays).  A solver asks
with :func:`capability`, once, when it is about to use it (reading the
attribute may allocate), and takes its generic path when the answer is
``None``: the capability changes the cost of a step, never the problem
solved.  A wrapper (:class:`~refimpl.losses.ScaledSmooth`,
:class:`~refimpl.losses.L2Regularized`) passes on what it can transform
and hides the rest.

Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

#: The optional capabilities of the loss protocol, by name: who uses each,
#: what its value offers, and the generic path without it.
CAPABILITIES = {
    "score_reuse": (
        "refimpl.solvers.tron: True when the objective's hess_vec_scores(s) "
        "-> (H s, X s), last_scores(), fun_from_scores(w, z) and "
        "accept_trial(w) let a trial point be evaluated from its scores "
        "(Lee & Lin 2014, section 4.1); without: fun at the trial point"),
    "dense_hessian": (
        "refimpl.solvers.prox_newton: an object whose at(w) is the dense "
        "generalised Hessian at w (Lee & Lin 2014, eq. 11; the array may "
        "be the previous call's: copy to change it) and scaled(c) that "
        "Hessian times c; without: n_features Hessian-vector products "
        "(refimpl.solvers.hessian_matrix)"),
    "score_space": (
        "refimpl.solvers.fenchelrank: the scores z of the iterates carried "
        "along the steps of the l1-ball Frank-Wolfe methods (Lai et al. "
        "2013, eqs. 18-21): value and gradient from z, columns of the step's "
        "image u, Hessian blocks, and the exact step on z + t u; without: "
        "fun, grad and hess_vec at w with safeguarded Newton on the step"),
    "pair_blocks": (
        "refimpl.solvers.fenchelrank (line_search='blocks'): the pairs as "
        "contiguous runs of the label-block layout with the compiled passes "
        "of Algorithm 1 over them (evaluate, run); without: the 'pairs' "
        "line search on the score_space, or the generic path"),
}


def capability(objective, name):
    """The capability ``name`` of :data:`CAPABILITIES` that ``objective`` offers, or None.

    ``None`` when the objective has no attribute ``name`` or its value is
    false (``None``, ``False``): then the solver takes its generic path.
    """
    if name not in CAPABILITIES:
        raise ValueError(f"unknown capability {name!r}: one of {tuple(CAPABILITIES)}")
    value = getattr(objective, name, None)
    if value is None or value is False:
        return None
    return value


@runtime_checkable
class SmoothObjective(Protocol):
    """A twice (generalised-)differentiable function of ``w``.

    The contract is LIBLINEAR's (``tron.h``): the solver calls ``fun(w)``,
    then ``grad(w)`` at the same ``w``, then any number of ``hess_vec(s)``,
    so the objective may cache the scores and the active pairs between calls.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """

    n_features: int

    def fun(self, w: np.ndarray) -> float: ...

    def grad(self, w: np.ndarray) -> np.ndarray: ...

    def hess_vec(self, s: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class PairwiseLineSearchObjective(SmoothObjective, Protocol):
    """What FenchelRank's exact line search asks of a pairwise loss, and no more.

    Beyond :class:`SmoothObjective`: the margin ``delta`` and whether the
    loss is a mean over its ``n_pairs`` pairs (eq. 4 of Lai et al. 2013
    needs both), the document scores ``X w``, the explicit pair indices when
    the loss keeps them (for the O(p log p) exact line search), the rows in
    the label-block layout (for Algorithm 1 without index arrays) and, without
    explicit pairs, the curvature ``b -> ||K b||^2`` of the closed-form step.  A solver
    never reads the loss's data.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """

    margin: float
    normalize: bool
    n_pairs: int

    def scores(self, w: np.ndarray) -> np.ndarray: ...

    def pair_indices(self) -> tuple[np.ndarray, np.ndarray] | None: ...

    def pair_norm2_operator(self) -> Callable[[np.ndarray], float]: ...

    def label_blocks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                    np.ndarray] | None: ...


#: Attributes followed, depth first, to find the feature matrix of an
#: objective (``RegularizedLoss.loss``, ``ScaledSmooth.smooth``,
#: ``LiftedLoss.base``, ``LifeRankObjective.loss``, ...).
_CHILDREN = ("X", "loss", "smooth", "base", "objective", "problem", "inner")


def _find_X(obj, depth=0):
    if obj is None or depth > 4:
        return None
    X = getattr(obj, "X", None)
    if X is not None and (sp.issparse(X) or isinstance(X, np.ndarray)):
        return X
    for name in _CHILDREN[1:]:
        child = getattr(obj, name, None)
        if child is not None and child is not obj:
            found = _find_X(child, depth + 1)
            if found is not None:
                return found
    return None


def feature_magnitude(obj):
    """Largest ``|X_ij|`` of the data behind ``obj``, or None if not found.

    For the text of a :class:`~refimpl.exceptions.NonFiniteError` only (a
    huge feature scale is the usual cause of an overflow): the one place
    where the data behind an objective is looked at on a solver's behalf,
    kept here so that the solvers never read it.
    """
    X = _find_X(obj)
    return None if X is None else _max_abs(X)


def _max_abs(X):
    data = X.data if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    if data.size == 0:
        return 0.0
    with np.errstate(invalid="ignore"):
        return float(np.max(np.abs(data)))
