"""The compiled listing of local directories (``kafkalog.fast._dirs.list_dir``) against its plain twin
(:func:`kafkalog.log.source._scandir_entries`, over ``os.scandir``): the same entries in the same
order, the same errors, in the odd cases a listing meets (symbolic links, to files, directories,
nothing or themselves; names that are not UTF-8; entries of unknown type; a directory that is gone
or is a file), and the bytes it reads ahead for the data-loss check equal to the files' own, read on
past reads that come back short. The expected values are ``os.scandir``'s and the files' bytes,
never the kernel's own output. Every golden partition dir is held to the same in tests/log/test_listing.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafkalog import fast
from kafkalog.format import files as format_files
from kafkalog.log import source
from kafkalog.log.gaps import WHOLE_TAIL
from kafkalog.log.source import Entry

_dirs = fast.compiled("_dirs")
pytestmark = pytest.mark.skipif(_dirs is None, reason="the compiled core is not built, or KAFKALOG_NO_EXTENSIONS is set")


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    yield
    if _dirs is not None:
        _dirs.cap_reads(None)
        _dirs.pretend_unknown_types(False)


def _outcome(call: Callable[[], object]) -> object:
    """What a call gives, or the error it raises (its type, errno, message and file name)."""
    try:
        return call()
    except (OSError, ValueError, UnicodeError) as e:
        return type(e), getattr(e, "errno", None), str(e), getattr(e, "filename", None)


def _compiled(path: str, walk: bool) -> object:
    subdirs: list[str] | None = [] if walk else None

    def run() -> tuple:
        entries, _held = _dirs.list_dir(path, subdirs, Entry, source._SKIPPED_DIR.search)  # type: ignore[union-attr]
        assert all(type(e) is Entry for e in entries)
        return entries, subdirs

    return _outcome(run)


def _plain(path: str, walk: bool) -> object:
    subdirs: list[str] | None = [] if walk else None
    return _outcome(lambda: (source._scandir_entries(path, subdirs), subdirs))


def _same(path: str | Path) -> None:
    """The compiled and plain listings of ``path`` agree, walked (files only) and not, with the
    entries' types as the file system gives them and taken as unknown."""
    for unknown in (False, True):
        _dirs.pretend_unknown_types(unknown)  # type: ignore[union-attr]
        for walk in (False, True):
            assert _compiled(str(path), walk) == _plain(str(path), walk), (path, walk, unknown)


def _odd_dir(tmp_path: Path) -> Path:
    """A partition dir holding what a copy of one may: segment files, symbolic links to a file, a
    directory and nothing, a ``.log`` that is a directory, a ``-delete`` directory, a name that is not
    UTF-8, a link to itself."""
    d = tmp_path / "orders-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"x" * 300)
    (d / "00000000000000000000.index").write_bytes(b"")
    (d / "partition.metadata").write_text("version: 0\n")
    target = tmp_path / "elsewhere.log"
    target.write_bytes(b"y" * 77)
    (d / "00000000000000000100.log").symlink_to(target)  # sized as the file it names
    (d / "00000000000000000100.index").symlink_to(tmp_path / "gone")  # a link to nothing: listed, not sized
    (d / "00000000000000000200.log").symlink_to(tmp_path / "gone")  # a link to nothing that would be sized: passed over
    (d / "00000000000000000300.log").mkdir()  # a directory where a file was
    (d / "sub").mkdir()
    (d / "old-delete").mkdir()
    (d / "linked-dir").symlink_to(tmp_path, target_is_directory=True)
    os.close(os.open(os.fsencode(d) + b"/\xff\xfe-latin.log", os.O_CREAT | os.O_WRONLY))  # not UTF-8: decoded as os.fsdecode
    return d


def test_odd_entries_are_listed_as_scandir_lists_them(tmp_path: Path) -> None:
    d = _odd_dir(tmp_path)
    _same(d)
    _same(str(d) + "/")  # a path ending in its separator: the entries' paths are joined as scandir joins them
    entries, subdirs = _compiled(str(d), True)  # type: ignore[misc]
    by_name = {e.name: e for e in entries}
    assert by_name["00000000000000000100.log"].size == 77 and by_name["00000000000000000100.index"].size is None
    assert "00000000000000000200.log" not in by_name and "\udcff\udcfe-latin.log" in by_name
    assert sorted(subdirs) == sorted(str(d / n) for n in ("00000000000000000300.log", "sub", "linked-dir"))


def test_errors_are_raised_as_scandir_raises_them(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_bytes(b"")
    loop = tmp_path / "loops-0"
    loop.mkdir()
    (loop / "00000000000000000000.log").symlink_to(loop / "00000000000000000000.log")  # stat fails: too many levels of links
    for path in [tmp_path / "gone", f, loop, "a\0b", ""]:
        for walk in (False, True):
            got = _compiled(str(path), walk)
            assert got == _plain(str(path), walk), path
            if path != tmp_path:
                assert isinstance(got[0], type) and issubclass(got[0], (OSError, ValueError)), got  # type: ignore[index]


_UNPRIVILEGED = """
import os, sys
from kafkalog.fast import _dirs
from kafkalog.log import source

if os.geteuid() == 0:
    os.setuid(65534)  # nobody, once the modules are loaded: root reads any directory

def outcome(call):
    try:
        return repr(call())
    except OSError as e:
        return repr((type(e), e.errno, str(e), e.filename))

for path in sys.argv[1:]:
    for subdirs in (None, []):
        plain = outcome(lambda: source._scandir_entries(path, subdirs))
        compiled = outcome(lambda: _dirs.list_dir(path, subdirs, source.Entry, source._SKIPPED_DIR.search)[0])
        print(compiled == plain, plain)
"""


def test_directories_it_may_not_read_or_search(tmp_path: Path) -> None:
    """A directory it may not read and one it may read but not search (its listing fails, or else
    each ``stat`` of an entry): the same errors, met as an unprivileged user (root reads anything)."""
    base = Path(tempfile.mkdtemp(prefix="kafkalog-dirs-", dir=tmp_path.anchor + "tmp"))
    try:
        base.chmod(0o755)
        (base / "a").mkdir()
        (base / "b").mkdir()
        unreadable, unsearchable = _odd_dir(base / "a"), _odd_dir(base / "b")
        unreadable.chmod(0o300)
        unsearchable.chmod(0o600)
        run = subprocess.run([sys.executable, "-c", _UNPRIVILEGED, str(unreadable), str(unsearchable)], capture_output=True, text=True,
                             check=True)
        lines = run.stdout.splitlines()
        assert len(lines) == 4 and all(line.startswith("True (<class 'PermissionError'>, 13,") for line in lines), run.stdout
    finally:
        for d in base.rglob("*"):
            if d.is_dir() and not d.is_symlink():
                d.chmod(0o700)
        shutil.rmtree(base)


def test_the_greatest_segment_is_read_ahead_whole(tmp_path: Path) -> None:
    """The greatest segment's index files and ``.log`` are read whole, each equal to the file; a file
    larger than asked, not there, or that cannot be read is left to the reader."""
    d = tmp_path / "orders-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"old")
    (d / "00000000000000000000.timeindex").write_bytes(b"o" * 12)
    (d / "00000000000000000007.log").write_bytes(bytes(range(256)) * 200)  # 51,200 bytes: read on past reads of 100
    (d / "00000000000000000007.index").write_bytes(b"")
    (d / "00000000000000000007.timeindex").write_bytes(b"t" * 12)
    (d / "00000000000000000007.txnindex").write_bytes(b"a" * (WHOLE_TAIL + 1))  # more than asked for: left
    (d / "00000000000000000009.snapshot").write_bytes(b"s")
    for cap in (None, 100):
        _dirs.cap_reads(cap)  # type: ignore[union-attr]
        entries, held = _dirs.list_dir(str(d), [], Entry, source._SKIPPED_DIR.search, WHOLE_TAIL)  # type: ignore[union-attr]
        assert held == {n: (d / n).read_bytes() for n in ("00000000000000000007.index", "00000000000000000007.timeindex",
                                                          "00000000000000000007.log")}
        assert entries == source._scandir_entries(str(d), [])
    assert _dirs.list_dir(str(d), [], Entry, source._SKIPPED_DIR.search)[1] is None  # type: ignore[union-attr]  # not asked
    (d / "00000000000000000007.log").unlink()
    (d / "00000000000000000007.log").mkdir()  # not a regular file: left to the reader
    assert set(_dirs.list_dir(str(d), [], Entry, source._SKIPPED_DIR.search, WHOLE_TAIL)[1]) == {  # type: ignore[union-attr]
        "00000000000000000007.index", "00000000000000000007.timeindex"}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_left_to_the_reader_without_waiting(tmp_path: Path) -> None:
    """A FIFO named as the greatest segment's ``.log`` is not a file to read ahead: a plain open of it
    would wait for a writer, for ever. If the listing waits, the test opens the FIFO's other end, which
    ends the wait, and fails."""
    d = tmp_path / "orders-0"
    d.mkdir()
    (d / "00000000000000000000.timeindex").write_bytes(b"t" * 12)
    fifo = d / "00000000000000000000.log"
    os.mkfifo(fifo)
    got: list[object] = []
    lister = threading.Thread(target=lambda: got.append(_dirs.list_dir(str(d), [], Entry, source._SKIPPED_DIR.search, WHOLE_TAIL)))  # type: ignore[union-attr]
    lister.start()
    lister.join(5)
    waited = lister.is_alive()
    if waited:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the listing's open returns, its read finds the end
        lister.join()
    assert not waited, "the listing waited on a FIFO"
    assert got[0][1] == {"00000000000000000000.timeindex": b"t" * 12}  # type: ignore[index]


def _bytes_read(what: str = "rchar") -> int:
    """The bytes this thread has read with read calls so far (Linux's ``/proc/thread-self/io``: a
    process's count would take in the reads of pytest-xdist's channel thread), or with
    ``what="syscr"`` the read calls it has made."""
    return int(dict(line.split(": ") for line in Path("/proc/thread-self/io").read_text().splitlines())[what])


@pytest.mark.skipif(not Path("/proc/thread-self/io").exists(), reason="needs Linux's /proc/thread-self/io")
def test_files_larger_than_asked_are_not_read(tmp_path: Path) -> None:
    """An active segment's index preallocated to Kafka's 10 MiB, and a ``.log`` over the read-ahead's
    size, are left to the reader without being read (they were read to twice the size first)."""
    d = tmp_path / "orders-0"
    d.mkdir()
    with open(d / "00000000000000000000.index", "wb") as f:
        f.write(bytes(range(8)))
        f.truncate(10 * 1024 * 1024)
    (d / "00000000000000000000.timeindex").write_bytes(b"t" * 12)
    (d / "00000000000000000000.log").write_bytes(b"l" * (WHOLE_TAIL * 3))
    before = _bytes_read()
    entries, held = _dirs.list_dir(str(d), [], Entry, source._SKIPPED_DIR.search, WHOLE_TAIL)  # type: ignore[union-attr]
    read = _bytes_read() - before
    assert held == {"00000000000000000000.timeindex": b"t" * 12}
    assert read < 1024, f"{read} bytes read to hold 12"
    assert entries == source._scandir_entries(str(d), [])


@pytest.mark.skipif(not Path("/proc/thread-self/io").exists(), reason="needs Linux's /proc/thread-self/io")
def test_files_are_read_in_one_read_each_and_an_empty_one_not_at_all(tmp_path: Path) -> None:
    """The usual last segment (an empty ``.index``, a ``.timeindex`` of one entry, a short ``.log``):
    each file read with one read of the size it was found to have, no read to find its end, and
    the empty one held empty without a read."""
    d = tmp_path / "orders-0"
    d.mkdir()
    (d / "00000000000000000000.index").write_bytes(b"")
    (d / "00000000000000000000.timeindex").write_bytes(b"t" * 12)
    (d / "00000000000000000000.log").write_bytes(b"l" * 304)
    (d / "partition.metadata").write_bytes(b"version: 0\n")
    _dirs.list_dir(str(d), [], Entry, source._SKIPPED_DIR.search, WHOLE_TAIL)  # type: ignore[union-attr]
    calls = [_bytes_read("syscr") for _ in range(3)]
    baseline = calls[2] - calls[1]  # the read calls of asking /proc/self/io itself
    before = _bytes_read("syscr")
    entries, held = _dirs.list_dir(str(d), [], Entry, source._SKIPPED_DIR.search, WHOLE_TAIL)  # type: ignore[union-attr]
    reads = _bytes_read("syscr") - before - baseline
    assert held == {"00000000000000000000.index": b"", "00000000000000000000.timeindex": b"t" * 12, "00000000000000000000.log": b"l" * 304}
    assert reads == 2, f"{reads} read calls to hold two files of 12 and 304 bytes and an empty one"
    assert entries == source._scandir_entries(str(d), [])


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="the superuser opens a file of mode 000")
def test_an_empty_file_that_cannot_be_opened_is_left_to_the_reader(tmp_path: Path) -> None:
    """An empty ``.log`` this process may not open is not held as empty: the check opens it itself
    and fails as one process fails (it was held empty, unopened, and a worker's check then found
    no loss where one process raised)."""
    d = tmp_path / "orders-0"
    d.mkdir()
    (d / "00000000000000000000.timeindex").write_bytes(b"t" * 12)
    log = d / "00000000000000000000.log"
    log.write_bytes(b"")
    log.chmod(0)
    try:
        held = _dirs.list_dir(str(d), [], Entry, source._SKIPPED_DIR.search, WHOLE_TAIL)[1]  # type: ignore[union-attr]
    finally:
        log.chmod(0o644)
    assert held == {"00000000000000000000.timeindex": b"t" * 12}


def test_the_package_plugs_the_kernel_in_and_the_switch_takes_it_out(monkeypatch: pytest.MonkeyPatch) -> None:
    assert format_files.dir_lister() is _dirs.list_dir  # type: ignore[union-attr]
    monkeypatch.setattr(format_files, "_dir_lister", None)
    assert format_files.dir_lister() is None
    monkeypatch.setattr(format_files, "_dir_lister", False)
    monkeypatch.setattr(fast, "DISABLED", True)
    assert format_files.dir_lister() is None  # KAFKALOG_NO_EXTENSIONS: the plain listing
