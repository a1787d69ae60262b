"""scikit-learn's parameter-validation vocabulary, from its private module.

``sklearn.utils._param_validation`` is private (a leading underscore) but
it is what scikit-learn's own estimators declare ``_parameter_constraints``
with and what :func:`sklearn.utils.estimator_checks.parametrize_with_checks`
expects of them; refimpl's estimators use it through this module only.
Tested with scikit-learn 1.6 to 1.9 (``pyproject.toml`` pins the range).
"""

from __future__ import annotations

#: The scikit-learn versions this fence was written against (pyproject.toml's
#: range); ``tests/test_compat.py`` checks the installed one is inside it.
TESTED = ("1.6", "1.10")

try:
    from sklearn.utils._param_validation import (
        HasMethods,
        Interval,
        InvalidParameterError,
        Options,
        StrOptions,
        make_constraint,
        validate_parameter_constraints,
    )
except ImportError as err:  # pragma: no cover - an upstream change
    import sklearn

    raise ImportError(
        "refimpl needs scikit-learn's parameter validation "
        "(sklearn.utils._param_validation: HasMethods, Interval, Options, "
        "StrOptions, "
        "make_constraint, validate_parameter_constraints, "
        f"InvalidParameterError), which scikit-learn {sklearn.__version__} "
        f"does not provide as before ({err}); refimpl is tested with "
        f"scikit-learn >= {TESTED[0]}, < {TESTED[1]}: install a version in "
        "that range, or update refimpl/_compat/sklearn_params.py"
    ) from err

__all__ = [
    "TESTED",
    "HasMethods",
    "Interval",
    "InvalidParameterError",
    "Options",
    "StrOptions",
    "make_constraint",
    "validate_parameter_constraints",
]
