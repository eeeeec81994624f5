"""Partition dirs listed by the compiled listing (``kafkalog.fast._dirs``, plugged in by the package)
and by the plain one (``os.scandir``): the same partitions, listings, data loss and errors for every
partition dir of golden/ and ../shared (golden-real, golden-kafka), as scan's worker processes plan
them (:func:`kafkalog.log.source.list_candidates`, which takes the files the data-loss check reads
from the compiled listing's read-ahead) and as one process discovers them (:func:`find_partitions`).
The plain listing is the truth: its results are ``os.scandir``'s and the files' own bytes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_gaps_quick import DIRS

from helpers import GOLDEN, SHARED
from kafkalog import fast
from kafkalog.errors import KafkaLogError
from kafkalog.format import files as format_files
from kafkalog.log import source
from kafkalog.log.gaps import PARTITION_DIR

_dirs = fast.compiled("_dirs")
pytestmark = pytest.mark.skipif(_dirs is None, reason="the compiled core is not built, or KAFKALOG_NO_EXTENSIONS is set")


@pytest.fixture
def plain(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A switch to the plain listing: ``with plain:`` lists with ``os.scandir``."""

    class Switch:
        def __enter__(self) -> None:
            monkeypatch.setattr(format_files, "_dir_lister", None)

        def __exit__(self, *exc: object) -> None:
            monkeypatch.undo()

    return Switch()


def _candidate(d: Path, wanted: bool) -> source.Candidate:
    m = PARTITION_DIR.match(d.name)
    topic, partition = (m["topic"], int(m["partition"])) if m else (d.name, -1)
    return (str(d), topic, partition, wanted, None, None)


def _planned(dirs: list[Path], wanted: bool) -> list:
    """:func:`list_candidates` of ``dirs``, and each dir's partition and data loss found afresh by
    the listing alone (its error, when finding them fails)."""
    out: list = source.list_candidates([_candidate(d, wanted) for d in dirs])
    for d in dirs:
        try:
            subdirs: list[str] = []
            files = source._local_entries(str(d), subdirs)
            p = source._partition(source.LocalStorage(), str(d), files, source.LogDirOffsets())
            out.append((sorted(files), subdirs, p, p and p.listing, p and p.gaps()))
        except (OSError, KafkaLogError) as e:
            out.append((type(e).__name__, str(e)))
    return out


def test_every_golden_and_real_partition_dir_is_planned_the_same_both_ways(plain: object) -> None:
    if not (SHARED / "golden-real").exists():
        pytest.skip(f"{SHARED} is absent: the real sets are listed only where it is checked out")
    assert len(DIRS) > 600
    for wanted in (True, False):
        compiled = _planned(DIRS, wanted)
        with plain:  # type: ignore[attr-defined]
            assert _planned(DIRS, wanted) == compiled


def test_reads_that_come_back_short_are_read_on(plain: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every read asking for at most 100 bytes, the compiled listing's and the plain reads alike
    (a FUSE mount may answer short of a file's end): the same plans as reads that are answered whole."""
    golden = [d for d in DIRS if d.is_relative_to(GOLDEN)]
    assert len(golden) > 50
    whole = _planned(golden, True)
    read, pread = os.read, os.pread
    monkeypatch.setattr(os, "read", lambda fd, n: read(fd, min(n, 100)))
    monkeypatch.setattr(os, "pread", lambda fd, n, pos: pread(fd, min(n, 100), pos))
    _dirs.cap_reads(100)  # type: ignore[union-attr]
    try:
        assert _planned(golden, True) == whole
    finally:
        _dirs.cap_reads(None)  # type: ignore[union-attr]


def test_golden_discovery_is_the_same_both_ways(plain: object) -> None:
    """One process's discovery of every golden dir (:func:`find_partitions`: the walk, the listings,
    the data loss), entry types given by the file system and taken as unknown."""

    def found() -> list:
        return [(p, p.listing, p.gaps()) for p in source.find_partitions(str(GOLDEN))]

    compiled = found()
    _dirs.pretend_unknown_types(True)  # type: ignore[union-attr]
    try:
        assert found() == compiled
    finally:
        _dirs.pretend_unknown_types(False)  # type: ignore[union-attr]
    with plain:  # type: ignore[attr-defined]
        assert found() == compiled


def test_the_workers_data_loss_is_the_partitions_own() -> None:
    """What :func:`list_candidates` finds of each golden and real dir (from the plain values it makes,
    without the partition) equals what the partition one process makes of the same listing finds:
    its segments, snapshots, listing and data loss (:meth:`PartitionFiles.gaps`). Of the dirs a walk
    gives a worker: those named ``<topic>-<partition>``."""
    dirs = [d for d in DIRS if PARTITION_DIR.match(d.name)]
    listed = source.list_candidates([_candidate(d, True) for d in dirs])
    lost = 0
    for d, got in zip(dirs, listed, strict=True):
        if not got:
            continue
        p = source._partition(source.LocalStorage(), str(d), source._local_entries(str(d), []), source.LogDirOffsets())
        assert p is not None, d
        try:
            gaps = tuple(p.gaps())
        except (OSError, KafkaLogError):
            gaps = None  # the worker leaves it to be found again
        assert got == (tuple((s.base_offset, s.log, s.size, s.index, s.timeindex, s.txnindex) for s in p.segments), p.snapshots, p.listing,
                       gaps), d
        lost += bool(gaps)
    assert lost >= 3  # the golden sets hold dirs that lost data: the check is held to them too
