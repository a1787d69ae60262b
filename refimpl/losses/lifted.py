r"""FSMRank's lifted problem (Lai, Pan, Tang & Yu 2013, eq. 2).

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
the lifted ``A`` and ``s``, the lifted loss (:class:`LiftedLoss`) and
``psi`` with Theorem 1's Lipschitz bound (:class:`FSMRankSmooth`) -- for
:func:`refimpl.solvers.apg` (``s`` and ``\hat A`` themselves are
:func:`refimpl.features.pearson_importance` and
:func:`refimpl.features.pearson_similarity`); the penalty ``r`` plus the orthant is
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

from ..exceptions import DataError
from ..kernels import pairs as _pk
from ..pairs import pair_counts
from ._base import CachedObjective

__all__ = [
    "PSD_MODES",
    "PSD_RTOL",
    "FSMRankSmooth",
    "LiftedLoss",
    "convexify_similarity",
    "lift_importance",
    "lift_similarity",
    "nearest_psd",
]


def _check_symmetric(A, name="A"):
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise DataError(f"{name} must be a square matrix, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise DataError(f"{name} contains NaN or infinite values")
    scale = max(1.0, float(np.abs(A).max(initial=0.0)))
    if not np.allclose(A, A.T, rtol=0, atol=1e-12 * scale):
        raise DataError(f"{name} must be symmetric")
    return 0.5 * (A + A.T)


#: A similarity matrix counts as not PSD when its smallest eigenvalue is
#: below ``-PSD_RTOL * ||A||_2``.
PSD_RTOL = 1e-12

#: What :func:`convexify_similarity` does with a non-PSD matrix.
PSD_MODES = ("project", "ignore", "raise")


# --------------------------------------------------------------------------
# Convexity of eq. 1 (the importance and similarity are in refimpl.features)
# --------------------------------------------------------------------------


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
# The lifted loss and FSMRank's smooth part
# --------------------------------------------------------------------------


class LiftedLoss(CachedObjective):
    r"""A loss of ``\hat w`` seen as a function of ``w = [w^+; w^-]``.

    ``L2(w) = L(w^+ - w^-)``, the loss on the doubled features ``[X, -X]``
    (Lai et al., eq. 2) without forming them: ``grad L2 = [g, -g]`` and
    ``H2 s = [h, -h]`` with ``g = grad L(\hat w)``, ``h = H (s^+ - s^-)``.
    Equal to ``PairwiseSquaredHinge`` on ``np.hstack([X, -X])`` at half the
    cost.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    loss : object
        A smooth loss of ``d`` variables (``fun``, ``grad``, ``hess_vec``,
        ``n_features``), e.g. :class:`refimpl.losses.PairwiseSquaredHinge`.

    Notes
    -----
    Cached state is the wrapped loss's, at ``\hat w`` of the last
    :meth:`fun`.
    """

    def __init__(self, loss):
        self.base = loss
        self.d = int(loss.n_features)

    @property
    def n_features(self) -> int:
        return 2 * self.d

    def collapse(self, w):
        """``\\hat w = w^+ - w^-`` for ``w`` of length ``2d``."""
        w = self._check_w(w)
        return w[: self.d] - w[self.d:]

    def fun(self, w) -> float:
        """``L(w^+ - w^-)``."""
        return float(self.base.fun(self.collapse(w)))

    def grad(self, w) -> np.ndarray:
        """``[g, -g]``, ``g = grad L(w^+ - w^-)``."""
        g = np.asarray(self.base.grad(self.collapse(w)), dtype=np.float64)
        return np.concatenate([g, -g])

    def hess_vec(self, s) -> np.ndarray:
        """``[h, -h]``, ``h = H (s^+ - s^-)`` at the last :meth:`fun`."""
        h = np.asarray(self.base.hess_vec(self.collapse(s)), dtype=np.float64)
        return np.concatenate([h, -h])

    def scores(self, w) -> np.ndarray:
        """Document scores ``X (w^+ - w^-)``."""
        return self.base.scores(self.collapse(w))


#: Pairs per chunk of :func:`_sum_pair_inf_norm_sq` on a sparse ``X``
#: (explicit pairs): it gathers ``X[i]`` and ``X[j]`` of a chunk and their
#: difference, three ``PAIR_CHUNK x d`` sparse matrices at once.
PAIR_CHUNK = 1 << 16


def _sum_pair_inf_norm_sq(loss):
    r"""``sum_P ||x_i - x_j||_inf^2`` for a pairwise loss (or an upper bound).

    Exact with explicit pairs; with the pair-free tree backend, the bound
    ``sum_q p_q r_q^2`` with ``r_q`` the largest feature range inside
    query ``q``.
    """
    X = loss.X
    pairs = getattr(loss, "pairs", None)
    if pairs is not None and not sp.issparse(X):
        return float(_pk.sum_pair_inf_norm_sq(np.ascontiguousarray(X, dtype=np.float64),
                                              pairs.i, pairs.j))
    if pairs is not None:
        total = 0.0
        chunk = PAIR_CHUNK
        for a in range(0, len(pairs.i), chunk):
            D = X[pairs.i[a:a + chunk]] - X[pairs.j[a:a + chunk]]
            if sp.issparse(D):
                m = np.asarray(abs(D).max(axis=1).todense()).ravel()
            else:
                m = np.abs(D).max(axis=1, initial=0.0)
            total += float(m @ m)
        return total
    groups = loss.groups
    which = getattr(loss, "which", "all")
    problem = getattr(loss, "problem", None)
    # the loss's validated problem: its labels are not checked again
    counts = (pair_counts(problem, which=which) if problem is not None
              else pair_counts(loss.y, which=which, groups=groups))
    total = 0.0
    for q in range(groups.n_queries):
        if counts[q] == 0:
            continue
        rows = X[groups.order[groups.indptr[q]:groups.indptr[q + 1]]]
        if sp.issparse(rows):
            rows = rows.toarray()
        r = float(np.ptp(rows, axis=0).max(initial=0.0))
        total += counts[q] * r * r
    return total


class FSMRankSmooth(CachedObjective):
    r"""The smooth part of FSMRank's eq. 2: ``psi(w) = (lambda_1/2) w^T A w + f(w)``.

    Gradient ``lambda_1 A w + grad f(w)``, Hessian ``lambda_1 A + H_f``.
    With ``f`` the squared hinge averaged over pairs on ``2d`` features,
    Theorem 1 bounds the Lipschitz constant of ``grad psi`` by

    .. math::

        L_0 = \frac{4d}{p} \sum_{(i,j) \in P} \|x_i - x_j\|_\infty^2
              + 2 d \lambda_1 \le (4 + 2\lambda_1) d

    for features in [0, 1] (``n = 2d`` variables).  In general
    :meth:`lipschitz_bound` returns ``2 s n sum_P ||x_i - x_j||_inf^2 +
    lambda_1 n max|A_ij|`` with ``s`` the loss scale (``1/p`` for the mean),
    from ``u^T k k^T u <= ||k||_inf^2 ||u||_1^2 <= n ||k||_inf^2 ||u||^2``
    (eq. I.2) and ``u^T A u <= max|A_ij| ||u||_1^2`` (eq. I.3, which needs
    ``|A_ij| <= 1``, true of ``[[A, -A], [-A, A]]`` too).

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    loss2 : object
        Smooth loss of ``n = 2d`` variables: :class:`LiftedLoss` of a
        ``PairwiseSquaredHinge(..., normalize=True)``, or that loss built on
        ``np.hstack([X, -X])``.
    A2 : array-like of shape (n, n)
        Symmetric similarity matrix (:func:`lift_similarity`).
    lambda1 : float
        ``>= 0``.

    Notes
    -----
    Cached state: :meth:`fun` stores ``w`` and ``A w`` and lets the loss
    cache its own; :meth:`grad` at the same ``w`` reuses both.
    """

    def __init__(self, loss2, A2, lambda1):
        n = int(loss2.n_features)
        A2 = _check_symmetric(A2, "A2")
        if A2.shape != (n, n):
            raise DataError(f"A2 must have shape ({n}, {n}), got {A2.shape}")
        try:
            lam = float(lambda1)
        except (TypeError, ValueError):
            raise DataError(f"lambda1 must be a real number, got {lambda1!r}") from None
        if not (lam >= 0 and math.isfinite(lam)):
            raise DataError(f"lambda1 must be finite and >= 0, got {lambda1!r}")
        self.loss = loss2
        self.A = A2
        self.lambda1 = lam
        self._w = None
        self._Aw = None

    @property
    def n_features(self) -> int:
        return int(self.loss.n_features)

    def fun(self, w) -> float:
        """``(lambda_1/2) w^T A w + f(w)``; caches ``A w`` and the loss state."""
        w = self._check_w(w)
        Aw = self.A @ w
        value = 0.5 * self.lambda1 * float(w @ Aw) + float(self.loss.fun(w))
        self._w, self._Aw = w.copy(), Aw
        return value

    def grad(self, w) -> np.ndarray:
        """``lambda_1 A w + grad f(w)``."""
        w = self._at(w)
        return self.lambda1 * self._Aw + np.asarray(self.loss.grad(w), dtype=np.float64)

    def hess_vec(self, s) -> np.ndarray:
        """``lambda_1 A s + H_f s`` (``H_f`` at the last :meth:`fun`)."""
        s = self._direction(s)
        return self.lambda1 * (self.A @ s) + np.asarray(self.loss.hess_vec(s))

    def lipschitz_bound(self) -> float:
        """Theorem 1's bound on the Lipschitz constant of ``grad psi`` (see above)."""
        base = getattr(self.loss, "base", self.loss)
        n = self.n_features
        S = _sum_pair_inf_norm_sq(base)
        scale = float(getattr(base, "scale", 1.0))
        return 2.0 * scale * n * S + self.lambda1 * n * float(np.abs(self.A).max(initial=0.0))
