"""Producer state of one partition, kept as Kafka's ProducerStateManager keeps it.

For every producer id the partition has seen: its epoch, the metadata of its last (up to five)
data batches, the coordinator epoch of the last transaction marker, its last timestamp and the
first offset of its open transaction. The manager also tracks open transactions (to compute the
last stable offset written into ``.txnindex`` entries) and writes ``<offset>.snapshot`` files
(snapshot.py's format) at segment roll and on clean shutdown.

Snapshot entries are written in the iteration order of Kafka's ``HashMap<Long, ...>``, which this
module models exactly (:class:`JavaLongHashMap`) so that snapshots match Kafka's byte for byte.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar

from kafkalog.errors import CorruptIndexError, InvalidRecordError, KafkaLogError, ProducerStateError
from kafkalog.format.files import atomic_write, segment_file_name
from kafkalog.format.records.control import ControlType, control_type_of, parse_end_txn_marker
from kafkalog.format.records.stream import Batch
from kafkalog.format.records.v2 import RecordBatch
from kafkalog.format.snapshot import ProducerSnapshotEntry, read_producer_snapshot, write_producer_snapshot

__all__ = [
    "AppendOrigin",
    "BatchMetadata",
    "CompletedTxn",
    "JavaLongHashMap",
    "ProducerAppendInfo",
    "ProducerStateEntry",
    "ProducerStateManager",
    "SnapshotOverlay",
    "TxnMetadata",
    "decrement_sequence",
]

log = logging.getLogger(__name__)

#: ProducerStateEntry.NUM_BATCHES_TO_RETAIN
NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
SNAPSHOT_SUFFIX = ".snapshot"
#: Kafka's default producer.id.expiration.ms (1 day)
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000
_INT32_MAX = 2**31 - 1

V = TypeVar("V")


def decrement_sequence(sequence: int, decrement: int) -> int:
    """Subtract from a producer sequence, wrapping below 0 to Int32.MAX_VALUE (DefaultRecordBatch.decrementSequence)."""
    if sequence < decrement:
        return _INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


class AppendOrigin(Enum):
    """Who appends a batch; it decides how strictly producer state is validated (AppendOrigin.java)."""

    REPLICATION = "replication"
    COORDINATOR = "coordinator"
    CLIENT = "client"
    RAFT_LEADER = "raft_leader"


# ------------------------------------------------------------------------------ java.util.HashMap
class JavaLongHashMap(MutableMapping[int, V]):
    """A mapping from int64 keys that iterates in the order ``java.util.HashMap<Long, V>`` does.

    HashMap keeps a power-of-two table of buckets (16 at the first insertion, doubled when the
    size exceeds 3/4 of it); a key's bucket is ``(h ^ (h >>> 16)) & (n - 1)`` with
    ``h = (int) (key ^ (key >>> 32))`` (Long.hashCode); a bucket lists its keys in insertion order,
    and a resize splits each bucket keeping that order. Iteration walks the buckets in index
    order. Not modelled: buckets that Java turns into red-black trees (more than 8 colliding keys
    in a table of 64 buckets or more), whose order can differ.
    """

    _TREEIFY_THRESHOLD = 8
    _MIN_TREEIFY_CAPACITY = 64

    def __init__(self, items: Iterable[tuple[int, V]] = ()) -> None:
        self._values: dict[int, V] = {}
        self._table: list[list[int]] = []
        for k, v in items:
            self[k] = v

    @staticmethod
    def _spread(key: int) -> int:
        k = key & 0xFFFFFFFFFFFFFFFF
        h = (k ^ (k >> 32)) & 0xFFFFFFFF
        return h ^ (h >> 16)

    def _resize(self) -> None:
        cap = len(self._table) * 2 if self._table else 16
        table: list[list[int]] = [[] for _ in range(cap)]
        for bucket in self._table:
            for k in bucket:
                table[self._spread(k) & (cap - 1)].append(k)
        self._table = table

    def __setitem__(self, key: int, value: V) -> None:
        if key in self._values:
            self._values[key] = value
            return
        if not self._table:
            self._resize()
        bucket = self._table[self._spread(key) & (len(self._table) - 1)]
        before = len(bucket)
        bucket.append(key)
        self._values[key] = value
        if before >= self._TREEIFY_THRESHOLD and len(self._table) < self._MIN_TREEIFY_CAPACITY:
            self._resize()  # HashMap.treeifyBin resizes a small table instead of making a tree
        if len(self._values) > len(self._table) * 3 // 4:
            self._resize()

    def __getitem__(self, key: int) -> V:
        return self._values[key]

    def __delitem__(self, key: int) -> None:
        del self._values[key]
        self._table[self._spread(key) & (len(self._table) - 1)].remove(key)

    def __iter__(self) -> Iterator[int]:
        for bucket in self._table:
            yield from list(bucket)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def clear(self) -> None:
        """Remove every key (the table keeps its size, as HashMap.clear does)."""
        self._values.clear()
        for bucket in self._table:
            bucket.clear()

    def __repr__(self) -> str:
        return f"JavaLongHashMap({dict(self.items())!r})"


# ------------------------------------------------------------------------------------- entries
@dataclass(frozen=True)
class BatchMetadata:
    """A producer's batch as remembered for duplicate detection (BatchMetadata.java)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        """The batch's first sequence (wrapping as Kafka's decrementSequence)."""
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        """The batch's first offset."""
        return self.last_offset - self.offset_delta


class ProducerStateEntry:
    """One producer's state (ProducerStateEntry.java)."""

    def __init__(
        self,
        producer_id: int,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        coordinator_epoch: int = -1,
        last_timestamp: int = NO_TIMESTAMP,
        current_txn_first_offset: int | None = None,
        batch_metadata: Iterable[BatchMetadata] = (),
    ) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset
        self.batch_metadata: list[BatchMetadata] = list(batch_metadata)

    @classmethod
    def from_snapshot(cls, e: ProducerSnapshotEntry) -> ProducerStateEntry:
        """The entry a snapshot entry describes (ProducerStateManager.readSnapshot)."""
        batches = [BatchMetadata(e.last_sequence, e.last_offset, e.offset_delta, e.timestamp)] if e.last_offset >= 0 else []
        txn = e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None
        return cls(e.producer_id, e.epoch, e.coordinator_epoch, e.timestamp, txn, batches)

    def to_snapshot(self) -> ProducerSnapshotEntry:
        """The snapshot entry Kafka writes for this producer (ProducerStateManager.writeSnapshot)."""
        return ProducerSnapshotEntry(
            self.producer_id, self.producer_epoch, self.last_seq, self.last_data_offset, self.last_offset_delta,
            self.last_timestamp, self.coordinator_epoch,
            -1 if self.current_txn_first_offset is None else self.current_txn_first_offset,
        )

    @property
    def is_empty(self) -> bool:
        """True when no batch metadata is kept."""
        return not self.batch_metadata

    @property
    def first_seq(self) -> int:
        """First sequence of the oldest kept batch, -1 if none."""
        return self.batch_metadata[0].first_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        """Last sequence of the last batch, -1 if none."""
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        """First offset of the oldest kept batch, -1 if none."""
        return self.batch_metadata[0].first_offset if self.batch_metadata else -1

    @property
    def last_data_offset(self) -> int:
        """Last offset of the last batch, -1 if none."""
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    @property
    def last_offset_delta(self) -> int:
        """Offset delta of the last batch, 0 if none."""
        return self.batch_metadata[-1].offset_delta if self.batch_metadata else 0

    def copy_without_batches(self) -> ProducerStateEntry:
        """Same producer fields, no batch metadata (withProducerIdAndBatchMetadata(id, empty))."""
        return ProducerStateEntry(self.producer_id, self.producer_epoch, self.coordinator_epoch, self.last_timestamp, self.current_txn_first_offset)

    def maybe_update_producer_epoch(self, producer_epoch: int) -> bool:
        """Adopt a new epoch, forgetting the batches of the old one."""
        if self.producer_epoch != producer_epoch:
            self.batch_metadata.clear()
            self.producer_epoch = producer_epoch
            return True
        return False

    def _add_batch_metadata(self, batch: BatchMetadata) -> None:
        if len(self.batch_metadata) == NUM_BATCHES_TO_RETAIN:
            self.batch_metadata.pop(0)
        self.batch_metadata.append(batch)

    def add_batch(self, producer_epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        """Remember a data batch."""
        self.maybe_update_producer_epoch(producer_epoch)
        self._add_batch_metadata(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def update(self, nxt: ProducerStateEntry) -> None:
        """Merge the state an append produced into this entry (ProducerStateEntry.update)."""
        self.maybe_update_producer_epoch(nxt.producer_epoch)
        for b in nxt.batch_metadata:
            self._add_batch_metadata(b)
        self.coordinator_epoch = nxt.coordinator_epoch
        self.current_txn_first_offset = nxt.current_txn_first_offset
        self.last_timestamp = nxt.last_timestamp

    def find_duplicate_batch(self, producer_epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The remembered batch with the same epoch and sequence range, if any."""
        if producer_epoch != self.producer_epoch:
            return None
        return next((b for b in self.batch_metadata if b.first_seq == first_seq and b.last_seq == last_seq), None)

    def __repr__(self) -> str:
        return (
            f"ProducerStateEntry(producerId={self.producer_id}, producerEpoch={self.producer_epoch}, "
            f"currentTxnFirstOffset={self.current_txn_first_offset}, coordinatorEpoch={self.coordinator_epoch}, "
            f"lastTimestamp={self.last_timestamp}, batchMetadata={self.batch_metadata})"
        )


@dataclass(frozen=True)
class CompletedTxn:
    """A transaction ended by a marker: data from ``first_offset``, marker at ``last_offset``."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass
class TxnMetadata:
    """An open (or completed but not yet replicated) transaction."""

    producer_id: int
    first_offset: int
    last_offset: int | None = None


# ---------------------------------------------------------------------------------- append info
class ProducerAppendInfo:
    """The state change one append makes for one producer (ProducerAppendInfo.java)."""

    def __init__(self, producer_id: int, current_entry: ProducerStateEntry, origin: AppendOrigin) -> None:
        self.producer_id = producer_id
        self.current_entry = current_entry
        self.origin = origin
        self.updated_entry = current_entry.copy_without_batches()
        self.started_transactions: list[TxnMetadata] = []

    def _reject(self, msg: str, offset: int, note: Callable[[str], None]) -> None:
        """Raise :class:`ProducerStateError`, or only ``note`` the message for replicated data, which
        Kafka accepts as the leader wrote it (ProducerAppendInfo's checks for AppendOrigin.REPLICATION)."""
        if self.origin is AppendOrigin.REPLICATION:
            note(msg)
        else:
            raise ProducerStateError(msg, offset=offset)

    def _check_producer_epoch(self, producer_epoch: int, offset: int) -> None:
        if producer_epoch < self.updated_entry.producer_epoch:
            msg = (
                f"epoch of producer {self.producer_id} at offset {offset} is {producer_epoch}, "
                f"which is smaller than the last seen epoch {self.updated_entry.producer_epoch}"
            )
            self._reject(msg, offset, log.warning)

    def _check_sequence(self, producer_epoch: int, first_seq: int, offset: int) -> None:
        upd = self.updated_entry
        if producer_epoch != upd.producer_epoch:
            if first_seq != 0 and upd.producer_epoch != NO_PRODUCER_EPOCH:
                raise ProducerStateError(
                    f"invalid sequence number for new epoch of producer {self.producer_id}: {producer_epoch} (request epoch), "
                    f"{first_seq} (seq. number), {upd.producer_epoch} (current producer epoch)", offset=offset,
                )
            return
        if not upd.is_empty:
            current_last = upd.last_seq
        elif producer_epoch == self.current_entry.producer_epoch:
            current_last = self.current_entry.last_seq
        else:
            current_last = NO_SEQUENCE
        in_sequence = first_seq == current_last + 1 or (first_seq == 0 and current_last == _INT32_MAX)
        if not (self.current_entry.producer_epoch == NO_PRODUCER_EPOCH or in_sequence):
            raise ProducerStateError(
                f"out of order sequence number for producer {self.producer_id}: {first_seq} (incoming seq. number), "
                f"{current_last} (current end sequence number)", offset=offset,
            )

    def append(self, batch: Batch, first_offset: int | None = None) -> CompletedTxn | None:
        """Apply a magic 2 batch of this producer; return the transaction it completes, if any."""
        assert isinstance(batch, RecordBatch)
        if batch.is_control:
            records = batch.records()
            if not records:
                return None  # the cleaner removed the marker's transaction entirely
            record = records[0]
            try:
                ctype = control_type_of(record.key)[0]
                if ctype not in (ControlType.ABORT, ControlType.COMMIT):
                    raise InvalidRecordError(f"invalid control record type for end transaction marker: {ctype.name}")
                marker = parse_end_txn_marker(ctype, record.value)
            except KafkaLogError as e:
                raise e.located(file=batch.file, position=batch.position, offset=batch.base_offset) from None
            return self.append_end_txn_marker(ctype, marker.coordinator_epoch, batch.producer_epoch, batch.base_offset, record.timestamp)
        self.append_data_batch(
            batch.producer_epoch, batch.base_sequence, batch.last_sequence, batch.max_timestamp,
            batch.base_offset if first_offset is None else first_offset, batch.last_offset, batch.is_transactional,
        )
        return None

    def append_data_batch(
        self, epoch: int, first_seq: int, last_seq: int, last_timestamp: int, first_offset: int, last_offset: int, is_transactional: bool
    ) -> None:
        """Record a data batch (ProducerAppendInfo.appendDataBatch)."""
        self._check_producer_epoch(epoch, first_offset)
        if self.origin is AppendOrigin.CLIENT:
            self._check_sequence(epoch, first_seq, first_offset)
        self.updated_entry.add_batch(epoch, last_seq, last_offset, last_offset - first_offset, last_timestamp)
        txn_first = self.updated_entry.current_txn_first_offset
        if txn_first is not None and not is_transactional:
            raise ProducerStateError(f"expected transactional write from producer {self.producer_id}", offset=first_offset)
        if txn_first is None and is_transactional:
            self.updated_entry.current_txn_first_offset = first_offset
            self.started_transactions.append(TxnMetadata(self.producer_id, first_offset))

    def append_end_txn_marker(
        self, control_type: ControlType, coordinator_epoch: int, producer_epoch: int, offset: int, timestamp: int
    ) -> CompletedTxn | None:
        """Record a COMMIT/ABORT marker (ProducerAppendInfo.appendEndTxnMarker)."""
        self._check_producer_epoch(producer_epoch, offset)
        if self.updated_entry.coordinator_epoch > coordinator_epoch:
            msg = (
                f"invalid coordinator epoch for producer {self.producer_id} at offset {offset}: {coordinator_epoch} "
                f"(zombie), {self.updated_entry.coordinator_epoch} (current)"
            )
            self._reject(msg, offset, log.info)
        upd = self.updated_entry
        completed = None
        if upd.current_txn_first_offset is not None:
            completed = CompletedTxn(self.producer_id, upd.current_txn_first_offset, offset, control_type is ControlType.ABORT)
        upd.maybe_update_producer_epoch(producer_epoch)
        upd.coordinator_epoch = coordinator_epoch
        upd.current_txn_first_offset = None
        upd.last_timestamp = timestamp
        return completed


# ------------------------------------------------------------------------------------- manager
def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


@dataclass
class _Snapshots:
    files: dict[int, str] = field(default_factory=dict)

    def latest(self) -> int | None:
        return max(self.files) if self.files else None

    def oldest(self) -> int | None:
        return min(self.files) if self.files else None


@dataclass
class SnapshotOverlay:
    """The ``.snapshot`` files a read-only log's load would have written (their bytes) or deleted
    (their offsets), kept in memory and shared by the log's producer state managers, which then
    see the directory as a broker's load would leave it while the disk stays untouched."""

    written: dict[int, bytes] = field(default_factory=dict)
    removed: set[int] = field(default_factory=set)


class ProducerStateManager:
    """Producer state of a partition directory and its ``.snapshot`` files (ProducerStateManager.java).

    With an ``overlay`` (a read-only log) snapshot files are read but never written or deleted:
    those changes go to the overlay.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        *,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        sync: bool = True,
        overlay: SnapshotOverlay | None = None,
    ) -> None:
        self.log_dir = os.fspath(log_dir)
        self.overlay = overlay
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.sync = sync
        self.producers: JavaLongHashMap[ProducerStateEntry] = JavaLongHashMap()
        self.ongoing_txns: dict[int, TxnMetadata] = {}
        self.unreplicated_txns: dict[int, TxnMetadata] = {}
        self.last_map_offset = 0
        self.last_snap_offset = 0
        self._snapshots = _Snapshots(self._load_snapshots())

    # -- snapshot files ---------------------------------------------------------------------------
    def _load_snapshots(self) -> dict[int, str]:
        out: dict[int, str] = {}
        if not os.path.isdir(self.log_dir):
            return out
        for name in os.listdir(self.log_dir):
            if name.endswith(SNAPSHOT_SUFFIX):
                stem = name[: -len(SNAPSHOT_SUFFIX)]
                path = os.path.join(self.log_dir, name)
                if stem.isdigit() and os.path.isfile(path):
                    out[int(stem)] = path
        if self.overlay is not None:
            for off in self.overlay.removed:
                out.pop(off, None)
            for off in self.overlay.written:
                out[off] = self.snapshot_path(off)
        return out

    def _delete_file(self, offset: int, path: str) -> None:
        if self.overlay is None:
            _unlink(path)
        else:
            self.overlay.written.pop(offset, None)
            self.overlay.removed.add(offset)

    def snapshot_path(self, offset: int) -> str:
        """Where the snapshot at ``offset`` lives."""
        return os.path.join(self.log_dir, segment_file_name(offset, SNAPSHOT_SUFFIX))

    @property
    def snapshot_offsets(self) -> list[int]:
        """Offsets of the known snapshot files, ascending."""
        return sorted(self._snapshots.files)

    def latest_snapshot_offset(self) -> int | None:
        """Offset of the newest snapshot file, or None."""
        return self._snapshots.latest()

    def oldest_snapshot_offset(self) -> int | None:
        """Offset of the oldest snapshot file, or None."""
        return self._snapshots.oldest()

    def _remove_and_delete_snapshot(self, offset: int) -> None:
        path = self._snapshots.files.pop(offset, None)
        if path is not None:
            self._delete_file(offset, path)

    def remove_stray_snapshots(self, segment_base_offsets: Iterable[int]) -> None:
        """Delete snapshots without a segment, except the newest one above every segment (ProducerStateManager.removeStraySnapshots)."""
        bases = set(segment_base_offsets)
        max_base = max(bases) if bases else None
        snapshots = self._load_snapshots()
        latest_stray: int | None = None
        for off in sorted(snapshots):
            if off in bases:
                continue
            if latest_stray is not None:
                self._delete_file(latest_stray, snapshots.pop(latest_stray))
            latest_stray = off
        if latest_stray is not None and max_base is not None and latest_stray < max_base:
            self._delete_file(latest_stray, snapshots.pop(latest_stray))
        self._snapshots = _Snapshots(snapshots)

    def delete_snapshot(self, offset: int) -> None:
        """Delete the snapshot at ``offset`` if there is one."""
        self._remove_and_delete_snapshot(offset)

    def delete_snapshots_before(self, offset: int) -> None:
        """Delete the snapshots below ``offset``."""
        for off in [o for o in self._snapshots.files if o < offset]:
            self._remove_and_delete_snapshot(off)

    def snapshot_entries(self) -> list[ProducerSnapshotEntry]:
        """The entries a snapshot taken now would hold, in Kafka's order."""
        return [self.producers[pid].to_snapshot() for pid in self.producers]

    def take_snapshot(self, sync: bool | None = None) -> str | None:
        """Write ``<map end offset>.snapshot`` when the map end offset is above the last snapshot's
        offset (written or loaded), whether or not a file of that name exists; return its path
        (ProducerStateManager.takeSnapshot, SPEC R-SNAP-08)."""
        if self.last_map_offset <= self.last_snap_offset:
            return None
        path = self.snapshot_path(self.last_map_offset)
        data = write_producer_snapshot(self.snapshot_entries())
        if self.overlay is None:
            atomic_write(path, data, sync=self.sync if sync is None else sync)
        else:
            self.overlay.written[self.last_map_offset] = data
            self.overlay.removed.discard(self.last_map_offset)
        self._snapshots.files[self.last_map_offset] = path
        self.last_snap_offset = self.last_map_offset
        return path

    def _load_from_snapshot(self, log_start_offset: int, current_time_ms: int) -> None:
        while True:
            latest = self._snapshots.latest()
            if latest is None:
                self.last_snap_offset = log_start_offset
                self.last_map_offset = log_start_offset
                return
            path = self._snapshots.files[latest]
            try:
                in_memory = None if self.overlay is None else self.overlay.written.get(latest)
                entries = read_producer_snapshot(path) if in_memory is None else read_producer_snapshot(data=in_memory)
            except (CorruptIndexError, OSError) as e:
                log.warning("failed to load producer snapshot from %s: %s", path, e)
                self._remove_and_delete_snapshot(latest)
                continue
            for e in entries:
                entry = ProducerStateEntry.from_snapshot(e)
                if not self._is_expired(current_time_ms, entry):
                    self.load_producer_entry(entry)
            self.last_snap_offset = latest
            self.last_map_offset = latest
            return

    def load_producer_entry(self, entry: ProducerStateEntry) -> None:
        """Add an entry read from a snapshot."""
        self.producers[entry.producer_id] = entry
        if entry.current_txn_first_offset is not None:
            self.ongoing_txns[entry.current_txn_first_offset] = TxnMetadata(entry.producer_id, entry.current_txn_first_offset)

    def _is_expired(self, now_ms: int, entry: ProducerStateEntry) -> bool:
        return entry.current_txn_first_offset is None and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms

    def remove_expired_producers(self, now_ms: int) -> None:
        """Forget producers idle for producer.id.expiration.ms without an open transaction."""
        for pid in [p for p in self.producers if self._is_expired(now_ms, self.producers[p])]:
            del self.producers[pid]

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, current_time_ms: int) -> None:
        """Drop snapshots outside (log start, log end] and reload from the newest one (ProducerStateManager.truncateAndReload)."""
        for off in list(self._snapshots.files):
            if off > log_end_offset or off <= log_start_offset:
                self._remove_and_delete_snapshot(off)
        if log_end_offset != self.last_map_offset:
            self.producers.clear()
            self.ongoing_txns.clear()
            self.unreplicated_txns.clear()
            self._load_from_snapshot(log_start_offset, current_time_ms)
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Forget everything and delete every snapshot."""
        self.producers.clear()
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()
        for off in list(self._snapshots.files):
            self._remove_and_delete_snapshot(off)
        self.last_snap_offset = 0
        self.last_map_offset = offset

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """Drop replicated transactions below the new log start offset."""
        self._remove_unreplicated_transactions(log_start_offset)
        if self.last_map_offset < log_start_offset:
            self.last_map_offset = log_start_offset
        latest = self._snapshots.latest()
        self.last_snap_offset = log_start_offset if latest is None else latest

    # -- appends ----------------------------------------------------------------------------------
    @property
    def map_end_offset(self) -> int:
        """The offset up to which the state reflects the log."""
        return self.last_map_offset

    def update_map_end_offset(self, offset: int) -> None:
        """Set the offset the state reflects (updated after every append)."""
        self.last_map_offset = offset

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        """A producer's state, or None."""
        return self.producers.get(producer_id)

    def prepare_update(self, producer_id: int, origin: AppendOrigin) -> ProducerAppendInfo:
        """Start recording an append for ``producer_id``."""
        current = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        return ProducerAppendInfo(producer_id, current, origin)

    def update(self, info: ProducerAppendInfo) -> None:
        """Apply a recorded append (ProducerStateManager.update)."""
        if info.producer_id == NO_PRODUCER_ID:
            raise ValueError(f"invalid producer id {info.producer_id}")
        current = self.producers.get(info.producer_id)
        if current is not None:
            current.update(info.updated_entry)
        else:
            self.producers[info.producer_id] = info.updated_entry
        for txn in info.started_transactions:
            self.ongoing_txns[txn.first_offset] = txn

    def first_undecided_offset(self) -> int | None:
        """First offset of the oldest open transaction."""
        return min(self.ongoing_txns) if self.ongoing_txns else None

    def first_unstable_offset(self) -> int | None:
        """The smaller of the first undecided offset and the oldest completed-but-unreplicated transaction's."""
        cands = [o for o in (self.first_undecided_offset(), min(self.unreplicated_txns, default=None)) if o is not None]
        return min(cands) if cands else None

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The last stable offset once ``completed`` is done: the oldest other open transaction's first offset,
        else the marker's offset + 1 (ProducerStateManager.lastStableOffset)."""
        for first in sorted(self.ongoing_txns):
            if self.ongoing_txns[first].producer_id != completed.producer_id:
                return first
        return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        """Move a transaction from open to completed (ProducerStateManager.completeTxn)."""
        txn = self.ongoing_txns.pop(completed.first_offset, None)
        if txn is None:
            raise ProducerStateError(f"attempted to complete transaction {completed} which was not started", offset=completed.last_offset)
        txn.last_offset = completed.last_offset
        self.unreplicated_txns[completed.first_offset] = txn

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Forget completed transactions whose markers are below the high watermark."""
        self._remove_unreplicated_transactions(high_watermark)

    def _remove_unreplicated_transactions(self, offset: int) -> None:
        for first in [f for f, t in self.unreplicated_txns.items() if t.last_offset is not None and t.last_offset < offset]:
            del self.unreplicated_txns[first]

    def is_empty(self) -> bool:
        """True when no producer and no unreplicated transaction is known."""
        return not self.producers and not self.unreplicated_txns

    def load_producers_from_batches(self, batches: Iterable[Batch], on_completed: Callable[[CompletedTxn], None] | None = None) -> None:
        """Replay batches read from the log (UnifiedLog.loadProducersFromRecords)."""
        loaded: JavaLongHashMap[ProducerAppendInfo] = JavaLongHashMap()
        completed: list[CompletedTxn] = []
        for batch in batches:
            if isinstance(batch, RecordBatch) and batch.producer_id >= 0:
                info = loaded.get(batch.producer_id)
                if info is None:
                    info = loaded[batch.producer_id] = self.prepare_update(batch.producer_id, AppendOrigin.REPLICATION)
                txn = info.append(batch)
                if txn is not None:
                    completed.append(txn)
        for pid in loaded:
            self.update(loaded[pid])
        for txn in completed:
            if on_completed is not None:
                on_completed(txn)
            self.complete_txn(txn)
