"""The base every objective of ``refimpl.losses`` shares.

One copy of what each objective used to repeat: the shape check of ``w``
against ``n_features`` and the LIBLINEAR-style cache of the last point at
which :meth:`fun` was called (``grad`` at the same ``w`` reuses the state,
``hess_vec`` uses the state of the last ``fun``).
"""

from __future__ import annotations

import numpy as np

from ..exceptions import DataError


class CachedObjective:
    """Shape check of ``w`` and the last-``fun`` cache of a smooth objective.

    Subclasses define ``n_features``, ``fun`` (which stores the point in
    ``self._w``) and ``grad``, which starts with :meth:`_at`; ``hess_vec``
    starts with :meth:`_direction`.
    """

    _w = None

    def _check_w(self, w, name="w"):
        """``w`` as float64 of shape ``(n_features,)``, or :class:`DataError`."""
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (self.n_features,):
            raise DataError(
                f"{name} must have shape ({self.n_features},), got {w.shape}"
            )
        return w

    def _at(self, w, name="w"):
        """``w`` checked, with the state of :meth:`fun` at ``w`` cached.

        What ``grad`` starts with: the state of the last ``fun`` is reused
        when it was at the same ``w``, else ``fun(w)`` is called first.
        """
        w = self._check_w(w, name)
        if self._w is None or not np.array_equal(w, self._w):
            self.fun(w)
        return w

    def _direction(self, s):
        """``s`` checked for ``hess_vec``, which needs the state of a previous :meth:`fun`."""
        if self._w is None:
            raise RuntimeError("call fun(w) before hess_vec(s)")
        return self._check_w(s, "s")

    def value_grad(self, w):
        """``(fun(w), grad(w))`` in one call."""
        return self.fun(w), self.grad(w)
