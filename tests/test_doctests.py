"""Every public estimator's docstring has a runnable Examples section and a
See Also section (issue 26); the examples run here, as doctests.

The estimators come from :func:`refimpl.estimators.all_estimators`, so a new
estimator is doctested once its module is in the package.
"""

import doctest
import importlib
import warnings

import pytest

from refimpl.estimators import all_estimators

ESTIMATORS = all_estimators()
MODULES = sorted({cls.__module__ for _, cls in ESTIMATORS})


@pytest.mark.parametrize("name, cls", ESTIMATORS, ids=[n for n, _ in ESTIMATORS])
def test_every_public_estimator_has_examples_and_see_also(name, cls):
    doc = cls.__doc__ or ""
    assert "\n    Examples\n    --------\n" in doc and ">>> " in doc, name
    assert "\n    See Also\n    --------\n" in doc, name


@pytest.mark.parametrize("module", MODULES)
def test_examples_run(module):
    mod = importlib.import_module(module)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(mod, module) if t.examples]
    assert tests, f"{module} has no doctest"
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # an example must not warn
        for test in tests:
            runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {module}"
