"""HingeRankSVM: the L1-hinge linear RankSVM of SVMrank (Joachims 2006)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from .._compat.sklearn_params import StrOptions
from .._validation import PAIR_SUPPORT_MIN_SHARE, check_fit_input, reset_fitted
from ..exceptions import ParameterError
from ..losses.pairwise_hinge import PairwiseHinge
from ..solvers.cutting_plane import cutting_plane_ranksvm
from ._base import (ITERATIONS, POSITIVE, WEIGHT_RANGE, LinearRanker, MemoryEstimate,
                    _on_all_columns, _warn_empty)

__all__ = ["HingeRankSVM"]


class HingeRankSVM(LinearRanker):
    """L1-hinge linear RankSVM with SVMrank's ``C``, by 1-slack cutting planes.

    Minimises eq. (7.11) of the book, the problem of Joachims' ``svm_rank``
    (``svm_rank_learn -c C``, default loss ``-l 1``, margin rescaling),

    .. math::

        P(w) = \\tfrac12 w^T w + \\frac{C}{n} \\sum_{(i, j) \\in P}
            \\max(0, 1 - w^T (x_i - x_j)),

    with ``P`` the preference pairs (``q_i = q_j``, ``y_i > y_j``) and ``n``
    the number of training queries.  The division by ``n`` is SVMrank's:
    its ``svm_struct_learn.c`` solves ``min 1/2 ||w||^2 + C xi`` with the
    joint constraint averaged over the ``n`` rankings (each plane is
    ``sum_i (Psi(x_i, y_i) - Psi(x_i, ybar_i)) / n`` against
    ``sum_i Delta_i / n``), and its ``svm_struct_api.c`` for SVMrank sets
    ``Delta_i`` to the number of swapped pairs of query ``i`` and the
    margin of each pair to its score difference, so the slack of query
    ``i`` is the sum of its pairs' hinges.  The program's help says the same
    in other words: SVM-light's ``-z p`` with ``c_light = c_rank / n``
    solves the same problem.  Unlike :class:`RankSVM` (Lee & Lin's squared
    hinge, ``C`` per pair), the loss is linear beyond the margin and ``C``
    is per query.

    The solver is the 1-slack cutting-plane method (Joachims 2006) with an
    exact most-violated constraint in O(l log l) per query and an exact
    working-set QP, after 50 planes with OCAS's line search (Franc &
    Sonnenburg 2009); it stops on the duality gap
    ``P(w) - D(alpha) <= tol * P(w)`` (``svm_rank`` stops instead when the
    new plane is violated by at most ``-e`` = 0.001 times the mean number
    of pairs per query, a gap of ``C`` times that).

    **Scale.**  With ``feature_scaling="max_abs"`` (the default) the fit
    divides each feature by its largest magnitude on the training data,
    ``s_j = max_i |x_ij|`` (1 for a column of zeros:
    ``RankingProblem.scaled_columns``), solves the problem above on
    ``X diag(s)^-1`` and maps the coefficients back, ``coef_ = v / s``, so
    that ``X coef_`` are the scores of that fit.  In terms of the raw ``w``
    it minimises eq. (7.15) of the book,

    .. math::

        P_s(w) = \\tfrac12 \\sum_j s_j^2 w_j^2 + \\frac{C}{n}
            \\sum_{(i, j) \\in P} \\max(0, 1 - w^T (x_i - x_j)),

    which is ``P`` itself when every ``s_j = 1``, as on LETOR's
    query-level normalised features (every column's maximum 0 or 1): there
    the fit is bit for bit the unscaled one.  Each column's scale cancels
    (prop-hinge-scale, book/07_ranksvm_ostree.md#ranksvm-hinge): on
    ``X diag(c)``, every ``c > 0``, the scores are the same, and the planes
    needed grow with ``C R^2`` of the scaled data, whose planes have norm
    ``R <= 2 p_bar sqrt(d)`` (``p_bar`` the mean number of pairs per query;
    thm-cutting-plane), not with the raw features' scale (about 1e5 on
    MSLR's).  ``objective_``, ``dual_gap_``, ``history_`` and the ``C`` of
    the messages are those of the problem solved.  ``feature_scaling=None``
    solves ``P`` on ``X`` as given (Joachims' ``svm_rank``), whose planes
    grow with ``C R^2`` of the raw features.

    Parameters
    ----------
    C : float, default 1.0
        SVMrank's ``-c`` (> 0): the loss weight per query.
    tol : float, default 1e-6
        Relative duality gap at the stop (> 0).
    max_iter : int, default 1000
        Maximum number of cutting planes.
    line_search : {"auto"} or bool, default "auto"
        OCAS's line search between planes: ``True`` always, ``False`` never
        (SVMrank's plain loop), ``"auto"`` after the first 50 planes.
    feature_scaling : {"max_abs"} or None, default "max_abs"
        ``"max_abs"``: fit on each feature divided by its largest
        magnitude and map the coefficients back (the problem ``P_s`` above);
        ``None``: fit ``X`` as given (``P``, SVMrank's problem).
    verbose : bool, default False
        One line per cutting plane.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Weights on the features as given (``v / s`` for the fit ``v`` on
        the scaled features).
    feature_scale_ : ndarray of shape (n_features,)
        The ``s_j`` the features were divided by (all 1 with
        ``feature_scaling=None``).
    n_iter_ : int
        Cutting planes added.
    converged_ : bool
    objective_ : float
        ``P(coef_)`` (``P_s(coef_)`` with ``feature_scaling="max_abs"``).
    dual_gap_ : float
        ``P(coef_) - D(alpha)``, a bound on ``P(coef_) - min P`` (``P_s``
        likewise).
    history_ : dict of ndarray
        Per iteration: ``f``, ``f_best``, ``dual``, ``gap``, ``ceps``,
        ``n_violated``, ``qp_steps``, ``time`` (the solver
        ``refimpl.solvers.cutting_plane.cutting_plane_ranksvm``).

    See Also
    --------
    refimpl.estimators.RankSVM : the squared hinge (L2 loss), TRON.

    Examples
    --------
    >>> from refimpl.data import make_synthetic_letor
    >>> data = make_synthetic_letor(n_queries=30, seed=0)
    >>> from refimpl.estimators import HingeRankSVM
    >>> model = HingeRankSVM(C=1.0).fit(data.X, data.y, data.qid)
    >>> model.converged_, model.coef_.shape
    (True, (30,))
    >>> bool(model.dual_gap_ <= 1e-6 * model.objective_)
    True

    Derived in: book/07_ranksvm_ostree.md#ranksvm-hinge
    """

    _extreme_ranges: ClassVar[dict] = {"C": WEIGHT_RANGE}
    _parameter_constraints: ClassVar[dict] = {
        "C": [POSITIVE],
        "tol": [POSITIVE],
        "max_iter": [ITERATIONS],
        "line_search": [StrOptions({"auto"}), "boolean"],
        "feature_scaling": [StrOptions({"max_abs"}), None],
        "verbose": ["boolean"],
    }

    def __init__(self, C=1.0, tol=1e-6, max_iter=1000, line_search="auto",
                 feature_scaling="max_abs", verbose=False):
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.line_search = line_search
        self.feature_scaling = feature_scaling
        self.verbose = verbose

    def estimate_memory(self, *, n_docs, n_pairs, n_features, max_query,
                        grouped=True, n_levels=None):
        """Memory of a fit, worst case in ``max_iter``: planes, Gram matrix, QP, pass.

        The solver keeps at most ``M = max_iter + 2`` planes (plane 0, one a
        cutting plane, one spare) in arrays grown by doubling
        (``refimpl.solvers.cutting_plane``): the last growth holds the old
        and the doubled arrays at once, up to ``3 M`` plane rows of
        ``n_features`` doubles and ``5 M^2`` Gram entries.  The working-set
        QP builds a KKT matrix of order ``M + 1`` and, when it is singular,
        its SVD (three more of that size).  Eight words a document for the
        O(l log l) pass; never the pairs.  The pair-support copy of ``X``
        (``RankingProblem.pair_support``: at most ``1 -
        PAIR_SUPPORT_MIN_SHARE`` of it, built as ``X[rows]`` then its kept
        columns, two at once) and, with ``feature_scaling="max_abs"``, the
        column-scaled copy it is taken from (made only when a column's
        largest magnitude is not 0 or 1; the shape does not tell, so it is
        always counted).
        """
        M = int(self.max_iter) + 2
        terms = {
            "cutting planes": 3 * M * int(n_features) * 8,
            "Gram matrix": 5 * M * M * 8,
            "working-set QP": 4 * (M + 1) * (M + 1) * 8,
            "per-document pass": int(n_docs) * 8 * 8,
        }
        x_bytes = int(n_docs) * int(n_features) * 8
        terms["pair-support copy"] = int(2 * (1.0 - PAIR_SUPPORT_MIN_SHARE) * x_bytes)
        if self.feature_scaling == "max_abs":
            terms["column-scaled copy"] = x_bytes
        return MemoryEstimate(terms=terms)

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``.

        Warns with :class:`~refimpl.exceptions.EmptyModelWarning` if every
        weight is zero: when no pair exists or the violated pairs'
        differences cancel at ``w = 0``, or when ``C`` is so small (``1e-17``,
        say) that the duality gap already certifies ``w = 0`` to within
        ``tol`` (the warning gives the ``C`` below which it does).
        """
        reset_fitted(self)
        self._validate_params()
        problem = check_fit_input(self, X, y, qid)
        with self._blaming(problem.X):
            return self._fit(problem, stacklevel=4)

    def _fit(self, problem, stacklevel=3):
        """:meth:`fit` on a validated :class:`~refimpl._validation.RankingProblem`.

        For pipelines (LifeRank's second stage) that hold the data checked
        and grouped once; the caller sets ``n_features_in_`` and
        ``n_queries_in_`` as :class:`RankSVM`'s ``_fit`` expects.
        """
        n_queries = problem.n_queries            # SVMrank's n: every query
        n_features = problem.n_features
        if self.feature_scaling == "max_abs":
            problem, scale = problem.scaled_columns()
        else:
            scale = np.ones(n_features)
        # the scaled copy (when one was made) goes once the support holds
        # what the loss needs
        support, columns = problem.pair_support()
        del problem
        loss = PairwiseHinge(support)
        del support
        result = cutting_plane_ranksvm(loss, float(self.C), n_queries,
                                       tol=float(self.tol),
                                       max_iter=int(self.max_iter),
                                       line_search=self.line_search,
                                       verbose=bool(self.verbose))
        # the messages speak of the problem solved: C on the scaled features
        scaled = ("" if np.all(scale == 1.0) else
                  " (on the features divided by their largest magnitudes, "
                  "feature_scaling='max_abs')")
        if not np.all(np.isfinite(result.w)):
            raise FloatingPointError("HingeRankSVM produced non-finite coefficients")
        _check_not_subnormal(self, result.w, scaled)
        self.feature_scale_ = scale
        self.coef_ = _on_all_columns(result.w, columns, n_features) / scale
        if not np.all(np.isfinite(self.coef_)):
            raise FloatingPointError(
                "HingeRankSVM's coefficients overflow when mapped back to the "
                f"features' scales (smallest s_j = {scale.min():.1e}): fit with "
                "feature_scaling=None or rescale X")
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.history_ = result.as_arrays()
        self.objective_ = float(result.history["f_best"][-1])
        self.dual_gap_ = float(result.details["gap"])
        if not np.any(self.coef_):
            threshold = _zero_certified_C(loss, n_queries, float(self.tol))
            if threshold is None:
                message = ("w = 0 minimises the L1-hinge RankSVM: no preference "
                           f"pair exists or the pairs' differences cancel (|P| = "
                           f"{loss.n_pairs})")
            else:
                message = (
                    f"w = 0 is within the relative duality gap tol = "
                    f"{float(self.tol):g} of the optimum, as it is for every C <= "
                    f"2 tol |P| / (n ||a_0||^2) = {threshold:.6g} (a_0 the first "
                    f"cutting plane, eq. 7.13{scaled}; here C = "
                    f"{float(self.C):g}): raise C above that (or lower tol) for "
                    "a non-zero model")
            _warn_empty(self, message, parameter="C", value=float(self.C),
                        threshold=threshold, stacklevel=stacklevel)
        return self


def _check_not_subnormal(estimator, w, scaled=""):
    """Refuse a ``C`` so small that the weights (of order ``C``) are subnormal.

    ``w = C beta^T A``: below the smallest normal double the weights keep
    only a few bits, and the ranking they give is rounding, not the model.
    ``w`` is the solver's, on the features as the fit scaled them, so the
    bound is on ``C`` of the problem solved (``scaled`` says which).
    """
    w = np.abs(w[w != 0])
    tiny = np.finfo(np.float64).tiny
    if w.size and float(w.min()) < tiny:
        C = float(estimator.C)
        low = tiny / (float(w.min()) / C)
        raise ParameterError(
            f"The 'C' parameter of {type(estimator).__name__} must be a float in "
            f"the range [{low:.1e}, inf) for these data{scaled}. Got {C!r} "
            f"instead: the weights, of order C, fall below the smallest normal "
            f"double ({tiny:.1e}) and keep only a few bits")


def _zero_certified_C(loss, n_queries, tol):
    """Up to which ``C`` the duality gap certifies ``w = 0`` (None: every ``C``).

    At ``w = 0`` every pair's hinge is 1, so ``P(0) = C b_0`` with
    ``b_0 = |P| / n``; the dual of the first plane ``a_0`` (eq. 7.13 at
    ``w = 0``) alone is ``D = C b_0 - C^2 ||a_0||^2 / 2``, so
    ``P(0) - min P <= C^2 ||a_0||^2 / 2 <= tol P(0)`` for every
    ``C <= 2 tol b_0 / ||a_0||^2``.  None when no pair is violated at 0 or
    ``a_0 = 0`` (the pairs' differences cancel): then ``w = 0`` is optimal
    for every ``C``.
    """
    _, c, n_violated = loss.risk(np.zeros(loss.n_features))
    a0 = loss.direction(c) / n_queries
    a2 = float(a0 @ a0)
    if not n_violated or a2 == 0.0:
        return None
    return 2.0 * tol * (n_violated / n_queries) / a2
