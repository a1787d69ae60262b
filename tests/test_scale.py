"""The runner's up-front scale guard (refimpl.experiments.scale)."""

import numpy as np
import pytest

from refimpl.data import LetorFold, RankingData
from refimpl.exceptions import DataError
from refimpl.experiments.scale import (
    MEMORY_FRACTION,
    ScaleError,
    available_memory,
    check_scale,
    check_task,
    estimate_peak,
)
from refimpl.losses.squared_hinge import AUTO_MAX_PAIR_BYTES, BYTES_PER_PAIR

GB = 2**30
# MSLR-WEB10K Fold1 training split, roughly: 720,000 documents, 136
# features, ~37 million preference pairs
MSLR = {"n_docs": 720_000, "n_pairs": 37_000_000, "n_features": 136,
        "max_query": 908, "data_bytes": 1_200_000 * 136 * 8}
SMALL = {"n_docs": 2_000, "n_pairs": 10_000, "n_features": 46, "max_query": 40,
         "data_bytes": 3_000 * 46 * 8}


def test_error_is_a_data_error():
    assert issubclass(ScaleError, DataError)


@pytest.mark.parametrize("name", ["ranksvm", "fenchelrank", "fsmrank",
                                  "ranksvm-l1", "ranksvm-log", "gas-e", "fsmsvm"])
def test_squared_hinge_methods_use_the_tree_at_mslr_size(name):
    est = check_scale(name, {}, available=64 * GB, **MSLR)
    assert est.backend == "tree"
    assert "pairs" not in est.terms
    # O(documents) memory beyond the data: far below the pair arrays
    assert est.peak_bytes - est.terms["data"] < MSLR["n_pairs"] * BYTES_PER_PAIR + 4 * GB


@pytest.mark.parametrize("backend", ["pairs", "numpy"])
def test_forced_explicit_pairs_at_mslr_size_are_refused(backend):
    with pytest.raises(ScaleError) as info:
        check_scale("ranksvm", {"backend": backend}, available=1024 * GB, **MSLR)
    msg = str(info.value)
    assert "'ranksvm'" in msg
    assert f"backend={backend!r}" in msg
    assert "37,000,000" in msg                      # the pairs
    assert "tree" in msg                            # the way out
    assert "GB available" in msg                    # the memory there is
    assert "est." in msg                            # the estimate


def test_forced_pairs_below_the_limit_are_accepted():
    n_pairs = AUTO_MAX_PAIR_BYTES // BYTES_PER_PAIR - 1
    est = check_scale("ranksvm", {"backend": "pairs"}, available=64 * GB,
                      **{**MSLR, "n_pairs": n_pairs})
    assert est.backend == "pairs"
    assert est.terms["pairs"] >= n_pairs * BYTES_PER_PAIR


def test_small_configuration_is_accepted_with_pairs():
    est = check_scale("ranksvm", {}, available=16 * GB, **SMALL)
    assert est.backend == "pairs"                   # below the crossover
    assert 0 < est.peak_bytes < 2 * GB
    assert est.available_bytes == 16 * GB


def test_estimate_over_available_memory_is_refused():
    # LifeRank's logistic loss keeps explicit pairs (no tree backend): 16 B each
    name = "liferank-linreg"
    backend, terms = estimate_peak(name, {"n_components": 10}, **MSLR)
    assert backend == "pairs (logistic)"
    assert terms["logistic pairs"] >= 16 * MSLR["n_pairs"]
    need = sum(terms.values())
    available = int(need / MEMORY_FRACTION) - 1
    with pytest.raises(ScaleError) as info:
        check_scale(name, {"n_components": 10}, available=available, **MSLR)
    msg = str(info.value)
    assert "'liferank-linreg'" in msg and "out of memory" in msg
    assert f"{need / GB:.2f} GB" in msg
    assert f"{available / GB:.2f} GB available" in msg
    # with enough memory the same task passes
    est = check_scale(name, {"n_components": 10}, available=available + 2, **MSLR)
    assert est.peak_bytes == need


@pytest.mark.parametrize("name", ["linreg", "lambdamart", "gas-e", "liferank-ranksvm"])
def test_every_estimate_counts_the_data(name):
    _, terms = estimate_peak(name, {}, **MSLR)
    assert terms["data"] == MSLR["data_bytes"]
    assert all(v >= 0 for v in terms.values())


def test_available_memory_is_positive():
    avail = available_memory()
    assert avail is None or avail > 0


def test_check_task_reads_the_fold():
    rng = np.random.default_rng(0)
    qid = np.repeat(np.arange(1, 21), [5] * 19 + [30])
    X = rng.random((len(qid), 7))
    y = rng.integers(0, 3, len(qid))
    part = RankingData(X, y, qid)
    fold = LetorFold(name="t", fold=1, train=part, vali=part, test=part)
    est = check_task("gas-e", {"n_features_to_select": 3}, fold, n_pairs=100,
                     available=16 * GB)
    assert est.terms["data"] == 3 * X.nbytes
    # the longest query (30 documents: 435 document pairs) sizes the sign rows
    assert est.terms["method"] >= 4 * 435 * 7 * 8


def test_runner_reports_a_refused_task(monkeypatch):
    """The runner's hook: a task over the memory limit is 'refused', with the reason."""
    from refimpl.experiments import ExperimentConfig, run, scale

    monkeypatch.setattr(scale, "available_memory", lambda: 64 * 2**20)
    result = run(ExperimentConfig(dataset="synthetic:20", methods=("linreg",),
                                  folds=(1,), backend="sequential"))
    (row,) = result.tasks
    assert row["status"] == "refused"
    assert row["error"].startswith("ScaleError: method 'linreg' refused")
    assert "0.06 GB available" in row["error"]
    assert result.n_failed == 1 and not result.selected

    monkeypatch.setattr(scale, "available_memory", lambda: 64 * 2**30)
    result = run(ExperimentConfig(dataset="synthetic:20", methods=("linreg",),
                                  folds=(1,), backend="sequential"))
    (row,) = result.tasks
    assert row["status"] == "ok"
    assert row["backend"] == "-" and row["est_peak_mb"] > 0
    assert row["load_time"] >= 0


def test_grouped_copy_is_counted_when_queries_are_not_adjacent():
    """The one-pass tree backend copies a training matrix whose queries are
    not adjacent rows (from ONE_PASS_MIN_BYTES to ONE_PASS_COPY_MAX_BYTES):
    the estimate counts that copy, and check_task finds out which case it is."""
    from refimpl.losses.squared_hinge import ONE_PASS_MIN_BYTES, memory_terms

    mid = {"n_docs": 100_000, "n_pairs": 10_000_000, "n_features": 136,
           "max_query": 200, "data_bytes": 3 * 100_000 * 136 * 8, "n_levels": 3}
    X = 100_000 * 136 * 8
    assert X >= ONE_PASS_MIN_BYTES
    _, grouped = estimate_peak("ranksvm", {}, **mid)
    _, scattered = estimate_peak("ranksvm", {}, grouped=False, **mid)
    assert "grouped copy" not in grouped
    assert scattered["grouped copy"] == X
    _, forced = memory_terms(grouped=False, one_pass=False, **{
        k: mid[k] for k in ("n_docs", "n_pairs", "n_features")})
    assert "grouped copy" not in forced
    _, small = estimate_peak("ranksvm", {}, grouped=False, **SMALL)
    assert "grouped copy" not in small          # below ONE_PASS_MIN_BYTES

    rng = np.random.default_rng(1)
    n = ONE_PASS_MIN_BYTES // (8 * 8) + 1000
    X = rng.random((n, 8))
    y = rng.integers(0, 3, n)
    adjacent = np.repeat(np.arange(n // 50 + 1), 50)[:n]
    for qid, copied in ((adjacent, False), (rng.permutation(adjacent), True)):
        part = RankingData(X, y, qid)
        fold = LetorFold(name="t", fold=1, train=part, vali=part, test=part)
        est = check_task("ranksvm", {"backend": "tree"}, fold, n_pairs=10 * n,
                         available=None)
        assert ("grouped copy" in est.terms) == copied


# -- the guard asks the estimator (issue 26) ----------------------------------


@pytest.mark.parametrize("line_search, extra", [("newton", 0), ("blocks", 32),
                                                ("pairs", 32), ("auto", 32)])
def test_fenchelrank_line_search_sets_the_bytes_per_pair(line_search, extra):
    """Regression: the guard read ``params["linesearch"]`` (an old name), a
    key the runner rejects, so it always saw "auto".  The exact step over
    explicit pairs keeps 32 bytes a pair at its peak (``pair_residuals``'
    two arrays and ``linesearch_pairs``' two; the label blocks fall back to
    them), the Newton line search none."""
    _, terms = estimate_peak("fenchelrank", {"backend": "pairs",
                                             "line_search": line_search}, **SMALL)
    n_pairs, n_docs = SMALL["n_pairs"], SMALL["n_docs"]
    assert terms["pairs"] == n_pairs * BYTES_PER_PAIR + n_docs * 8 * 8
    assert terms["line search"] == n_pairs * extra


def test_the_guard_reads_the_estimators_memory_model(monkeypatch):
    """No list of names: what the estimator's ``estimate_memory`` says is
    what the guard adds up; whether the fit is on the squared hinge is the
    model's ``hinge_backend`` (LifeRank's RankSVM stage is)."""
    from refimpl.estimators import LifeRankPipeline, MemoryEstimate, RankSVM

    def model(self, **shape):
        return MemoryEstimate(backend="numpy", terms={"probe": 12345})

    monkeypatch.setattr(RankSVM, "estimate_memory", model)
    backend, terms = estimate_peak("ranksvm", {}, **SMALL)
    assert backend == "numpy" and terms["probe"] == 12345
    monkeypatch.undo()
    assert LifeRankPipeline(ranker="ranksvm").estimate_memory(
        n_docs=10, n_pairs=20, n_features=3, max_query=5).hinge_backend == "pairs"


def test_fenchelrank_memory_follows_its_own_auto_backend():
    """FenchelRank resolves backend="auto" by its own rule (the tree from
    AUTO_TREE_MIN_PAIRS pairs on); its memory model resolves it the same way."""
    from refimpl.solvers.fenchelrank import AUTO_TREE_MIN_PAIRS, auto_backend

    shape = {"n_docs": 200_000, "n_pairs": AUTO_TREE_MIN_PAIRS, "n_features": 46,
             "max_query": 500, "data_bytes": 200_000 * 46 * 8}
    backend, terms = estimate_peak("fenchelrank", {}, **shape)
    assert backend == auto_backend(shape["n_pairs"], shape["n_docs"]) == "tree"
    assert "pairs" not in terms


@pytest.mark.parametrize("name", ["SparseRankSVM", "FSMRank"])
def test_first_order_memory_model_resolves_auto_as_the_fit(name):
    """Regression: the first-order estimators build their loss with
    ``hess_per_grad=0``, but their memory model resolved ``"auto"`` with
    TRON's Hessian products, so at mid sizes the guard's backend was not the
    fit's.  Here (2,040 documents, 5 features, 3 levels, 20 pairs per
    document) TRON's cost model takes the tree and a first-order solver's
    explicit pairs."""
    import warnings

    from refimpl import estimators
    from refimpl.losses.squared_hinge import choose_backend
    from refimpl.pairs import pair_counts

    rng = np.random.default_rng(0)
    n_q, m = 34, 60
    X = rng.random((n_q * m, 5))
    y = np.tile(np.repeat([0, 1, 2], m // 3), n_q)
    qid = np.repeat(np.arange(n_q), m)
    n_pairs = int(pair_counts(y, qid).sum())
    shape = {"n_docs": len(y), "n_pairs": n_pairs, "n_features": 5}
    assert choose_backend(n_pairs, len(y), n_features=5) == "tree"
    assert choose_backend(n_pairs, len(y), n_features=5, hess_per_grad=0) == "pairs"
    est = getattr(estimators, name)(max_iter=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y, qid)
    model = est.estimate_memory(max_query=m, n_levels=3, **shape)
    assert model.hinge_backend == est.backend_ == "pairs"


def test_unknown_levels_count_the_larger_backend():
    """Without the labels' levels the model cannot resolve ``"auto"`` as the
    fit will; it counts explicit pairs wherever ``"auto"`` may build them (the
    larger in memory), and the tree where the pairs are over the cap."""
    from refimpl.estimators import RankSVM
    from refimpl.losses.squared_hinge import AUTO_MAX_PAIR_BYTES, BYTES_PER_PAIR

    mid = {"n_docs": 100_000, "n_pairs": 10_000_000, "n_features": 136,
           "max_query": 200}
    assert RankSVM().estimate_memory(n_levels=3, **mid).hinge_backend == "tree"
    assert RankSVM().estimate_memory(**mid).hinge_backend == "pairs"
    over = {**mid, "n_pairs": AUTO_MAX_PAIR_BYTES // BYTES_PER_PAIR + 1}
    assert RankSVM().estimate_memory(**over).hinge_backend == "tree"


def test_fsmrank_memory_counts_the_column_scaled_copy():
    """FSMRank copies ``X`` scaled by columns on raw features
    (``_column_scales``); the shape cannot tell, so the model counts it."""
    from refimpl.estimators import FSMSVM, FSMRank

    shape = {"n_docs": 10_000, "n_pairs": 10**8, "n_features": 136, "max_query": 120}
    terms = FSMRank().estimate_memory(**shape).terms
    assert terms["column-scaled copy"] == 10_000 * 136 * 8
    assert FSMSVM().estimate_memory(**shape).terms == terms


def test_a_memory_model_names_a_real_backend():
    """``MemoryEstimate.backend`` is a :class:`LossBackend`: its string is
    recorded unchanged, and a backend that does not exist is refused where
    the model is built, not written into a results table."""
    from refimpl.estimators import LossBackend, MemoryEstimate
    from refimpl.exceptions import DataError

    est = MemoryEstimate(backend="pairs (logistic) + tree", hinge_backend="tree")
    assert est.backend is LossBackend.LOGISTIC_TREE and est.hinge_backend is LossBackend.TREE
    assert f"{est.backend}" == "pairs (logistic) + tree" and MemoryEstimate().backend == "-"
    with pytest.raises(DataError, match="backend must be one of '-', 'tree'.*; got 'x'"):
        MemoryEstimate(backend="x")
    with pytest.raises(DataError, match="hinge_backend must be one of 'tree', 'pairs', "
                                        "'numpy'; got 'pairs \\(logistic\\)'"):
        MemoryEstimate(hinge_backend="pairs (logistic)")
