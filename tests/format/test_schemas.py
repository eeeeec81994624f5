"""The fast paths (struct, inlined varints, numpy) agree with the construct declarations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers import GOLDEN
from kafkalog import LogReader, RecordBatch
from kafkalog.format import schemas as S
from kafkalog.format.index import OFFSET_INDEX_DTYPE, TIME_INDEX_DTYPE, OffsetIndex, TimeIndex, last_offset
from kafkalog.format.records.legacy import LegacyBatch
from kafkalog.format.records.stream import _V2_MIN_LENGTH, _V2_TO_LAST_DELTA, LOG_OVERHEAD
from kafkalog.format.snapshot import read_producer_snapshot
from kafkalog.format.txnindex import read_txn_index

LOGS = sorted(p for p in (GOLDEN / "kafka").rglob("*.log") if p.stat().st_size)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(GOLDEN / "kafka")))
def test_batches_and_records_agree_with_construct(path: Path) -> None:
    with LogReader(path) as reader:
        for batch in reader.batches():
            if isinstance(batch, RecordBatch):
                h = S.RECORD_BATCH_V2_HEADER.parse(batch.data)
                assert (h.baseOffset, h.batchLength, h.partitionLeaderEpoch, h.crc, h.attributes) == (
                    batch.base_offset, batch.batch_length, batch.partition_leader_epoch, batch.crc, batch.attributes)
                assert (h.lastOffsetDelta, h.baseTimestamp, h.maxTimestamp, h.producerId, h.producerEpoch,
                        h.baseSequence, h.recordsCount) == (
                    batch.last_offset_delta, batch.base_timestamp, batch.max_timestamp, batch.producer_id,
                    batch.producer_epoch, batch.base_sequence, batch.count)
                # the log end planning finds steps over headers with a struct of its own (stream.next_offset_of)
                assert _V2_TO_LAST_DELTA.unpack_from(batch.data) == (
                    h.baseOffset, h.batchLength, h.partitionLeaderEpoch, h.magic, h.lastOffsetDelta)
                assert S.RECORD_BATCH_V2_HEADER.sizeof() == _V2_MIN_LENGTH + LOG_OVERHEAD
                buf = batch.records_buffer()
                pos = 0
                for rec in batch.records():
                    r = S.RECORD_V2.parse(buf[pos:])
                    size = len(S.RECORD_V2.build(r))
                    assert size == rec.size_in_bytes
                    assert batch.base_offset + r.offsetDelta == rec.offset
                    assert batch.base_timestamp + r.timestampDelta == rec.create_timestamp
                    assert (r.key, r.value) == (rec.key, rec.value)
                    assert [(h.headerKey.decode(), h.headerValue) for h in r.headers] == list(rec.headers)
                    pos += size
                assert pos == len(buf)
            else:
                assert isinstance(batch, LegacyBatch)
                m = (S.LEGACY_MESSAGE_V0 if batch.magic == 0 else S.LEGACY_MESSAGE_V1).parse(batch.data)
                assert (m.offset, m.crc, m.attributes, m.key, m.value) == (
                    batch.last_offset, batch.crc, batch.attributes, batch.msg.key, batch.msg.value)
                assert S.LEGACY_MESSAGE.parse(batch.data).value == m.value


def _index_files(suffix: str) -> list[Path]:
    return sorted(p for p in (GOLDEN / "kafka" / "logdir").rglob("*" + suffix) if p.stat().st_size)


@pytest.mark.parametrize("path", _index_files(".index"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_offset_index_agrees_with_construct(path: Path) -> None:
    data = path.read_bytes()
    entries = [S.OFFSET_INDEX_ENTRY.parse(data[i : i + 8]) for i in range(0, len(data), 8)]
    assert OFFSET_INDEX_DTYPE.itemsize == S.OFFSET_INDEX_ENTRY.sizeof()
    by_path = OffsetIndex.read(path)
    # the bytes of a small index are unpacked without numpy (struct formats of their own): held to construct too
    for idx in (by_path, OffsetIndex.read(data=data, base_offset=by_path.base_offset)):
        assert idx.offsets.tolist() == [idx.base_offset + e.relativeOffset for e in entries]
        assert idx.positions.tolist() == [e.position for e in entries]


@pytest.mark.parametrize("path", _index_files(".timeindex"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_time_index_agrees_with_construct(path: Path) -> None:
    data = path.read_bytes()
    entries = [S.TIME_INDEX_ENTRY.parse(data[i : i + 12]) for i in range(0, len(data), 12)]
    assert TIME_INDEX_DTYPE.itemsize == S.TIME_INDEX_ENTRY.sizeof()
    by_path = TimeIndex.read(path)
    for idx in (by_path, TimeIndex.read(data=data, base_offset=by_path.base_offset)):
        assert idx.timestamps.tolist() == [e.timestamp for e in entries]
        assert idx.offsets.tolist() == [idx.base_offset + e.relativeOffset for e in entries]
    assert last_offset(data, base_offset=by_path.base_offset, time=True) == by_path.base_offset + entries[-1].relativeOffset


@pytest.mark.parametrize("path", _index_files(".txnindex"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_txn_index_agrees_with_construct(path: Path) -> None:
    data = path.read_bytes()
    parsed = [S.ABORTED_TXN_ENTRY.parse(data[i : i + 34]) for i in range(0, len(data), 34)]
    ours = read_txn_index(path)
    assert [(p.version, p.producerId, p.firstOffset, p.lastOffset, p.lastStableOffset) for p in parsed] == [
        (t.version, t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset) for t in ours]


@pytest.mark.parametrize("path", _index_files(".snapshot"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_producer_snapshot_agrees_with_construct(path: Path) -> None:
    parsed = S.PRODUCER_SNAPSHOT.parse(path.read_bytes())
    ours = read_producer_snapshot(path)
    assert [(e.producerId, e.epoch, e.lastSequence, e.lastOffset, e.offsetDelta, e.timestamp, e.coordinatorEpoch,
             e.currentTxnFirstOffset) for e in parsed.entries] == [
        (e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp, e.coordinator_epoch,
         e.current_txn_first_offset) for e in ours]


@pytest.mark.rule("R-IDX-14")
def test_preallocated_zero_tail_is_not_entries() -> None:
    """An active segment's index is zero-filled past its entries; those slots are not entries."""
    real = (GOLDEN / "kafka" / "logdir" / "golden-0" / "00000000000000000051.index").read_bytes()
    padded = real + bytes(4096 - len(real))
    idx = OffsetIndex.read(data=padded, base_offset=51)
    assert len(idx) == len(real) // 8 and idx.slots == 512
    assert len(OffsetIndex.read(data=bytes(10485760), base_offset=0)) == 0
    t = (GOLDEN / "kafka" / "logdir" / "golden-0" / "00000000000000000051.timeindex").read_bytes()
    tidx = TimeIndex.read(data=t + bytes(12 * 10), base_offset=51)
    assert len(tidx) == len(t) // 12
    assert np.all(np.diff(tidx.timestamps) > 0)
