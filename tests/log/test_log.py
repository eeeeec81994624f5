"""A partition directory written as Kafka's broker writes it, checked against the directories Kafka wrote.

The key test re-appends the batches of golden/kafka/logdir/{golden-0, transactional-0,
logappendtime-0, recompressed-0} one batch per append, as a follower, with the configs the golden
README gives, and compares every file of the result with Kafka's.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import struct
from pathlib import Path

import pytest

from helpers import GOLDEN
from kafkalog import Codec, LegacyBatchBuilder, LogReader, RecordBatchBuilder
from kafkalog.errors import (
    CrcMismatchError,
    InconsistentTopicIdError,
    KafkaLogError,
    OffsetOutOfRangeError,
    OffsetsOutOfOrderError,
    ProducerStateError,
    RecordBatchTooLargeError,
    UnexpectedAppendOffsetError,
)
from kafkalog.format.checkpoints import (
    EpochEntry,
    format_leader_epoch_checkpoint,
    format_partition_metadata,
    read_offset_checkpoint,
    read_partition_metadata,
    write_offset_checkpoint,
)
from kafkalog.format.epoch import LeaderEpochCache
from kafkalog.format.primitives import crc32c
from kafkalog.format.records import LegacyBatch, RecordBatch, TimestampType
from kafkalog.format.snapshot import read_producer_snapshot
from kafkalog.log.producer_state import JavaLongHashMap
from kafkalog.log.unified import FetchIsolation, Log, LogConfig, checkpoint_log_dir, parse_topic_partition
from kafkalog.tools.validate import verify

LOGDIR = GOLDEN / "kafka" / "logdir"
CLOCK = 1700010000000  # the golden dirs' frozen clock for LogAppendTime

#: golden/kafka/README.md
CONFIGS = {
    "golden-0": {"segment.bytes": 2048, "index.interval.bytes": 256, "segment.index.bytes": 4096},
    "transactional-0": {"segment.bytes": 1024, "index.interval.bytes": 128, "segment.index.bytes": 4096},
    "logappendtime-0": {"segment.bytes": 16384, "index.interval.bytes": 256, "segment.index.bytes": 4096, "message.timestamp.type": "LogAppendTime"},
    "recompressed-0": {"segment.bytes": 16384, "index.interval.bytes": 256, "segment.index.bytes": 4096, "compression.type": "zstd"},
    "legacy-0": {"index.interval.bytes": 256, "segment.index.bytes": 4096},
}


def _batches(src: Path) -> list:
    out = []
    for f in sorted(src.glob("*.log")):
        with LogReader(f) as r:
            out.extend(r.batches())
    return out


def _topic_id(src: Path) -> str | None:
    p = src / "partition.metadata"
    return read_partition_metadata(p).topic_id if p.exists() else None


def _diff_dirs(expected: Path, actual: Path) -> list[str]:
    """Names whose presence or bytes differ."""
    names = set(os.listdir(expected)) | set(os.listdir(actual))
    return sorted(
        n for n in names
        if not ((expected / n).exists() and (actual / n).exists() and (expected / n).read_bytes() == (actual / n).read_bytes())
    )


def _open(dst: Path, name: str, **kw: object) -> Log:
    """A writable log with the config of golden/kafka/logdir/<name>, as Kafka 4.0.0's log layer, which wrote them."""
    config = dataclasses.replace(LogConfig.from_properties(CONFIGS[name]), kafka_version=(4, 0, 0))
    return Log.open(dst, config, clock=lambda: CLOCK, sync=False, **kw, writable=True)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- acceptance tests
@pytest.mark.rule("R-CONF-03", "R-ROLL-03", "R-ROLL-05", "R-ROLL-07", "R-RCV-02", "R-TXN-06", "R-SNAP-07")
@pytest.mark.parametrize("name", ["golden-0", "transactional-0", "logappendtime-0", "recompressed-0"])
def test_follower_replay_reproduces_kafkas_directory(name: str, tmp_path: Path) -> None:
    """Segment boundaries, .log, .index, .timeindex, .txnindex, .snapshot, leader-epoch-checkpoint and
    partition.metadata: every file byte for byte."""
    src = LOGDIR / name
    dst = tmp_path / name
    log = _open(dst, name, topic_id=_topic_id(src))
    for b in _batches(src):
        log.append(b.data, assign_offsets=False)
    log.close()
    assert sorted(os.listdir(dst)) == sorted(os.listdir(src))
    assert _diff_dirs(src, dst) == []


def test_follower_appends_of_several_legacy_batches(tmp_path: Path) -> None:
    """legacy-0: v0/v1 message sets appended as a follower (one index entry per append), then a v2 batch."""
    src = LOGDIR / "legacy-0"
    appends: list[list] = []
    for b in _batches(src):
        plain = isinstance(b, LegacyBatch) and b.compression is Codec.NONE
        if plain and appends and isinstance(appends[-1][0], LegacyBatch) and appends[-1][0].compression is Codec.NONE and appends[-1][0].magic == b.magic:
            appends[-1].append(b)
        else:
            appends.append([b])
    log = _open(tmp_path / "legacy-0", "legacy-0")
    for group in appends:
        info = log.append(b"".join(b.data for b in group), assign_offsets=False)
        assert info.first_offset is (None if isinstance(group[0], LegacyBatch) else group[0].base_offset)
    log.close()
    assert _diff_dirs(src, tmp_path / "legacy-0") == []


def _as_producer_batch(b: RecordBatch, *, undo_log_append_time: bool) -> bytes:
    """The batch as its producer (or coordinator) sent it: base offset 0, no leader epoch, CreateTime."""
    d = bytearray(b.data)
    struct.pack_into(">q", d, 0, 0)
    struct.pack_into(">i", d, 12, -1)
    if undo_log_append_time:
        struct.pack_into(">h", d, 21, b.attributes & ~0x08)
        struct.pack_into(">q", d, 35, max(r.create_timestamp for r in b.records()))
        struct.pack_into(">I", d, 17, crc32c(memoryview(d)[21:]))
    return bytes(d)


@pytest.mark.rule("R-ROLL-07", "R-WR-09")
@pytest.mark.parametrize("name", ["golden-0", "transactional-0", "logappendtime-0"])
def test_leader_appends_reproduce_kafkas_directory(name: str, tmp_path: Path) -> None:
    """Leader mode: offsets, leader epoch and (LogAppendTime) max timestamp set as LogValidator sets them."""
    src = LOGDIR / name
    dst = tmp_path / name
    log = _open(dst, name)
    tid = _topic_id(src)
    if tid:
        log.assign_topic_id(tid)
    for b in _batches(src):
        data = _as_producer_batch(b, undo_log_append_time=name == "logappendtime-0")
        info = log.append(data, leader_epoch=b.partition_leader_epoch)
        assert (info.first_offset, info.last_offset) == (b.base_offset, b.last_offset)
    log.close()
    assert _diff_dirs(src, dst) == []


@pytest.mark.rule("R-WR-10")
def test_broker_recompression_keeps_the_records(tmp_path: Path) -> None:
    """compression.type=zstd: the leader rebuilds each batch; records and header fields are Kafka's.
    (The zstd frame differs: Kafka's zstd-jni ends it with an empty last block.)"""
    src = LOGDIR / "recompressed-0"
    gold = _batches(src)
    log = _open(tmp_path / "r-0", "recompressed-0")
    for codec, g in zip([Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD], gold, strict=True):
        builder = RecordBatchBuilder(0, compression=codec)
        for r in g.records():
            builder.append(r.timestamp, r.key, r.value, r.headers)
        log.append(builder.build(), leader_epoch=0)
    log.close()
    ours = _batches(tmp_path / "r-0")
    fields = ("base_offset", "last_offset", "max_timestamp", "base_timestamp", "attributes", "partition_leader_epoch", "count")
    for g, o in zip(gold, ours, strict=True):
        assert [getattr(o, f) for f in fields] == [getattr(g, f) for f in fields]
        assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in o.records()] == [
            (r.offset, r.timestamp, r.key, r.value, r.headers) for r in g.records()
        ]
    for n in ("00000000000000000035.snapshot", "leader-epoch-checkpoint", "00000000000000000000.timeindex"):
        assert (tmp_path / "r-0" / n).read_bytes() == (src / n).read_bytes()


def test_legacy_producer_batches_are_converted_to_v2(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", clock=lambda: CLOCK, sync=False, writable=True)
    b = LegacyBatchBuilder(1, compression=Codec.GZIP)
    for i in range(3):
        b.append(1700000000000 + i, b"k%d" % i, b"v%d" % i)
    info = log.append(b.build(), leader_epoch=2)
    assert (info.first_offset, info.last_offset) == (0, 2)
    (batch,) = list(log.batches())
    assert isinstance(batch, RecordBatch) and batch.compression is Codec.GZIP and batch.partition_leader_epoch == 2
    assert [(r.offset, r.timestamp, r.key) for r in batch.records()] == [(i, 1700000000000 + i, b"k%d" % i) for i in range(3)]
    log.close()


# ---------------------------------------------------------------------------- load / recovery
@pytest.mark.rule("R-RCV-02")
def test_reopening_a_clean_directory_changes_nothing(tmp_path: Path) -> None:
    dst = tmp_path / "transactional-0"
    shutil.copytree(LOGDIR / "transactional-0", dst)
    log = _open(dst, "transactional-0")
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point, len(log.segments)) == (0, 195, 195, 12)
    assert list(log.producer_state.producers) == [6000, 5001, 5002, 5003]  # HashMap order, from the snapshot
    assert log.last_stable_offset == 136  # producer 5003's transaction from 136 is still open
    assert log.leader_epoch_cache.entries == [EpochEntry(2, 0), EpochEntry(3, 95)]
    assert (dst / "00000000000000000188.index").stat().st_size == 4096  # the active segment's index is resized
    log.close()
    assert _diff_dirs(LOGDIR / "transactional-0", dst) == []


def test_appending_after_reopening(tmp_path: Path) -> None:
    dst = tmp_path / "golden-0"
    shutil.copytree(LOGDIR / "golden-0", dst)
    log = _open(dst, "golden-0")
    b = RecordBatchBuilder(0, producer_id=1000, producer_epoch=0, base_sequence=18)
    b.append(1700000000500, b"k", b"v")
    info = log.append(b.build(), leader_epoch=4)
    assert (info.first_offset, info.last_offset) == (265, 265)
    with pytest.raises(ProducerStateError):  # sequence 30 does not follow 18
        b2 = RecordBatchBuilder(0, producer_id=1000, producer_epoch=0, base_sequence=30)
        b2.append(1700000000501, b"k", b"v")
        log.append(b2.build(), leader_epoch=4)
    log.close()
    entries = {e.producer_id: e for e in read_producer_snapshot(dst / "00000000000000000266.snapshot")}
    assert entries[1000].last_sequence == 18 and entries[1000].last_offset == 265
    assert (dst / "00000000000000000234.log").read_bytes()[:1360] == (LOGDIR / "golden-0" / "00000000000000000234.log").read_bytes()


@pytest.mark.rule("R-RCV-07")
@pytest.mark.parametrize("name", ["golden-0", "transactional-0"])
def test_missing_indexes_are_rebuilt_as_kafka_wrote_them(name: str, tmp_path: Path) -> None:
    """LogLoader recovers a segment whose offset index is missing: all indexes, .txnindex and snapshots come back."""
    dst = tmp_path / name
    shutil.copytree(LOGDIR / name, dst)
    for p in [*dst.glob("*.index"), *dst.glob("*.timeindex"), *dst.glob("*.txnindex")]:
        p.unlink()
    _open(dst, name).close()
    assert _diff_dirs(LOGDIR / name, dst) == []


@pytest.mark.rule("R-RCV-06", "R-RCV-07")
def test_unclean_shutdown_cuts_a_torn_tail(tmp_path: Path) -> None:
    dst = tmp_path / "golden-0"
    shutil.copytree(LOGDIR / "golden-0", dst)
    (dst / "00000000000000000265.snapshot").unlink()  # not written: the broker crashed
    with open(dst / "00000000000000000234.log", "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x01\x09\x00\x00\x01\x00partial")
    os.truncate(dst / "00000000000000000234.index", 4096)  # left preallocated
    os.truncate(dst / "00000000000000000234.timeindex", 4092)
    log = _open(dst, "golden-0", had_clean_shutdown=False, recovery_point=234)
    assert (log.log_end_offset, log.recovery_point) == (265, 234)
    log.close()
    assert _diff_dirs(LOGDIR / "golden-0", dst) == []


# ------------------------------------------------------------------------------------- reading
@pytest.fixture
def txn_log(tmp_path: Path):  # noqa: ANN201 - yields a Log
    dst = tmp_path / "transactional-0"
    shutil.copytree(LOGDIR / "transactional-0", dst)
    log = _open(dst, "transactional-0")
    yield log
    log.close()


@pytest.mark.rule("R-ISO-05")
def test_offset_for_timestamp(txn_log: Log) -> None:
    def ask(ts: int) -> tuple | None:
        r = txn_log.offset_for_timestamp(ts)
        return None if r is None else (r.timestamp, r.offset, r.leader_epoch)

    assert ask(0) == (1700000050003, 0, 2)
    assert ask(1700000050100) == (1700000050100, 66, 2)
    assert ask(1700000050101) == (1700000050101, 67, 2)
    assert ask(1700000050273) == (1700000050273, 194, 3)
    assert ask(1700000050274) is None
    assert ask(-1) == (-1, 195, 3)  # latest
    assert ask(-2) == (-1, 0, 2)  # earliest
    assert ask(-3) == (1700000050273, 194, 3)  # max timestamp


@pytest.mark.rule("R-ISO-02", "R-ISO-03")
def test_read_by_offset_and_isolation(txn_log: Log) -> None:
    f = txn_log.read(100, 300)
    assert f.offset_metadata.segment_base_offset == 85 and f.offset_metadata.relative_position == 804
    assert [(b.base_offset, b.last_offset) for b in f.batches()] == [(100, 100)]  # one segment per read, as Kafka
    assert f.aborted_transactions is None
    f = txn_log.read(130, 10000, isolation=FetchIsolation.TXN_COMMITTED)
    assert [b.base_offset for b in f.batches()] == [130, 131]
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in f.aborted_transactions] == [(5002, 122, 148), (5001, 109, 149)]
    assert txn_log.read(136, 100, isolation=FetchIsolation.TXN_COMMITTED).records == b""  # at the last stable offset
    assert txn_log.read(195, 100).records == b""
    with pytest.raises(OffsetOutOfRangeError):
        txn_log.read(196, 100)
    assert [b.base_offset for b in txn_log.batches(186)][:2] == [184, 188]


# ----------------------------------------------------------------------------------- appending
def _batch(offset: int = 0, ts: int = 1700000000000, n: int = 1, **kw: object) -> bytes:
    b = RecordBatchBuilder(offset, **kw)  # type: ignore[arg-type]
    for i in range(n):
        b.append(ts + i, b"k", b"v" * 10)
    return b.build()


def test_follower_append_errors(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", clock=lambda: CLOCK, sync=False, writable=True)
    log.append(_batch(0, n=3, partition_leader_epoch=0), assign_offsets=False)
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append(_batch(2, partition_leader_epoch=0), assign_offsets=False)
    with pytest.raises(OffsetsOutOfOrderError):
        log.append(_batch(10, partition_leader_epoch=0) + _batch(5, partition_leader_epoch=0), assign_offsets=False)
    bad = bytearray(_batch(3, partition_leader_epoch=0))
    bad[-1] ^= 1
    with pytest.raises(CrcMismatchError):
        log.append(bytes(bad), assign_offsets=False)
    assert log.log_end_offset == 3
    info = log.append(_batch(3, partition_leader_epoch=0) + b"\x00\x00\x00", assign_offsets=False)  # a partial tail is dropped
    assert info.valid_bytes == len(_batch(3)) and log.log_end_offset == 4
    log.close()


def test_append_larger_than_a_segment_is_refused(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=100), sync=False, writable=True)
    with pytest.raises(RecordBatchTooLargeError):
        log.append(_batch(n=10))
    log.close()


def test_duplicate_producer_batch_is_not_appended(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", clock=lambda: CLOCK, sync=False, writable=True)
    data = _batch(producer_id=7, producer_epoch=0, base_sequence=0, n=2)
    first = log.append(data)
    again = log.append(data)
    assert again.duplicate and (again.first_offset, again.last_offset) == (first.first_offset, first.last_offset) == (0, 1)
    assert log.log_end_offset == 2
    log.close()


def test_log_append_time_is_stamped_on_uncompressed_batches(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig(message_timestamp_type=TimestampType.LOG_APPEND_TIME), clock=lambda: 1800000000000, sync=False, writable=True)
    log.append(_batch(n=3), leader_epoch=5)
    (b,) = list(log.batches())
    assert b.timestamp_type is TimestampType.LOG_APPEND_TIME and b.max_timestamp == 1800000000000 and b.is_valid
    assert [r.timestamp for r in b.records()] == [1800000000000] * 3
    assert b.partition_leader_epoch == 5
    log.close()
    assert TimeIndexEntries(tmp_path / "t-0" / "00000000000000000000.timeindex") == [(1800000000000, 2)]


def TimeIndexEntries(p: Path) -> list[tuple[int, int]]:  # noqa: N802 - reads like a constructor in asserts
    from kafkalog.format.index import TimeIndex

    t = TimeIndex.read(p)
    return list(zip(t.timestamps.tolist(), t.offsets.tolist(), strict=True))


@pytest.mark.rule("R-ROLL-03")
def test_rolls_on_full_indexes_and_segment_ms(tmp_path: Path) -> None:
    cfg = LogConfig(segment_index_bytes=24, index_interval_bytes=0, segment_ms=1000)
    log = Log.open(tmp_path / "t-0", cfg, clock=lambda: CLOCK, sync=False, writable=True)
    ts = 1700000000000
    for i in range(5):
        log.append(_batch(ts=ts + i))
    # a time index of 2 slots is full after 1 entry: a segment holds 2 appends
    assert [s.base_offset for s in log.segments] == [0, 2, 4]
    log.append(_batch(ts=ts + 5000))  # more than segment.ms after the active segment's first batch
    assert [s.base_offset for s in log.segments] == [0, 2, 4, 5]
    log.close()
    names = sorted(os.listdir(tmp_path / "t-0"))
    assert [n for n in names if n.endswith(".snapshot")] == [
        "00000000000000000002.snapshot", "00000000000000000004.snapshot", "00000000000000000005.snapshot", "00000000000000000006.snapshot",
    ]


@pytest.mark.rule("R-ROLL-04")
def test_a_roll_onto_the_empty_active_segment_replaces_it(tmp_path: Path) -> None:
    """KAFKA-6388: with segment.index.bytes 12 the time index has one slot, reserved for the roll
    entry, so it is "full" while the segment is still empty and the first append rolls onto the
    active segment's own base offset. The empty segment's files become .deleted and are removed
    after file.delete.delay.ms (LocalLog.roll, createAndDeleteSegment @1eb7644)."""
    now = [CLOCK]
    d = tmp_path / "t-0"
    log = Log.open(d, LogConfig(segment_index_bytes=12, file_delete_delay_ms=1000), clock=lambda: now[0], sync=False, writable=True)
    stems = ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex")
    log.append(_batch(n=2))
    assert [s.base_offset for s in log.segments] == [0]
    assert all((d / (n + ".deleted")).exists() and (d / n).exists() for n in stems)
    assert (d / stems[0]).stat().st_size > 0 and (d / (stems[0] + ".deleted")).stat().st_size == 0
    [pending] = log.pending_deletions
    assert pending.due_ms == CLOCK + 1000 and sorted(pending.paths) == sorted(str(d / (n + ".deleted")) for n in stems)
    log.append(_batch(n=2))  # the active segment now holds data: an ordinary roll to the log end offset
    assert [s.base_offset for s in log.segments] == [0, 2]
    assert log.delete_pending_files(CLOCK + 999) == []
    assert sorted(log.delete_pending_files(CLOCK + 1000)) == sorted(pending.paths)
    assert not any(n.endswith(".deleted") for n in os.listdir(d))
    assert [r.offset for b in log.read(0, 1 << 20).batches() for r in b.records()] == [0, 1]
    log.close()


@pytest.mark.rule("R-ROLL-04")
def test_explicit_rolls_onto_the_same_or_a_lower_base_offset(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = Log.open(d, clock=lambda: CLOCK, sync=False, writable=True)
    log.append(_batch(n=3))
    first = log.roll()
    assert first.base_offset == 3 and first.size == 0
    second = log.roll()  # nothing appended since: the empty active segment is replaced
    assert second.base_offset == 3 and second is not first and log.active_segment is second
    assert [s.base_offset for s in log.segments] == [0, 3]
    assert (d / "00000000000000000003.log.deleted").exists() and (d / "00000000000000000003.log").exists()
    # a roll beyond the log end offset leaves the log end offset where it is ...
    assert log.roll(100).base_offset == 100 and log.log_end_offset == 3
    # ... so a plain roll now targets the base of an existing, inactive segment: refused
    with pytest.raises(KafkaLogError, match="with start offset 3 while it already exists"):
        log.roll()
    with pytest.raises(KafkaLogError, match="lower than start offset of the active segment 100"):
        log.roll(5)
    # and a follower append whose offsets belong below the active segment fails the same way
    with pytest.raises(KafkaLogError, match="start offset 5 lower than start offset"):
        log.append(_batch(5, partition_leader_epoch=0), assign_offsets=False)
    assert [s.base_offset for s in log.segments] == [0, 3, 100]
    # the same base offset with data in the active segment is refused too (data written to the
    # segment without moving the log end offset, as only a bug could)
    log.active_segment.append(100, CLOCK, 100, _batch(100))
    with pytest.raises(KafkaLogError, match="while it already exists"):
        log.roll(100)
    log.close()


@pytest.mark.rule("R-ROLL-06", "R-NAME-02")
def test_flush_moves_the_recovery_point_and_checkpoints(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "orders-3", LogConfig(segment_bytes=200), clock=lambda: CLOCK, writable=True)
    for _ in range(4):
        log.append(_batch(n=2))
    assert [s.base_offset for s in log.segments] == [0, 4]
    assert log.recovery_point == 4  # the roll flushed everything below the new segment
    log.flush()
    assert log.recovery_point == log.log_end_offset == 8
    checkpoint_log_dir(tmp_path, [log])
    assert read_offset_checkpoint(tmp_path / "recovery-point-offset-checkpoint") == {("orders", 3): 8}
    assert read_offset_checkpoint(tmp_path / "log-start-offset-checkpoint") == {}
    log.close()
    assert parse_topic_partition(tmp_path / "orders-3") == ("orders", 3)
    assert parse_topic_partition(tmp_path / "my-topic-12") == ("my-topic", 12)


@pytest.mark.rule("R-CKPT-08")
def test_partition_metadata(tmp_path: Path) -> None:
    dst = tmp_path / "golden-0"
    log = Log.open(dst, sync=False, topic_id="AAAAAAAAAAAAAAAAAAAAAQ", writable=True)
    assert not (dst / "partition.metadata").exists()  # written before the first append, as Kafka does
    log.append(_batch())
    assert (dst / "partition.metadata").read_bytes() == (LOGDIR / "golden-0" / "partition.metadata").read_bytes()
    log.close()
    with pytest.raises(InconsistentTopicIdError):
        Log.open(dst, topic_id="AAAAAAAAAAAAAAAAAAAAAg", writable=True)
    assert format_partition_metadata(b"\x00" * 15 + b"\x02") == (LOGDIR / "transactional-0" / "partition.metadata").read_bytes()


# ------------------------------------------------------------------------------- state helpers
def test_java_hash_map_iteration_order() -> None:
    assert list(JavaLongHashMap([(1000, 0), (2000, 0)])) == [2000, 1000]  # buckets 8 and 0
    assert list(JavaLongHashMap([(17, 0), (1, 0)])) == [17, 1]  # one bucket: insertion order
    m = JavaLongHashMap([(17, 0), (1, 0)] + [(k, 0) for k in range(100, 111)])  # 13 keys: resized to 32 buckets
    assert list(m) == [1, *range(100, 111), 17]  # 100..110 fall in buckets 4..14
    assert list(JavaLongHashMap([(2**32, 0), (1, 0), (-1, 0)])) == [-1, 2**32, 1]  # Long.hashCode folds the high word
    # iteration orders printed by java.util.HashMap<Long, Integer> (OpenJDK 17) after putting these keys in this order
    java = {
        (5001, 5002, 5003, 6000, 17, 33, 49, 65, 81, 97, 113, 129, 145, 161, 177, 193, 1, 2, 3):
            [33, 65, 97, 129, 161, 193, 1, 2, 3, 5001, 5002, 5003, 6000, 17, 49, 81, 113, 145, 177],
        (2**32, 1, 2**33 + 1, 2, -1, -(2**32), 3 * 2**32, 3, *range(1000, 10001, 1000)):
            [-1, -(2**32), 4000, 8000, 2**32, 1, 2, 2**33 + 1, 3 * 2**32, 3, 1000, 5000, 9000, 2000, 6000, 10000, 3000, 7000],
    }
    for keys, order in java.items():
        assert list(JavaLongHashMap((k, 0) for k in keys)) == order
    m.clear()
    m[5] = 1
    assert list(m) == [5]
    del m[5]
    assert len(m) == 0


@pytest.mark.rule("R-CKPT-01")
def test_leader_epoch_cache(tmp_path: Path) -> None:
    cache = LeaderEpochCache.for_dir(tmp_path)
    assert (tmp_path / "leader-epoch-checkpoint").read_bytes() == b""  # created empty, as Kafka's CheckpointFile
    assert cache.assign(0, 0) and cache.assign(1, 88) and not cache.assign(1, 90) and cache.assign(4, 176)
    assert (tmp_path / "leader-epoch-checkpoint").read_bytes() == (LOGDIR / "golden-0" / "leader-epoch-checkpoint").read_bytes()
    assert cache.epoch_for_offset(100) == 1 and cache.epoch_for_offset(176) == 4
    assert cache.assign(2, 150)  # a lower epoch: entries at or after it are removed
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(1, 88), EpochEntry(2, 150)]
    assert format_leader_epoch_checkpoint(cache.entries) == b"0\n3\n0 0\n1 88\n2 150\n"


def test_log_config_from_properties() -> None:
    cfg = LogConfig.from_properties({"segment.bytes": "2048", "message.timestamp.type": "LogAppendTime", "cleanup.policy": "compact,delete", "preallocate": "true"})
    assert cfg.segment_bytes == 2048 and cfg.message_timestamp_type is TimestampType.LOG_APPEND_TIME and cfg.compact and cfg.delete and cfg.preallocate
    assert LogConfig().segment_index_bytes == 10485760 and LogConfig().index_interval_bytes == 4096
    with pytest.raises(ValueError):
        LogConfig.from_properties({"segment.byte": 1})
    with pytest.raises(ValueError):
        LogConfig(compression_type="brotli")


@pytest.mark.rule("R-CKPT-01", "R-CKPT-06")
def test_offset_checkpoint_writer(tmp_path: Path) -> None:
    p = tmp_path / "replication-offset-checkpoint"
    write_offset_checkpoint(p, {("a", 0): 5, ("b-c", 12): 2**40})
    assert p.read_bytes() == b"0\n2\na 0 5\nb-c 12 1099511627776\n"
    assert read_offset_checkpoint(p) == {("a", 0): 5, ("b-c", 12): 2**40}
    assert not (tmp_path / "replication-offset-checkpoint.tmp").exists()
    with pytest.raises(ValueError):
        write_offset_checkpoint(p, {("bad topic", 0): 1})


@pytest.mark.parametrize("name", sorted(p.name for p in LOGDIR.iterdir() if p.is_dir()))
def test_open_and_close_leaves_every_golden_directory_as_kafka_wrote_it(name: str, tmp_path: Path) -> None:
    """Loading and closing changes nothing, except that (as in Kafka) an empty active segment whose index
    files were never materialised gets them, recovered and trimmed to 0 bytes."""
    dst = tmp_path / name
    shutil.copytree(LOGDIR / name, dst)
    Log.open(dst, LogConfig(index_interval_bytes=256, segment_index_bytes=4096), clock=lambda: CLOCK, sync=False, writable=True).close()
    diffs = _diff_dirs(LOGDIR / name, dst)
    for n in diffs:
        assert not (LOGDIR / name / n).exists() and n.endswith((".index", ".timeindex")) and (dst / n).stat().st_size == 0
        assert (dst / n.replace(".timeindex", ".log").replace(".index", ".log")).stat().st_size == 0


@pytest.mark.rule("R-RCV-03")
def test_temporary_files_are_removed_on_open(tmp_path: Path) -> None:
    dst = tmp_path / "t-0"
    shutil.copytree(LOGDIR / "logappendtime-0", dst)
    for n in ("00000000000000000000.log.deleted", "00000000000000000007.log.cleaned", "00000000000000000007.log.swap"):
        (dst / n).write_bytes(b"x")  # a .swap at or above a .cleaned offset belongs to an incomplete split
    Log.open(dst, sync=False, writable=True).close()
    assert _diff_dirs(LOGDIR / "logappendtime-0", dst) == []
    # a .swap with no .cleaned beside it is a finished swap: it is renamed over the segment (R-CMP-14; tests/log/test_cleaner.py)
    good = (dst / "00000000000000000000.log").read_bytes()
    (dst / "00000000000000000000.log.swap").write_bytes(good)
    Log.open(dst, sync=False, writable=True).close()
    assert not (dst / "00000000000000000000.log.swap").exists()
    assert (dst / "00000000000000000000.log").read_bytes() == good


@pytest.mark.rule("R-RCV-07")
def test_recovery_keeps_a_full_index_sparse_instead_of_failing(tmp_path: Path) -> None:
    """Each reopen restarts a segment's index byte count, so replaying a segment written across
    restarts can want more index entries than its appends made; with a small segment.index.bytes
    Kafka's load then fails on a full index. kafkalog stops adding entries (found by bench/crash.py)."""
    d = tmp_path / "t-0"
    cfg = LogConfig(segment_bytes=1 << 20, segment_index_bytes=64, index_interval_bytes=256)
    offset = 0
    for _cycle in range(30):
        with Log.open(d, cfg, writable=True) as lg:  # a clean close each time
            for _ in range(2):
                b = RecordBatchBuilder(0)
                b.append(1_700_000_000_000 + offset, b"k", b"v" * 200)
                lg.append(b.build())
                offset += 1
    with Log.open(d, cfg, recovery_point=0, had_clean_shutdown=False, writable=True) as lg:
        assert [r.offset for b in lg.batches() for r in b.records()] == list(range(60))
        first = lg.segments[0]
        assert first.time_index.entries <= first.time_index.max_entries and first.offset_index.entries <= first.offset_index.max_entries
    assert verify(d).errors == []


@pytest.mark.rule("R-WR-11", "R-WR-12")
@pytest.mark.parametrize("codec,level", [("lz4", 1), ("lz4", 12), ("gzip", 1), ("zstd", 10)])
def test_broker_recompression_uses_the_topics_level(tmp_path: Path, codec: str, level: int) -> None:
    """LogConfig.compression carries compression.<codec>.level: a leader rebuilding a producer batch
    into the topic's codec compresses at that level (lz4 at a level other than 9: HC), as Kafka's
    BrokerCompressionType.targetCompression; under compression.type=producer the default level."""
    from kafkalog.format.compression import compress, decompress

    text = b"".join(b"record %d of the quick brown fox %d\n" % (i, i % 7) for i in range(400))
    b = RecordBatchBuilder(0)
    b.append(1_700_000_000_000, b"k", text)
    cfg = LogConfig.from_properties({"compression.type": codec, f"compression.{codec}.level": level})
    assert cfg.target_level(Codec.from_name(codec)) == level
    assert LogConfig.from_properties({f"compression.{codec}.level": level}).target_level(Codec.from_name(codec)) is None
    lg = Log.open(tmp_path / "t-0", cfg, clock=lambda: CLOCK, sync=False, writable=True)
    lg.append(b.build(), leader_epoch=0)
    lg.close()
    with LogReader(str(tmp_path / "t-0" / "00000000000000000000.log")) as r:
        (batch,) = list(r.batches())
    area = batch.data[61:]
    plain = decompress(batch.compression, bytes(area))
    assert batch.compression is Codec.from_name(codec)
    assert bytes(area) == compress(batch.compression, plain, level=level)
    assert bytes(area) != compress(batch.compression, plain)  # the level made a difference
