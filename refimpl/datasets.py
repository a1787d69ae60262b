"""Fetch the public learning-to-rank data sets: LETOR 3.0/4.0, MSLR-WEB, Istella.

:func:`fetch_letor` downloads a data set once, checks it, unpacks it into a
local data directory and returns the directory that
:func:`refimpl.data.load_letor_fold` reads::

    path = fetch_letor("MQ2008")            # <data home>/MQ2008
    fold = load_letor_fold(path.name, 1, root=path.parent)

:func:`prepare_letor` does the same from an archive downloaded by hand, for
sources behind a licence form or a dead link.  :data:`REGISTRY` holds one
:class:`LetorSource` per data set: where it comes from, the published size and
hash of the archive, the sha256 of extracted files where they are published,
the licence and citation, and the layout.

Downloads go through `pooch <https://www.fatiando.org/pooch/>`_, the fetcher
used by SciPy and scikit-image: it streams to a temporary file that is renamed
only once complete, hashes files in chunks and shows a tqdm progress bar.
scikit-learn's fetchers are internal API (``sklearn.datasets._base``), the
Hugging Face ``datasets``/hub clients cannot reach Microsoft's OneDrive or the
LETOR mirrors, and plain :mod:`urllib` would mean re-implementing the atomic
write, the hashing and the progress display by hand.

**Where the data goes.**  Each data set lives in ``<data home>/<name>/``.  The
data home is, in this order: the ``data_home=`` argument; the environment
variable ``REFIMPL_DATA``; the per-user cache ``pooch.os_cache("refimpl")``
(``~/.cache/refimpl`` on Linux, honouring ``XDG_CACHE_HOME``).  Without
``data_home=``, a complete copy already under ``LETOR_HOME`` (the directory
:func:`refimpl.data.letor_home` reads) is used as it is, so existing setups
keep working; nothing is ever written there.

**Nothing half-done is ever taken for finished.**  Everything happens in a
private temporary directory inside the data home: the download (pooch's
temporary file), the checks (archive size and hash where published, the
CRC-32 of every RAR member, the sha256 of every extracted file whose hash is
published), the unpacking, and a manifest recording every file's size and
sha256.  Only then is the directory renamed to ``<data home>/<name>`` in one
step (:func:`os.replace`).  A failure at any point removes the temporary
directory, so a checksum mismatch (:class:`ChecksumError`) or an interrupted
transfer (:class:`DownloadError`) leaves nothing behind, and the next call
starts afresh.  A later call finds the directory, compares the files with the
sizes in the manifest, and makes no request.

**RAR archives** (LETOR 4.0) are read in two steps: the pure-Python
:mod:`rarfile` parses the headers (member names, sizes, CRC-32), and a system
tool decompresses: ``bsdtar`` (libarchive; Debian/Ubuntu package
``libarchive-tools``, listed in the repository's ``apt.txt`` for Binder;
built into macOS), else ``unrar`` or ``7z``.  Every extracted
member is then checked against the CRC-32 in its header, because the tools do
not all check it (libarchive does not for stored members).  Zip (MSLR,
OHSUMED) and tar archives use :mod:`zipfile` and :mod:`tarfile`.

Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from .data import _find, _fold_layouts
from .exceptions import DataError, DatasetNotFoundError

__all__ = [
    "REGISTRY",
    "ChecksumError",
    "DownloadError",
    "LetorSource",
    "data_home",
    "fetch_letor",
    "prepare_letor",
]

#: Environment variable naming the data home.
ENV_VAR = "REFIMPL_DATA"
#: Name of the manifest written into every data set directory.
MANIFEST = ".refimpl-letor.json"
# Seconds to wait for the server to connect or send the next chunk.
_TIMEOUT = 60
_CHUNK = 1 << 20


class ChecksumError(DataError):
    """A downloaded or extracted file does not have the published size or hash."""


class DownloadError(OSError):
    """A data set could not be downloaded from any of its sources."""


@dataclass(frozen=True)
class LetorSource:
    """Where one learning-to-rank data set comes from and what it must contain.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Attributes
    ----------
    name : str
        Directory name under the data home, and the name given to
        :func:`refimpl.data.load_letor_fold`.
    description : str
        One line: collection, queries, documents, features, labels.
    homepage : str
        The page where the data set is published (and where to get it by hand).
    urls : tuple of str
        Direct download links, tried in order; empty when the data can only be
        obtained by hand (a licence form), see :func:`prepare_letor`.
    archive : str
        File name of the archive; its suffix selects the unpacker
        (``.zip``, ``.rar``, ``.tar.gz``).
    archive_size : int or None
        Size of the archive in bytes, where published.
    archive_hash : str or None
        ``"sha256:<hex>"`` or ``"md5:<hex>"`` of the archive, where published
        (``hash_source`` says by whom).  Where None, the extracted files are
        checked instead (``files``, the RAR CRC-32s), and the first download
        records the archive's sha256 in the manifest.
    hash_source : str
        Who published ``archive_hash`` and ``files``.
    files : tuple of (str, str) pairs
        Published sha256 of extracted files, by path relative to
        ``<data home>/<name>``.  Every listed file must be present and match.
    layout : str
        ``"letor4"`` (``FoldK/train.txt``, ``vali.txt``, ``test.txt``: LETOR
        4.0 and MSLR), ``"letor3"`` (``FoldK/trainingset.txt``,
        ``validationset.txt``, ``testset.txt``) or ``"single"`` (one
        ``train.txt``/``vali.txt``/``test.txt`` split, stored as ``Fold1``).
    n_folds : int
        Number of folds ``load_letor_fold`` can read (5, or 1 for ``single``).
    subdir : str or None
        When the archive holds several versions of the data, the name of the
        directory of the one kept (e.g. ``"QueryLevelNorm"``).
    size_note : str
        What the data set costs on disk, with the source of each figure.
    license : str
        The terms of use.
    citation : str
        What to cite.
    """

    name: str
    description: str
    homepage: str
    urls: tuple = ()
    archive: str = ""
    archive_size: int | None = None
    archive_hash: str | None = None
    hash_source: str = ""
    files: tuple = ()
    layout: str = "letor4"
    n_folds: int = 5
    subdir: str | None = None
    size_note: str = ""
    license: str = ""
    citation: str = ""

    @property
    def manual(self) -> bool:
        """True when the data set can only be obtained by hand."""
        return not self.urls

    def split_files(self) -> list[str]:
        """Paths, relative to the data set directory, of every fold's splits."""
        if self.layout == "single":
            return ["Fold1/train.txt", "Fold1/vali.txt", "Fold1/test.txt"]
        names = {
            "letor4": ("train.txt", "vali.txt", "test.txt"),
            "letor3": ("trainingset.txt", "validationset.txt", "testset.txt"),
        }[self.layout]
        return [f"Fold{k}/{n}" for k in range(1, self.n_folds + 1) for n in names]


_LETOR4_LICENSE = (
    "LETOR 4.0 is distributed by Microsoft Research for research use; to use it "
    "you must read and accept the agreement on the download page."
)
_LETOR4_CITATION = (
    "Tao Qin and Tie-Yan Liu. Introducing LETOR 4.0 Datasets. "
    "arXiv:1306.2597, 2013."
)
_MSLR_LICENSE = (
    "MSLR-WEB10K/30K are released by Microsoft Research for research use under "
    "the terms on https://www.microsoft.com/en-us/research/project/mslr/."
)
_MSLR_HASHES = (
    "archive: TensorFlow Datasets, tensorflow_datasets/ranking/mslr_web/"
    "checksums.tsv; fold files: pytorchltr, pytorchltr/datasets/svmrank/"
    "mslr10k.py and mslr30k.py"
)
_LETOR4_HOME = (
    "https://www.microsoft.com/en-us/research/project/"
    "letor-learning-rank-information-retrieval/letor-4-0/"
)


def _mslr_files(hashes: dict) -> tuple:
    return tuple(sorted(hashes.items()))


#: The known data sets, by name: one :class:`LetorSource` each.
REGISTRY: dict[str, LetorSource] = {
    "MQ2007": LetorSource(
        name="MQ2007",
        description=(
            "LETOR 4.0, TREC 2007 Million Query track on Gov2: 1,692 queries, "
            "69,623 documents, 46 features, labels 0-2"
        ),
        homepage=_LETOR4_HOME,
        urls=(
            ("http://www.bigdatalab.ac.cn/benchmark/upload/download_source/"
            "7b6dbbe2-842c-11e4-a536-bcaec51b9163_MQ2007.rar"),
        ),
        archive="MQ2007.rar",
        archive_hash="md5:7be1640ae95c6408dab0ae7207bdc706",
        hash_source=(
            "PaddlePaddle, python/paddle/dataset/mq2007.py (md5 of this mirror's "
            "copy); no sha256 of the extracted files is published, so they are "
            "checked against the CRC-32 in the RAR headers"
        ),
        size_note="archive ~65 MB (LETOR 4.0 download page)",
        license=_LETOR4_LICENSE,
        citation=_LETOR4_CITATION,
    ),
    "MQ2008": LetorSource(
        name="MQ2008",
        description=(
            "LETOR 4.0, TREC 2008 Million Query track on Gov2: 784 queries, "
            "15,211 documents, 46 features, labels 0-2"
        ),
        homepage=_LETOR4_HOME,
        urls=("https://s3-us-west-2.amazonaws.com/xgboost-examples/MQ2008.rar",),
        archive="MQ2008.rar",
        hash_source=(
            "no archive hash is published; the sha256 of the partitions "
            "S1-S5.txt are those of the project's reference copy of MQ2008 "
            "(the distributed partitions), and every member is checked against "
            "the CRC-32 in the RAR headers"
        ),
        files=(
            ("S1.txt",
             "cbd42504549a2388f6c0aefdb506f22074225b574c7a5df10194174c9b00e4e0"),
            ("S2.txt",
             "055ac792cb8f7d5a029090b8acbfb6c57323339d1371251bf2465ac182aa8605"),
            ("S3.txt",
             "a03fe2b6e76479de60fecdb37d560a40a4e899b0cd685553d2da31ea205af1ab"),
            ("S4.txt",
             "a239850bc6fe960ad08c2b7b0d99db90fe976dd93a15358e98036591b4e7a2ac"),
            ("S5.txt",
             "c68c52feb1ecae7f17b64c8e2fda2098302681bbd4ea5fad8c73a1d32a1cf2b2"),
        ),
        size_note=(
            "archive ~15 MB (LETOR 4.0 download page); extracted ~56 MB "
            "(the partitions S1-S5 hold 9,346,412 bytes, each fold repeats them)"
        ),
        license=_LETOR4_LICENSE,
        citation=_LETOR4_CITATION,
    ),
    "OHSUMED": LetorSource(
        name="OHSUMED",
        description=(
            "LETOR 3.0, OHSUMED medical abstracts: 106 queries, 16,140 "
            "documents, 45 features, labels 0-2 (QueryLevelNorm version)"
        ),
        homepage=(
            "https://www.microsoft.com/en-us/research/project/"
            "letor-learning-rank-information-retrieval/letor-3-0/"
        ),
        urls=(
            ("http://research.microsoft.com/en-us/um/beijing/projects/letor/"
            "LETOR3.0/OHSUMED.zip"),
        ),
        archive="OHSUMED.zip",
        layout="letor3",
        subdir="QueryLevelNorm",
        hash_source=(
            "no hash is published; zip members are checked against their CRC-32"
        ),
        size_note="sizes not published",
        license=(
            "LETOR 3.0 is distributed by Microsoft Research for research use; "
            "see the download page."
        ),
        citation=(
            "Tao Qin, Tie-Yan Liu, Jun Xu and Hang Li. LETOR: A benchmark "
            "collection for research on learning to rank for information "
            "retrieval. Information Retrieval 13(4):346-374, 2010."
        ),
    ),
    "MSLR-WEB10K": LetorSource(
        name="MSLR-WEB10K",
        description=(
            "Microsoft Bing: 10,000 queries, 1,200,192 documents, 136 features, "
            "labels 0-4"
        ),
        homepage="https://www.microsoft.com/en-us/research/project/mslr/",
        urls=(
            ("https://api.onedrive.com/v1.0/shares/"
            "s!AtsMfWUz5l8nbOIoJ6Ks0bEMp78/root/content"),
        ),
        archive="MSLR-WEB10K.zip",
        archive_size=1234144912,
        archive_hash=(
            "sha256:2902142ea33f18c59414f654212de5063033b707d5c3939556124b1120d3a0ba"
        ),
        hash_source=_MSLR_HASHES,
        files=_mslr_files({
            "Fold1/train.txt":
                "6eb3fae4e1186e1242a6520f53a98abdbcde5b926dd19a28e51239284b1d55dc",
            "Fold1/test.txt":
                "33fe002374a4fce58c4e12863e4eee74745d5672a26f3e4ddacc20ccfe7d6ba0",
            "Fold1/vali.txt":
                "e86fb3fe7e8a5f16479da7ce04f783ae85735f17f66016786c3ffc797dd9d4db",
            "Fold2/train.txt":
                "40e4a2fcc237d9c164cbb6a3f2fa91fe6cf7d46a419d2f73e21cf090285659eb",
            "Fold2/test.txt":
                "44add582ccd674cf63af24d3bf6e1074e87a678db77f00b44c37980a3010917a",
            "Fold2/vali.txt":
                "33fe002374a4fce58c4e12863e4eee74745d5672a26f3e4ddacc20ccfe7d6ba0",
            "Fold3/train.txt":
                "f13005ceb8de0db76c93b02ee4b2bded6f925097d3ab7938931e8d07aa72acd7",
            "Fold3/test.txt":
                "c0a5a3c6bd7790d0b4ff3d5e961d0c8c5f8ff149089ce492540fa63035801b7a",
            "Fold3/vali.txt":
                "44add582ccd674cf63af24d3bf6e1074e87a678db77f00b44c37980a3010917a",
            "Fold4/train.txt":
                "6c1677cf9b2ed491e26ac6b8c8ca7dfae9c1a375e2bce8cba6df36ab67ce5836",
            "Fold4/test.txt":
                "dc6083c24a5f0c03df3c91ad3eed7542694115b998acf046e51432cb7a22b848",
            "Fold4/vali.txt":
                "c0a5a3c6bd7790d0b4ff3d5e961d0c8c5f8ff149089ce492540fa63035801b7a",
            "Fold5/train.txt":
                "4249797a2f0f46bff279973f0fb055d4a78f67f337769eabd56e82332c044794",
            "Fold5/test.txt":
                "e86fb3fe7e8a5f16479da7ce04f783ae85735f17f66016786c3ffc797dd9d4db",
            "Fold5/vali.txt":
                "dc6083c24a5f0c03df3c91ad3eed7542694115b998acf046e51432cb7a22b848",
        }),
        size_note=(
            "archive 1,234,144,912 bytes (TensorFlow Datasets checksums); the "
            "extracted size is recorded in the manifest on first fetch"
        ),
        license=_MSLR_LICENSE,
        citation=_LETOR4_CITATION,
    ),
    "MSLR-WEB30K": LetorSource(
        name="MSLR-WEB30K",
        description=(
            "Microsoft Bing: 31,531 queries, 3,771,125 documents, 136 features, "
            "labels 0-4"
        ),
        homepage="https://www.microsoft.com/en-us/research/project/mslr/",
        urls=(
            ("https://api.onedrive.com/v1.0/shares/"
            "s!AtsMfWUz5l8nbXGPBlwD1rnFdBY/root/content"),
        ),
        archive="MSLR-WEB30K.zip",
        archive_size=3849406307,
        archive_hash=(
            "sha256:08cb7977e1d5cbdeb57a9a2537a0923dbca6d46a76db9a6afc69e043c85341ae"
        ),
        hash_source=_MSLR_HASHES,
        files=_mslr_files({
            "Fold1/train.txt":
                "40b8eee4d1221cf8205e81603441c1757dd024a3baac25a47756210b03c031d6",
            "Fold1/test.txt":
                "9a4668fd2615e6772d2e5c4d558d084b2daaf2405571eaf3e4d0526f4da096c7",
            "Fold1/vali.txt":
                "7647834b84c849a61e5cf3c999a2f72a4785613286fd972a5615e9fcb58f94d8",
            "Fold2/train.txt":
                "a6d12dc4cc8c2dd0743b58c49cad12bd0f6f1cbeda54b54a91e5b54e0b96e7ca",
            "Fold2/test.txt":
                "d192c023baebdae148d902d716aeebf3df2f2f1ce5aee12be4f0b8bb76a8c04a",
            "Fold2/vali.txt":
                "9a4668fd2615e6772d2e5c4d558d084b2daaf2405571eaf3e4d0526f4da096c7",
            "Fold3/train.txt":
                "3d0eb52a6702b2c48750a6de89e757cfac499c8ec1d38e3843cb531c059f2f74",
            "Fold3/test.txt":
                "ba2487a27c21dceea0b9afaadbb6b392d5f652eb0fb8649cbd201bb894c47c12",
            "Fold3/vali.txt":
                "d192c023baebdae148d902d716aeebf3df2f2f1ce5aee12be4f0b8bb76a8c04a",
            "Fold4/train.txt":
                "21e389656be3c2bfe92eb4fb898d2f30dc24990fc524aada7471b949f176778d",
            "Fold4/test.txt":
                "a7ba03d708ae6b21556a8a6859d52e37cc0dcb2cbff992c630ef6173bb02122a",
            "Fold4/vali.txt":
                "ba2487a27c21dceea0b9afaadbb6b392d5f652eb0fb8649cbd201bb894c47c12",
            "Fold5/train.txt":
                "a19da1799650b08c0dc3baaec6c590469ef1773148082e1a10b8504f2f5e9a8b",
            "Fold5/test.txt":
                "7647834b84c849a61e5cf3c999a2f72a4785613286fd972a5615e9fcb58f94d8",
            "Fold5/vali.txt":
                "a7ba03d708ae6b21556a8a6859d52e37cc0dcb2cbff992c630ef6173bb02122a",
        }),
        size_note=(
            "archive 3,849,406,307 bytes (TensorFlow Datasets checksums); the "
            "extracted size is recorded in the manifest on first fetch"
        ),
        license=_MSLR_LICENSE,
        citation=_LETOR4_CITATION,
    ),
    "Istella-S": LetorSource(
        name="Istella-S",
        description=(
            "Istella web search, sampled: 33,018 queries, 3,408,630 documents, "
            "220 features, labels 0-4; one train/vali/test split (60/20/20)"
        ),
        homepage="https://istella.ai/datasets/letor-dataset/",
        urls=(),
        archive="istella-s-letor.tar.gz",
        archive_size=472129615,
        archive_hash=(
            "sha256:41b21116a3650cc043dbe16f02ee39f4467f9405b37fdbcc9a6a05e230a38981"
        ),
        hash_source=(
            "archive: TensorFlow Datasets, tensorflow_datasets/ranking/istella/"
            "checksums.tsv (for the copy once at library.istella.it); split "
            "files: pytorchltr, pytorchltr/datasets/svmrank/istella_s.py"
        ),
        files=(
            ("Fold1/test.txt",
             "2cd1a4f46fa21ea2489073979b5e5913146d1e451f1d6e268bc4e472d39da5d7"),
            ("Fold1/train.txt",
             "5cda4187b88b597ca6fa98d6cd3a6d7551ba69ffff700eae63a59fbc8af385b8"),
            ("Fold1/vali.txt",
             "f225dd95772fa65dc685351ff2643945fbd9a9c0e874aa1c538d485595e7c890"),
        ),
        layout="single",
        n_folds=1,
        size_note="archive 472,129,615 bytes (TensorFlow Datasets checksums)",
        license=(
            "Istella LETOR licence agreement, non-commercial use only; the "
            "archive is given out by the download page once it is accepted."
        ),
        citation=(
            "D. Dato, C. Lucchese, F. M. Nardini, S. Orlando, R. Perego, N. "
            "Tonellotto, R. Venturini. Fast Ranking with Additive Ensembles of "
            "Oblivious and Non-Oblivious Regression Trees. ACM TOIS 35(2), 2016."
        ),
    ),
}


# --------------------------------------------------------------------------
# Locations
# --------------------------------------------------------------------------


def data_home(data_home=None) -> Path:
    """The directory into which data sets are fetched.

    ``data_home`` if given, else the environment variable ``REFIMPL_DATA``,
    else the per-user cache ``pooch.os_cache("refimpl")`` (``~/.cache/refimpl``
    on Linux).  ``~`` is expanded; the directory is not created.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Parameters
    ----------
    data_home : str or path-like, optional
        Explicit location.

    Returns
    -------
    Path
    """
    return _home(data_home)


def _home(explicit) -> Path:
    if explicit is None:
        explicit = os.environ.get(ENV_VAR) or None
    if explicit is None:
        # pooch.os_cache's own source, without importing pooch: pooch imports
        # tqdm.auto, which warns on stderr in a notebook without ipywidgets,
        # and every load of a read-only data folder asks for this directory.
        import platformdirs

        return Path(platformdirs.user_cache_dir("refimpl")).expanduser()
    return Path(os.fspath(explicit)).expanduser()


def _source(name) -> LetorSource:
    if isinstance(name, str):
        if name in REGISTRY:
            return REGISTRY[name]
        folded = {key.casefold(): key for key in REGISTRY}
        if name.casefold() in folded:
            return REGISTRY[folded[name.casefold()]]
    raise DataError(
        f"unknown data set {name!r}; known data sets: {', '.join(REGISTRY)}"
    )


def _unmanaged_complete(base: Path, source: LetorSource) -> bool:
    """Whether every fold of ``source`` is readable by ``load_letor_fold``.

    Uses the loader's own list of layouts, so a copy counts as present
    exactly when ``load_letor_fold`` would find all its folds.
    """
    if not base.is_dir():
        return False
    for fold in range(1, source.n_folds + 1):
        if not any(
            all(_find(stem)[0] is not None for stems in layout.values() for stem in stems)
            for _, layout in _fold_layouts(base, fold)
        ):
            return False
    return True


def _check_manifest(base: Path) -> None:
    """Compare the files of a fetched data set with its manifest's sizes."""
    record = json.loads((base / MANIFEST).read_text())
    for rel, info in record["files"].items():
        path = base / rel
        if not path.is_file():
            raise DataError(
                f"{path} is missing from the fetched data set {base}; delete "
                f"{base} and fetch it again"
            )
        size = path.stat().st_size
        if size != info["size"]:
            raise DataError(
                f"{path} has {size} bytes but had {info['size']} when fetched; "
                f"delete {base} and fetch it again"
            )


def _find_existing(source: LetorSource, home: Path, explicit: bool) -> Path | None:
    base = home / source.name
    if (base / MANIFEST).is_file():
        _check_manifest(base)
        return base
    if _unmanaged_complete(base, source):
        return base
    if base.exists():
        raise DataError(
            f"{base} exists but does not hold a complete copy of {source.name} "
            f"(expected {', '.join(source.split_files()[:3])}, ... for "
            f"{source.n_folds} fold(s)); remove it, then fetch again"
        )
    letor = os.environ.get("LETOR_HOME") or None
    if not explicit and letor is not None:
        other = Path(letor).expanduser() / source.name
        if _unmanaged_complete(other, source):
            return other
    return None


def _looked_in(source: LetorSource, home: Path, explicit: bool) -> str:
    places = [str(home / source.name)]
    letor = os.environ.get("LETOR_HOME") or None
    if not explicit and letor is not None:
        places.append(str(Path(letor).expanduser() / source.name) + " (LETOR_HOME)")
    return ", ".join(places)


def _by_hand(source: LetorSource) -> str:
    return (
        f"Download {source.archive} by hand from {source.homepage}, then call "
        f"refimpl.datasets.prepare_letor({source.name!r}, '<path to "
        f"{source.archive}>')"
    )


# --------------------------------------------------------------------------
# Hashes
# --------------------------------------------------------------------------


def _file_hash(path: Path, algorithm: str = "sha256") -> str:
    import pooch

    return pooch.file_hash(str(path), alg=algorithm)


def _crc32(path: Path) -> int:
    crc = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            crc = zlib.crc32(chunk, crc)
    return crc


def _check_archive(source: LetorSource, archive: Path, origin: str) -> str:
    """Check size and published hash; return the archive's sha256."""
    size = archive.stat().st_size
    if source.archive_size is not None and size != source.archive_size:
        raise ChecksumError(
            f"{origin}: {archive.name} has {size} bytes, expected "
            f"{source.archive_size} (published by {source.hash_source}); the file "
            "is incomplete or a different release; nothing was kept"
        )
    sha256 = _file_hash(archive)
    if source.archive_hash is not None:
        algorithm, _, expected = source.archive_hash.partition(":")
        actual = sha256 if algorithm == "sha256" else _file_hash(archive, algorithm)
        if actual.lower() != expected.lower():
            raise ChecksumError(
                f"{origin}: {algorithm} of {archive.name} is {actual}, expected "
                f"{expected} (published by {source.hash_source}); nothing was kept"
            )
    return sha256


# --------------------------------------------------------------------------
# Unpacking
# --------------------------------------------------------------------------

_RAR_TOOLS = (
    ("bsdtar", lambda tool, archive, dest: [tool, "-x", "-f", archive, "-C", dest]),
    ("unrar", lambda tool, archive, dest: [tool, "x", "-idq", "-o+", archive,
                                           dest + os.sep]),
    ("7z", lambda tool, archive, dest: [tool, "x", "-y", "-bd", f"-o{dest}",
                                        archive]),
)

_NO_RAR_TOOL = (
    "unpacking {archive} (a RAR archive) needs a command-line tool that reads "
    "RAR, and none of bsdtar, unrar, 7z was found on PATH.  Install bsdtar: "
    "Debian/Ubuntu `apt-get install libarchive-tools`, Fedora `dnf install "
    "bsdtar`, conda `conda install -c conda-forge libarchive`; macOS ships "
    "it.  Binder installs it from the repository's apt.txt."
)


def _rar_tool(archive_name: str) -> tuple:
    try:
        import rarfile  # noqa: F401
    except ImportError as exc:  # pragma: no cover - pinned in requirements.txt
        raise ImportError(
            f"unpacking {archive_name} needs the Python package rarfile "
            "(`pip install rarfile`)"
        ) from exc
    for name, command in _RAR_TOOLS:
        tool = shutil.which(name)
        if tool is not None:
            return tool, command
    raise DataError(_NO_RAR_TOOL.format(archive=archive_name))


def _archive_kind(archive_name: str) -> str:
    lower = archive_name.lower()
    if lower.endswith(".zip"):
        return "zip"
    if lower.endswith(".rar"):
        return "rar"
    if lower.endswith((".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tar.xz")):
        return "tar"
    raise DataError(f"{archive_name}: unknown archive type (zip, rar, tar.gz)")


def _extract_rar(archive: Path, dest: Path, origin: str) -> None:
    import rarfile

    try:
        rf = rarfile.RarFile(archive)
        members = [m for m in rf.infolist() if m.is_file()]
    except rarfile.Error as exc:
        raise DataError(f"{origin}: not a readable RAR archive ({exc})") from exc
    if any(m.needs_password() for m in members):
        raise DataError(f"{origin}: the RAR archive is encrypted")
    tool, command = _rar_tool(archive.name)
    done = subprocess.run(
        command(tool, str(archive), str(dest)),
        check=False, capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise DataError(
            f"{origin}: {Path(tool).name} failed (exit {done.returncode}): "
            f"{(done.stderr or done.stdout).strip()[:500]}"
        )
    # The RAR headers carry each member's size and CRC-32; check them here
    # because not every tool does (libarchive skips it for stored members).
    for m in members:
        path = dest / m.filename
        if not path.is_file():
            raise DataError(f"{origin}: member {m.filename} was not extracted")
        size = path.stat().st_size
        if size != m.file_size:
            raise ChecksumError(
                f"{origin}: member {m.filename} extracted to {size} bytes, "
                f"expected {m.file_size} (RAR header); nothing was kept"
            )
        if m.CRC is not None:
            crc = _crc32(path)
            if crc != m.CRC:
                raise ChecksumError(
                    f"{origin}: CRC-32 of member {m.filename} is {crc:08x}, "
                    f"expected {m.CRC:08x} (RAR header); nothing was kept"
                )


def _extract(archive: Path, dest: Path, kind: str, origin: str) -> None:
    """Unpack ``archive`` into the empty directory ``dest``."""
    try:
        if kind == "zip":
            # zipfile checks every member's CRC-32 while reading it, and
            # extractall drops absolute paths and "..".
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(dest)
        elif kind == "tar":
            with tarfile.open(archive, "r:*") as tf:
                if hasattr(tarfile, "data_filter"):
                    tf.extractall(dest, filter="data")
                else:  # pragma: no cover - Python < 3.11.4
                    tf.extractall(dest)
        else:
            _extract_rar(archive, dest, origin)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error) as exc:
        raise DataError(
            f"{origin}: cannot unpack the {kind} archive ({exc}); if it was "
            "downloaded, the link may now serve something else"
        ) from exc


def _locate_root(extracted: Path, source: LetorSource, origin: str) -> Path:
    """The directory of the extracted tree that holds the data set's splits."""
    if source.layout == "single":
        wanted = ["train.txt", "vali.txt", "test.txt"]
    else:
        wanted = source.split_files()
    found = []
    for dirpath, _, _ in os.walk(extracted):
        d = Path(dirpath)
        if source.subdir is not None and d.name != source.subdir:
            continue
        if all((d / w).is_file() for w in wanted):
            found.append(d)
    if not found:
        names = sorted(
            str(p.relative_to(extracted)) for p in extracted.rglob("*") if p.is_file()
        )
        shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        where = f" in a directory named {source.subdir!r}" if source.subdir else ""
        raise DataError(
            f"{origin}: does not contain the {source.name} files "
            f"{', '.join(wanted[:3])}, ...{where}; it holds: {shown or 'no files'}"
        )
    depth = min(len(d.parts) for d in found)
    top = [d for d in found if len(d.parts) == depth]
    if len(top) > 1:
        raise DataError(
            f"{origin}: several directories hold {source.name}'s files: "
            + ", ".join(str(d.relative_to(extracted)) for d in top)
        )
    return top[0]


def _arrange(root: Path, final: Path, source: LetorSource) -> None:
    """Move the located data into ``final`` in ``load_letor_fold``'s layout."""
    if source.layout == "single":
        (final / "Fold1").mkdir(parents=True)
        for split in ("train.txt", "vali.txt", "test.txt"):
            os.replace(root / split, final / "Fold1" / split)
    else:
        os.replace(root, final)


def _verify_and_record(final: Path, source: LetorSource, archive_info: dict) -> None:
    """Check published sha256s, then write the manifest (the last step)."""
    files = {}
    for rel, _ in source.files:
        path = final / rel
        if not path.is_file():
            raise ChecksumError(
                f"{archive_info['archive']}: {rel} is missing from the archive "
                f"(its sha256 is published by {source.hash_source})"
            )
    expected = dict(source.files)
    for path in sorted(p for p in final.rglob("*") if p.is_file()):
        rel = path.relative_to(final).as_posix()
        sha256 = _file_hash(path)
        if rel in expected and sha256 != expected[rel]:
            raise ChecksumError(
                f"{archive_info['archive']}: {rel} has sha256 {sha256}, expected "
                f"{expected[rel]} (published by {source.hash_source}); nothing "
                "was kept"
            )
        files[rel] = {"size": path.stat().st_size, "sha256": sha256}
    record = {
        "name": source.name,
        **archive_info,
        "checked": sorted(expected),
        "extracted_bytes": sum(f["size"] for f in files.values()),
        "files": files,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (final / MANIFEST).write_text(json.dumps(record, indent=1) + "\n")


@contextlib.contextmanager
def _workdir(home: Path, name: str):
    """A private directory inside ``home``, removed whatever happens."""
    home.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}.part-", dir=home))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _install(source: LetorSource, archive: Path, kind: str, home: Path,
             work: Path, archive_info: dict, origin: str) -> Path:
    """Unpack, check and move ``archive`` into ``home/<name>``, atomically."""
    extracted = work / "extracted"
    extracted.mkdir()
    _extract(archive, extracted, kind, origin)
    root = _locate_root(extracted, source, origin)
    final = work / "final"
    _arrange(root, final, source)
    _verify_and_record(final, source, archive_info)
    target = home / source.name
    try:
        os.replace(final, target)
    except OSError:
        # Another process finished the same data set first: keep its copy.
        if (target / MANIFEST).is_file():
            _check_manifest(target)
            return target
        raise
    return target


# --------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------


@contextlib.contextmanager
def _quiet_pooch():
    # pooch logs "use this hash as known_hash" for unhashed files, which is
    # advice for pooch's own users, not ours.
    import pooch

    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def _download(source: LetorSource, dest_dir: Path, progress: bool) -> tuple:
    """Download the archive from the first source that answers."""
    import pooch
    import requests

    errors = []
    for url in source.urls:
        if progress:
            print(f"Downloading {source.name} from {url}", file=sys.stderr)
        downloader = pooch.HTTPDownloader(progressbar=progress, timeout=_TIMEOUT)
        try:
            with _quiet_pooch():
                path = pooch.retrieve(
                    url, known_hash=None, fname=source.archive, path=dest_dir,
                    downloader=downloader,
                )
            return Path(path), url
        except (requests.exceptions.RequestException, OSError) as exc:
            errors.append(f"  {url}: {type(exc).__name__}: {exc}")
    raise DownloadError(
        f"could not download {source.name}; nothing was kept.  Tried:\n"
        + "\n".join(errors)
        + f"\nTry again later, or: {_by_hand(source)}"
    )


def fetch_letor(name, *, data_home=None, download=True, progress=True) -> Path:
    """Download, check and unpack a LETOR data set; return its directory.

    A data set already present is returned at once, without any request: a
    fetched copy (checked against the file sizes in its manifest) or, unless
    ``data_home`` is given, a complete copy under ``LETOR_HOME``.  Otherwise
    the archive is downloaded from the first source in :data:`REGISTRY` that
    answers, checked (size and hash where published), unpacked, its files
    checked (sha256 where published, CRC-32 of RAR members), and moved into
    ``<data home>/<name>`` in one rename; see the module docstring.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Parameters
    ----------
    name : str
        A key of :data:`REGISTRY` (case-insensitive): ``"MQ2007"``,
        ``"MQ2008"``, ``"OHSUMED"``, ``"MSLR-WEB10K"``, ``"MSLR-WEB30K"``,
        ``"Istella-S"``.
    data_home : str or path-like, optional
        Where to keep the data; default ``REFIMPL_DATA``, else the per-user
        cache (see :func:`data_home`).
    download : bool, default=True
        If False, only look for a copy already present.
    progress : bool, default=True
        Show a progress bar while downloading.

    Returns
    -------
    Path
        ``<data home>/<name>``, holding ``Fold1`` ... ``Fold5`` (and, for
        LETOR 4.0, ``S1.txt`` ... ``S5.txt``); read a fold with
        ``load_letor_fold(path.name, k, root=path.parent)``.

    Raises
    ------
    DataError
        ``name`` is unknown (the message lists the known names), or an
        archive does not hold the expected files.
    DatasetNotFoundError
        The data set is absent and ``download`` is False, or it can only be
        obtained by hand; the message says where to get it.
    DownloadError
        No source could be downloaded (every URL and error is listed).
    ChecksumError
        A size or hash differs from the published one; the message names the
        file, the expected and the actual value.

    Examples
    --------
    >>> from refimpl.data import load_letor_fold
    >>> path = fetch_letor("MQ2008")                      # doctest: +SKIP
    >>> fold = load_letor_fold(path.name, 1, root=path.parent)  # doctest: +SKIP
    """
    source = _source(name)
    explicit = data_home is not None
    home = _home(data_home)
    existing = _find_existing(source, home, explicit)
    if existing is not None:
        return existing
    if source.manual:
        raise DatasetNotFoundError(
            f"{source.name} is not in {_looked_in(source, home, explicit)} and "
            f"has no direct download link: {source.license}  {_by_hand(source)}."
        )
    if not download:
        raise DatasetNotFoundError(
            f"{source.name} is not in {_looked_in(source, home, explicit)} and "
            f"download=False.  Call fetch_letor({source.name!r}) to download it "
            f"({source.size_note}).  Or: {_by_hand(source)}."
        )
    kind = _archive_kind(source.archive)
    if kind == "rar":
        _rar_tool(source.archive)  # fail before a long download, not after
    with _workdir(home, source.name) as work:
        archive, url = _download(source, work / "download", progress)
        sha256 = _check_archive(source, archive, url)
        info = {"archive": source.archive, "url": url, "archive_sha256": sha256,
                "archive_bytes": archive.stat().st_size}
        return _install(source, archive, kind, home, work, info, url)


def prepare_letor(name, archive_path, *, data_home=None) -> Path:
    """Check and unpack an archive downloaded by hand; return its directory.

    For sources behind a licence form (Istella) or a link that died.  The
    archive is checked exactly as a download would be (size and hash where
    published, then every extracted file), unpacked into
    ``<data home>/<name>`` in one rename, and left where it is.

    Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics

    Parameters
    ----------
    name : str
        A key of :data:`REGISTRY` (case-insensitive).
    archive_path : str or path-like
        The archive, as distributed (e.g. ``MQ2008.rar``,
        ``MSLR-WEB10K.zip``, ``istella-s-letor.tar.gz``).
    data_home : str or path-like, optional
        As for :func:`fetch_letor`.

    Returns
    -------
    Path
        ``<data home>/<name>``.

    Raises
    ------
    DataError
        Unknown ``name``, an archive that cannot be unpacked or lacks the data
        set's files, or ``<data home>/<name>`` already exists.
    DatasetNotFoundError
        ``archive_path`` does not exist.
    ChecksumError
        A size or hash differs from the published one.
    """
    source = _source(name)
    archive = Path(os.fspath(archive_path)).expanduser()
    if not archive.is_file():
        raise DatasetNotFoundError(
            f"archive not found: {archive}.  {_by_hand(source)}."
        )
    home = _home(data_home)
    target = home / source.name
    if target.exists():
        raise DataError(
            f"{target} already exists; remove it first to unpack {archive} again"
        )
    try:
        kind = _archive_kind(archive.name)
    except DataError:
        kind = _archive_kind(source.archive)
    if kind == "rar":
        _rar_tool(archive.name)
    with _workdir(home, source.name) as work:
        sha256 = _check_archive(source, archive, str(archive))
        info = {"archive": archive.name, "url": None, "archive_sha256": sha256,
                "archive_bytes": archive.stat().st_size}
        return _install(source, archive, kind, home, work, info, str(archive))
