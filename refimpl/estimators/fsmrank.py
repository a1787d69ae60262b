"""FSMRank and its two-stage baseline FSMSVM (Lai, Pan, Tang & Yu 2013)."""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from .._validation import (
    check_fit_input,
    reset_fitted,
)
from ..exceptions import ParameterError
from ..features import pearson_importance, pearson_similarity
from ..losses import FSMRankSmooth, LiftedLoss, PairwiseSquaredHinge
from ..losses.lifted import (
    PSD_MODES,
    convexify_similarity,
    lift_importance,
    lift_similarity,
)
from ..losses.squared_hinge import BACKENDS
from ..penalties import NonNegWeightedL1
from ..solvers.apg import NEMIROVSKI_EXPONENT, apg
from ._base import (
    COUNT,
    ITERATIONS,
    NONNEGATIVE,
    POSITIVE,
    WEIGHT_RANGE,
    LinearRanker,
    _grad_at_zero,
    options,
    squared_hinge_memory,
    stage_params,
    _warn_empty,
)
from .ranksvm import RankSVM, _TwoStage

__all__ = ["FSMSVM", "FSMRank"]


_IMPORTANCES = ("pearson", "uniform")
#: ``stop=`` of :class:`FSMRank`: the relative change of Section III-C,
#: :func:`refimpl.solvers.apg`'s gradient mapping, or the paper's fixed T.
FSMRANK_STOPS = ("relative_change", "gradient_mapping", "max_iter")
_SIMILARITIES = ("pearson", "identity")


def _pearson_bytes(n_docs, n_features):
    """Pearson statistics (``features._scaled_columns_stats``): ``|X|`` for the
    column scales, then ``X / scale`` (raw columns) beside its centred copy,
    two of ``X``'s size at once; the lifted 2d problem, O(d^2)."""
    return 2 * n_docs * n_features * 8 + 16 * n_features ** 2 * 8


#: :class:`FSMRank` solves eq. 2 in ``u`` with ``w = D u``, ``D_j = 1 /
#: max|x_j|``, when a column of a dense ``X`` exceeds this in absolute
#: value (see :func:`_column_scales`).
SCALE_ABOVE = 1.0


def _column_scales(X):
    """``D`` with ``D_j = 1 / max(1, max_i |x_ij|)``, or None when every ``|x_ij| <= 1``.

    Raw features (MSLR-WEB10K's counts and lengths reach 1e5) make eq. 2
    so ill-conditioned that FISTA with Theorem 1's step, which is only an
    upper bound, barely moves (on the MSLR-shaped set ``L`` never leaves
    its start ``L0 / 2**10`` and the objective still falls by 1e-4 per
    iteration after 1,500 of them).  The change of variables ``w = D u``
    leaves eq. 1 the same problem (``X D``, ``D A D``, weights ``lambda2
    D_j / s_j``; Pearson's ``s`` and ``A`` do not depend on column scales)
    with columns in ``[-1, 1]``.  LETOR 4.0's features already are
    (query-level normalised), so there ``D`` is None and nothing changes.
    Sparse ``X``: None (scaling would copy it).
    """
    if sp.issparse(X):
        return None
    top = np.max(np.abs(X), axis=0, initial=0.0)
    if not np.any(top > SCALE_ABOVE):
        return None
    return 1.0 / np.maximum(top, 1.0)


class FSMRank(LinearRanker):
    """FSMRank: similarity- and importance-penalised sparse ranking (Lai et al. 2013).

    Solves eq. 1 of Lai, Pan, Tang & Yu (2013),

    .. math::

        \\min_{\\hat w} \\frac{\\lambda_1}{2} \\hat w^T \\hat A \\hat w
            + \\lambda_2 \\sum_i \\frac{|\\hat w_i|}{\\hat s_i}
            + \\frac1p \\sum_{(i, j) \\in P} \\max(0, 1 - \\hat w^T (x_i - x_j))^2,

    through its non-negative 2d-dimensional form eq. 2 (``X2 = [X, -X]``,
    ``A2 = [[A, -A], [-A, A]]``, ``s2 = [s, s]``, see
    :mod:`refimpl.losses.lifted` for why this ``A2``) by Algorithm 1: FISTA with
    the closed-form projection step (eq. 3), "Nemirovski's line search"
    started at ``L0 / 2**10`` with ``L0`` Theorem 1's bound, and the
    stopping rule ``|F(w_t) - F(w_{t-1})| <= tol |F(w_{t-1})|``.
    ``coef_ = w^+ - w^-``.

    If ``A`` is not positive semidefinite (``|PC|`` matrices often are
    not), eq. 1 is not convex; by default (``psd="project"``) ``A`` is
    replaced by its nearest PSD matrix, with a ``UserWarning``.

    Parameters
    ----------
    lambda1 : float, default 1.0
        Weight of the similarity term (>= 0).
    lambda2 : float, default 1e-3
        Weight of the importance-weighted l1 term (>= 0).  Every weight
        vanishes for ``lambda2 >= max_i s_i |grad_i f(0)|`` (0.15 on MQ2008
        Fold 1, 0.19 on the default synthetic data), whatever ``lambda1``;
        the default is the middle of the runner's grid (1e-4 to 1e-2).
    importance : {"pearson", "uniform"}, default "pearson"
        ``s_i = |PC(h_i, y)|`` (floored at
        ``refimpl.features.IMPORTANCE_FLOOR``), or ``s = 1`` (Table III's
        ``S^1``).
    similarity : {"pearson", "identity"}, default "pearson"
        ``A_ij = |PC(h_i, h_j)|``, or ``A = I`` (the ablation of Section
        IV-D3).
    psd : {"project", "ignore", "raise"}, default "project"
        What to do with a non-PSD ``A``; see
        :func:`refimpl.losses.lifted.convexify_similarity`.
    tol : float, default 1e-6
        Tolerance of the stopping rule ``stop`` (the paper uses a relative
        change of 1e-4).
    max_iter : int, default 10000
        ``T`` of Algorithm 1 (the paper's experiments use 400).
    stop : {"relative_change", "gradient_mapping", "max_iter"}, default "relative_change"
        ``"relative_change"``: ``|F(w_t) - F(w_{t-1})| <= tol |F(w_{t-1})|``
        (Section III-C; cheap, certifies nothing); ``"gradient_mapping"``:
        ``||G_L(z_t)|| <= tol ||G_L(w_0)||`` (see
        :func:`refimpl.solvers.apg`; zero exactly at the solution);
        ``"max_iter"``: ``T = max_iter`` iterations, ``tol`` unused (the
        paper's fixed ``T``; fewer only if an iterate is an exact
        minimiser, gradient mapping exactly 0).  ``converged_`` is then
        True once the run ends, and ``history_["gmap"]`` tells how far
        from optimal it ended.
    L0 : float, optional
        Upper bound on the Lipschitz constant of ``grad psi``; default
        Theorem 1's ``(4d/p) sum_P ||x_i - x_j||_inf^2 + 2 d lambda1
        max|A|``.
    backend : {"auto", "pairs", "numpy", "tree"}, default "auto"

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        ``w^+ - w^-``, a solution of eq. 1.
    coef2_ : ndarray of shape (2 n_features,)
        The solution ``w >= 0`` of eq. 2.
    importance_ : ndarray of shape (n_features,)
        ``s``.
    similarity_ : ndarray of shape (n_features, n_features)
        The ``A`` used in the objective (after any PSD projection).
    psd_projected_ : bool
        Whether ``A`` was replaced by its nearest PSD matrix.
    similarity_min_eig_ : float
        Smallest eigenvalue of ``A`` before any projection.
    lipschitz_bound_ : float
        ``L0`` used.
    n_iter_ : int
    history_ : dict of ndarray
        ``F`` (objective of eq. 2), ``L``, ``gmap``, ``n_fun``, ``restart``,
        ``time``.
    converged_ : bool
    objective_ : float
        Objective of eq. 2 at ``coef2_``; equals eq. 1 at ``coef_`` when
        ``min(w^+_i, w^-_i) = 0`` for all ``i`` (always at the optimum if
        ``lambda2 > 0``).
    backend_ : str

    See Also
    --------
    refimpl.estimators.FSMSVM : FSMRank's top features, then RankSVM.
    refimpl.estimators.GASRanker : the greedy selection FSMRank is compared with.
    refimpl.losses.lifted.convexify_similarity : the similarity made PSD.

    Examples
    --------
    >>> from refimpl.data import make_synthetic_letor
    >>> data = make_synthetic_letor(n_queries=30, seed=0)
    >>> X, y, qid = data.X, data.y, data.qid
    >>> import warnings
    >>> from refimpl.estimators import FSMRank
    >>> with warnings.catch_warnings():      # small data: A may be projected
    ...     warnings.simplefilter("ignore", UserWarning)
    ...     model = FSMRank(lambda1=0.1, lambda2=1e-3).fit(X, y, qid)
    >>> model.coef_.shape
    (30,)
    >>> model.score(X, y, qid) > 0.8
    True

    Derived in: book/04_fsmrank_nesterov.md#fsmrank
    """

    _extreme_ranges: ClassVar[dict] = {"lambda1": (0.0, WEIGHT_RANGE[1]),
                                       "lambda2": (0.0, WEIGHT_RANGE[1]),
                                       "L0": (WEIGHT_RANGE[0], math.inf)}
    _parameter_constraints: ClassVar[dict] = {
        "lambda1": [NONNEGATIVE],
        "lambda2": [NONNEGATIVE],
        "importance": options(_IMPORTANCES),
        "similarity": options(_SIMILARITIES),
        "psd": options(PSD_MODES),
        "tol": [POSITIVE],
        "max_iter": [ITERATIONS],
        "stop": options(FSMRANK_STOPS),
        "L0": [POSITIVE, None],
        "backend": options(BACKENDS),
    }

    def __init__(self, lambda1=1.0, lambda2=1e-3, importance="pearson",
                 similarity="pearson", psd="project", tol=1e-6, max_iter=10000,
                 L0=None, backend="auto", stop="relative_change"):
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.importance = importance
        self.similarity = similarity
        self.psd = psd
        self.tol = tol
        self.max_iter = max_iter
        self.L0 = L0
        self.backend = backend
        self.stop = stop

    def _problem(self, problem):
        """``(loss, smooth psi, penalty r, s, A, projected, min_eig, D)`` of eq. 2.

        ``D``: the column scales of :func:`_column_scales` (None: none), in
        which case ``loss``, ``smooth`` and ``penalty`` are those of the
        problem in ``u`` with ``w = D u``.
        """
        D = _column_scales(problem.X)
        scaled = problem if D is None else dataclasses.replace(
            problem, X=np.ascontiguousarray(problem.X * D))
        loss = PairwiseSquaredHinge(scaled, normalize=True, **self._hinge_options())
        d = loss.n_features
        # Pearson's importance and similarity do not change with the scale
        # of a column: computed on the data as given
        if self.importance == "pearson":
            s = pearson_importance(problem)
        else:
            s = np.ones(d)
        A = pearson_similarity(problem) if self.similarity == "pearson" else np.eye(d)
        A, projected, min_eig = convexify_similarity(A, self.psd)
        A_u = A if D is None else A * np.outer(D, D)
        smooth = FSMRankSmooth(LiftedLoss(loss), lift_similarity(A_u),
                               float(self.lambda1))
        with np.errstate(over="ignore"):          # checked next
            beta = float(self.lambda2) / lift_importance(s)
            if D is not None:
                beta = beta * np.concatenate([D, D])
        if not np.all(np.isfinite(beta)):
            raise ParameterError(
                f"The 'lambda2' parameter of {type(self).__name__} must be in the "
                f"range [0, {WEIGHT_RANGE[1]:g}] for this fit. Got {self.lambda2!r} "
                "instead: the penalty weights lambda2 / s_j overflow")
        penalty = NonNegWeightedL1(beta)
        return loss, smooth, penalty, s, A, projected, min_eig, D

    def _hinge_options(self):
        """How the fit builds its squared hinge, and its memory model counts it."""
        # first order: values and gradients only (hess_per_grad = 0)
        return {"backend": self.backend, "hess_per_grad": 0}

    def estimate_memory(self, *, n_docs, n_pairs, n_features, max_query, grouped=True,
                        n_levels=None):
        """Memory of a fit on data of this shape: the squared hinge's, the Pearson
        statistics (a centred copy of ``X``; the lifted 2d problem is O(d^2))
        and the column-scaled copy of ``X`` (:func:`_column_scales`).

        The copy is made only when a column exceeds 1 in absolute value (raw
        features); the shape does not tell, so it is always counted: on
        LETOR's normalised files the estimate is one ``X`` too high, never
        too low on raw ones.  The scale guard's question
        (:class:`~refimpl.estimators.MemoryEstimate`; ``n_pairs``:
        preference pairs, ``max_query``: documents of the longest query,
        ``grouped``: each query's rows adjacent).
        """
        terms = {"method": _pearson_bytes(n_docs, n_features),
                 "column-scaled copy": n_docs * n_features * 8}
        model = squared_hinge_memory(
            n_docs=n_docs, n_pairs=n_pairs, n_features=n_features, grouped=grouped,
            n_levels=n_levels, terms=terms, **self._hinge_options())
        # Theorem 1's bound on explicit pairs is one compiled pass over a
        # dense X (kernels.pairs.sum_pair_inf_norm_sq): nothing beyond it;
        # a sparse X's chunks of PAIR_CHUNK pairs are not modelled, as no
        # model here counts sparse X
        return model

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``.

        Warns with :class:`~refimpl.exceptions.EmptyModelWarning` if every
        weight is zero, naming the ``lambda2`` at or above which that
        happens (its ``threshold``).  By the optimality
        conditions of eq. 2 on the orthant, ``w = 0`` is optimal iff
        ``grad_i psi(0) + lambda2 / s_i >= 0`` for every ``i``; ``grad
        psi(0) = [g, -g]`` with ``g = grad f(0)`` (the similarity term has
        zero gradient at 0), hence iff ``lambda2 >= max_i s_i |g_i|``.
        """
        reset_fitted(self)
        self._validate_params()
        problem = check_fit_input(self, X, y, qid)
        with self._blaming(problem.X):
            return self._fit(problem, stacklevel=4)

    def _fit(self, problem, stacklevel=3):
        """:meth:`fit` on a validated :class:`~refimpl._validation.RankingProblem`.

        Also the first stage of :class:`FSMSVM`, which validates its data once.
        """
        loss, smooth, penalty, s, A, projected, min_eig, D = self._problem(problem)
        L0 = float(self.L0) if self.L0 is not None else smooth.lipschitz_bound()
        if L0 <= 0:
            L0 = 1.0
        start = L0 / 2.0 ** NEMIROVSKI_EXPONENT
        if not (start > 0 and math.isfinite(1.0 / start)):
            # the search starts at L0 / 2**10 and steps by its reciprocal
            raise ParameterError(
                f"The 'L0' parameter of FSMRank must be in the range "
                f"[{WEIGHT_RANGE[0]:g}, inf) (its search starts at the step "
                f"2**{NEMIROVSKI_EXPONENT} / L0, which overflows). Got {self.L0!r} "
                "instead.")
        if self.stop == "max_iter":
            # tol = 0: only a gradient mapping of exactly 0 (an exact
            # minimiser, where the prox step does not move) ends it before T
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                result = apg(smooth, penalty, L0=L0, line_search="nemirovski",
                             eta=2.0, tol=0.0, stop="gradient_mapping",
                             max_iter=int(self.max_iter))
            result.converged = True
        else:
            result = apg(smooth, penalty, L0=L0, line_search="nemirovski", eta=2.0,
                         tol=float(self.tol), stop=self.stop,
                         max_iter=int(self.max_iter))
        d = loss.n_features
        w2 = result.w
        if D is not None:
            w2 = w2 * np.concatenate([D, D])
        coef = w2[:d] - w2[d:]
        if not np.all(np.isfinite(coef)):
            raise FloatingPointError("FSMRank produced non-finite coefficients")
        self.coef_ = coef
        self.coef2_ = w2
        self.importance_ = s
        self.similarity_ = A
        self.psd_projected_ = bool(projected)
        self.similarity_min_eig_ = float(min_eig)
        self.lipschitz_bound_ = float(L0)
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.history_ = result.as_arrays()
        self.objective_ = float(result.history["F"][-1])
        self.backend_ = loss.backend
        if not np.any(coef):
            lam2 = float(self.lambda2)
            g0 = _grad_at_zero(loss)          # D grad f(0) when scaled
            if D is not None:
                g0 = g0 / D
            threshold = float(np.max(s * np.abs(g0), initial=0.0))
            if threshold == 0:
                detail = ("the gradient of the loss at w = 0 is zero, so no lambda2 "
                          "gives a non-zero weight")
            else:
                side = ("choose lambda2 below it" if lam2 >= threshold else
                        "lambda2 is below it, yet the fit ended at w = 0 "
                        f"(converged_ = {self.converged_})")
                detail = (f"every weight vanishes for lambda2 >= {threshold:.6g} (= "
                          f"max_i s_i |grad_i f(0)|, whatever lambda1); {side}")
            _warn_empty(self, f"lambda2={self.lambda2!r}: {detail}",
                        parameter="lambda2", value=lam2, threshold=threshold,
                        stacklevel=stacklevel)
        return self


#: FSMSVM's parameters of its FSMRank stage and of its RankSVM stage, as
#: those stages declare them.
_FSM_STAGE, _FSM_DEFAULT = stage_params(FSMRank, ("lambda1", "lambda2", "tol", "max_iter"))
_SVM_STAGE, _SVM_DEFAULT = stage_params(RankSVM, ("C",))


class FSMSVM(_TwoStage):
    """FSMSVM: the top-t features of FSMRank, then RankSVM on them (Lai et al. 2013).

    The second baseline of Section IV-D1: fit :class:`FSMRank`, sort the
    features by ``|coef_|`` decreasingly (ties by index) and train
    :class:`RankSVM` on the first ``t``.

    Parameters
    ----------
    n_features_to_select : int, default 10
        Number ``t`` of features to keep.
    lambda1, lambda2 : float, default FSMRank's
        FSMRank's similarity and l1 weights (eq. 1).
    C : float, default RankSVM's
        RankSVM loss weight.
    tol, max_iter : float, int, default FSMRank's
        The FSMRank stage's stopping tolerance and iteration budget; a cap
        makes the first stage affordable at MSLR-WEB10K size.

    The stages' parameters are declared by the stages (ranges and
    defaults): FSMSVM passes them on.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        RankSVM weights on the selected features, 0 elsewhere.
    selected_ : ndarray of int64
        The ``t`` features, by decreasing ``|FSMRank weight|``.
    fsmrank_ : FSMRank
    ranksvm_ : RankSVM
    n_iter_, converged_, history_ :
        Those of the RankSVM.

    See Also
    --------
    refimpl.estimators.FSMRank : the first stage.
    refimpl.estimators.GASRanker : the same two stages with GAS's selection.

    Examples
    --------
    >>> from refimpl.data import make_synthetic_letor
    >>> data = make_synthetic_letor(n_queries=30, seed=0)
    >>> X, y, qid = data.X, data.y, data.qid
    >>> import warnings
    >>> from refimpl.estimators import FSMSVM
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", UserWarning)
    ...     model = FSMSVM(n_features_to_select=5, lambda1=0.1).fit(X, y, qid)
    >>> len(model.selected_), int((model.coef_ != 0).sum()) <= 5
    (5, True)

    Derived in: book/04_fsmrank_nesterov.md#fsmrank
    """

    _extreme_ranges: ClassVar[dict] = {
        **{p: FSMRank._extreme_ranges[p] for p in ("lambda1", "lambda2")},
        "C": RankSVM._extreme_ranges["C"]}
    _parameter_constraints: ClassVar[dict] = {
        "n_features_to_select": [COUNT], **_FSM_STAGE, **_SVM_STAGE}

    def __init__(self, n_features_to_select=10, lambda1=_FSM_DEFAULT["lambda1"],
                 lambda2=_FSM_DEFAULT["lambda2"], C=_SVM_DEFAULT["C"],
                 tol=_FSM_DEFAULT["tol"], max_iter=_FSM_DEFAULT["max_iter"]):
        self.n_features_to_select = n_features_to_select
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.C = C
        self.tol = tol
        self.max_iter = max_iter

    def estimate_memory(self, *, n_docs, n_pairs, n_features, max_query, grouped=True,
                        n_levels=None):
        """Memory of a fit on data of this shape: the larger of its two stages.

        The stages run one after the other: FSMRank's
        (:meth:`FSMRank.estimate_memory`: its loss, the Pearson statistics
        and the column-scaled copy) and RankSVM's on the squared hinge
        (``t <= d`` columns; counted at ``d``).  The scale guard's question
        (:class:`~refimpl.estimators.MemoryEstimate`; ``n_pairs``:
        preference pairs, ``max_query``: documents of the longest query,
        ``grouped``: each query's rows adjacent).
        """
        shape = {"n_docs": n_docs, "n_pairs": n_pairs, "n_features": n_features,
                 "grouped": grouped}
        first = FSMRank().estimate_memory(max_query=max_query, n_levels=n_levels,
                                          **shape)
        # RankSVM's TRON on the selected columns (a copy of them, at most X)
        second = squared_hinge_memory(
            n_levels=n_levels, terms={"selected columns": n_docs * n_features * 8},
            **shape)
        return max(first, second, key=lambda m: sum(m.terms.values()))

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``."""
        problem, t = self._check_fit(X, y, qid)
        fsm = FSMRank(lambda1=self.lambda1, lambda2=self.lambda2, tol=self.tol,
                      max_iter=self.max_iter)
        # the first stage on the same validated data; the attributes a fit
        # on (X, y, qid) records
        fsm._validate_params()
        fsm.n_features_in_ = problem.n_features
        fsm.n_queries_in_ = problem.n_queries
        with self._blaming(problem.X):
            fsm._fit(problem)
            selected = np.argsort(-np.abs(fsm.coef_), kind="stable")[:t].astype(np.int64)
            self.fsmrank_ = fsm
            return self._fit_ranksvm_on(problem, selected)
