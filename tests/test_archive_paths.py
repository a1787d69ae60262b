"""Issue 34, findings 4, 7 and 9: the data home, its FIFOs and the manifest.

Finding 4: a FIFO at ``HOME/.NAME.part-1-x`` (or an old ``.init-*`` one)
blocked ``prepare_letor`` and ``fetch_letor`` forever in the open of the
stale-work cleanup.  Finding 7: a member named like the manifest poisoned
every later fetch; a manifest deleted, a directory, a FIFO or a link to
``/dev/zero`` skipped every size check; a newline in a manifest name got
past its pattern.  Finding 9: a data home that is a regular file, or a
dangling symbolic link where the data set goes, raised raw errors.

The tests that could hang run under an alarm, so a regression fails instead
of blocking the suite.
"""

import json
import os
import signal
import time

import pytest

from refimpl.datasets import MANIFEST, fetch_letor, prepare_letor
from refimpl.exceptions import DataError
from test_datasets import isolated_env  # noqa: F401  (fixture)
from test_hostile_archives import WRITERS, mq2008, mq_entries  # noqa: F401


class Hung(Exception):
    """Not an OSError, so that no ``except OSError`` swallows it."""


@pytest.fixture
def no_hang():
    """Fail (``Hung``) instead of blocking for more than 20 s."""
    def expire(*_):
        raise Hung("blocked for 20 s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def zip_archive(tmp_path, extra=()):
    write, name = WRITERS["zip"]
    archive = tmp_path / name
    archive.write_bytes(write(mq_entries() + list(extra)))
    return archive


@pytest.fixture
def fetched(mq2008, tmp_path):
    home = tmp_path / "home"
    return home, prepare_letor("MQ2008", zip_archive(tmp_path), data_home=home)


# --------------------------------------------------------------------------
# Finding 4: FIFOs where the stale-work cleanup looks
# --------------------------------------------------------------------------


def test_4_fifos_named_like_work_directories_do_not_block(mq2008, no_hang, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    part = home / ".MQ2008.part-1-x"
    init = home / ".MQ2008.init-abc"
    os.mkfifo(part)
    os.mkfifo(init)
    old = time.time() - 3600  # an .init- entry older than a minute is looked at
    os.utime(init, (old, old))
    (home / ".MQ2008.part-2-y").write_bytes(b"a file, not a fetch's directory")
    path = prepare_letor("MQ2008", zip_archive(tmp_path), data_home=home)
    assert (path / "S1.txt").is_file()
    # not a fetch's directory: left alone, neither opened nor removed
    assert sorted(p.name for p in home.iterdir()) == [
        ".MQ2008.init-abc", ".MQ2008.part-1-x", ".MQ2008.part-2-y", "MQ2008"]


def test_4_an_archive_that_is_a_fifo_is_refused_at_once(mq2008, no_hang, tmp_path):
    fifo = tmp_path / "x.zip"
    os.mkfifo(fifo)
    with pytest.raises(DataError, match=f"{fifo} is a FIFO"):
        prepare_letor("MQ2008", fifo, data_home=tmp_path / "home")


# --------------------------------------------------------------------------
# Finding 7: the manifest
# --------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["zip", "tar", "rar"])
@pytest.mark.parametrize("name, kind", [
    (f"MQ2008/{MANIFEST}", "file"), (f"MQ2008/{MANIFEST.upper()}", "file"),
    (f"MQ2008/{MANIFEST}", "dir"), (f"MQ2008/Fold1/{MANIFEST}", "file"),
])
def test_7_a_member_named_like_the_manifest_is_refused(fmt, name, kind, mq2008,
                                                       tmp_path):
    import shutil

    if fmt == "rar" and shutil.which("bsdtar") is None:
        pytest.skip("bsdtar is not installed")
    write, archive_name = WRITERS[fmt]
    archive = tmp_path / archive_name
    archive.write_bytes(write(mq_entries() + [(name, b"{}", kind)]))
    with pytest.raises(DataError) as info:
        prepare_letor("MQ2008", archive, data_home=tmp_path / "home")
    message = str(info.value)
    # (a directory's name may be given with a trailing slash)
    assert repr(name)[:-1] in message and archive_name in message
    assert "name of refimpl's manifest" in message
    assert os.listdir(tmp_path / "home") == []


def _later_fetch_fails(home, path, *needles):
    with pytest.raises(DataError) as info:
        fetch_letor("MQ2008", data_home=home, download=False)
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    assert f"delete {path} and fetch it again" in message


def test_7_a_deleted_manifest_is_an_error_not_a_skipped_check(fetched):
    home, path = fetched
    (path / MANIFEST).unlink()
    (path / "Fold1" / "train.txt").write_bytes(b"0 qid:1 1:0\n")  # unnoticed before
    with pytest.raises(DataError) as info:
        fetch_letor("MQ2008", data_home=home, download=False)
    assert MANIFEST in str(info.value) and "Delete" in str(info.value)


def test_7_a_manifest_that_is_a_directory(fetched):
    home, path = fetched
    (path / MANIFEST).unlink()
    (path / MANIFEST).mkdir()
    _later_fetch_fails(home, path, MANIFEST, "is a directory", "damaged")


def test_7_a_manifest_that_is_a_fifo(fetched, no_hang):
    home, path = fetched
    (path / MANIFEST).unlink()
    os.mkfifo(path / MANIFEST)
    _later_fetch_fails(home, path, MANIFEST, "is a FIFO", "damaged")


def test_7_a_manifest_that_links_to_dev_zero(fetched, no_hang):
    home, path = fetched
    (path / MANIFEST).unlink()
    os.symlink("/dev/zero", path / MANIFEST)
    _later_fetch_fails(home, path, MANIFEST, "symbolic link", "damaged")


def test_7_a_manifest_that_links_to_a_good_copy_is_refused_too(fetched, tmp_path):
    home, path = fetched
    copy = tmp_path / "copy.json"
    copy.write_bytes((path / MANIFEST).read_bytes())
    (path / MANIFEST).unlink()
    os.symlink(copy, path / MANIFEST)
    _later_fetch_fails(home, path, MANIFEST, "symbolic link")


@pytest.mark.parametrize("bad", [
    "Fold1\n/../../etc/passwd", "Fold1/\n../../x", "../outside", "Fold1/./x",
    "Fold1//x", "a\x1b[31m", "/etc/passwd", "Fold1/..",
])
def test_7_a_manifest_name_must_be_a_plain_name_inside_the_data_set(fetched, bad):
    home, path = fetched
    record = json.loads((path / MANIFEST).read_text())
    record["files"][bad] = {"size": 1, "sha256": "0" * 64}
    (path / MANIFEST).write_text(json.dumps(record))
    _later_fetch_fails(home, path, MANIFEST, "damaged")


def test_7_a_listed_file_replaced_by_a_link_outside_is_caught(fetched, tmp_path):
    home, path = fetched
    outside = tmp_path / "outside.txt"
    outside.write_bytes((path / "S2.txt").read_bytes())  # same size
    (path / "S2.txt").unlink()
    os.symlink(outside, path / "S2.txt")
    with pytest.raises(DataError, match="S2.txt is missing from the fetched data "
                       r"set .* \(or is not a regular file inside it\)"):
        fetch_letor("MQ2008", data_home=home, download=False)


# --------------------------------------------------------------------------
# Finding 9: the data home and the target
# --------------------------------------------------------------------------


def test_9_a_data_home_that_is_a_regular_file(mq2008, tmp_path):
    home = tmp_path / "home"
    home.write_text("not a directory")
    with pytest.raises(DataError) as info:
        prepare_letor("MQ2008", zip_archive(tmp_path), data_home=home)
    assert f"the data home {home} is a regular file, not a directory" in str(
        info.value)


def test_9_a_data_home_under_a_regular_file(mq2008, tmp_path):
    (tmp_path / "file").write_text("x")
    home = tmp_path / "file" / "home"
    with pytest.raises(DataError, match=f"cannot create the data home {home}"):
        prepare_letor("MQ2008", zip_archive(tmp_path), data_home=home)


def test_9_a_dangling_symlink_where_the_data_set_goes(mq2008, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    os.symlink(tmp_path / "gone", home / "MQ2008")
    with pytest.raises(DataError) as info:
        prepare_letor("MQ2008", zip_archive(tmp_path), data_home=home)
    message = str(info.value)
    assert str(home / "MQ2008") in message and "dangling symbolic link" in message
    with pytest.raises(DataError, match="dangling symbolic link"):
        fetch_letor("MQ2008", data_home=home, download=False)


def test_9_a_dangling_symlink_as_the_data_home(mq2008, tmp_path):
    home = tmp_path / "home"
    os.symlink(tmp_path / "gone", home)
    with pytest.raises(DataError, match=f"the data home {home} is a dangling "
                       "symbolic link"):
        prepare_letor("MQ2008", zip_archive(tmp_path), data_home=home)
