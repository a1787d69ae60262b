"""Small random ranking problems shared by the loss and solver tests."""

import numpy as np


def random_ranking(seed, n=40, d=5, n_queries=4, levels=3):
    """``(rng, X, y, qid)``: Gaussian features, random labels and queries.

    Documents 0 and 1 are forced into one query with labels 1 and 0, so there
    is at least one preference pair; ``rng`` continues the same stream for
    whatever else the test draws.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, levels, n)
    qid = rng.integers(1, n_queries + 1, n)
    y[0], y[1], qid[0], qid[1] = 1, 0, 1, 1  # at least one pair
    return rng, X, y, qid
