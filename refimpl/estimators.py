"""scikit-learn-style estimators on top of the losses and solvers.

``fit(X, y, qid)`` takes LETOR-shaped data (``qid=None`` is one query),
``predict(X)`` returns scores to sort by, ``coef_`` holds the weights and
``history_`` the solver's iterate history, which the book plots.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ._validation import check_positive, check_X
from .exceptions import DataError
from .losses import L2Regularized, PairwiseSquaredHinge
from .losses.squared_hinge import BACKENDS
from .metrics import mean_ndcg
from .pairs import PAIR_SETS
from .solvers.fenchelrank import LINESEARCHES, STEPS, fenchelrank
from .solvers.tron import tron


class _LinearRanker(BaseEstimator):
    """Shared ``predict`` / ``score`` of the linear rankers."""

    def predict(self, X):
        """Ranking scores ``X @ coef_`` (sort each query by decreasing score)."""
        check_is_fitted(self, "coef_")
        X = check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise DataError(
                f"X has {X.shape[1]} features, but {type(self).__name__} was "
                f"fitted with {self.n_features_in_}"
            )
        return np.asarray(X @ self.coef_).ravel()

    def score(self, X, y, qid=None):
        """Mean NDCG (LETOR 4.0 convention) of the predicted ranking."""
        return mean_ndcg(y, self.predict(X), qid)


class RankSVM(_LinearRanker):
    """L2-regularised, L2-loss linear RankSVM trained by TRON (Lee & Lin 2014).

    Minimises eq. 3 of Lee & Lin (2014),

    .. math::

        f(w) = \\tfrac12 w^T w
            + C \\sum_{(i, j) \\in P} \\max(0, 1 - w^T (x_i - x_j))^2,

    with no division by the number of pairs, so the paper's selected values
    of ``C`` carry over.  The solver is the trust-region Newton method of
    section 4.1 with ``w^0 = 0`` and the stopping rule
    ``||grad f(w)|| <= tol * ||grad f(0)||`` (eq. 38).

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

    Derived in: book/02_ranksvm_ostree.md#ranksvm-ostree
    """

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

    def _validate_params(self):
        check_positive(self.C, "C")
        check_positive(self.tol, "tol")
        if self.loss != "l2":
            raise DataError(
                f"loss must be 'l2' (the squared hinge TRON needs), got {self.loss!r}"
            )
        if not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise DataError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        if self.backend not in BACKENDS:
            raise DataError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.pairs not in PAIR_SETS:
            raise DataError(f"pairs must be one of {PAIR_SETS}, got {self.pairs!r}")

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``."""
        self._validate_params()
        loss = PairwiseSquaredHinge(X, y, qid, backend=self.backend,
                                    tree_method=self.tree_method,
                                    which=self.pairs)
        objective = L2Regularized(loss, self.C)
        result = tron(objective, tol=self.tol, max_iter=self.max_iter,
                      verbose=self.verbose)
        if not np.all(np.isfinite(result.w)):
            raise FloatingPointError("RankSVM produced non-finite coefficients")
        self.coef_ = result.w
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.history_ = result.as_arrays()
        self.backend_ = loss.backend
        self.n_features_in_ = loss.n_features
        self.objective_ = result.history["f"][-1]
        return self


class FenchelRank(_LinearRanker):
    """Sparse ranking in an l1 ball, trained by FenchelRank (Lai et al. 2013).

    Solves eq. 3 of Lai et al. (2013),

    .. math::

        \\min_{\\|w'\\|_1 \\le r} \\frac1p \\sum_{(i, j) \\in P}
            \\max(0, 1 - w'^T (x_i - x_j))^2 ,

    through its rescaling ``w = w'/r`` (eq. 4) by Algorithm 1: greedy
    coordinate choice from ``g_t = K^T d_t`` (eq. 12), the update of eq. 18
    with the step of eqs. 19-21, and the stopping rule (eq. 17) that the
    duality gap ``P(d_t) - D(w_t) = ||g_t||_inf - g_t^T w_t`` is at most
    ``tol``.  ``coef_ = r w`` is on the scale of eq. 3, so
    ``||coef_||_1 <= r``.  See :func:`refimpl.solvers.fenchelrank`.

    Parameters
    ----------
    r : float, default 1.0
        Radius of the l1 ball (> 0); smaller is sparser.
    tol : float, default 1e-3
        Gap tolerance ``epsilon`` of eq. 17 (> 0); relative, since
        ``G(0) = 1``.
    max_iter : int, default 1000
        Maximum number of updates ``T``; each adds at most one feature.
    step : {"exact", "closed_form", "theory"}, default "exact"
        Step-size rule (eqs. 19-21, the corrected rule after eq. 21, or the
        step of the proof of Theorem 1).
    backend : {"auto", "pairs", "numpy", "tree"}, default "auto"
        How the loss is evaluated; see
        :class:`refimpl.losses.PairwiseSquaredHinge`.
    linesearch : {"auto", "pairs", "newton"}, default "auto"
        Line search of ``step="exact"``; ``"pairs"`` needs explicit pairs
        (not the tree backend).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        ``r w``, the solution of eq. 3.
    n_iter_ : int
        Updates performed.
    history_ : dict of ndarray
        Per iterate: dual objective ``D``, primal ``P``, ``gap``, step
        ``mu``, feature ``j``, ``nnz``, ``ls_eval``, ``time``.
    converged_ : bool
        Whether eq. 17 holds at the returned iterate.
    dual_gap_ : float
        Final gap ``P(d_T) - D(w_T)``, an upper bound on ``G(w_T) - G^*``.
    objective_ : float
        ``G(w_T)``, i.e. the mean squared hinge of eq. 3 at ``coef_``.
    backend_ : str
        The backend actually used.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """

    def __init__(self, r=1.0, tol=1e-3, max_iter=1000, step="exact",
                 backend="auto", linesearch="auto"):
        self.r = r
        self.tol = tol
        self.max_iter = max_iter
        self.step = step
        self.backend = backend
        self.linesearch = linesearch

    def _validate_params(self):
        check_positive(self.r, "r")
        check_positive(self.tol, "tol")
        if not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise DataError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        if self.step not in STEPS:
            raise DataError(f"step must be one of {STEPS}, got {self.step!r}")
        if self.backend not in BACKENDS:
            raise DataError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.linesearch not in LINESEARCHES:
            raise DataError(
                f"linesearch must be one of {LINESEARCHES}, got {self.linesearch!r}"
            )

    def fit(self, X, y, qid=None):
        """Fit on ``(X, y, qid)``; returns ``self``."""
        self._validate_params()
        r = float(self.r)
        loss = PairwiseSquaredHinge(X, y, qid, margin=1.0 / r, normalize=True,
                                    backend=self.backend)
        if self.linesearch == "pairs" and loss.pairs is None:
            raise DataError(
                "linesearch='pairs' needs explicit pairs, but backend "
                f"{loss.backend!r} has none: use linesearch='newton' or 'auto'"
            )
        result = fenchelrank(loss, r, tol=self.tol, max_iter=self.max_iter,
                             step=self.step, linesearch=self.linesearch)
        coef = r * result.w
        if not np.all(np.isfinite(coef)):
            raise FloatingPointError("FenchelRank produced non-finite coefficients")
        self.coef_ = coef
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.history_ = result.as_arrays()
        self.dual_gap_ = float(result.history["gap"][-1])
        self.objective_ = -float(result.history["D"][-1])
        self.backend_ = loss.backend
        self.n_features_in_ = loss.n_features
        return self


__all__ = ["FenchelRank", "RankSVM"]
