"""The chapters' real-data mechanism: committed snapshots and runner tables.

A data set is "present" here when a tiny LETOR tree written by the test is
passed as ``root``; "absent" when ``root`` is an empty directory.
"""

import csv
import json
import math

import numpy as np
import pytest

from refimpl import data
from refimpl.experiments import (
    ExperimentConfig,
    SnapshotMismatchError,
    compare_values,
    data_available,
    run,
    runner_results,
    snapshot,
)
from refimpl.experiments import snapshots as snap_mod

NAME = "TOY"


@pytest.fixture(scope="module")
def letor_root(tmp_path_factory):
    """A five-partition LETOR 4.0 tree ``<root>/TOY/S1.txt ... S5.txt``."""
    root = tmp_path_factory.mktemp("letor")
    syn = data.make_synthetic_letor(n_queries=40, docs_per_query=(4, 10), seed=3)
    queries = np.unique(syn.qid)
    (root / NAME).mkdir()
    for s, part in enumerate(np.array_split(queries, 5), start=1):
        rows = np.isin(syn.qid, part)
        data.write_letor(root / NAME / f"S{s}.txt", syn.X[rows], syn.y[rows],
                         syn.qid[rows])
    return root


@pytest.fixture
def empty_root(tmp_path, monkeypatch):
    monkeypatch.delenv("LETOR_HOME", raising=False)
    monkeypatch.delenv(snap_mod.UPDATE_ENV, raising=False)
    (tmp_path / "empty").mkdir()
    return tmp_path / "empty"


@pytest.fixture(autouse=True)
def _no_update(monkeypatch):
    monkeypatch.delenv(snap_mod.UPDATE_ENV, raising=False)


def _values():
    return {"n": 7, "x": np.array([0.25, 1.5]), "label": "a",
            "nested": {"v": (1.0, float("nan"))}}


def test_availability(letor_root, empty_root):
    assert data_available(NAME, letor_root)
    assert not data_available(NAME, empty_root)


def test_present_writes_then_agrees(letor_root, tmp_path):
    notes = []
    first = snapshot("toy", _values, dataset=NAME, root=letor_root,
                     directory=tmp_path, out=notes.append)
    path = tmp_path / "toy.json"
    assert first.live and first.path == path and path.is_file()
    stored = json.loads(path.read_text())
    assert stored["values"]["x"] == [0.25, 1.5]
    assert math.isnan(stored["values"]["nested"]["v"][1])
    prov = stored["provenance"]
    assert prov["dataset"] == NAME and prov["refimpl"]
    assert sorted(prov["data_files"]) == [f"S{s}.txt" for s in range(1, 6)]
    assert all(len(h) == 64 for h in prov["data_files"].values())
    assert "wrote" in notes[0]
    again = snapshot("toy", _values, dataset=NAME, root=letor_root,
                     directory=tmp_path, out=notes.append)
    assert again.live and "agrees with" in notes[1]
    assert again["n"] == 7


def test_present_disagreement_raises(letor_root, tmp_path):
    snapshot("toy", _values, dataset=NAME, root=letor_root, directory=tmp_path,
             tol=1e-6, out=lambda s: None)

    def moved(dx):
        def compute():
            v = _values()
            v["x"] = v["x"] + dx
            return v
        return compute

    # within the tolerance: accepted
    snapshot("toy", moved(5e-7), dataset=NAME, root=letor_root,
             directory=tmp_path, tol=1e-6, out=lambda s: None)
    with pytest.raises(SnapshotMismatchError, match=r"\['x'\]\[0\]"):
        snapshot("toy", moved(1e-5), dataset=NAME, root=letor_root,
                 directory=tmp_path, tol=1e-6, out=lambda s: None)
    # a key that is not compared may differ
    snapshot("toy", moved(1.0), dataset=NAME, root=letor_root,
             directory=tmp_path, tol={"x": None}, out=lambda s: None)

    def other_label():
        return {**_values(), "label": "b"}

    with pytest.raises(SnapshotMismatchError, match="label"):
        snapshot("toy", other_label, dataset=NAME, root=letor_root,
                 directory=tmp_path, tol=1.0, out=lambda s: None)


def test_update_rewrites(letor_root, tmp_path, monkeypatch):
    snapshot("toy", _values, dataset=NAME, root=letor_root, directory=tmp_path,
             out=lambda s: None)
    monkeypatch.setenv(snap_mod.UPDATE_ENV, "1")
    snapshot("toy", lambda: {**_values(), "n": 8}, dataset=NAME,
             root=letor_root, directory=tmp_path, out=lambda s: None)
    assert json.loads((tmp_path / "toy.json").read_text())["values"]["n"] == 8


def test_absent_renders_committed_values(letor_root, empty_root, tmp_path):
    snapshot("toy", _values, dataset=NAME, root=letor_root, directory=tmp_path,
             out=lambda s: None)

    def must_not_run():
        raise AssertionError("computed without the data")

    notes = []
    shown = snapshot("toy", must_not_run, dataset=NAME, root=empty_root,
                     directory=tmp_path, out=notes.append)
    assert not shown.live
    assert shown["x"] == [0.25, 1.5] and shown["label"] == "a"
    note = notes[0]
    assert f"{NAME} is not available here" in note
    assert "toy.json" in note and "refimpl" in note
    assert shown.provenance["computed_utc"][:10] in note
    assert max(len(line) for line in note.splitlines()) <= 79


def test_absent_without_snapshot_names_the_file(empty_root, tmp_path):
    with pytest.raises(FileNotFoundError, match="missing-one.json"):
        snapshot("missing-one", _values, dataset=NAME, root=empty_root,
                 directory=tmp_path)


def test_write_is_atomic(letor_root, tmp_path, monkeypatch):
    snapshot("toy", _values, dataset=NAME, root=letor_root, directory=tmp_path,
             out=lambda s: None)
    before = (tmp_path / "toy.json").read_bytes()

    def broken_dump(obj, f, **kw):
        f.write('{"provenance": ')        # half a file, then a crash
        raise OSError("disk full")

    monkeypatch.setattr(snap_mod.json, "dump", broken_dump)
    with pytest.raises(OSError, match="disk full"):
        snapshot("toy", _values, dataset=NAME, root=letor_root,
                 directory=tmp_path, update=True, out=lambda s: None)
    assert (tmp_path / "toy.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy.json"]


def test_compare_values():
    a = {"f": [1.0, float("nan")], "i": 3, "s": "x"}
    assert compare_values(a, a, 0.0) == []
    assert compare_values({**a, "i": 4}, a, 1.0)          # ints exactly
    assert compare_values({**a, "f": [1.0]}, a, 1.0)      # lengths
    assert compare_values({**a, "f": [1.0, 2.0]}, a, 1.0)  # NaN only equals NaN
    assert compare_values({**a, "g": 1}, a, 1.0)          # keys
    assert compare_values({**a, "f": [1.1, float("nan")]}, a, {"f": 0.2}) == []
    with pytest.raises(KeyError, match="nope"):
        compare_values(a, a, {"nope": 1.0})


def test_values_must_be_storable(letor_root, tmp_path):
    with pytest.raises(TypeError, match="keys must be strings"):
        snapshot("bad", lambda: {1: 2.0}, dataset=NAME, root=letor_root,
                 directory=tmp_path, out=lambda s: None)
    with pytest.raises(TypeError, match="cannot store"):
        snapshot("bad", lambda: {"o": object()}, dataset=NAME, root=letor_root,
                 directory=tmp_path, out=lambda s: None)
    assert not (tmp_path / "bad.json").exists()


@pytest.fixture(scope="module")
def toy_run(letor_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    run(ExperimentConfig(dataset=NAME, methods=("ranksvm",), folds=(1,),
                         reduced=True, out=str(out), letor_home=str(letor_root)))
    return out / NAME


def test_runner_results_absent(toy_run, empty_root):
    notes = []
    res = runner_results(NAME, check="ranksvm", directory=toy_run,
                         root=empty_root, out=notes.append)
    assert {s["method"] for s in res["selected"]} == {"ranksvm"}
    assert f"{NAME} is not available here" in notes[0]
    assert "committed runner results" in notes[0]


def test_runner_results_present_checks(toy_run, letor_root, tmp_path):
    notes = []
    runner_results(NAME, check="ranksvm", directory=toy_run, root=letor_root,
                   out=notes.append)
    assert "refitted now agrees" in notes[0]
    # a committed table that the code no longer reproduces is caught
    bad = tmp_path / NAME
    bad.mkdir()
    for f in toy_run.iterdir():
        if f.is_file():
            (bad / f.name).write_bytes(f.read_bytes())
    with open(toy_run / "selected.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    rows[0]["test_MAP"] = str(float(rows[0]["test_MAP"]) + 0.1)
    with open(bad / "selected.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(SnapshotMismatchError, match="test MAP"):
        runner_results(NAME, check="ranksvm", directory=bad, root=letor_root,
                       out=lambda s: None)
