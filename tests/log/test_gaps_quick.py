"""The quick path of :func:`kafkalog.log.gaps.find_gaps`, held against the plain readings it stands for.

Planning weighs the tail of every partition's last segment (SPEC R-LOSS-03), so that check reads
little and parses it with paths of its own: a local file in one read, a listing's names summarised
once per distinct small listing, a few index entries unpacked without numpy, and the ``.log``'s end
found by stepping over magic 2 batch headers with one struct (:func:`~kafkalog.format.records.stream.next_offset_of`),
anything unusual left to :class:`~kafkalog.format.records.stream.LogReader`. Here every partition
dir of golden/ and ../shared (golden-real, golden-kafka), whole and damaged the ways a log is
damaged (a torn tail, a zero-filled tail, a corrupt last header, a missing or preallocated index),
is judged both ways: the plain way reads through fsspec's local filesystem, walks every batch with
:class:`LogReader`, reads every index with numpy and keeps nothing; the gaps, their evidence and
any error must be the same. The expected values are the plain readings (Kafka's layouts, held to
the construct schemas in tests/format/test_schemas.py), never the quick path's own output.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import fsspec
import pytest

from helpers import GOLDEN, SHARED
from kafkalog.format import index
from kafkalog.format.index import OffsetIndex, TimeIndex
from kafkalog.format.records.stream import LogReader, next_offset_of
from kafkalog.log import gaps
from kafkalog.log.gaps import find_gaps

ROOTS = [GOLDEN, SHARED / "golden-real", SHARED / "golden-kafka"]
_SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")


def _partition_dirs() -> list[Path]:
    out = []
    for root in ROOTS:
        for dirpath, dirs, names in os.walk(root):
            dirs.sort()
            if any(n.endswith(_SEGMENT_SUFFIXES) for n in names):
                out.append(Path(dirpath))
    return out


DIRS = _partition_dirs()


def _judged(judge: Callable[[], list[gaps.Gap]]) -> list[tuple[str, int, int, str]] | tuple[str, str]:
    """The gaps a judgement finds (directory, offsets, evidence), or the error it raises (its type and message)."""
    try:
        return [(g.directory, g.start, g.end, g.evidence) for g in judge()]
    except Exception as e:  # noqa: BLE001 - an error is an answer to compare
        return type(e).__name__, str(e)


def _plain(pdir: Path, files: dict[str, int | None] | None = None) -> list[tuple[str, int, int, str]] | tuple[str, str]:
    """find_gaps the plain way: fsspec's local filesystem (no quick local reads), every batch walked
    by LogReader, every index read by numpy, no listing kept."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gaps, "next_offset_of", lambda data: LogReader(data).next_offset())
        mp.setattr(index, "_SMALL", -1)
        mp.setattr(gaps, "_listed", gaps._read_listed)
        mp.setattr(gaps, "offsets_and_positions", lambda data, base_offset: _numpy_entries(data, base_offset))
        return _judged(lambda: find_gaps(str(pdir), fs=fsspec.filesystem("file"), files=files))


def _numpy_entries(data: bytes, base_offset: int) -> tuple[list[int], list[int]]:
    idx = OffsetIndex.read(data=data, base_offset=base_offset)
    return idx.offsets.tolist(), idx.positions.tolist()


def _quick(pdir: Path, files: dict[str, int | None] | None = None) -> list[tuple[str, int, int, str]] | tuple[str, str]:
    return _judged(lambda: find_gaps(str(pdir), files=files))


def _source_listing(pdir: Path) -> dict[str, int | None]:
    """The listing as :class:`kafkalog.log.source.LocalStorage` takes it: only a ``.log`` sized, an index's size unknown."""
    return {e.name: (e.stat().st_size if e.name.endswith(".log") else None) for e in os.scandir(pdir) if e.is_file()}


def _both_ways(pdir: Path, listings: tuple[bool, ...] = (False, True)) -> None:
    """The quick and plain judgements of ``pdir`` agree, listed here (sizes) and as the source lists it."""
    for as_source in listings:
        listing = _source_listing(pdir) if as_source else None
        assert _quick(pdir, listing) == _plain(pdir, listing)


def test_every_golden_and_real_partition_dir_is_judged_the_same_both_ways() -> None:
    if not (SHARED / "golden-real").exists():
        pytest.skip(f"{SHARED} is absent: the real sets are judged only where it is checked out")
    assert len(DIRS) > 600
    for pdir in DIRS:
        _both_ways(pdir)


def test_reads_that_come_back_short_are_read_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """A FUSE file system (a backup mounted from object storage) may answer a read with fewer bytes
    than asked short of a file's end: the quick reads go on until a read comes back empty, so
    every golden partition dir is judged as the plain way judges it (reading only to the first
    short read would take a cut .log tail for the log's end and report a gap that is not there)."""
    read, pread = os.read, os.pread
    monkeypatch.setattr(os, "read", lambda fd, n: read(fd, min(n, 100)))
    monkeypatch.setattr(os, "pread", lambda fd, n, pos: pread(fd, min(n, 100), pos))
    golden = [d for d in DIRS if d.is_relative_to(GOLDEN)]
    assert len(golden) > 50
    for pdir in golden:
        assert _quick(pdir) == _plain(pdir), pdir
    assert gaps.read_local(str(next(GOLDEN.rglob("*.log")))) == next(GOLDEN.rglob("*.log")).read_bytes()


# ----------------------------------------------------------------------------------- damaged tails
def _last_log(pdir: Path) -> Path | None:
    logs = sorted(p for p in pdir.glob("*.log") if p.name[:20].isdigit() and len(p.name) == 24)
    return logs[-1] if logs else None


def _batch_positions(log: Path) -> list[int]:
    """Where the batches of ``log`` start (plain reading); none for a log damaged from its start (a case of its own)."""
    with LogReader(log) as reader:
        try:
            return [b.position for b in reader.batches()]
        except Exception:  # noqa: BLE001 - a damaged golden log: its damage is a case of its own
            return []


@pytest.fixture(scope="module")
def tails() -> list[tuple[Path, str, list[int]]]:
    """The partition dirs whose last ``.log`` holds a batch, one for each distinct last ``.log`` (the
    golden sets repeat many for each Kafka release), with that segment's stem and batch positions."""
    if not (SHARED / "golden-real").exists():
        pytest.skip(f"{SHARED} is absent: the real sets are judged only where it is checked out")
    distinct = {}
    for pdir in DIRS:
        if (log := _last_log(pdir)) is not None:
            distinct.setdefault(hashlib.sha1(log.read_bytes()).digest(), (pdir, log))
    return [(pdir, log.name[:20], positions) for pdir, log in distinct.values() if (positions := _batch_positions(log))]


def _damaged_copy(pdir: Path, stem: str, positions: list[int], tmp: Path, damage: Callable[[Path, str, list[int]], None]) -> Path:
    """A copy of ``pdir`` (its last segment's files and its snapshots when it is large) with ``damage`` done to it."""
    dst = tmp / pdir.parent.name / pdir.name
    dst.mkdir(parents=True)
    small = sum(p.stat().st_size for p in pdir.iterdir() if p.is_file()) < 1 << 20
    for p in pdir.iterdir():
        if p.is_file() and (small or p.name.startswith(stem) or p.name.endswith(".snapshot")):
            shutil.copyfile(p, dst / p.name)
    damage(dst, stem, positions)
    return dst


def _truncate_last_batch(d: Path, stem: str, positions: list[int]) -> None:
    log = d / f"{stem}.log"
    os.truncate(log, positions[-1] + 30)  # inside the last batch's header


def _zero_log_tail(d: Path, stem: str, positions: list[int]) -> None:
    with open(d / f"{stem}.log", "ab") as f:
        f.write(bytes(4096))  # a preallocated .log (Windows, a crash): zeros after the last batch


def _zero_index_tails(d: Path, stem: str, positions: list[int]) -> None:
    for suffix, size in ((".index", 8), (".timeindex", 12)):
        with open(d / f"{stem}{suffix}", "ab") as f:
            f.write(bytes(3 * size + 5))  # zero-filled slots, and a part of one


def _preallocate_indexes(d: Path, stem: str, positions: list[int]) -> None:
    for suffix in (".index", ".timeindex"):
        p = d / f"{stem}{suffix}"
        p.touch()
        os.truncate(p, index.DEFAULT_MAX_INDEX_SIZE)  # a live segment's indexes: 10 MiB, zero-filled past the entries


def _drop_index(d: Path, stem: str, positions: list[int]) -> None:
    (d / f"{stem}.index").unlink(missing_ok=True)


def _header_byte(at: int, value: bytes) -> Callable[[Path, str, list[int]], None]:
    def damage(d: Path, stem: str, positions: list[int]) -> None:
        with open(d / f"{stem}.log", "r+b") as f:
            f.seek(positions[-1] + at)
            f.write(value)

    return damage


def _index_past_the_end(d: Path, stem: str, positions: list[int]) -> None:
    """An index entry pointing past the ``.log``'s end, after the real ones (as after a truncation the index did not follow)."""
    p = d / f"{stem}.index"
    data = p.read_bytes() if p.exists() else b""
    used = OffsetIndex.read(data=data, base_offset=int(stem))
    rel = int(used.offsets[-1]) - int(stem) + 1 if len(used) else 1
    p.write_bytes(data[: len(used) * 8] + struct.pack(">ii", rel, (d / f"{stem}.log").stat().st_size + 100))


DAMAGE = {
    "a torn last batch": _truncate_last_batch,
    "a zero-filled .log tail": _zero_log_tail,
    "zero-filled index tails": _zero_index_tails,
    "10 MiB preallocated indexes": _preallocate_indexes,
    "no .index": _drop_index,
    "last magic 7": _header_byte(16, b"\x07"),
    "last magic 1": _header_byte(16, b"\x01"),
    "last length 5": _header_byte(8, struct.pack(">i", 5)),
    "last length 40": _header_byte(8, struct.pack(">i", 40)),
    "last length past the end": _header_byte(8, struct.pack(">i", 1 << 30)),
    "last lastOffsetDelta": _header_byte(23, struct.pack(">i", 1 << 20)),
    "an index entry past the end": _index_past_the_end,
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_damaged_tails_are_judged_the_same_both_ways(damage: str, tails: list[tuple[Path, str, list[int]]], tmp_path: Path) -> None:
    """Each distinct last segment damaged, listed with sizes (even ones) or as the source lists it (odd ones)."""
    assert len(tails) > 100
    # a 10 MiB index is read through numpy twice a dir: every eighth tail is enough
    for i, (pdir, stem, positions) in enumerate(tails[:: 8 if damage == "10 MiB preallocated indexes" else 1]):
        _both_ways(_damaged_copy(pdir, stem, positions, tmp_path / str(i), DAMAGE[damage]), (bool(i % 2),))


def test_a_damaged_tail_is_found_as_the_plain_walk_finds_it(tmp_path: Path) -> None:
    """Against Kafka's golden-0: a torn last batch ends the log at the batch before it, and a corrupt
    header (magic 7) too; both ways say so."""
    src = GOLDEN / "kafka" / "logdir" / "golden-0"
    stem = "00000000000000000234"
    d = _damaged_copy(src, stem, _batch_positions(src / f"{stem}.log"), tmp_path, _header_byte(16, b"\x07"))
    (gap,) = find_gaps(d)
    assert (gap.start, gap.end) == (_plain_end(d, "00000000000000000234"), 265)
    assert gap.evidence.startswith(f"the last segment 00000000000000000234.log ends at offset {gap.start}")
    assert _quick(d) == _plain(d)


def _plain_end(d: Path, stem: str) -> int:
    end = None
    with LogReader(d / f"{stem}.log") as reader:
        try:
            for batch in reader.batches():
                end = batch.last_offset + 1
        except Exception:  # noqa: BLE001 - the damage ends the log
            pass
    assert end is not None
    return end


# ----------------------------------------------------------------------------- the header walk alone
def _logs() -> list[Path]:
    return sorted(p for root in ROOTS if root.exists() for p in root.rglob("*.log") if 0 < p.stat().st_size <= 1 << 20)


def test_the_header_walk_finds_each_logs_end_as_log_reader_does() -> None:
    """Every golden .log (magic 0, 1 and 2, every codec, control batches), whole and cut at every
    length around its last batch, ends where LogReader's walk ends."""
    logs = _logs()
    assert len(logs) > 100
    for p in logs:
        data = p.read_bytes()
        cuts = {len(data)} | {len(data) - k for k in (1, 12, 16, 17, 18, 26, 27, 28, 61, 62) if len(data) > k}
        for cut in sorted(cuts):
            assert next_offset_of(data[:cut]) == LogReader(data[:cut]).next_offset(), (p, cut)


def test_a_large_index_is_read_through_numpy_with_the_same_entries() -> None:
    """Past the size read without numpy, an index's entries and last offset come from the arrays."""
    entries = b"".join(struct.pack(">ii", i + 1, 100 * i) for i in range(1000)) + bytes(8 * 1000)
    assert index.offsets_and_positions(entries, base_offset=7) == (
        OffsetIndex.read(data=entries, base_offset=7).offsets.tolist(), [100 * i for i in range(1000)])
    times = b"".join(struct.pack(">qi", 10 * i, i + 1) for i in range(500)) + bytes(12 * 10)
    assert index.last_offset(times, base_offset=7, time=True) == int(TimeIndex.read(data=times, base_offset=7).offsets[-1]) == 507
