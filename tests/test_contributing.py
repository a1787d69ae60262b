"""CONTRIBUTING.md's worked example runs, and a method added that way is
seen by the runner, the scale guard, the command line and scikit-learn's
estimator checks (issue 26: a method is one declaration)."""

import re
import sys
import types
import warnings
from pathlib import Path

import pytest
from sklearn.utils.estimator_checks import check_estimator

from refimpl.__main__ import main
from refimpl.experiments import METHODS, ExperimentConfig, run, validate_config
from refimpl.experiments.scale import estimate_peak

PAGE = Path(__file__).resolve().parents[1] / "CONTRIBUTING.md"
NAME = "pairwise-ridge"


def python_blocks(text):
    """The page's ```python blocks, in order."""
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


@pytest.fixture(scope="module")
def page():
    """Run every python block of the page in one module; unregister after.

    A module in ``sys.modules`` (not a bare dict), so that its classes pickle
    as scikit-learn's checks and the runner's workers need."""
    module = types.ModuleType("contributing_example")
    sys.modules[module.__name__] = module
    try:
        for i, block in enumerate(python_blocks(PAGE.read_text())):
            exec(compile(block, f"{PAGE.name}[python block {i + 1}]", "exec"),
                 module.__dict__)
        yield module.__dict__
    finally:
        METHODS.pop(NAME, None)
        sys.modules.pop(module.__name__, None)


def test_the_page_has_the_five_steps_and_runnable_blocks():
    text = PAGE.read_text()
    for heading in ("## 1. The solver", "## 2. The estimator", "## 3. One `register` call",
                    "## 4. Tests", "## 5. The book"):
        assert heading in text
    assert len(python_blocks(text)) >= 5


def test_the_example_registers_a_method(page):
    assert METHODS[NAME].factory is page["PairwiseRidge"]


def test_the_runner_sees_it(page):
    result = run(ExperimentConfig(dataset="synthetic:20", methods=(NAME,), folds=(1,),
                                  backend="sequential"))
    (row,) = result.selected
    assert row["method"] == NAME and row["status"] == "ok"


def test_its_ranges_come_from_the_estimator(page):
    method = METHODS[NAME]
    assert set(method.constraints) == {"alpha"}
    assert method.refused("alpha", 0.5) is None and method.refused("alpha", -1.0)
    with pytest.raises(Exception, match=r"'alpha': -1.0 is not accepted; accepted: a "
                                        r"float in the range \(0(\.0)?, inf\)"):
        validate_config(ExperimentConfig(dataset="synthetic:20", methods=(NAME,),
                                         grids={NAME: {"alpha": [-1.0]}}))


def test_the_scale_guard_asks_its_memory_model(page):
    shape = {"n_docs": 1000, "n_pairs": 20_000, "n_features": 10, "max_query": 40,
             "data_bytes": 3 * 1000 * 10 * 8}
    backend, terms = estimate_peak(NAME, {}, **shape)
    assert backend == "-"
    assert terms["pair matrix"] == 2 * 20_000 * 10 * 8 + 16 * 20_000


def test_the_command_line_sees_it(page, capsys, tmp_path):
    assert main(["methods"]) == 0
    assert NAME in capsys.readouterr().out
    argv = ["run", "--dataset", "synthetic:20", "--methods", NAME, "--folds", "1",
            "--grid", f"{NAME}:alpha=-1", "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 2
    assert "a float in the range (0.0, inf)" in capsys.readouterr().err
    argv = ["run", "--dataset", "synthetic:20", "--methods", NAME, "--folds", "1",
            "--grid", f"{NAME}:gamma=1", "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 2
    assert "no parameter 'gamma'; accepted: alpha" in capsys.readouterr().err


def test_scikit_learns_checks_pass(page):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(page["PairwiseRidge"]())
