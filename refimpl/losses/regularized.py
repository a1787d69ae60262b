r"""The L2-regularised objective of linear RankSVM (Lee & Lin 2014, eq. 3).

.. math::

    f(w) = \tfrac12 w^T w + C\, L(w),

with ``L`` any smooth loss object, e.g. the pairwise squared hinge
:class:`~refimpl.losses.PairwiseSquaredHinge`, for which ``f`` is eq. 3 (in
matrix form eq. 9), its gradient ``w + C grad L`` eq. 10 and its generalised
Hessian ``I + C grad^2 L`` eq. 11.

Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
"""

from __future__ import annotations

import numpy as np

from .._validation import check_positive
from ._base import CachedObjective


class L2Regularized(CachedObjective):
    r"""``f(w) = w^T w / 2 + C loss(w)``, with gradient and Hessian-vector product.

    Lee & Lin (2014): the objective eq. 3 (eq. 9 with the pair matrix), the
    gradient :math:`\nabla f(w) = w + C \nabla L(w)` (eq. 10) and the
    generalised Hessian :math:`\nabla^2 f(w) = I + C \nabla^2 L(w)` (eq. 11),
    of which only products with a vector are formed.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree

    The Hessian is a capability, offered when the loss offers it: with a
    first-order loss (``fun``, ``grad``, ``n_features`` and no ``hess_vec``,
    e.g. :class:`~refimpl.losses.PairwiseLogistic`) the objective has
    ``fun`` and ``grad`` only, so a first-order solver
    (:func:`refimpl.solvers.apg` with ``refimpl.penalties.Zero``)
    minimises it, and ``hasattr(objective, "hess_vec")`` is ``False``
    rather than a method that fails when a second-order solver calls it.

    Parameters
    ----------
    loss : object
        A smooth loss with ``fun(w)``, ``grad(w)``, ``n_features`` and
        optionally ``hess_vec(s)``, following the caching contract of
        :class:`~refimpl.losses.SmoothObjective`.
    C : float
        Loss weight, finite and > 0.

    Attributes
    ----------
    loss : object
        The wrapped loss.
    C : float
        The validated loss weight.

    Notes
    -----
    Cached state: :meth:`fun` stores ``w`` and lets the loss cache its own
    state (scores ``X w`` and active pairs for the squared hinge);
    :meth:`grad` at the same ``w`` reuses it (and calls :meth:`fun` first at
    any other ``w``); ``hess_vec`` uses the state of the last :meth:`fun`.
    """

    def __init__(self, loss, C):
        for name in ("fun", "grad", "n_features"):
            if not hasattr(loss, name):
                raise TypeError(f"loss must have a {name!r} attribute, got {loss!r}")
        self.loss = loss
        if hasattr(loss, "hess_vec"):
            # an instance attribute, so that a first-order loss leaves the
            # capability absent (hasattr False) instead of a failing method
            self.hess_vec = self._hess_vec
        self.C = check_positive(C, "C")
        self._w = None
        self._loss_value = None

    @property
    def n_features(self) -> int:
        """Number of coefficients ``d``."""
        return int(self.loss.n_features)

    def fun(self, w) -> float:
        """Objective value ``w^T w / 2 + C loss(w)``; caches the state at ``w``."""
        w = self._check_w(w)
        self._loss_value = float(self.loss.fun(w))
        self._w = w.copy()
        return 0.5 * float(w @ w) + self.C * self._loss_value

    def grad(self, w) -> np.ndarray:
        """Gradient ``w + C grad loss(w)`` (Lee & Lin eq. 10)."""
        w = self._at(w)
        return w + self.C * np.asarray(self.loss.grad(w), dtype=np.float64)

    def _hess_vec(self, s) -> np.ndarray:
        """Generalised Hessian times ``s``: ``s + C grad^2 loss s`` (eq. 11).

        Offered as ``hess_vec`` when the loss has ``hess_vec``; uses the
        state of the last :meth:`fun`.
        """
        s = self._direction(s)
        return s + self.C * np.asarray(self.loss.hess_vec(s), dtype=np.float64)

    # score reuse (see refimpl.solvers.tron): offered when the loss offers it

    @property
    def score_reuse(self) -> bool:
        """Whether the loss offers ``hess_vec_scores``, ``last_scores``,
        ``fun_from_scores`` and ``accept_trial`` (the regularizer needs no
        scores)."""
        return bool(getattr(self.loss, "score_reuse", False))

    def hess_vec_scores(self, s):
        """``(hess_vec(s), X s)``, the loss's scores of ``s`` passed on."""
        s = self._direction(s)
        hv, t = self.loss.hess_vec_scores(s)
        return s + self.C * np.asarray(hv, dtype=np.float64), t

    def last_scores(self):
        """The loss's scores at the last :meth:`fun`."""
        return self.loss.last_scores()

    def fun_from_scores(self, w, z) -> float:
        """``w^T w / 2 + C loss`` at ``w`` from its scores ``z``; state untouched."""
        w = self._check_w(w)
        return 0.5 * float(w @ w) + self.C * float(self.loss.fun_from_scores(w, z))

    def accept_trial(self, w):
        """Move the cached state to ``w``, the last trial (the loss's
        ``accept_trial``); returns the objective there."""
        w = self._check_w(w)
        self._loss_value = float(self.loss.accept_trial(w))
        self._w = w.copy()
        return 0.5 * float(w @ w) + self.C * self._loss_value
