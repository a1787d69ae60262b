"""The value every solver of :mod:`refimpl.solvers` returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class SolverResult:
    """Outcome of an iterative solver.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree

    Parameters
    ----------
    w : ndarray of shape (n_features,)
        The last iterate.
    n_iter : int
        Number of outer iterations performed.
    converged : bool
        Whether the solver's stopping rule (stated in its docstring) holds at
        ``w``.
    history : dict of str to list
        Per-iteration traces, all of the same length ``n_iter + 1``: entry 0
        describes the starting point, entry ``k`` the state after outer
        iteration ``k``.  The keys depend on the solver; a ``"time"`` key
        holds seconds since the start (``time.perf_counter``) and is recorded
        for benchmarks only, never printed by library code.
    message : str
        Why the solver stopped, in words.
    details : dict
        Solver-specific extras that are not per-iteration traces, e.g. the
        inner solvers' histories of :func:`refimpl.solvers.reweighted_l1`.
    """

    w: np.ndarray
    n_iter: int
    converged: bool
    history: dict = field(default_factory=dict)
    message: str = ""
    details: dict = field(default_factory=dict)

    def as_arrays(self) -> dict:
        """The history as a dict of NumPy arrays.

        Returns
        -------
        dict of str to ndarray
            ``np.asarray`` of each history list (same keys, same lengths).

        Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
        """
        return {key: np.asarray(values) for key, values in self.history.items()}
