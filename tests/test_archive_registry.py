"""Issue 34, finding 2 (the registry) and finding 10 (a stalled server).

OHSUMED's registry entry downloaded over plain http with no hash at all, and
a server sending one byte every 0.5 s never timed out.  Now every entry pins
a hash of what it installs (the archive, or files the loader reads), a
plain-http link is used only when the archive or every file the loader reads
is pinned, and a transfer must deliver at least ``_MIN_BYTES`` in every
``_TIMEOUT`` seconds.  The servers are started here on 127.0.0.1.
"""

import dataclasses
import gzip
import hashlib
import http.server
import threading
import time

import pytest

from refimpl import datasets
from refimpl.datasets import REGISTRY, DownloadError, fetch_letor
from test_datasets import (  # noqa: F401  (fixtures)
    entries,
    fold_files,
    isolated_env,
    make_zip,
    server,
)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_3_every_entry_pins_a_hash_of_what_it_installs(name):
    row = REGISTRY[name]
    assert row.archive_hash is not None or row.files, name
    if row.archive_hash is None:
        # the files pinned are files the loader reads
        reads = set(row.split_files())
        if row.layout == "letor4":
            reads |= {f"S{k}.txt" for k in range(1, 6)}
        assert {rel for rel, _ in row.files} <= reads, name


def test_3_ohsumed_pins_the_partitions_of_the_reference_copy():
    """S5 is Fold1's test set, S4 its validation set, S1-S4 the test sets of
    Folds 2-5 (``../shared/letor/README.md``)."""
    pinned = dict(REGISTRY["OHSUMED"].files)
    assert pinned["Fold1/validationset.txt"] == pinned["Fold5/testset.txt"]
    assert len(set(pinned.values())) == 5


def test_3_ohsumed_hashes_match_the_shared_copy(letor_root):
    pinned = dict(REGISTRY["OHSUMED"].files)
    test_of = {1: 5, 2: 1, 3: 2, 4: 3, 5: 4}  # fold -> partition
    for fold, part in test_of.items():
        with gzip.open(letor_root / "OHSUMED" / f"S{part}.txt.gz", "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        assert pinned[f"Fold{fold}/testset.txt"] == digest
        if fold == 1:
            with gzip.open(letor_root / "OHSUMED" / "S4.txt.gz", "rb") as f:
                assert pinned["Fold1/validationset.txt"] == hashlib.sha256(
                    f.read()).hexdigest()


def test_3_plain_http_without_a_pinned_hash_is_not_downloaded(server, monkeypatch,
                                                              tmp_path):
    """OHSUMED's own entry, its link pointed at a local plain-http server."""
    names = ("trainingset.txt", "validationset.txt", "testset.txt")
    archive = make_zip({f"OHSUMED/QueryLevelNorm/{k}": v
                        for k, v in fold_files(names).items()})
    server.routes["/OHSUMED.zip"] = archive
    row = dataclasses.replace(REGISTRY["OHSUMED"],
                              urls=(server.url + "/OHSUMED.zip",))
    monkeypatch.setitem(REGISTRY, "OHSUMED", row)
    with pytest.raises(DownloadError) as info:
        fetch_letor("OHSUMED", data_home=tmp_path / "h", progress=False)
    message = str(info.value)
    assert "plain http" in message and "Fold1/trainingset.txt has none" in message
    assert "prepare_letor('OHSUMED'" in message
    assert server.requests == []
    assert entries(tmp_path / "h") == []
    # with the archive's hash pinned, the same link is used
    pinned = dataclasses.replace(row, files=(), archive_hash="sha256:"
                                 + hashlib.sha256(archive).hexdigest())
    monkeypatch.setitem(REGISTRY, "OHSUMED", pinned)
    path = fetch_letor("OHSUMED", data_home=tmp_path / "h", progress=False)
    assert (path / "Fold2" / "testset.txt").is_file()


def test_3_an_https_link_needs_no_pin_for_the_rule():
    row = dataclasses.replace(REGISTRY["OHSUMED"], urls=("https://example.org/x.zip",))
    assert datasets._unpinned_http(row, row.urls[0]) is None
    assert datasets._unpinned_http(row, "http://example.org/x.zip") is not None


class Trickle:
    """A server sending one byte every ``every`` seconds, at most ``most``
    bytes per request (a bounded loop: it stops by itself)."""

    def __init__(self, every=0.5, most=60):
        sent = self.sent = []

        class Handler(http.server.BaseHTTPRequestHandler):
            timeout = 5

            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Length", "100000")
                self.end_headers()
                for _ in range(most):
                    try:
                        self.wfile.write(b"x")
                        self.wfile.flush()
                    except OSError:
                        break  # the client gave up
                    sent.append(time.monotonic())
                    time.sleep(every)
                self.close_connection = True

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def trickle():
    t = Trickle()
    yield t
    t.stop()


def test_10_a_server_sending_one_byte_every_half_second_times_out(
        trickle, monkeypatch, tmp_path):
    monkeypatch.setattr(datasets, "_TIMEOUT", 2)
    row = dataclasses.replace(
        REGISTRY["MSLR-WEB10K"], urls=(trickle.url + "/x.zip",),
        archive_size=None, archive_hash="sha256:" + "0" * 64, files=())
    monkeypatch.setitem(REGISTRY, "MSLR-WEB10K", row)
    with pytest.raises(DownloadError) as info:
        fetch_letor("MSLR-WEB10K", data_home=tmp_path / "h", progress=False)
    message = str(info.value)
    assert "stalled" in message and "in the last 2 s" in message
    assert "/x.zip" in message and "nothing was kept" in message
    # it gave up at the first window, long before the server's 60 bytes
    assert len(trickle.sent) < 30
    assert entries(tmp_path / "h") == []
