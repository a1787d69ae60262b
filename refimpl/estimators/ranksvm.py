"""RankSVM: the L2-loss linear RankSVM trained by TRON (Lee & Lin 2014)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from .._compat.sklearn_params import StrOptions
from .._validation import PAIR_SUPPORT_MIN_SHARE, check_fit_input, reset_fitted
from ..losses import L2Regularized, PairwiseSquaredHinge
from ..losses.squared_hinge import BACKENDS
from ..pairs import PAIR_SETS
from ..solvers._finite import safe_norm
from ..solvers.tron import tron
from ._base import (
    ITERATIONS,
    POSITIVE,
    WEIGHT_RANGE,
    LinearRanker,
    _check_at_most,
    _on_all_columns,
    options,
    squared_hinge_memory,
    _warn_empty,
)

#: Structures of the tree backend (see :class:`refimpl.losses.PairwiseSquaredHinge`).
TREE_METHODS = ("selection_tree", "avl", "direct", "prsvm")

__all__ = ["RankSVM"]


class RankSVM(LinearRanker):
    """L2-regularised, L2-loss linear RankSVM trained by TRON (Lee & Lin 2014).

    Minimises eq. 3 of Lee & Lin (2014),

    .. math::

        f(w) = \\tfrac12 w^T w
            + C \\sum_{(i, j) \\in P} \\max(0, 1 - w^T (x_i - x_j))^2,

    with no division by the number of pairs, so the paper's selected values
    of ``C`` carry over.  The solver is the trust-region Newton method of
    section 4.1 with ``w^0 = 0`` and the stopping rule
    ``||grad f(w)|| <= tol * ||grad f(0)||`` (eq. 38).

    **Scale.**  Eq. 38 is as scale-equivariant as the problem: on
    ``(s X, C / s^2)`` (``s > 0``) the objective at ``u = w / s`` is
    ``f(w) / s^2`` and its gradient ``grad f(w) / s``, so the minimiser is
    ``w* / s`` and eq. 38 holds at ``u`` iff at ``w`` (TRON's iterates map
    alike).  At a fixed ``C`` there is no such map (``||w||^2 / 2`` is not
    scale invariant): features of scale ``R`` pose the problem of scale 1
    at ``C R^2``, worse conditioned, and TRON also stops, with
    ``converged_`` false, when neither the actual nor the predicted
    reduction exceeds ``1e-12 |f|`` (book/07_ranksvm_ostree.md, eq-stop).

    Parameters
    ----------
    C : float, default 1.0
        Loss weight (> 0).
    loss : {"l2"}, default "l2"
        The squared hinge; the L1 hinge is not differentiable and TRON
        needs a gradient, as the paper explains.
    tol : float, default 1e-3
        ``epsilon_s`` of eq. 38.
    max_iter : int, default 1000
        Maximum number of Newton (outer) iterations.
    backend : {"auto", "pairs", "numpy", "tree"}, default "auto"
        How the loss is evaluated; see
        :class:`refimpl.losses.PairwiseSquaredHinge`.
    tree_method : {"selection_tree", "avl", "direct", "prsvm"}
        Structure of the tree backend.
    pairs : {"all", "adjacent"}, default "all"
        ``"adjacent"`` trains on pairs of adjacent relevance levels only
        (section 5).
    verbose : bool, default False
        Print one line per TRON iteration.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    n_iter_ : int
        Newton iterations.
    history_ : dict of ndarray
        Per iteration: objective ``f``, gradient norm ``gnorm``, cumulative
        CG iterations ``cg_iter``, trust-region radius ``delta``, ``time``.
    converged_ : bool
    backend_ : str
        The backend actually used (``"auto"`` resolved).

    See Also
    --------
    refimpl.estimators.SparseRankSVM : the same loss with an l1 or a concave penalty.
    refimpl.estimators.FenchelRank : the same loss in an l1 ball (sparse).
    refimpl.losses.PairwiseSquaredHinge : the loss and its backends.

    Examples
    --------
    >>> from refimpl.data import make_synthetic_letor
    >>> data = make_synthetic_letor(n_queries=30, seed=0)
    >>> X, y, qid = data.X, data.y, data.qid
    >>> from refimpl.estimators import RankSVM
    >>> model = RankSVM(C=1.0).fit(X, y, qid)
    >>> model.coef_.shape
    (30,)
    >>> model.score(X, y, qid) > 0.8          # mean NDCG on the training queries
    True

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """

    _extreme_ranges: ClassVar[dict] = {"C": WEIGHT_RANGE}
    _parameter_constraints: ClassVar[dict] = {
        "C": [POSITIVE],
        "loss": [StrOptions({"l2"})],
        "tol": [POSITIVE],
        "max_iter": [ITERATIONS],
        "backend": options(BACKENDS),
        "tree_method": options(TREE_METHODS),
        "pairs": options(PAIR_SETS),
        "verbose": ["boolean"],
    }

    def __init__(self, C=1.0, loss="l2", tol=1e-3, max_iter=1000,
                 backend="auto", tree_method="selection_tree", pairs="all",
                 verbose=False):
        self.C = C
        self.loss = loss
        self.tol = tol
        self.max_iter = max_iter
        self.backend = backend
        self.tree_method = tree_method
        self.pairs = pairs
        self.verbose = verbose

    def estimate_memory(self, *, n_docs, n_pairs, n_features, max_query, grouped=True,
                        n_levels=None):
        """Memory of a fit on data of this shape: the squared hinge's.

        The scale guard's question (:class:`~refimpl.estimators.MemoryEstimate`;
        ``n_pairs``: preference pairs, ``max_query``: documents of the
        longest query, ``grouped``: each query's rows adjacent).
        """
        model = squared_hinge_memory(
            n_docs=n_docs, n_pairs=n_pairs, n_features=n_features, grouped=grouped,
            n_levels=n_levels, backend=self.backend, which=self.pairs)
        # _fit's problem.pair_support(): a restricted copy of X, at most
        # (1 - PAIR_SUPPORT_MIN_SHARE) of it (smaller ones are not made), made
        # as X[rows] then its kept columns, two at once, before the loss
        # allocates: c + max(c, loss) bounds both moments
        copy = int((1.0 - PAIR_SUPPORT_MIN_SHARE) * n_docs * n_features * 8)
        loss = sum(model.terms.values())
        model.terms["pair-support copy"] = copy + max(0, copy - loss)
        return model

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``.

        Warns with :class:`~refimpl.exceptions.EmptyModelWarning` if every
        weight is zero, which for ``C > 0`` happens only when the loss
        gradient at ``w = 0`` vanishes.
        """
        reset_fitted(self)
        self._validate_params()
        problem = check_fit_input(self, X, y, qid)
        with self._blaming(problem.X):
            return self._fit(problem, stacklevel=4)

    def _fit(self, problem, stacklevel=3):
        """:meth:`fit` on a validated :class:`~refimpl._validation.RankingProblem`.

        Also the second stage of :class:`_TwoStage`, on the columns it
        selected, so that the data are checked and grouped once per fit.
        """
        # (the documents without a pair and the features that are 0 on the
        # others have a zero gradient: TRON solves without them)
        support, columns = problem.pair_support()
        loss = PairwiseSquaredHinge(support, backend=self.backend,
                                    tree_method=self.tree_method,
                                    which=self.pairs)
        objective = L2Regularized(loss, self.C)
        result = tron(objective, tol=self.tol, max_iter=self.max_iter,
                      verbose=self.verbose)
        if not np.all(np.isfinite(result.w)):
            raise FloatingPointError("RankSVM produced non-finite coefficients")
        self.coef_ = _on_all_columns(result.w, columns, problem.n_features)
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.history_ = result.as_arrays()
        self.backend_ = loss.backend
        self.objective_ = result.history["f"][-1]
        if not np.any(self.coef_):
            # the quantity the message names, evaluated where it is defined
            # (w = 0, the iterate the solver stopped at), not read back from
            # a history whose first entry a solver could record differently
            g0 = safe_norm(objective.grad(np.zeros(objective.n_features)))
            _warn_empty(
                self,
                "no value of C empties an l2-regularised RankSVM: w = 0 is its "
                "minimiser only when the gradient at w = 0 vanishes (the pairs' "
                f"differences cancel); here ||grad f(0)|| = {g0:.6g}"
                + ("" if g0 == 0 else
                   f", so the solver stopped at w = 0 before a minimiser "
                   f"(converged_ = {self.converged_}): check the feature scale"),
                parameter="C", value=float(self.C), stacklevel=stacklevel)
        return self


#: Stopping tolerance of the second stage of GAS-E and FSMSVM.  Tight, not
#: RankSVM's default 1e-3: the number of features ``t`` is selected by
#: validation MAP over these fits, whose late digits the BLAS kernel sets
#: when they stop early.  On MQ2008, FSMSVM selected a different ``t`` on
#: three folds at 1e-3; at 1e-4 the same ``t`` with test MAPs 3e-3 apart
#: (Haswell against Sandybridge kernels); at 1e-6 the same ``t`` but, on
#: Fold 3, test mean NDCGs 1e-3 apart (Haswell against SkylakeX, or with
#: and without the pair support).  At 1e-8 every fit of the runner's two
#: grids gives the same test metrics to the last digit under both kernels,
#: for about 5 % more time (the runner's grids: GAS-E 6.7 s, FSMSVM 5.2 s).
SECOND_STAGE_TOL = 1e-8

#: Eq. 38's tolerance at which the second stage counts as converged when
#: TRON stops before ``SECOND_STAGE_TOL``, within ``max_iter``, because no
#: further reduction of ``f`` is measurable in double precision (the stop
#: of :func:`~refimpl.solvers.tron.tron` at ``1e-12 |f|``): the registry's
#: RankSVM tolerance.  Both rules are relative gradient norms, hence
#: invariant under ``(X, C) -> (s X, C / s^2)`` (see :class:`RankSVM`).
#: Such stops are common: 28 of the 80 GAS-E and FSMSVM fits of the
#: committed MQ2008 run (``results/MQ2008/tasks.csv``) stop there after
#: 7-38 iterations, and on raw MSLR-shaped features (R about 1e5, 1,000
#: queries, GAS-E at t = 25) TRON stops at ``||g|| / ||g0|| = 7.5e-8``,
#: having passed 1e-6; the 1e-8 rule alone called all of them unconverged.
SECOND_STAGE_CERTIFIED_TOL = 1e-4


class _TwoStage(LinearRanker):
    """A feature selection, then :class:`RankSVM` on the selected columns (GAS-E, FSMSVM).

    The RankSVM stage stops at ``tol = SECOND_STAGE_TOL`` (1e-8), or earlier
    where double precision resolves no further reduction of ``f``;
    ``converged_`` is eq. 38 at 1e-8, or, for such an early stop within
    ``max_iter``, at ``SECOND_STAGE_CERTIFIED_TOL`` (1e-4).
    """

    def _check_fit(self, X, y, qid):
        """``(problem, t)``: the validated data and ``t`` the number of features to select."""
        reset_fitted(self)
        self._validate_params()
        problem = check_fit_input(self, X, y, qid)
        t = _check_at_most(
            self, "n_features_to_select",
            self.n_features_to_select, problem.n_features,
            "the number of features")
        return problem, t

    def _fit_ranksvm_on(self, problem, selected):
        """The second stage: RankSVM on the columns ``selected``.

        Fitted on ``problem`` restricted to them, without checking or
        grouping the data again; ``n_features_in_`` and ``n_queries_in_``
        of the inner model are those a ``fit`` on ``X[:, selected]`` records.
        """
        svm = RankSVM(C=self.C, tol=SECOND_STAGE_TOL)
        svm._validate_params()
        svm.n_features_in_ = len(selected)
        svm.n_queries_in_ = problem.n_queries
        svm._fit(problem.with_columns(selected))
        coef = np.zeros(problem.n_features)
        coef[selected] = svm.coef_
        self.coef_ = coef
        self.selected_ = selected
        self.ranksvm_ = svm
        self.n_iter_ = svm.n_iter_
        gnorm = svm.history_["gnorm"]
        self.converged_ = bool(svm.converged_ or (
            svm.n_iter_ < svm.max_iter
            and gnorm[-1] <= SECOND_STAGE_CERTIFIED_TOL * gnorm[0]))
        self.history_ = svm.history_
        return self
