"""``python -m refimpl warm`` writes compiled kernels to numba's cache."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from refimpl.__main__ import main
from refimpl.warm import WARM_FITS

ROOT = Path(__file__).resolve().parents[1]


def test_warm_writes_the_kernels_of_its_fits_to_an_empty_cache(tmp_path):
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join(
                   [str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    # FSMRank: the fewest kernels of WARM_FITS (the pairs and the loss)
    run = subprocess.run([sys.executable, "-m", "refimpl", "warm",
                          "--estimators", "FSMRank"],
                         env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0].startswith("FSMRank ")
    # numba names them <module>.<function>-<line>.py311.nbi
    index = {p.name.split(".")[1].rsplit("-", 1)[0] for p in cache.rglob("*.nbi")}
    data = list(cache.rglob("*.nbc"))
    # the kernels every pairwise fit needs, and the squared hinge's value
    assert {"distinct_labels", "count_pairs_per_query", "fill_pairs",
            "value_dz"} <= index
    assert data and all(p.stat().st_size > 0 for p in data)


def test_warm_rejects_an_unknown_estimator_before_any_fit(capsys):
    assert main(["warm", "--estimators", "RankSVM,NoSuchRanker"]) == 2
    err = capsys.readouterr().err
    assert "NoSuchRanker" in err
    for name in WARM_FITS:
        assert name in err


@pytest.mark.parametrize("name", sorted(WARM_FITS))
def test_warm_fits_name_estimators_and_backends_they_take(name):
    from refimpl import estimators

    params = getattr(estimators, name)().get_params()
    if WARM_FITS[name]:
        assert "backend" in params


def test_binder_postbuild_runs_the_warm_up_into_the_image():
    post = ROOT / "postBuild"
    assert os.access(post, os.X_OK)
    lines = [ln for ln in post.read_text().splitlines()
             if ln and not ln.startswith("#")]
    # numba's default cache (refimpl/kernels/__pycache__, inside the image):
    # a NUMBA_CACHE_DIR here would put it where a session may not look
    assert not any("NUMBA_CACHE_DIR" in ln for ln in lines)
    assert lines[-1].endswith("python -m refimpl warm")
    # repo2docker reads only binder/ when it exists
    assert not (ROOT / "binder").exists() and not (ROOT / ".binder").exists()
