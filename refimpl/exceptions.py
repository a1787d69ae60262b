"""Exceptions raised by :mod:`refimpl`.

Every input problem is reported as a :class:`DataError` (a ``ValueError``) whose
message names the problem, where it was found and what to do about it, so that
nothing fails later inside a numba kernel.  A bad hyper-parameter of an
estimator is a :class:`ParameterError` instead, whose message names the
parameter, its accepted range and the value given.

Derived in: book/01_data_pairs_metrics.md#letor-format
"""


class DataError(ValueError):
    """Malformed or inconsistent ranking data (file, labels, features, queries)."""


class DataTypeError(DataError, TypeError):
    """Data of a type that cannot be converted to numbers (an object array holding a dict).

    A :class:`DataError` that is also a ``TypeError``, as scikit-learn's
    input validation raises it.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """


class ParameterError(ValueError, TypeError):
    """A hyper-parameter of an estimator outside its accepted range or type.

    Raised by ``fit`` (parameters are checked there, as scikit-learn does,
    not in ``__init__``) from the estimator's declarative
    ``_parameter_constraints``; the message names the parameter, the
    accepted range and the value given, e.g. ``The 'max_iter' parameter of
    RankSVM must be an int in the range [1, inf). Got True instead.``  A
    ``ValueError`` and a ``TypeError``, like scikit-learn's own
    ``InvalidParameterError``; not a :class:`DataError`, which is about the
    data.  Also raised when a legal but extreme value makes a fit on
    features of normal scale overflow (``C = 1e300``, ``r = 1e-300``):
    the message names the parameter and the range in which the fit stays
    within double precision, instead of the :class:`NonFiniteError` that
    would blame the features.

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """


class DatasetNotFoundError(FileNotFoundError):
    """A LETOR dataset was not found where it was looked for."""


class PairMatrixTooLargeError(MemoryError):
    """The explicit pair-difference matrix would need more memory than allowed."""


class NonFiniteError(FloatingPointError):
    """A solver met a NaN or infinite objective, gradient, gap or step.

    A ``FloatingPointError`` (so code that caught the solvers' previous
    errors still does).  The message names the solver, the quantity, its
    value, the likely cause (usually the scale of the features) and the
    remedy (rescale ``X``).

    Derived in: book/07_ranksvm_ostree.md#ranksvm-ostree
    """


class DivergenceError(FloatingPointError):
    """A solver's run grew far beyond its start: the step is too large for the problem.

    Raised by the divergence guard of :func:`refimpl.solvers.bdmm` and of
    :class:`~refimpl.estimators.LifeRank` (``max_growth``) when the
    objective or the constraint violation, still finite, exceeds its start
    by ``max_growth`` times its size: a gradient step too large for the
    curvature makes them grow geometrically, long before anything
    overflows.  The message names the step (``lr``) and a smaller value.
    A ``FloatingPointError``, like :class:`NonFiniteError` (which is for
    values that did become NaN or infinite), not a subclass of it: nothing
    here is non-finite.

    Derived in: book/06_liferank_bdmm.md#liferank
    """


class EmptyModelWarning(UserWarning):
    """A fitted linear ranker has no non-zero weight: it ranks every document equally.

    Raised (as a warning) by the estimators of :mod:`refimpl.estimators` when
    ``coef_`` is all zero.  For an l1-type penalty on a smooth loss this
    happens exactly when the regularisation is at or beyond the value at
    which ``w = 0`` satisfies the optimality conditions, computed from the
    gradient at zero like scikit-learn's ``alpha_max``; the message names the
    penalty, its value and that threshold so that a grid can be chosen on the
    useful side of it.

    Attributes
    ----------
    parameter : str or None
        The estimator parameter that controls sparsity (``"C"``,
        ``"lambda2"``, ``"r"``).
    value : float or None
        Its value in the fit.
    threshold : float or None
        Where every weight vanishes: for ``C`` every weight is zero when
        ``C <= threshold``, for ``lambda2`` when ``lambda2 >= threshold``;
        None when no value of the parameter empties the model.
    """

    def __init__(self, message, *, parameter=None, value=None, threshold=None):
        super().__init__(message)
        self.parameter = parameter
        self.value = value
        self.threshold = threshold
