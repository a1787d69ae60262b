"""scikit-learn-style estimators on top of the losses and solvers.

One module per family: :mod:`~refimpl.estimators.ranksvm` (RankSVM),
:mod:`~refimpl.estimators.hinge_ranksvm` (HingeRankSVM, SVMrank's problem),
:mod:`~refimpl.estimators.fenchelrank` (FenchelRank),
:mod:`~refimpl.estimators.sparse` (SparseRankSVM),
:mod:`~refimpl.estimators.fsmrank` (FSMRank, FSMSVM),
:mod:`~refimpl.estimators.gas` (GASRanker, gas_e),
:mod:`~refimpl.estimators.liferank` (LifeRank) and
:mod:`~refimpl.estimators.baselines` (LinearRegressionRanker, LambdaMART,
LifeRankPipeline); the linear ones derive from :class:`LinearRanker`
(``predict``, ``score``, the qid routing and the tags); the rest of what
they share is in ``_base``.

``fit(X, y, qid)`` takes LETOR-shaped data (``qid=None`` is one query),
``predict(X)`` returns scores to sort by, ``coef_`` holds the weights and
``history_`` the solver's iterate history, which the book plots.

Every ``fit`` first deletes the attributes of a previous fit, then checks
``(X, y, qid)`` as scikit-learn does (no empty ``X``, at least one feature,
``y`` and ``qid`` as long as ``X``; ``n_features_in_`` and, for a data frame,
``feature_names_in_`` are recorded and checked again by ``predict``).  A
linear model with no non-zero weight is reported by
:class:`~refimpl.exceptions.EmptyModelWarning`, with the value of the
regularisation parameter beyond which every weight vanishes.

Hyper-parameters are declared in each class's ``_parameter_constraints``
(scikit-learn's vocabulary) and checked by ``fit``; a bad one is a
:class:`~refimpl.exceptions.ParameterError` naming it, its accepted range and
the value.  Every estimator passes scikit-learn's ``check_estimator``
(``tests/test_sklearn_api.py``), and states its memory model as a
function of the data's shape (``estimate_memory``, a
:class:`MemoryEstimate`), which the runner's scale guard asks.
:func:`all_estimators` lists the public estimators (the tests and the API
page are generated from it).

Model selection over queries: with scikit-learn's metadata routing on,
``qid`` is requested by ``fit`` and ``score`` by default, so ::

    sklearn.set_config(enable_metadata_routing=True)
    GridSearchCV(RankSVM(), grid, cv=GroupKFold(3)).fit(X, y, groups=qid, qid=qid)

fits on the training queries and scores each validation fold per query.
Without routing, scikit-learn would call ``score`` without ``qid``; a model
fitted on several queries (``n_queries_in_ > 1``) then refuses to score,
rather than silently treat the fold as one query.
"""

import importlib
import pkgutil

from ._base import LinearRanker, LossBackend, MemoryEstimate
from .baselines import LambdaMART, LifeRankPipeline, LinearRegressionRanker
from .fenchelrank import FenchelRank
from .fsmrank import FSMSVM, FSMRank
from .gas import GASRanker, gas_e
from .hinge_ranksvm import HingeRankSVM
from .liferank import LifeRank
from .ranksvm import RankSVM
from .sparse import SparseRankSVM

__all__ = [
    "FSMSVM",
    "FSMRank",
    "FenchelRank",
    "GASRanker",
    "HingeRankSVM",
    "LambdaMART",
    "LifeRank",
    "LifeRankPipeline",
    "LinearRanker",
    "LinearRegressionRanker",
    "LossBackend",
    "MemoryEstimate",
    "RankSVM",
    "SparseRankSVM",
    "all_estimators",
    "gas_e",
]


def all_estimators():
    """The public estimators of :mod:`refimpl.estimators`, by name.

    Every public class defined in a public module of the package (a module
    whose name has no leading underscore, found on the package's
    ``__path__``) that has a ``fit`` method, by module then by definition
    order: the test parametrisations (scikit-learn's checks, the edge
    cases, the validate-once test, the doctests) and the API page are
    generated from it, so that a new estimator module is picked up with no
    list to edit.

    Returns
    -------
    list of (str, type)

    Derived in: book/10_running_experiments.md#run-registry
    """
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found += [(name, obj) for name, obj in vars(module).items()
                  if isinstance(obj, type) and obj.__module__ == module.__name__
                  and not name.startswith("_") and hasattr(obj, "fit")]
    return found
