"""The example's methods, registered, reach what reads the registry: the
runner, its up-front parameter check, the scale guard and the command line."""

import pytest

from refimpl.__main__ import main
from refimpl.estimators import all_estimators
from refimpl.experiments import METHODS, ExperimentConfig, run, validate_config
from refimpl.experiments.scale import check_scale

NAMES = ("toy-logistic-fista", "toy-ridge-tron")


def test_the_package_lists_the_estimators():
    names = {name for name, _ in all_estimators()}
    assert {"PairwiseLogisticL2", "PairwiseRidgeTron"} <= names


@pytest.mark.parametrize("name", NAMES)
def test_the_runner_selects_and_reports_it(name):
    result = run(ExperimentConfig(dataset="synthetic:20", methods=(name,), folds=(1,),
                                  backend="sequential"))
    (row,) = result.selected
    assert row["method"] == name and row["status"] == "ok"
    assert "C" in row["params"]


@pytest.mark.parametrize("name", NAMES)
def test_a_bad_value_is_refused_before_any_fit(name):
    # the accepted range's wording is the constraint's own (scikit-learn's)
    with pytest.raises(Exception, match="'C': -1.0 is not accepted; accepted: "):
        validate_config(ExperimentConfig(dataset="synthetic:20", methods=(name,),
                                         grids={name: {"C": [-1.0]}}))


@pytest.mark.parametrize("name", NAMES)
def test_the_scale_guard_asks_its_memory_model(name):
    shape = {"n_docs": 1000, "n_pairs": 20_000, "n_features": 10, "max_query": 40}
    guard = check_scale(name, {}, **shape, data_bytes=3 * 1000 * 10 * 8)
    model = METHODS[name].build({}).estimate_memory(**shape)
    assert guard.backend == model.backend
    assert all(guard.terms[k] == v for k, v in model.terms.items())


@pytest.mark.parametrize("name", NAMES)
def test_the_command_line_sees_it(name, capsys, tmp_path):
    assert main(["methods"]) == 0
    assert name in capsys.readouterr().out
    argv = ["run", "--dataset", "synthetic:20", "--methods", name, "--folds", "1",
            "--grid", f"{name}:C=-1", "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 2
    assert "'C': -1 is not accepted; accepted: " in capsys.readouterr().err
