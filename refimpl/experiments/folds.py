"""A run's folds: loaded once per worker, validated once, never stale.

:func:`load_fold` reads one fold of a LETOR or synthetic data set; a worker
process keeps the last folds it loaded, keyed by their data's fingerprint
and normalisation (:func:`load_fold_version`), and their three splits
validated and grouped (:func:`problems_version`), so that every task of a
fold fits and evaluates on the same problems.  :func:`load_checked` checks
that the files did not change while they were read.

Derived in: book/10_running_experiments.md#run-cli
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np

from .. import data as _data
from .._validation import ranking_problem
from ..exceptions import DataError
from .config import check_dataset_name, synthetic_spec
from . import task_cache
from .task_cache import check_unchanged, fingerprint

__all__ = [
    "load_checked",
    "load_fold",
    "load_fold_version",
    "problems_version",
    "synthetic_fold",
]


def synthetic_fold(n_queries, seed, fold):
    """Fold ``fold`` of ``synthetic:<n_queries>:<seed>``: five contiguous
    query partitions rotated like LETOR 4.0's S1..S5."""
    syn = _data.make_synthetic_letor(
        n_queries=n_queries, docs_per_query=(5, 40), n_informative=5,
        n_redundant=10, n_noise=31, n_levels=3, seed=seed)
    part = (syn.qid - 1) * 5 // n_queries          # five contiguous partitions
    def split(parts):
        mask = np.isin(part, parts)
        return _data.RankingData(syn.X[mask], syn.y[mask], syn.qid[mask])
    p = [(fold - 1 + j) % 5 for j in range(5)]
    return _data.LetorFold(name=f"synthetic:{n_queries}:{seed}", fold=fold,
                           train=split(p[:3]), vali=split([p[3]]),
                           test=split([p[4]]))


@functools.lru_cache(maxsize=8)
def load_fold_version(dataset, fold, root, digest, normalize=None):
    """A fold, cached per process by its data's fingerprint ``digest`` and
    its normalisation (so a raw fold never stands for a normalised one)."""
    spec = synthetic_spec(dataset)
    if spec is not None:
        return _data.normalize_fold(synthetic_fold(spec[0], spec[1], fold),
                                    normalize)
    return _data.load_letor_fold(dataset, fold, root=root, normalize=normalize)


def load_fold(dataset, fold, root=None, normalize=None):
    """One fold of a LETOR or synthetic data set (cached per process).

    The cache is keyed by the content of the fold's files (a SHA-256 each,
    re-computed only when a file's size or modification time changes), so a
    file rewritten with other data is loaded again, and by ``normalize``.

    Derived in: book/10_running_experiments.md#run-cli

    Parameters
    ----------
    dataset : str
        As ``ExperimentConfig.dataset``.
    fold : int
    root : str, optional
        LETOR root (default ``LETOR_HOME``).
    normalize : {None, "query", "standard"}, optional
        As ``ExperimentConfig.normalize``.

    Returns
    -------
    refimpl.data.LetorFold
    """
    normalize = _data.check_normalize(normalize)
    if check_dataset_name(dataset) is not None:
        root = None
    else:
        root = os.fspath(_data.letor_home(root))
    # the module's memo, read at call time (a test may replace it)
    fp = fingerprint(dataset, fold, root, task_cache.FILE_MEMO)
    return load_checked(dataset, fold, root, fp["digest"], fp["files"],
                         normalize=normalize)


@dataclass(frozen=True)
class _FoldProblems:
    """A fold's three splits, each a validated, grouped ``RankingProblem``."""

    train: object
    vali: object
    test: object

    @property
    def nbytes(self):
        """Bytes of the three feature matrices (the scale guard's data term)."""
        return sum(_nbytes(p.X) for p in (self.train, self.vali, self.test))


def _nbytes(X):
    if hasattr(X, "indptr"):                 # scipy.sparse CSR: its three arrays
        return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
    return int(X.nbytes)


@functools.lru_cache(maxsize=8)
def problems_version(dataset, fold, root, digest, normalize=None):
    """The fold of :func:`load_fold_version`, each split validated and grouped.

    Once per process, version of the data and normalisation: every task of
    the fold fits and evaluates on these problems, so no task checks,
    groups or normalises its data again
    (:func:`refimpl._validation.ranking_problem`).
    """
    data = load_fold_version(dataset, fold, root, digest, normalize)
    return _FoldProblems(*(ranking_problem(*getattr(data, split))
                           for split in ("train", "vali", "test")))


def load_checked(dataset, fold, root, digest, files, load=load_fold_version,
                  normalize=None):
    """The fold whose files have fingerprint ``digest``; an error if they changed.

    ``load``: :func:`load_fold_version` (a ``LetorFold``) or
    :func:`problems_version` (its validated problems), normalised by
    ``normalize``.
    """
    check_unchanged(files)
    fold_data = load(dataset, fold, root, digest, normalize)
    try:
        check_unchanged(files)
    except DataError:
        # what was read may be neither version: never serve it again
        load_fold_version.cache_clear()
        problems_version.cache_clear()
        raise
    return fold_data
