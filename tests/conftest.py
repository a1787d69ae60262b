"""Shared fixtures."""

from pathlib import Path

import pytest

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
