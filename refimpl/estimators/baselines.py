"""Baselines beyond the papers' own methods, with the ``fit(X, y, qid)`` interface.

Pointwise linear regression and LightGBM's LambdaMART (estimators without
the ranking interface, adapted), and LifeRank's two-stage pipeline (its
extracted features, then a linear ranker).

Derived in: book/08_side_by_side.md#side-by-side
"""

from __future__ import annotations

import warnings
from numbers import Integral
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, check_memory

from .._compat.sklearn_params import HasMethods, StrOptions
from .._validation import (
    RankingProblem,
    check_fit_input,
    check_X,
    refuse_single_document,
    validate_X,
)
from ..exceptions import DataError
from ._base import (
    POSITIVE,
    WEIGHT_RANGE,
    _Interval,
    MemoryEstimate,
    _Ranker,
    stage_params,
)
from .hinge_ranksvm import HingeRankSVM
from .liferank import LifeRank, liferank_ranges
from .ranksvm import RankSVM

__all__ = ["LambdaMART", "LifeRankPipeline", "LinearRegressionRanker"]


#: LightGBM's largest ``num_leaves`` (its ``config_auto.cpp`` check).
LIGHTGBM_MAX_LEAVES = 131072
#: LightGBM's default ``label_gain`` has ``2**i - 1`` for i = 0 .. 30.
LAMBDARANK_MAX_LABEL = 30
_INT32_MAX = 2**31 - 1


def _check_input(estimator, X, y, qid):
    """The :class:`~refimpl._validation.RankingProblem` checked at the boundary.

    As the linear rankers check it; ``n_features_in_`` (and
    ``feature_names_in_``) recorded for ``predict``; no pair is needed, so a
    single document is accepted.
    """
    return check_fit_input(estimator, X, y, qid, pairwise=False)


def _inner(estimator, problem):
    """``estimator`` made ready for its ``_fit(problem)`` inside a pipeline.

    Its parameters are checked and it records what a ``fit`` on the
    problem's data would (``n_features_in_``, ``n_queries_in_``), without
    checking or grouping the data again.
    """
    estimator._validate_params()
    estimator.n_features_in_ = problem.n_features
    estimator.n_queries_in_ = problem.n_queries
    return estimator


class LinearRegressionRanker(_Ranker, BaseEstimator):
    """Pointwise least squares on the labels, as a ranker (``qid`` ignored).

    The "Linear Regression" learning-to-rank baseline of Pandey et al.
    (2018, Section 5.3; RankLib's implementation there): fit
    ``y ~ X w + b`` by ordinary least squares and rank by ``X w``.

    See Also
    --------
    refimpl.estimators.RankSVM : a pairwise linear ranker.
    refimpl.estimators.LifeRankPipeline : this ranker on LifeRank's features.

    Examples
    --------
    >>> from refimpl.data import make_synthetic_letor
    >>> data = make_synthetic_letor(n_queries=30, seed=0)
    >>> X, y, qid = data.X, data.y, data.qid
    >>> from refimpl.estimators import LinearRegressionRanker
    >>> model = LinearRegressionRanker().fit(X, y, qid)
    >>> model.coef_.shape
    (30,)
    >>> model.score(X, y, qid) > 0.8
    True

    Derived in: book/08_side_by_side.md#side-by-side

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    """

    def estimate_memory(self, *, n_docs, n_pairs, n_features, max_query, grouped=True,
                        n_levels=None):
        """Memory of a fit on data of this shape: scikit-learn centres a copy of ``X``;
        ``lstsq`` copies it again (gelsd).

        The scale guard's question (:class:`~refimpl.estimators.MemoryEstimate`;
        ``n_pairs``: preference pairs, ``max_query``: documents of the
        longest query, ``grouped``: each query's rows adjacent).
        """
        # two copies of X (sklearn's centred one, gelsd's), the boolean
        # mask of scipy's asarray_chkfinite (one byte an entry), and the
        # labels' and the residuals' vectors (centred y, gelsd's b and work)
        return MemoryEstimate(terms={
            "method": 2 * n_docs * n_features * 8 + n_docs * n_features
            + 8 * n_docs * 8})

    def fit(self, X, y, qid=None):
        """Least-squares fit on ``(X, y)``; returns ``self``."""
        self._validate_params()
        return self._fit(_check_input(self, X, y, qid))

    def _fit(self, problem):
        """:meth:`fit` on a validated :class:`~refimpl._validation.RankingProblem`."""
        from sklearn.linear_model import LinearRegression

        model = LinearRegression().fit(problem.X, problem.y)
        self.coef_ = np.asarray(model.coef_, dtype=np.float64)
        self.intercept_ = float(model.intercept_)
        self.n_features_in_ = problem.n_features
        return self

    def predict(self, X):
        """Scores ``X @ coef_`` (the intercept does not change a ranking)."""
        check_is_fitted(self, "coef_")
        X = validate_X(self, X, reset=False)
        return np.asarray(X @ self.coef_).ravel()


class LambdaMART(_Ranker, BaseEstimator):
    """LightGBM's LambdaMART (``LGBMRanker``, objective ``lambdarank``).

    A non-linear reference (Burges 2010; Ke et al. 2017): gradient-boosted
    regression trees fitted to the LambdaRank gradients of NDCG.  Group
    sizes come from ``qid``; documents are sorted by query first when they
    are not contiguous.  ``n_jobs=1`` and ``deterministic=True`` with a
    fixed seed make a fit reproducible bit for bit.

    See Also
    --------
    refimpl.estimators.RankSVM : the linear pairwise reference.

    Examples
    --------
    >>> from refimpl.data import make_synthetic_letor
    >>> data = make_synthetic_letor(n_queries=30, seed=0)
    >>> X, y, qid = data.X, data.y, data.qid
    >>> from refimpl.estimators import LambdaMART
    >>> model = LambdaMART(n_estimators=20, num_leaves=7).fit(X, y, qid)
    >>> model.predict(X).shape
    (705,)
    >>> model.score(X, y, qid) > 0.8
    True

    Derived in: book/08_side_by_side.md#side-by-side

    Parameters
    ----------
    n_estimators, learning_rate, num_leaves, min_child_samples :
        As in ``lightgbm.LGBMRanker``.
    random_state : int, default 0
        LightGBM's seed.

    Attributes
    ----------
    model_ : lightgbm.LGBMRanker
    feature_importances_ : ndarray of int
        Number of splits on each feature.
    """

    # LightGBM holds these in C ints and caps num_leaves (its config check)
    _parameter_constraints: ClassVar[dict] = {
        "n_estimators": [_Interval(Integral, 1, _INT32_MAX, closed="both")],
        "learning_rate": [POSITIVE],
        "num_leaves": [_Interval(Integral, 2, LIGHTGBM_MAX_LEAVES, closed="both")],
        "min_child_samples": [_Interval(Integral, 0, _INT32_MAX, closed="both")],
        "random_state": [_Interval(Integral, 0, _INT32_MAX, closed="both")],
    }

    def __init__(self, n_estimators=100, learning_rate=0.1, num_leaves=31,
                 min_child_samples=20, random_state=0):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.random_state = random_state

    def estimate_memory(self, *, n_docs, n_pairs, n_features, max_query, grouped=True,
                        n_levels=None):
        """Memory of a fit on data of this shape: ``X`` reordered by query, LightGBM's binned
        copy and its own buffers.

        The scale guard's question (:class:`~refimpl.estimators.MemoryEstimate`;
        ``n_pairs``: preference pairs, ``max_query``: documents of the
        longest query, ``grouped``: each query's rows adjacent).
        """
        X = n_docs * n_features * 8
        # fit's X[order]; LightGBM's bin finding samples up to
        # bin_construct_sample_cnt = 200,000 rows and keeps each sampled
        # value as a double and its row as an int32 (12 bytes an entry,
        # freed after binning); the binned data, one byte an entry for up to
        # 255 bins (the default max_bin), and the row-wise copy
        # force_row_wise makes; the histogram pool, num_leaves histograms of
        # d x 256 bins of a gradient and a hessian double; gradients,
        # hessians (float32), scores and the label and query vectors; the
        # 1 MiB model-string buffer lightgbm's Python side allocates
        return MemoryEstimate(terms={"method": (
            X + 12 * min(n_docs, 200_000) * n_features + 2 * n_docs * n_features
            + int(self.num_leaves) * n_features * 256 * 16 + 4 * n_docs * 8
            + 2**20)})

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``."""
        from lightgbm import LGBMRanker

        self._validate_params()
        problem = _check_input(self, X, y, qid)
        X, y, groups = problem.X, problem.y, problem.groups
        _check_lambdarank_labels(y)
        order = groups.order
        model = LGBMRanker(
            objective="lambdarank", n_estimators=int(self.n_estimators),
            learning_rate=float(self.learning_rate),
            num_leaves=int(self.num_leaves),
            min_child_samples=int(self.min_child_samples),
            random_state=int(self.random_state),
            n_jobs=1, deterministic=True,
            force_row_wise=True, verbose=-1,
        )
        model.fit(X[order], y[order], group=groups.sizes)
        self.model_ = model
        self.feature_importances_ = np.asarray(model.feature_importances_)
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        """Scores of the boosted trees."""
        check_is_fitted(self, "model_")
        X = validate_X(self, X, reset=False)
        return np.asarray(self.model_.predict(X), dtype=np.float64)


def _check_lambdarank_labels(y):
    """LambdaRank's labels: integers in ``[0, 30]``, indices into ``label_gain``.

    LightGBM refuses others with its own error (or, for ``2.5``, an
    internal check); here the message names the label and the range.
    """
    y = np.asarray(y, dtype=np.float64)
    bad = (y < 0) | (y > LAMBDARANK_MAX_LABEL) | (y != np.floor(y))
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"LambdaMART needs relevance labels that are integers in [0, "
            f"{LAMBDARANK_MAX_LABEL}] (LightGBM's lambdarank gains 2**y - 1 "
            f"are defined for those), got y[{i}] = {float(y[i])!r} ({int(bad.sum())} "
            "such labels); map the labels to that range first")


def _fit_first_stage(X, y, qid, params, problem):
    """LifeRank with ``params`` fitted on the validated ``problem``.

    The function :attr:`LifeRankPipeline.memory` caches, keyed by the
    problem's arrays ``X``, ``y``, ``qid`` and ``params`` (``problem``, the
    same data validated and grouped, is not hashed).  Returns the fitted
    LifeRank and the warnings its fit raised, as ``(category, message)``,
    which the pipeline raises again on every fit, loaded or not.
    """
    life = LifeRank(**params)
    _inner(life, problem)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        life._fit(problem)
    return life, [(w.category, str(w.message)) for w in caught]


#: LifeRankPipeline's parameters of its LifeRank stage and of its RankSVMs,
#: as those stages declare them.
_LIFE_STAGE, _LIFE_DEFAULT = stage_params(
    LifeRank, ("n_components", "lam", "lr", "max_iter", "random_state"))
_SVM_STAGE, _SVM_DEFAULT = stage_params(RankSVM, ("C",))


class LifeRankPipeline(_Ranker, BaseEstimator):
    """LifeRank's extracted features, then a linear ranker on them.

    Pandey et al. (2018, Section 5.3) evaluate LifeRank by training RankSVM
    or linear regression on the ``k`` generated features ``X T``; here
    they are LifeRank's ``transform(X) = X diag(s)^-1 T`` (``s`` the
    features' scales, 1 on LETOR's, so that the second stage sees
    scale-free features).  The composition is linear in the original
    features, with weights ``diag(s)^-1 T v`` (``v`` those of the second
    stage), which ``coef_`` holds.

    See Also
    --------
    refimpl.estimators.LifeRank : the first stage.
    refimpl.estimators.RankSVM : the second stage (``ranker="ranksvm"``).
    refimpl.estimators.HingeRankSVM : SVMrank's L1 hinge, the paper's
        second stage (``ranker="ranksvm-hinge"``).
    refimpl.estimators.LinearRegressionRanker : the other second stage.

    Examples
    --------
    >>> from refimpl.data import make_synthetic_letor
    >>> data = make_synthetic_letor(n_queries=30, seed=0)
    >>> X, y, qid = data.X, data.y, data.qid
    >>> from refimpl.estimators import LifeRankPipeline
    >>> model = LifeRankPipeline(n_components=3, lam=0.05).fit(X, y, qid)
    >>> model.coef_.shape                     # diag(s)^-1 T v
    (30,)
    >>> model.score(X, y, qid) > 0.8
    True

    Derived in: book/08_side_by_side.md#side-by-side

    Parameters
    ----------
    n_components : int, default LifeRank's
        ``k``, the number of generated features.
    ranker : {"ranksvm", "ranksvm-hinge", "linreg"}, default "ranksvm"
        The second stage: :class:`RankSVM`, :class:`HingeRankSVM` (SVMrank,
        the paper's, on the extracted features as given:
        ``feature_scaling=None``) or :class:`LinearRegressionRanker`.
    C : float, default RankSVM's
        The RankSVMs' loss weight (each in its own convention: per pair for
        ``"ranksvm"``, per query as SVMrank for ``"ranksvm-hinge"``).
    lam, lr, max_iter, random_state :
        Passed to :class:`refimpl.estimators.LifeRank` (its ranges and
        defaults: the stages declare the parameters they receive).
    memory : None, str or object with joblib.Memory's interface, default None
        Caches the fitted first stage, as scikit-learn's ``Pipeline``
        caches its transformers: with a directory (or a
        :class:`joblib.Memory`), a fit whose LifeRank parameters
        (:attr:`FIRST_STAGE_PARAMS`) and data were fitted before loads that
        LifeRank instead of fitting it again, so a grid over ``C`` or
        ``ranker`` fits each LifeRank once.  The key is the parameters and
        the data (values, labels, query ids), not refimpl's code: clear the
        directory after changing refimpl (the experiment runner keys its
        stage cache by the code's hash).  None: no caching.

    Attributes
    ----------
    liferank_ : LifeRank
    ranker_ : RankSVM, HingeRankSVM or LinearRegressionRanker
    coef_ : ndarray of shape (n_features,)
        ``diag(s)^-1 T v``: ``liferank_.components_ /
        liferank_.feature_scale_[:, None] @ ranker_.coef_``.
    n_iter_ : int
        LifeRank's iterations.
    converged_ : bool
        Both stages certified: LifeRank's stopping test held before its
        ``max_iter`` and the RankSVM stage converged (least squares always
        does).  ``liferank_.converged_`` and ``ranker_.converged_`` tell
        which stage did not.
    """

    _parameter_constraints: ClassVar[dict] = {
        **_LIFE_STAGE,
        "ranker": [StrOptions({"ranksvm", "ranksvm-hinge", "linreg"})],
        **_SVM_STAGE,
        "memory": [None, str, HasMethods(["cache"])],
    }

    #: The parameters that determine the first stage (its LifeRank): fits
    #: that agree on them share it (``memory``, and the experiment runner's
    #: task order, which fits one task per first stage before the others).
    FIRST_STAGE_PARAMS = tuple(_LIFE_STAGE)

    def __init__(self, n_components=_LIFE_DEFAULT["n_components"], ranker="ranksvm",
                 C=_SVM_DEFAULT["C"], lam=_LIFE_DEFAULT["lam"], lr=_LIFE_DEFAULT["lr"],
                 max_iter=_LIFE_DEFAULT["max_iter"],
                 random_state=_LIFE_DEFAULT["random_state"], memory=None):
        self.n_components = n_components
        self.ranker = ranker
        self.C = C
        self.lam = lam
        self.lr = lr
        self.max_iter = max_iter
        self.random_state = random_state
        self.memory = memory

    def estimate_memory(self, *, n_docs, n_pairs, n_features, max_query, grouped=True,
                        n_levels=None):
        """Memory of a fit on data of this shape: LifeRank's logistic pairs, then the
        ranker's (RankSVM: the squared hinge).

        The scale guard's question (:class:`~refimpl.estimators.MemoryEstimate`;
        ``n_pairs``: preference pairs, ``max_query``: documents of the
        longest query, ``grouped``: each query's rows adjacent).
        """
        shape = {"n_docs": n_docs, "n_pairs": n_pairs, "max_query": max_query,
                 "grouped": grouped, "n_levels": n_levels}
        # the stages run one after the other: the peak is the larger of
        # LifeRank's and the ranker's on the k columns of X T (plus X T)
        first = LifeRank(n_components=self.n_components).estimate_memory(
            n_features=n_features, **shape)
        second = self._ranker().estimate_memory(n_features=self.n_components, **shape)
        features = n_docs * self.n_components * 8
        stage_terms = {**second.terms,
                       "X T": second.terms.get("X T", 0) + features}
        if sum(first.terms.values()) >= sum(stage_terms.values()):
            terms = first.terms
        else:
            terms = stage_terms
        name = {"ranksvm-hinge": "cutting planes"}.get(self.ranker, second.backend)
        backend = ("pairs (logistic)" if name == "-"
                   else f"pairs (logistic) + {name}")
        return MemoryEstimate(backend=backend, terms=terms,
                              hinge_backend=second.hinge_backend)

    def _ranker(self):
        """The second stage, unfitted (its fit and its memory model)."""
        if self.ranker == "linreg":
            return LinearRegressionRanker()
        if self.ranker == "ranksvm-hinge":
            # SVMrank on the extracted features as given (Joachims' problem,
            # as LifeRank's protocol fits it: liferank_protocol.HINGE)
            return HingeRankSVM(C=self.C, feature_scaling=None)
        return RankSVM(C=self.C)

    def _parameter_ranges(self):
        """LifeRank's ``lam`` (see ``LifeRank._parameter_ranges``) and the
        second stage's ``C``."""
        return {**liferank_ranges(self.lam, self.lr),
                "C": (self.C, *WEIGHT_RANGE)}

    def fit(self, X, y, qid=None):
        """Fit LifeRank, then the ranker on its features ``X diag(s)^-1 T``;
        returns ``self``."""
        self._validate_params()
        problem = _check_input(self, X, y, qid)
        X = problem.X
        params = {p: getattr(self, p) for p in self.FIRST_STAGE_PARAMS}
        refuse_single_document(_inner(LifeRank(**params), problem),
                               problem.n_samples)
        fit_stage = _fit_first_stage
        if self.memory is not None:
            fit_stage = check_memory(self.memory).cache(_fit_first_stage,
                                                        ignore=["problem"])
        with self._blaming(problem.X):
            life, caught = fit_stage(problem.X, problem.y, problem.qid, params,
                                     problem)
        for category, message in caught:
            warnings.warn(message, category, stacklevel=2)
        # the second stage's features X diag(s)^-1 T are new data (checked
        # once); the labels and the query grouping are the problem's
        features = RankingProblem(X=check_X(life._features(X)),
                                  y=problem.y, qid=problem.qid, groups=problem.groups)
        second = self._ranker()
        _inner(second, features)
        with self._blaming(problem.X):
            second._fit(features)
        self.liferank_ = life
        self.ranker_ = second
        self.coef_ = np.asarray(life._map() @ second.coef_, dtype=np.float64)
        self.n_iter_ = life.n_iter_
        # both stages: a first stage at its cap or a second stage that did
        # not converge must not read as a converged pipeline (least squares
        # is exact by construction, so it has no converged_)
        self.converged_ = bool(life.converged_ and getattr(second, "converged_", True))
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        """Scores ``X diag(s)^-1 T v``."""
        check_is_fitted(self, "coef_")
        X = validate_X(self, X, reset=False)
        return np.asarray(X @ self.coef_).ravel()
