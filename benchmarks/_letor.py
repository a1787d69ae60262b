"""The benchmarks' usual data: MQ2008 Fold1 train and its synthetic stand-in (not part of refimpl).

Most benchmarks time on both: the real fold when ``LETOR_HOME`` has it, and
always a synthetic set of the same shape, so that a machine without the data
still measures something comparable.
"""

from __future__ import annotations

import os

from refimpl.data import load_letor_fold, make_synthetic_letor


def mq2008_shaped(n_queries=470):
    """Synthetic set of MQ2008-fold shape (seed 0).

    470 queries of 5 to 36 documents (about 9,800 documents), 46 features:
    6 informative, 10 redundant, 30 noise (``.X``, ``.y``, ``.qid``).
    """
    return make_synthetic_letor(n_queries=n_queries, docs_per_query=(5, 36),
                                n_informative=6, n_redundant=10, n_noise=30, seed=0)


def mq2008_fold1_train(indent="\n"):
    """``(X, y, qid)`` of MQ2008 Fold1 train, or None after printing why not.

    ``indent`` starts the printed line (a blank line by default).
    """
    if not os.environ.get("LETOR_HOME"):
        print(f"{indent}(MQ2008 Fold1 skipped: LETOR_HOME is not set)")
        return None
    try:
        return load_letor_fold("MQ2008", 1).train
    except FileNotFoundError as exc:  # DatasetNotFoundError is one
        print(f"{indent}(MQ2008 not available: {exc})")
        return None


def mq2008_datasets(synthetic_label="synthetic (MQ2008-fold shape)", indent="\n"):
    """Yield ``(label, X, y, qid)``: the synthetic set, then the real fold if there."""
    syn = mq2008_shaped()
    yield synthetic_label, syn.X, syn.y, syn.qid
    fold = mq2008_fold1_train(indent)
    if fold is not None:
        yield "MQ2008 Fold1 train", *fold
