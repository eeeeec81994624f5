"""One log segment: ``<base>.log`` with its ``.index``, ``.timeindex`` and ``.txnindex``, as Kafka's LogSegment.

The rules are Kafka's (LogSegment.java @1eb7644, SPEC §4.3-§4.5, §6.1):

* an append of ``n`` bytes at position ``p`` with last offset ``L`` first raises the segment's
  running (max timestamp, offset of max timestamp); then, if more than ``index.interval.bytes``
  bytes were appended since the last index entry, writes the offset index entry ``(L, p)`` and
  offers the time index the running maximum; then counts its ``n`` bytes. That is Kafka 4.0.0;
  from 4.0.1 (KAFKA-806) the same steps run for each batch of the append, with the batch's last
  offset, position and size (``index_per_batch``);
* a segment rolls when the incoming append would take it past ``segment.bytes``, when
  ``segment.ms`` has passed since its first batch's timestamp, when either index is full, or when
  the append's last offset does not fit in a relative offset;
* at roll (and close) the time index gets the running maximum once more, using its reserved slot,
  and both indexes are trimmed to their entries;
* recovery re-reads every batch, checking its CRC, rebuilds all three indexes (one batch at a
  time), and truncates the ``.log`` at the first invalid batch or torn tail.
"""

from __future__ import annotations

import logging
import os
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kafkalog.errors import CorruptIndexError, CorruptRecordError, IndexOffsetOverflowError, ReadOnlyLogError
from kafkalog.format.epoch import LeaderEpochCache
from kafkalog.format.files import pwrite_all, segment_file_name
from kafkalog.format.index import DEFAULT_MAX_INDEX_SIZE, MutableOffsetIndex, MutableTimeIndex
from kafkalog.format.records.stream import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, Batch, LogReader
from kafkalog.format.records.v2 import RecordBatch
from kafkalog.format.txnindex import AbortedTxn, MutableTransactionIndex
from kafkalog.log.producer_state import AppendOrigin, CompletedTxn, ProducerStateManager

__all__ = [
    "FetchData",
    "LogOffsetMetadata",
    "LogOffsetPosition",
    "RollParams",
    "Segment",
    "TimestampAndOffset",
]

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
NO_TIMESTAMP = -1
NO_PARTITION_LEADER_EPOCH = -1


# batch header positions: the magic byte (every magic), v2's lastOffsetDelta and maxTimestamp, v1's timestamp
_HEADER_AT_MAGIC = HEADER_SIZE_UP_TO_MAGIC - 1
_LAST_OFFSET_DELTA_AT = 23
_MAX_TIMESTAMP_AT = 35
_V1_TIMESTAMP_AT = 18


def _batch_headers(records: bytes) -> Iterator[tuple[int, int, int]]:
    """(last offset, max timestamp, size) of each batch of an append's bytes, as RecordBatch.lastOffset and
    maxTimestamp give them: a v2 batch's base offset + lastOffsetDelta and its maxTimestamp field; a v0/v1
    message's offset (a compressed wrapper carries its last inner offset) and, for v1, its timestamp (-1 for v0)."""
    view = memoryview(records)
    pos = 0
    while pos + _HEADER_AT_MAGIC < len(view):
        base_offset, size = struct.unpack_from(">qi", view, pos)
        magic = view[pos + _HEADER_AT_MAGIC]
        if magic >= 2:
            (delta,) = struct.unpack_from(">i", view, pos + _LAST_OFFSET_DELTA_AT)
            (max_ts,) = struct.unpack_from(">q", view, pos + _MAX_TIMESTAMP_AT)
            yield base_offset + delta, max_ts, LOG_OVERHEAD + size
        else:
            ts = struct.unpack_from(">q", view, pos + _V1_TIMESTAMP_AT)[0] if magic == 1 else -1
            yield base_offset, ts, LOG_OVERHEAD + size
        pos += LOG_OVERHEAD + size


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class LogOffsetPosition:
    """A batch found by offset: its last offset, byte position and size (FileRecords.LogOffsetPosition)."""

    offset: int
    position: int
    size: int


@dataclass(frozen=True)
class TimestampAndOffset:
    """A ListOffsets answer: a record's timestamp, offset and its batch's leader epoch (None when unknown)."""

    timestamp: int
    offset: int
    leader_epoch: int | None = None


@dataclass(frozen=True)
class LogOffsetMetadata:
    """An offset with the base offset and byte position of its segment, when known (LogOffsetMetadata.java)."""

    message_offset: int
    segment_base_offset: int = -1
    relative_position: int = -1

    @property
    def message_offset_only(self) -> bool:
        """True when only the offset is known (no segment or position)."""
        return self.segment_base_offset == -1 and self.relative_position == -1


@dataclass
class FetchData:
    """What a read returns: where it started, the raw ``.log`` bytes, and aborted transactions when asked for."""

    offset_metadata: LogOffsetMetadata
    records: bytes = b""
    first_entry_incomplete: bool = False
    aborted_transactions: list[AbortedTxn] | None = None

    def batches(self) -> Iterator[Batch]:
        """The whole batches in :attr:`records` (a last batch cut by ``max_bytes`` is left out)."""
        return LogReader(self.records).batches()


@dataclass(frozen=True)
class RollParams:
    """What LogSegment.shouldRoll looks at (RollParams.java)."""

    max_segment_ms: int
    max_segment_bytes: int
    max_timestamp_in_messages: int
    max_offset_in_messages: int
    messages_size: int
    now: int


class Segment:
    """A segment of a partition directory (Kafka's LogSegment); files are created when missing.

    Use :meth:`open` (or the constructor). ``clock`` returns the time in ms (wall clock by
    default); it only matters for ``segment.ms`` when the segment's first batch has no timestamp.

    With ``writable=False`` every file is opened read-only and nothing is created: indexes
    missing on disk start empty, and recovery rebuilds the indexes and cuts the ``.log`` at the
    first invalid batch in memory only (:attr:`size` is then the valid prefix). A missing
    ``.log`` is an empty segment. Appends raise :class:`~kafkalog.errors.ReadOnlyLogError`.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        base_offset: int,
        *,
        index_interval_bytes: int = 4096,
        max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
        rolling_jitter_ms: int = 0,
        clock: Callable[[], int] | None = None,
        suffix: str = "",
        writable: bool = True,
        index_per_batch: bool = True,
    ) -> None:
        self.dir = os.fspath(directory)
        #: index each batch of a multi-batch append (Kafka 4.0.1+, KAFKA-806), not the append as a whole (4.0.0)
        self.index_per_batch = index_per_batch
        self.writable = writable
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.max_index_size = max_index_size
        self.rolling_jitter_ms = rolling_jitter_ms
        self.clock = clock or _now_ms
        self.suffix = suffix
        self.log_path = self._path(LOG_SUFFIX)
        self.index_file_existed = os.path.exists(self._path(INDEX_SUFFIX))
        self.time_index_file_existed = os.path.exists(self._path(TIME_INDEX_SUFFIX))
        #: a read-only segment whose ``.log`` does not exist (the empty segment of an empty log)
        self.virtual = not writable and not os.path.exists(self.log_path)
        self._closed = False
        self._fd: int | None = None
        if not self.virtual:
            self._fd = os.open(self.log_path, (os.O_RDWR | os.O_CREAT) if writable else os.O_RDONLY, 0o644)
        self._size = 0 if self._fd is None else os.fstat(self._fd).st_size
        # Kafka's LazyIndex (LazyIndex.java @1eb7644): the .index and .timeindex files are opened, or
        # created preallocated, on first use, so an empty segment rolled and closed without an append
        # has only its .log (SPEC R-ROLL-05, R-IDX-09).
        self._offset_index: MutableOffsetIndex | None = None
        self._time_index: MutableTimeIndex | None = None
        try:
            self.txn_index = MutableTransactionIndex(self._path(TXN_INDEX_SUFFIX), base_offset, writable=writable)
        except BaseException:
            if self._fd is not None:
                os.close(self._fd)
            raise
        self.created = self.clock()
        self._rolling_based_timestamp: int | None = None
        #: (max timestamp so far, last offset of the batch that had it); None until first needed
        self._max_ts_offset: tuple[int, int] | None = None
        self.bytes_since_last_index_entry = 0

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str],
        base_offset: int,
        *,
        index_interval_bytes: int = 4096,
        max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
        rolling_jitter_ms: int = 0,
        clock: Callable[[], int] | None = None,
        suffix: str = "",
        writable: bool = True,
        index_per_batch: bool = True,
    ) -> Segment:
        """Open (creating when missing, unless ``writable=False``) the segment with this base offset in ``directory``."""
        return cls(
            directory, base_offset, index_interval_bytes=index_interval_bytes, max_index_size=max_index_size,
            rolling_jitter_ms=rolling_jitter_ms, clock=clock, suffix=suffix, writable=writable, index_per_batch=index_per_batch,
        )

    def _path(self, kind: str) -> str:
        return os.path.join(self.dir, segment_file_name(self.base_offset, kind) + self.suffix)

    @property
    def offset_index(self) -> MutableOffsetIndex:
        """The ``.index``, opened (or created, preallocated) on first use as Kafka's LazyIndex does."""
        if self._offset_index is None:
            self._offset_index = MutableOffsetIndex(self._path(INDEX_SUFFIX), self.base_offset, self.max_index_size, writable=self.writable)
        return self._offset_index

    @property
    def time_index(self) -> MutableTimeIndex:
        """The ``.timeindex``, opened (or created, preallocated) on first use as Kafka's LazyIndex does."""
        if self._time_index is None:
            self._time_index = MutableTimeIndex(self._path(TIME_INDEX_SUFFIX), self.base_offset, self.max_index_size, writable=self.writable)
        return self._time_index

    @property
    def indexes_loaded(self) -> bool:
        """Whether either index file has been opened (or created) yet."""
        return self._offset_index is not None or self._time_index is not None

    @property
    def index_path(self) -> str:
        """Path of the ``.index`` file (it may not exist yet)."""
        return self._offset_index.path if self._offset_index is not None else self._path(INDEX_SUFFIX)

    @property
    def time_index_path(self) -> str:
        """Path of the ``.timeindex`` file (it may not exist yet)."""
        return self._time_index.path if self._time_index is not None else self._path(TIME_INDEX_SUFFIX)

    def rename_index(self, path: str, target: str) -> None:
        """Rename this segment's ``.index`` or ``.timeindex`` at ``path`` to ``target``; a file never
        created is skipped (LazyIndex.renameTo)."""
        for idx in (self._offset_index, self._time_index):
            if idx is not None and idx.path == path:
                idx.rename_to(target)
                return
        if os.path.exists(path):
            os.replace(path, target)

    @property
    def txn_index_path(self) -> str:
        """Path of the ``.txnindex`` file (it exists only once an entry was written)."""
        return self.txn_index.path

    @property
    def size(self) -> int:
        """Bytes in the ``.log``."""
        return self._size

    def __repr__(self) -> str:
        return f"Segment(baseOffset={self.base_offset}, size={self._size}, dir={self.dir!r})"

    def _log_fd(self) -> int | None:
        if self._closed:
            raise ValueError(f"segment {self.log_path} is closed")
        return self._fd

    def _require_writable(self) -> int:
        fd = self._log_fd()
        if not self.writable or fd is None:
            raise ReadOnlyLogError(f"segment {self.log_path} was opened read-only", file=self.log_path)
        return fd

    # -- timestamps ------------------------------------------------------------------------------
    def read_max_timestamp_and_offset_so_far(self) -> tuple[int, int]:
        """(max timestamp, its offset) so far, from the time index's last entry until appends raise it."""
        if self._max_ts_offset is None:
            self._max_ts_offset = self.time_index.last_entry
        return self._max_ts_offset

    @property
    def max_timestamp_so_far(self) -> int:
        """The largest batch timestamp appended so far (-1 if none)."""
        return self.read_max_timestamp_and_offset_so_far()[0]

    @property
    def largest_record_timestamp(self) -> int | None:
        """The largest timestamp in the segment, or None when it has none."""
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else None

    @property
    def largest_timestamp(self) -> int:
        """The largest timestamp, or the ``.log`` modification time (ms) when there is none (LogSegment.largestTimestamp)."""
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else self.last_modified

    @property
    def last_modified(self) -> int:
        """The ``.log`` modification time in ms (the creation time of a segment with no file)."""
        if self.virtual:
            return self.created
        return os.stat(self.log_path).st_mtime_ns // 1_000_000

    def _load_first_batch_timestamp(self) -> None:
        if self._rolling_based_timestamp is None:
            for batch in self.batches():
                self._rolling_based_timestamp = batch.max_timestamp
                break

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        """How long the segment has waited to roll: by batch timestamps when the first batch has one, else by the clock."""
        self._load_first_batch_timestamp()
        ts = self._rolling_based_timestamp
        if ts is not None and ts >= 0:
            return message_timestamp - ts
        return now - self.created

    @property
    def first_batch_timestamp(self) -> int | None:
        """The first batch's timestamp when it has one."""
        self._load_first_batch_timestamp()
        ts = self._rolling_based_timestamp
        return ts if ts is not None and ts >= 0 else None

    # -- append / roll ---------------------------------------------------------------------------
    def can_convert_to_relative_offset(self, offset: int) -> bool:
        """True when ``offset`` fits this segment's indexes."""
        return self.offset_index.can_append_offset(offset)

    def _ensure_offset_in_range(self, offset: int) -> None:
        if not self.can_convert_to_relative_offset(offset):
            raise IndexOffsetOverflowError(
                f"offset {offset} cannot be stored relative to the segment's base offset {self.base_offset}",
                file=self.log_path, position=self._size, offset=offset,
            )

    def should_roll(self, params: RollParams) -> bool:
        """Whether the append described by ``params`` must go to a new segment (LogSegment.shouldRoll)."""
        reached_roll_ms = self.time_waited_for_roll(params.now, params.max_timestamp_in_messages) > params.max_segment_ms - self.rolling_jitter_ms
        size = self._size
        return (
            size > params.max_segment_bytes - params.messages_size
            or (size > 0 and reached_roll_ms)
            or self.offset_index.is_full()
            or self.time_index.is_full()
            or not self.can_convert_to_relative_offset(params.max_offset_in_messages)
        )

    def _write(self, data: bytes | memoryview) -> None:
        self._size = pwrite_all(self._require_writable(), data, self._size)

    def append(self, largest_offset: int, largest_timestamp: int, shallow_offset_of_max_timestamp: int, records: bytes) -> None:
        """Append one append's bytes and index them as Kafka does (LogSegment.append): the append as a whole
        (4.0.0), or each of its batches (4.0.1+, ``index_per_batch``)."""
        if not records:
            return
        physical_position = self._size
        self._ensure_offset_in_range(largest_offset)
        # one batch (every leader append of a producer batch): the same entries in every release
        if not self.index_per_batch or LOG_OVERHEAD + int.from_bytes(records[8:12], "big") == len(records):
            if physical_position == 0:
                self._rolling_based_timestamp = largest_timestamp
            self._write(records)
            self._index(largest_offset, largest_timestamp, shallow_offset_of_max_timestamp, physical_position, len(records))
            return
        self._write(records)
        for last_offset, max_timestamp, size in _batch_headers(records):
            if physical_position == 0:  # 4.0.1+ reads the first batch's timestamp back (LogSegment.loadFirstBatchTimestamp)
                self._rolling_based_timestamp = max_timestamp
            self._index(last_offset, max_timestamp, last_offset, physical_position, size)
            physical_position += size

    def _index(self, last_offset: int, max_timestamp: int, offset_of_max_timestamp: int, position: int, size: int) -> None:
        """Raise the running maximum, write the index entries when more than ``index.interval.bytes`` went
        by since the last ones, then count ``size`` bytes (the body of LogSegment.append)."""
        if max_timestamp > self.max_timestamp_so_far:
            self._max_ts_offset = (max_timestamp, offset_of_max_timestamp)
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(*self.read_max_timestamp_and_offset_so_far())
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += size

    def update_txn_index(self, txn: CompletedTxn, last_stable_offset: int) -> None:
        """Write an aborted transaction to ``.txnindex`` (LogSegment.updateTxnIndex)."""
        if txn.is_aborted:
            self.txn_index.append(AbortedTxn(0, txn.producer_id, txn.first_offset, txn.last_offset, last_stable_offset))

    def on_become_inactive_segment(self) -> None:
        """Offer the time index its final entry (reserved slot) and trim the files (LogSegment.onBecomeInactiveSegment)."""
        self.time_index.maybe_append(*self.read_max_timestamp_and_offset_so_far(), skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.trim_log()

    def trim_log(self) -> None:
        """Cut the ``.log`` file to its data (only a preallocated file is longer)."""
        fd = self._log_fd()
        if fd is not None and self.writable and os.fstat(fd).st_size != self._size:
            os.ftruncate(fd, self._size)

    def resize_indexes(self, size: int) -> None:
        """Resize both index files (the active segment's get ``segment.index.bytes`` on load)."""
        self.offset_index.resize(size)
        self.time_index.resize(size)

    # -- reading ---------------------------------------------------------------------------------
    def batches(self, start: int = 0, end: int | None = None) -> Iterator[Batch]:
        """The batches from byte ``start`` (stopping at a torn tail)."""
        if self.virtual:
            return
        with LogReader(self.log_path, start=start, end=self._size if end is None else end) as reader:
            yield from reader.batches()

    def translate_offset(self, offset: int, starting_position: int = 0) -> LogOffsetPosition | None:
        """The first batch whose last offset is >= ``offset``: index floor, then a scan (LogSegment.translateOffset)."""
        _off, pos = self.offset_index.lookup(offset)
        for batch in self.batches(max(pos, starting_position)):
            if batch.last_offset >= offset:
                return LogOffsetPosition(batch.last_offset, batch.position, batch.size_in_bytes)
        return None

    def read(self, start_offset: int, max_size: int, max_position: int | None = None, min_one_message: bool = False) -> FetchData | None:
        """Up to ``max_size`` bytes from the batch holding the first offset >= ``start_offset``, not past
        ``max_position`` (default: the end); None when no such batch exists (LogSegment.read)."""
        if max_size < 0:
            raise ValueError(f"invalid max size {max_size} for log read from segment {self.log_path}")
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        meta = LogOffsetMetadata(start_offset, self.base_offset, found.position)
        adjusted = max(max_size, found.size) if min_one_message else max_size
        if adjusted == 0:
            return FetchData(meta)
        limit = self._size if max_position is None else max_position
        fetch_size = max(0, min(limit - found.position, adjusted))
        fd = self._log_fd()
        data = os.pread(fd, fetch_size, found.position) if fetch_size and fd is not None else b""
        return FetchData(meta, data, adjusted < found.size)

    def read_next_offset(self) -> int:
        """The offset after the last batch (scanning from the last index entry; LogSegment.readNextOffset).
        An index file not created yet (Kafka's LazyIndex) is not created here: the scan starts at byte 0."""
        if self._offset_index is None and not os.path.exists(self.index_path):
            position = 0
        else:
            found = self.translate_offset(self.offset_index.last_offset)
            if found is None:
                return self.base_offset
            position = found.position
        nxt = self.base_offset
        for batch in self.batches(position):
            nxt = batch.next_offset
        return nxt

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int | None = None) -> TimestampAndOffset | None:
        """The first record at or after ``starting_offset`` whose timestamp is >= ``timestamp`` (LogSegment.findOffsetByTimestamp)."""
        start = self.base_offset if starting_offset is None else starting_offset
        _ts, ts_offset = self.time_index.lookup(timestamp)
        _off, position = self.offset_index.lookup(max(ts_offset, start))
        for batch in self.batches(position):
            if batch.max_timestamp >= timestamp:
                for record in batch.records():
                    if record.timestamp >= timestamp and record.offset >= start:
                        epoch = getattr(batch, "partition_leader_epoch", NO_PARTITION_LEADER_EPOCH)
                        return TimestampAndOffset(record.timestamp, record.offset, None if epoch == NO_PARTITION_LEADER_EPOCH else epoch)
        return None

    def largest_timestamp_after(self, position: int) -> tuple[int, int]:
        """(max batch timestamp, that batch's last offset) from byte ``position`` on (FileRecords.largestTimestampAfter)."""
        best = (NO_TIMESTAMP, -1)
        for batch in self.batches(position):
            if batch.max_timestamp > best[0]:
                best = (batch.max_timestamp, batch.last_offset)
        return best

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Aborted transactions of this segment overlapping the range, and whether the search is complete."""
        return self.txn_index.collect_aborted_txns(fetch_offset, upper_bound_offset)

    # -- recovery / truncation -------------------------------------------------------------------
    def sanity_check(self) -> None:
        """Kafka's LogSegment.sanityCheck: the offset index must have existed (FileNotFoundError otherwise);
        a missing time index is made empty; the transaction index is checked."""
        if not self.index_file_existed:
            raise FileNotFoundError(f"offset index file {self.index_path} does not exist")
        if not self.time_index_file_existed:
            self.time_index.resize(0)
        self.txn_index.sanity_check()

    def check_indexes_fit(self) -> None:
        """Raise :class:`~kafkalog.errors.CorruptIndexError` when the offset or time index fails Kafka's
        sanity checks, its entries do not increase, or an entry points past the ``.log`` (an index
        left untrimmed or stale by a crash): a read-only load then rebuilds both in memory."""
        import numpy as np  # the indexes' arrays are numpy's: loaded with them, not by every command importing the log layer

        self.offset_index.sanity_check()
        self.time_index.sanity_check()
        offsets, positions = self.offset_index.offsets_and_positions()
        if len(offsets) and (positions[-1] >= max(self._size, 1) or (np.diff(offsets) <= 0).any() or (np.diff(positions) <= 0).any()):
            raise CorruptIndexError("offset index entries do not increase or point past the end of the .log", file=self.index_path)
        timestamps, ts_offsets = self.time_index.timestamps_and_offsets()
        if len(timestamps) and ((np.diff(timestamps) <= 0).any() or (np.diff(ts_offsets) < 0).any()):
            raise CorruptIndexError("time index entries do not increase", file=self.time_index_path)

    def recover(self, producer_state: ProducerStateManager | None = None, leader_epoch_cache: LeaderEpochCache | None = None) -> int:
        """Rebuild the indexes from the ``.log`` and cut it at the first invalid batch; return the bytes removed.

        ``producer_state`` (positioned at this segment's base offset) is replayed and aborted
        transactions go to ``.txnindex``; ``leader_epoch_cache`` gets an entry for each higher
        epoch (LogSegment.recover).
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index.reset()
        valid_bytes = 0
        last_index_entry = 0
        self._max_ts_offset = None
        try:
            for batch in self.batches():
                batch.ensure_valid()
                indexable = self.can_convert_to_relative_offset(batch.last_offset)
                if self.writable:  # a writable load splits such a segment (Log._retry_on_offset_overflow)
                    self._ensure_offset_in_range(batch.last_offset)
                if batch.max_timestamp > self.max_timestamp_so_far and indexable:
                    self._max_ts_offset = (batch.max_timestamp, batch.last_offset)
                if valid_bytes - last_index_entry > self.index_interval_bytes and indexable:
                    # Beyond Kafka (SPEC R-RCV-07): the replay can want more entries than the appends
                    # made (each reopen restarts their byte count); a full index stays sparse instead
                    # of failing the load with Kafka's "attempt to append to a full index".
                    if not (self.offset_index.is_full() or self.time_index.is_full()):
                        self.offset_index.append(batch.last_offset, valid_bytes)
                        self.time_index.maybe_append(*self.read_max_timestamp_and_offset_so_far())
                    last_index_entry = valid_bytes
                valid_bytes += batch.size_in_bytes
                if isinstance(batch, RecordBatch):
                    if leader_epoch_cache is not None and batch.partition_leader_epoch >= 0:
                        latest = leader_epoch_cache.latest_epoch
                        if latest is None or batch.partition_leader_epoch > latest:
                            leader_epoch_cache.assign(batch.partition_leader_epoch, batch.base_offset)
                    if producer_state is not None:
                        self._update_producer_state(producer_state, batch)
        except IndexOffsetOverflowError:
            raise
        except CorruptRecordError as e:
            log.warning("found invalid messages in log segment %s at byte offset %d: %s", self.log_path, valid_bytes, e)
        truncated = self._size - valid_bytes
        if truncated > 0:
            log.debug("truncated %d invalid bytes at the end of segment %s during recovery", truncated, self.log_path)
        self._truncate_log(valid_bytes)
        self.offset_index.trim_to_valid_size()
        self.time_index.maybe_append(*self.read_max_timestamp_and_offset_so_far(), skip_full_check=True)
        self.time_index.trim_to_valid_size()
        return truncated

    def _update_producer_state(self, psm: ProducerStateManager, batch: RecordBatch) -> None:
        if batch.producer_id >= 0:
            info = psm.prepare_update(batch.producer_id, AppendOrigin.REPLICATION)
            completed = info.append(batch)
            psm.update(info)
            if completed is not None:
                self.update_txn_index(completed, psm.last_stable_offset(completed))
                psm.complete_txn(completed)
        psm.update_map_end_offset(batch.last_offset + 1)

    def _truncate_log(self, size: int) -> int:
        fd = self._log_fd()
        removed = self._size - size
        if removed < 0:
            raise ValueError(f"attempt to truncate {self.log_path} to {size} bytes, beyond its size {self._size}")
        if fd is not None and self.writable and os.fstat(fd).st_size != size:
            os.ftruncate(fd, size)
        self._size = size
        return removed

    def truncate_to(self, offset: int) -> int:
        """Remove every batch from the one holding ``offset`` on, and their index entries; return bytes removed (LogSegment.truncateTo)."""
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.offset_index.resize(self.max_index_size)
        self.time_index.resize(self.max_index_size)
        removed = 0 if mapping is None else self._truncate_log(mapping.position)
        if self._size == 0:
            self.created = self.clock()
            self._rolling_based_timestamp = None
        self.bytes_since_last_index_entry = 0
        if self.max_timestamp_so_far >= 0:
            self._max_ts_offset = self._read_largest_timestamp()
        return removed

    def _read_largest_timestamp(self) -> tuple[int, int]:
        last_ts, last_off = self.time_index.last_entry
        _off, position = self.offset_index.lookup(last_off)
        ts, off = self.largest_timestamp_after(position)
        return (ts, off) if ts > last_ts else (last_ts, last_off)

    def has_overflow(self) -> bool:
        """True when the last offset cannot be stored relative to the base offset."""
        nxt = self.read_next_offset()
        return nxt > self.base_offset and not self.can_convert_to_relative_offset(nxt - 1)

    # -- files -----------------------------------------------------------------------------------
    def flush(self) -> None:
        """fsync the ``.log`` and the three indexes (LogSegment.flush); nothing to do when read-only."""
        fd = self._log_fd()
        if fd is None or not self.writable:
            return
        os.fsync(fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """Offer the final time index entry, trim the indexes and close the files (LogSegment.close)."""
        if self._closed:
            return
        if self._max_ts_offset is not None:
            try:
                self.time_index.maybe_append(*self._max_ts_offset, skip_full_check=True)
            except Exception as e:  # Kafka swallows this with a warning
                log.warning("could not append the final time index entry of %s: %s", self.log_path, e)
        if self._offset_index is not None:
            self._offset_index.close()
        if self._time_index is not None:
            self._time_index.close()
        self._close_log()
        self.txn_index.close()

    def _close_log(self) -> None:
        self._closed = True
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close_handlers(self) -> None:
        """Close the files without writing anything."""
        if self._offset_index is not None:
            self._offset_index.close_handler()
        if self._time_index is not None:
            self._time_index.close_handler()
        self._close_log()
        self.txn_index.close()

    def delete(self) -> None:
        """Close and remove the segment's files."""
        self._require_writable()
        self.close_handlers()
        for p in (self.log_path, self.index_path, self.time_index_path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                log.info("failed to delete %s because it does not exist", p)
        self.txn_index.delete()

    def __enter__(self) -> Segment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
