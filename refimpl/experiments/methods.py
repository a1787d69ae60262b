"""The methods of the five papers (and two references beyond them), registered.

One :func:`~refimpl.experiments.registry.register` call per method: its
estimator, the paper's grid and selection metric, the settings that differ
from the estimator's defaults, and its family and colour in chapter 8's
plots.  Importing :mod:`refimpl.experiments` registers them.

Where a paper does not state a grid (FSMRank, RankSVM-l1, the non-convex
penalties, LambdaMART) the entry's ``grid_source`` says so and what was
chosen instead.

Derived in: book/10_running_experiments.md#run-registry
"""

from __future__ import annotations

from ..estimators import (
    FSMSVM,
    FenchelRank,
    FSMRank,
    GASRanker,
    HingeRankSVM,
    LambdaMART,
    LifeRankPipeline,
    LinearRegressionRanker,
    RankSVM,
    SparseRankSVM,
)
from .registry import Method, register

__all__: list = []

#: The Okabe-Ito palette (distinct under the common colour-vision
#: deficiencies): each family's methods take its colours in order.
_OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
_RANKSVMS = "RankSVM and its sparse variants"
_LAI = "Lai et al."
_LIFERANK = "LifeRank and references"


def _lambdamart_support(fitted):
    return fitted.feature_importances_ > 0


_POW2 = [2.0 ** e for e in range(-15, 11)]
#: C grid of the sparse RankSVMs: Laporte et al. tune C "on a grid" without
#: listing it; six decades around the values where RankSVM-l1 goes from one
#: feature to all of them on MQ2008.
_SPARSE_C = [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0]
_SELECT_T = [5, 10, 15, 20, 25, 30, 35, 40]
register(Method(
    name="ranksvm", factory=RankSVM,
    grid={"C": _POW2}, reduced_grid={"C": [2.0 ** -5, 1.0]},
    selection_metric="MeanNDCG", linear=True, paper="lee2014largescale",
    grid_source="Lee & Lin (2014), Section 4.4: C in {2^-15, ..., 2^10}, "
                "selected by validation mean NDCG (LETOR 4.0); eps = 1e-4",
    # eps = 1e-4, not LIBLINEAR's 1e-3: at 1e-3 near-tied C are selected
    # differently by different BLAS kernels (book/07_ranksvm_ostree.md,
    # "Real data")
    fixed={"tol": 1e-4},
    description="L2-loss linear RankSVM, TRON with order-statistic trees",
    family=_RANKSVMS, color=_OKABE_ITO[0],
))
#: SVMrank's C (per query, svm_rank_learn -c): decades around its default
#: 0.01; the LifeRank paper names SVMrank without its C or selection rule.
_SVMRANK_C = [1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0]
register(Method(
    name="ranksvm-hinge", factory=HingeRankSVM,
    grid={"C": _SVMRANK_C}, reduced_grid={"C": [1e-2, 1.0]},
    selection_metric="MAP", linear=True, paper="joachims2006training",
    grid_source="SVMrank (Joachims 2006, svm_rank): L1 hinge, C / n_queries; "
                "Pandey et al. (2018) give neither C nor the selection rule: "
                "ours C in 1e-3..1e2, selected by validation MAP",
    description="L1-hinge linear RankSVM (SVMrank's problem), 1-slack "
                "cutting planes",
    family=_RANKSVMS, color=_OKABE_ITO[1],
))
register(Method(
    name="fenchelrank", factory=FenchelRank,
    grid={"r": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]},
    reduced_grid={"r": [1.0, 2.0]},
    selection_metric="NDCG@10", linear=True, paper="lai2013fenchelrank",
    grid_source="Lai et al. (2013a), Section 8.3: r in {1, 2, ..., 256}, "
                "T = 1000, epsilon = 0.001, selected by validation NDCG@10",
    # Algorithm 1 (variant "paper"), not the faster certified variants,
    # which reach the gap where the paper's capped runs do not and can
    # select another r (book/03_fenchelrank_duality.md, real data); the
    # paper's T and epsilon (Section 8.3), pinned although they are
    # FenchelRank's defaults: its tables stop there
    fixed={"tol": 1e-3, "max_iter": 1000},
    description="l1-ball constrained squared hinge, primal-dual (FenchelRank)",
    family=_LAI, color=_OKABE_ITO[0],
))
register(Method(
    name="fsmrank", factory=FSMRank,
    grid={"lambda1": [0.01, 0.1, 1.0], "lambda2": [1e-4, 1e-3, 1e-2]},
    reduced_grid={"lambda1": [0.1], "lambda2": [1e-3]},
    selection_metric="NDCG@10", linear=True, paper="lai2013fsmrank",
    grid_source="Lai et al. (2013b), Section IV-C: lambda1, lambda2 'chosen "
                "by cross-validation' (grid not given; ours: 3 x 3 decades), "
                "T = 400; metric not given, NDCG@10 as in FenchelRank (which "
                "Laporte et al. confirm for both)",
    # the paper's T = 400 and stop s = 1e-4 (Section III-C, IV-C)
    fixed={"tol": 1e-4, "max_iter": 400},
    description="similarity + importance-weighted l1 (FSMRank), FISTA",
    family=_LAI, color=_OKABE_ITO[1],
))
register(Method(
    name="gas-e", factory=GASRanker,
    grid={"n_features_to_select": _SELECT_T},
    reduced_grid={"n_features_to_select": [10]},
    selection_metric="MAP", linear=True, paper="lai2013fsmrank",
    grid_source="Lai et al. (2013b), Section IV-D1 and Remark 1: t chosen "
                "by validation MAP (values of t: ours, 5..40 by 5)",
    description="GAS feature selection, then RankSVM (GAS-E)",
    family=_LAI, color=_OKABE_ITO[2],
))
register(Method(
    name="fsmsvm", factory=FSMSVM,
    grid={"n_features_to_select": _SELECT_T},
    reduced_grid={"n_features_to_select": [10]},
    selection_metric="MAP", linear=True, paper="lai2013fsmrank",
    grid_source="Lai et al. (2013b), Section IV-D1: top-t FSMRank features, "
                "then RankSVM; t by validation MAP; FSMRank stage fixed at "
                "lambda1 = 0.1, lambda2 = 1e-3",
    fixed={"lambda1": 0.1},
    description="top-t FSMRank features, then RankSVM (FSMSVM)",
    family=_LAI, color=_OKABE_ITO[3],
))
# The sparse RankSVMs run SparseRankSVM's proximal Newton, whose stop
# certifies FISTA's gradient-mapping test at the same tol, instead of the
# paper's FISTA: converged fits for less CPU (benchmarks/bench_sparse.py).
register(Method(
    name="ranksvm-l1", factory=SparseRankSVM,
    grid={"C": _SPARSE_C}, reduced_grid={"C": [1e-4, 1e-3]},
    selection_metric="MAP", linear=True, paper="laporte2014nonconvex",
    grid_source="Laporte et al. (2014), Section V-C: C on a grid (not "
                "given; ours 1e-4..10), selected by validation MAP",
    # the penalty names the method, pinned although it is the default
    fixed={"penalty": "l1", "tol": 1e-5, "max_iter": 5000},
    description="l1-regularised L2-loss RankSVM, proximal Newton (RankSVM-l1; "
                "FISTA's stopping test certified)",
    family=_RANKSVMS, color=_OKABE_ITO[2],
))
# gamma = 2 and p = 0.5 are the paper's values (Section V-C), pinned
# although they are SparseRankSVM's defaults
for _i, (_pen, _kw, _what) in enumerate((
        ("log", {"eps": 0.1}, "log penalty, epsilon = 0.1"),
        ("mcp", {"gamma": 2.0}, "MCP, gamma = 2"),
        ("lp", {"p": 0.5}, "l_p penalty, p = 0.5")), start=3):
    register(Method(
        name=f"ranksvm-{_pen}", factory=SparseRankSVM,
        grid={"C": _SPARSE_C}, reduced_grid={"C": [1e-3]},
        selection_metric="MAP", linear=True, paper="laporte2014nonconvex",
        grid_source=f"Laporte et al. (2014), Section V-C: {_what} (the paper's "
                    "values), C on a grid (ours 1e-4..10), selected by "
                    "validation MAP; reweighted l1 (Algorithm 2)",
        fixed={"penalty": _pen, **_kw, "tol": 1e-5, "max_iter": 5000},
        description=f"RankSVM with the non-convex {_what} (reweighted l1)",
        family=_RANKSVMS, color=_OKABE_ITO[_i],
    ))
# the ranker names the method, pinned although "ranksvm" is the default
for _second, _label, _i in (("ranksvm", "RankSVM", 0),
                            ("linreg", "linear regression", 2)):
    register(Method(
        name=f"liferank-{_second}", factory=LifeRankPipeline,
        grid={"n_components": [5, 10, 15, 20]},
        reduced_grid={"n_components": [5]},
        selection_metric="MAP", linear=True, paper="pandey2018liferank",
        grid_source="Pandey et al. (2018), Section 6.1: k in {5, 10, 15, "
                    f"20}} generated features, then {_label}; the paper "
                    "reports every k (no selection): we select k by "
                    "validation MAP and also compare at k = 10",
        fixed={"ranker": _second},
        description=f"LifeRank feature extraction, then {_label}",
        family=_LIFERANK, color=_OKABE_ITO[_i],
    ))
register(Method(
    name="liferank-ranksvm-hinge", factory=LifeRankPipeline,
    grid={"n_components": [5, 10, 15, 20], "C": _SVMRANK_C},
    reduced_grid={"n_components": [5], "C": [1e-2]},
    selection_metric="MAP", linear=True, paper="pandey2018liferank",
    grid_source="Pandey et al. (2018), Sections 5.3 and 6.1: k in {5, 10, "
                "15, 20} generated features, then SVMrank (the L1-hinge "
                "RankSVM, C per query); the paper gives no C: C as "
                "ranksvm-hinge's grid, k and C selected by validation MAP",
    fixed={"ranker": "ranksvm-hinge"},
    description="LifeRank feature extraction, then SVMrank's L1-hinge "
                "RankSVM (the paper's ranker)",
    family=_LIFERANK, color=_OKABE_ITO[1],
))
register(Method(
    name="linreg", factory=LinearRegressionRanker, grid={}, reduced_grid={},
    selection_metric="MAP", linear=True, paper="pandey2018liferank",
    grid_source="Pandey et al. (2018), Section 5.3: pointwise linear "
                "regression baseline (no hyper-parameter)",
    description="ordinary least squares on the labels (pointwise)",
    family=_LIFERANK, color=_OKABE_ITO[3],
))
register(Method(
    name="lambdamart", factory=LambdaMART,
    grid={"n_estimators": [100, 300], "num_leaves": [7, 31],
          "learning_rate": [0.05, 0.1]},
    reduced_grid={"n_estimators": [50], "num_leaves": [7],
                  "learning_rate": [0.1]},
    selection_metric="NDCG@10", linear=False, paper="burges2010ranknet",
    grid_source="beyond the papers: LightGBM LGBMRanker (lambdarank); small "
                "grid of ours, selected by validation NDCG@10",
    support=_lambdamart_support,
    description="LightGBM LambdaMART (non-linear reference)",
    family=_LIFERANK, color=_OKABE_ITO[4],
))
