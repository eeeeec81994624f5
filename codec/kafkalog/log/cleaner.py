"""Log compaction of one partition directory, as Kafka's log cleaner does it (SPEC §6.4).

The rules are Kafka's (LogCleaner.scala, LogCleanerManager.scala, MemoryRecords.filterTo,
SkimpyOffsetMap.java, LocalLog.replaceSegments @1eb7644):

* which range is cleaned: from the first dirty offset (the ``cleaner-offset-checkpoint`` entry,
  else the log start offset) to the first uncleanable offset (the lowest of the last stable
  offset, the active segment's base offset and the first segment still inside
  ``min.compaction.lag.ms``); a log is picked when its dirty ratio is above
  ``min.cleanable.dirty.ratio`` or ``max.compaction.lag.ms`` forces it;
* an offset map (key hash -> latest offset) is built over the dirty range, skipping aborted
  transactional batches, until it is ``load factor`` full;
* segments below the map's end are grouped (``segment.bytes`` and ``segment.index.bytes``
  limits) and each group is rewritten into one ``.cleaned`` segment: a record is kept when it is
  past the map's end or is its key's latest; tombstones and transaction markers are kept until
  their batch's delete horizon (stamped ``now + delete.retention.ms`` on the first pass that sees
  them) has passed; aborted data is dropped; a batch keeps its base and last offsets, and an
  emptied batch is kept as a bare header when it holds an active producer's last sequence or
  ends the cleaning round;
* the cleaned segment is swapped in by renames ``.cleaned`` -> ``.swap``, old files ->
  ``.deleted``, ``.swap`` -> final, so that :meth:`kafkalog.log.unified.Log.open` can finish or undo
  an interrupted swap.

Use :func:`compact` for a whole pass (range, ratio check, cleaning, checkpoint) or :func:`clean`
for Kafka's ``Cleaner.clean`` on a given range.
"""

from __future__ import annotations

import hashlib
import heapq
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafkalog.errors import CleaningAbortedError, IndexOffsetOverflowError, KafkaLogError
from kafkalog.format.checkpoints import read_offset_checkpoint, write_offset_checkpoint
from kafkalog.format.records.control import ControlType
from kafkalog.format.records.legacy import LegacyBatch, LegacyBatchBuilder
from kafkalog.format.records.record import Record, TimestampType
from kafkalog.format.records.stream import Batch, LogReader
from kafkalog.format.records.v2 import RecordBatch, RecordBatchBuilder
from kafkalog.format.txnindex import AbortedTxn
from kafkalog.log.retention import delete_pending_files
from kafkalog.log.segment import Segment
from kafkalog.log.split import split_overflowed_segment
from kafkalog.log.swap import StepHook, new_cleaned_segment, replace_segments
from kafkalog.log.unified import Log, parse_topic_partition

__all__ = [
    "CLEANER_OFFSET_CHECKPOINT",
    "CleanResult",
    "CleanerConfig",
    "CompactResult",
    "GroupResult",
    "LastRecord",
    "LogToClean",
    "OffsetMap",
    "cleanable_offsets",
    "clean",
    "compact",
    "group_segments_by_size",
    "last_records_of_active_producers",
    "log_to_clean",
    "max_compaction_delay",
]

log = logging.getLogger(__name__)

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
_LONG_MAX = 2**63 - 1
_INT32_MAX = 2**31 - 1
_RECORD_BATCH_OVERHEAD = 61
_NO_TIMESTAMP = -1


@dataclass(frozen=True)
class CleanerConfig:
    """Broker-side cleaner settings; defaults are Kafka's for one cleaner thread (CleanerConfig.java @1eb7644).

    ``io_buffer_size`` is the size of each of the read and write buffers (Kafka: half of
    ``log.cleaner.io.buffer.size`` per thread); ``max_io_buffer_size`` is the broker's
    ``message.max.bytes``, the most a buffer grows to.
    """

    dedupe_buffer_size: int = 128 * 1024 * 1024
    dedupe_buffer_load_factor: float = 0.9
    io_buffer_size: int = 512 * 1024 // 2
    max_io_buffer_size: int = 1024 * 1024 + 12
    hash_algorithm: str = "MD5"

    def __post_init__(self) -> None:
        slots = OffsetMap.slots_for(self.dedupe_buffer_size, self.hash_algorithm)
        if slots * self.dedupe_buffer_load_factor <= 1:
            raise ValueError("offset map is too small to fit even a single key; raise dedupe_buffer_size")
        if self.io_buffer_size <= 0:
            raise ValueError(f"io_buffer_size must be positive, got {self.io_buffer_size}")


class OffsetMap:
    """Key -> latest offset, with the capacity and fullness rule of Kafka's SkimpyOffsetMap.

    Keys are stored by their digest (MD5 by default), ``slots`` is ``memory // (digest size + 8)``
    and the map counts as full at ``slots * load factor`` entries, as the cleaner uses it. A dict
    replaces Kafka's open-addressing table: lookups give the same answers unless two keys share
    a digest, where both maps merge them alike.
    """

    def __init__(self, memory: int, hash_algorithm: str = "MD5") -> None:
        self.hash_algorithm = hash_algorithm
        self.slots = self.slots_for(memory, hash_algorithm)
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1

    @staticmethod
    def slots_for(memory: int, hash_algorithm: str = "MD5") -> int:
        """Number of entries ``memory`` bytes hold (SkimpyOffsetMap.slots)."""
        return memory // (hashlib.new(hash_algorithm).digest_size + 8)

    def _digest(self, key: bytes) -> bytes:
        return hashlib.new(self.hash_algorithm, key).digest()

    def __len__(self) -> int:
        return len(self._map)

    def put(self, key: bytes, offset: int) -> None:
        """Record ``offset`` as the latest for ``key`` and as the map's latest offset."""
        if len(self._map) >= self.slots:
            raise ValueError(f"attempted to add a new entry to a full offset map ({self.slots} slots)")
        self._map[self._digest(key)] = offset
        self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The latest offset seen for ``key``, or -1."""
        return self._map.get(self._digest(key), -1)

    def update_latest_offset(self, offset: int) -> None:
        """Move the map's latest offset (end of a segment with an offset gap, a batch's last offset)."""
        self.latest_offset = offset

    def clear(self) -> None:
        """Forget every key and the latest offset."""
        self._map.clear()
        self.latest_offset = -1


@dataclass(frozen=True)
class LastRecord:
    """An active producer's last data offset (None when its last entry is a marker) and epoch (UnifiedLog.lastRecordsOfActiveProducers)."""

    last_data_offset: int | None
    producer_epoch: int


def last_records_of_active_producers(lg: Log) -> dict[int, LastRecord]:
    """The producers the log's producer state holds, with their last data offset and epoch."""
    out: dict[int, LastRecord] = {}
    for pid in lg.producer_state.producers:
        entry = lg.producer_state.producers[pid]
        last = entry.last_data_offset
        out[pid] = LastRecord(last if last >= 0 else None, entry.producer_epoch)
    return out


# ------------------------------------------------------------------------- LogCleanerManager
@dataclass(frozen=True)
class LogToClean:
    """A log's cleanable range and its byte counts (LogCleaner.LogToClean)."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool
    force_update_checkpoint: bool = False

    @property
    def total_bytes(self) -> int:
        """Clean plus cleanable bytes."""
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        """Cleanable bytes over total bytes (NaN for an empty log, as Kafka's double division)."""
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else float("nan")

    def should_clean(self, min_cleanable_dirty_ratio: float) -> bool:
        """LogCleanerManager.grabFilthiestCompactedLog's test: not empty, and forced by
        max.compaction.lag.ms with bytes to clean, or dirtier than ``min_cleanable_dirty_ratio``."""
        if self.total_bytes <= 0:
            return False
        return (self.need_compaction_now and self.cleanable_bytes > 0) or self.cleanable_ratio > min_cleanable_dirty_ratio

    def to_json(self) -> dict[str, object]:
        """Machine-readable form for the CLI."""
        ratio = self.cleanable_ratio
        return {
            "firstDirtyOffset": self.first_dirty_offset, "firstUncleanableOffset": self.first_uncleanable_offset,
            "cleanBytes": self.clean_bytes, "cleanableBytes": self.cleanable_bytes,
            "cleanableRatio": None if ratio != ratio else ratio, "needCompactionNow": self.need_compaction_now,
        }


def _non_active_segments_from(lg: Log, offset: int) -> list[Segment]:
    """UnifiedLog.nonActiveLogSegmentsFrom: segments holding offsets in [offset, active base)."""
    active = lg.active_segment.base_offset
    return lg.segments_in_range(offset, active) if offset <= active else []


def cleanable_offsets(lg: Log, last_clean_offset: int | None, now_ms: int) -> tuple[int, int, bool]:
    """(first dirty offset, first uncleanable offset, checkpoint must be rewritten) (LogCleanerManager.cleanableOffsets)."""
    start = lg.log_start_offset
    checkpointed = start if last_clean_offset is None else last_clean_offset
    if checkpointed < start:
        first_dirty, force = start, True
    elif checkpointed > lg.log_end_offset:
        log.warning("checkpointed clean offset %d of %s is past the log end %d: cleaning from the log start", checkpointed, lg.dir, lg.log_end_offset)
        first_dirty, force = start, True
    else:
        first_dirty, force = checkpointed, False
    lag = max(lg.config.min_compaction_lag_ms, 0)
    candidates = [lg.last_stable_offset, lg.active_segment.base_offset]
    if lag > 0:
        for seg in _non_active_segments_from(lg, first_dirty):
            if seg.largest_timestamp > now_ms - lag:
                candidates.append(seg.base_offset)
                break
    return first_dirty, max(first_dirty, min(candidates)), force


def max_compaction_delay(lg: Log, first_dirty_offset: int, now_ms: int) -> int:
    """How long past max.compaction.lag.ms the oldest dirty segment's first batch is (0 if not) (LogCleanerManager.maxCompactionDelay)."""
    stamps = [s.first_batch_timestamp for s in _non_active_segments_from(lg, first_dirty_offset)]
    earliest = min((t for t in stamps if t is not None and t > 0), default=_LONG_MAX)
    until = now_ms - max(lg.config.max_compaction_lag_ms, 0)
    return until - earliest if earliest < until else 0


def log_to_clean(lg: Log, last_clean_offset: int | None, now_ms: int) -> LogToClean:
    """The cleanable range and byte counts LogCleanerManager computes for ``lg`` at ``now_ms``."""
    first_dirty, uncleanable, force = cleanable_offsets(lg, last_clean_offset, now_ms)
    delay = max_compaction_delay(lg, first_dirty, now_ms)
    clean_bytes = sum(s.size for s in lg.segments_in_range(-1, first_dirty)) if first_dirty > -1 else 0
    later = _non_active_segments_from(lg, uncleanable)
    first_uncleanable = (later[0] if later else lg.active_segment).base_offset
    cleanable = sum(s.size for s in lg.segments_in_range(min(first_dirty, first_uncleanable), first_uncleanable))
    return LogToClean(first_dirty, first_uncleanable, clean_bytes, cleanable, delay > 0, force)


# -------------------------------------------------------------------------------- grouping
def group_segments_by_size(segments: Iterable[Segment], max_size: int, max_index_size: int, first_uncleanable_offset: int) -> list[list[Segment]]:
    """Consecutive segments whose summed log, offset-index and time-index sizes stay within the
    limits and whose offsets fit one segment's relative offsets (Cleaner.groupSegmentsBySize)."""
    segs = list(segments)
    groups: list[list[Segment]] = []
    i = 0
    while i < len(segs):
        group = [segs[i]]
        log_size = segs[i].size
        index_size = segs[i].offset_index.size_in_bytes
        time_index_size = segs[i].time_index.size_in_bytes
        i += 1
        while i < len(segs):
            head = segs[i]
            last_offset = segs[i + 1].base_offset - 1 if i + 1 < len(segs) else first_uncleanable_offset - 1
            if not (
                log_size + head.size <= max_size
                and index_size + head.offset_index.size_in_bytes <= max_index_size
                and time_index_size + head.time_index.size_in_bytes <= max_index_size
                and (head.size == 0 or last_offset - group[-1].base_offset <= _INT32_MAX)
            ):
                break
            group.append(head)
            log_size += head.size
            index_size += head.offset_index.size_in_bytes
            time_index_size += head.time_index.size_in_bytes
            i += 1
        groups.append(group)
    return groups


# ------------------------------------------------------------------------ transaction state
@dataclass
class _AbortedMeta:
    """An aborted transaction under way, with the last offset of its data seen so far (AbortedTransactionMetadata)."""

    txn: AbortedTxn
    last_observed: int | None = None


class _TxnMetadata:
    """Transactions seen while cleaning: which batches are aborted and which markers may go (CleanedTransactionMetadata)."""

    def __init__(self) -> None:
        self.ongoing_committed: set[int] = set()
        self.ongoing_aborted: dict[int, _AbortedMeta] = {}
        self._heap: list[tuple[int, int, AbortedTxn]] = []
        self._seq = 0
        self.cleaned_index: Segment | None = None

    def add_aborted(self, txns: Iterable[AbortedTxn]) -> None:
        for t in txns:
            heapq.heappush(self._heap, (t.first_offset, self._seq, t))
            self._seq += 1

    def _consume_up_to(self, offset: int) -> None:
        while self._heap and self._heap[0][0] <= offset:
            txn = heapq.heappop(self._heap)[2]
            self.ongoing_aborted.setdefault(txn.producer_id, _AbortedMeta(txn))

    def on_control_batch(self, batch: RecordBatch) -> bool:
        """True when the marker may be discarded (its transaction has no data left in the log)."""
        self._consume_up_to(batch.last_offset)
        records = batch.records()
        if not records:
            return True  # an emptied control batch
        try:
            ctype = batch.control_type(records[0])
        except KafkaLogError:
            return False  # an unknown control type is kept, as Kafka's ControlRecordType.UNKNOWN
        pid = batch.producer_id
        if ctype is ControlType.ABORT:
            meta = self.ongoing_aborted.pop(pid, None)
            if meta is not None and meta.last_observed is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.txn_index.append(meta.txn)
                return False
            return True
        if ctype is ControlType.COMMIT:
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_batch(self, batch: Batch) -> bool:
        """True when ``batch`` belongs to an aborted transaction."""
        self._consume_up_to(batch.last_offset)
        if isinstance(batch, RecordBatch) and batch.is_transactional:
            meta = self.ongoing_aborted.get(batch.producer_id)
            if meta is not None:
                meta.last_observed = batch.last_offset
                return True
            self.ongoing_committed.add(batch.producer_id)
        return False


# ------------------------------------------------------------------------------- results
@dataclass
class GroupResult:
    """One group of segments cleaned into one segment."""

    replaced: list[int]
    base_offset: int
    bytes_read: int = 0
    bytes_written: int = 0
    messages_read: int = 0
    messages_written: int = 0

    def to_json(self) -> dict[str, object]:
        """Machine-readable form for the CLI."""
        return {
            "replacedSegments": self.replaced, "baseOffset": self.base_offset, "bytesRead": self.bytes_read,
            "bytesWritten": self.bytes_written, "messagesRead": self.messages_read, "messagesWritten": self.messages_written,
        }


@dataclass
class CleanResult:
    """What :func:`clean` did: the next first dirty offset and the groups written."""

    end_offset: int
    groups: list[GroupResult] = field(default_factory=list)
    map_messages_read: int = 0
    map_entries: int = 0
    renamed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        """Machine-readable form for the CLI."""
        return {
            "endOffset": self.end_offset, "offsetMapEntries": self.map_entries,
            "groups": [g.to_json() for g in self.groups], "removedFiles": [os.path.basename(p) for p in self.removed],
        }


@dataclass
class CompactResult:
    """What :func:`compact` decided and did (``cleaned`` is None when the log was not dirty enough)."""

    now_ms: int
    to_clean: LogToClean
    cleaned: CleanResult | None
    checkpoint: str | None

    def to_json(self) -> dict[str, object]:
        """Machine-readable form for the CLI."""
        return {
            "nowMs": self.now_ms, "range": self.to_clean.to_json(), "cleaned": self.cleaned is not None,
            "result": None if self.cleaned is None else self.cleaned.to_json(), "checkpoint": self.checkpoint,
        }


# ---------------------------------------------------------------------------------- reading
def _read_chunk(path: str, fd: int, position: int, size: int, capacity: int) -> tuple[list[Batch], bytes]:
    """The whole batches in ``capacity`` bytes read from ``position`` (FileRecords.readInto + MemoryRecords.batches)."""
    data = os.pread(fd, min(capacity, size - position), position)
    reader = LogReader(data, name=path)
    batches = []
    for b in reader.batches():
        b.position += position
        batches.append(b)
    return batches, data


def _grow(capacity: int, batch_size: int | None, path: str, position: int, segment_size: int, max_message_size: int, cfg: CleanerConfig) -> int:
    """Cleaner.growBuffersOrFail: the next buffer capacity when not even one batch fitted."""
    if capacity >= max_message_size:
        if batch_size is None or batch_size <= 0:
            raise KafkaLogError(f"could not determine the size of the next batch (buffer {capacity} bytes)", file=path, position=position)
        if batch_size <= capacity:
            raise KafkaLogError(f"batch of {batch_size} bytes fits the {capacity}-byte buffer but was not read", file=path, position=position)
        if batch_size > segment_size - position:
            raise KafkaLogError(f"log segment may be corrupt: batch size {batch_size} > {segment_size - position} bytes left", file=path, position=position)
        wanted = batch_size
    else:
        wanted = max_message_size
    limit = max(wanted, cfg.max_io_buffer_size)
    if capacity >= limit:
        raise KafkaLogError(f"this log contains a batch larger than the maximum allowed size of {limit}", file=path, position=position)
    return min(capacity * 2, limit)


def _next_batch_size(data: bytes) -> int | None:
    return int.from_bytes(data[8:12], "big", signed=True) + 12 if len(data) >= 17 else None


# -------------------------------------------------------------------------------- offset map
def _build_offset_map(lg: Log, start: int, end: int, omap: OffsetMap, cfg: CleanerConfig) -> int:
    """Fill ``omap`` from the dirty segments in [start, end) (Cleaner.buildOffsetMap); returns messages read."""
    omap.clear()
    dirty = lg.segments_in_range(start, end)
    nexts = [s.base_offset for s in dirty[1:]] + [end]
    txns = _TxnMetadata()
    txns.add_aborted(lg.collect_aborted_transactions(start, end, min_last_offset=lg.log_start_offset))
    max_entries = int(omap.slots * cfg.dedupe_buffer_load_factor)
    read = 0
    for seg, next_start in zip(dirty, nexts, strict=True):
        full, n = _map_segment(lg, seg, omap, start, next_start, txns, max_entries, cfg)
        read += n
        if full:
            log.debug("offset map full in segment %d of %s", seg.base_offset, lg.dir)
            break
    return read


def _map_segment(
    lg: Log, seg: Segment, omap: OffsetMap, start: int, next_start: int, txns: _TxnMetadata, max_entries: int, cfg: CleanerConfig
) -> tuple[bool, int]:
    position = seg.offset_index.lookup(start)[1]
    capacity = cfg.io_buffer_size
    fd = os.open(seg.log_path, os.O_RDONLY)
    read = 0
    try:
        while position < seg.size:
            batches, data = _read_chunk(seg.log_path, fd, position, seg.size, capacity)
            for batch in batches:
                if isinstance(batch, RecordBatch) and batch.is_control:
                    txns.on_control_batch(batch)
                    read += 1
                elif txns.on_batch(batch):
                    read += batch.count if isinstance(batch, RecordBatch) else 1
                else:
                    for r in batch.records():
                        if r.key is not None and r.offset >= start:
                            if len(omap) < max_entries:
                                omap.put(r.key, r.offset)
                            else:
                                return True, read
                        read += 1
                if batch.last_offset >= start:
                    omap.update_latest_offset(batch.last_offset)
            consumed = sum(b.size_in_bytes for b in batches)
            if consumed == 0:
                capacity = _grow(capacity, _next_batch_size(data), seg.log_path, position, seg.size, lg.config.max_message_bytes, cfg)
            position += consumed
    finally:
        os.close(fd)
    omap.update_latest_offset(next_start - 1)
    return False, read


# ------------------------------------------------------------------------------- filtering
class _Filter:
    """The cleaner's record filter for one segment (Cleaner.cleanInto's RecordFilter)."""

    def __init__(
        self, omap: OffsetMap, now_ms: int, delete_retention_ms: int, retain_legacy_deletes: bool, txns: _TxnMetadata,
        active: dict[int, LastRecord], keep_empty_at: int,
    ) -> None:
        self.omap = omap
        self.now = now_ms
        self.delete_retention_ms = delete_retention_ms
        self.retain_legacy_deletes = retain_legacy_deletes
        self.txns = txns
        self.active = active
        self.keep_empty_at = keep_empty_at
        self.discard_records = False

    def batch_retention(self, batch: Batch) -> tuple[str, bool]:
        """("delete" | "retain_empty" | "delete_empty", batch is a marker of an emptied transaction)."""
        is_control = isinstance(batch, RecordBatch) and batch.is_control
        can_discard = self.txns.on_control_batch(batch) if is_control else self.txns.on_batch(batch)  # type: ignore[arg-type]
        if is_control:
            horizon = batch.delete_horizon_ms  # type: ignore[union-attr]
            self.discard_records = can_discard and horizon is not None and horizon <= self.now
        else:
            self.discard_records = can_discard
        if isinstance(batch, RecordBatch) and batch.producer_id >= 0 and self._holds_last_record(batch):
            retention = "retain_empty"
        elif batch.next_offset == self.keep_empty_at:
            retention = "retain_empty"  # keep the round's last offset (up to 4.3) or the high watermark's (4.4)
        elif self.discard_records:
            retention = "delete"
        else:
            retention = "delete_empty"
        return retention, can_discard and is_control

    def _holds_last_record(self, batch: RecordBatch) -> bool:
        last = self.active.get(batch.producer_id)
        if last is None:
            return False
        if last.last_data_offset is not None:
            return batch.last_offset == last.last_data_offset
        return batch.is_control and batch.producer_epoch == last.producer_epoch

    def retain(self, batch: Batch, record: Record) -> bool:
        """Cleaner.shouldRetainRecord under the batch decision."""
        if self.discard_records:
            return False
        if isinstance(batch, RecordBatch) and batch.is_control:
            return True
        if record.offset > self.omap.latest_offset:
            return True
        if record.key is None:
            return False
        latest = record.offset >= self.omap.get(record.key)
        if record.value is not None:
            return latest
        if batch.magic >= 2:
            horizon = batch.delete_horizon_ms  # type: ignore[union-attr]
            keep_delete = horizon is None or self.now < horizon
        else:
            keep_delete = self.retain_legacy_deletes
        return latest and keep_delete


@dataclass
class _Chunk:
    """MemoryRecords.FilterResult for one read chunk."""

    out: bytearray = field(default_factory=bytearray)
    bytes_read: int = 0
    messages_read: int = 0
    messages_retained: int = 0
    max_offset: int = -1
    max_timestamp: int = _NO_TIMESTAMP
    shallow_offset_of_max_timestamp: int = -1

    def retained(self, max_timestamp: int, shallow: int, max_offset: int, messages: int) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.shallow_offset_of_max_timestamp = shallow
        self.max_offset = max(max_offset, self.max_offset)
        self.messages_retained += messages


def _filter_chunk(batches: list[Batch], flt: _Filter, write_capacity: int) -> _Chunk:
    """MemoryRecords.filterTo over the batches of one chunk."""
    res = _Chunk()
    for batch in batches:
        retention, marker_of_empty_txn = flt.batch_retention(batch)
        res.bytes_read += batch.size_in_bytes
        if retention == "delete":
            continue
        retained: list[Record] = []
        write_original = True
        tombstones = False
        max_offset = -1
        for r in batch.records():
            res.messages_read += 1
            if flt.retain(batch, r):
                if isinstance(batch, LegacyBatch) and getattr(r, "magic", batch.magic) != batch.magic:
                    write_original = False
                max_offset = max(max_offset, r.offset)
                retained.append(r)
                if r.value is None:
                    tombstones = True
            else:
                write_original = False
        if retained:
            v2 = isinstance(batch, RecordBatch)
            set_horizon = v2 and (tombstones or marker_of_empty_txn) and batch.delete_horizon_ms is None  # type: ignore[union-attr]
            if write_original and not set_horizon:
                res.out += batch.data
                res.retained(batch.max_timestamp, batch.last_offset, batch.last_offset, len(retained))
            else:
                if v2:
                    horizon = flt.now + flt.delete_retention_ms if set_horizon else batch.delete_horizon_ms  # type: ignore[union-attr]
                    data, max_ts, shallow = _rebuild_v2(batch, retained, horizon)  # type: ignore[arg-type]
                else:
                    data, max_ts, shallow = _rebuild_legacy(batch, retained)  # type: ignore[arg-type]
                res.out += data
                res.retained(max_ts, shallow, max_offset, len(retained))
        elif retention == "retain_empty":
            if not isinstance(batch, RecordBatch):
                raise KafkaLogError("empty batches are only supported for magic 2", file=batch.file, position=batch.position, offset=batch.last_offset)
            res.out += _empty_header(batch)
            res.retained(batch.max_timestamp, batch.last_offset, batch.last_offset, 0)
        if len(res.out) > write_capacity:
            break  # Kafka's write buffer had to grow: filterTo returns after this batch
    return res


def _rebuild_v2(batch: RecordBatch, retained: list[Record], delete_horizon_ms: int | None) -> tuple[bytes, int, int]:
    """The kept records of ``batch`` as one new batch with its base and last offsets (MemoryRecords.buildRetainedRecordsInto)."""
    lat = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    builder = RecordBatchBuilder(
        batch.base_offset, compression=batch.compression, timestamp_type=batch.timestamp_type,
        log_append_time=batch.max_timestamp if lat else None, producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence, is_transactional=batch.is_transactional,
        is_control=batch.is_control, partition_leader_epoch=batch.partition_leader_epoch, delete_horizon_ms=delete_horizon_ms,
    )
    for r in retained:
        builder.append(r.timestamp, r.key, r.value, r.headers, offset=r.offset)
    data = builder.build(last_offset_delta=batch.last_offset_delta)
    if lat:
        return data, batch.max_timestamp, batch.last_offset
    if builder.max_timestamp == _NO_TIMESTAMP:
        return data, _NO_TIMESTAMP, -1
    return data, builder.max_timestamp, batch.last_offset


def _rebuild_legacy(batch: LegacyBatch, retained: list[Record]) -> tuple[bytes, int, int]:
    """The kept messages of a compressed v0/v1 wrapper as a new wrapper (MemoryRecordsBuilder, magic < 2)."""
    lat = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    builder = LegacyBatchBuilder(
        batch.magic, retained[0].offset, compression=batch.compression, timestamp_type=batch.timestamp_type,
        log_append_time=batch.max_timestamp if lat else None,
    )
    for r in retained:
        builder.append(r.timestamp, r.key, r.value, offset=r.offset)
    data = builder.build()
    last = retained[-1].offset
    if lat:
        return data, batch.max_timestamp, last
    max_ts = max(r.timestamp for r in retained) if batch.magic > 0 else _NO_TIMESTAMP
    return data, max_ts, (last if max_ts != _NO_TIMESTAMP else -1)


def _empty_header(batch: RecordBatch) -> bytes:
    """A 61-byte batch with no records that keeps the batch's offsets, producer fields and max timestamp (DefaultRecordBatch.writeEmptyHeader)."""
    builder = RecordBatchBuilder(
        batch.base_offset, timestamp_type=batch.timestamp_type, log_append_time=batch.max_timestamp,
        producer_id=batch.producer_id, producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional, is_control=batch.is_control, partition_leader_epoch=batch.partition_leader_epoch,
    )
    data = builder.build(last_offset_delta=batch.last_offset_delta, base_timestamp=_NO_TIMESTAMP, max_timestamp=batch.max_timestamp)
    assert len(data) == _RECORD_BATCH_OVERHEAD
    return data


# --------------------------------------------------------------------------------- cleaning
#: Called before each rename of a swap (step name, path); tests use it to stop the cleaner there.


def clean(
    lg: Log,
    first_dirty_offset: int,
    first_uncleanable_offset: int,
    now_ms: int,
    *,
    cleaner_config: CleanerConfig | None = None,
    active_producers: dict[int, LastRecord] | None = None,
    high_watermark: int | None = None,
    on_step: StepHook | None = None,
) -> CleanResult:
    """Clean ``lg`` from ``first_dirty_offset`` to ``first_uncleanable_offset`` at time ``now_ms`` (Cleaner.doClean).

    ``active_producers`` defaults to the log's producer state (a producer's batch holding its
    last sequence is kept, emptied if need be), ``high_watermark`` to the log's. Returns the offset
    the next pass starts from.
    """
    lg.check_open()
    lg.check_writable("compact")
    cfg = cleaner_config or CleanerConfig()
    active = last_records_of_active_producers(lg) if active_producers is None else active_producers
    clean_segs = lg.segments_in_range(0, first_dirty_offset)
    legacy_horizon = clean_segs[-1].last_modified - lg.config.delete_retention_ms if clean_segs else 0
    omap = OffsetMap(min(cfg.dedupe_buffer_size, _INT32_MAX), cfg.hash_algorithm)
    read = _build_offset_map(lg, first_dirty_offset, first_uncleanable_offset, omap, cfg)
    end_offset = omap.latest_offset + 1
    result = CleanResult(end_offset, map_messages_read=read, map_entries=len(omap))
    txns = _TxnMetadata()
    groups = group_segments_by_size(
        lg.segments_in_range(0, end_offset), lg.config.segment_bytes, lg.config.segment_index_bytes, first_uncleanable_offset
    )
    # the offset an emptied batch is kept for when its next offset reaches it: the round's upper bound up to 4.3,
    # the high watermark from 4.4 (KAFKA-20452; SPEC R-CMP-11)
    if lg.config.cleaner_empty_batch_at_high_watermark:
        keep_empty_at = lg.high_watermark if high_watermark is None else high_watermark
    else:
        keep_empty_at = first_uncleanable_offset
    for group in groups:
        result.groups.append(_clean_segments(lg, group, omap, now_ms, txns, legacy_horizon, keep_empty_at, active, cfg, result, on_step))
    result.removed = delete_pending_files(lg, now_ms)
    return result


def _clean_segments(
    lg: Log, segments: list[Segment], omap: OffsetMap, now_ms: int, txns: _TxnMetadata, legacy_horizon: int,
    keep_empty_at: int, active: dict[int, LastRecord], cfg: CleanerConfig, result: CleanResult, on_step: StepHook | None,
) -> GroupResult:
    """Clean a group of segments into one ``.cleaned`` segment and swap it in (Cleaner.cleanSegments)."""
    base = segments[0].base_offset
    cleaned = new_cleaned_segment(lg, base)
    txns.cleaned_index = cleaned
    group = GroupResult([s.base_offset for s in segments], base)
    try:
        for i, seg in enumerate(segments):
            upper = segments[i + 1].base_offset if i + 1 < len(segments) else seg.read_next_offset()
            txns.add_aborted(lg.collect_aborted_transactions(seg.base_offset, upper, min_last_offset=lg.log_start_offset))
            retain_legacy = seg.last_modified > legacy_horizon
            flt = _Filter(omap, now_ms, lg.config.delete_retention_ms, retain_legacy, txns, active, keep_empty_at)
            _clean_into(lg, seg, cleaned, flt, cfg, group)
        cleaned.on_become_inactive_segment()
        cleaned.flush()
        mtime = segments[-1].last_modified
        for path in (cleaned.log_path, cleaned.index_path, cleaned.time_index_path):
            os.utime(path, ns=(mtime * 1_000_000, mtime * 1_000_000))
    except IndexOffsetOverflowError as e:
        cleaned.delete()
        overflowed = next((s for s in segments if s.has_overflow()), None)
        if overflowed is None:
            raise

        split_overflowed_segment(lg, overflowed, now_ms)  # Cleaner.cleanSegments: split, then abort the pass
        raise CleaningAbortedError(f"split segment {overflowed.base_offset}, whose offsets overflow its indexes; clean again",
                                   file=overflowed.log_path, offset=e.offset) from e
    except BaseException:
        cleaned.delete()
        raise
    result.renamed += replace_segments(lg, [cleaned], segments, now_ms, on_step)
    return group


def _clean_into(lg: Log, source: Segment, dest: Segment, flt: _Filter, cfg: CleanerConfig, group: GroupResult) -> None:
    """Copy the records of ``source`` that ``flt`` keeps to ``dest``, one append per read chunk (Cleaner.cleanInto)."""
    capacity = cfg.io_buffer_size
    position = 0
    size = source.size
    fd = os.open(source.log_path, os.O_RDONLY)
    try:
        while position < size:
            batches, data = _read_chunk(source.log_path, fd, position, size, capacity)
            chunk = _filter_chunk(batches, flt, capacity)
            group.messages_read += chunk.messages_read
            group.bytes_read += chunk.bytes_read
            group.messages_written += chunk.messages_retained
            position += chunk.bytes_read
            if chunk.out:
                dest.append(chunk.max_offset, chunk.max_timestamp, chunk.shallow_offset_of_max_timestamp, bytes(chunk.out))
                group.bytes_written += len(chunk.out)
            if data and chunk.bytes_read == 0:
                capacity = _grow(capacity, _next_batch_size(data), source.log_path, position, size, lg.config.max_message_bytes, cfg)
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------- a full pass
def _checkpoint_path(lg: Log) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(lg.dir)), CLEANER_OFFSET_CHECKPOINT)


def compact(
    lg: Log,
    now_ms: int | None = None,
    *,
    cleaner_config: CleanerConfig | None = None,
    force: bool = False,
    dry_run: bool = False,
    active_producers: dict[int, LastRecord] | None = None,
    on_step: StepHook | None = None,
) -> CompactResult:
    """One cleaner pass over ``lg`` as the broker's cleaner thread makes it (LogCleaner.cleanLog).

    The first dirty offset comes from ``cleaner-offset-checkpoint`` in the log dir (the parent
    directory); a log whose cleanup.policy includes compact is cleaned when
    :meth:`LogToClean.should_clean` says so (or ``force``), and the checkpoint then gets the next
    first dirty offset. ``dry_run`` only computes the range.
    """
    if not dry_run:
        lg.check_writable("compact")
    now = lg.clock() if now_ms is None else now_ms
    tp = parse_topic_partition(lg.dir)
    ckpt = _checkpoint_path(lg)
    offsets = read_offset_checkpoint(ckpt) if tp is not None and os.path.exists(ckpt) else {}
    ltc = log_to_clean(lg, offsets.get(tp) if tp is not None else None, now)
    wanted = lg.config.compact and ((force and ltc.cleanable_bytes > 0) or ltc.should_clean(lg.config.min_cleanable_dirty_ratio))
    if dry_run or not wanted:
        if not dry_run and ltc.force_update_checkpoint and tp is not None:
            _update_checkpoint(ckpt, tp, ltc.first_dirty_offset, lg.sync)
        return CompactResult(now, ltc, None, None)
    try:
        res = clean(
            lg, ltc.first_dirty_offset, ltc.first_uncleanable_offset, now, cleaner_config=cleaner_config,
            active_producers=active_producers, on_step=on_step,
        )
    except CleaningAbortedError as e:  # the cleaner thread's next round: each split removes an overflowed segment
        log.info("%s", e)
        return compact(lg, now, cleaner_config=cleaner_config, force=force, active_producers=active_producers, on_step=on_step)
    written = None
    if tp is not None:
        _update_checkpoint(ckpt, tp, res.end_offset, lg.sync)
        written = ckpt
    return CompactResult(now, ltc, res, written)


def _update_checkpoint(path: str, tp: tuple[str, int], offset: int, sync: bool) -> None:
    """LogCleanerManager.updateCheckpoints for one partition (other entries are kept)."""
    current = read_offset_checkpoint(path) if os.path.exists(path) else {}
    current[tp] = offset
    write_offset_checkpoint(path, current, sync=sync)
