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

import warnings

import numpy as np

from .exceptions import DataError
from .features import (  # noqa: F401  (re-export: feature measures live in features)
    IMPORTANCE_FLOOR,
    feature_ndcg,
    gas_select,
    kendall_similarity,
    pearson_importance,
    pearson_similarity,
)
from .losses.lifted import FSMRankSmooth, LiftedLoss, _check_symmetric  # noqa: F401  (re-export: objectives live in losses/)

__all__ = [
    "PSD_MODES",
    "PSD_RTOL",
    "convexify_similarity",
    "lift_importance",
    "lift_similarity",
    "nearest_psd",
]

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
