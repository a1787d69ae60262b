"""A smooth objective times a positive constant.

Derived in: book/04_fsmrank_nesterov.md#fsmrank
"""

from __future__ import annotations

import math

import numpy as np

from ._base import CachedObjective
from ._protocol import capability


class ScaledSmooth(CachedObjective):
    r"""``c * f(w)`` for a smooth objective ``f`` with the same caching contract.

    RankSVM-l1 (Laporte et al. 2014, eq. 7) is ``||w||_1 + C L(w)`` with
    ``L`` the summed squared hinge: the smooth part is
    ``ScaledSmooth(loss, C)``.

    Derived in: book/04_fsmrank_nesterov.md#fsmrank

    Parameters
    ----------
    smooth : object
        With ``fun``, ``grad``, ``hess_vec`` and ``n_features``.
    c : float
        Finite, > 0.
    """

    def __init__(self, smooth, c):
        c = float(c)
        if not (c > 0 and math.isfinite(c)):
            raise ValueError(f"c must be finite and > 0, got {c!r}")
        self.smooth = smooth
        self.c = c

    @property
    def n_features(self) -> int:
        return int(self.smooth.n_features)

    def fun(self, w) -> float:
        """``c f(w)``; the wrapped objective caches its state at ``w``."""
        return self.c * float(self.smooth.fun(w))

    def grad(self, w) -> np.ndarray:
        """``c grad f(w)``."""
        return self.c * np.asarray(self.smooth.grad(w), dtype=np.float64)

    def hess_vec(self, s) -> np.ndarray:
        """``c H s`` with the Hessian state of the last :meth:`fun`."""
        return self.c * np.asarray(self.smooth.hess_vec(s), dtype=np.float64)

    @property
    def dense_hessian(self):
        """The wrapped objective's ``dense_hessian`` capability times ``c``, or None."""
        inner = capability(self.smooth, "dense_hessian")
        return None if inner is None else inner.scaled(self.c)
