"""One segment as Kafka's LogSegment: append indexing, roll conditions, recovery, reads by offset and time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import GOLDEN
from kafkalog import LogReader, RecordBatchBuilder
from kafkalog.errors import IndexOffsetOverflowError
from kafkalog.format.index import OffsetIndex, TimeIndex
from kafkalog.format.records import LegacyBatchBuilder
from kafkalog.log.segment import RollParams, Segment

LOGDIR = GOLDEN / "kafka" / "logdir"
G0 = LOGDIR / "golden-0"


def _batches(path: Path) -> list:
    with LogReader(path) as r:
        return list(r.batches())


def _append_batch(seg: Segment, b: object) -> None:
    seg.append(b.last_offset, b.max_timestamp, b.last_offset, b.data)  # type: ignore[attr-defined]


def test_worked_example_of_the_spec(tmp_path: Path) -> None:
    """SPEC §4.3: appends at 0, 258, 510, 781, 1042 give entries (13, 258), (27, 781), (34, 1042)."""
    seg = Segment.open(tmp_path, 0, index_interval_bytes=256, max_index_size=4096)
    for b in _batches(G0 / "00000000000000000000.log")[:5]:
        _append_batch(seg, b)
    assert [seg.offset_index.entry(i) for i in range(seg.offset_index.entries)] == [(13, 258), (27, 781), (34, 1042)]
    assert seg.time_index.entries == 3
    seg.close()


@pytest.mark.rule("R-ROLL-05")
def test_one_segment_of_golden_0_is_reproduced(tmp_path: Path) -> None:
    seg = Segment.open(tmp_path, 0, index_interval_bytes=256, max_index_size=4096)
    for b in _batches(G0 / "00000000000000000000.log"):
        _append_batch(seg, b)
    assert (tmp_path / "00000000000000000000.index").stat().st_size == 4096  # active: preallocated
    seg.on_become_inactive_segment()
    seg.close()
    for suffix in (".log", ".index", ".timeindex"):
        name = "00000000000000000000" + suffix
        assert (tmp_path / name).read_bytes() == (G0 / name).read_bytes(), name
    assert not (tmp_path / "00000000000000000000.txnindex").exists()


@pytest.mark.rule("R-IDX-01")
def test_should_roll_conditions(tmp_path: Path) -> None:
    seg = Segment.open(tmp_path, 100, index_interval_bytes=0, max_index_size=24)  # 3 offset slots, 2 time slots
    b = RecordBatchBuilder(100)
    b.append(1_000_000, b"k", b"v")
    data = b.build()
    p = RollParams(max_segment_ms=1000, max_segment_bytes=10 * len(data), max_timestamp_in_messages=1_000_000,
                   max_offset_in_messages=100, messages_size=len(data), now=0)
    assert not seg.should_roll(p)
    seg.append(100, 1_000_000, 100, data)
    assert seg.should_roll(RollParams(1000, 2 * len(data) - 1, 1_000_000, 101, len(data), 0))  # segment.bytes counts the incoming append
    assert not seg.should_roll(RollParams(1000, 2 * len(data), 1_000_000, 101, len(data), 0))
    assert not seg.should_roll(RollParams(1000, 10**6, 1_001_000, 101, len(data), 0))  # exactly segment.ms: not yet
    assert seg.should_roll(RollParams(1000, 10**6, 1_001_001, 101, len(data), 0))  # past segment.ms, by batch timestamps
    assert seg.should_roll(RollParams(1000, 10**6, 1_000_000, 100 + 2**31, len(data), 0))  # relative offset overflow
    seg.append(101, 1_000_001, 101, data)
    assert seg.time_index.is_full() and not seg.offset_index.is_full()
    assert seg.should_roll(RollParams(1000, 10**6, 1_000_001, 102, len(data), 0))  # the time index is full first
    with pytest.raises(IndexOffsetOverflowError):
        seg.append(100 + 2**31, 1, 100 + 2**31, data)
    seg.close()


def test_segment_ms_without_timestamps_uses_the_clock(tmp_path: Path) -> None:
    now = [5_000]
    seg = Segment.open(tmp_path, 0, clock=lambda: now[0])
    msg = LegacyBatchBuilder(0)
    msg.append(-1, b"k", b"v")
    data = msg.build()
    seg.append(0, -1, 0, data)
    assert not seg.should_roll(RollParams(1000, 10**6, -1, 1, len(data), 6_000))
    assert seg.should_roll(RollParams(1000, 10**6, -1, 1, len(data), 6_001))
    seg.close()


def test_reads_by_offset_and_time(tmp_path: Path) -> None:
    for name in ("00000000000000000051.log", "00000000000000000051.index", "00000000000000000051.timeindex"):
        shutil.copy(G0 / name, tmp_path / name)
    seg = Segment.open(tmp_path, 51, index_interval_bytes=256, max_index_size=4096)
    assert seg.read_next_offset() == 102
    found = seg.translate_offset(80)
    assert (found.offset, found.position, found.size) == (81, 1036, 96)
    assert seg.translate_offset(102) is None
    fetch = seg.read(80, 100)
    assert fetch.offset_metadata.relative_position == 1036 and len(fetch.records) == 100 and not fetch.first_entry_incomplete
    assert [b.base_offset for b in fetch.batches()] == [79]
    small = seg.read(80, 10, min_one_message=True)
    assert len(small.records) == 96
    assert seg.read(80, 10).first_entry_incomplete
    hit = seg.find_offset_by_timestamp(1700000000121)
    assert (hit.timestamp, hit.offset, hit.leader_epoch) == (1700000000121, 80, 0)
    assert seg.find_offset_by_timestamp(1700000000155).offset == 100  # the batch's max is not its last record's
    assert seg.find_offset_by_timestamp(1700000000156) is None
    assert seg.find_offset_by_timestamp(0).offset == 51
    assert seg.largest_timestamp == 1700000000155
    seg.close()


@pytest.mark.rule("R-RCV-07")
def test_recovery_rebuilds_indexes_and_cuts_a_torn_tail(tmp_path: Path) -> None:
    shutil.copy(G0 / "00000000000000000051.log", tmp_path / "00000000000000000051.log")
    with open(tmp_path / "00000000000000000051.log", "ab") as f:
        f.write(b"\x00" * 8 + b"\x00\x00\x01\x00" + b"torn")  # a batch that claims 256 bytes
    seg = Segment.open(tmp_path, 51, index_interval_bytes=256, max_index_size=4096)
    assert seg.recover() == 16
    seg.close()
    for suffix in (".log", ".index", ".timeindex"):
        name = "00000000000000000051" + suffix
        assert (tmp_path / name).read_bytes() == (G0 / name).read_bytes(), name


@pytest.mark.rule("R-RCV-07")
def test_recovery_stops_at_a_corrupt_batch(tmp_path: Path) -> None:
    raw = bytearray((G0 / "00000000000000000051.log").read_bytes())
    raw[1036 + 70] ^= 0xFF  # inside the batch at 1036 (offsets 79-81): its CRC no longer matches
    (tmp_path / "00000000000000000051.log").write_bytes(raw)
    seg = Segment.open(tmp_path, 51, index_interval_bytes=256, max_index_size=4096)
    assert seg.recover() == len(raw) - 1036
    assert seg.size == 1036 and seg.read_next_offset() == 79
    seg.close()
    assert OffsetIndex.read(tmp_path / "00000000000000000051.index").offsets.tolist() == [71, 78]
    assert TimeIndex.read(tmp_path / "00000000000000000051.timeindex").offsets.tolist() == [71, 78]


def test_truncate_to(tmp_path: Path) -> None:
    seg = Segment.open(tmp_path, 0, index_interval_bytes=256, max_index_size=4096)
    for b in _batches(G0 / "00000000000000000000.log"):
        _append_batch(seg, b)
    assert seg.truncate_to(28) == 2045 - 1042
    assert seg.read_next_offset() == 28
    assert seg.offset_index.last_offset == 27 and seg.time_index.last_entry == (1700000000035, 27)
    assert seg.max_timestamp_so_far == 1700000000035
    assert seg.truncate_to(100) == 0
    seg.close()
