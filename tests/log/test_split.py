"""Splitting a segment whose offsets overflow its indexes (kafkalog.log.split; SPEC R-RCV-06, LocalLog.splitOverflowedSegment).

The overflowed segments are built by hand, as a broker before Kafka 0.10.2 could leave them: one
``.log`` whose last offsets are more than 2^31 - 1 above its base offset. Expected segment bases
follow from Kafka's rule (each new segment starts at the base offset of its first batch and takes
batches while their last offset fits), computed here from the batches written, not by the code.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkalog.format.files import segment_file_name
from kafkalog.format.records.stream import LogReader
from kafkalog.format.records.v2 import RecordBatchBuilder
from kafkalog.log.cleaner import compact
from kafkalog.log.split import split_overflowed_segment
from kafkalog.log.unified import Log, LogConfig
from kafkalog.tools.validate import verify

INT32_MAX = (1 << 31) - 1
FAR = INT32_MAX + 10  # the first offset that does not fit a segment based at 0 (with room before it)


def _batch(base: int, *records: tuple[bytes, bytes]) -> bytes:
    b = RecordBatchBuilder(base)
    for i, (k, v) in enumerate(records):
        b.append(1_700_000_000_000 + i, k, v)
    return b.build()


def _overflowed_dir(root: Path, batches: list[bytes], active: bytes) -> Path:
    """A compacted partition dir: segment 0 holding ``batches`` (offsets past 2^31 - 1 from 0),
    then an active segment holding ``active``. Index files exist, empty, as a loaded segment below
    the recovery point keeps them unchecked (R-RCV-05)."""
    d = root / "legacy-0"
    d.mkdir(parents=True)
    active_base = next(iter(LogReader(active).batches())).base_offset
    for base, data in ((0, b"".join(batches)), (active_base, active)):
        (d / segment_file_name(base, ".log")).write_bytes(data)
        (d / segment_file_name(base, ".index")).write_bytes(b"")
        (d / segment_file_name(base, ".timeindex")).write_bytes(b"")
    return d


def _config(**kw: object) -> LogConfig:
    return LogConfig(file_delete_delay_ms=0, cleanup_policy=("compact",), **kw)  # type: ignore[arg-type]


def _logs(d: Path) -> dict[int, bytes]:
    return {int(p.name[:20]): p.read_bytes() for p in sorted(d.glob("*.log"))}


@pytest.mark.rule("R-RCV-06")
def test_split_keeps_the_bytes_and_starts_a_segment_where_offsets_stop_fitting(tmp_path: Path) -> None:
    batches = [_batch(0, (b"a", b"1")), _batch(1, (b"b", b"2")), _batch(FAR, (b"c", b"3")), _batch(FAR + 1, (b"d", b"4"))]
    d = _overflowed_dir(tmp_path, batches, _batch(FAR + 2, (b"e", b"5")))
    assert any(f.code == "offset-overflow" for f in verify(d).errors)
    original = (d / segment_file_name(0, ".log")).read_bytes()
    with Log.open(d, _config(index_interval_bytes=0, kafka_version=(4, 0, 0)), writable=True) as lg:
        assert lg.segments[0].has_overflow()
        new = split_overflowed_segment(lg, lg.segments[0], now_ms=0)
        assert [s.base_offset for s in new] == [0, FAR]
        assert [s.base_offset for s in lg.segments] == [0, FAR, FAR + 2]
        # one append per new segment (all batches fit one read buffer); the first append of a segment is never indexed
        # (Kafka 4.0.0: the append as a whole; from 4.0.1 its second batch would be)
        assert [len(s.offset_index) for s in new] == [0, 0]
    logs = _logs(d)
    assert logs[0] + logs[FAR] == original
    assert logs[0] == batches[0] + batches[1] and logs[FAR] == batches[2] + batches[3]
    assert not list(d.glob("*.deleted")) and not list(d.glob("*.cleaned")) and not list(d.glob("*.swap"))
    assert verify(d).errors == []


def test_a_segment_without_overflow_is_not_split(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    with Log.open(d, _config(), writable=True) as lg:
        lg.append(_batch(0, (b"k", b"v")))
        with pytest.raises(ValueError, match="no offset overflow"):
            split_overflowed_segment(lg, lg.segments[0])


@pytest.mark.rule("R-RCV-06")
def test_the_cleaner_splits_an_overflowed_segment_then_cleans(tmp_path: Path) -> None:
    """Cleaner.cleanSegments meets the overflow, splits the source segment and aborts; the next
    pass (compact() retries, as the cleaner thread's next round) cleans the split segments."""
    batches = [_batch(0, (b"k", b"old")), _batch(1, (b"x", b"1")), _batch(FAR, (b"k", b"new")), _batch(FAR + 1, (b"y", b"2"))]
    d = _overflowed_dir(tmp_path, batches, _batch(FAR + 2, (b"z", b"3")))
    with Log.open(d, _config(), writable=True) as lg:
        result = compact(lg, now_ms=1_700_000_100_000, force=True)
        assert result.cleaned is not None
        assert not any(s.has_overflow() for s in lg.segments)
    kept = {}
    for data in _logs(d).values():
        for b in LogReader(data).batches():
            for r in b.records():
                kept[r.offset] = (r.key, r.value)
    assert kept == {1: (b"x", b"1"), FAR: (b"k", b"new"), FAR + 1: (b"y", b"2"), FAR + 2: (b"z", b"3")}  # k's older value is gone
    assert verify(d).errors == []
    assert not [p for p in os.listdir(d) if p.endswith((".cleaned", ".swap"))]


@pytest.mark.rule("R-RCV-06")
@pytest.mark.parametrize("how", ["unclean shutdown", "missing index"])
def test_loading_splits_an_overflowed_segment_it_must_recover(tmp_path: Path, how: str) -> None:
    """LogLoader.retryOnOffsetOverflow: recovery of a segment whose offsets overflow (after an
    unclean shutdown, or because its .index is missing) splits it, then loading starts again."""
    batches = [_batch(0, (b"a", b"1")), _batch(FAR, (b"b", b"2")), _batch(FAR + 1, (b"c", b"3"))]
    d = _overflowed_dir(tmp_path, batches, _batch(FAR + 2, (b"d", b"4")))
    original = (d / segment_file_name(0, ".log")).read_bytes()
    if how == "missing index":
        (d / segment_file_name(0, ".index")).unlink()
    clean = how != "unclean shutdown"
    with Log.open(d, _config(), recovery_point=0, had_clean_shutdown=clean, writable=True) as lg:
        assert [s.base_offset for s in lg.segments] == [0, FAR, FAR + 2]
        assert lg.log_end_offset == FAR + 3
    logs = _logs(d)
    assert logs[0] + logs[FAR] == original and logs[0] == batches[0]
    assert verify(d).errors == []
