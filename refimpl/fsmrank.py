r"""FSMRank (Lai, Pan, Tang & Yu 2013) and the GAS baseline (Geng et al. 2007).

FSMRank solves the convex feature-selection problem (their eq. 1)

.. math::

    \min_{\hat w \in \mathbb R^d} \; \frac{\lambda_1}{2} \hat w^T \hat A \hat w
    + \lambda_2 \sum_{i=1}^d \frac{|\hat w_i|}{\hat s_i} + f(\hat w),

with ``f`` the pairwise squared hinge averaged over the ``p`` preference
pairs, ``\hat s_i = |PC(h_i, y)|`` the importance and ``\hat A_{ij} =
|PC(h_i, h_j)|`` the similarity of the features (Pearson correlations over
all training documents, Section III-B), through the equivalent problem on
the non-negative orthant of ``R^{2d}`` (eq. 2),

.. math::

    \min_{w \in \mathbb R^{2d}_+} \; \psi(w) + r(w), \qquad
    \psi(w) = \frac{\lambda_1}{2} w^T A w + f(w), \qquad
    r(w) = \lambda_2 \sum_{i=1}^{2d} \frac{w_i}{s_i},

with the features doubled, ``X = [\hat X, -\hat X]`` and ``\hat w = w^+ -
w^-`` (``w = [w^+; w^-]``).  This module builds the pieces of eq. 2 --
``s``, ``A``, the lifted loss and ``psi`` with Theorem 1's Lipschitz bound
-- for :func:`refimpl.solvers.apg`; the penalty ``r`` plus the orthant is
:class:`refimpl.penalties.NonNegWeightedL1` with ``c = lambda_2 / s``.

**The 2d x 2d similarity matrix.**  The paper only says "A is the
corresponding 2d x 2d similarity matrix".  Eq. 2 is equivalent to eq. 1 for
every data set only with

.. math::

    A = \begin{pmatrix} \hat A & -\hat A \\ -\hat A & \hat A \end{pmatrix}
      = \begin{pmatrix} 1 & -1 \\ -1 & 1 \end{pmatrix} \otimes \hat A ,

because then ``w^T A w = (w^+ - w^-)^T \hat A (w^+ - w^-) = \hat w^T \hat A
\hat w`` for *every* ``w``; ``f`` depends on ``w`` only through ``\hat w``
as well, and ``r(w) = \lambda_2 \sum (w^+_i + w^-_i)/\hat s_i \ge \lambda_2
\sum |\hat w_i|/\hat s_i`` with equality iff ``min(w^+_i, w^-_i) = 0``.
Hence ``F_2(w) \ge F_1(\hat w)`` with equality on complementary ``w``,
``min F_2 = min F_1``, and an eps-accurate ``w`` of eq. 2 gives an
eps-accurate ``\hat w`` of eq. 1 -- the paper's claim.  Its eigenvalues are
``{0, 2} x eig(\hat A)``: it is PSD iff ``\hat A`` is.  The literal reading
``A_{ij} = |PC(h_i, h_j)|`` on the doubled columns gives instead
``[[\hat A, \hat A], [\hat A, \hat A]]`` (since ``|PC(h, -h')| = |PC(h,
h')|``), i.e. the penalty ``|\hat w|^T \hat A |\hat w|`` at complementary
``w``: a different (sign-blind) redundancy penalty, for which eq. 2 is *not*
equivalent to eq. 1 (see :func:`lift_similarity`, ``mode="abs"``).

**Convexity.**  ``|PC|`` matrices need not be PSD (entry-wise absolute
values do not preserve positive semidefiniteness; see
:func:`nearest_psd`), in which case eq. 1 is not convex although the paper
calls it so.  :func:`convexify_similarity` detects this and by default
replaces ``\hat A`` by its nearest PSD matrix.

Derived in: book/04_fsmrank_nesterov.md#fsmrank
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.sparse as sp

from ._validation import check_labels, check_X
from .exceptions import DataError
from .losses.lifted import FSMRankSmooth, LiftedLoss, _check_symmetric  # noqa: F401  (re-export: objectives live in losses/)
from .metrics import ndcg_at_k
from .pairs import query_sign_grams

__all__ = [
    "IMPORTANCE_FLOOR",
    "PSD_MODES",
    "PSD_RTOL",
    "convexify_similarity",
    "feature_ndcg",
    "gas_select",
    "kendall_similarity",
    "lift_importance",
    "lift_similarity",
    "nearest_psd",
    "pearson_importance",
    "pearson_similarity",
]

#: Floor of the importance ``s_i``: eq. 1 divides by ``s_i``, and a feature
#: that is constant on the training set (or uncorrelated with the labels) has
#: ``|PC| = 0``.  With the floor its l1 weight is ``lambda_2 / 1e-6``, which
#: keeps it at exactly zero for any reasonable ``lambda_2`` while the
#: penalty stays finite.
IMPORTANCE_FLOOR = 1e-6

#: A similarity matrix counts as not PSD when its smallest eigenvalue is
#: below ``-PSD_RTOL * ||A||_2``.
PSD_RTOL = 1e-12

#: What :func:`convexify_similarity` does with a non-PSD matrix.
PSD_MODES = ("project", "ignore", "raise")


# --------------------------------------------------------------------------
# Importance and similarity (Section III-B)
# --------------------------------------------------------------------------


def _dense_columns_stats(X):
    """Column means, centred Gram matrix ``Xc^T Xc`` and constant-column mask."""
    n = X.shape[0]
    if sp.issparse(X):
        mean = np.asarray(X.mean(axis=0)).ravel()
        gram = np.asarray((X.T @ X).todense()) - n * np.outer(mean, mean)
        xmax = X.max(axis=0).toarray().ravel()
        xmin = X.min(axis=0).toarray().ravel()
        const = xmax == xmin
    else:
        mean = X.mean(axis=0)
        Xc = X - mean
        gram = Xc.T @ Xc
        const = np.ptp(X, axis=0) == 0
    return mean, gram, const


def pearson_importance(X, y, *, eps=IMPORTANCE_FLOOR):
    r"""Feature importance ``s_i = max(|PC(h_i, y)|, eps)`` (Lai et al., Sec. III-B).

    ``PC`` is Pearson's correlation between the feature column ``h_i`` and
    the label column over all ``N`` training documents (queries pooled), as
    in the paper.  A constant column has an undefined correlation and gets
    importance 0 before the floor.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    X : array-like or sparse matrix of shape (N, d)
    y : array-like of shape (N,)
        Relevance labels; must not be constant.
    eps : float, default IMPORTANCE_FLOOR
        Floor in (0, 1]: eq. 1 divides by ``s_i`` (``s_i in (0, 1]``).

    Returns
    -------
    ndarray of shape (d,), values in [eps, 1]

    Raises
    ------
    DataError
        Bad ``X``, ``y`` or ``eps``, or constant ``y``.
    """
    X = check_X(X)
    y = check_labels(y, X.shape[0])
    eps = float(eps)
    if not (0 < eps <= 1):
        raise DataError(f"eps must be in (0, 1], got {eps!r}")
    if np.ptp(y) == 0:
        raise DataError("y is constant: the Pearson importance |PC(h_i, y)| is undefined")
    yc = y - y.mean()
    _, gram, const = _dense_columns_stats(X)
    cov = np.asarray(X.T @ yc).ravel()      # sum_k (x_ki - mean_i) (y_k - ybar)
    var = np.clip(np.diag(gram), 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        pc = np.abs(cov) / np.sqrt(var * float(yc @ yc))
    pc = np.where(const | ~np.isfinite(pc), 0.0, np.minimum(pc, 1.0))
    return np.maximum(pc, eps)


def pearson_similarity(X):
    r"""Feature similarity ``A_ij = |PC(h_i, h_j)|`` (Lai et al., Sec. III-B).

    Pearson correlations between feature columns over all training
    documents.  A constant column has similarity 0 to every other column and
    1 to itself, so the matrix keeps a unit diagonal.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    X : array-like or sparse matrix of shape (N, d)

    Returns
    -------
    ndarray of shape (d, d)
        Symmetric, entries in [0, 1], unit diagonal.  Not necessarily PSD.
    """
    X = check_X(X)
    _, gram, const = _dense_columns_stats(X)
    std = np.sqrt(np.clip(np.diag(gram), 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        A = np.abs(gram) / np.outer(std, std)
    A[const, :] = 0.0
    A[:, const] = 0.0
    A = np.minimum(np.where(np.isfinite(A), A, 0.0), 1.0)
    A = 0.5 * (A + A.T)
    np.fill_diagonal(A, 1.0)
    return A


def nearest_psd(A):
    r"""The nearest positive semidefinite matrix in the Frobenius norm.

    For symmetric ``A = V diag(lambda) V^T`` the minimiser of ``||X -
    A||_F`` over PSD ``X`` is ``V diag(max(lambda, 0)) V^T`` (Higham 1988,
    "Computing a nearest symmetric positive semidefinite matrix", Theorem
    2.1, for the symmetric case): clip the negative eigenvalues at 0.  The
    distance is ``sqrt(sum_{lambda < 0} lambda^2)``.  The result is not a
    correlation matrix (its diagonal grows above 1); only
    positive semidefiniteness, i.e. convexity of eq. 1, is restored.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    A : array-like of shape (d, d)
        Symmetric (to ``1e-12`` relative), finite.

    Returns
    -------
    A_psd : ndarray of shape (d, d)
        Symmetric PSD (exactly symmetric; eigenvalues ``>= 0`` up to
        rounding).
    min_eigenvalue : float
        The smallest eigenvalue of ``A`` before clipping.
    """
    A = _check_symmetric(A)
    lam, V = np.linalg.eigh(A)
    A_psd = (V * np.maximum(lam, 0.0)) @ V.T
    return 0.5 * (A_psd + A_psd.T), float(lam[0])


def convexify_similarity(A, psd="project", *, rtol=PSD_RTOL):
    r"""Make eq. 1 convex: check that ``A`` is PSD and repair it if asked.

    ``A`` counts as not PSD when ``lambda_min(A) < -rtol ||A||_2``.  Then

    * ``psd="project"`` (default): replace ``A`` by :func:`nearest_psd`
      and emit a ``UserWarning``;
    * ``psd="raise"``: raise :class:`~refimpl.exceptions.DataError`;
    * ``psd="ignore"``: keep ``A`` (eq. 1 is then non-convex and APG only
      finds a stationary point).

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    A : array-like of shape (d, d)
        Symmetric similarity matrix.
    psd : {"project", "ignore", "raise"}
    rtol : float
        Relative tolerance of the test.

    Returns
    -------
    A_used : ndarray of shape (d, d)
    projected : bool
        Whether ``A`` was replaced.
    min_eigenvalue : float
        ``lambda_min`` of the input ``A``.
    """
    if psd not in PSD_MODES:
        raise DataError(f"psd must be one of {PSD_MODES}, got {psd!r}")
    A = _check_symmetric(A)
    lam = np.linalg.eigvalsh(A)
    min_eig = float(lam[0])
    norm = float(np.abs(lam).max(initial=0.0))
    if min_eig >= -rtol * norm:
        return A, False, min_eig
    if psd == "raise":
        raise DataError(
            f"the similarity matrix is not positive semidefinite (smallest "
            f"eigenvalue {min_eig:.3e}), so eq. 1 is not convex; use "
            "psd='project' or psd='ignore'"
        )
    if psd == "ignore":
        return A, False, min_eig
    warnings.warn(
        f"the similarity matrix is not positive semidefinite (smallest "
        f"eigenvalue {min_eig:.3e}): eq. 1 would not be convex, so it was "
        "replaced by its nearest PSD matrix (eigenvalues clipped at 0); "
        "pass psd='ignore' to keep it or psd='raise' to refuse",
        UserWarning,
        stacklevel=2,
    )
    A_psd, _ = nearest_psd(A)
    return A_psd, True, min_eig


# --------------------------------------------------------------------------
# The 2d reformulation (eq. 2)
# --------------------------------------------------------------------------


def lift_importance(s):
    """Importance on the doubled features: ``s2 = [s, s]`` (``|PC(-h, y)| = |PC(h, y)|``).

    Derived in: book/04_fsmrank_nesterov.md#fsmrank
    """
    s = np.asarray(s, dtype=np.float64).ravel()
    return np.concatenate([s, s])


def lift_similarity(A, mode="signed"):
    r"""The 2d x 2d similarity matrix of eq. 2.

    ``mode="signed"`` (default, the one that makes eq. 2 equivalent to
    eq. 1): ``[[A, -A], [-A, A]]``, so ``w^T A2 w = (w^+ - w^-)^T A (w^+ -
    w^-)`` for every ``w``.  ``mode="abs"``: ``[[A, A], [A, A]]``, the
    literal ``|PC|`` of the doubled columns ``[X, -X]``, which gives
    ``(w^+ + w^-)^T A (w^+ + w^-)``, i.e. ``|w|^T A |w|`` on complementary
    ``w`` -- a different problem.  Both are PSD iff ``A`` is (eigenvalues
    ``{0, 2} x eig(A)``).

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    A : array-like of shape (d, d)
    mode : {"signed", "abs"}

    Returns
    -------
    ndarray of shape (2d, 2d)
    """
    A = np.asarray(A, dtype=np.float64)
    if mode == "signed":
        return np.block([[A, -A], [-A, A]])
    if mode == "abs":
        return np.block([[A, A], [A, A]])
    raise DataError(f"mode must be 'signed' or 'abs', got {mode!r}")


# --------------------------------------------------------------------------
# GAS (Geng, Liu, Qin & Li 2007)
# --------------------------------------------------------------------------


def feature_ndcg(X, y, qid=None, *, k=10):
    """Importance of each feature for GAS: NDCG@k of ranking by the feature.

    Each feature ranks every query's documents by its value, in the better
    of the two directions (Geng et al. 2007: for some features a smaller
    value means more relevant); NDCG@k uses the LETOR 4.0 convention of
    :func:`refimpl.metrics.ndcg_at_k` and is averaged over queries.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
    y : array-like of shape (n,)
    qid : array-like of shape (n,), optional
    k : int, default 10

    Returns
    -------
    importance : ndarray of shape (d,)
        ``max(NDCG@k(x_j), NDCG@k(-x_j))``.
    sign : ndarray of shape (d,)
        ``+1`` when ranking by ``x_j`` is at least as good, else ``-1``.
    """
    X = check_X(X)
    d = X.shape[1]
    imp = np.empty(d)
    sign = np.empty(d)
    for j in range(d):
        col = X[:, j].toarray().ravel() if sp.issparse(X) else X[:, j]
        up = ndcg_at_k(y, col, qid, k)
        down = ndcg_at_k(y, -col, qid, k)
        imp[j], sign[j] = (up, 1.0) if up >= down else (down, -1.0)
    return imp, sign


def kendall_similarity(X, qid=None, *, chunk=1 << 17):
    r"""``|tau|`` between the rankings of every two features, averaged over queries.

    Kendall's tau-b per query, computed for all feature pairs at once:
    with ``S`` the matrix of ``sign(x_aj - x_bj)`` over the document pairs
    ``a < b`` of a query, ``S^T S`` holds the concordant-minus-discordant
    counts and its diagonal the untied counts, so ``tau_b = (S^T S)_{jk} /
    sqrt((S^T S)_{jj} (S^T S)_{kk})``.  As in
    :func:`refimpl.metrics.kendall_tau`, a query takes part for a pair
    ``(j, k)`` only if neither feature is constant on it; the mean of
    ``tau`` over those queries is returned in absolute value (0 when no
    query qualifies).  This is Geng et al.'s similarity.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
    qid : array-like of shape (n,), optional
    chunk : int
        Document pairs processed at once (memory ``chunk * d`` floats).

    Returns
    -------
    ndarray of shape (d, d)
        Symmetric, in [0, 1].
    """
    d = check_X(X).shape[1]
    tau_sum = np.zeros((d, d))
    count = np.zeros((d, d))
    for C, _ in query_sign_grams(X, qid, chunk=chunk):
        nt = np.diag(C).copy()
        valid = nt > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = C / np.sqrt(np.outer(nt, nt))
        both = np.outer(valid, valid)
        tau_sum += np.where(both, tau, 0.0)
        count += both
    with np.errstate(divide="ignore", invalid="ignore"):
        sim = np.where(count > 0, tau_sum / count, 0.0)
    sim = np.abs(0.5 * (sim + sim.T))
    return np.minimum(sim, 1.0)


def gas_select(importance, similarity, n_features, c):
    r"""Geng et al.'s greedy search algorithm (GAS) for feature selection.

    Repeat ``n_features`` times: select the remaining feature ``k`` of
    largest (current) importance, then penalise every remaining ``j``,
    ``importance_j <- importance_j - 2 c similarity_{kj}``, and remove
    ``k`` (their Section 3.3 steps 2-4; ties go to the lower index).

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    importance : array-like of shape (d,)
    similarity : array-like of shape (d, d)
    n_features : int
        ``t``, 1 <= t <= d.
    c : float
        Trade-off ``>= 0`` between importance and redundancy.

    Returns
    -------
    ndarray of int64, shape (t,)
        Selected features in the order picked.
    """
    w = np.array(importance, dtype=np.float64, copy=True).ravel()
    S = np.asarray(similarity, dtype=np.float64)
    d = w.size
    if S.shape != (d, d):
        raise DataError(f"similarity must have shape ({d}, {d}), got {S.shape}")
    if not isinstance(n_features, (int, np.integer)) or not 1 <= n_features <= d:
        raise DataError(f"n_features must be an integer in [1, {d}], got {n_features!r}")
    c = float(c)
    if not (c >= 0 and math.isfinite(c)):
        raise DataError(f"c must be finite and >= 0, got {c!r}")
    remaining = np.ones(d, dtype=bool)
    selected = []
    for _ in range(int(n_features)):
        k = int(np.flatnonzero(remaining)[np.argmax(w[remaining])])
        selected.append(k)
        remaining[k] = False
        w[remaining] -= 2.0 * c * S[k, remaining]
    return np.asarray(selected, dtype=np.int64)
