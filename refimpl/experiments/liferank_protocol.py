"""LifeRank's protocol as the paper printed it (Pandey et al. 2018).

The paper's Table 2 (MQ2008) and Table 3 (OHSUMED), one protocol on any
LETOR data set: k in {5, 10, 15, 20} features extracted by LifeRank or
selected by GAS and by FSMSVM (FSMRank's largest weights), and the original
features, each ranked by SVMrank (Joachims' L1-hinge RankSVM) and by
RankLib's linear regression, NDCG@1-10 and MAP on the test queries of the
five folds with two-tailed paired t-test marks.  :func:`liferank_tables`
runs it, with LifeRank as the paper initialises it (``w`` all ones, ``T``
random) and stops it ("convergence or the maximum number of iterations":
the tolerance and budget the registry's ``liferank-*`` entries run),
SVMrank's ``C`` selected on each fold's validation MAP from
:data:`SVMRANK_C` (the paper gives none) and, beside them, our L2-loss
RankSVM at ``C = 1`` (the ranker of the runner's first comparison), PCA,
LifeRank^NO (Table 5) and the features' quality (Table 4).  Chapter 6 shows
its committed output (``results/book/06-liferank-mq2008.json`` and
``06-liferank-ohsumed.json``, written by
:func:`refimpl.experiments.snapshots.snapshot` with
``REFIMPL_UPDATE_SNAPSHOTS=1``; the flat tables are
``results/<dataset>/liferank_protocol.csv``, by :func:`write_protocol_csv`).

Derived in: book/06_liferank_bdmm.md#liferank
"""

from __future__ import annotations

import csv
import warnings

import numpy as np
from scipy import stats
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression

from .. import _io
from .. import data as _data
from .. import features as _features
from .. import metrics as _metrics
from ..estimators import FSMRank, HingeRankSVM, LifeRank, LifeRankPipeline, RankSVM
from .registry import get_method

__all__ = ["CUTS", "EXTRA_K10", "FSMRANK", "HINGE", "KS", "LIFE", "NO_BUDGET",
           "RANKERS", "SVMRANK_C",
           "feature_quality", "fold_scores", "liferank_tables", "mark",
           "protocol_fold", "seed_gains", "write_protocol_csv"]

#: The numbers of extracted or selected features of the paper's Table 2.
KS = (5, 10, 15, 20)
#: NDCG cut-offs reported (then MAP).
CUTS = tuple(range(1, 11))
#: The ablations of Table 5, at k = 10 only.  Without the constraint the
#: objective has no minimiser (``(c T, w / c)`` lowers it for ``c > 1``),
#: so LifeRank^NO never meets its certificate and its budget defines the
#: run: 10,000 steps, stated here rather than inherited from LifeRank's
#: ``max_iter``, a budget its fits do not reach.
NO_BUDGET = 10_000
EXTRA_K10 = {"LifeRank^NO": {"constraint": "none", "max_iter": NO_BUDGET},
             "LifeRank^NO, U start": {"constraint": "none", "init": "uniform",
                                      "max_iter": NO_BUDGET}}
#: LifeRank as the registry runs it (``liferank-ranksvm-hinge``, the
#: paper's SVMrank after LifeRank): the paper states no step, budget or
#: lambda; w starts at ones and T at random (the paper).
LIFE = {name: get_method("liferank-ranksvm-hinge").defaults[name]
        for name in LifeRankPipeline.FIRST_STAGE_PARAMS if name != "n_components"}
#: SVMrank's C grid (its convention, per query: registry ``ranksvm-hinge``),
#: selected on validation MAP; the paper gives neither C nor the rule.
SVMRANK_C = tuple(get_method("ranksvm-hinge").grid["C"])
#: :class:`~refimpl.estimators.HingeRankSVM`'s settings (the registry's),
#: on the features as given: SVMrank (Joachims' problem, eq. 7.11) on the
#: extracted features, as Pandey et al. ran it and as the committed tables
#: were fitted; the extracted features' scales are the first stage's, and
#: dividing them by their magnitudes (the estimator's default) changes the
#: regulariser on them, hence the tables.
HINGE = {**get_method("ranksvm-hinge").fixed, "feature_scaling": None}
#: The FSMRank stage of FSMSVM as the registry runs it (``fsmsvm``); the
#: paper names FSMSVM without its lambdas.
FSMRANK = {name: get_method("fsmsvm").defaults[name]
           for name in ("lambda1", "lambda2", "tol", "max_iter")}
#: The downstream rankers: SVMrank (L1 hinge, C by validation), our
#: L2-loss RankSVM at C = 1, least squares (RankLib's linear regression).
RANKERS = ("SVMrank", "RankSVM", "LinReg")


def _per_query(s, y, qid):
    nd = _metrics.ndcg_at_k(y, s, qid, k=list(CUTS), per_query=True)
    ap = _metrics.average_precision(y, s, qid, per_query=True)
    return np.column_stack([nd, ap])


def _svmrank(Ftr, Fva, train, vali):
    """SVMrank on each C of :data:`SVMRANK_C`; the best validation MAP."""
    (_, ytr, qtr), (_, yva, qva) = train, vali
    best = None
    for C in SVMRANK_C:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = HingeRankSVM(C=C, **HINGE).fit(Ftr, ytr, qtr)
        val = _metrics.average_precision(yva, model.predict(Fva), qva)
        if best is None or val > best[0]:
            best = (val, C, model)
    return best[1], best[2]


def fold_scores(Ftr, Fte, train, test, Fva=None, vali=None):
    """Per-query test NDCG@1..10 and AP of the downstream rankers.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    Ftr, Fte : ndarray
        Training and test features (original, selected or extracted).
    train, test : tuple of (X, y, qid)
        The fold's splits (only ``y`` and ``qid`` are used).
    Fva : ndarray, optional
        Validation features; with ``vali`` SVMrank is fitted too.
    vali : tuple of (X, y, qid), optional

    Returns
    -------
    dict
        ``{"RankSVM": A, "LinReg": A}`` (and ``"SVMrank": A`` with
        validation data), ``A`` of shape (queries, 11); ``"C"``: SVMrank's
        selected C.
    """
    (_, ytr, qtr), (_, yte, qte) = train, test
    svm = RankSVM(C=1.0).fit(Ftr, ytr, qtr)
    ols = LinearRegression().fit(Ftr, ytr)
    out = {"RankSVM": _per_query(svm.predict(Fte), yte, qte),
           "LinReg": _per_query(ols.predict(Fte), yte, qte)}
    if vali is not None:
        C, hinge = _svmrank(Ftr, Fva, train, vali)
        out["SVMrank"] = _per_query(hinge.predict(Fte), yte, qte)
        out["C"] = C
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
        fsm = FSMRank(**FSMRANK).fit(Xtr, ytr, qtr)
    order = np.argsort(-np.abs(fsm.coef_), kind="stable")
    _, _, Qt = np.linalg.svd(Xtr, full_matrices=False)
    return imp, sim, order, Qt


def protocol_fold(train, test, vali=None, *, ks=KS, random_state=0):
    """Every reduction of the protocol on one fold.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    train, test : tuple of (X, y, qid)
    vali : tuple of (X, y, qid), optional
        With it, SVMrank (C selected on validation MAP) is run too.
    ks : sequence of int, default KS
        Numbers of features; the ablations run at k = 10 when it is in.
    random_state : int, default 0
        LifeRank's seed (the registry's).

    Returns
    -------
    scores : dict
        ``"Original"`` and ``(name, k)`` -> :func:`fold_scores`.
    quality : dict
        name -> :func:`feature_quality` at k = 10 (and of the uniform start).
    fits : dict
        ``(name, k)`` -> (LifeRank's objective, ||T^T T - I||_F,
        iterations, converged).
    """
    (Xtr, ytr, qtr), (Xte, _, _) = train, test
    Xva = None if vali is None else vali[0]

    def scores_on(features):
        def f(X):
            return None if X is None else features(X)
        return fold_scores(f(Xtr), f(Xte), train, test, f(Xva), vali)

    imp, sim, order, Qt = _selections(Xtr, ytr, qtr)
    scores = {"Original": scores_on(lambda X: X)}
    quality = {"Original": feature_quality(Xte, test)}
    fits = {}
    life = {**LIFE, "random_state": random_state}
    for k in ks:
        cols = {"GAS": _features.gas_select(imp, sim, k, 0.01),
                "FSMRank": order[:k]}
        # X -> the new features: PCA's X T, LifeRank's transform
        extract = {"PCA": (lambda X, T=Qt[:k].T: X @ T)}
        for name, kw in {"LifeRank": {}, **(EXTRA_K10 if k == 10 else {})}.items():
            est = LifeRank(n_components=k, **{**life, **kw}).fit(Xtr, ytr, qtr)
            extract[name] = est.transform
            fits[name, k] = (est.objective_, est.orthonormality_error_,
                             est.n_iter_, est.converged_)
        for name, idx in cols.items():
            scores[name, k] = scores_on(lambda X, idx=idx: X[:, idx])
            if k == 10:
                quality[name] = feature_quality(Xte[:, idx], test)
        for name, features in extract.items():
            scores[name, k] = scores_on(features)
            if k == 10 and name != "PCA":
                quality[name] = feature_quality(features(Xte), test)
    if 10 in ks:
        T0 = LifeRank(n_components=10, init="uniform",
                      random_state=random_state)._initial_T(Xtr.shape[1], 10)
        quality["U start itself"] = feature_quality(Xte @ T0, test)
    return scores, quality, fits


def _paired_p(a, b):
    """Two-tailed paired t-test p-value; 1 for equal columns (no test)."""
    if np.allclose(a, b):
        return 1.0
    return float(stats.ttest_rel(a, b).pvalue)


def mark(a, b):
    """Paper-style mark of LifeRank (``a``) against a baseline (``b``).

    A two-tailed paired t-test over queries: "▲"/"▼" LifeRank better/worse
    at p < 0.01, "△"/"▽" at p < 0.05, else " " (also for equal columns).

    Derived in: book/06_liferank_bdmm.md#liferank
    """
    if np.allclose(a, b):
        return " "
    pv, up = _paired_p(a, b), a.mean() > b.mean()
    return ("▲" if up else "▼") if pv < 0.01 else (
        ("△" if up else "▽") if pv < 0.05 else " ")


def _one_fold(dataset, f, root):
    # worker processes do not inherit the caller's warning filters; the
    # 1000-iteration budget is the registry's, so its warning is noise
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    fold = _data.load_letor_fold(dataset, f, root=root)
    return protocol_fold(fold.train, fold.test, fold.vali)


def _mean_ci(d, level=0.95):
    """Mean of paired differences and its two-sided t-interval."""
    half = stats.t.ppf(0.5 + level / 2, len(d) - 1) * stats.sem(d)
    return [float(d.mean()), float(d.mean() - half), float(d.mean() + half)]


#: The rows of Table 2 (and PCA) at every k, then Table 5's at k = 10.
def _rows():
    rows = [(n, k) for k in KS for n in ("Original", "PCA", "GAS", "FSMRank",
                                         "LifeRank")]
    return rows + [(n, 10) for n in EXTRA_K10]


def liferank_tables(folds=(1, 2, 3, 4, 5), *, dataset="MQ2008", root=None,
                    n_jobs=1):
    """The protocol on a LETOR data set's folds, pooled over test queries.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    folds : sequence of int, default 1..5
    dataset : str, default "MQ2008"
    root : path-like, optional
        LETOR root (default ``LETOR_HOME``).
    n_jobs : int, default 1
        Folds run in parallel (joblib).

    Returns
    -------
    dict
        ``means`` ("ranker|name|k" -> 11 means over the pooled queries),
        ``marks`` (same keys -> 11 marks against LifeRank at that k),
        ``fold_means`` (same keys -> one row of 11 means per fold),
        ``se`` (same keys -> standard errors of the 11 pooled means),
        ``se_diff`` and ``pvalue`` (same keys -> standard errors of the
        mean of LifeRank minus the row over the pooled queries, and the
        two-tailed paired t-test p-values behind ``marks``, 1 where the
        columns are equal), ``n_queries`` (the pooled test queries),
        ``C`` ("name|k" -> SVMrank's selected C per fold),
        ``gain`` ("ranker|k" -> for NDCG@10 and MAP, the mean over the
        pooled test queries of LifeRank minus the original features and
        its 95 % t-interval, ``[mean, low, high]``),
        ``fits`` (name -> mean objective, violation, iterations and
        fraction converged at k = 10) and ``quality`` (name -> mean over
        folds of :func:`feature_quality`).
    """
    from joblib import Parallel, delayed
    res = Parallel(n_jobs=n_jobs)(delayed(_one_fold)(dataset, f, root)
                                  for f in folds)

    def key_of(n, k):
        return "Original" if n == "Original" else (n, k)

    means, marks, fold_means, chosen = {}, {}, {}, {}
    se, se_diff, pvalue = {}, {}, {}
    for r in RANKERS:
        for n, k in _rows():
            per_fold = [fr[0][key_of(n, k)][r] for fr in res]
            ours = np.vstack(per_fold)
            life = np.vstack([fr[0]["LifeRank", k][r] for fr in res])
            key = f"{r}|{n}|{k}"
            means[key] = ours.mean(axis=0)
            fold_means[key] = np.array([a.mean(axis=0) for a in per_fold])
            marks[key] = "".join(
                " " if n == "LifeRank" else mark(life[:, j], ours[:, j])
                for j in range(ours.shape[1]))
            # what a plot of differences with +-2 SE and a multiple-
            # comparison correction need, which the marks alone do not give
            se[key] = stats.sem(ours, axis=0)
            se_diff[key] = stats.sem(life - ours, axis=0)
            pvalue[key] = [_paired_p(life[:, j], ours[:, j])
                           for j in range(ours.shape[1])]
    gain = {}
    for r in RANKERS:
        for k in KS:
            d = (np.vstack([fr[0]["LifeRank", k][r] for fr in res])
                 - np.vstack([fr[0]["Original"][r] for fr in res]))
            gain[f"{r}|{k}"] = [_mean_ci(d[:, j]) for j in (9, 10)]
    for n, k in _rows():
        chosen[f"{n}|{k}"] = [fr[0][key_of(n, k)]["C"] for fr in res]
    fits = {n: np.mean([fr[2][n, 10] for fr in res], axis=0)
            for n in ("LifeRank", *EXTRA_K10)}
    quality = {n: np.mean([fr[1][n] for fr in res], axis=0) for n in res[0][1]}
    return {"means": means, "marks": marks, "fold_means": fold_means,
            "se": se, "se_diff": se_diff, "pvalue": pvalue,
            "n_queries": int(len(life)),
            "C": chosen, "gain": gain, "fits": fits, "quality": quality,
            "folds": list(folds), "svmrank_C_grid": list(SVMRANK_C)}


def write_protocol_csv(tables, paper_rows, path, *, dataset):
    """The protocol's pooled means beside the paper's, as CSV.

    One row per (ranker, features, k, metric): our mean, our mark (LifeRank
    against the row), the paper's value where its table of ``dataset``
    (Table 2 for MQ2008, Table 3 for OHSUMED, and Table 5) has it, and
    ours minus the paper's.

    Derived in: book/06_liferank_bdmm.md#liferank

    Parameters
    ----------
    tables : dict
        :func:`liferank_tables`'s output (or the committed snapshot).
    paper_rows : list of dict
        Rows of ``results/paper_values.csv`` (``dataset``, ``paper``,
        ``paper_method``, ``metric``, ``value``); only LifeRank's rows of
        ``dataset`` are used.
    path : path-like
    dataset : str
        The data set of ``tables`` (the paper reports several in one file).
    """
    names = {"RankSVM": "RankSVM", "Linear Regression": "LinReg"}
    paper = {}
    for r in paper_rows:
        # another data set's value of the same row would overwrite this one's
        if r["dataset"] != dataset or r["paper"] != "pandey2018liferank":
            continue
        who, _, rest = r["paper_method"].partition(" + ")
        ranker, _, k = rest.partition(" (k = ")
        if ranker in names and k:
            feat = {"FSMSVM": "FSMRank"}.get(who, who)
            for ours in (("SVMrank", "RankSVM") if ranker == "RankSVM"
                         else ("LinReg",)):
                paper[ours, feat, int(k[:-1]), r["metric"]] = float(r["value"])
        elif r["paper_method"].startswith(("RankSVM (SVMrank", "Linear Reg")):
            rk = ("SVMrank", "RankSVM") if r["paper_method"].startswith(
                "RankSVM") else ("LinReg",)
            for ours in rk:
                for k in KS:
                    paper[ours, "Original", k, r["metric"]] = float(r["value"])
    metrics = [f"NDCG@{c}" for c in CUTS] + ["MAP"]
    lines = []
    for key, vals in tables["means"].items():
        ranker, feat, k = key.split("|")
        for j, m in enumerate(metrics):
            ref = paper.get((ranker, feat, int(k), m))
            lines.append([ranker, feat, k, m, f"{vals[j]:.6f}",
                          tables["marks"][key][j].strip(),
                          "" if ref is None else f"{ref:.4f}",
                          "" if ref is None else f"{vals[j] - ref:+.6f}"])
    header = ["ranker", "features", "k", "metric", "ours", "mark",
              "paper", "ours_minus_paper"]
    def write(fh):
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(lines)

    _io.atomic_write(path, write, binary=False)


def _seed_fold(dataset, f, root, seeds, k):
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    fold = _data.load_letor_fold(dataset, f, root=root)
    (Xtr, ytr, qtr), (Xte, _, _), (Xva, _, _) = fold.train, fold.test, fold.vali
    orig = fold_scores(Xtr, Xte, fold.train, fold.test, Xva, fold.vali)
    life = []
    for seed in seeds:
        f = LifeRank(n_components=k, **{**LIFE, "random_state": seed}).fit(
            Xtr, ytr, qtr).transform
        life.append(fold_scores(f(Xtr), f(Xte), fold.train, fold.test,
                                f(Xva), fold.vali)["SVMrank"])
    return orig["SVMrank"], life


def seed_gains(seeds=tuple(range(8)), *, k=10, folds=(1, 2, 3, 4, 5),
               dataset="MQ2008", root=None):
    """LifeRank + SVMrank minus the original features, for several starts.

    The paper's start is "random"; :func:`liferank_tables` uses one seed.
    This reruns LifeRank at one ``k`` from each seed of ``seeds`` on every
    fold (SVMrank's C selected on validation each time) and pools the test
    queries.

    Derived in: book/06_liferank_bdmm.md#liferank

    Returns
    -------
    dict
        ``seeds``; ``gain`` (one row per seed: NDCG@10 and MAP of LifeRank
        minus the original features, mean over the pooled test queries);
        ``life`` (one row per seed: LifeRank's NDCG@10 and MAP) and
        ``original`` (the original features' NDCG@10 and MAP).
    """
    res = [_seed_fold(dataset, f, root, seeds, k) for f in folds]
    orig = np.vstack([r[0] for r in res])[:, [9, 10]].mean(axis=0)
    life = np.array([np.vstack([r[1][i] for r in res])[:, [9, 10]].mean(axis=0)
                     for i in range(len(seeds))])
    return {"seeds": list(seeds), "k": k, "original": orig, "life": life,
            "gain": life - orig}
