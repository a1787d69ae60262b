"""Where a LETOR fold's files are: the directory layouts, in search order.

Shared by the loader (:func:`refimpl.data.load_letor_fold`), the data-set
manager (:mod:`refimpl.datasets`, which checks that a prepared copy is
complete) and the runner (which fingerprints the files the loader will
read), so that all three look for the same files in the same order.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["find_file", "fold_files", "fold_layouts"]


def find_file(stem: Path):
    """``stem`` or ``stem.gz``, whichever exists (plain first); and both tried."""
    tried = [stem, stem.with_name(stem.name + ".gz")]
    for p in tried:
        if p.is_file():
            return p, tried
    return None, tried


def fold_layouts(base: Path, fold: int):
    """Candidate layouts: (description, {split: [file stems]}), in search order."""
    fold_dir = base / f"Fold{fold}"
    parts = [base / f"S{(fold - 1 + j) % 5 + 1}.txt" for j in range(5)]
    return [
        (
            "LETOR 4.0 / MSLR fold directory",
            {
                "train": [fold_dir / "train.txt"],
                "vali": [fold_dir / "vali.txt"],
                "test": [fold_dir / "test.txt"],
            },
        ),
        (
            "LETOR 3.0 fold directory",
            {
                "train": [fold_dir / "trainingset.txt"],
                "vali": [fold_dir / "validationset.txt"],
                "test": [fold_dir / "testset.txt"],
            },
        ),
        (
            "five partitions S1..S5",
            {"train": parts[:3], "vali": [parts[3]], "test": [parts[4]]},
        ),
    ]


def fold_files(base: Path, fold: int):
    """The files of the first complete layout, ``{split: [Path]}``, or ``None``."""
    for _, stems in fold_layouts(base, fold):
        found = {split: [find_file(stem)[0] for stem in split_stems]
                 for split, split_stems in stems.items()}
        if all(p is not None for files in found.values() for p in files):
            return found
    return None
