"""The private APIs of refimpl's dependencies, fenced in refimpl/_compat/.

Each test fails with a message naming the module to update when an
upstream release changes what refimpl relies on, and the installed
versions are checked against the ranges pinned in pyproject.toml.
"""

import ast
import re
import tomllib
from numbers import Integral, Real
from pathlib import Path

import pytest
from packaging.version import Version

from refimpl._compat import loky, numba_llvm, sklearn_params

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "refimpl"


def _in(version, tested):
    lo, hi = tested
    return Version(lo) <= Version(version) < Version(hi)


@pytest.mark.parametrize("module, dist", [(sklearn_params, "scikit-learn"),
                                           (numba_llvm, "numba"), (loky, "joblib")])
def test_installed_version_is_in_the_tested_range(module, dist):
    import importlib.metadata as md

    version = md.version(dist)
    assert _in(version, module.TESTED), (
        f"{dist} {version} is outside the range refimpl/_compat/"
        f"{module.__name__.rsplit('.', 1)[1]}.py was tested with "
        f"({module.TESTED[0]} <= v < {module.TESTED[1]}): check the private API "
        "it fences, then widen TESTED and pyproject.toml's pin")


@pytest.mark.parametrize("module, dist", [(sklearn_params, "scikit-learn"),
                                           (numba_llvm, "numba"), (loky, "joblib")])
def test_pyproject_pins_the_tested_range(module, dist):
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [d for d in deps if re.match(rf"{re.escape(dist)}\b", d)]
    assert f">={module.TESTED[0]}" in spec and f"<{module.TESTED[1]}" in spec, spec


def test_requirements_pins_fit_pyproject_ranges():
    from packaging.requirements import Requirement

    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    for dep in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        req = Requirement(dep)
        if req.name.lower() in pins:
            assert req.specifier.contains(pins[req.name.lower()]), (
                f"requirements.txt pins {req.name}=={pins[req.name.lower()]}, "
                f"outside pyproject.toml's {dep!r}")


def test_sklearn_parameter_validation_behaves_as_relied_on():
    """What refimpl's estimators and registry read of scikit-learn's private
    ``_param_validation`` (refimpl/_compat/sklearn_params.py)."""
    where = "scikit-learn's _param_validation changed: update refimpl/_compat/sklearn_params.py"
    interval = sklearn_params.Interval(Real, 0, None, closed="neither")
    assert (interval.type, interval.left, interval.right, interval.closed) == (
        Real, 0, None, "neither"), where
    assert interval.is_satisfied_by(1.0) and not interval.is_satisfied_by(0.0), where
    count = sklearn_params.Interval(Integral, 1, None, closed="left")
    assert count.type is Integral, where
    options = sklearn_params.StrOptions({"a", "b"})
    assert isinstance(options, sklearn_params.Options) and options.options == {"a", "b"}, where
    assert sklearn_params.make_constraint("boolean").is_satisfied_by(True), where
    with pytest.raises(sklearn_params.InvalidParameterError,
                       match=r"^The 'C' parameter of X must be a float in the range "
                             r"\(0\.0, inf\)\. Got -1 instead\.$"):
        sklearn_params.validate_parameter_constraints(
            {"C": [interval]}, {"C": -1}, caller_name="X")


def test_numba_codegen_api_is_there():
    where = "numba's codegen API changed: update refimpl/_compat/numba_llvm.py"
    # what refimpl/kernels/_simd.py, _ddlanes.py and _blocklanes.py call
    for name in ("alloca_once", "alloca_once_value", "for_range", "for_range_slice",
                 "get_item_pointer", "get_or_insert_function", "unpack_tuple"):
        assert callable(getattr(numba_llvm.cgutils, name, None)), f"{where} (cgutils.{name})"
    for name in ("Constant", "DoubleType", "FunctionType", "IntType", "Undefined",
                 "VectorType", "VoidType"):
        assert hasattr(numba_llvm.ir, name), f"{where} (llvmlite.ir.{name})"
    assert callable(numba_llvm.intrinsic) and callable(numba_llvm.overload), where


def test_loky_executor_attribute_is_there():
    from joblib.externals.loky import reusable_executor

    assert hasattr(reusable_executor, "_executor"), (
        "joblib's loky no longer keeps reusable_executor._executor: update "
        "refimpl/_compat/loky.py")
    assert loky.end_reusable_executor() in (True, False)


def test_private_apis_are_imported_only_in_compat():
    """No module outside refimpl/_compat/ imports a dependency's private module."""
    private = re.compile(r"(^|\.)_[a-z]|^numba\.core(\.|$)|^joblib\.externals")
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "_compat" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if not name.startswith(("refimpl",)) and private.search(name):
                    offenders.append(f"{path.relative_to(ROOT)}: {name}")
    assert not offenders, offenders
