"""Shared fixtures and the hypothesis profiles."""

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw their examples from a seed fixed per test ("ci", the
# default), so every run of `make test`, here or in CI, checks the same
# cases and a failure reproduces on the next run.  HYPOTHESIS_PROFILE=explore
# draws fresh examples each run (and 5x as many where a test does not set
# its own count): the way to hunt for new counter-examples, which then
# become explicit regression tests.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True,
                          max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# The real LETOR data lives next to the repository (/work/shared/letor), never
# inside it; see that folder's README.md.
LETOR_ROOT = Path(__file__).resolve().parents[2] / "shared" / "letor"


@pytest.fixture(scope="session")
def letor_root() -> Path:
    """Directory holding real LETOR data sets (``<root>/MQ2008/S1.txt.gz``...).

    Tests using it are skipped when the folder is absent.
    """
    if not LETOR_ROOT.is_dir():
        pytest.skip(f"real LETOR data not available at {LETOR_ROOT}")
    return LETOR_ROOT


def pytest_addoption(parser):
    # tests/test_book_layout.py's output checks read the executed chapters;
    # `make test` passes the build's notebooks after building the book.
    parser.addoption("--executed", default=None, metavar="DIR",
                     help="directory of executed chapter notebooks "
                          "(e.g. _build/jupyter_execute) for the layout "
                          "checks of printed outputs and figures")
    # CONTRIBUTING.md's worked example (tests/contributing): its two toy
    # methods join the package for this session, and the generic tests run
    # on them unchanged (tests/test_contributing.py starts such a session)
    parser.addoption("--example-methods", action="store_true", default=False,
                     help="add CONTRIBUTING.md's two example methods to "
                          "refimpl.estimators and the registry for this session")


def pytest_configure(config):
    if config.getoption("--example-methods"):
        from contributing import install

        install()
