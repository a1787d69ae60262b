"""Compile the numba kernels ahead of the first fit: ``python -m refimpl warm``.

The first call of a numba kernel compiles it (seconds per estimator, tens
of seconds for all of them) and writes it to numba's on-disk cache; every
later process loads it from there in milliseconds.  A Binder image runs
this once at build time (``binder/postBuild``), so that a reader's first
fit loads kernels instead of compiling them; a Colab or virtualenv user
runs it once per environment.

Each estimator of :data:`WARM_FITS` is fitted once at its defaults on the
50-query synthetic set of ``benchmarks/bench_first_fit.py``, and once more
with each loss backend it can choose (``backend="auto"`` picks by the
shape of the data, so the defaults alone would leave the other backend's
kernels to compile on a reader's data).

Derived in: book/intro.md#run-the-book
"""

from __future__ import annotations

import time
import warnings

#: The estimators the book's chapters fit, and the ``backend`` values to
#: fit each with besides its defaults.
WARM_FITS = {
    "RankSVM": ("pairs", "tree"),
    "FenchelRank": ("pairs", "tree"),
    "FSMRank": ("pairs", "tree"),
    "SparseRankSVM": ("pairs", "tree"),
    "LifeRank": (),
    "HingeRankSVM": (),
}

#: The data of the warm-up fits: ``make_synthetic_letor`` with these arguments.
WARM_DATA = {"n_queries": 50, "seed": 0}


def warm_up(names=None, *, echo=print):
    """Fit each estimator of ``names`` (default: all of :data:`WARM_FITS`) once per backend.

    Parameters
    ----------
    names : list of str, optional
        Keys of :data:`WARM_FITS`; an unknown name is a ``ValueError``
        naming the known ones.
    echo : callable or None
        Called with one line per estimator (its fits and their seconds).

    Returns
    -------
    dict
        Seconds per estimator name (all its fits together).
    """
    from sklearn.exceptions import ConvergenceWarning

    from . import estimators
    from .data import make_synthetic_letor

    names = list(WARM_FITS) if names is None else list(names)
    unknown = [n for n in names if n not in WARM_FITS]
    if unknown:
        raise ValueError(f"warm: unknown estimator(s) {unknown}; "
                         f"choose from {list(WARM_FITS)}")
    syn = make_synthetic_letor(**WARM_DATA)
    seconds = {}
    for name in names:
        cls = getattr(estimators, name)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            # the defaults' iteration caps, not the kernels, are what a
            # warm-up fit may hit; its coefficients are thrown away
            warnings.simplefilter("ignore", ConvergenceWarning)
            cls().fit(syn.X, syn.y, syn.qid)
            for backend in WARM_FITS[name]:
                cls(backend=backend).fit(syn.X, syn.y, syn.qid)
        seconds[name] = time.perf_counter() - t0
        if echo is not None:
            fits = ", ".join(("defaults",) + tuple(
                f"backend={b!r}" for b in WARM_FITS[name]))
            echo(f"{name:14s} {seconds[name]:6.1f} s  ({fits})")
    return seconds
