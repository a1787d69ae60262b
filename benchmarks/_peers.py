"""The LIBLINEAR ranksvm peer (Lee & Lin 2014), built and run side by side (not part of refimpl).

``../shared/peers/liblinear-ranksvm-2.11`` is copied into a scratch
directory, patched with the solve timer (``train`` then prints
``SOLVE_SECONDS t`` on stderr: the wall time of its ``train()`` call, i.e.
query grouping, trees and TRON, no parsing) and built with ``make``.  A
benchmark that cannot build it skips the comparison, saying why.

``write_fixed_decimals`` writes a dense matrix in the SVMlight/LETOR text
format quickly (a numba kernel printing integers); the values are rounded
to ``decimals`` places first, so the benchmark reads the file back with
:func:`refimpl.data.load_letor` and both programs solve exactly the same
problem (both parsers round correctly).
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mslr_shaped import _format_lines

PEER = Path(__file__).resolve().parents[2] / "shared" / "peers"


def build_peer(scratch: Path):
    """``(train, None)`` with the peer's ``train`` built under ``scratch``, or ``(None, reason)``."""
    src = PEER / "liblinear-ranksvm-2.11"
    patch = PEER / "liblinear-ranksvm-2.11-solve-timer.patch"
    if not src.is_dir() or not patch.is_file():
        return None, f"peer sources not found under {PEER}"
    dst = Path(scratch) / "liblinear"
    shutil.copytree(src, dst)
    for folder, _, files in os.walk(dst):  # the shared copy is read-only
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    try:
        with open(patch, "rb") as f:
            subprocess.run(["patch", "-p1"], cwd=dst, stdin=f, check=True,
                           capture_output=True)
        subprocess.run(["make"], cwd=dst, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        return None, f"cannot build the peer ({exc})"
    return dst / "train", None


def run_train(train: Path, data: Path, C: float, eps: float, model: Path):
    """Run ``train -s 8 -c C -e eps data model``.

    Returns a dict: ``wall`` and ``cpu`` seconds of the whole run (the
    child's user + system time), ``solve`` (its ``SOLVE_SECONDS``) and
    ``model`` (the path written).
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    run = subprocess.run(
        [str(train), "-s", "8", "-c", repr(float(C)), "-e", repr(float(eps)),
         str(data), str(model)],
        capture_output=True, text=True, check=True,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    solve = float(re.search(r"SOLVE_SECONDS\s+(\S+)", run.stderr).group(1))
    return {"wall": wall, "cpu": cpu, "solve": solve, "model": model}


def read_model_w(model: Path) -> np.ndarray:
    """The weights listed after the line ``w`` of a LIBLINEAR model file."""
    lines = Path(model).read_text().splitlines()
    start = lines.index("w") + 1
    return np.array([float(v.split()[0]) for v in lines[start:] if v.strip()])


def write_fixed_decimals(path: Path, X, y, qid, decimals=6, chunk=20_000):
    """Write ``label qid:Q 1:v ... d:v`` lines, ``v`` = ``X`` rounded to ``decimals``.

    Labels and qids must be integers.  Returns the number of bytes written.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    y = np.asarray(y).astype(np.int64)
    qid = np.asarray(qid).astype(np.int64)
    dec = np.full(d, decimals, dtype=np.int64)
    written = 0
    with open(path, "wb") as f:
        for a in range(0, n, chunk):
            b = min(n, a + chunk)
            M = np.rint(X[a:b] * 10.0**decimals).astype(np.int64)
            buf = np.empty((b - a) * (48 + d * (28 + decimals)), dtype=np.uint8)
            end = _format_lines(y[a:b], qid[a:b], M, dec, buf)
            f.write(buf[:end].tobytes())
            written += end
    return written
