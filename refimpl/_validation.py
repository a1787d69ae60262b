"""Input validation and query grouping shared by every module.

Ranking data is a triple ``(X, y, qid)``.  User data need not list a query's
documents contiguously or in qid order, so every routine works through a
:class:`QueryGroups` object: a *stable* permutation that brings the documents
of each query together (keeping their input order inside the query) and the
boundaries of each query in that permutation.  Kernels receive ``order`` and
``indptr`` and never see raw, ungrouped data.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .exceptions import DataError, DataTypeError
from .kernels.pairs import nonzero_columns


@dataclass(frozen=True)
class QueryGroups:
    """Documents grouped by query.

    Attributes
    ----------
    order : ndarray of int64, shape (n,)
        Stable permutation: ``order[indptr[q]:indptr[q + 1]]`` are the indices
        (into the caller's arrays) of the documents of query ``q``, in input order.
    indptr : ndarray of int64, shape (n_queries + 1,)
        Query boundaries in ``order``.
    qids : ndarray, shape (n_queries,)
        The query identifiers, in increasing order.
    """

    order: np.ndarray
    indptr: np.ndarray
    qids: np.ndarray

    @property
    def n_queries(self) -> int:
        return len(self.qids)

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.indptr)

    @property
    def is_contiguous(self) -> bool:
        """True when the input already lists each query's documents together."""
        return bool(np.all(self.order == np.arange(len(self.order))))

    @cached_property
    def runs(self) -> np.ndarray | None:
        """Row boundaries of the queries if each one's rows are adjacent, else ``None``.

        ``order`` lists query ``q``'s documents in input order, so query
        ``q`` occupies adjacent rows exactly when ``order[indptr[q] + a] =
        order[indptr[q]] + a`` for every ``a``.  Then the queries, in order
        of appearance, partition the rows, and the sorted first rows plus
        ``n`` are the boundaries.  LETOR files list each query's documents
        together (sorted by qid or not), so this holds for them.  Computed
        once per grouping (a fit asks several times: the backend's cost
        model, the one-pass path, the scale guard).
        """
        sizes = np.diff(self.indptr)
        starts = self.order[self.indptr[:-1]]
        expected = (np.repeat(starts - self.indptr[:-1], sizes)
                    + np.arange(len(self.order)))
        if not np.array_equal(self.order, expected):
            return None
        return np.append(np.sort(starts), len(self.order)).astype(np.int64)


def group_queries(qid, n_samples: int | None = None) -> QueryGroups:
    """Group documents by query id, stably.

    ``qid=None`` means a single query holding every document (so that
    scikit-learn's estimator checks, which pass no qid, remain usable).
    No document at all is an error: there is no query to form.
    """
    if qid is None:
        if n_samples is None:
            raise DataError("qid is None and the number of documents is unknown")
        if n_samples == 0:
            raise DataError("there are no documents (0 rows): at least one is needed")
        return QueryGroups(
            order=np.arange(n_samples, dtype=np.int64),
            indptr=np.array([0, n_samples], dtype=np.int64),
            qids=np.zeros(1, dtype=np.int64),
        )
    qid = np.asarray(qid)
    if qid.ndim != 1:
        raise DataError(f"qid must be one-dimensional, got shape {qid.shape}")
    if n_samples is not None and len(qid) != n_samples:
        raise DataError(
            f"qid has {len(qid)} entries but there are {n_samples} documents"
        )
    if qid.dtype.kind == "f" and not np.all(np.isfinite(qid)):
        raise DataError("qid contains NaN or infinite values")
    if len(qid) == 0:
        raise DataError(
            "qid is empty: there are no documents (0 rows), at least one is needed"
        )
    order = np.argsort(qid, kind="stable").astype(np.int64)
    sorted_q = qid[order]
    starts = np.flatnonzero(np.r_[True, sorted_q[1:] != sorted_q[:-1]])
    indptr = np.r_[starts, len(qid)].astype(np.int64)
    return QueryGroups(order=order, indptr=indptr, qids=sorted_q[starts])


def check_labels(y, n_samples: int | None = None, name: str = "y") -> np.ndarray:
    """Return graded relevance labels as float64, rejecting NaN and wrong shapes."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise DataError(f"{name} must be one-dimensional, got shape {y.shape}")
    if n_samples is not None and len(y) != n_samples:
        raise DataError(
            f"{name} has {len(y)} entries but X has {n_samples} rows"
        )
    if y.dtype.kind not in "biuf":
        # "Unknown label type" is scikit-learn's wording for it
        raise DataError(f"{name} must be numeric, got dtype {y.dtype} (Unknown label "
                        "type: relevance labels are numbers)")
    y = y.astype(np.float64)
    if not np.all(np.isfinite(y)):
        bad = int(np.flatnonzero(~np.isfinite(y))[0])
        raise DataError(f"{name} contains NaN or infinite values (first at index {bad})")
    return y


def check_scores(s, n_samples: int, name: str = "scores") -> np.ndarray:
    """Return ranking scores as float64, rejecting NaN and wrong shapes."""
    return check_labels(s, n_samples, name=name)


def check_X(X, name: str = "X"):
    """Return X as C-contiguous float64 (dense) or canonical CSR, all finite."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        X.sum_duplicates()
        data = X.data
    else:
        X = np.asarray(X)
        if X.dtype.kind not in "biuf":
            raise DataError(f"{name} must be numeric, got dtype {X.dtype}")
        X = np.ascontiguousarray(X, dtype=np.float64)
        data = X
    if X.ndim != 2:
        raise DataError(f"{name} must be two-dimensional, got shape {X.shape}")
    if not _all_finite(data):
        raise DataError(f"{name} contains NaN or infinite values")
    return X


def _all_finite(a) -> bool:
    """Whether every entry of ``a`` is finite, at the cost of a sum.

    A finite sum proves it (a NaN or an infinity survives every addition);
    only otherwise, a NaN or infinity or the overflow of large finite
    entries, are the entries tested one by one.  (As scikit-learn's own
    check; on a 301,916 x 136 matrix 10 ms instead of 20.)
    """
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.sum(a)
    return bool(np.isfinite(total)) or bool(np.all(np.isfinite(a)))


#: :meth:`RankingProblem.pair_support` restricts a problem only when this
#: share of ``X``'s entries or more lies outside its pair support: a solver
#: reads ``X`` tens of times, the restriction copies it once (on a
#: 301,916 x 136 set where 63 documents have no pair, the copy took 0.8 s,
#: more than twice TRON's solve).
PAIR_SUPPORT_MIN_SHARE = 0.1


@dataclass(frozen=True)
class RankingProblem:
    """Ranking data ``(X, y, qid)`` validated once, with its query grouping.

    Built by :func:`ranking_problem` (or, at an estimator's ``fit``, by
    :func:`check_fit_input`) and passed down as it is: :mod:`refimpl.pairs`,
    the losses of :mod:`refimpl.losses` and their backends accept it in
    place of ``(X, y, qid)`` and then neither check the arrays again nor
    re-group ``qid``.

    Attributes
    ----------
    X : ndarray of float64 (C-contiguous) or scipy.sparse.csr_matrix, shape (n, d)
        As :func:`check_X` returns it: all finite.
    y : ndarray of float64, shape (n,)
        Graded relevance labels, as :func:`check_labels` returns them.
    qid : array-like of shape (n,) or None
        The query ids as given (``None``: one query).
    groups : QueryGroups
        The grouping of ``qid`` (:func:`group_queries`).
    """

    X: object
    y: np.ndarray
    qid: object
    groups: QueryGroups

    @property
    def order(self) -> np.ndarray:
        """``groups.order``: the stable permutation grouping the queries."""
        return self.groups.order

    @property
    def indptr(self) -> np.ndarray:
        """``groups.indptr``: query boundaries in :attr:`order`."""
        return self.groups.indptr

    @property
    def qids(self) -> np.ndarray:
        """``groups.qids``: the distinct query ids, increasing."""
        return self.groups.qids

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_queries(self) -> int:
        return self.groups.n_queries

    def with_columns(self, columns) -> RankingProblem:
        """The same documents and queries restricted to the features ``columns``.

        Nothing is validated or grouped again: a column subset of a checked
        ``X`` is checked, and ``y``, ``qid`` and the grouping are unchanged.
        """
        X = self.X[:, columns]
        if sp.issparse(X):
            # canonical CSR, as check_X returns it (the same summation order)
            X = sp.csr_matrix(X, dtype=np.float64)
            X.sum_duplicates()
        else:
            X = np.ascontiguousarray(X)
        return RankingProblem(X=X, y=self.y, qid=self.qid, groups=self.groups)

    def scaled_columns(self) -> tuple[RankingProblem, np.ndarray]:
        """Each feature divided by its largest magnitude, and those scales.

        Returns ``(problem, s)`` with ``s_j = max_i |x_ij|`` (1 for a column
        of zeros) and ``problem.X = X diag(s)^{-1}``, every entry in
        ``[-1, 1]``; ``y``, ``qid`` and the grouping are unchanged.  A fit
        on it is the same for ``X diag(c)``, every ``c > 0``: each column's
        scale cancels.  On LETOR's query-level normalised features every
        column's maximum is 0 or 1, so ``s = 1`` and this problem itself is
        returned: a fit that scales its columns is then the plain fit.
        """
        X = self.X
        if sp.issparse(X):
            peak = (abs(X).max(axis=0).toarray().ravel() if X.nnz
                    else np.zeros(X.shape[1]))
        else:
            peak = (np.abs(X).max(axis=0) if X.shape[0]
                    else np.zeros(X.shape[1]))
        s = np.where(peak > 0.0, peak, 1.0).astype(np.float64)
        if np.all(s == 1.0):
            return self, s
        if sp.issparse(X):
            X = X.copy()
            X.data = X.data / s[X.indices]
        else:
            X = np.ascontiguousarray(X / s)
        return RankingProblem(X=X, y=self.y, qid=self.qid,
                              groups=self.groups), s

    def pair_support(self, min_share=PAIR_SUPPORT_MIN_SHARE):
        """The documents and features that a pairwise loss can see.

        A query whose documents all share one label has no preference pair,
        so its documents enter no pairwise loss and none of its derivatives;
        a feature that is 0 on every other document has a zero gradient
        component at every ``w``.  Returns ``(problem, columns)``: this
        problem restricted to the queries with two labels or more and (for
        a dense ``X``) to the features not identically 0 on them (all of
        them when every one is), and the kept feature indices (``None``:
        all kept).  Minimisers of the loss
        plus a regulariser that is 0 at ``w_j = 0`` are those of the
        restricted problem with ``w_j = 0`` for the dropped features; a
        solver streams less data (on MQ2008 Fold 1 training, 7,903 x 40 of
        9,630 x 46).  The problem itself when the dropped entries are fewer
        than ``min_share`` of ``X``'s (default
        :data:`PAIR_SUPPORT_MIN_SHARE`: the restricted copy would cost more
        than it saves), or when no query has a pair (the loss then says so).
        """
        order, indptr = self.order, self.indptr
        sizes = np.diff(indptr)
        ys = self.y[order]
        starts = indptr[:-1]
        paired = np.maximum.reduceat(ys, starts) > np.minimum.reduceat(ys, starts)
        if not paired.any():
            return self, None
        keep = np.empty(self.n_samples, dtype=bool)
        keep[order] = np.repeat(paired, sizes)
        rows = np.flatnonzero(keep)
        columns = None
        if not sp.issparse(self.X):
            seen = np.zeros(self.n_features, dtype=bool)
            if 0 < nonzero_columns(self.X, rows, seen) < self.n_features:
                columns = np.flatnonzero(seen)
        kept = len(rows) * (self.n_features if columns is None else len(columns))
        whole = self.n_samples * self.n_features
        if kept == whole or kept > (1.0 - min_share) * whole:
            return self, None
        if len(rows) == self.n_samples:
            rows = None
        X = self.X if rows is None else self.X[rows]
        if columns is not None:
            X = np.ascontiguousarray(X[:, columns])
        if rows is None:
            return RankingProblem(X=X, y=self.y, qid=self.qid,
                                  groups=self.groups), columns
        # the kept queries, their documents renumbered in the same order
        renumber = np.cumsum(keep) - 1
        kept_order = order[keep[order]]
        groups = QueryGroups(
            order=renumber[kept_order].astype(np.int64),
            indptr=np.r_[0, np.cumsum(sizes[paired])].astype(np.int64),
            qids=self.qids[paired])
        qid = None if self.qid is None else np.asarray(self.qid)[rows]
        return RankingProblem(X=X, y=self.y[rows], qid=qid,
                              groups=groups), columns


def ranking_problem(X, y=None, qid=None) -> RankingProblem:
    """Validate ``(X, y, qid)`` together, once; return a :class:`RankingProblem`.

    :func:`check_X`, then :func:`check_labels` and :func:`group_queries`
    against the number of rows of ``X`` (their errors, e.g. "y has 46
    entries but X has 47 rows").  A :class:`RankingProblem` given as ``X``
    (with ``y`` and ``qid`` None) is returned unchanged.
    """
    if isinstance(X, RankingProblem):
        if y is not None or qid is not None:
            raise DataError(
                "a RankingProblem already holds y and qid: pass it alone")
        return X
    X = check_X(X)
    n = X.shape[0]
    y = check_labels(y, n)
    return RankingProblem(X=X, y=y, qid=qid, groups=group_queries(qid, n))


def check_ranking_data(X, y, qid):
    """Validate ``(X, y, qid)`` together; return ``(X, y, groups)``.

    The tuple form of :func:`ranking_problem`.
    """
    problem = ranking_problem(X, y, qid)
    return problem.X, problem.y, problem.groups


def check_nonnegative(value, name: str) -> float:
    """A regularisation-like parameter: finite and >= 0, else a named error."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DataError(f"{name} must be a real number, got {value!r}") from None
    if not np.isfinite(v) or v < 0:
        raise DataError(f"{name} must be finite and non-negative, got {value!r}")
    return v


def check_positive(value, name: str) -> float:
    v = check_nonnegative(value, name)
    if v == 0:
        raise DataError(f"{name} must be positive, got {value!r}")
    return v


# --------------------------------------------------------------------------
# The estimator boundary
# --------------------------------------------------------------------------


def reset_fitted(estimator) -> None:
    """Delete every fitted attribute (public, trailing underscore) of ``estimator``.

    Called at the start of ``fit`` so that nothing from a previous fit (an
    attribute that only some code paths set, such as ``penalty_`` of the
    non-convex penalties) survives a refit, and so that a refit that fails
    leaves an unfitted estimator rather than a stale one.
    """
    for key in [k for k in vars(estimator) if k.endswith("_") and not k.startswith("_")]:
        delattr(estimator, key)


def validate_X(estimator, X, *, reset: bool, name: str = "X"):
    """Check ``X`` at an estimator's boundary, as scikit-learn does, then :func:`check_X`.

    ``sklearn.utils.validation.validate_data`` rejects an ``X`` with no row or
    no column (scikit-learn's messages, e.g. "Found array with 0 sample(s)
    (shape=(0, 3)) while a minimum of 1 is required by RankSVM."), and with
    ``reset=True`` (``fit``) records ``n_features_in_`` and, for a data frame
    with string column names, ``feature_names_in_``; with ``reset=False``
    (``predict``, ``transform``) it checks the number of columns and that the
    column names are those of ``fit`` in the same order, so that a data
    frame whose columns were permuted is refused instead of being scored
    with the weights of other features.  Its errors are re-raised as
    :class:`~refimpl.exceptions.DataError` with the same text.

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix
        As :func:`check_X`: C-contiguous float64 or canonical CSR, all finite.
    """
    from sklearn.utils.validation import validate_data

    if isinstance(X, RankingProblem):
        # its X, checked once already; validate_data records or compares
        # n_features_in_ and returns it as it is
        X = X.X
    try:
        # dtype="numeric": an object array of numbers is converted as scikit-learn
        # converts it (a non-number entry is a TypeError naming its type)
        X = validate_data(estimator, X, reset=reset, accept_sparse=True, dtype="numeric",
                          ensure_all_finite=False, ensure_min_samples=1,
                          ensure_min_features=1)
    except DataError:
        raise
    except TypeError as err:
        raise DataTypeError(str(err)) from None
    except ValueError as err:
        raise DataError(str(err)) from None
    return check_X(X, name)


def check_y_given(estimator, y) -> None:
    """``y=None`` at ``fit``: an error in scikit-learn's words (every ranker needs labels)."""
    if y is None:
        raise DataError(
            f"{type(estimator).__name__} requires y to be passed, but the target y "
            "is None: give the relevance labels")


def refuse_single_document(estimator, n_samples: int) -> None:
    """One row is an error for a pairwise learner: one document forms no pair."""
    if n_samples == 1:
        raise DataError(
            f"X has 1 sample (n_samples = 1): {type(estimator).__name__} learns from "
            "preference pairs, and one document forms none")


def check_fit_input(estimator, X, y, qid, *, pairwise=True):
    """Reset ``estimator`` and validate ``(X, y, qid)`` for its ``fit``, once.

    :func:`reset_fitted`, then :func:`validate_X` with ``reset=True``, then
    ``y`` and ``qid`` against the number of rows of ``X`` (errors name the
    parameter and both lengths, e.g. "y has 46 entries but X has 47 rows");
    a single row is refused (one document forms no preference pair).
    Records ``n_queries_in_``, the number of queries of the fit.

    ``pairwise=False`` (a pointwise or listwise learner, which needs no
    pair) accepts a single row.

    ``X`` may be a :class:`RankingProblem` (``y`` and ``qid`` then
    ``None`` or its own): its labels and grouping are used as they are,
    and only what ``fit`` records from ``X`` is taken from its matrix (the
    runner fits every task on the problem it validated once).

    Returns
    -------
    RankingProblem
        The validated data and its query grouping, to be passed down to the
        losses, which then check nothing again.
    """
    if isinstance(X, RankingProblem):
        if (y is not None and y is not X.y) or (qid is not None and qid is not X.qid):
            raise DataError("a RankingProblem already holds y and qid: pass it "
                            "alone (or with its own y and qid)")
        reset_fitted(estimator)
        X_checked = validate_X(estimator, X.X, reset=True)
        if pairwise:
            refuse_single_document(estimator, X.n_samples)
        estimator.n_queries_in_ = X.n_queries
        if X_checked is X.X:
            return X
        return RankingProblem(X=X_checked, y=X.y, qid=X.qid, groups=X.groups)
    reset_fitted(estimator)
    check_y_given(estimator, y)
    X = validate_X(estimator, X, reset=True)
    n = X.shape[0]
    if pairwise:
        refuse_single_document(estimator, n)
    y = check_labels(y, n)
    problem = RankingProblem(X=X, y=y, qid=qid, groups=group_queries(qid, n))
    # n_queries_in_, like n_features_in_: score() refuses qid=None after a
    # fit on several queries
    estimator.n_queries_in_ = problem.n_queries
    return problem
