"""LifeRank's MQ2008 protocol beyond the runner (Pandey et al. 2018).

The runner (``python -m refimpl run``) cross-validates the registry's
methods, among them LifeRank + RankSVM and LifeRank + linear regression at
the paper's k = 10 (``results/MQ2008/``).  The paper's Tables 2, 4 and 5
also vary k (5, 10, 15, 20), compare with PCA, drop the constraint
(LifeRank^NO, from two starts) and score the extracted features'
importance and redundancy; :func:`liferank_tables` runs that on the five
folds, and chapter 6 shows its committed output
(``results/book/06-liferank-mq2008.json``, written by
:func:`refimpl.experiments.snapshots.snapshot` with ``REFIMPL_UPDATE_SNAPSHOTS=1``).

Derived in: book/06_liferank_bdmm.md#liferank
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression

from .. import data as _data
from .. import features as _features
from .. import metrics as _metrics
from ..estimators import FSMRank, LifeRank, RankSVM

__all__ = ["CUTS", "EXTRA_K10", "KS", "feature_quality", "fold_scores",
           "liferank_tables", "mark", "protocol_fold"]

#: The numbers of extracted or selected features of the paper's Table 2.
KS = (5, 10, 15, 20)
#: NDCG cut-offs reported (then MAP).
CUTS = tuple(range(1, 11))
#: The ablations of Table 5, at k = 10 only.
EXTRA_K10 = {"LifeRank^NO": {"constraint": "none"},
             "LifeRank^NO, U start": {"constraint": "none", "init": "uniform"}}
#: LifeRank's budget: 150 iterations of damped BDMM (see chapter 6).
LIFE = {"lr": 0.2, "max_iter": 150}


def fold_scores(Ftr, Fte, train, test):
    """Per-query test NDCG@1..10 and AP of RankSVM (C = 1) and least squares.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    Ftr, Fte : ndarray
        Training and test features (original, selected or extracted).
    train, test : tuple of (X, y, qid)
        The fold's splits (only ``y`` and ``qid`` are used).

    Returns
    -------
    dict
        ``{"RankSVM": A, "LinReg": A}``, ``A`` of shape (queries, 11).
    """
    (_, ytr, qtr), (_, yte, qte) = train, test
    svm = RankSVM(C=1.0).fit(Ftr, ytr, qtr)
    ols = LinearRegression().fit(Ftr, ytr)
    out = {}
    for ranker, s in (("RankSVM", svm.predict(Fte)),
                      ("LinReg", ols.predict(Fte))):
        nd = _metrics.ndcg_at_k(yte, s, qte, k=list(CUTS), per_query=True)
        ap = _metrics.average_precision(yte, s, qte, per_query=True)
        out[ranker] = np.column_stack([nd, ap])
    return out


def feature_quality(Fte, test):
    """Importance and redundancy (tau_b and eq. 10) of test features.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    Fte : ndarray
    test : tuple of (X, y, qid)

    Returns
    -------
    tuple of float
        Mean importance, redundancy with Kendall's tau_b, with eq. 10.
    """
    _, yte, qte = test
    return (_features.feature_importance(Fte, yte, qte).mean(),
            _features.feature_redundancy(Fte, qte),
            _features.feature_redundancy(Fte, qte, tau="eq10"))


def _selections(Xtr, ytr, qtr):
    """GAS's inputs, FSMRank's feature order and PCA's rotation."""
    imp, _ = _features.feature_ndcg(Xtr, ytr, qtr, k=10)
    sim = _features.kendall_similarity(Xtr, qtr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # FSMRank's PSD projection notice
        fsm = FSMRank(lambda1=0.1, lambda2=1e-4, tol=1e-6).fit(Xtr, ytr, qtr)
    order = np.argsort(-np.abs(fsm.coef_), kind="stable")
    _, _, Qt = np.linalg.svd(Xtr, full_matrices=False)
    return imp, sim, order, Qt


def protocol_fold(train, test, *, ks=KS, random_state=1):
    """Every reduction of the protocol on one fold.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    train, test : tuple of (X, y, qid)
    ks : sequence of int, default KS
        Numbers of features; the ablations run at k = 10 when it is in.
    random_state : int, default 1
        LifeRank's seed (chapter 6 uses the fold number).

    Returns
    -------
    scores : dict
        ``"Original"`` and ``(name, k)`` -> :func:`fold_scores`.
    quality : dict
        name -> :func:`feature_quality` at k = 10 (and of the uniform start).
    fits : dict
        ``(name, k)`` -> (LifeRank's objective, ||T^T T - I||_F).
    """
    (Xtr, ytr, qtr), (Xte, _, _) = train, test
    imp, sim, order, Qt = _selections(Xtr, ytr, qtr)
    scores = {"Original": fold_scores(Xtr, Xte, train, test)}
    quality = {"Original": feature_quality(Xte, test)}
    fits = {}
    for k in ks:
        cols = {"GAS": _features.gas_select(imp, sim, k, 0.01),
                "FSMRank": order[:k]}
        T_sets = {"PCA": Qt[:k].T}
        for name, kw in {"LifeRank": {}, **(EXTRA_K10 if k == 10 else {})}.items():
            est = LifeRank(n_components=k, random_state=random_state,
                           **LIFE, **kw).fit(Xtr, ytr, qtr)
            T_sets[name] = est.components_
            fits[name, k] = (est.objective_, est.orthonormality_error_)
        for name, idx in cols.items():
            scores[name, k] = fold_scores(Xtr[:, idx], Xte[:, idx], train, test)
            if k == 10:
                quality[name] = feature_quality(Xte[:, idx], test)
        for name, T in T_sets.items():
            scores[name, k] = fold_scores(Xtr @ T, Xte @ T, train, test)
            if k == 10 and name != "PCA":
                quality[name] = feature_quality(Xte @ T, test)
    if 10 in ks:
        T0 = LifeRank(n_components=10, init="uniform",
                      random_state=random_state)._initial_T(Xtr.shape[1], 10)
        quality["U start itself"] = feature_quality(Xte @ T0, test)
    return scores, quality, fits


def mark(a, b):
    """Paper-style mark of LifeRank (``a``) against a baseline (``b``).

    A two-tailed paired t-test over queries: "▲"/"▼" LifeRank better/worse
    at p < 0.01, "△"/"▽" at p < 0.05, else " " (also for equal columns).

    Derived in: book/06_liferank_bdmm.md#liferank
    """
    if np.allclose(a, b):
        return " "
    pv, up = stats.ttest_rel(a, b).pvalue, a.mean() > b.mean()
    return ("▲" if up else "▼") if pv < 0.01 else (
        ("△" if up else "▽") if pv < 0.05 else " ")


def _one_fold(dataset, f, root):
    # worker processes do not inherit the caller's warning filters; the
    # 150-iteration budget is intended (chapter 6), so its warning is noise
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    fold = _data.load_letor_fold(dataset, f, root=root)
    return protocol_fold(fold.train, fold.test, random_state=f)


def liferank_tables(folds=(1, 2, 3, 4, 5), *, dataset="MQ2008", root=None,
                    n_jobs=2):
    """The protocol on a LETOR data set's folds, pooled over test queries.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    folds : sequence of int, default 1..5
    dataset : str, default "MQ2008"
    root : path-like, optional
        LETOR root (default ``LETOR_HOME``).
    n_jobs : int, default 2
        Folds run in parallel (joblib).

    Returns
    -------
    dict
        ``means`` ("ranker|name|k" -> 11 means over the pooled queries),
        ``marks`` (same keys -> 11 marks against LifeRank at that k),
        ``fits`` (name -> mean objective and violation at k = 10) and
        ``quality`` (name -> mean over folds of :func:`feature_quality`).
    """
    from joblib import Parallel, delayed
    res = Parallel(n_jobs=n_jobs)(delayed(_one_fold)(dataset, f, root)
                                  for f in folds)

    def pooled(key, ranker):
        return np.vstack([fr[0][key][ranker] for fr in res])

    rows = [(n, k) for k in KS for n in ("Original", "PCA", "GAS", "FSMRank",
                                         "LifeRank")]
    rows += [(n, 10) for n in EXTRA_K10]
    means, marks = {}, {}
    for r in ("RankSVM", "LinReg"):
        for n, k in rows:
            ours = pooled("Original" if n == "Original" else (n, k), r)
            life = pooled(("LifeRank", k), r)
            means[f"{r}|{n}|{k}"] = ours.mean(axis=0)
            marks[f"{r}|{n}|{k}"] = "".join(
                " " if n == "LifeRank" else mark(life[:, j], ours[:, j])
                for j in range(ours.shape[1]))
    fits = {n: np.mean([fr[2][n, 10] for fr in res], axis=0)
            for n in ("LifeRank", *EXTRA_K10)}
    quality = {n: np.mean([fr[1][n] for fr in res], axis=0) for n in res[0][1]}
    return {"means": means, "marks": marks, "fits": fits, "quality": quality}
