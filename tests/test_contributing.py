"""CONTRIBUTING.md's worked example is a real registration the suite runs.

The page shows two toy methods, one first-order (pairwise logistic + l2,
FISTA) and one second-order (pairwise squared loss + l2, TRON).  Their code
is not copied into this test: it lives in ``tests/contributing/`` as the
four files the page says a method takes, and the page's blocks must be
excerpts of those files.  ``pytest --example-methods`` adds them to
``refimpl.estimators`` and the registry; a child session here runs the
generic tests (scikit-learn's checks, the edge cases, validate-once, the
doctests, the docstrings' chapter links, the API page) and the runner, the
scale guard and the command line on them, unchanged.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

from contributing import FILES

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "CONTRIBUTING.md"
CLASSES = {"toy-logistic-fista": "PairwiseLogisticL2", "toy-ridge-tron": "PairwiseRidgeTron"}
#: The generic test files the child session runs; each must test each toy.
GENERIC = ["tests/test_sklearn_api.py", "tests/test_estimator_edges.py",
           "tests/test_validate_once.py", "tests/test_doctests.py",
           "tests/test_docs.py", "tests/test_memory_peak.py"]


def python_blocks(text):
    """The page's ```python blocks, in order."""
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def test_every_block_of_the_page_is_in_the_example_files():
    blocks = python_blocks(PAGE.read_text())
    assert len(blocks) >= 4
    sources = "\n".join((ROOT / f).read_text() for files in FILES.values() for f in files
                        if f.endswith(".py"))
    for block in blocks:
        assert block in sources, f"a block of CONTRIBUTING.md is not in the example:\n{block}"


def test_each_method_is_four_files():
    """The toys' names occur in their four files only (and on the page)."""
    for method, files in FILES.items():
        assert len(files) <= 4
        cls = CLASSES[method]
        where = set()
        for path in [*ROOT.glob("refimpl/**/*.py"), *ROOT.glob("tests/**/*.py"),
                     *ROOT.glob("book/*.md")]:
            text = path.read_text()
            if method in text or re.search(rf"\b{cls}\b", text):
                where.add(str(path.relative_to(ROOT)))
        plumbing = {"tests/test_contributing.py", "tests/contributing/__init__.py",
                    "tests/contributing/test_registration.py",
                    # the other toy's files name this one in See Also
                    *[f for m, fs in FILES.items() if m != method for f in fs]}
        assert where - plumbing <= set(files), sorted(where - plumbing - set(files))


def test_generic_tests_and_the_runner_pick_the_example_up(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "NUMBA_NUM_THREADS": "1"}
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "--example-methods", "-k",
            "PairwiseLogisticL2 or PairwiseRidgeTron or toy or contributing",
            "-rA", *GENERIC, "tests/contributing"]
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    passed = [ln for ln in proc.stdout.splitlines() if ln.startswith("PASSED ")]
    for method, cls in CLASSES.items():   # ids name the class or the method
        for path in GENERIC:
            assert any(ln.startswith(f"PASSED {path}::") and (cls in ln or method in ln)
                       for ln in passed), f"{path} did not test {method}"
    for name in ("test_pairwise_logistic_l2.py", "test_pairwise_ridge_tron.py",
                 "test_registration.py"):
        assert any(f"tests/contributing/{name}::" in ln for ln in passed), name
