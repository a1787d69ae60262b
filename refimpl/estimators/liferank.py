"""LifeRank (Pandey et al. 2018) as a scikit-learn transformer and ranker.

The loss, the objective, the solvers and the Stiefel-manifold tools are in
:mod:`refimpl.losses` (:class:`~refimpl.losses.PairwiseLogistic`,
:class:`~refimpl.losses.LifeRankObjective`) and :mod:`refimpl.solvers`
(:func:`~refimpl.solvers.liferank_solve`, the Stiefel tools); this module
wires them into an estimator.

Derived in: book/06_liferank_bdmm.md#liferank
"""

from __future__ import annotations

import math
import warnings
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._validation import (
    check_fit_input,
    reset_fitted,
    validate_X,
)
from ..exceptions import DivergenceError
from ..losses import LifeRankObjective, PairwiseLogistic
from ..losses.logistic import logistic_pair_bytes
from ..solvers._finite import NonFiniteError
from ._base import check_predictions
from ..solvers.bdmm import UPDATES
from ..solvers.liferank import CONSTRAINTS, liferank_solve
from ..solvers.stiefel import RETRACTIONS, orthonormality_error, stiefel_retraction
from ._base import (
    COUNT,
    ITERATIONS,
    NONNEGATIVE,
    POSITIVE,
    SEED,
    WEIGHT_RANGE,
    MemoryEstimate,
    _Ranker,
    _check_at_most,
    options,
)

__all__ = ["FEATURE_SCALINGS", "INITS", "LifeRank"]

#: Starting ``T``: i.i.d. ``N(0, 1/n)`` entries, those orthonormalised, or
#: i.i.d. ``U[0, 1/sqrt(n))`` entries (non-negative, as in matrix factorisation).
INITS = ("random", "orthonormal", "uniform")
#: ``feature_scaling``: each feature divided by its largest magnitude
#: (:meth:`~refimpl._validation.RankingProblem.scaled_columns`), or ``X`` as
#: given (``None``).
FEATURE_SCALINGS = ("max_abs", None)


def liferank_ranges(lam, lr, damping=None):
    """LifeRank's ``name -> (value, low, high)`` for
    :func:`~refimpl.estimators._base.blame_extreme_parameters`."""
    # (at least [0, 1]: with an extreme lr, lr is the culprit, not lam)
    ranges = {"lam": (lam, 0.0, max(1.0 / float(lr), 1.0))}
    if damping is not None:
        ranges["damping"] = (damping, 0.0, WEIGHT_RANGE[1])
    return ranges


class LifeRank(_Ranker, TransformerMixin, BaseEstimator):
    r"""LifeRank (Pandey et al. 2018) as a scikit-learn transformer.

    ``fit(X, y, qid)`` learns ``T`` (``n_features x n_components``) and
    ``w`` by :func:`liferank_solve` on eq. 5 (mean pairwise logistic loss over
    the preference pairs, ``(lam/2) ||w||^2``, no ``b``) for the scaled
    features ``X diag(s)^-1``, ``s_j = max_i |x_ij|`` (book eq. lr-scale;
    ``s = 1`` on LETOR's ``[0, 1]`` features, where the fit is the paper's),
    which makes the steps, ``T``, the extracted features and the ranking
    independent of the scale of each feature (proposition lr-prop-scale);
    a run whose objective grows stops with a ``DivergenceError`` naming
    ``lr``.  ``transform(X)`` returns the extracted features ``X diag(s)^-1
    T`` (Phase II, Algorithm 1 line 10); ``predict(X)`` the scores
    ``transform(X) w`` of LifeRank's own ranker.  As in the
    paper, ``w`` starts at all ones; ``T`` starts at i.i.d. ``N(0, 1/n)``
    entries (``init="random"``), their polar factor (``"orthonormal"``) or
    i.i.d. ``U[0, 1/sqrt(n))`` entries (``"uniform"``; the paper only says
    "random, as in matrix factorisation").

    Parameters
    ----------
    n_components : int, default 10
        ``k``, at most the number of features.
    lam : float, default 1e-3
        ``lambda >= 0`` (per pair: ``lambda_paper = 2 p lam``), on the
        weights ``w`` of the extracted features.
    lr : float, default 0.3
        Step ``eta`` of eq. 8 for ``T`` and ``w``, on the scaled features
        (so scale-free).  The damping term alone has curvature ``4 damping``
        along ``T Psi`` (``Psi`` symmetric), so steps from ``1 / (2 damping)``
        (0.5 at the default) on diverge (book, prop. lr-prop-step-cap); 0.3
        reaches the certificate on MQ2008, OHSUMED and raw MSLR-shaped
        features within ``max_iter``.
    max_iter : int, default 10000
        A budget, not the rule: the fit stops at the certificate (``tol``).
    constraint : {"bdmm", "stiefel", "none"}, default "bdmm"
        See :func:`liferank_solve`.
    lr_multiplier : float, optional
        Step of the multipliers (default ``lr``, as eq. 8).
    damping : float, default 1.0
        Platt & Barr's MDMM penalty ``mu`` (``constraint="bdmm"`` only).
        ``damping=0`` is the paper's BDMM exactly; on LifeRank its
        constraint violation oscillates without decaying (the columns of
        ``T`` the loss does not see have no restoring force), so the default
        damps it.
    update : {"alternating", "simultaneous"}, default "alternating"
    retraction : {"polar", "qr"}, default "polar"
    init : {"random", "orthonormal", "uniform"}, default "random"
    tol : float, default 1e-4
        Relative stationarity tolerance of :func:`liferank_solve`.
    constraint_tol : float, default 1e-3
    feature_scaling : {"max_abs", None}, default "max_abs"
        ``"max_abs"``: fit on ``X diag(s)^-1`` (above); ``None``: ``s = 1``,
        the fit on ``X`` as given, whose step then depends on the scale of
        the features (on raw MSLR-like features up to 1e5 even ``lr=0.1``
        diverges at its first step, ``benchmarks/bench_liferank_scale.py``).
    random_state : int, numpy Generator or None, default 0
        Seed of ``np.random.default_rng`` for ``T``'s start.

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_components)
        ``T``, on the scaled features (note: the transpose of PCA's
        ``components_`` layout); ``transform(X)`` is ``X @ (components_ /
        feature_scale_[:, None])``.
    coef_ : ndarray of shape (n_components,)
        ``w``, the weights of the extracted features (``transform(X) @
        coef_`` are the scores).
    feature_scale_ : ndarray of shape (n_features,)
        ``s``: each feature's largest ``|x_ij|`` on the training ``X`` (1
        for a column of zeros), all ones when ``feature_scaling=None``.
    multipliers_ : ndarray of shape (n_components, n_components)
        ``A`` of eq. 6 (zeros unless ``constraint="bdmm"``).
    orthonormality_error_ : float
        ``||T^T T - I||_F`` of the returned ``T``.
    n_iter_ : int
    converged_ : bool
    history_ : dict of ndarray
        ``f``, ``loss``, ``lagrangian``, ``violation``, ``grad_norm``,
        ``multiplier_norm``, ``time`` per iterate.
    objective_ : float
        Eq. 5 (without ``b``) at the returned ``(T, w)``, on the scaled
        features.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` was a data frame with string column names;
        ``transform`` and ``predict`` then require the same names in the
        same order.

    See Also
    --------
    refimpl.estimators.LifeRankPipeline : LifeRank's features, then a ranker.
    refimpl.solvers.liferank_solve : the BDMM and Stiefel solvers.

    Examples
    --------
    >>> from refimpl.data import make_synthetic_letor
    >>> data = make_synthetic_letor(n_queries=30, seed=0)
    >>> X, y, qid = data.X, data.y, data.qid
    >>> from refimpl.estimators import LifeRank
    >>> model = LifeRank(n_components=3, lam=0.05).fit(X, y, qid)
    >>> model.transform(X).shape              # the k new features
    (705, 3)
    >>> model.score(X, y, qid) > 0.8
    True

    Derived in: book/06_liferank_bdmm.md#liferank
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [COUNT],
        "lam": [NONNEGATIVE],
        "lr": [POSITIVE],
        "max_iter": [ITERATIONS],
        "constraint": options(CONSTRAINTS),
        "lr_multiplier": [POSITIVE, None],
        "damping": [NONNEGATIVE],
        "update": options(UPDATES),
        "retraction": options(RETRACTIONS),
        "init": options(INITS),
        "tol": [NONNEGATIVE],
        "constraint_tol": [NONNEGATIVE],
        "feature_scaling": [*options(FEATURE_SCALINGS), None],
        "random_state": SEED,
    }

    def __init__(self, n_components=10, lam=1e-3, lr=0.3, max_iter=10000,
                 constraint="bdmm", lr_multiplier=None, damping=1.0,
                 update="alternating", retraction="polar", init="random",
                 tol=1e-4, constraint_tol=1e-3, feature_scaling="max_abs",
                 random_state=0):
        self.n_components = n_components
        self.lam = lam
        self.lr = lr
        self.max_iter = max_iter
        self.constraint = constraint
        self.lr_multiplier = lr_multiplier
        self.damping = damping
        self.update = update
        self.retraction = retraction
        self.init = init
        self.tol = tol
        self.constraint_tol = constraint_tol
        self.feature_scaling = feature_scaling
        self.random_state = random_state

    def _initial_T(self, n, k):
        rng = np.random.default_rng(self.random_state)
        if self.init == "uniform":
            return rng.uniform(0.0, 1.0, size=(n, k)) / math.sqrt(n)
        T0 = rng.standard_normal((n, k)) / math.sqrt(n)
        if self.init == "orthonormal":
            T0 = stiefel_retraction(T0, "polar")
        return T0

    def estimate_memory(self, *, n_docs, n_pairs, n_features, max_query, grouped=True,
                        n_levels=None):
        """Memory of a fit on data of this shape: the pairwise logistic loss's explicit pairs.

        The scale guard's question (:class:`~refimpl.estimators.MemoryEstimate`;
        ``n_pairs``: preference pairs, ``max_query``: documents of the
        longest query, ``grouped``: each query's rows adjacent).
        """
        # _fit divides X's columns by their scales (a copy) unless every
        # scale is 1; the shape does not tell, so it is always counted
        # the history holds eight floats a step, as Python floats (32 bytes
        # with the list's slot) and again in ``history_``'s arrays: 3.2 MB
        # at the default budget, more than the pairs of a small data set
        return MemoryEstimate(backend="pairs (logistic)", terms={
            "logistic pairs": logistic_pair_bytes(n_docs, n_pairs, self.n_components),
            "column-scaled copy": n_docs * n_features * 8,
            "history": (int(self.max_iter) + 1) * 8 * (32 + 8)})

    def fit(self, X, y, qid=None):
        """Fit ``T`` and ``w`` on ``(X, y, qid)``; returns ``self``.

        Attributes of a previous fit are deleted first; ``X`` is checked as
        scikit-learn does (see ``refimpl._validation.validate_X``).
        """
        reset_fitted(self)
        self._validate_params()
        problem = check_fit_input(self, X, y, qid)
        with self._blaming(problem.X):
            return self._fit(problem)

    def _parameter_ranges(self):
        """``lam`` up to ``1 / lr``: a gradient step ``lr`` on ``(lam/2)
        ||w||^2`` alone multiplies ``w`` by ``1 - lr lam``, which grows for
        ``lr lam > 2``; blamed for an overflow or a divergence before ``lr``."""
        return liferank_ranges(self.lam, self.lr, self.damping)

    def _fit(self, problem):
        """:meth:`fit` on a validated :class:`~refimpl._validation.RankingProblem`.

        Also the first stage of ``LifeRankPipeline``, which validates its data once.
        """
        _check_at_most(self, "n_components", self.n_components, problem.n_features,
                       "orthonormal columns need n_components <= n_features")
        # the step rule's scale: fit on X diag(s)^-1, so that the iterates
        # on X diag(c) are those on X (eq. lr-scale); s = 1 on LETOR's
        # [0, 1] features, where this is the problem itself
        if self.feature_scaling == "max_abs":
            problem, scale = problem.scaled_columns()
        else:
            scale = np.ones(problem.n_features)
        scaled = self.feature_scaling is not None
        loss = PairwiseLogistic(problem)
        objective = LifeRankObjective(loss, self.n_components, self.lam)
        n, k = objective.n, objective.k
        # a diverged run raises below: its ConvergenceWarning would be noise
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            result = liferank_solve(
                objective, self._initial_T(n, k), np.ones(k),
                constraint=self.constraint, lr=self.lr,
                lr_multiplier=self.lr_multiplier, damping=self.damping,
                update=self.update, retraction=self.retraction,
                max_iter=int(self.max_iter), tol=self.tol,
                constraint_tol=self.constraint_tol)
        finite = bool(np.all(np.isfinite(result.T))
                      and np.all(np.isfinite(result.w)))
        if result.message.startswith("diverged") and "guard" in result.message:
            # the guard stopped a growing run: the step, not the data
            raise DivergenceError(
                f"LifeRank: the fit {result.message}"
                + (" or lr_multiplier" if self.constraint == "bdmm" else "")
                + _scale_note(scaled, scale))
        if result.message.startswith("diverged") or not finite:
            step = (f"lower lr (lr={float(self.lr)!r})"
                    + (" or lr_multiplier" if self.constraint == "bdmm" else ""))
            raise NonFiniteError(
                f"LifeRank: an iterate (T, w), its objective or gradient is not "
                f"finite ({result.message}), so no stopping test can be trusted. "
                + (f"Each feature is divided by its largest magnitude first "
                   f"(up to {float(scale.max()):.3g}), so the cause is the "
                   f"step: {step}" if scaled else
                   f"The features are used as given (feature_scaling=None): "
                   f"{step}, or set feature_scaling='max_abs'"))
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        self.feature_scale_ = scale
        self.components_ = result.T
        self.coef_ = result.w
        self.multipliers_ = result.multipliers
        self.orthonormality_error_ = orthonormality_error(result.T)
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.history_ = result.as_arrays()
        self.objective_ = float(result.history["f"][-1])
        return self

    def fit_transform(self, X, y, qid=None):
        """``fit(X, y, qid).transform(X)``."""
        return self.fit(X, y, qid).transform(X)

    def _check_input(self, X):
        check_is_fitted(self, "components_")
        return validate_X(self, X, reset=False)

    def _map(self):
        """``diag(s)^-1 T``: ``X`` times it are the extracted features
        (``T`` itself when ``s = 1``, as on LETOR's features)."""
        return self.components_ / self.feature_scale_[:, None]

    def _features(self, X):
        """:meth:`transform` of a validated ``X``."""
        return np.asarray(X @ self._map())

    def transform(self, X):
        """The extracted features ``X diag(s)^-1 T`` (shape ``(m, n_components)``)."""
        return self._features(self._check_input(X))

    def predict(self, X):
        """LifeRank's own scores ``X diag(s)^-1 T w``."""
        X = self._check_input(X)
        v = self._map() @ self.coef_
        return check_predictions(np.asarray(X @ v).ravel(), "LifeRank", X, v)


def _scale_note(scaled, scale):
    """Why the step, not the data, is to blame (or how the data may be)."""
    if scaled:
        return (f"; each feature is divided by its largest magnitude first "
                f"(up to {float(scale.max()):.3g}), so the step does not "
                "depend on the features' magnitudes")
    return ("; the features are used as given (feature_scaling=None): "
            "feature_scaling='max_abs' makes the step scale-free")
