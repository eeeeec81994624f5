"""What a broker accepts from a producer (SPEC R-WR-07, LogValidator.validateBatch @1eb7644).

Kafka's conditions, for an append with origin CLIENT: every batch has the first batch's magic
(checked for every origin); a magic 2 batch has ``lastOffset - baseOffset + 1 > 0``, a positive
``recordsCount`` equal to it, is not a control batch, and has ``baseSequence >= 0`` when its
producer id is not -1. Accepted inputs include batches written by kafka-python's producer code.
"""

from __future__ import annotations

import struct

import crc32c
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafkalog import LogReader, RecordBatch, RecordBatchBuilder
from kafkalog.errors import BrokerRejectedBatchError, InvalidRecordError
from kafkalog.format.records.control import ControlType
from kafkalog.format.records.v2 import check_client_batches, validate_batch
from kafkalog.log.producer_state import AppendOrigin
from kafkalog.log.unified import Log

LAST_OFFSET_DELTA_AT = 23
RECORDS_COUNT_AT = 57


def _kafka_python_batch(n: int = 3, *, producer_id: int = -1, base_sequence: int = -1, transactional: bool = False) -> bytes:
    b = DefaultRecordBatchBuilder(2, 0, int(transactional), producer_id, 0 if producer_id >= 0 else -1, base_sequence, 1 << 20)
    for i in range(n):
        b.append(i, 1_700_000_000_000 + i, b"k%d" % i, b"v%d" % i, [])
    return bytes(b.build())


def _legacy(magic: int) -> bytes:
    b = LegacyRecordBatchBuilder(magic, 0, 1 << 20)
    b.append(0, 1_700_000_000_000 if magic else None, b"k", b"v")
    return bytes(b.build())


def _patched(data: bytes, at: int, fmt: str, value: int) -> bytes:
    """``data`` with one header field replaced and the CRC-32C recomputed (from attributes on)."""
    buf = bytearray(data)
    struct.pack_into(fmt, buf, at, value)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def _batches(*parts: bytes) -> list:
    return list(LogReader(b"".join(parts)).batches())


ACCEPTED = {
    "plain": _kafka_python_batch(),
    "idempotent, sequence 0": _kafka_python_batch(producer_id=7, base_sequence=0),
    "transactional, sequence 42": _kafka_python_batch(producer_id=7, base_sequence=42, transactional=True),
    "one record": _kafka_python_batch(1),
}


@pytest.mark.rule("R-WR-07")
@pytest.mark.parametrize("name", ACCEPTED)
def test_producer_batches_are_accepted(name: str) -> None:
    check_client_batches(_batches(ACCEPTED[name]))


@pytest.mark.rule("R-WR-07")
def test_groups_of_one_magic_are_accepted() -> None:
    check_client_batches(_batches(_legacy(1), _legacy(1), _legacy(1)))
    check_client_batches(_batches(_legacy(0), _legacy(0)))


def _marker() -> bytes:
    b = RecordBatchBuilder(0, producer_id=7, producer_epoch=0, is_transactional=True, is_control=True)
    b.append_end_txn_marker(ControlType.ABORT, 0, 1_700_000_000_000)
    return b.build()


REFUSED = {
    "lastOffsetDelta -1": (_patched(_kafka_python_batch(1), LAST_OFFSET_DELTA_AT, ">i", -1), "invalid offset range"),
    "recordsCount 0": (_patched(_patched(_kafka_python_batch(1), LAST_OFFSET_DELTA_AT, ">i", 0), RECORDS_COUNT_AT, ">i", 0), "invalid reported count"),
    "recordsCount -1": (_patched(_kafka_python_batch(1), RECORDS_COUNT_AT, ">i", -1), "invalid reported count"),
    "recordsCount != lastOffsetDelta+1": (_patched(_kafka_python_batch(3), LAST_OFFSET_DELTA_AT, ">i", 3), "inconsistent batch offset range"),
    "control batch": (_marker(), "not allowed to write control records"),
    "producer id without sequence": (_kafka_python_batch(producer_id=7, base_sequence=-1), "invalid sequence number -1"),
    "producer id 0 without sequence": (_kafka_python_batch(producer_id=0, base_sequence=-5), "invalid sequence number -5"),
}


@pytest.mark.rule("R-WR-07")
@pytest.mark.parametrize("name", REFUSED)
def test_refused_batches(name: str) -> None:
    data, message = REFUSED[name]
    with pytest.raises(BrokerRejectedBatchError, match=message) as e:
        check_client_batches(_batches(data), file="request")
    assert isinstance(e.value, InvalidRecordError)
    assert (e.value.file, e.value.position, e.value.offset) == ("request", 0, 0)
    # replicated data is not checked this way
    [batch] = _batches(data)
    validate_batch(batch, batch, from_client=False)


@pytest.mark.rule("R-WR-07")
def test_a_magic_unlike_the_first_batchs_is_refused_from_every_origin() -> None:
    v1, v0 = _legacy(1), _legacy(0)
    for group, where in (((v1, v0), len(v1)), ((v0, v0, v1), 2 * len(v0)), ((v1, ACCEPTED["plain"]), len(v1))):
        batches = _batches(*group)
        with pytest.raises(BrokerRejectedBatchError, match="is not the same as the first batch's magic") as e:
            check_client_batches(batches)
        assert e.value.position == where
        with pytest.raises(BrokerRejectedBatchError):
            validate_batch(batches[0], batches[-1], from_client=False)


@pytest.mark.rule("R-WR-07")
def test_builder_meant_for_a_broker() -> None:
    ok = RecordBatchBuilder(0, producer_id=3, producer_epoch=0, base_sequence=0, for_broker=True)
    ok.append(1, b"k", b"v")
    plain = RecordBatchBuilder(0, producer_id=3, producer_epoch=0, base_sequence=0)
    plain.append(1, b"k", b"v")
    assert ok.build() == plain.build()
    no_seq = RecordBatchBuilder(0, producer_id=3, producer_epoch=0, for_broker=True)
    no_seq.append(1, b"k", b"v")
    with pytest.raises(BrokerRejectedBatchError, match="invalid sequence number"):
        no_seq.build()
    gap = RecordBatchBuilder(0, for_broker=True)
    gap.append(1, b"a", b"v", offset=0)
    gap.append(1, b"b", b"v", offset=2)  # a compacted-looking batch: 2 records, lastOffsetDelta 2
    with pytest.raises(BrokerRejectedBatchError, match="inconsistent"):
        gap.build()
    marker = RecordBatchBuilder(0, producer_id=3, producer_epoch=0, is_transactional=True, is_control=True, for_broker=True)
    marker.append_end_txn_marker(ControlType.COMMIT, 0, 1)
    with pytest.raises(BrokerRejectedBatchError, match="control records"):
        marker.build()
    # without the opt-in the builder writes them (follower-style and coordinator data)
    RecordBatch(_marker()).ensure_valid()


@pytest.mark.rule("R-WR-07")
def test_leader_append_applies_the_same_checks(tmp_path) -> None:  # noqa: ANN001 - fixture
    with Log.open(tmp_path / "t-0", writable=True) as lg:
        with pytest.raises(BrokerRejectedBatchError, match="invalid sequence number"):
            lg.append(_kafka_python_batch(producer_id=7, base_sequence=-1))
        with pytest.raises(BrokerRejectedBatchError, match="control records"):
            lg.append(_marker(), origin=AppendOrigin.CLIENT)
        assert lg.log_end_offset == 0
        lg.append(_kafka_python_batch(producer_id=7, base_sequence=0))
        assert lg.log_end_offset == 3
        # a follower copies what the leader wrote, control batches included
        lg.append(_patched(_marker(), 0, ">q", 3), assign_offsets=False)
        assert lg.log_end_offset == 4
