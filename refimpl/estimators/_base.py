"""What every estimator of :mod:`refimpl.estimators` shares.

The declarative parameter validation (scikit-learn's
``_parameter_constraints``, raising :class:`~refimpl.exceptions.ParameterError`),
the ``predict`` / ``score`` of the linear rankers, the empty-model warning
and the threshold of the regularisation at which every weight vanishes.
"""

from __future__ import annotations

import inspect
import math
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._compat.sklearn_params import (
    Interval,
    InvalidParameterError,
    Options,
    StrOptions,
    validate_parameter_constraints,
)
from .._validation import validate_X
from ..exceptions import (DataError, DivergenceError, EmptyModelWarning,
                          NonFiniteError, ParameterError)
from ..losses._hinge_hessian import TREE_BLOCK_ROWS
from ..losses._protocol import _max_abs
from ..losses.squared_hinge import memory_terms as _hinge_memory_terms
from ..metrics import mean_ndcg


class _Interval(Interval):
    """scikit-learn's ``Interval``, except that a bool is not a number here.

    ``max_iter=True`` or ``C=True`` is a mistake, not ``1``: scikit-learn's
    ``Interval`` accepts bools (``bool`` is an ``Integral``), so it is
    refused explicitly.
    """

    def is_satisfied_by(self, val):
        if isinstance(val, (bool, np.bool_)):
            return False
        return super().is_satisfied_by(val)


#: Reusable constraints (scikit-learn's ``_param_validation`` vocabulary).
POSITIVE = _Interval(Real, 0, None, closed="neither")
NONNEGATIVE = _Interval(Real, 0, None, closed="left")
REAL = _Interval(Real, None, None, closed="neither")
COUNT = _Interval(Integral, 1, None, closed="left")
#: An iteration budget: any count the solvers' compiled loops hold in an
#: int64 (``max_iter=10**9`` means "until the stopping test holds").
ITERATIONS = _Interval(Integral, 1, np.iinfo(np.int64).max, closed="both")
NONNEG_INT = _Interval(Integral, 0, None, closed="left")
SEED = [NONNEG_INT, None, np.random.Generator, np.random.SeedSequence]


def options(values):
    """``StrOptions`` of the strings in ``values`` (plus ``False`` if listed)."""
    strings = {v for v in values if isinstance(v, str)}
    out = [StrOptions(strings)]
    if any(v is False for v in values):
        out.append(Options(bool, {False}))
    return out


def stage_params(stage, names):
    """``(constraints, defaults)`` of the parameters ``names`` of the estimator class ``stage``.

    A composite estimator (FSMSVM, LifeRankPipeline) declares the
    parameters it passes on to a stage from the stage's own declaration,
    so that a change of a stage's range or default is the composite's too.
    """
    signature = inspect.signature(stage.__init__).parameters
    return ({n: stage._parameter_constraints[n] for n in names},
            {n: signature[n].default for n in names})


class LossBackend(StrEnum):
    """The loss backend(s) a fit uses, as the runner records them.

    The squared hinge's backends (``refimpl.losses.squared_hinge.BACKENDS``
    resolved: ``"tree"``, ``"pairs"``, ``"numpy"``), LifeRank's logistic loss on
    explicit pairs, that followed by its second stage's, or ``"-"`` (no
    pairwise loss).  A ``StrEnum``: each member is its string, so tables and
    JSON record the same text as before.

    Derived in: book/10_running_experiments.md#run-scale-guard
    """

    NONE = "-"
    TREE = "tree"
    PAIRS = "pairs"
    NUMPY = "numpy"
    LOGISTIC = "pairs (logistic)"
    LOGISTIC_TREE = "pairs (logistic) + tree"
    LOGISTIC_PAIRS = "pairs (logistic) + pairs"
    LOGISTIC_NUMPY = "pairs (logistic) + numpy"
    LOGISTIC_CUTTING_PLANES = "pairs (logistic) + cutting planes"


#: The backends of the pairwise squared hinge (``MemoryEstimate.hinge_backend``).
HINGE_BACKENDS = (LossBackend.TREE, LossBackend.PAIRS, LossBackend.NUMPY)


def _loss_backend(value, name, accepted):
    """``value`` as a member of ``accepted`` (a member or its exact string)."""
    if isinstance(value, str):
        for member in accepted:
            if value == member.value:
                return member
    raise DataError(
        f"MemoryEstimate {name} must be one of "
        f"{', '.join(repr(m.value) for m in accepted)}; got {value!r}")


@dataclass(frozen=True)
class MemoryEstimate:
    """What a fit allocates beyond the data: an estimator's memory model.

    Returned by the ``estimate_memory`` method of every estimator of
    :mod:`refimpl.estimators`, which the scale guard
    (:func:`refimpl.experiments.scale.check_scale`) asks instead of
    keeping lists of method names.

    Attributes
    ----------
    backend : LossBackend
        What the runner records as the task's backend; given as a member or
        its string (``"tree"``), anything else is refused at construction.
    terms : dict of str to int
        Bytes by part (the scale guard adds the process, the data and the
        runner's own arrays).
    hinge_backend : LossBackend or None
        The backend of the pairwise squared hinge when the fit uses it, one of
        :data:`HINGE_BACKENDS` (the scale guard refuses forced explicit
        pairs where the tree applies).

    Raises
    ------
    DataError
        A ``backend`` or ``hinge_backend`` that is not one of the accepted ones.

    Derived in: book/10_running_experiments.md#run-scale-guard
    """

    backend: LossBackend = LossBackend.NONE
    terms: dict = field(default_factory=dict)
    hinge_backend: LossBackend | None = None

    def __post_init__(self):
        object.__setattr__(self, "backend",
                           _loss_backend(self.backend, "backend", tuple(LossBackend)))
        if self.hinge_backend is not None:
            object.__setattr__(self, "hinge_backend", _loss_backend(
                self.hinge_backend, "hinge_backend", HINGE_BACKENDS))


def squared_hinge_memory(*, n_docs, n_pairs, n_features, n_levels=None, grouped=True,
                         backend="auto", which="all", extra_bytes_per_pair=0,
                         terms=None, hess_per_grad=None):
    """:class:`MemoryEstimate` of a fit on the pairwise squared hinge.

    The loss's own terms (:func:`refimpl.losses.squared_hinge.memory_terms`)
    plus the estimator's ``terms``.  ``n_levels``: distinct relevance labels
    of the training split (``None``: not known, explicit pairs counted
    wherever ``"auto"`` may build them); ``hess_per_grad``: what the
    estimator passes to :class:`~refimpl.losses.PairwiseSquaredHinge` (0
    for a first-order solver).  With both, ``"auto"`` resolves here by the
    function the fit calls
    (:func:`refimpl.losses.squared_hinge.resolve_backend`).
    """
    hinge, own = _hinge_memory_terms(
        n_docs=n_docs, n_pairs=n_pairs, n_features=n_features, n_levels=n_levels,
        grouped=grouped, backend=backend, which=which,
        extra_bytes_per_pair=extra_bytes_per_pair, hess_per_grad=hess_per_grad)
    return MemoryEstimate(backend=hinge, terms={**own, **(terms or {})},
                          hinge_backend=hinge)


def prox_newton_memory(*, n_docs, n_pairs, n_features, max_query, backend):
    """Bytes proximal Newton (:func:`refimpl.solvers.prox_newton`) allocates
    beyond its loss, on a dense ``X``, by term.

    The generalised Hessian is built once per step
    (``losses._hinge_hessian``).  With explicit pairs (``PairHessian``):
    the active mask ``margin - (z[pi] - z[pj]) > 0`` gathers ``z[pi]`` and ``z[pj]`` and subtracts them (24 bytes a pair
    live at once when NumPy does not reuse a temporary), and keeps the mask
    of the previous step beside the new one (2 bytes); ``LX`` is a matrix of
    the shape of ``X`` (``active_laplacian_matmul`` writes into it).  On
    the tree (``TreeHessian``): blocks of up to ``TREE_BLOCK_ROWS`` rows
    (one query when it is longer), ``Xb`` and ``out``, the kernel's
    ``cum`` (``2 l_q + 1`` rows, ``kernels.laplacian_tree``) and contiguous
    scores and labels.  Either way a few ``d x d`` matrices: ``H``, its
    copy with the damping, the one kept for the next step and ``H + H.T``.
    """
    d8 = n_features * 8
    hessians = 4 * n_features * d8
    if backend == "tree":
        block = max(min(TREE_BLOCK_ROWS, n_docs), max_query)
        return {"newton hessian": 2 * block * d8 + (2 * max_query + 1) * d8
                + 2 * n_docs * 8 + hessians}
    return {"newton hessian": max((24 + 2) * n_pairs, 2 * n_pairs + n_docs * d8)
            + hessians}


class _ValidatedParams:
    """``_validate_params`` from the class's ``_parameter_constraints``.

    The dict maps every ``__init__`` parameter to a list of accepted
    constraints, as scikit-learn's own estimators declare them; a value
    outside all of them is a :class:`~refimpl.exceptions.ParameterError`
    naming the parameter, the accepted range and the value.
    """

    _parameter_constraints: ClassVar[dict] = {}
    #: ``name -> (low, high)``: where each weight keeps a fit on features of
    #: normal scale within double precision (see :meth:`_blaming`).
    _extreme_ranges: ClassVar[dict] = {}

    def _parameter_ranges(self):
        """``name -> (value, low, high)`` for :func:`blame_extreme_parameters`."""
        return {name: (getattr(self, name), low, high)
                for name, (low, high) in self._extreme_ranges.items()}

    def _blaming(self, X):
        """An overflow of the fit on ``X`` named after the extreme parameter
        that caused it (:func:`blame_extreme_parameters`)."""
        return blame_extreme_parameters(type(self).__name__, X,
                                        self._parameter_ranges())

    def __sklearn_tags__(self):
        # X may be a scipy.sparse matrix (every estimator converts it to CSR);
        # y (the relevance labels) is needed by every fit.
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags

    def _validate_params(self):
        try:
            validate_parameter_constraints(
                self._parameter_constraints, self.get_params(deep=False),
                caller_name=type(self).__name__)
        except InvalidParameterError as err:
            raise ParameterError(str(err)) from None


class _Ranker(_ValidatedParams):
    """``score`` of every ranker, and ``qid`` routed to ``fit`` and ``score``.

    With scikit-learn's metadata routing on
    (``sklearn.set_config(enable_metadata_routing=True)``), ``qid`` is
    requested by ``fit`` and ``score`` by default, so that
    ``GridSearchCV(est, grid, cv=GroupKFold(k)).fit(X, y, groups=qid, qid=qid)``
    fits on the training folds' queries and scores each validation fold per
    query.  Without routing, scikit-learn passes ``qid`` to ``fit`` but not to
    ``score``, which would then treat the whole fold as one query and report
    a different (wrong) number: ``score`` refuses ``qid=None`` for a model
    fitted on more than one query (``n_queries_in_ > 1``).
    """

    __metadata_request__fit: ClassVar[dict] = {"qid": True}
    __metadata_request__score: ClassVar[dict] = {"qid": True}

    def score(self, X, y, qid=None, sample_weight=None):
        """Mean NDCG (LETOR 4.0 convention) of the predicted ranking, per query.

        ``sample_weight`` exists only because scikit-learn's ``Pipeline.score``
        passes ``sample_weight=None`` on (with metadata routing on, a final
        step without it fails); per-document weights have no meaning for a
        per-query NDCG, so any other value is refused.

        Raises
        ------
        DataError
            If ``qid`` is None but the model was fitted on several queries:
            the documents of ``X`` would be scored as one query.
        ParameterError
            If ``sample_weight`` is given.
        """
        if sample_weight is not None:
            raise ParameterError(
                f"{type(self).__name__}.score takes no sample_weight (the mean NDCG "
                "weighs every query equally), got an array")
        n_queries = getattr(self, "n_queries_in_", 1)
        if qid is None and n_queries > 1:
            raise DataError(
                f"{type(self).__name__}.score got no qid, but the model was fitted on "
                f"{n_queries} queries: without qid every document of X counts as one "
                "query and the mean NDCG is not the per-query one. Pass qid; in "
                "GridSearchCV / cross_validate turn metadata routing on "
                "(sklearn.set_config(enable_metadata_routing=True)) so that qid "
                "reaches score")
        return mean_ndcg(y, self.predict(X), qid)


class LinearRanker(_Ranker, BaseEstimator):
    """Base class of the linear rankers: ``predict``, ``score``, qid routing, tags.

    A subclass declares ``_parameter_constraints`` (scikit-learn's
    vocabulary), defines ``__init__`` (storing its parameters unchanged),
    ``fit(X, y, qid=None)`` (which calls ``self._validate_params()``, then
    ``refimpl._validation.check_fit_input`` once, and sets ``coef_``)
    and ``estimate_memory`` (a :class:`MemoryEstimate`); CONTRIBUTING.md
    walks through one.

    ``predict`` checks ``X`` as scikit-learn does (``refimpl._validation.validate_X``):
    the number of columns, and for a data frame fitted with string column
    names, the names and their order (``feature_names_in_``).  ``score`` is
    the mean NDCG per query (it refuses ``qid=None`` for a model fitted on
    several queries).

    Derived in: book/10_running_experiments.md#run-registry
    """

    def predict(self, X):
        """Ranking scores ``X @ coef_`` (sort each query by decreasing score)."""
        check_is_fitted(self, "coef_")
        X = validate_X(self, X, reset=False)
        return check_predictions(np.asarray(X @ self.coef_).ravel(),
                                 type(self).__name__, X, self.coef_)


def _grad_at_zero(loss):
    """``grad L(0)`` of a smooth loss (``fun`` first: the losses cache their state)."""
    z = np.zeros(loss.n_features)
    loss.fun(z)
    return np.asarray(loss.grad(z), dtype=np.float64)


def _l1_null_C(g, beta=None):
    """The largest ``C`` for which ``w = 0`` minimises ``sum_j beta_j |w_j| + C L(w)``.

    ``0`` is optimal iff ``0`` is in ``C grad L(0) + [-beta, beta]``, i.e.
    ``C |g_j| <= beta_j`` for every ``j``: ``C <= min_j beta_j / |g_j|`` (over
    ``g_j != 0``; ``inf`` when ``g = 0``).  The analogue of scikit-learn's
    ``alpha_max = ||X^T y||_inf / n`` for a loss weight instead of a penalty
    weight.
    """
    g = np.abs(np.asarray(g, dtype=np.float64))
    beta = np.ones_like(g) if beta is None else np.asarray(beta, dtype=np.float64)
    nz = g > 0
    if not np.any(nz):
        return math.inf
    return float(np.min(beta[nz] / g[nz]))


def _on_all_columns(w, columns, n_features):
    """``w``, fitted on the pair support's ``columns`` (None: every column),
    as a weight vector over all ``n_features`` (zero off the support)."""
    if columns is None:
        return w
    coef = np.zeros(n_features)
    coef[columns] = w
    return coef


def _warn_empty(estimator, message, *, parameter=None, value=None, threshold=None,
                stacklevel=3):
    """Emit :class:`~refimpl.exceptions.EmptyModelWarning` when ``coef_`` is all zero.

    ``stacklevel`` 3 points at the caller of a ``fit`` that calls this directly.
    """
    if np.any(estimator.coef_):
        return
    warnings.warn(
        EmptyModelWarning(
            f"{type(estimator).__name__} has no non-zero weight (a constant "
            f"ranker, n_iter_ = {estimator.n_iter_}): {message}",
            parameter=parameter, value=value, threshold=threshold),
        stacklevel=stacklevel)


#: Features up to this magnitude are of normal scale (LETOR's are in
#: [0, 1]): a fit on them that overflows does so because of a parameter.
NORMAL_FEATURE_MAGNITUDE = 1e6
#: Where a loss or penalty weight (``C``, ``lambda1``, ``r``, ...) keeps a
#: fit on features of normal scale within double precision with a wide
#: margin; only named when a fit outside it overflows.
WEIGHT_RANGE = (1e-15, 1e15)


@contextmanager
def blame_extreme_parameters(owner, X, ranges):
    """Re-raise an overflow of a fit on normal features as a :class:`ParameterError`.

    A :class:`~refimpl.exceptions.NonFiniteError` or
    :class:`~refimpl.exceptions.DivergenceError` raised inside the block
    blames the scale of the features; when ``X`` is of normal scale (up to
    :data:`NORMAL_FEATURE_MAGNITUDE`) and a parameter of ``ranges``
    (``name -> (value, low, high)``, checked in order) lies outside its
    range, that parameter is the cause, and the error names it, its range
    and its value.  Otherwise the original error goes on.
    """
    try:
        yield
    except (NonFiniteError, DivergenceError) as err:
        m = feature_magnitude_of(X)
        if not m <= NORMAL_FEATURE_MAGNITUDE:
            raise
        # what failed, without the solver's guess at the cause
        what = str(err).split(" Likely cause:")[0]
        for name, (value, low, high) in ranges.items():
            if value is not None and not low <= float(value) <= high:
                raise ParameterError(
                    f"The {name!r} parameter of {owner} must be in the range "
                    f"[{low:g}, {high:g}] for this fit. Got {value!r} instead: the "
                    f"features are of normal scale (|X| up to {m:.1e}), so the "
                    f"extreme {name} made the fit overflow ({type(err).__name__}: "
                    f"{what})") from err
        raise


def feature_magnitude_of(X):
    """``max |X_ij|`` of a dense or sparse ``X`` (0 when empty)."""
    return _max_abs(X)


def _check_at_most(estimator, name, value, bound, what):
    """An integer parameter that must not exceed a size known only at fit time."""
    if value > bound:
        raise ParameterError(
            f"The {name!r} parameter of {type(estimator).__name__} must be an int "
            f"in the range [1, {bound}] ({what}). Got {value!r} instead.")
    return int(value)


def check_predictions(scores, who, X=None, coef=None):
    """Raise :class:`NonFiniteError` if any predicted score is NaN or infinite.

    ``predict`` of the estimators calls this on ``X @ coef_``: a model fitted
    on rescaled data and applied to raw features, or features beyond the
    range of doubles, overflow there, and a NaN score would silently sort
    anywhere in a ranking.
    """
    scores = np.asarray(scores)
    if np.all(np.isfinite(scores)):
        return scores
    n_bad = int(np.count_nonzero(~np.isfinite(scores)))
    parts = []
    if coef is not None:
        c = np.asarray(coef, dtype=np.float64)
        if not np.all(np.isfinite(c)):
            parts.append("the model's weights are not finite")
        elif c.size:
            parts.append(f"the weights reach {float(np.max(np.abs(c))):.1e}")
    if X is not None:
        parts.append(f"X has entries of magnitude up to {_max_abs(X):.1e}")
    detail = "; ".join(parts) if parts else "the product X @ coef_ overflowed"
    raise NonFiniteError(
        f"{who}.predict: {n_bad} of {scores.size} scores are NaN or infinite "
        f"({detail}), and a NaN score would sort anywhere in a ranking. "
        f"Likely cause: the scale of the features. Remedy: rescale X the way "
        f"it was rescaled for fit (e.g. refimpl.data.query_level_normalize, or "
        f"sklearn.preprocessing.StandardScaler / MaxAbsScaler)."
    )
