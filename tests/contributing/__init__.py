"""CONTRIBUTING.md's worked example: two toy methods, added as the page says.

Each is four files: its estimator module (``estimators/<name>.py``, written
exactly as a module of ``refimpl/estimators/``), its ``register`` call
(``registry_entries.py``, as in ``refimpl/experiments/methods.py``), one
test (``test_<name>.py``) and its chapter section
(``book/10_running_experiments.md#run-add-method``).  They are not part of
the package: ``pytest --example-methods`` calls :func:`install`, which puts
``estimators/`` on ``refimpl.estimators``'s package path (so the modules are
``refimpl.estimators.pairwise_logistic_l2`` and ``...pairwise_ridge_tron``,
found by ``all_estimators()`` as a new module of the package is) and runs
the ``register`` calls; the generic tests then run on them unchanged
(``tests/test_contributing.py`` starts that session).
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent

#: method name -> the files that added it (besides the page and this package's
#: plumbing), relative to the repository root.
FILES = {
    "toy-logistic-fista": [
        "tests/contributing/estimators/pairwise_logistic_l2.py",
        "tests/contributing/registry_entries.py",
        "tests/contributing/test_pairwise_logistic_l2.py",
        "book/10_running_experiments.md",
    ],
    "toy-ridge-tron": [
        "tests/contributing/estimators/pairwise_ridge_tron.py",
        "tests/contributing/registry_entries.py",
        "tests/contributing/test_pairwise_ridge_tron.py",
        "book/10_running_experiments.md",
    ],
}


def install():
    """Make the example's estimator modules part of ``refimpl.estimators`` and
    register its methods (idempotent)."""
    import importlib

    import refimpl.estimators

    path = str(HERE / "estimators")
    if path not in refimpl.estimators.__path__:
        refimpl.estimators.__path__.append(path)
    importlib.import_module("contributing.registry_entries")
