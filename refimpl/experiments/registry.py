"""The methods the experiment runner knows: one :class:`Method` entry each.

An entry says which estimator the method is, which grid the paper
searched, which validation metric the paper selected by, and how to read
the features a fitted model uses.  The estimator is the one place a
method's parameters are declared: the entry's ``ranges`` (the values the
runner checks before any fit, and the parameters the command line accepts)
are derived from the estimator's ``_parameter_constraints``, and the scale
guard asks the estimator's ``estimate_memory``.  Adding a method is one
call of :func:`register` (CONTRIBUTING.md walks through one); the runner,
the command line, the scale guard and the chapter pick it up from
:data:`METHODS`.

Where a paper does not state a grid (FSMRank, RankSVM-l1, the non-convex
penalties, LambdaMART) the entry's ``grid_source`` says so and what was
chosen instead.

Derived in: book/10_running_experiments.md#run-registry
"""

from __future__ import annotations

import inspect
import itertools
import math
from numbers import Integral
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..estimators import (
    FSMSVM,
    FenchelRank,
    FSMRank,
    GASRanker,
    HingeRankSVM,
    LambdaMART,
    LifeRankPipeline,
    LinearRegressionRanker,
    RankSVM,
    SparseRankSVM,
)
from .._compat.sklearn_params import Interval, Options, make_constraint
from ..exceptions import DataError

__all__ = [
    "METHODS",
    "SELECTION_METRICS",
    "Method",
    "ParamRange",
    "ranges_from_constraints",
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


@dataclass(frozen=True)
class ParamRange:
    """The values one hyper-parameter accepts.

    The runner checks every grid value against its method's ranges before
    any fit starts (:func:`refimpl.experiments.config.validate_config`), so
    that ``C = -1`` is a configuration error naming the parameter and the
    accepted range, not a failure of every task at fit time.  A method's
    ranges are derived from its estimator's ``_parameter_constraints``
    (:func:`ranges_from_constraints`): they are what ``fit`` checks.

    Derived in: book/10_running_experiments.md#run-registry

    Parameters
    ----------
    kind : {"real", "integer", "choice"}
        ``"real"``: a finite int or float (not a bool); ``"integer"``: an int
        (not a bool, not a float such as ``10.0``); ``"choice"``: one of
        ``choices``.
    low, high : float, default -inf, inf
        Bounds of the interval (``"real"`` and ``"integer"``).
    closed : {"neither", "left", "right", "both"}, default "neither"
        Which bounds belong to the interval.
    choices : tuple, default ()
        The accepted values of a ``"choice"`` parameter.
    """

    kind: str = "real"
    low: float = -math.inf
    high: float = math.inf
    closed: str = "neither"
    choices: tuple = ()

    def __post_init__(self):
        if self.kind not in ("real", "integer", "choice"):
            raise DataError(f"ParamRange kind must be 'real', 'integer' or 'choice', "
                            f"got {self.kind!r}")
        if self.closed not in ("neither", "left", "right", "both"):
            raise DataError(f"ParamRange closed must be 'neither', 'left', 'right' "
                            f"or 'both', got {self.closed!r}")
        if self.kind == "choice" and not self.choices:
            raise DataError("a 'choice' ParamRange needs at least one choice")

    def contains(self, value) -> bool:
        """Whether ``value`` is accepted."""
        if self.kind == "choice":
            return any(type(value) is type(c) and value == c for c in self.choices)
        if isinstance(value, (bool, np.bool_)):
            return False
        if self.kind == "integer":
            if not isinstance(value, (int, np.integer)):
                return False
        elif not isinstance(value, (int, float, np.integer, np.floating)):
            return False
        if self.kind == "integer":
            # compared as integers: float() rounds 2**63 down to a bound
            v = int(value)
        else:
            v = float(value)
            if not math.isfinite(v):
                return False
        left = v >= self.low if self.closed in ("left", "both") else v > self.low
        right = v <= self.high if self.closed in ("right", "both") else v < self.high
        return left and right

    def describe(self) -> str:
        """The accepted values in words, e.g. ``"a finite real number > 0"``."""
        if self.kind == "choice":
            return "one of " + ", ".join(map(repr, self.choices))
        what = "an integer" if self.kind == "integer" else "a finite real number"
        lo_in = self.closed in ("left", "both")
        hi_in = self.closed in ("right", "both")
        has_lo, has_hi = math.isfinite(self.low), math.isfinite(self.high)
        def show(bound):  # an integer bound exactly (2**63 - 1, not 9.22e18)
            return str(bound) if isinstance(bound, int) else f"{bound:g}"

        lo, hi = show(self.low), show(self.high)
        if has_lo and has_hi:
            return (f"{what} in {'[' if lo_in else '('}{lo}, "
                    f"{hi}{']' if hi_in else ')'}")
        if has_lo:
            return f"{what} {'>=' if lo_in else '>'} {lo}"
        if has_hi:
            return f"{what} {'<=' if hi_in else '<'} {hi}"
        return what


@dataclass(frozen=True)
class AnyOf:
    """Values accepted by any of several ranges (``[POSITIVE, None]``, say)."""

    parts: tuple

    def contains(self, value) -> bool:
        """Whether one of the parts accepts ``value``."""
        return any(part.contains(value) for part in self.parts)

    def describe(self) -> str:
        """The parts' descriptions joined by "or"."""
        return " or ".join(part.describe() for part in self.parts)


@dataclass(frozen=True)
class _Other:
    """A scikit-learn constraint without a :class:`ParamRange` form (a type, "boolean")."""

    constraint: Any

    def contains(self, value) -> bool:
        return bool(make_constraint(self.constraint).is_satisfied_by(value))

    def describe(self) -> str:
        return str(make_constraint(self.constraint))


def _as_range(constraint):
    if constraint is None:
        return _Other(None)
    if isinstance(constraint, Interval):
        kind = "integer" if constraint.type is Integral else "real"
        return ParamRange(
            kind, -math.inf if constraint.left is None else constraint.left,
            math.inf if constraint.right is None else constraint.right,
            closed=constraint.closed)
    if isinstance(constraint, Options):
        return ParamRange("choice", choices=tuple(sorted(constraint.options, key=repr)))
    return _Other(constraint)


def ranges_from_constraints(constraints):
    """The runner's ranges of an estimator's ``_parameter_constraints``.

    Each parameter's list of scikit-learn constraints becomes a
    :class:`ParamRange` (an interval, a set of options, ``None``) or, for
    several, an :class:`AnyOf` of them, so that the runner checks grid
    values against exactly what the estimator's ``fit`` accepts and names
    the accepted values as it does (e.g. "an integer >= 1").

    Derived in: book/10_running_experiments.md#run-registry

    Parameters
    ----------
    constraints : dict of str to list

    Returns
    -------
    dict of str to ParamRange or AnyOf
    """
    out = {}
    for name, accepted in dict(constraints).items():
        parts = tuple(_as_range(c) for c in accepted)
        out[name] = parts[0] if len(parts) == 1 else AnyOf(parts)
    return out


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
        ``predict(X)``.  A class's ``_parameter_constraints`` give the
        entry's ``ranges``, its ``estimate_memory`` the scale guard's
        estimate.
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
        Settings passed to every fit (tolerances, budgets, seeds); part of
        the cache key.
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
    ranges : dict of str to ParamRange, optional
        Accepted values of the parameters, checked before any fit, beyond
        (or narrowing) those derived from the estimator's
        ``_parameter_constraints`` (:func:`ranges_from_constraints`); after
        construction, ``ranges`` holds both.  A parameter without a range
        only has to be a finite number when it is a float.
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
    ranges: Mapping[str, ParamRange] = field(default_factory=dict)

    def __post_init__(self):
        derived = ranges_from_constraints(
            getattr(self.factory, "_parameter_constraints", None) or {})
        object.__setattr__(self, "ranges", {**derived, **dict(self.ranges)})

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
    for param, allowed in dict(method.ranges).items():
        values = list(method.grid.get(param, []))
        if param in method.fixed:
            values.append(method.fixed[param])
        bad = [v for v in values if not allowed.contains(v)]
        if bad:
            raise DataError(
                f"method {method.name!r}: parameter {param!r} must be "
                f"{allowed.describe()}; its grid or fixed setting has {bad[0]!r}"
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


def _lambdamart_support(fitted):
    return fitted.feature_importances_ > 0


# --------------------------------------------------------------------------
# The methods of the five papers (and two references beyond them)
# --------------------------------------------------------------------------


_POW2 = [2.0 ** e for e in range(-15, 11)]
#: C grid of the sparse RankSVMs: Laporte et al. tune C "on a grid" without
#: listing it; six decades around the values where RankSVM-l1 goes from one
#: feature to all of them on MQ2008.
_SPARSE_C = [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0]
_SELECT_T = [5, 10, 15, 20, 25, 30, 35, 40]
register(Method(
    name="ranksvm", factory=RankSVM,
    grid={"C": _POW2}, reduced_grid={"C": [2.0 ** -5, 1.0]},
    selection_metric="MeanNDCG", linear=True, paper="lee2014largescale",
    grid_source="Lee & Lin (2014), Section 4.4: C in {2^-15, ..., 2^10}, "
                "selected by validation mean NDCG (LETOR 4.0); eps = 1e-4",
    # eps = 1e-4, not LIBLINEAR's 1e-3: at 1e-3 the validation mean NDCG of
    # near-tied C differ in the 6th digit between BLAS kernels, so MQ2008
    # Fold 1 selected C = 16, 64 or 512 depending on the CPU; at 1e-4 the
    # selections on all five folds equal those at 1e-6 under the Haswell,
    # Sandybridge and Prescott kernels, for 2x the CPU of 1e-3 (10x less
    # than 1e-6).
    fixed={"tol": 1e-4},
    description="L2-loss linear RankSVM, TRON with order-statistic trees",
))
#: SVMrank's C (per query, svm_rank_learn -c): decades around its default
#: 0.01; the LifeRank paper names SVMrank without its C or selection rule.
_SVMRANK_C = [1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0]
register(Method(
    name="ranksvm-hinge", factory=HingeRankSVM,
    grid={"C": _SVMRANK_C}, reduced_grid={"C": [1e-2, 1.0]},
    selection_metric="MAP", linear=True, paper="joachims2006training",
    grid_source="SVMrank (Joachims 2006, svm_rank): L1 hinge, C / n_queries; "
                "Pandey et al. (2018) give neither C nor the selection rule: "
                "ours C in 1e-3..1e2, selected by validation MAP",
    fixed={"tol": 1e-6, "max_iter": 1000},
    description="L1-hinge linear RankSVM (SVMrank's problem), 1-slack "
                "cutting planes",
))
register(Method(
    name="fenchelrank", factory=FenchelRank,
    grid={"r": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]},
    reduced_grid={"r": [1.0, 2.0]},
    selection_metric="NDCG@10", linear=True, paper="lai2013fenchelrank",
    grid_source="Lai et al. (2013a), Section 8.3: r in {1, 2, ..., 256}, "
                "T = 1000, epsilon = 0.001, selected by validation NDCG@10",
    # Algorithm 1 (variant "paper"), not the faster certified variants: at
    # max_iter = 1000, 33 of the 45 MQ2008 fits stop above the gap 1e-3, and
    # variant="face_newton" (which reaches it in <= 76 updates, 15x less
    # fitting time) selects another r on Fold 4 and moves test metrics by up
    # to 0.018; `--grid fenchelrank:variant=face_newton` runs it.  Algorithm
    # 1 itself runs on the label blocks (line_search="auto" -> "blocks"),
    # with the iterates of the explicit-pairs loop; `--grid
    # fenchelrank:line_search=pairs` runs that loop.
    fixed={"tol": 1e-3, "max_iter": 1000},
    description="l1-ball constrained squared hinge, primal-dual (FenchelRank)",
))
register(Method(
    name="fsmrank", factory=FSMRank,
    grid={"lambda1": [0.01, 0.1, 1.0], "lambda2": [1e-4, 1e-3, 1e-2]},
    reduced_grid={"lambda1": [0.1], "lambda2": [1e-3]},
    selection_metric="NDCG@10", linear=True, paper="lai2013fsmrank",
    grid_source="Lai et al. (2013b), Section IV-C: lambda1, lambda2 'chosen "
                "by cross-validation' (grid not given; ours: 3 x 3 decades), "
                "T = 400; metric not given, NDCG@10 as in FenchelRank (which "
                "Laporte et al. confirm for both)",
    fixed={"tol": 1e-4, "max_iter": 400},
    description="similarity + importance-weighted l1 (FSMRank), FISTA",
))
register(Method(
    name="gas-e", factory=GASRanker,
    grid={"n_features_to_select": _SELECT_T},
    reduced_grid={"n_features_to_select": [10]},
    selection_metric="MAP", linear=True, paper="lai2013fsmrank",
    grid_source="Lai et al. (2013b), Section IV-D1 and Remark 1: t chosen "
                "by validation MAP (values of t: ours, 5..40 by 5)",
    fixed={"redundancy_penalty": 0.01, "C": 1.0},
    description="GAS feature selection, then RankSVM (GAS-E)",
))
register(Method(
    name="fsmsvm", factory=FSMSVM,
    grid={"n_features_to_select": _SELECT_T},
    reduced_grid={"n_features_to_select": [10]},
    selection_metric="MAP", linear=True, paper="lai2013fsmrank",
    grid_source="Lai et al. (2013b), Section IV-D1: top-t FSMRank features, "
                "then RankSVM; t by validation MAP; FSMRank stage fixed at "
                "lambda1 = 0.1, lambda2 = 1e-3",
    fixed={"lambda1": 0.1, "lambda2": 1e-3, "C": 1.0},
    description="top-t FSMRank features, then RankSVM (FSMSVM)",
))
# The sparse RankSVMs run proximal Newton (solver="newton"), whose stop
# certifies FISTA's gradient-mapping test at the same tol, instead of the
# paper's FISTA: 16x less CPU on MQ2008 (5 folds: about 5 s for l1, log, lp
# and MCP together against 84 s), and the fits are converged ones.  Two
# selections change against FISTA at tol = 1e-5, both on fold 4 and both
# artifacts of FISTA's tolerance: l1 picks C = 1 (validation MAP 0.452031
# converged, 0.451661 by FISTA at 1e-5, which then picked C = 1e-3 at
# 0.451867) and log C = 1e-4; FISTA run to tol = 1e-9 (270 s CPU for that
# fold) selects as Newton does.  lp keeps its selections, with test metrics
# within 4.3e-3 (a stationary point of the non-convex problem whose inner
# problems are solved exactly).
register(Method(
    name="ranksvm-l1", factory=SparseRankSVM,
    grid={"C": _SPARSE_C}, reduced_grid={"C": [1e-4, 1e-3]},
    selection_metric="MAP", linear=True, paper="laporte2014nonconvex",
    grid_source="Laporte et al. (2014), Section V-C: C on a grid (not "
                "given; ours 1e-4..10), selected by validation MAP",
    fixed={"penalty": "l1", "tol": 1e-5, "max_iter": 5000, "solver": "newton"},
    description="l1-regularised L2-loss RankSVM, proximal Newton (RankSVM-l1; "
                "FISTA's stopping test certified)",
))
for _pen, _kw, _what in (
        ("log", {"eps": 0.1}, "log penalty, epsilon = 0.1"),
        ("mcp", {"gamma": 2.0}, "MCP, gamma = 2"),
        ("lp", {"p": 0.5}, "l_p penalty, p = 0.5")):
    register(Method(
        name=f"ranksvm-{_pen}", factory=SparseRankSVM,
        grid={"C": _SPARSE_C}, reduced_grid={"C": [1e-3]},
        selection_metric="MAP", linear=True, paper="laporte2014nonconvex",
        grid_source=f"Laporte et al. (2014), Section V-C: {_what} (the paper's "
                    "values), C on a grid (ours 1e-4..10), selected by "
                    "validation MAP; reweighted l1 (Algorithm 2)",
        fixed={"penalty": _pen, **_kw, "tol": 1e-5, "max_iter": 5000,
               "max_outer": 30, "solver": "newton"},
        description=f"RankSVM with the non-convex {_what} (reweighted l1)",
    ))
for _second, _label in (("ranksvm", "RankSVM"), ("linreg", "linear regression")):
    register(Method(
        name=f"liferank-{_second}", factory=LifeRankPipeline,
        grid={"n_components": [5, 10, 15, 20]},
        reduced_grid={"n_components": [5]},
        selection_metric="MAP", linear=True, paper="pandey2018liferank",
        grid_source="Pandey et al. (2018), Section 6.1: k in {5, 10, 15, "
                    f"20}} generated features, then {_label}; the paper "
                    "reports every k (no selection): we select k by "
                    "validation MAP and also compare at k = 10",
        fixed={"ranker": _second, "C": 1.0, "lam": 1e-3, "lr": 0.1,
               "max_iter": 1000, "random_state": 0},
        description=f"LifeRank feature extraction, then {_label}",
    ))
register(Method(
    name="liferank-ranksvm-hinge", factory=LifeRankPipeline,
    grid={"n_components": [5, 10, 15, 20], "C": _SVMRANK_C},
    reduced_grid={"n_components": [5], "C": [1e-2]},
    selection_metric="MAP", linear=True, paper="pandey2018liferank",
    grid_source="Pandey et al. (2018), Sections 5.3 and 6.1: k in {5, 10, "
                "15, 20} generated features, then SVMrank (the L1-hinge "
                "RankSVM, C per query); the paper gives no C: C as "
                "ranksvm-hinge's grid, k and C selected by validation MAP",
    fixed={"ranker": "ranksvm-hinge", "lam": 1e-3, "lr": 0.1,
           "max_iter": 1000, "random_state": 0},
    description="LifeRank feature extraction, then SVMrank's L1-hinge "
                "RankSVM (the paper's ranker)",
))
register(Method(
    name="linreg", factory=LinearRegressionRanker, grid={}, reduced_grid={},
    selection_metric="MAP", linear=True, paper="pandey2018liferank",
    grid_source="Pandey et al. (2018), Section 5.3: pointwise linear "
                "regression baseline (no hyper-parameter)",
    description="ordinary least squares on the labels (pointwise)",
))
register(Method(
    name="lambdamart", factory=LambdaMART,
    grid={"n_estimators": [100, 300], "num_leaves": [7, 31],
          "learning_rate": [0.05, 0.1]},
    reduced_grid={"n_estimators": [50], "num_leaves": [7],
                  "learning_rate": [0.1]},
    selection_metric="NDCG@10", linear=False, paper="burges2010ranknet",
    grid_source="beyond the papers: LightGBM LGBMRanker (lambdarank); small "
                "grid of ours, selected by validation NDCG@10",
    fixed={"min_child_samples": 20, "random_state": 0},
    support=_lambdamart_support,
    description="LightGBM LambdaMART (non-linear reference)",
))
