"""The interfaces the objectives offer to the solvers."""

from __future__ import annotations

from collections.abc import Callable
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


@runtime_checkable
class PairwiseLineSearchObjective(SmoothObjective, Protocol):
    """What FenchelRank's exact line search asks of a pairwise loss, and no more.

    Beyond :class:`SmoothObjective`: the margin ``delta`` and whether the
    loss is a mean over its ``n_pairs`` pairs (eq. 4 of Lai et al. 2013
    needs both), the document scores ``X w``, the explicit pair indices when
    the loss keeps them (for the O(p log p) exact line search), the rows in
    the label-block layout (for Algorithm 1 without index arrays) and, without
    explicit pairs, the curvature ``b -> ||K b||^2`` of the closed-form step.  A solver
    never reads the loss's data.

    Derived in: book/03_fenchelrank_duality.md#fenchelrank
    """

    margin: float
    normalize: bool
    n_pairs: int

    def scores(self, w: np.ndarray) -> np.ndarray: ...

    def pair_indices(self) -> tuple[np.ndarray, np.ndarray] | None: ...

    def pair_norm2_operator(self) -> Callable[[np.ndarray], float]: ...

    def label_blocks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                    np.ndarray] | None: ...
