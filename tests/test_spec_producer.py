"""Segment-manager points SPEC.md 1.2 closes (issue 35), each checked on what a segment manager does or leaves.

Expected values follow from the rules' text and the Kafka classes they cite (ProducerAppendInfo,
ProducerStateEntry, ProducerStateManager, LogValidator, UnifiedLog, PartitionMetadataFile, TransactionIndex,
LocalLog @1eb7644 and kafka-storage 4.0.2), never from kafkalog's own output pasted back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalog import LegacyBatchBuilder, LogReader, RecordBatchBuilder
from kafkalog.errors import InvalidRecordError, ProducerStateError
from kafkalog.format.records.control import ControlType
from kafkalog.format.snapshot import read_producer_snapshot
from kafkalog.format.txnindex import read_txn_index
from kafkalog.log.producer_state import AppendOrigin
from kafkalog.log.unified import Log, LogConfig

T0 = 1_700_000_000_000
DAY = 86_400_000


def _name(offset: int, ext: str) -> str:
    return f"{offset:020d}.{ext}"


def _open(d: Path, *, clock: int = T0 + 10_000, **kw: object) -> Log:
    return Log.open(d, LogConfig(), writable=True, sync=False, clock=lambda: clock, **kw)  # type: ignore[arg-type]


def _data(pid: int, epoch: int, seq: int, n: int = 1, *, ts: int = T0, txn: bool = False) -> bytes:
    b = RecordBatchBuilder(0, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn)
    for i in range(n):
        b.append(ts + i, b"k%d" % i, b"v")
    return b.build()


def _marker(pid: int, epoch: int, kind: ControlType, *, coordinator_epoch: int = 0, ts: int = T0) -> bytes:
    b = RecordBatchBuilder(0, producer_id=pid, producer_epoch=epoch, is_transactional=True, is_control=True)
    b.append_end_txn_marker(kind, coordinator_epoch, ts)
    return b.build()


def _entries(d: Path, offset: int) -> dict[int, object]:
    return {e.producer_id: e for e in read_producer_snapshot(d / _name(offset, "snapshot"))}


# ------------------------------------------------------------------------------------ R-ROLL-09
@pytest.mark.rule("R-ROLL-09", "R-SNAP-07")
def test_a_marker_with_no_open_transaction_completes_nothing(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _open(d)
    log.append(_data(5, 0, 0, 2), leader_epoch=0)  # idempotent, not transactional: no open transaction
    log.append(
        _marker(5, 0, ControlType.ABORT, coordinator_epoch=3, ts=T0 + 50),
        leader_epoch=0,
        origin=AppendOrigin.COORDINATOR,
    )
    log.append(
        _marker(8, 2, ControlType.COMMIT, coordinator_epoch=1, ts=T0 + 60),
        leader_epoch=0,
        origin=AppendOrigin.COORDINATOR,
    )
    assert log.last_stable_offset == log.log_end_offset == 4
    log.close(flush=False)
    assert not (d / _name(0, "txnindex")).exists()  # an ABORT that aborted nothing writes no entry
    e5, e8 = _entries(d, 4)[5], _entries(d, 4)[8]
    # the marker takes the coordinator epoch and its record's timestamp, closes nothing, keeps the batch metadata
    assert (e5.epoch, e5.last_sequence, e5.last_offset, e5.offset_delta) == (0, 1, 1, 1)
    assert (e5.coordinator_epoch, e5.timestamp, e5.current_txn_first_offset) == (3, T0 + 50, -1)
    # a marker of an unknown producer makes an entry without batch metadata
    assert (e8.epoch, e8.last_sequence, e8.last_offset, e8.offset_delta, e8.coordinator_epoch, e8.timestamp) == (
        2,
        -1,
        -1,
        0,
        1,
        T0 + 60,
    )


@pytest.mark.rule("R-ROLL-09")
def test_a_producer_epoch_change_clears_the_batch_metadata(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _open(d)
    for seq in range(3):
        log.append(_data(7, 0, seq), leader_epoch=0)
    log.append(_data(7, 1, 0, ts=T0 + 5), leader_epoch=0)  # a new epoch starts again at sequence 0
    with pytest.raises(ProducerStateError):
        log.append(_data(7, 0, 2), leader_epoch=0)  # the old epoch's batch: no longer a duplicate, refused
    # a follower takes a lower epoch as it comes
    follower = RecordBatchBuilder(
        log.log_end_offset, producer_id=7, producer_epoch=0, base_sequence=3, partition_leader_epoch=0
    )
    follower.append(T0 + 6, b"k", b"v")
    log.append(follower.build(), assign_offsets=False)
    # a marker of a higher epoch leaves no batch metadata
    log.append(_data(9, 0, 0), leader_epoch=0)
    log.append(_marker(9, 1, ControlType.ABORT, ts=T0 + 9), leader_epoch=0, origin=AppendOrigin.COORDINATOR)
    leo = log.log_end_offset
    log.close(flush=False)
    e7, e9 = _entries(d, leo)[7], _entries(d, leo)[9]
    assert (e7.epoch, e7.last_sequence, e7.last_offset) == (0, 3, 4)
    assert (e9.epoch, e9.last_sequence, e9.last_offset, e9.offset_delta, e9.timestamp) == (1, -1, -1, 0, T0 + 9)


@pytest.mark.rule("R-ROLL-09", "R-ROLL-08")
def test_duplicates_are_the_last_five_batches_and_sequences_must_follow(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _open(d)
    for seq in range(6):
        log.append(_data(11, 0, seq), leader_epoch=0)
    size = log.active_segment.size
    for seq in (5, 1):  # among the last five: answered with the earlier offsets, nothing written
        info = log.append(_data(11, 0, seq), leader_epoch=0)
        assert info.duplicate and (info.first_offset, info.last_offset) == (seq, seq)
    assert (log.log_end_offset, log.active_segment.size) == (6, size)
    for bad in (_data(11, 0, 0), _data(11, 0, 7), _data(11, 1, 3)):  # the sixth-last, a gap, a new epoch not at 0
        with pytest.raises(ProducerStateError):
            log.append(bad, leader_epoch=0)
    assert log.log_end_offset == 6
    log.append(_data(11, 1, 0), leader_epoch=0)
    log.append(_data(12, 0, 40), leader_epoch=0)  # an unknown producer may start at any sequence
    assert log.log_end_offset == 8
    log.close(flush=False)


# -------------------------------------------------------------------------------------- R-WR-13
@pytest.mark.rule("R-WR-13")
def test_a_leader_append_is_one_batch_or_uncompressed_legacy_messages_of_one_magic(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _open(d)
    first, second = RecordBatchBuilder(0), RecordBatchBuilder(1)
    first.append(T0, b"a", b"1")
    second.append(T0, b"b", b"2")
    with pytest.raises(InvalidRecordError):
        log.append(first.build() + second.build(), leader_epoch=0)
    m0, m1 = LegacyBatchBuilder(0, 0), LegacyBatchBuilder(1, 1)
    m0.append(-1, b"a", b"1")
    m1.append(T0, b"b", b"2")
    with pytest.raises(InvalidRecordError):
        log.append(m0.build() + m1.build(), leader_epoch=0)  # magic 0 then magic 1
    assert log.log_end_offset == 0 and log.active_segment.size == 0
    several = LegacyBatchBuilder(1, 0)
    for i in range(3):
        several.append(T0 + i, b"k%d" % i, b"v")
    info = log.append(several.build(), leader_epoch=0)  # three magic 1 messages: one rebuilt magic 2 batch
    assert (info.first_offset, info.last_offset) == (0, 2)
    [batch] = list(log.active_segment.batches())
    assert (batch.magic, batch.count) == (2, 3)
    # a follower writes several batches of one fetch as they are
    f1, f2 = RecordBatchBuilder(3, partition_leader_epoch=0), RecordBatchBuilder(4, partition_leader_epoch=0)
    f1.append(T0, b"a", b"1")
    f2.append(T0, b"b", b"2")
    log.append(f1.build() + f2.build(), assign_offsets=False)
    assert log.log_end_offset == 5 and len(list(log.active_segment.batches())) == 3
    log.close(flush=False)


# ------------------------------------------------------------------------------------- R-CKPT-12
@pytest.mark.rule("R-CKPT-12")
def test_partition_metadata_is_written_by_the_next_append_or_close_not_by_a_flush(tmp_path: Path) -> None:
    tid = "AAAAAAAAAAAAAAAAAAAAAQ"
    d = tmp_path / "t-0"
    log = _open(d, topic_id=tid)
    log.flush()
    # kafkalog writes it at the next append or close (writing it at once, as Kafka's task does, is allowed too)
    assert not (d / "partition.metadata").exists()
    log.append(_data(-1, -1, -1), leader_epoch=0)
    assert (d / "partition.metadata").read_bytes() == b"version: 0\ntopic_id: " + tid.encode()
    assert not (d / "partition.metadata.tmp").exists()
    log.close(flush=False)
    d2 = tmp_path / "u-0"
    _open(d2, topic_id=tid).close(flush=False)  # no append: the close writes it
    assert (d2 / "partition.metadata").read_bytes() == b"version: 0\ntopic_id: " + tid.encode()


# -------------------------------------------------------------------------------------- R-RCV-07
@pytest.mark.rule("R-RCV-07")
def test_recovery_empties_the_txnindex_but_keeps_the_file(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _open(d)
    log.append(_data(3, 0, 0, 2, txn=True), leader_epoch=0)
    marker_at = log.active_segment.size
    log.append(_marker(3, 0, ControlType.ABORT), leader_epoch=0, origin=AppendOrigin.COORDINATOR)
    log.append(_data(4, 0, 0), leader_epoch=0)
    log.close(flush=False)
    assert len(read_txn_index(d / _name(0, "txnindex"))) == 1
    with open(d / _name(0, "log"), "r+b") as f:  # a crash lost the marker and what followed
        f.truncate(marker_at)
    for snap in d.glob("*.snapshot"):
        snap.unlink()
    log = _open(d, had_clean_shutdown=False, recovery_point=0)
    assert (d / _name(0, "txnindex")).stat().st_size == 0  # truncated by the recovery, not deleted
    log.close(flush=False)
    # a segment that had no .txnindex and replays no ABORT gets none
    d2 = tmp_path / "u-0"
    log = _open(d2)
    log.append(_data(4, 0, 0), leader_epoch=0)
    log.close(flush=False)
    _open(d2, had_clean_shutdown=False, recovery_point=0).close(flush=False)
    assert not (d2 / _name(0, "txnindex")).exists()


# -------------------------------------------------------------------------------------- R-RCV-09
@pytest.mark.rule("R-RCV-09")
def test_the_snapshot_expires_producers_at_the_clock_of_the_load(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _open(d)
    log.append(_data(21, 0, 0, ts=T0), leader_epoch=0)  # last timestamp T0 (a record timestamp)
    log.close(flush=False)
    assert set(_entries(d, 1)) == {21}
    # a clean load reads the snapshot and drops the producer once now - T0 reaches producer.id.expiration.ms
    log = _open(d, clock=T0 + DAY - 1)
    assert 21 in log.producer_state.producers
    log.close(flush=False)
    log = _open(d, clock=T0 + DAY)
    assert 21 not in log.producer_state.producers
    log.close(flush=False)


@pytest.mark.rule("R-RCV-09")
def test_a_recovered_producer_is_expired_by_the_final_load_not_by_the_recovery(tmp_path: Path) -> None:
    """The recovery of a segment replays the producer into a fresh state and snapshots it (no expiry: the
    replay does not expire); the final rebuild starts from another fresh state (end offset 0, not the LEO: no
    reload shortcut), loads that snapshot and expires the producer at the clock of the load."""
    d = tmp_path / "t-0"
    log = _open(d)
    log.append(_data(22, 0, 0, ts=T0), leader_epoch=0)
    log.close(flush=False)
    for snap in d.glob("*.snapshot"):
        snap.unlink()
    log = _open(d, clock=T0 + 2 * DAY, had_clean_shutdown=False, recovery_point=0)
    assert 22 not in log.producer_state.producers
    log.close(flush=False)
    assert set(_entries(d, 1)) == {22}  # the recovery's snapshot, not rewritten: the end offset did not pass 1


@pytest.mark.rule("R-RCV-09")
def test_the_reload_shortcut_when_the_state_is_already_at_the_end_offset(tmp_path: Path) -> None:
    """An empty log at offset 0: the fresh state's end offset is already E = 0, so no snapshot is read."""
    d = tmp_path / "t-0"
    _open(d).close(flush=False)
    assert not list(d.glob("*.snapshot"))  # E = 0 is not above the last snapshot offset (R-SNAP-08)
    log = _open(d, clock=T0 + 2 * DAY, had_clean_shutdown=False, recovery_point=0)
    assert log.log_end_offset == 0 and not log.producer_state.producers
    log.close(flush=False)


# -------------------------------------------------------------------------------------- R-CMP-09
@pytest.mark.rule("R-CMP-09", "R-TXN-05")
def test_the_cleaner_collects_aborted_transactions_from_the_log_start_and_stops_as_a_fetch_does(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _open(d)
    for pid in (1, 2, 3):  # three aborted transactions, one after the other
        log.append(_data(pid, 0, 0, 2, txn=True), leader_epoch=0)
        log.append(_marker(pid, 0, ControlType.ABORT), leader_epoch=0, origin=AppendOrigin.COORDINATOR)
    entries = read_txn_index(d / _name(0, "txnindex"))
    assert [(e.first_offset, e.last_offset) for e in entries] == [(0, 2), (3, 5), (6, 8)]
    # the stop: the first entry whose lastStableOffset reaches the bound ends the walk
    bound = entries[0].last_stable_offset
    got = log.collect_aborted_transactions(0, bound)
    assert [t.producer_id for t in got] == [1]
    # the cleaner's lower bound is the log start offset, not the segment's base offset
    assert log.maybe_increment_log_start_offset(4)
    lso = log.log_start_offset
    assert [t.producer_id for t in log.collect_aborted_transactions(0, 9, min_last_offset=lso)] == [2, 3]
    assert [t.producer_id for t in log.collect_aborted_transactions(0, 9)] == [1, 2, 3]
    log.close(flush=False)


@pytest.mark.rule("R-RCV-09")
def test_the_replay_starts_inside_the_segment_at_the_snapshot_offset(tmp_path: Path) -> None:
    """Snapshot at offset 1 inside segment 0: the producer before it comes only from the snapshot (and is
    expired there), the one after it is replayed from the log (and kept); a replay from the segment's base
    offset would bring the first one back."""
    d = tmp_path / "t-0"
    log = _open(d)
    log.append(_data(31, 0, 0, ts=T0), leader_epoch=0)
    log.close(flush=False)  # snapshot at 1
    log = _open(d)
    log.append(_data(32, 0, 0, ts=T0 + DAY), leader_epoch=0)
    log.close(flush=False)
    (d / _name(2, "snapshot")).unlink()  # as if the broker stopped before its last snapshot
    assert [p.name for p in d.glob("*.snapshot")] == [_name(1, "snapshot")]
    log = _open(d, clock=T0 + DAY)
    assert sorted(log.producer_state.producers) == [32]
    log.close(flush=False)


@pytest.mark.rule("R-CMP-09")
def test_the_cleaner_does_not_abort_data_whose_abort_entry_is_below_the_log_start(tmp_path: Path) -> None:
    """The aborted transaction 0-2 ends below the log start offset 3, so the cleaner does not collect it: its
    data batch is a transaction under way that is not aborted (kept), its marker removable (stamped, kept)."""
    from kafkalog.log.cleaner import clean

    d = tmp_path / "t-0"
    log = Log.open(d, LogConfig(cleanup_policy=("compact",)), writable=True, sync=False, clock=lambda: T0)
    log.append(_data(1, 0, 0, 2, txn=True), leader_epoch=0)  # offsets 0, 1: keys k0, k1
    log.append(_marker(1, 0, ControlType.ABORT), leader_epoch=0, origin=AppendOrigin.COORDINATOR)  # offset 2
    b = RecordBatchBuilder(0)
    b.append(T0, b"other", b"v")
    log.append(b.build(), leader_epoch=0)  # offset 3
    log.roll()
    assert log.maybe_increment_log_start_offset(3)
    clean(log, 3, 4, T0 + 1000)
    log.close(flush=False)
    kept = [(r.offset, r.key) for batch in LogReader(d / _name(0, "log")).batches() for r in batch.records()]
    assert kept[:2] == [(0, b"k0"), (1, b"k1")]  # not removed as aborted data
