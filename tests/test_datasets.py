"""refimpl.datasets: fetching, checking and unpacking LETOR archives.

No test touches the internet: fixture archives are built here and served by
an HTTP server on 127.0.0.1 (a random port), which counts the requests it
answers and can cut a transfer short.  The registry rows are pointed at it.
"""

import dataclasses
import gzip
import hashlib
import http.server
import io
import re
import shutil
import socket
import struct
import tarfile
import threading
import zipfile
import zlib
from pathlib import Path

import pytest

from refimpl import datasets
from refimpl.data import load_letor_fold
from refimpl.datasets import (
    REGISTRY,
    ChecksumError,
    DownloadError,
    fetch_letor,
    prepare_letor,
)
from refimpl.exceptions import DataError, DatasetNotFoundError

HEX64 = re.compile(r"^[0-9a-f]{64}$")


# --------------------------------------------------------------------------
# Fixture data
# --------------------------------------------------------------------------


def partition(k: int, n_features: int = 3) -> bytes:
    """A small LETOR partition: 2 queries of 3 documents, every feature set."""
    lines = []
    for q in range(2):
        for d in range(3):
            feats = " ".join(
                f"{j}:{(k + q + d + j) % 7 / 7:.4f}" for j in range(1, n_features + 1)
            )
            lines.append(f"{(d + k) % 3} qid:{10 * k + q} {feats} #doc{k}-{q}-{d}")
    return ("\n".join(lines) + "\n").encode()


PARTS = {k: partition(k) for k in range(1, 6)}


def fold_files(names=("train.txt", "vali.txt", "test.txt")) -> dict:
    """``FoldK/<split>`` -> bytes, built from the partitions as LETOR 4.0 is."""
    files = {}
    for k in range(1, 6):
        order = [(k - 1 + j) % 5 + 1 for j in range(5)]
        files[f"Fold{k}/{names[0]}"] = b"".join(PARTS[i] for i in order[:3])
        files[f"Fold{k}/{names[1]}"] = PARTS[order[3]]
        files[f"Fold{k}/{names[2]}"] = PARTS[order[4]]
    return files


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_zip(files: dict, prefix: str = "") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(prefix + name, data)
    return buf.getvalue()


def make_targz(files: dict, prefix: str = "") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(prefix + name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _rar_block(htype: int, flags: int, body: bytes) -> bytes:
    tail = struct.pack("<BHH", htype, flags, 7 + len(body)) + body
    return struct.pack("<H", zlib.crc32(tail) & 0xFFFF) + tail


def make_rar(files: dict) -> bytes:
    """A RAR 4.x archive of stored (uncompressed) members.

    No RAR writer is installable offline, and the format of stored members is
    simple: a marker, an archive header, one file header (sizes, CRC-32,
    method 0x30 = store, Unix host) plus the raw bytes per member, an end
    block.  bsdtar and rarfile both read it.
    """
    out = [b"Rar!\x1a\x07\x00", _rar_block(0x73, 0, bytes(6))]
    for name, data in files.items():
        raw = name.encode()
        body = struct.pack(
            "<IIBIIBBHI", len(data), len(data), 3, zlib.crc32(data),
            0x21, 20, 0x30, len(raw), 0o100644,
        ) + raw
        out += [_rar_block(0x74, 0x8000, body), data]
    out.append(_rar_block(0x7B, 0x4000, b""))
    return b"".join(out)


# --------------------------------------------------------------------------
# A local HTTP server
# --------------------------------------------------------------------------


class Server:
    """Serves ``routes`` (path -> bytes); counts requests; can cut transfers.

    With ``stall`` a list, a transfer sends half the body, appends its path
    to ``stall`` and waits for :meth:`release` (a download in progress)
    before sending the rest.
    """

    MAX_REQUESTS = 50

    def __init__(self):
        self.routes = {}
        self.requests = []
        self.cut_next = set()  # paths whose next transfer stops half-way
        self.stall = None
        self._released = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            timeout = 10

            def do_GET(self):
                outer.requests.append(self.path)
                body = outer.routes.get(self.path)
                if body is None or len(outer.requests) > outer.MAX_REQUESTS:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if outer.stall is not None:
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    outer.stall.append(self.path)
                    outer._released.wait(30)
                    try:  # the client may have been killed meanwhile
                        self.wfile.write(body[len(body) // 2:])
                    except OSError:
                        self.close_connection = True
                    return
                if self.path in outer.cut_next:
                    outer.cut_next.discard(self.path)
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
            daemon=True,
        )
        self.thread.start()

    def release(self):
        self._released.set()

    def stop(self):
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setattr(datasets, "_TIMEOUT", 10)
    s = Server()
    yield s
    s.stop()


@pytest.fixture
def unpinned_http_ok(monkeypatch):
    """Let the test server's plain-http links be used without a pinned hash.

    A plain-http link is refused unless REGISTRY pins a hash of what it
    serves (``test_archive_registry.py`` checks that); the tests using this
    fixture check what happens after the download."""
    monkeypatch.setattr(datasets, "_unpinned_http", lambda source, url: None)


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    """No LETOR_HOME, REFIMPL_DATA, user cache or outside host leaks in."""
    monkeypatch.delenv("LETOR_HOME", raising=False)
    monkeypatch.delenv("REFIMPL_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    resolve = socket.getaddrinfo

    def local_only(host, *args, **kwargs):
        if host not in ("127.0.0.1", "localhost"):
            raise AssertionError(f"a test tried to reach {host}")
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", local_only)


@pytest.fixture
def mslr(server, monkeypatch):
    """An MSLR-shaped zip served at /MSLR-WEB10K.zip with its published hashes."""
    files = fold_files()
    archive = make_zip(files)
    server.routes["/MSLR-WEB10K.zip"] = archive
    row = dataclasses.replace(
        REGISTRY["MSLR-WEB10K"],
        urls=(server.url + "/MSLR-WEB10K.zip",),
        archive_size=len(archive),
        archive_hash="sha256:" + sha256(archive),
        files=tuple(sorted((k, sha256(v)) for k, v in files.items())),
    )
    monkeypatch.setitem(REGISTRY, "MSLR-WEB10K", row)
    return row, archive, files


def assert_loads(path: Path, files: dict, n_folds: int = 5):
    """load_letor_fold reads every fold of a fetched directory, as written."""
    for k in range(1, n_folds + 1):
        fold = load_letor_fold(path.name, k, root=path.parent)
        lines = files[f"Fold{k}/train.txt"].count(b"\n")
        assert fold.train.X.shape == (lines, 3)
        assert fold.vali.X.shape[0] == files[f"Fold{k}/vali.txt"].count(b"\n")
        assert fold.test.X.shape[0] == files[f"Fold{k}/test.txt"].count(b"\n")


def entries(directory: Path) -> list:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


# --------------------------------------------------------------------------
# Downloads
# --------------------------------------------------------------------------


def test_fresh_download_then_cached_without_request(mslr, server, tmp_path):
    _row, _, files = mslr
    home = tmp_path / "home"
    path = fetch_letor("MSLR-WEB10K", data_home=home, progress=False)
    assert path == home / "MSLR-WEB10K"
    assert server.requests == ["/MSLR-WEB10K.zip"]
    assert_loads(path, files)
    for rel, data in files.items():
        assert (path / rel).read_bytes() == data
    # only the data set is left in the data home: no archive, no temp dir
    assert entries(home) == ["MSLR-WEB10K"]

    again = fetch_letor("mslr-web10k", data_home=home, progress=False)
    assert again == path
    assert len(server.requests) == 1


def test_progress_bar_does_not_break_the_download(mslr, tmp_path, capsys):
    path = fetch_letor("MSLR-WEB10K", data_home=tmp_path / "h", progress=True)
    assert (path / "Fold1" / "train.txt").is_file()
    err = capsys.readouterr().err
    assert "Downloading MSLR-WEB10K" in err


def test_corrupted_archive_is_an_error_and_leaves_nothing(mslr, server, tmp_path):
    row, archive, _ = mslr
    bad = bytearray(archive)
    bad[len(bad) // 2] ^= 0xFF  # same size, different bytes
    server.routes["/MSLR-WEB10K.zip"] = bytes(bad)
    home = tmp_path / "home"
    with pytest.raises(ChecksumError) as info:
        fetch_letor("MSLR-WEB10K", data_home=home, progress=False)
    message = str(info.value)
    assert "MSLR-WEB10K.zip" in message
    assert row.archive_hash.split(":")[1] in message
    assert sha256(bytes(bad)) in message
    assert entries(home) == []


def test_corrupted_extracted_file_names_file_and_hashes(server, monkeypatch, tmp_path):
    files = fold_files()
    wrong = dict(files)
    wrong["Fold2/test.txt"] = files["Fold2/test.txt"].replace(b"qid:", b"qid: ", 1)
    archive = make_zip(wrong)
    server.routes["/x.zip"] = archive
    row = dataclasses.replace(
        REGISTRY["MSLR-WEB10K"], urls=(server.url + "/x.zip",),
        archive_size=None, archive_hash=None,
        files=tuple(sorted((k, sha256(v)) for k, v in files.items())),
    )
    monkeypatch.setitem(REGISTRY, "MSLR-WEB10K", row)
    home = tmp_path / "home"
    with pytest.raises(ChecksumError) as info:
        fetch_letor("MSLR-WEB10K", data_home=home, progress=False)
    message = str(info.value)
    assert "Fold2/test.txt" in message
    assert sha256(files["Fold2/test.txt"]) in message
    assert sha256(wrong["Fold2/test.txt"]) in message
    assert entries(home) == []


def test_size_mismatch_is_an_error(mslr, server, tmp_path):
    _row, archive, _ = mslr
    server.routes["/MSLR-WEB10K.zip"] = archive + b"extra"
    with pytest.raises(ChecksumError, match=f"expected {len(archive)}"):
        fetch_letor("MSLR-WEB10K", data_home=tmp_path / "h", progress=False)
    assert entries(tmp_path / "h") == []


def test_interrupted_transfer_keeps_nothing_and_a_retry_succeeds(
    mslr, server, tmp_path
):
    _, _, files = mslr
    server.cut_next.add("/MSLR-WEB10K.zip")
    home = tmp_path / "home"
    with pytest.raises(DownloadError) as info:
        fetch_letor("MSLR-WEB10K", data_home=home, progress=False)
    assert "/MSLR-WEB10K.zip" in str(info.value)
    assert "nothing was kept" in str(info.value)
    assert entries(home) == []
    path = fetch_letor("MSLR-WEB10K", data_home=home, progress=False)
    assert len(server.requests) == 2
    assert_loads(path, files)


def test_dead_link_lists_every_url_and_the_manual_route(server, monkeypatch, tmp_path,
                                                       unpinned_http_ok):
    row = dataclasses.replace(
        REGISTRY["OHSUMED"],
        urls=(server.url + "/gone.zip", server.url + "/also-gone.zip"),
    )
    monkeypatch.setitem(REGISTRY, "OHSUMED", row)
    with pytest.raises(DownloadError) as info:
        fetch_letor("OHSUMED", data_home=tmp_path / "h", progress=False)
    message = str(info.value)
    assert "/gone.zip" in message and "/also-gone.zip" in message
    assert "prepare_letor('OHSUMED'" in message and row.homepage in message
    assert server.requests == ["/gone.zip", "/also-gone.zip"]
    assert entries(tmp_path / "h") == []


def test_link_serving_a_web_page_is_an_unpacking_error(server, monkeypatch, tmp_path,
                                                       unpinned_http_ok):
    server.routes["/OHSUMED.zip"] = b"<html>This page has moved</html>"
    row = dataclasses.replace(
        REGISTRY["OHSUMED"], urls=(server.url + "/OHSUMED.zip",)
    )
    monkeypatch.setitem(REGISTRY, "OHSUMED", row)
    with pytest.raises(DataError, match="cannot unpack the zip archive"):
        fetch_letor("OHSUMED", data_home=tmp_path / "h", progress=False)
    assert entries(tmp_path / "h") == []


def test_letor3_archive_keeps_the_named_version(server, monkeypatch, tmp_path,
                                                unpinned_http_ok):
    """OHSUMED ships several versions; the QueryLevelNorm one is kept."""
    names = ("trainingset.txt", "validationset.txt", "testset.txt")
    files = fold_files(names)
    content = {f"OHSUMED/QueryLevelNorm/{k}": v for k, v in files.items()}
    content.update({f"OHSUMED/Feature-min/{k}": b"junk\n" for k in files})
    server.routes["/OHSUMED.zip"] = make_zip(content)
    row = dataclasses.replace(
        REGISTRY["OHSUMED"], urls=(server.url + "/OHSUMED.zip",), files=(),
    )
    monkeypatch.setitem(REGISTRY, "OHSUMED", row)
    path = fetch_letor("OHSUMED", data_home=tmp_path / "h", progress=False)
    assert (path / "Fold3" / "testset.txt").read_bytes() == files["Fold3/testset.txt"]
    assert not (path / "Feature-min").exists()
    fold = load_letor_fold("OHSUMED", 2, root=tmp_path / "h")
    assert fold.train.X.shape == (files["Fold2/trainingset.txt"].count(b"\n"), 3)


# --------------------------------------------------------------------------
# Names, locations, offline use
# --------------------------------------------------------------------------


def test_unknown_name_lists_known_ones(tmp_path):
    with pytest.raises(DataError) as info:
        fetch_letor("MQ2009", data_home=tmp_path)
    for name in REGISTRY:
        assert name in str(info.value)
    with pytest.raises(DataError, match="MSLR-WEB30K"):
        prepare_letor("Yahoo", tmp_path / "x.zip", data_home=tmp_path)


def test_offline_uses_the_cache_and_says_how_to_get_data(mslr, server, tmp_path):
    home = tmp_path / "home"
    with pytest.raises(DatasetNotFoundError) as info:
        fetch_letor("MSLR-WEB10K", data_home=home, download=False)
    message = str(info.value)
    assert "download=False" in message
    assert "fetch_letor('MSLR-WEB10K')" in message
    assert "prepare_letor('MSLR-WEB10K'" in message
    assert str(home / "MSLR-WEB10K") in message
    assert server.requests == []

    path = fetch_letor("MSLR-WEB10K", data_home=home, progress=False)
    assert fetch_letor("MSLR-WEB10K", data_home=home, download=False) == path
    assert len(server.requests) == 1


def test_refimpl_data_env_var_is_the_default_home(mslr, monkeypatch, tmp_path):
    monkeypatch.setenv("REFIMPL_DATA", str(tmp_path / "env-home"))
    path = fetch_letor("MSLR-WEB10K", progress=False)
    assert path == tmp_path / "env-home" / "MSLR-WEB10K"
    assert datasets.data_home() == tmp_path / "env-home"
    # an explicit data_home wins over the variable
    other = fetch_letor("MSLR-WEB10K", data_home=tmp_path / "arg", progress=False)
    assert other == tmp_path / "arg" / "MSLR-WEB10K"


def test_default_home_is_the_user_cache(tmp_path):
    assert datasets.data_home() == tmp_path / "xdg-cache" / "refimpl"


def test_a_complete_copy_under_letor_home_is_used(server, monkeypatch, tmp_path):
    """LETOR_HOME keeps working: a copy there is returned, nothing fetched."""
    letor = tmp_path / "letor" / "MQ2008"
    letor.mkdir(parents=True)
    for k, data in PARTS.items():
        with gzip.open(letor / f"S{k}.txt.gz", "wb") as f:
            f.write(data)
    monkeypatch.setenv("LETOR_HOME", str(tmp_path / "letor"))
    row = dataclasses.replace(REGISTRY["MQ2008"], urls=(server.url + "/none.rar",))
    monkeypatch.setitem(REGISTRY, "MQ2008", row)
    path = fetch_letor("MQ2008", download=False)
    assert path == letor
    assert server.requests == []
    assert load_letor_fold(path.name, 4, root=path.parent).test.X.shape == (6, 3)
    # an explicit data_home looks only there
    with pytest.raises(DatasetNotFoundError):
        fetch_letor("MQ2008", data_home=tmp_path / "elsewhere", download=False)


def test_incomplete_directory_is_reported_not_overwritten(mslr, server, tmp_path):
    home = tmp_path / "home"
    (home / "MSLR-WEB10K" / "Fold1").mkdir(parents=True)
    (home / "MSLR-WEB10K" / "Fold1" / "train.txt").write_bytes(PARTS[1])
    with pytest.raises(DataError, match="does not hold a complete copy"):
        fetch_letor("MSLR-WEB10K", data_home=home, progress=False)
    assert server.requests == []


def test_a_truncated_file_in_the_cache_is_detected(mslr, tmp_path):
    home = tmp_path / "home"
    path = fetch_letor("MSLR-WEB10K", data_home=home, progress=False)
    target = path / "Fold3" / "vali.txt"
    target.write_bytes(target.read_bytes()[:-5])
    with pytest.raises(DataError, match=r"Fold3/vali\.txt has \d+ bytes"):
        fetch_letor("MSLR-WEB10K", data_home=home, progress=False)


# --------------------------------------------------------------------------
# Archives brought by hand
# --------------------------------------------------------------------------


def test_prepare_letor_unpacks_a_local_archive(mslr, server, tmp_path):
    _, archive, files = mslr
    local = tmp_path / "downloads" / "MSLR-WEB10K.zip"
    local.parent.mkdir()
    local.write_bytes(archive)
    path = prepare_letor("MSLR-WEB10K", local, data_home=tmp_path / "home")
    assert path == tmp_path / "home" / "MSLR-WEB10K"
    assert local.read_bytes() == archive  # left where it was
    assert server.requests == []
    assert_loads(path, files)
    with pytest.raises(DataError, match="already exists"):
        prepare_letor("MSLR-WEB10K", local, data_home=tmp_path / "home")


def test_prepare_letor_checks_the_published_hash(mslr, tmp_path):
    _, archive, _ = mslr
    local = tmp_path / "MSLR-WEB10K.zip"
    local.write_bytes(archive[:-1] + bytes([archive[-1] ^ 1]))
    with pytest.raises(ChecksumError, match=sha256(local.read_bytes())):
        prepare_letor("MSLR-WEB10K", local, data_home=tmp_path / "home")
    assert entries(tmp_path / "home") == []


def test_manual_source_says_where_to_get_it(tmp_path):
    row = REGISTRY["Istella-S"]
    assert row.manual
    with pytest.raises(DatasetNotFoundError) as info:
        fetch_letor("Istella-S", data_home=tmp_path)
    assert row.homepage in str(info.value)
    assert "prepare_letor('Istella-S'" in str(info.value)
    with pytest.raises(DatasetNotFoundError, match=row.homepage):
        prepare_letor("Istella-S", tmp_path / "missing.tar.gz", data_home=tmp_path)


def test_single_split_tar_gz_becomes_fold1(monkeypatch, tmp_path):
    """Istella-S layout: sample/{train,vali,test}.txt in a .tar.gz."""
    splits = {"train.txt": PARTS[1] + PARTS[2], "vali.txt": PARTS[3],
              "test.txt": PARTS[4]}
    archive = make_targz(splits, prefix="sample/")
    local = tmp_path / "istella-s-letor.tar.gz"
    local.write_bytes(archive)
    row = dataclasses.replace(
        REGISTRY["Istella-S"], archive_size=len(archive),
        archive_hash="sha256:" + sha256(archive),
        files=tuple(sorted((f"Fold1/{k}", sha256(v)) for k, v in splits.items())),
    )
    monkeypatch.setitem(REGISTRY, "Istella-S", row)
    path = prepare_letor("Istella-S", local, data_home=tmp_path / "home")
    fold = load_letor_fold(path.name, 1, root=path.parent)
    assert fold.train.X.shape == (12, 3) and fold.test.X.shape == (6, 3)


# --------------------------------------------------------------------------
# RAR (LETOR 4.0)
# --------------------------------------------------------------------------


def mq_rar_content() -> dict:
    content = {f"MQ2008/{k}": v for k, v in fold_files().items()}
    content.update({f"MQ2008/S{k}.txt": v for k, v in PARTS.items()})
    return content


@pytest.fixture
def mq_rar(server, monkeypatch, unpinned_http_ok):
    archive = make_rar(mq_rar_content())
    server.routes["/MQ2008.rar"] = archive
    row = dataclasses.replace(
        REGISTRY["MQ2008"], urls=(server.url + "/MQ2008.rar",),
        files=tuple((f"S{k}.txt", sha256(v)) for k, v in PARTS.items()),
    )
    monkeypatch.setitem(REGISTRY, "MQ2008", row)
    return archive


needs_bsdtar = pytest.mark.skipif(
    shutil.which("bsdtar") is None,
    reason="bsdtar (Debian package libarchive-tools) is not installed",
)


@needs_bsdtar
def test_rar_download_unpacks_with_bsdtar(mq_rar, server, monkeypatch, tmp_path):
    monkeypatch.setattr(
        datasets, "_RAR_TOOLS",
        tuple(t for t in datasets._RAR_TOOLS if t[0] == "bsdtar"),
    )
    path = fetch_letor("MQ2008", data_home=tmp_path / "home", progress=False)
    assert (path / "S5.txt").read_bytes() == PARTS[5]
    assert_loads(path, fold_files())
    assert server.requests == ["/MQ2008.rar"]


@needs_bsdtar
def test_rar_member_crc_is_checked(mq_rar, server, tmp_path):
    """A flipped byte in a member without a published sha256 is caught."""
    bad = bytearray(mq_rar)
    at = bad.find(b"qid:", bad.find(b"MQ2008/Fold1/vali.txt"))
    bad[at + 4] = ord("9") if bad[at + 4] != ord("9") else ord("8")
    server.routes["/MQ2008.rar"] = bytes(bad)
    with pytest.raises(ChecksumError, match=r"CRC-32 of member MQ2008/Fold1/vali\.txt"):
        fetch_letor("MQ2008", data_home=tmp_path / "home", progress=False)
    assert entries(tmp_path / "home") == []


@needs_bsdtar
def test_rar_partition_hash_is_checked(server, monkeypatch, tmp_path,
                                      unpinned_http_ok):
    archive = make_rar(mq_rar_content())
    server.routes["/MQ2008.rar"] = archive
    row = dataclasses.replace(
        REGISTRY["MQ2008"], urls=(server.url + "/MQ2008.rar",),
        files=(("S3.txt", "0" * 64),),
    )
    monkeypatch.setitem(REGISTRY, "MQ2008", row)
    with pytest.raises(ChecksumError) as info:
        fetch_letor("MQ2008", data_home=tmp_path / "home", progress=False)
    assert "S3.txt" in str(info.value)
    assert "0" * 64 in str(info.value) and sha256(PARTS[3]) in str(info.value)
    assert entries(tmp_path / "home") == []


def test_missing_rar_tool_fails_before_downloading(mq_rar, server, monkeypatch,
                                                  tmp_path):
    monkeypatch.setattr(datasets.shutil, "which", lambda name: None)
    with pytest.raises(DataError) as info:
        fetch_letor("MQ2008", data_home=tmp_path / "home", progress=False)
    assert "libarchive-tools" in str(info.value) and "bsdtar" in str(info.value)
    assert server.requests == []


# --------------------------------------------------------------------------
# The registry itself
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_registry_rows_are_well_formed(name):
    row = REGISTRY[name]
    assert row.name == name
    assert row.layout in {"letor4", "letor3", "single"}
    assert row.n_folds == (1 if row.layout == "single" else 5)
    assert row.homepage.startswith("https://")
    assert row.license and row.citation and row.hash_source
    assert all(u.startswith(("http://", "https://")) for u in row.urls)
    datasets._archive_kind(row.archive)  # a suffix the unpacker knows
    if row.archive_hash is not None:
        algorithm, _, digest = row.archive_hash.partition(":")
        assert algorithm in {"sha256", "md5"}
        assert len(digest) == {"sha256": 64, "md5": 32}[algorithm]
    for rel, digest in row.files:
        assert HEX64.match(digest), rel
    assert len(dict(row.files)) == len(row.files)


def test_mq2008_partition_hashes_match_the_shared_copy(letor_root):
    """The registry's S1-S5 sha256 are those of the real data's partitions."""
    expected = dict(REGISTRY["MQ2008"].files)
    for k in range(1, 6):
        with gzip.open(letor_root / "MQ2008" / f"S{k}.txt.gz", "rb") as f:
            assert sha256(f.read()) == expected[f"S{k}.txt"]


@needs_bsdtar
def test_prepare_real_mq2008_from_a_rar_of_its_partitions(letor_root, tmp_path):
    """The real partitions pass the registry's own (unpatched) MQ2008 checks.

    The archive is built from the reference copy: the partitions as
    ``MQ2008/S1.txt`` ... and each fold's files as their concatenations; the
    folds read back equal those ``load_letor_fold`` reads from the copy.
    """
    parts = {}
    for k in range(1, 6):
        with gzip.open(letor_root / "MQ2008" / f"S{k}.txt.gz", "rb") as f:
            parts[k] = f.read()
    content = {f"MQ2008/S{k}.txt": v for k, v in parts.items()}
    for k in range(1, 6):
        order = [(k - 1 + j) % 5 + 1 for j in range(5)]
        content[f"MQ2008/Fold{k}/train.txt"] = b"".join(parts[i] for i in order[:3])
        content[f"MQ2008/Fold{k}/vali.txt"] = parts[order[3]]
        content[f"MQ2008/Fold{k}/test.txt"] = parts[order[4]]
    archive = tmp_path / "MQ2008.rar"
    archive.write_bytes(make_rar(content))
    path = prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    mine = load_letor_fold(path.name, 2, root=path.parent)
    ref = load_letor_fold("MQ2008", 2, root=letor_root)
    for split in ("train", "vali", "test"):
        for a, b in zip(getattr(mine, split), getattr(ref, split)):
            assert (a == b).all()
    assert mine.train.X.shape == (ref.train.X.shape[0], 46)
