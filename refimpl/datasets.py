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
size and CRC-32 of every zip and RAR member, the checksums of a compressed
tar stream read to its end, the sha256 of every extracted file whose hash is
published, which a member nothing else checks must have), the unpacking, and a manifest recording every file's size and
sha256.  Only then is the directory renamed to ``<data home>/<name>`` in one
step (:func:`os.replace`).  A failure at any point removes the temporary
directory, so a checksum mismatch (:class:`ChecksumError`) or an interrupted
transfer (:class:`DownloadError`) leaves nothing behind, and the next call
starts afresh.  A later call finds the directory, compares the files with the
sizes in the manifest, and makes no request (a manifest that is not of its
schema is a :class:`~refimpl.exceptions.DataError` saying to delete the
directory and fetch again).

**What an archive may contain.**  Zip, tar and RAR archives go through one
unpacking loop that admits only regular files and
directories under relative names.  A link (symbolic or hard), a device, a
FIFO, an absolute name, a ``..`` component, a name that appears twice, two
names that differ only in case (one file on macOS and Windows), a name
nested more than 32 levels deep, or a member named like the manifest is
refused with an :class:`UnsafeArchiveError` naming the archive and the
member.  The loop writes every file itself (``O_EXCL | O_NOFOLLOW``, mode
0644) and checks the size and CRC-32 of the copy it wrote against the
archive's header where it has one, never a path built from a member's name; then the unpacked tree is walked once more
(every entry a regular file or directory whose real path lies inside it)
before anything reads it, and again before the final rename.

**A bound on unpacking.**  The bytes written are counted while they stream,
against the data set's ``LetorSource.unpack_limit`` (its unpacked size,
known or estimated, with a margin), else :data:`DEFAULT_UNPACK_LIMIT`; a
header that declares more is refused before anything is written.  Exceeding
it raises :class:`UnpackLimitError`, naming the bound and how to raise it
(``unpack_limit=``, or the environment variable ``REFIMPL_UNPACK_LIMIT``).

**Killed fetches.**  The private directory ``<data home>/.<name>.part-*``
holds a ``flock`` for as long as its fetch runs; the kernel drops it when the
process dies, however it dies.  Each fetch first removes the directories of
``name`` whose lock it can take: those of dead fetches.

**RAR archives** (LETOR 4.0) are read in two steps: the pure-Python
:mod:`rarfile` parses the headers (member names, types, sizes, CRC-32), and a
system tool decompresses every member, in archive order, to a pipe:
``bsdtar`` (libarchive; Debian/Ubuntu package ``libarchive-tools``, listed in
the repository's ``apt.txt`` for Binder; built into macOS), else ``unrar`` or
``7z``.  The stream is cut by the sizes in the headers; so no tool ever
creates a file, whatever the archive says.  Zip archives (MSLR, OHSUMED)
are read with :mod:`zipfile`.  Tar archives are parsed here, not by
:mod:`tarfile` (which reads a long-name or pax header's declared size into
memory first): every header's checksum is checked and every declared size
bounded before it is read, and a gzip, bzip2 or xz stream is read to its end
so that its checksums are verified (see :func:`_verified_stream`).

**Downloads** go over https, or over plain http only when a hash of what
they bring is pinned; a transfer delivering fewer than 64 KiB in a minute
is abandoned (:class:`DownloadError`).

Derived in: book/01_data_pairs_metrics.md#data-pairs-metrics
"""

from __future__ import annotations

import bz2
import contextlib
import logging
import lzma
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from . import _io
from . import _jsonfile as js
from ._layout import fold_files
from .exceptions import DataError, DatasetNotFoundError

__all__ = [
    "DEFAULT_UNPACK_LIMIT",
    "REGISTRY",
    "ChecksumError",
    "DownloadError",
    "LetorSource",
    "UnpackLimitError",
    "UnsafeArchiveError",
    "data_home",
    "fetch_letor",
    "prepare_letor",
]

#: Environment variable naming the data home.
ENV_VAR = "REFIMPL_DATA"
#: Name of the manifest written into every data set directory.
MANIFEST = ".refimpl-letor.json"
# Seconds to wait for the server to connect or send the next chunk; and a
# transfer must deliver at least _MIN_BYTES in every _TIMEOUT seconds (a
# server trickling one byte at a time would otherwise never time out).
_TIMEOUT = 60
_MIN_BYTES = 64 * 2**10
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
    unpack_limit : int or None
        The most bytes its archive may unpack to: its unpacked size (known
        or estimated, see ``size_note``) with a margin; None for
        :data:`DEFAULT_UNPACK_LIMIT`.
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
    unpack_limit: int | None = None
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
        # estimated: 69,623 documents at MQ2008's 615 bytes each, six copies
        # (S1-S5 and five folds) ~ 260 MB
        unpack_limit=2**30,
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
        unpack_limit=256 * 2**20,  # 56 MB unpacked (size_note)
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
            "no hash is published; the sha256 of the five test sets and of "
            "Fold1's validation set are those of the project's reference copy "
            "of OHSUMED (its partitions S1-S5: S5 is Fold1's test set and S4 "
            "its validation set, S1-S4 the test sets of Folds 2-5); zip "
            "members are checked against their CRC-32.  The training sets "
            "have no pinned hash, so the plain-http link is not used: "
            "download the archive by hand and prepare_letor it"
        ),
        files=(
            ("Fold1/testset.txt",
             "526f9158b85fb9b6446f9c87e1ccc428f7e54d639800e108c091cb70706a88e6"),
            ("Fold1/validationset.txt",
             "49975c7319672e4fba82d00c69911b8514752bb2610077a5f432d7efc2fa5fc0"),
            ("Fold2/testset.txt",
             "77db6790a7023ed6d9bd2b9b2fa8528e1d82aa7e896863d3ed844f635870fbe2"),
            ("Fold3/testset.txt",
             "935539d33380570cdee765e38f8c2796cb4c04d01a50e50374e8bc7d45872571"),
            ("Fold4/testset.txt",
             "1d1ff784d9fdc4cd491a0d70fdd4dfb1adada943a0eb2e3954d74187158160da"),
            ("Fold5/testset.txt",
             "49975c7319672e4fba82d00c69911b8514752bb2610077a5f432d7efc2fa5fc0"),
        ),
        size_note="sizes not published",
        # estimated: 16,140 documents at ~700 bytes, five folds, three
        # versions ~ 170 MB
        unpack_limit=2**30,
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
        # estimated: 1,200,192 documents at ~1.2 KB, five copies ~ 7 GB
        unpack_limit=16 * 2**30,
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
        # estimated: 3,771,125 documents at ~1.2 KB, five copies ~ 23 GB
        unpack_limit=48 * 2**30,
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
        # estimated: 3,408,630 documents at ~2 KB (220 features) ~ 7 GB
        unpack_limit=24 * 2**30,
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
    return all(fold_files(base, fold) is not None
               for fold in range(1, source.n_folds + 1))


# What a manifest must hold to be trusted: relative names without "..",
# control characters or backslashes (checked with re.fullmatch by the
# schema, and part by part by _check_manifest), sizes that fit a file system.
_REL_NAME = r"(?!/)(?!(?:[^/]*/)*\.\.?(?:/|$))[^\x00-\x1f\x7f\\]+"
_MANIFEST_SCHEMA = js.record(
    required={
        "name": js.string(),
        "files": js.mapping(
            js.record({"size": js.integer(0, 2**63 - 1),
                       "sha256": js.string(r"[0-9a-f]{64}")}),
            key_pattern=_REL_NAME,
        ),
    },
    optional={
        "archive": js.string(),
        "url": js.nullable(js.string()),
        "archive_sha256": js.nullable(js.string(r"[0-9a-f]{64}")),
        "archive_bytes": js.integer(0, 2**63 - 1),
        "checked": js.list_of(js.string()),
        "extracted_bytes": js.integer(0),
        "created": js.string(),
    },
)


def _damaged(base: Path, why) -> DataError:
    # the manifest is the only record of what was checked: nothing can
    # rebuild it short of unpacking the archive again
    return DataError(
        f"the manifest {MANIFEST} of the fetched data set is damaged: {why}; "
        f"delete {base} and fetch it again (or prepare_letor it again)"
    )


def _check_manifest(base: Path) -> None:
    """Compare the files of a fetched data set with its manifest's sizes.

    The manifest must be a regular file (not a link, a FIFO, a directory);
    every name in it a plain relative name; every file it lists a regular
    file inside ``base`` of the recorded size.
    """
    path = base / MANIFEST
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise _damaged(base, f"{path} is missing") from None
    if not stat.S_ISREG(st.st_mode):
        kind = ("a symbolic link" if stat.S_ISLNK(st.st_mode)
                else _io._kind_of(st.st_mode))
        raise _damaged(base, f"{path} is {kind}, not a regular file")
    try:
        record = js.read_json(path, _MANIFEST_SCHEMA)
    except (js.MalformedFileError, OSError) as exc:
        raise _damaged(base, exc) from None
    real = os.path.realpath(base)
    for rel, info in record["files"].items():
        parts = rel.split("/")
        if (re.fullmatch(_REL_NAME, rel) is None
                or any(p in ("", ".", "..") for p in parts)):
            raise _damaged(base, f"it lists {rel!r}, not a name inside the "
                           "data set")
        path = base.joinpath(*parts)
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        if (st is None or not stat.S_ISREG(st.st_mode)
                or not os.path.realpath(path).startswith(real + os.sep)):
            raise DataError(
                f"{path} is missing from the fetched data set {base} (or is "
                f"not a regular file inside it); delete {base} and fetch it "
                "again"
            )
        size = st.st_size
        if size != info["size"]:
            raise DataError(
                f"{path} has {size} bytes but had {info['size']} when fetched; "
                f"delete {base} and fetch it again"
            )


def _find_existing(source: LetorSource, home: Path, explicit: bool) -> Path | None:
    base = home / source.name
    if os.path.lexists(base) and not base.is_dir():
        raise DataError(
            f"{base} is {_what_is(base)}, not a directory holding "
            f"{source.name}; remove it, then fetch again"
        )
    if os.path.lexists(base / MANIFEST):
        _check_manifest(base)
        return base
    if _unmanaged_complete(base, source):
        # a copy in the data home is made by a fetch, which writes the
        # manifest last: without it, nothing says what was checked
        raise DataError(
            f"{base} holds {source.name}'s files but not the manifest "
            f"{MANIFEST} that fetch_letor writes (the record of the sizes and "
            "sha256 it checked): it was deleted, or the copy was not made by "
            f"a fetch.  Delete {base} and fetch again; or, for a copy of your "
            "own, read it from LETOR_HOME (or load_letor_fold's root=)"
        )
    if os.path.lexists(base):
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


def _what_is(path: Path) -> str:
    """What is at ``path``, in words ("a regular file", "a dangling ...")."""
    try:
        st = os.lstat(path)
    except OSError:
        return "missing"
    if stat.S_ISLNK(st.st_mode):
        if not os.path.exists(path):
            return f"a dangling symbolic link (to {os.readlink(path)!r})"
        return f"a symbolic link to {_io._kind_of(os.stat(path).st_mode)}"
    return _io._kind_of(st.st_mode)


def _ensure_home(home: Path) -> None:
    """Create the data home, or say clearly why it cannot be."""
    if os.path.lexists(home) and not home.is_dir():
        raise DataError(
            f"the data home {home} is {_what_is(home)}, not a directory; "
            f"give another data_home= (or {ENV_VAR}), or remove it"
        )
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(
            f"cannot create the data home {home}: {exc.strerror or exc}"
        ) from None


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


def _check_archive(source: LetorSource, archive: Path, origin: str) -> str:
    """Check size and published hash; return the archive's sha256."""
    size = archive.stat().st_size
    if source.archive_size is not None and size != source.archive_size:
        raise ChecksumError(
            f"{origin}: {archive.name} has {size} bytes, expected "
            f"{source.archive_size} (published by {source.hash_source}); the file "
            "is incomplete or a different release; nothing was kept"
        )
    sha256 = _io.file_hash(archive)
    if source.archive_hash is not None:
        algorithm, _, expected = source.archive_hash.partition(":")
        actual = sha256 if algorithm == "sha256" else _io.file_hash(archive, algorithm)
        if actual.lower() != expected.lower():
            raise ChecksumError(
                f"{origin}: {algorithm} of {archive.name} is {actual}, expected "
                f"{expected} (published by {source.hash_source}); nothing was kept"
            )
    return sha256


# --------------------------------------------------------------------------
# Unpacking
# --------------------------------------------------------------------------

#: Environment variable: the most bytes an archive may unpack to (overrides
#: the data set's own bound; ``unpack_limit=`` overrides both).
UNPACK_LIMIT_VAR = "REFIMPL_UNPACK_LIMIT"
#: Bound on the unpacked bytes of a data set whose row sets none.
DEFAULT_UNPACK_LIMIT = 64 * 2**30
# Far more members than any data set has (MSLR: 15 files); a bound so that
# an archive of millions of empty files is refused too.
_MAX_MEMBERS = 100_000
# Far deeper and longer than any data set's names; bounds so that a member
# nested thousands of levels deep is refused by name, not by a recursion
# error in pathlib or shutil.
_MAX_DEPTH = 32
_MAX_NAME = 4096

# The tools decompress to their standard output, one member after the
# other in archive order; this module splits the stream by the sizes in the
# RAR headers and writes every file itself.  So no tool ever creates a path,
# a link or a device, whatever the archive says.
_RAR_TOOLS = (
    ("bsdtar", lambda tool, archive: [tool, "-x", "-O", "-f", archive]),
    ("unrar", lambda tool, archive: [tool, "p", "-inul", archive]),
    ("7z", lambda tool, archive: [tool, "x", "-so", "-y", archive]),
)

_NO_RAR_TOOL = (
    "unpacking {archive} (a RAR archive) needs a command-line tool that reads "
    "RAR, and none of bsdtar, unrar, 7z was found on PATH.  Install bsdtar: "
    "Debian/Ubuntu `apt-get install libarchive-tools`, Fedora `dnf install "
    "bsdtar`, conda `conda install -c conda-forge libarchive`; macOS ships "
    "it.  Binder installs it from the repository's apt.txt."
)


class UnsafeArchiveError(DataError):
    """An archive member is not a plain file or directory inside the target.

    Raised for links (symbolic or hard), devices, FIFOs, absolute names,
    ``..`` components, duplicate names and names that differ only in case;
    the message names the archive and the member.  Nothing is unpacked.
    """


class UnpackLimitError(DataError):
    """An archive expands to more bytes than its bound allows.

    The message names the bound and how to raise it (``unpack_limit=`` or
    the environment variable ``REFIMPL_UNPACK_LIMIT``).  Nothing is kept.
    """


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


def _parse_size(text: str) -> int:
    """Bytes from ``"1000000"``, ``"500M"``, ``"20G"``, ``"1T"`` (powers of 1024)."""
    text = text.strip()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}.get(text[-1:].upper(), 1)
    number = text[:-1] if scale > 1 else text
    value = float(number) * scale
    if not (value > 0 and value < 2**63):
        raise ValueError(text)
    return int(value)


def _unpack_limit(source: LetorSource, explicit) -> tuple:
    """``(bytes, where the bound comes from)`` for unpacking ``source``."""
    if explicit is not None:
        if isinstance(explicit, bool) or not isinstance(explicit, int) or explicit < 1:
            raise DataError(
                f"unpack_limit must be a positive integer, got {explicit!r}"
            )
        return explicit, "unpack_limit="
    env = os.environ.get(UNPACK_LIMIT_VAR) or None
    if env is not None:
        try:
            return _parse_size(env), f"{UNPACK_LIMIT_VAR}={env}"
        except ValueError:
            raise DataError(
                f"{UNPACK_LIMIT_VAR}={env!r} is not a size (bytes, or a number "
                "followed by K, M, G or T)"
            ) from None
    if source.unpack_limit is not None:
        return source.unpack_limit, f"the bound of {source.name} in REGISTRY"
    return DEFAULT_UNPACK_LIMIT, "the default bound DEFAULT_UNPACK_LIMIT"


@dataclass
class _Member:
    """One archive member, as the single unpacking loop sees it."""

    name: str            # as written in the archive
    kind: str            # "file", "dir", or what else it is ("a symbolic link")
    size: int            # declared size of a file
    crc: int | None      # declared CRC-32, where the format has one
    open: object = None  # () -> a binary file object of the content
    # what checks the content, where no CRC-32 is declared (a compressed
    # stream's checksum); None: nothing, a pinned sha256 must
    verified: str | None = None


def _refuse(origin: str, name, why: str):
    return UnsafeArchiveError(
        f"{origin}: member {name!r} {why}; only regular files and directories "
        "under relative names are unpacked, so nothing was kept"
    )


def _zip_members(archive: Path, origin: str):
    with _io.open_regular(archive) as f, zipfile.ZipFile(f) as zf:
        for info in zf.infolist():
            # the Unix file type sits in the high 16 bits when a Unix zip
            # wrote the member; zipfile would write a link's target as a file
            ftype = stat.S_IFMT(info.external_attr >> 16)
            if ftype not in (0, stat.S_IFREG, stat.S_IFDIR):
                kind = _type_name(ftype)
            elif info.is_dir() or ftype == stat.S_IFDIR:
                kind = "dir" if info.is_dir() else "a directory with content"
            elif info.flag_bits & 0x1:
                kind = "an encrypted file"
            else:
                kind = "file"
            yield _Member(info.filename, kind, info.file_size, info.CRC,
                          lambda info=info: zf.open(info))


def _type_name(ftype: int) -> str:
    return {
        stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a FIFO",
        stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
        stat.S_IFSOCK: "a socket",
    }.get(ftype, f"of unknown type {ftype:o}")


def _rar_kind(m) -> str:
    import rarfile

    if m.needs_password():
        return "an encrypted file"
    if m.file_redir is not None:
        what = {rarfile.RAR5_XREDIR_HARD_LINK: "a hard link",
                rarfile.RAR5_XREDIR_FILE_COPY: "a reference to another member",
                }.get(m.file_redir[0], "a symbolic link or junction")
        return f"{what} (to {m.file_redir[2]!r})"
    if m.is_symlink():
        return "a symbolic link"
    ftype = stat.S_IFMT(m.mode or 0) if m.host_os == rarfile.RAR_OS_UNIX else 0
    if m.is_dir():
        return "dir" if ftype in (0, stat.S_IFDIR) else _type_name(ftype)
    if ftype not in (0, stat.S_IFREG):
        return _type_name(ftype)
    return "file"


def _rar_members(archive: Path, origin: str):
    import rarfile

    try:
        with rarfile.RarFile(archive) as rf:
            infos = rf.infolist()
    except (rarfile.Error, OSError, EOFError) as exc:
        raise DataError(f"{origin}: not a readable RAR archive ({exc})") from exc
    # a RAR5 member may omit its CRC-32 (then m.CRC is None): unchecked,
    # so it must have a pinned sha256 (see _unchecked_files)
    members = [_Member(m.filename, _rar_kind(m), m.file_size, m.CRC) for m in infos]
    # Types and names are refused before any tool runs.
    for m in members:
        if m.kind not in ("file", "dir"):
            yield m
        _member_parts(m.name, origin)
    tool, command = _rar_tool(archive.name)
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(command(tool, str(archive)), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=err)

        def short(m):
            code = proc.wait()
            err.seek(0)
            message = err.read(500).decode(errors="replace").strip()
            raise DataError(
                f"{origin}: {Path(tool).name} stopped (exit {code}) before the end "
                f"of member {m.name!r}: {message or 'no message'}; the archive is "
                "damaged, or the tool cannot read it"
            )

        try:
            for m in members:
                m.open = lambda m=m: _Exact(proc.stdout, m.size, lambda: short(m))
                yield m
            extra = proc.stdout.read(1)
            code = proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        err.seek(0)
        message = err.read(500).decode(errors="replace").strip()
    if code != 0:
        raise DataError(
            f"{origin}: {Path(tool).name} failed (exit {code}): {message}"
        )
    if extra:
        raise DataError(
            f"{origin}: {Path(tool).name} wrote more than the members' sizes in "
            "the RAR headers; the archive is damaged"
        )


class _Exact:
    """The next ``size`` bytes of a pipe, as a file object; ``short()`` is
    called (and raises) if the pipe ends first."""

    def __init__(self, pipe, size, short):
        self.pipe, self.left, self.short = pipe, size, short

    def read(self, n):
        chunk = self.pipe.read(min(n, self.left)) if self.left else b""
        if self.left and not chunk:
            self.short()
        self.left -= len(chunk)
        return chunk

    def close(self):
        pass


# --------------------------------------------------------------------------
# Tar, read without trusting its headers
# --------------------------------------------------------------------------

# tarfile reads a GNU long-name ("L", "K") or pax ("x", "g") header's
# declared size into memory before the member it describes is seen, and its
# stream reader never checks the gzip trailer; so tar archives are parsed
# here, 512-byte header by header, every declared size bounded before a byte
# of it is read, and the compressed stream verified to its end.

_BLOCK = 512
#: The most bytes one long name, long link or pax header may declare
#: (a path is at most 4 KiB on Linux; pax records of a real archive are a
#: few hundred bytes).
_TAR_META_CAP = 64 * 2**10
#: The most bytes of such headers one archive may hold in all.
_TAR_META_TOTAL = 64 * 2**20
#: The most zero bytes after the end-of-archive marker (GNU tar pads the
#: last record to 10 KiB; some writers use larger records).
_TAR_TRAILER = 2**20
# Compressed input fed to a decompressor at a time: deflate expands at most
# 1032:1, so a gzip step yields at most ~16 MiB; bzip2 and xz are asked for
# at most _CHUNK bytes per step.
_FEED = 16 * 2**10
_MAGIC = {"gzip": b"\x1f\x8b", "bzip2": b"BZh", "xz": b"\xfd7zXZ\x00"}

_TAR_KINDS = {
    b"0": "file", b"\x00": "file", b"7": "file", b"5": "dir",
    b"1": "a hard link", b"2": "a symbolic link", b"3": "a character device",
    b"4": "a block device", b"6": "a FIFO",
    b"V": "a GNU volume header (a tape label, not a file)",
    b"D": "a GNU dump directory (a listing for incremental backups)",
    b"M": "a GNU multi-volume continuation (part of a file split across "
          "archives)",
    b"S": "a GNU sparse file",
    b"N": "an old GNU long-name record",
}
_TAR_META = {b"L": "GNU long-name", b"K": "GNU long-link", b"x": "pax",
             b"X": "pax (Solaris)", b"g": "pax global"}


def _corrupt(origin: str, fmt: str, why: str) -> ChecksumError:
    return ChecksumError(
        f"{origin}: the {fmt} stream {why}; the archive is damaged or "
        "incomplete, so nothing was kept"
    )


def _decompressor(fmt: str):
    if fmt == "gzip":
        # 16 + MAX_WBITS: a gzip member, its header CRC (if any), CRC-32 and
        # length (ISIZE) trailer checked by zlib at the member's end
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if fmt == "bzip2":
        return bz2.BZ2Decompressor()  # block and stream CRCs
    return lzma.LZMADecompressor(lzma.FORMAT_XZ)  # the stream's check


def _verified_stream(f, origin: str):
    """The decompressed bytes of the archive file ``f``, in chunks.

    gzip, bzip2 and xz are told by their first bytes; anything else is read
    as plain tar.  A compressed stream is read to its very end, so that its
    checksums (gzip: CRC-32 and length of every member; bzip2: block and
    stream CRCs; xz: the check of every stream, which must not be "none")
    are verified before the generator ends: a damaged stream raises
    :class:`ChecksumError` after its last chunk, never ends quietly.
    Concatenated members (``cat a.gz b.gz``) are read as one stream, as
    ``gzip -d`` does; anything else after the last one is refused.
    The first item yielded is the format (``"tar"`` when plain).
    """
    data = f.read(_FEED)
    fmt = next((k for k, m in _MAGIC.items() if data.startswith(m)), None)
    yield fmt or "tar"
    if fmt is None:
        while data:
            yield data
            data = f.read(_CHUNK)
        return
    while True:  # one member (gzip) or stream (bzip2, xz) per turn
        d = _decompressor(fmt)
        while not d.eof:
            feed = b""
            if fmt == "gzip" or d.needs_input:
                feed, data = data or f.read(_FEED), b""
                if not feed:
                    raise _corrupt(origin, fmt, "ends before its end marker "
                                   "(the file is truncated)")
            try:
                out = (d.decompress(feed) if fmt == "gzip"
                       else d.decompress(feed, _CHUNK))
            except (zlib.error, OSError, EOFError, lzma.LZMAError) as exc:
                raise _corrupt(origin, fmt, f"is corrupt ({exc})") from None
            if out:
                yield out
        if fmt == "xz" and d.check in (lzma.CHECK_NONE, lzma.CHECK_UNKNOWN):
            raise _corrupt(origin, fmt, "has no integrity check (xz --check="
                           "none), so a damaged copy cannot be told from a "
                           "good one")
        data = d.unused_data
        magic = _MAGIC[fmt]
        while len(data) < len(magic) and (more := f.read(_FEED)):
            data += more
        if not data:
            return
        if not data.startswith(magic):
            raise _corrupt(origin, fmt, "is followed by bytes that are not "
                           "another compressed stream")


class _Reader:
    """Exact reads from a generator of chunks."""

    def __init__(self, chunks):
        self.chunks, self.buf, self.pos, self.offset = chunks, b"", 0, 0

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes; fewer only at the end of the stream."""
        out = []
        while n > 0:
            if self.pos >= len(self.buf):
                self.buf, self.pos = next(self.chunks, b""), 0
                if not self.buf:
                    break
            piece = self.buf[self.pos:self.pos + n]
            self.pos += len(piece)
            n -= len(piece)
            out.append(piece)
        data = b"".join(out)
        self.offset += len(data)
        return data

    def skip(self, n: int) -> int:
        """Discard up to ``n`` bytes; return how many were there."""
        done = 0
        while done < n and (chunk := self.read(min(_CHUNK, n - done))):
            done += len(chunk)
        return done


class _Slice:
    """The next ``size`` bytes of a tar stream, as a file object."""

    def __init__(self, reader, size, short):
        self.reader, self.left, self.short = reader, size, short

    def read(self, n):
        if not self.left:
            return b""
        chunk = self.reader.read(min(n, self.left))
        if not chunk:
            self.short()
        self.left -= len(chunk)
        return chunk

    def close(self):
        pass


def _tar_number(field: bytes, what: str, bad) -> int:
    """An octal or base-256 (GNU) number field of a tar header."""
    if field[:1] == b"\x80":
        return int.from_bytes(field[1:], "big")
    if field[:1] == b"\xff":
        raise bad(f"a negative {what} (base-256)")
    text = field.split(b"\x00", 1)[0].strip(b" ")
    if not text:
        return 0
    if not re.fullmatch(rb"[0-7]+", text):
        raise bad(f"a {what} field that is not an octal number ({text[:20]!r})")
    return int(text, 8)


def _tar_text(raw: bytes) -> str:
    return raw.split(b"\x00", 1)[0].decode("utf-8", "surrogateescape")


def _pax_records(data: bytes, bad) -> dict:
    """The ``key=value`` records of a pax header (POSIX ``"%d %s=%s\\n"``)."""
    records, pos = {}, 0
    while pos < len(data):
        if not data[pos:].strip(b"\x00"):
            break  # zero padding after the last record
        m = re.match(rb"([0-9]{1,6}) ", data[pos:pos + 8])
        length = int(m.group(1)) if m else 0
        record = data[pos:pos + length]
        if (m is None or length <= len(m.group(0)) or len(record) != length
                or not record.endswith(b"\n") or b"=" not in record):
            raise bad(f"a malformed pax record at byte {pos}")
        key, _, value = record[len(m.group(0)):-1].partition(b"=")
        records[key.decode("utf-8", "surrogateescape")] = value.decode(
            "utf-8", "surrogateescape")
        pos += length
    return records


def _tar_members(archive: Path, origin: str):
    with _io.open_regular(archive) as f:
        chunks = _verified_stream(f, origin)
        fmt = next(chunks)
        verified = None if fmt == "tar" else f"the {fmt} stream's checksum"
        yield from _tar_entries(_Reader(chunks), origin, verified)


def _tar_entries(reader: _Reader, origin: str, verified):
    """The members of a tar stream; every header checked before it is used."""
    meta_total = headers = 0
    pending = {}  # what L, K and x headers say about the next member
    while True:
        at = reader.offset
        block = reader.read(_BLOCK)
        if len(block) < _BLOCK:
            raise DataError(
                f"{origin}: the tar stream ends at byte {reader.offset} without "
                "its end-of-archive marker (the archive is truncated); nothing "
                "was kept")
        if not block.strip(b"\x00"):
            if pending:
                raise DataError(f"{origin}: the tar stream ends after an "
                                "extended header, before its member")
            _tar_trailer(reader, origin)
            return
        headers += 1
        if headers > 4 * _MAX_MEMBERS:
            raise UnpackLimitError(
                f"{origin}: more than {4 * _MAX_MEMBERS} tar headers; no data "
                "set has that many, so nothing was kept")
        name = _tar_text(block[:100])

        def bad(why, name=name, at=at):
            return UnsafeArchiveError(
                f"{origin}: the tar header of member {name!r} (at byte {at} of "
                f"the unpacked stream) has {why}; nothing was kept")

        stored = _tar_number(block[148:156], "checksum", bad)
        unsigned = sum(block[:148]) + 8 * 32 + sum(block[156:])
        signed = unsigned - 256 * sum(b > 127 for b in block[:148] + block[156:])
        if stored not in (unsigned, signed):
            raise bad(f"a wrong checksum ({stored}, its bytes sum to "
                      f"{unsigned}): it is damaged or not a tar header")
        typ = block[156:157]
        size = _tar_number(block[124:136], "size", bad)
        if typ in _TAR_META:
            if size > _TAR_META_CAP:
                raise UnsafeArchiveError(
                    f"{origin}: member {name!r} is a {_TAR_META[typ]} header "
                    f"that declares {size} bytes; at most {_TAR_META_CAP} are "
                    "read (a name or a set of pax records is never that long), "
                    "so nothing was kept")
            meta_total += size
            if meta_total > _TAR_META_TOTAL:
                raise UnsafeArchiveError(
                    f"{origin}: more than {_TAR_META_TOTAL} bytes of extended "
                    f"headers (at member {name!r}); nothing was kept")
            data = reader.read(size)
            if len(data) < size or reader.skip(-size % _BLOCK) < -size % _BLOCK:
                raise DataError(f"{origin}: the tar stream ends inside the "
                                f"extended header {name!r}")
            if typ == b"L":
                pending["path"] = _tar_text(data)
            elif typ == b"K":
                pending["linkpath"] = _tar_text(data)
            else:
                records = _pax_records(data, bad)
                if typ == b"g":
                    # applied to every later member by other readers:
                    # refused where it would change a name, type or size
                    if set(records) & {"path", "linkpath", "size"} or any(
                            k.startswith("GNU.sparse") for k in records):
                        raise bad("a pax global header that sets "
                                  f"{sorted(records)} for every later member")
                else:
                    pending.update(records)
            continue
        if block[257:263] == b"ustar\x00" and block[345:500].strip(b"\x00"):
            name = _tar_text(block[345:500]) + "/" + name  # POSIX prefix
        linkname = _tar_text(block[157:257])
        name = pending.get("path", name)
        linkname = pending.get("linkpath", linkname)
        if "size" in pending:
            if not re.fullmatch(r"[0-9]{1,20}", pending["size"]):
                raise bad(f"a pax size {pending['size'][:30]!r}")
            size = int(pending["size"])
        sparse = any(k.startswith("GNU.sparse") for k in pending)
        pending = {}
        kind = _TAR_KINDS.get(typ, f"of unknown tar type {typ!r}")
        if typ == b"\x00" and name.endswith("/"):
            kind = "dir"  # old tar: a directory is a file named "x/"
        if sparse:
            kind = "a GNU sparse file"
        if kind == "dir" and size:
            kind = f"a directory header that declares {size} bytes of content"
        elif kind in ("a hard link", "a symbolic link"):
            kind = f"{kind} (to {linkname!r})"
        if kind != "file":
            yield _Member(name, kind, 0, None)
            continue

        def short(name=name):
            raise DataError(f"{origin}: the tar stream ends inside member "
                            f"{name!r} (the archive is truncated); nothing was "
                            "kept")

        content = _Slice(reader, size, short)
        yield _Member(name, kind, size, None, lambda c=content: c, verified)
        # whatever the loop did not read, and the padding to the next header
        left = content.left + -size % _BLOCK
        if reader.skip(left) < left:
            short()


def _tar_trailer(reader: _Reader, origin: str) -> None:
    """After the end-of-archive block: zeros only, to the end of the stream
    (which also completes the check of a compressed stream)."""
    total = 0
    while chunk := reader.read(_CHUNK):
        total += len(chunk)
        if chunk.strip(b"\x00"):
            raise UnsafeArchiveError(
                f"{origin}: data follows the tar end-of-archive marker; what "
                "it holds would be skipped unseen, so nothing was kept")
        if total > _TAR_TRAILER:
            raise UnsafeArchiveError(
                f"{origin}: more than {_TAR_TRAILER} bytes of padding follow "
                "the tar end-of-archive marker; nothing was kept")


def _member_parts(name: str, origin: str) -> list:
    """The path components of a member name, or an UnsafeArchiveError."""
    text = name.replace("\\", "/")
    if "\x00" in text:
        raise _refuse(origin, name, "has a NUL character in its name")
    if len(text) > _MAX_NAME:
        raise _refuse(origin, name[:200] + "...", f"has a name of {len(text)} "
                      f"characters (at most {_MAX_NAME})")
    if text.startswith("/") or re.match(r"[A-Za-z]:", text):
        raise _refuse(origin, name, "has an absolute name")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise _refuse(origin, name, "has a '..' component")
    if len(parts) > _MAX_DEPTH:
        raise _refuse(origin, name, f"is nested {len(parts)} levels deep (at "
                      f"most {_MAX_DEPTH}; no data set goes deeper than 4)")
    if any(_fold([p]) == _fold([MANIFEST]) for p in parts):
        # the manifest records what was checked: it is written by refimpl
        # after the checks, never taken from an archive
        raise _refuse(origin, name, f"bears the name of refimpl's manifest "
                      f"{MANIFEST}")
    return parts


def _unpack(archive: Path, dest: Path, kind: str, origin: str, limit: tuple) -> list:
    """Unpack ``archive`` into the empty directory ``dest``: the one path for all
    formats.

    Only regular files and directories under normalised relative names are
    written, each file by this function (``O_EXCL | O_NOFOLLOW``, mode 0644)
    while counting its bytes against ``limit`` and its CRC-32 against the
    header; every other member is refused (:class:`UnsafeArchiveError`).

    Returns the paths written whose content nothing checked (members of a
    plain tar, RAR5 members without a CRC-32): each must have a pinned
    sha256 if it is installed.
    """
    bound, where = limit
    members = {"zip": _zip_members, "tar": _tar_members, "rar": _rar_members}[kind]
    seen = {}  # folded path -> [spelling, is_dir, declared]
    total = count = 0
    unchecked = []
    try:
        for m in members(archive, origin):
            count += 1
            if count > _MAX_MEMBERS:
                raise UnpackLimitError(
                    f"{origin}: more than {_MAX_MEMBERS} members; no data set "
                    "has that many, so nothing was kept"
                )
            if m.kind not in ("file", "dir"):
                raise _refuse(origin, m.name, f"is {m.kind}")
            parts = _member_parts(m.name, origin)
            if not parts:
                if m.kind == "dir":
                    continue  # "./", the archive's own root
                raise _refuse(origin, m.name, "has an empty name")
            _claim(seen, parts, m, origin)
            path = dest.joinpath(*parts)
            if m.kind == "dir":
                path.mkdir(parents=True, exist_ok=True)
                continue
            if total + m.size > bound:
                raise _over(origin, m.name, total + m.size, bound, where)
            path.parent.mkdir(parents=True, exist_ok=True)
            total = _write_member(m, path, origin, total, bound, where)
            if m.crc is None and m.verified is None:
                unchecked.append(path)
    except (zipfile.BadZipFile, EOFError, zlib.error,
            RuntimeError, NotImplementedError) as exc:
        raise DataError(
            f"{origin}: cannot unpack the {kind} archive ({exc}); if it was "
            "downloaded, the link may now serve something else"
        ) from exc
    except OSError as exc:  # gzip.BadGzipFile is one; so is a full disk
        raise DataError(
            f"{origin}: cannot unpack the {kind} archive ({exc})"
        ) from exc
    return unchecked


def _fold(parts) -> str:
    return unicodedata.normalize("NFC", "/".join(parts)).casefold()


def _claim(seen: dict, parts: list, m: _Member, origin: str) -> None:
    """Record a member's path; refuse duplicates and case-folding collisions."""
    for i in range(1, len(parts) + 1):
        spelling = "/".join(parts[:i])
        last = i == len(parts)
        is_dir = not last or m.kind == "dir"
        old = seen.get(_fold(parts[:i]))
        if old is None:
            seen[_fold(parts[:i])] = [spelling, is_dir, last]
            continue
        if old[0] != spelling:
            raise _refuse(origin, m.name, f"collides with {old[0]!r} when case "
                          "is ignored (the two would be one file on macOS "
                          "and Windows)")
        if old[1] != is_dir:
            raise _refuse(origin, m.name, f"uses {spelling!r} both as a file "
                          "and as a directory")
        if last and (not is_dir or old[2]):
            raise _refuse(origin, m.name, "appears twice in the archive (the "
                          "second copy would silently replace the first)")
        if last:
            old[2] = True


def _over(origin, name, size, bound, where) -> UnpackLimitError:
    return UnpackLimitError(
        f"{origin}: unpacking member {name!r} would bring the unpacked size to "
        f"{size} bytes or more, above the bound of {bound} bytes ({where}); "
        "nothing was kept.  If the archive is genuine, raise the bound: "
        f"fetch_letor(..., unpack_limit=<bytes>) or prepare_letor(..., "
        f"unpack_limit=<bytes>), or the environment variable "
        f"{UNPACK_LIMIT_VAR} (e.g. {UNPACK_LIMIT_VAR}=100G)"
    )


def _write_member(m: _Member, path: Path, origin, total, bound, where) -> int:
    """Copy one file member to ``path``; returns the new running total."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                 | getattr(os, "O_NOFOLLOW", 0), 0o644)
    crc = size = 0
    with os.fdopen(fd, "wb") as out:
        src = m.open()
        try:
            while chunk := src.read(_CHUNK):
                size += len(chunk)
                if total + size > bound:
                    raise _over(origin, m.name, total + size, bound, where)
                crc = zlib.crc32(chunk, crc)
                out.write(chunk)
        finally:
            src.close()
    # the copy just written is what is checked, never a path built from the name
    if size != m.size:
        raise ChecksumError(
            f"{origin}: member {m.name} unpacked to {size} bytes, expected "
            f"{m.size} (archive header); nothing was kept"
        )
    if m.crc is not None and crc != m.crc:
        raise ChecksumError(
            f"{origin}: CRC-32 of member {m.name} is {crc:08x}, expected "
            f"{m.crc:08x} (archive header); nothing was kept"
        )
    return total + size


def _check_tree(root: Path, origin: str) -> None:
    """Every entry under ``root`` is a regular file or directory inside it."""
    real = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            inside = os.path.realpath(p).startswith(real + os.sep)
            plain = stat.S_ISDIR(st.st_mode) or (
                stat.S_ISREG(st.st_mode) and st.st_nlink == 1)
            if not (plain and inside):
                raise UnsafeArchiveError(
                    f"{origin}: the unpacked {os.path.relpath(p, root)} is not a "
                    "regular file or directory inside the data set; nothing was "
                    "kept"
                )


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


def _installed_names(paths: list, root: Path, source: LetorSource) -> list:
    """Where the unpacked ``paths`` land in the data set (``_arrange``), as
    names relative to it; paths left behind (outside ``root``) are dropped."""
    names = []
    for p in paths:
        try:
            rel = p.relative_to(root).as_posix()
        except ValueError:
            continue  # not installed
        if source.layout == "single":
            if rel not in ("train.txt", "vali.txt", "test.txt"):
                continue
            rel = f"Fold1/{rel}"
        names.append(rel)
    return names


def _verify_and_record(final: Path, source: LetorSource, archive_info: dict,
                       unchecked: list = (), kind: str = "") -> None:
    """Check published sha256s, then write the manifest (the last step).

    ``unchecked``: installed files whose content no checksum of the archive
    covers; each must have a pinned sha256 in ``source.files``.
    """
    pinned = dict(source.files)
    for rel in sorted(unchecked):
        if rel not in pinned:
            raise ChecksumError(
                f"{archive_info['archive']}: member {rel} has no checksum in "
                f"the {kind} archive (a plain tar, or a RAR5 member without "
                f"CRC-32) and REGISTRY pins no sha256 for it, so a damaged "
                "copy could not be told from a good one; nothing was kept.  "
                "Use the archive as distributed (compressed), or pin its files"
            )
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
        sha256 = _io.file_hash(path)
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
    # durable: the manifest is what marks the copy complete
    _io.atomic_write_json(final / MANIFEST, record, durable=True, indent=1)


_PART = ".{name}.part-"


def _lock(directory: Path):
    """An open descriptor of ``directory`` holding an exclusive lock on it, or
    None where the platform has no ``flock``."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    # O_NONBLOCK | O_DIRECTORY: a FIFO planted under the name is refused at
    # once instead of blocking the open forever
    fd = _io.open_directory(directory)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise
    return fd


def _remove_stale(home: Path, name: str) -> list:
    """Remove the partial work directories of dead fetches of ``name``.

    A live fetch holds a lock on its directory from before the directory gets
    its ``.NAME.part-`` name (it is locked under a ``.init-`` name, then
    renamed); the kernel drops the lock when the process dies, however it
    dies (SIGKILL included).  So a ``.part-`` directory whose lock can be
    taken belongs to no live process.
    """
    removed = []
    # an ".init-" directory is locked microseconds after it is made: one
    # unlocked for a minute was left by a process killed in between
    young = time.time() - 60
    candidates = list(home.glob(_PART.format(name=name) + "*")) + [
        p for p in home.glob(f".{name}.init-*") if _mtime(p) < young]
    for p in candidates:
        try:
            if not stat.S_ISDIR(os.lstat(p).st_mode):
                continue  # not a fetch's directory (a file, link, FIFO): left alone
            fd = _lock(p)
        except OSError:
            continue  # locked: a live fetch (or gone meanwhile)
        try:
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
        finally:
            if fd is not None:
                os.close(fd)
    return removed


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return float("inf")


@contextlib.contextmanager
def _workdir(home: Path, name: str):
    """A private, locked directory inside ``home``, removed whatever happens.

    Partial directories left by killed fetches are removed first (see
    :func:`_remove_stale`).
    """
    _ensure_home(home)
    _remove_stale(home, name)
    init = Path(tempfile.mkdtemp(prefix=f".{name}.init-", dir=home))
    try:
        fd = _lock(init)
        work = init.with_name(
            _PART.format(name=name) + f"{os.getpid()}-{init.name.rsplit('-', 1)[1]}"
        )
        os.rename(init, work)
    except BaseException:
        shutil.rmtree(init, ignore_errors=True)
        raise
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if fd is not None:
            os.close(fd)


def _install(source: LetorSource, archive: Path, kind: str, home: Path,
             work: Path, archive_info: dict, origin: str, limit: tuple) -> Path:
    """Unpack, check and move ``archive`` into ``home/<name>``, atomically."""
    extracted = work / "extracted"
    extracted.mkdir()
    unchecked = _unpack(archive, extracted, kind, origin, limit)
    _check_tree(extracted, origin)
    root = _locate_root(extracted, source, origin)
    final = work / "final"
    _arrange(root, final, source)
    # a pinned archive hash (checked by _check_archive) covers every member
    installed = ([] if source.archive_hash is not None
                 else _installed_names(unchecked, root, source))
    _verify_and_record(final, source, archive_info, installed, kind)
    _check_tree(final, origin)
    target = home / source.name
    try:
        os.replace(final, target)
    except OSError:
        # Another process finished the same data set first: keep its copy.
        if os.path.lexists(target / MANIFEST):
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


class _Stalled(OSError):
    """A transfer that delivers too little for too long."""


def _downloader(progress: bool):
    """A pooch downloader: streams ``url`` to ``output_file``, refusing a
    transfer that stalls (fewer than :data:`_MIN_BYTES` in any
    :data:`_TIMEOUT` seconds), not only one that goes silent."""
    import requests

    def download(url, output_file, pooch=None, check_only=False):
        with requests.get(url, stream=True, timeout=_TIMEOUT) as response:
            response.raise_for_status()
            total = int(response.headers.get("content-length") or 0) or None
            bar = None
            if progress:
                from tqdm.auto import tqdm

                bar = tqdm(total=total, unit="B", unit_scale=True, ncols=79,
                           file=sys.stderr)
            opened = not hasattr(output_file, "write")
            out = open(output_file, "w+b") if opened else output_file
            try:
                start, got = time.monotonic(), 0
                # read1: what the socket has (at most one read), so that a
                # trickle returns to this loop instead of filling a buffer
                while chunk := response.raw.read1(_CHUNK, decode_content=True):
                    out.write(chunk)
                    got += len(chunk)
                    if bar is not None:
                        bar.update(len(chunk))
                    if time.monotonic() - start >= _TIMEOUT:
                        if got < _MIN_BYTES:
                            raise _Stalled(
                                f"the transfer stalled: {got} bytes in the "
                                f"last {_TIMEOUT} s (at least {_MIN_BYTES} "
                                "are expected); the server is too slow or "
                                "stuck")
                        start, got = time.monotonic(), 0
            finally:
                if opened:
                    out.close()
                if bar is not None:
                    bar.close()

    return download


def _unpinned_http(source: LetorSource, url: str) -> str | None:
    """Why ``url`` may not be used (plain http, nothing pinned), or None.

    Over plain http what arrives can be changed on the way; only a pinned
    hash (of the archive, or of every file the loader reads) tells."""
    if not url.lower().startswith("http://") or source.archive_hash is not None:
        return None
    missing = sorted(set(source.split_files()) - set(dict(source.files)))
    if not missing:
        return None
    return (
        f"plain http, and REGISTRY pins no hash of {source.archive} or of "
        f"every file it installs ({missing[0]} has none), so what the server "
        "sends could not be told from a tampered copy; not downloaded"
    )


def _download(source: LetorSource, dest_dir: Path, progress: bool) -> tuple:
    """Download the archive from the first source that answers."""
    import pooch
    import requests
    import urllib3

    errors = []
    for url in source.urls:
        why = _unpinned_http(source, url)
        if why is not None:
            errors.append(f"  {url}: {why}")
            continue
        if progress:
            print(f"Downloading {source.name} from {url}", file=sys.stderr)
        try:
            with _quiet_pooch():
                path = pooch.retrieve(
                    url, known_hash=None, fname=source.archive, path=dest_dir,
                    downloader=_downloader(progress),
                )
            return Path(path), url
        except (requests.exceptions.RequestException,
                urllib3.exceptions.HTTPError, OSError) as exc:
            errors.append(f"  {url}: {type(exc).__name__}: {exc}")
    raise DownloadError(
        f"could not download {source.name}; nothing was kept.  Tried:\n"
        + "\n".join(errors)
        + f"\nTry again later, or: {_by_hand(source)}"
    )


def fetch_letor(name, *, data_home=None, download=True, progress=True,
                unpack_limit=None) -> Path:
    """Download, check and unpack a LETOR data set; return its directory.

    A data set already present is returned at once, without any request: a
    fetched copy (checked against the file sizes in its manifest) or, unless
    ``data_home`` is given, a complete copy under ``LETOR_HOME``.  Otherwise
    the archive is downloaded from the first source in :data:`REGISTRY` that
    answers (a plain-http link only if a hash of what it brings is pinned),
    checked (size and hash where published), unpacked, its files checked
    (sha256 where published; CRC-32 of zip and RAR members; the checksums of
    a compressed tar stream; a member nothing checks must have a pinned
    sha256), and moved into
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
    unpack_limit : int, optional
        The most bytes the archive may unpack to; default the environment
        variable ``REFIMPL_UNPACK_LIMIT`` (bytes, or e.g. ``100G``), else
        the data set's ``unpack_limit`` in :data:`REGISTRY`, else
        :data:`DEFAULT_UNPACK_LIMIT`.

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
        No source could be downloaded (every URL and error is listed: a
        server that stops answering or delivers fewer than 64 KiB in a
        minute, a plain-http link without a pinned hash).
    ChecksumError
        A size or hash differs from the published one; the message names the
        file, the expected and the actual value.
    UnsafeArchiveError
        The archive holds a link, a device, an absolute or ``..`` name, a
        duplicate name, two names that differ only in case, a name nested
        too deep or named like the manifest, or a tar header that is
        damaged or declares an extended header over 64 KiB.
    UnpackLimitError
        The archive expands beyond ``unpack_limit``.

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
    limit = _unpack_limit(source, unpack_limit)
    if kind == "rar":
        _rar_tool(source.archive)  # fail before a long download, not after
    with _workdir(home, source.name) as work:
        archive, url = _download(source, work / "download", progress)
        sha256 = _check_archive(source, archive, url)
        info = {"archive": source.archive, "url": url, "archive_sha256": sha256,
                "archive_bytes": archive.stat().st_size}
        return _install(source, archive, kind, home, work, info, url, limit)


def prepare_letor(name, archive_path, *, data_home=None, unpack_limit=None) -> Path:
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
    unpack_limit : int, optional
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
    UnsafeArchiveError, UnpackLimitError
        As for :func:`fetch_letor`.
    """
    source = _source(name)
    archive = Path(os.fspath(archive_path)).expanduser()
    try:
        _io.open_regular(archive).close()  # a FIFO is refused, never read
    except FileNotFoundError:
        raise DatasetNotFoundError(
            f"archive not found: {archive}.  {_by_hand(source)}."
        ) from None
    home = _home(data_home)
    target = home / source.name
    if os.path.lexists(target):
        what = "" if target.is_dir() else f" (as {_what_is(target)})"
        raise DataError(
            f"{target} already exists{what}; remove it first to unpack "
            f"{archive} again"
        )
    try:
        kind = _archive_kind(archive.name)
    except DataError:
        kind = _archive_kind(source.archive)
    limit = _unpack_limit(source, unpack_limit)
    if kind == "rar":
        _rar_tool(archive.name)
    with _workdir(home, source.name) as work:
        sha256 = _check_archive(source, archive, str(archive))
        info = {"archive": archive.name, "url": None, "archive_sha256": sha256,
                "archive_bytes": archive.stat().st_size}
        return _install(source, archive, kind, home, work, info, str(archive),
                        limit)
