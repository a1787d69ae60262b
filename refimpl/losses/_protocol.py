"""The interface every smooth objective offers to the solvers."""

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class SmoothObjective(Protocol):
    """A twice (generalised-)differentiable function of ``w``.

    The contract is LIBLINEAR's (``tron.h``): the solver calls ``fun(w)``,
    then ``grad(w)`` at the same ``w``, then any number of ``hess_vec(s)``,
    so the objective may cache the scores and the active pairs between calls.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
    """

    n_features: int

    def fun(self, w: np.ndarray) -> float: ...

    def grad(self, w: np.ndarray) -> np.ndarray: ...

    def hess_vec(self, s: np.ndarray) -> np.ndarray: ...
