"""The registry of methods the experiment runner knows: :class:`Method`,
:func:`register`, :data:`METHODS`.

An entry says which estimator the method is, which grid the paper
searched, which validation metric the paper selected by, how to read the
features a fitted model uses, and its family and colour in chapter 8's
plots.  The estimator is the one place a method's parameters are declared:
the values the runner checks before any fit, and the parameters the
command line accepts, are the estimator's ``_parameter_constraints``,
checked by scikit-learn's own validation (:meth:`Method.refused`), and the
scale guard asks the estimator's ``estimate_memory``.  Adding a method is
one call of :func:`register` (CONTRIBUTING.md walks through one); the
runner, the command line, the scale guard and the chapters pick it up from
:data:`METHODS`.  The papers' methods are registered by
``refimpl.experiments.methods``.

Derived in: book/10_running_experiments.md#run-registry
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._compat.sklearn_params import (
    InvalidParameterError,
    make_constraint,
    validate_parameter_constraints,
)
from ..exceptions import DataError

__all__ = [
    "METHODS",
    "SELECTION_METRICS",
    "Method",
    "expand_grid",
    "get_method",
    "register",
]

#: Metrics a method can be selected by: the keys of
#: :func:`refimpl.metrics.evaluate` with cut-offs 1..10.
SELECTION_METRICS = tuple(
    [f"NDCG@{k}" for k in range(1, 11)]
    + [f"P@{k}" for k in range(1, 11)]
    + ["MAP", "MeanNDCG", "PairwiseAccuracy"]
)


def _coef(estimator):
    """``coef_`` of a linear ranker, as a float vector."""
    return np.asarray(estimator.coef_, dtype=np.float64).ravel()


@dataclass(frozen=True)
class Method:
    """One learning-to-rank method as the runner sees it.

    Derived in: book/10_running_experiments.md#run-registry

    Parameters
    ----------
    name : str
        Command-line name, e.g. ``"fenchelrank"``.
    factory : type or callable
        The estimator class (or a callable): ``factory(**fixed, **params)``
        returns an unfitted estimator with ``fit(X, y, qid)`` and
        ``predict(X)``.  A class's ``_parameter_constraints`` are the values
        the runner accepts (:meth:`refused`), its ``estimate_memory`` the
        scale guard's estimate.
    grid : dict of str to list
        The paper's hyper-parameter grid (every combination is fitted).
    selection_metric : str
        Validation metric the paper selected by (a key of
        :data:`SELECTION_METRICS`); the largest value wins, ties go to the
        first setting in grid order.
    linear : bool
        Whether the fitted model scores by ``X @ coef``; then ``coef``
        gives the weights and the sparsity ratio counts their non-zeros.
    paper : str
        Bibliography key of the paper the method and protocol come from.
    grid_source : str
        Where the grid and the metric come from (section, table), or what
        was chosen when the paper does not say.
    fixed : dict
        Settings passed to every fit where they differ from the estimator's
        defaults (a paper's budget, say); part of the task and cache keys.
    reduced_grid : dict, optional
        A small grid for smoke runs (CI, the chapter); default: the first
        value of each grid entry.
    coef : callable, optional
        ``coef(fitted) -> ndarray`` of input-space weights (linear methods);
        default ``fitted.coef_``.
    support : callable, optional
        ``support(fitted) -> bool ndarray`` of the features a non-linear
        model uses (LambdaMART: features with at least one split).
    description : str
        One line for ``python -m refimpl methods``.
    family : str, default "other"
        The panel of chapter 8's plots the method is drawn in.
    color : str, default "0.5"
        Its colour there (a matplotlib colour, distinct within the family).
    """

    name: str
    factory: Callable[..., Any]
    grid: Mapping[str, list]
    selection_metric: str
    linear: bool
    paper: str
    grid_source: str
    fixed: Mapping[str, Any] = field(default_factory=dict)
    reduced_grid: Mapping[str, list] | None = None
    coef: Callable[[Any], np.ndarray] | None = None
    support: Callable[[Any], np.ndarray] | None = None
    description: str = ""
    family: str = "other"
    color: str = "0.5"

    @property
    def constraints(self) -> dict:
        """The estimator's ``_parameter_constraints`` (empty for a callable
        without them): the parameters a grid may set."""
        return dict(getattr(self.factory, "_parameter_constraints", None) or {})

    def refused(self, param, value):
        """What ``param`` accepts, in words, if ``value`` is refused; else None.

        The estimator's constraints checked by scikit-learn's own
        validation, as its ``fit`` checks them, so that ``C = -1`` is a
        configuration error naming the parameter and the accepted values
        before any fit starts, not a failure of every task.  A parameter
        the estimator does not declare only has to be finite when it is a
        float.
        """
        declared = self.constraints.get(param)
        if declared is None:
            finite = not (isinstance(value, (float, np.floating))
                          and not math.isfinite(value))
            return None if finite else "a finite number"
        try:
            validate_parameter_constraints({param: declared}, {param: value},
                                           caller_name=self.name)
        except InvalidParameterError:
            return " or ".join(str(make_constraint(c)) for c in declared)
        return None

    @property
    def defaults(self) -> dict:
        """The estimator's parameters and their defaults, ``fixed`` applied."""
        try:
            signature = inspect.signature(self.factory)
        except (TypeError, ValueError):
            return dict(self.fixed)
        out = {p.name: p.default for p in signature.parameters.values()
               if p.default is not inspect.Parameter.empty}
        return {**out, **dict(self.fixed)}

    @property
    def params(self) -> tuple:
        """Names of the grid parameters."""
        return tuple(self.grid)

    def build(self, params):
        """A fresh estimator for one parameter setting (``fixed`` included)."""
        return self.factory(**{**dict(self.fixed), **dict(params)})

    def weights(self, fitted):
        """Input-space weights of a fitted linear model, else ``None``."""
        if not self.linear:
            return None
        return (self.coef or _coef)(fitted)

    def used_features(self, fitted):
        """Boolean mask of the features the fitted model uses."""
        if self.linear:
            return self.weights(fitted) != 0
        if self.support is None:
            return None
        return np.asarray(self.support(fitted), dtype=bool)


def expand_grid(grid):
    """Every combination of a grid, in the grid's own order.

    The last parameter varies fastest; the order is that of the dict and of
    each list, so that "first in grid order" is well defined.

    Derived in: book/10_running_experiments.md#run-registry

    Parameters
    ----------
    grid : dict of str to list

    Returns
    -------
    list of dict
        ``[{}]`` for an empty grid (one fit with the fixed settings only).
    """
    names = list(grid)
    return [dict(zip(names, values))
            for values in itertools.product(*(list(grid[n]) for n in names))]


#: name -> :class:`Method`, in the order methods appear in tables.
METHODS: dict = {}


def register(method, *, replace=False):
    """Add a :class:`Method` to :data:`METHODS`.

    Derived in: book/10_running_experiments.md#run-registry

    Parameters
    ----------
    method : Method
    replace : bool, default False
        Allow overwriting an entry of the same name.

    Returns
    -------
    Method
        ``method``, so that ``register`` can be used inline.
    """
    if not isinstance(method, Method):
        raise DataError(f"register() takes a Method, got {type(method).__name__}")
    if method.selection_metric not in SELECTION_METRICS:
        raise DataError(
            f"method {method.name!r}: selection_metric must be one of "
            f"{', '.join(SELECTION_METRICS)}; got {method.selection_metric!r}"
        )
    declared = getattr(method.factory, "_parameter_constraints", None)
    if declared is not None:
        unknown = [p for p in [*method.grid, *method.fixed] if p not in declared]
        if unknown:
            raise DataError(
                f"method {method.name!r}: {method.factory.__name__} has no "
                f"parameter {unknown[0]!r}; its parameters: {', '.join(declared)}")
    settings = [(p, v) for p, values in method.grid.items() for v in values]
    for param, value in [*settings, *method.fixed.items()]:
        accepted = method.refused(param, value)
        if accepted is not None:
            raise DataError(
                f"method {method.name!r}: parameter {param!r} must be "
                f"{accepted}; its grid or fixed setting has {value!r}"
            )
    if method.name in METHODS and not replace:
        raise DataError(f"a method named {method.name!r} is already registered")
    METHODS[method.name] = method
    return method


def get_method(name):
    """The registered :class:`Method` called ``name``.

    Derived in: book/10_running_experiments.md#run-registry

    Raises
    ------
    DataError
        Unknown name; the message lists the registered ones.
    """
    try:
        return METHODS[name]
    except KeyError:
        raise DataError(
            f"unknown method {name!r}; accepted: {', '.join(METHODS)}"
        ) from None
