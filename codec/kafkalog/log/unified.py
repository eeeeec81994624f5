"""A partition directory written and read as Kafka's broker does it (UnifiedLog, LocalLog, LogLoader).

:class:`Log` owns the segments of one partition directory, appends to the active one (rolling a
new segment when :meth:`Segment.should_roll` says so), keeps the producer state, the leader epoch
cache, the transaction index and ``partition.metadata`` up to date, and reads by offset or
timestamp. ``Log.open(path)`` only reads (the load happens in memory and no file changes);
``Log.open(path, writable=True)`` loads as a broker does and can append::

    cfg = LogConfig(segment_bytes=2048, index_interval_bytes=256)
    with Log.open("topic-0", cfg, topic_id="AAAAAAAAAAAAAAAAAAAAAQ", writable=True) as log:
        log.append(batch_bytes, assign_offsets=False)      # as a follower: bytes kept as they are
        log.append(producer_batch, leader_epoch=3)          # as the leader: offsets assigned

Appends are either *follower* appends (``assign_offsets=False``: the batches are written byte for
byte, as a replica copies them) or *leader* appends (offsets, partition leader epoch and, under
LogAppendTime, the max timestamp are set as Kafka's LogValidator sets them).

Interrupted compactions (``.cleaned`` / ``.swap`` files) are finished or undone on open as
Kafka's LogLoader does; compaction itself is in :mod:`kafkalog.log.cleaner`, the split of a segment
whose offsets overflow its indexes in :mod:`kafkalog.log.split`, retention in :mod:`kafkalog.log.retention`
(:meth:`Log.delete_old_segments`). Not implemented: the broker's transaction verification guards.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import random
import struct
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import TYPE_CHECKING, TypeVar

from kafkalog.errors import (
    CorruptIndexError,
    CrcMismatchError,
    InconsistentTopicIdError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
    InvalidRecordError,
    InvalidTopicError,
    KafkaLogError,
    LogNotFoundError,
    OffsetOutOfRangeError,
    OffsetsOutOfOrderError,
    ReadOnlyLogError,
    RecordBatchTooLargeError,
    UnexpectedAppendOffsetError,
)
from kafkalog.format.checkpoints import (
    read_offset_checkpoint,
    read_partition_metadata,
    topic_id_string,
    write_offset_checkpoint,
    write_partition_metadata,
)
from kafkalog.format.compression import Codec
from kafkalog.format.epoch import LeaderEpochCache
from kafkalog.format.files import fsync_dir, segment_file_name
from kafkalog.format.index import DEFAULT_MAX_INDEX_SIZE, base_offset_of
from kafkalog.format.primitives import crc32c
from kafkalog.format.records.record import Record, TimestampType
from kafkalog.format.records.stream import Batch, LogReader
from kafkalog.format.records.v2 import CRC_OFFSET, CRC_START, RecordBatch, RecordBatchBuilder, validate_batch
from kafkalog.format.releases import NEWEST_VERSION, Version
from kafkalog.format.txnindex import AbortedTxn
from kafkalog.log.leftovers import COMPLETE, DELETE, has_leftovers, load_plan
from kafkalog.log.producer_state import (
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    AppendOrigin,
    BatchMetadata,
    CompletedTxn,
    JavaLongHashMap,
    ProducerAppendInfo,
    ProducerStateManager,
    SnapshotOverlay,
)
from kafkalog.log.reads import log_start_offset as loaded_log_start
from kafkalog.log.segment import FetchData, LogOffsetMetadata, RollParams, Segment, TimestampAndOffset
from kafkalog.log.split import split_overflowed_segment

if TYPE_CHECKING:
    from kafkalog.log.retention import PendingDeletion, RetentionResult

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "FetchIsolation",
    "Log",
    "LogAppendInfo",
    "LogConfig",
    "checkpoint_log_dir",
    "parse_topic_partition",
    "partition_dir_problem",
    "rebuild_producer_state",
    "topic_name_problem",
]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

_LONG_MAX = 2**63 - 1
_INT32_MAX = 2**31 - 1
UNKNOWN_OFFSET = -1
PARTITION_METADATA = "partition.metadata"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
#: ListOffsets special timestamps (ListOffsetsRequest)
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5

# v2 header field positions (schemas.RECORD_BATCH_V2_HEADER)
_BASE_OFFSET_AT = 0
_PLE_AT = 12
_ATTRIBUTES_AT = 21
_MAX_TIMESTAMP_AT = 35


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# ------------------------------------------------------------------------------------- config
_PROPERTIES: dict[str, str] = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "segment.jitter.ms": "segment_jitter_ms",
    "segment.index.bytes": "segment_index_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "message.timestamp.type": "message_timestamp_type",
    "message.timestamp.before.max.ms": "message_timestamp_before_max_ms",
    "message.timestamp.after.max.ms": "message_timestamp_after_max_ms",
    "max.message.bytes": "max_message_bytes",
    "compression.type": "compression_type",
    "compression.gzip.level": "compression_gzip_level",
    "compression.lz4.level": "compression_lz4_level",
    "compression.zstd.level": "compression_zstd_level",
    "cleanup.policy": "cleanup_policy",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "local.retention.ms": "local_retention_ms",
    "local.retention.bytes": "local_retention_bytes",
    "delete.retention.ms": "delete_retention_ms",
    "file.delete.delay.ms": "file_delete_delay_ms",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
    "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
    "flush.messages": "flush_messages",
    "flush.ms": "flush_ms",
    "preallocate": "preallocate",
    "producer.id.expiration.ms": "producer_id_expiration_ms",
}


@dataclass(frozen=True)
class LogConfig:
    """The topic configuration a partition directory is written with (Kafka's defaults, LogConfig.java @1eb7644).

    Retention and compaction settings are carried as plain values for the segment manager's
    later parts; ``producer_id_expiration_ms`` is a broker setting kept here for convenience.
    """

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = DEFAULT_MAX_INDEX_SIZE
    index_interval_bytes: int = 4096
    message_timestamp_type: TimestampType = TimestampType.CREATE_TIME
    message_timestamp_before_max_ms: int = _LONG_MAX
    message_timestamp_after_max_ms: int = _LONG_MAX
    max_message_bytes: int = 1024 * 1024 + 12
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    cleanup_policy: tuple[str, ...] = ("delete",)
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    delete_retention_ms: int = 24 * 3600 * 1000
    file_delete_delay_ms: int = 60_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = _LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    flush_messages: int = _LONG_MAX
    flush_ms: int = _LONG_MAX
    preallocate: bool = False
    producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS
    #: the Kafka release whose log layer to follow where releases write other bytes (SPEC R-IDX-06, R-CMP-11, R-K4-05):
    #: ``(major, minor, patch)``, from :func:`kafkalog.format.releases.parse_version`; the newest by default
    kafka_version: Version = NEWEST_VERSION

    def __post_init__(self) -> None:
        if self.segment_bytes < 14:
            raise ValueError(f"segment.bytes must be at least 14, got {self.segment_bytes}")
        if self.segment_index_bytes < 4:
            raise ValueError(f"segment.index.bytes must be at least 4, got {self.segment_index_bytes}")
        if self.index_interval_bytes < 0:
            raise ValueError(f"index.interval.bytes must be at least 0, got {self.index_interval_bytes}")
        if self.compression_type not in ("producer", "uncompressed", "none", "gzip", "snappy", "lz4", "zstd"):
            raise ValueError(f"unknown compression.type {self.compression_type!r}")
        if self.compression_gzip_level != -1 and not 1 <= self.compression_gzip_level <= 9:
            raise ValueError(f"compression.gzip.level must be -1 or 1 to 9, got {self.compression_gzip_level}")
        if not 1 <= self.compression_lz4_level <= 17:
            raise ValueError(f"compression.lz4.level must be 1 to 17, got {self.compression_lz4_level}")
        if not -131072 <= self.compression_zstd_level <= 22:
            raise ValueError(f"compression.zstd.level must be -131072 to 22, got {self.compression_zstd_level}")
        if not set(self.cleanup_policy) <= {"delete", "compact"}:
            raise ValueError(f"unknown cleanup.policy {self.cleanup_policy!r}")

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> LogConfig:
        """Build from Kafka property names (``{"segment.bytes": "2048", ...}``); unknown names raise."""
        kwargs: dict[str, object] = {}
        types = {f.name: f.type for f in fields(cls)}
        for key, raw in props.items():
            name = _PROPERTIES.get(key)
            if name is None:
                raise ValueError(f"unknown or unsupported topic config {key!r}")
            value: object
            if name == "message_timestamp_type":
                value = raw if isinstance(raw, TimestampType) else TimestampType(str(raw))
            elif name == "cleanup_policy":
                value = tuple(p.strip() for p in str(raw).split(",") if p.strip()) if isinstance(raw, str) else tuple(raw)  # type: ignore[arg-type]
            elif name == "compression_type":
                value = str(raw)
            elif types[name] == "bool":
                value = raw if isinstance(raw, bool) else str(raw).lower() == "true"
            elif types[name] == "float":
                value = float(raw)  # type: ignore[arg-type]
            else:
                value = int(raw)  # type: ignore[call-overload]
            kwargs[name] = value
        return cls(**kwargs)  # type: ignore[arg-type]

    @property
    def index_per_batch(self) -> bool:
        """From 4.0.1 (KAFKA-806) LogSegment.append considers an index entry at every batch of a multi-batch
        append; 4.0.0 considered one per append, at its start (SPEC R-IDX-06)."""
        return self.kafka_version >= (4, 0, 1)

    @property
    def cleaner_empty_batch_at_high_watermark(self) -> bool:
        """From 4.4 (KAFKA-20452) the cleaner keeps an emptied batch for its offset only when its next offset is the
        high watermark; up to 4.3, when it is the round's firstUncleanableOffset (SPEC R-CMP-11)."""
        return self.kafka_version >= (4, 4, 0)

    @property
    def compact(self) -> bool:
        """True when cleanup.policy includes compact."""
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        """True when cleanup.policy includes delete."""
        return "delete" in self.cleanup_policy

    @property
    def max_segment_ms(self) -> int:
        """The time after which the active segment rolls (LogConfig.maxSegmentMs @1eb7644): for a compacted
        topic with a positive max.compaction.lag.ms, the smaller of it and segment.ms, so that a dirty
        record can be cleaned within the lag (SPEC R-ROLL-02)."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    def random_segment_jitter(self) -> int:
        """0 when segment.jitter.ms is 0, else a random value below min(segment.jitter.ms, segment.ms)."""
        if self.segment_jitter_ms == 0:
            return 0
        return random.randrange(min(self.segment_jitter_ms, self.segment_ms))

    def target_codec(self, source: Codec) -> Codec:
        """The codec the broker writes a producer batch with (BrokerCompressionType.targetCompression)."""
        if self.compression_type == "producer":
            return source
        if self.compression_type == "uncompressed":
            return Codec.NONE
        return Codec.from_name(self.compression_type)

    def target_level(self, target: Codec) -> int | None:
        """The level the broker compresses with: the topic's ``compression.<codec>.level`` when the
        topic names a codec, the codec's default (None) under ``producer`` (LogConfig.compression,
        BrokerCompressionType.targetCompression @1eb7644; R-WR-11, R-WR-12)."""
        if self.compression_type in ("producer", "uncompressed", "none"):
            return None
        return {Codec.GZIP: self.compression_gzip_level, Codec.LZ4: self.compression_lz4_level, Codec.ZSTD: self.compression_zstd_level}.get(target)


class FetchIsolation(Enum):
    """How far a read may go: the log end, the high watermark or the last stable offset."""

    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"
    TXN_COMMITTED = "txn_committed"


@dataclass
class LogAppendInfo:
    """What an append did (LogAppendInfo.java): ``first_offset`` is None when not known (magic 0/1 follower appends)."""

    first_offset: int | None
    last_offset: int
    last_leader_epoch: int | None
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    log_append_time: int = -1
    log_start_offset: int = 0
    source_codec: Codec = Codec.NONE
    valid_bytes: int = 0
    last_offset_of_first_batch: int = -1
    duplicate: bool = False
    segment_base_offset: int | None = None

    @property
    def first_or_last_offset_of_first_batch(self) -> int:
        """The first offset when known, else the first batch's last offset."""
        return self.first_offset if self.first_offset is not None else self.last_offset_of_first_batch


def parse_topic_partition(directory: str | os.PathLike[str]) -> tuple[str, int] | None:
    """(topic, partition) from a partition directory name ``<topic>-<partition>``, or None."""
    name = os.path.basename(os.path.normpath(os.fspath(directory)))
    for suffix in ("-delete", "-future", "-stray"):
        if name.endswith(suffix) and "." in name:
            name = name.rsplit(".", 1)[0]
            break
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isascii() or not part.isdigit() or int(part) > 2**31 - 1:
        return None  # R-NAME-02: the partition is a non-negative decimal int32
    return topic, int(part)


#: The longest topic name Kafka accepts (Topic.java MAX_NAME_LENGTH).
TOPIC_MAX_LENGTH = 249


def topic_name_problem(topic: str) -> str | None:
    """Why Kafka refuses ``topic`` as a topic name (R-NAME-03: 1..249 of ``[a-zA-Z0-9._-]``, not
    ``.`` or ``..``; Topic.java @1eb7644), or None. Readers warn about such a directory and read it
    anyway; writers refuse to create one (:func:`partition_dir_problem`)."""
    if not topic:
        problem = "the empty string is not a valid topic name"
    elif topic in (".", ".."):
        problem = f"{topic!r} is not a valid topic name"
    elif len(topic.encode("utf-16-le")) // 2 > TOPIC_MAX_LENGTH:  # Java counts UTF-16 units
        problem = f"topic name is longer than {TOPIC_MAX_LENGTH} characters"
    elif not all(c.isascii() and (c.isalnum() or c in "._-") for c in topic):
        problem = f"topic name {topic!r} has characters other than ASCII letters, digits, '.', '_' and '-'"
    else:
        return None
    return problem + " (Topic.java)"


def partition_dir_problem(directory: str | os.PathLike[str]) -> str | None:
    """Why a writer must not create partition directory ``directory`` (its ``<topic>-<partition>``
    name holds a topic Kafka refuses), or None; a directory that exists already is not judged."""
    if os.path.isdir(directory):
        return None
    tp = parse_topic_partition(directory)
    if tp is None or (problem := topic_name_problem(tp[0])) is None:
        return None
    return f"{os.fspath(directory)}: cannot create a partition directory for a topic Kafka refuses: {problem}"


# ---------------------------------------------------------------------------- v2 header writes
def _set_header(data: bytearray, *, base_offset: int | None = None, leader_epoch: int | None = None) -> None:
    if base_offset is not None:
        struct.pack_into(">q", data, _BASE_OFFSET_AT, base_offset)
    if leader_epoch is not None:
        struct.pack_into(">i", data, _PLE_AT, leader_epoch)


def _set_max_timestamp(data: bytearray, timestamp_type: TimestampType, max_timestamp: int) -> None:
    """DefaultRecordBatch.setMaxTimestamp: rewrite attributes and max timestamp, and the CRC, when either changes."""
    attributes = struct.unpack_from(">h", data, _ATTRIBUTES_AT)[0]
    current_type = TimestampType.LOG_APPEND_TIME if attributes & 0x08 else TimestampType.CREATE_TIME
    current_max = struct.unpack_from(">q", data, _MAX_TIMESTAMP_AT)[0]
    if current_type is timestamp_type and current_max == max_timestamp:
        return
    new_attrs = attributes & (0x07 | 0x10 | 0x20 | 0x40)  # codec, transactional, control, delete horizon
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        new_attrs |= 0x08
    struct.pack_into(">h", data, _ATTRIBUTES_AT, new_attrs)
    struct.pack_into(">q", data, _MAX_TIMESTAMP_AT, max_timestamp)
    struct.pack_into(">I", data, CRC_OFFSET, crc32c(memoryview(data)[CRC_START:]))


@dataclass
class _Validated:
    records: bytes
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    log_append_time: int
    size_maybe_changed: bool


# ------------------------------------------------------------------------------------------ Log
@dataclass
class _State:
    segments: dict[int, Segment] = field(default_factory=dict)
    bases: list[int] = field(default_factory=list)


class Log:
    """The segments and state files of one partition directory (Kafka's UnifiedLog + LocalLog).

    Create with :meth:`open`, read-only unless ``writable=True``. ``clock`` returns the time in
    ms (LogAppendTime stamps, producer expiration, ``segment.ms`` without timestamps);
    ``sync=False`` skips the fsyncs of implicit writes (snapshots, checkpoints,
    ``partition.metadata``) and the flush Kafka schedules after each roll; :meth:`flush` always
    fsyncs. The log is its partition's only replica: the high watermark follows the log end offset.
    """

    def __init__(
        self,
        directory: str,
        config: LogConfig,
        *,
        clock: Callable[[], int],
        sync: bool,
        topic_id: str | None,
        writable: bool = True,
    ) -> None:
        self.dir = directory
        self.config = config
        #: False for a reader: the load happens in memory and nothing on disk changes
        self.writable = writable
        #: the snapshot files a read-only load would have written or deleted
        self._overlay = None if writable else SnapshotOverlay()
        self.clock = clock
        self.sync = sync
        self._topic_id = topic_id
        self._dirty_topic_id: str | None = None
        self._s = _State()
        self.log_start_offset = 0
        self.recovery_point = 0
        self.high_watermark = 0
        self._next_offset_metadata = LogOffsetMetadata(0, 0, 0)
        self.leader_epoch_cache = LeaderEpochCache.for_dir(directory, sync=sync, writable=writable)
        self.producer_state = self._new_producer_state()
        #: a read-only load's view of the directory after LogLoader's handling of leftovers: each name
        #: a writable load would leave, mapped to the file holding it now (None: the files as listed)
        self._served: dict[str, str] | None = None
        #: ``.deleted`` files waiting for file.delete.delay.ms (retention.py)
        self.pending_deletions: list[PendingDeletion] = []
        self.closed = False

    # -- opening ---------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str],
        config: LogConfig | None = None,
        *,
        topic_id: str | bytes | uuid.UUID | None = None,
        log_start_offset: int = 0,
        recovery_point: int | None = None,
        had_clean_shutdown: bool = True,
        clock: Callable[[], int] | None = None,
        sync: bool = True,
        takeover: bool = False,
        writable: bool = False,
    ) -> Log:
        """Open a partition directory, loading its segments as LogLoader does.

        By default the log is read-only and the load happens in memory: files are opened
        read-only, nothing is created, changed or deleted, a missing directory raises
        :class:`~kafkalog.errors.LogNotFoundError`, indexes that are missing or do not fit the
        ``.log`` are rebuilt in memory, a torn tail is read up to its last whole batch, and the
        last stable offset and aborted transactions are computed in memory; appends and other
        writes raise :class:`~kafkalog.errors.ReadOnlyLogError`. With ``writable=True`` the
        directory is created if needed and loaded as a broker loads it, writing what recovery
        writes (indexes, snapshots, checkpoints, truncated tails), and the log can be appended to.

        ``log_start_offset`` and ``recovery_point`` are what the log dir's checkpoints hold for
        this partition. On a clean shutdown, a segment whose offset index is
        missing or whose transaction index fails its sanity check is rebuilt. With
        ``had_clean_shutdown=False`` every segment from the one holding ``recovery_point`` (default
        0) on is recovered as LogLoader.recoverLog does: indexes rebuilt, the ``.log`` cut at the
        first invalid batch or torn tail, and the segments after it deleted.

        ``takeover=True`` continues a log whose writer (a broker, or another Log) still held it open
        when the directory was copied after a flush: the state is loaded as after a clean shutdown,
        but no segment is recovered, no index resized or created, no producer expired and no
        snapshot written, so the files stay exactly as the copy has them (writer cases, SPEC §8.3).
        """
        directory = os.fspath(directory)
        if writable:
            if (refused := partition_dir_problem(directory)) is not None:
                raise InvalidTopicError(refused, file=directory)
            os.makedirs(directory, exist_ok=True)
        elif not os.path.isdir(directory):
            what = "is not a directory" if os.path.exists(directory) else "no such partition directory"
            raise LogNotFoundError(f"{what} (a read-only Log.open creates nothing; writable=True creates it)", file=directory)
        else:
            _refuse_log_dir(directory)
        config = config or LogConfig()
        tid = None if topic_id is None else topic_id_string(topic_id)
        self = cls(directory, config, clock=clock or _now_ms, sync=sync, topic_id=tid, writable=writable)
        tp = parse_topic_partition(directory)
        if tp is not None and (problem := topic_name_problem(tp[0])) is not None:
            log.warning("%s: %s; read anyway", directory, problem)  # R-NAME-03: warn, and read it anyway
        self._init_partition_metadata(tid)
        self._load(log_start_offset, recovery_point, had_clean_shutdown or takeover, takeover=takeover)
        return self

    def _init_partition_metadata(self, topic_id: str | None) -> None:
        path = os.path.join(self.dir, PARTITION_METADATA)
        existing = read_partition_metadata(path).topic_id if os.path.exists(path) else None
        if existing is not None and topic_id is not None and existing != topic_id:
            raise InconsistentTopicIdError(f"tried to assign topic id {topic_id}, but the log already has topic id {existing}", file=path)
        self._topic_id = existing or topic_id
        if existing is None and topic_id is not None:
            self._dirty_topic_id = topic_id

    @property
    def topic_id(self) -> str | None:
        """The topic id (base64), from ``partition.metadata`` or given to :meth:`open`."""
        return self._topic_id

    @property
    def topic_partition(self) -> tuple[str, int] | None:
        """(topic, partition) parsed from the directory name."""
        return parse_topic_partition(self.dir)

    def _new_segment(self, base_offset: int, suffix: str = "") -> Segment:
        return Segment.open(
            self.dir, base_offset, index_interval_bytes=self.config.index_interval_bytes,
            max_index_size=self.config.segment_index_bytes, rolling_jitter_ms=self.config.random_segment_jitter(),
            clock=self.clock, suffix=suffix, writable=self.writable, index_per_batch=self.config.index_per_batch,
        )

    def _new_producer_state(self) -> ProducerStateManager:
        return ProducerStateManager(self.dir, producer_id_expiration_ms=self.config.producer_id_expiration_ms, sync=self.sync, overlay=self._overlay)

    def check_writable(self, what: str) -> None:
        """Raise :class:`~kafkalog.errors.ReadOnlyLogError` if the log was opened read-only: what changes the log checks this."""
        if not self.writable:
            raise ReadOnlyLogError(f"cannot {what}: the log was opened read-only (Log.open(path, writable=True) loads it for writing)", file=self.dir)

    def _load(self, log_start_checkpoint: int, recovery_point_checkpoint: int | None, had_clean_shutdown: bool, *, takeover: bool = False) -> None:
        """LogLoader.load: clean up temporary files, load the segments, recover what needs it, rebuild the state."""
        self._handle_leftovers()
        self._retry_on_offset_overflow(lambda: self._load_segment_files(log_start_checkpoint, check=not takeover), reload=True)
        recovery_point, next_offset = self._retry_on_offset_overflow(
            lambda: self._recover_log(log_start_checkpoint, recovery_point_checkpoint or 0, had_clean_shutdown)
        )
        active = self.active_segment
        if not takeover:
            active.resize_indexes(self.config.segment_index_bytes)
        if self.leader_epoch_cache.truncate_from_end(next_offset):
            self.leader_epoch_cache.write()
        self.log_start_offset = loaded_log_start(log_start_checkpoint, self.segments[0].base_offset)
        if self.leader_epoch_cache.truncate_from_start(log_start_checkpoint):
            self.leader_epoch_cache.write()
        if takeover:  # the producers the live log had: none expired, no snapshot written
            rebuild_producer_state(self.producer_state, self.segments, self.log_start_offset, next_offset, True, -_LONG_MAX - 1, write=False)
        else:
            self.producer_state.remove_stray_snapshots(self._s.bases)
            rebuild_producer_state(self.producer_state, self.segments, self.log_start_offset, next_offset, had_clean_shutdown, self.clock())
        self.recovery_point = recovery_point
        self._next_offset_metadata = LogOffsetMetadata(next_offset, active.base_offset, active.size)
        self.high_watermark = next_offset
        self.producer_state.on_high_watermark_updated(next_offset)

    def _retry_on_offset_overflow(self, action: Callable[[], _T], *, reload: bool = False) -> _T:
        """LogLoader.retryOnOffsetOverflow: run ``action``; when recovering a segment meets an offset
        its indexes cannot hold (data from before Kafka 0.10.2), split that segment (SPEC R-RCV-06)
        and run ``action`` again, after forgetting the loaded segments when it loads them afresh."""
        while True:
            try:
                return action()
            except IndexOffsetOverflowError as e:
                if not self.writable:
                    raise
                segment = next((s for s in self.segments if s.log_path == e.file), None)
                if segment is None and e.file is not None and os.path.dirname(e.file) == self.dir:
                    segment = self._new_segment(base_offset_of(e.file))  # met while loading it
                    self.add_segment(segment)
                if segment is None or not segment.has_overflow():
                    raise
                log.info("%s; splitting the segment and retrying", e)
                split_overflowed_segment(self, segment)
                if reload:
                    for seg in self.segments:
                        seg.close_handlers()
                    self._s = _State()

    def _recover_log(self, log_start_checkpoint: int, recovery_point_checkpoint: int, had_clean_shutdown: bool) -> tuple[int, int]:
        """LogLoader.recoverLog: after an unclean shutdown, recover every segment from the recovery point on,
        deleting the segments after the first one that had to be truncated. Returns (recovery point, log end offset)."""
        if not had_clean_shutdown:
            unflushed = self.segments_in_range(recovery_point_checkpoint, _LONG_MAX)
            for i, segment in enumerate(unflushed):
                log.info("recovering unflushed segment %d of %s", segment.base_offset, self.dir)
                try:
                    truncated = self._recover_segment(segment, log_start_checkpoint)
                except InvalidOffsetError as e:  # Kafka also empties it on an IOException; we raise instead (SPEC R-RCV-06)
                    log.warning("found invalid offset during recovery of %s (%s): emptying the segment", segment.log_path, e)
                    truncated = segment.truncate_to(segment.base_offset)
                if truncated > 0:
                    log.warning("corruption found in segment %d of %s, truncating to offset %d", segment.base_offset, self.dir, segment.read_next_offset())
                    self._delete_segments(unflushed[i + 1 :])
                    break
        log_end: int | None = None
        if self._s.segments:
            log_end = self.active_segment.read_next_offset()
            if log_end < log_start_checkpoint:
                log.warning("deleting all segments of %s: log end offset %d is below the log start offset %d", self.dir, log_end, log_start_checkpoint)
                self._delete_segments(self.segments)
                self.leader_epoch_cache.clear_and_flush()
                self.producer_state.truncate_fully_and_start_at(log_start_checkpoint)
                log_end = None
        if not self._s.segments:
            self.add_segment(self._new_segment(log_start_checkpoint))
        if had_clean_shutdown and log_end is not None:
            return log_end, log_end
        end = self.active_segment.read_next_offset() if log_end is None else log_end
        return min(recovery_point_checkpoint, end), end

    def _delete_segments(self, segments: list[Segment]) -> None:
        for seg in segments:
            self.remove_segment(seg.base_offset)
            if self.writable:
                seg.delete()
            else:
                seg.close_handlers()
            path = self.producer_state.snapshot_path(seg.base_offset)
            self.producer_state.delete_snapshot(seg.base_offset)
            log.info("deleted segment %s and snapshot %s", seg.log_path, path)

    def _handle_leftovers(self) -> None:
        """LogLoader.load's first passes (removeTempFilesAndCollectSwapFiles, then the swap passes):
        ``.deleted`` and ``.cleaned`` files and incomplete swaps are deleted, a complete swap deletes
        the files it covers (snapshots included) and its ``.swap`` files lose their suffix
        (:func:`kafkalog.log.leftovers.load_plan`, R-CMP-14). A read-only load only notes the outcome
        (:meth:`_load_segment_files` reads the ``.swap`` files in place of the segments they replace)."""
        names = sorted(n for n in os.listdir(self.dir) if os.path.isfile(os.path.join(self.dir, n)))
        if not has_leftovers(names):
            return
        plan = load_plan(names, self._swap_next_offset)
        if not self.writable:
            self._served = plan.served
            if self._overlay is not None:
                self._overlay.removed.update(base_offset_of(n) for n in plan.deleted if n.endswith(".snapshot"))
            return
        for a in plan.actions:
            path = os.path.join(self.dir, a.name)
            if a.action == DELETE:
                log.info("deleting %s: %s", path, a.reason)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
        swapped = [a for a in plan.actions if a.action == COMPLETE]
        if swapped and self.sync:  # beyond Kafka: the old files must be gone for good before a .swap loses its suffix
            fsync_dir(self.dir)
        for a in swapped:
            log.info("recovering %s by renaming it from .swap", a.name)
            os.replace(os.path.join(self.dir, a.name), os.path.join(self.dir, a.target))  # type: ignore[arg-type]
        if swapped and self.sync:
            fsync_dir(self.dir)

    def _swap_next_offset(self, name: str) -> int:
        """The next offset of the ``.log.swap`` file ``name`` (LogSegment.readNextOffset)."""
        seg = self._new_segment(base_offset_of(name), suffix=".swap")
        try:
            return seg.read_next_offset()
        finally:
            seg.close_handlers()

    def _load_segment_files(self, log_start_checkpoint: int, *, check: bool = True) -> None:
        served = self._served
        if served is None:
            served = {n: n for n in os.listdir(self.dir) if os.path.isfile(os.path.join(self.dir, n))}
        for name in sorted(served):
            path = os.path.join(self.dir, served[name])
            stem, _dot, ext = name.partition(".")
            if not stem.isdigit() or len(stem) != 20:
                continue
            base = int(stem)
            suffix = ".swap" if served[name].endswith(".swap") else ""  # a read-only load's view of a swap to complete
            if ext in ("index", "timeindex", "txnindex"):
                if segment_file_name(base, ".log") not in served:
                    log.warning("found an orphaned index file %s, with no corresponding log file", path)
                    if self.writable:
                        os.unlink(path)
            elif ext == "log":
                segment = self._new_segment(base, suffix)
                if not check:
                    self.add_segment(segment)
                    continue
                try:
                    segment.sanity_check()  # as Kafka, not the offset/time indexes: recovery covers them
                    if not self.writable:
                        segment.check_indexes_fit()
                except (FileNotFoundError, CorruptIndexError) as e:
                    log.log(logging.WARNING if self.writable else logging.INFO, "recovering segment %s and rebuilding its index files%s: %s", segment.log_path, "" if self.writable else " in memory", e)
                    self._recover_segment(segment, log_start_checkpoint)
                    if self.sync and self.writable:  # beyond Kafka: below the recovery point no later flush would sync the rebuilt indexes
                        segment.flush()
                        fsync_dir(self.dir)
                self.add_segment(segment)

    def _recover_segment(self, segment: Segment, log_start_checkpoint: int) -> int:
        psm = self._new_producer_state()
        rebuild_producer_state(psm, self.segments, log_start_checkpoint, segment.base_offset, False, self.clock())
        truncated = segment.recover(psm, self.leader_epoch_cache)
        psm.take_snapshot()
        return truncated

    # -- segments --------------------------------------------------------------------------------
    def add_segment(self, segment: Segment) -> None:
        if segment.base_offset not in self._s.segments:
            bisect.insort(self._s.bases, segment.base_offset)
        self._s.segments[segment.base_offset] = segment

    def remove_segment(self, base_offset: int) -> None:
        self._s.segments.pop(base_offset)
        self._s.bases.remove(base_offset)

    @property
    def segments(self) -> list[Segment]:
        """The segments in base offset order."""
        return [self._s.segments[b] for b in self._s.bases]

    @property
    def active_segment(self) -> Segment:
        """The last segment, the one appends go to."""
        return self._s.segments[self._s.bases[-1]]

    def floor_segment(self, offset: int) -> Segment | None:
        """The segment with the largest base offset <= ``offset``."""
        i = bisect.bisect_right(self._s.bases, offset) - 1
        return self._s.segments[self._s.bases[i]] if i >= 0 else None

    def higher_segment(self, base_offset: int) -> Segment | None:
        """The segment after the one at ``base_offset``."""
        i = bisect.bisect_right(self._s.bases, base_offset)
        return self._s.segments[self._s.bases[i]] if i < len(self._s.bases) else None

    def segments_in_range(self, start: int, end: int) -> list[Segment]:
        """The segments that may hold offsets in ``[start, end)`` (LogSegments.values(from, to))."""
        return _segments_in_range(self.segments, start, end)

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets."""
        return self._next_offset_metadata.message_offset

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        """The log end offset with the active segment's base offset and size."""
        return self._next_offset_metadata

    def _update_log_end_offset(self, end_offset: int) -> None:
        active = self.active_segment
        self._next_offset_metadata = LogOffsetMetadata(end_offset, active.base_offset, active.size)
        if self.recovery_point > end_offset:
            self.recovery_point = end_offset

    @property
    def size(self) -> int:
        """Bytes in all ``.log`` files."""
        return sum(s.size for s in self.segments)

    # -- partition.metadata -----------------------------------------------------------------------
    def _maybe_flush_metadata_file(self) -> None:
        if self._dirty_topic_id is not None and self.writable:
            write_partition_metadata(os.path.join(self.dir, PARTITION_METADATA), self._dirty_topic_id, sync=self.sync)
            self._dirty_topic_id = None

    def assign_topic_id(self, topic_id: str | bytes | uuid.UUID) -> None:
        """Record the topic id; ``partition.metadata`` is written before the next append or at close."""
        tid = topic_id_string(topic_id)
        self.check_writable("assign a topic id")
        if self._topic_id is not None:
            if self._topic_id != tid:
                raise InconsistentTopicIdError(f"tried to assign topic id {tid}, but the log already has topic id {self._topic_id}", file=self.dir)
            return
        self._topic_id = tid
        if not os.path.exists(os.path.join(self.dir, PARTITION_METADATA)):
            self._dirty_topic_id = tid

    # -- append ----------------------------------------------------------------------------------
    def append(
        self,
        records: bytes | bytearray | memoryview,
        *,
        leader_epoch: int | None = None,
        assign_offsets: bool = True,
        origin: AppendOrigin | None = None,
    ) -> LogAppendInfo:
        """Append the batches in ``records`` (UnifiedLog.appendAsLeader / appendAsFollower).

        With ``assign_offsets=False`` (a follower) the bytes are written unchanged and their
        offsets must start at or above the log end offset. With ``assign_offsets=True`` (the
        leader) offsets from the log end offset, ``leader_epoch`` (default: the latest cached
        epoch, or 0) and the max timestamp are set as LogValidator sets them; magic 0/1 input,
        a broker-side ``compression.type`` or non-sequential inner offsets make the broker
        rebuild the batch. ``origin`` defaults to CLIENT (COORDINATOR for control batches) for
        the leader and REPLICATION for a follower; a CLIENT's magic 2 batch must have base offset
        0 and consistent sequence numbers, as Kafka requires.
        """
        self.check_open()
        self.check_writable("append")
        data = bytes(records)
        self._maybe_flush_metadata_file()
        reader = LogReader(data, name=self.dir)
        batches = list(reader.batches())
        if origin is None:
            if not assign_offsets:
                origin = AppendOrigin.REPLICATION
            elif batches and isinstance(batches[0], RecordBatch) and batches[0].is_control:
                origin = AppendOrigin.COORDINATOR
            else:
                origin = AppendOrigin.CLIENT
        if assign_offsets and leader_epoch is None:
            latest = self.leader_epoch_cache.latest_epoch
            leader_epoch = 0 if latest is None else latest
        info = self._analyze_and_validate_records(batches, origin, ignore_record_size=not assign_offsets, require_monotonic=not assign_offsets, leader_epoch=leader_epoch)
        if info.valid_bytes <= 0:
            return info
        valid = data[: info.valid_bytes]
        if assign_offsets:
            info.first_offset = self.log_end_offset
            assert leader_epoch is not None
            validated = self._validate_and_assign_offsets(batches, info.source_codec, leader_epoch, origin)
            valid = validated.records
            info.max_timestamp = validated.max_timestamp
            info.shallow_offset_of_max_timestamp = validated.shallow_offset_of_max_timestamp
            if self.config.message_timestamp_type is TimestampType.LOG_APPEND_TIME:
                info.log_append_time = validated.log_append_time
            batches = list(LogReader(valid, name=self.dir).batches())
            info.last_offset = batches[-1].last_offset
            if validated.size_maybe_changed:
                for b in batches:
                    if b.size_in_bytes > self.config.max_message_bytes:
                        raise RecordBatchTooLargeError(
                            f"message batch size is {b.size_in_bytes} bytes, over max.message.bytes {self.config.max_message_bytes}",
                            file=self.dir, offset=b.last_offset,
                        )
        elif info.first_or_last_offset_of_first_batch < self.log_end_offset:
            first = info.first_or_last_offset_of_first_batch
            raise UnexpectedAppendOffsetError(
                f"unexpected offset in append: first offset {first} is less than the next offset {self.log_end_offset}",
                file=self.dir, offset=first,
            )
        for b in batches:
            if isinstance(b, RecordBatch):
                if b.partition_leader_epoch >= 0:
                    self.leader_epoch_cache.assign(b.partition_leader_epoch, b.base_offset)
            elif len(self.leader_epoch_cache):
                log.warning("clearing leader epoch cache after unexpected append with message format v%d", b.magic)
                self.leader_epoch_cache.clear_and_flush()
        if len(valid) > self.config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"message batch size is {len(valid)} bytes, which exceeds the maximum configured segment size of {self.config.segment_bytes}",
                file=self.dir, offset=info.first_or_last_offset_of_first_batch,
            )
        segment = self._maybe_roll(len(valid), info)
        info.segment_base_offset = segment.base_offset
        meta = LogOffsetMetadata(info.first_or_last_offset_of_first_batch, segment.base_offset, segment.size)
        updated, completed, duplicate = self._analyze_and_validate_producer_state(meta, batches, origin)
        if duplicate is not None:
            info.first_offset = duplicate.first_offset
            info.last_offset = duplicate.last_offset
            info.log_append_time = duplicate.timestamp
            info.log_start_offset = self.log_start_offset
            info.duplicate = True
            return info
        segment.append(info.last_offset, info.max_timestamp, info.shallow_offset_of_max_timestamp, valid)
        self._update_log_end_offset(info.last_offset + 1)
        self._update_high_watermark(self.log_end_offset)
        for pid in updated:
            self.producer_state.update(updated[pid])
        for txn in completed:
            segment.update_txn_index(txn, self.producer_state.last_stable_offset(txn))
            self.producer_state.complete_txn(txn)
        self.producer_state.update_map_end_offset(info.last_offset + 1)
        self.producer_state.on_high_watermark_updated(self.high_watermark)
        info.log_start_offset = self.log_start_offset
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush(force_active=False)
        return info

    def _analyze_and_validate_records(
        self, batches: list[Batch], origin: AppendOrigin, *, ignore_record_size: bool, require_monotonic: bool, leader_epoch: int | None
    ) -> LogAppendInfo:
        first_offset: int | None = None
        last_offset = -1
        last_leader_epoch = -1
        source = Codec.NONE
        monotonic = True
        max_ts = -1
        shallow = -1
        last_of_first = -1
        valid_bytes = 0
        for i, batch in enumerate(batches):
            is_v2 = isinstance(batch, RecordBatch)
            ple = batch.partition_leader_epoch if is_v2 else -1
            if origin is AppendOrigin.RAFT_LEADER and ple != leader_epoch:
                raise InvalidRecordError("append from Raft leader did not set the batch epoch correctly", file=self.dir, position=batch.position)
            if is_v2 and origin is AppendOrigin.CLIENT and batch.base_offset != 0:
                raise InvalidRecordError(f"the base offset of the record batch should be 0, but it is {batch.base_offset}", file=self.dir, position=batch.position)
            if i == 0:
                if is_v2:
                    first_offset = batch.base_offset
                last_of_first = batch.last_offset
            if last_offset >= batch.last_offset:
                monotonic = False
            last_offset = batch.last_offset
            last_leader_epoch = ple
            if not ignore_record_size and batch.size_in_bytes > self.config.max_message_bytes:
                raise RecordBatchTooLargeError(
                    f"the record batch size is {batch.size_in_bytes} bytes, over max.message.bytes {self.config.max_message_bytes}",
                    file=self.dir, position=batch.position, offset=batch.last_offset,
                )
            if not batch.is_valid:
                raise CrcMismatchError(f"record is corrupt (stored crc = {batch.crc})", file=self.dir, position=batch.position, offset=batch.last_offset)
            if batch.max_timestamp > max_ts:
                max_ts = batch.max_timestamp
                shallow = last_offset
            valid_bytes += batch.size_in_bytes
            codec = batch.compression
            if codec is not Codec.NONE:
                source = codec
        if require_monotonic and not monotonic:
            raise OffsetsOutOfOrderError(f"out of order offsets found in append: {[b.last_offset for b in batches]}", file=self.dir)
        return LogAppendInfo(
            first_offset, last_offset, None if last_leader_epoch == -1 else last_leader_epoch, max_ts, shallow,
            -1, self.log_start_offset, source, valid_bytes, last_of_first,
        )

    # -- LogValidator ----------------------------------------------------------------------------
    def _validate_batch(self, first: Batch, batch: Batch, origin: AppendOrigin) -> None:
        validate_batch(first, batch, from_client=origin is AppendOrigin.CLIENT, file=self.dir)

    def _validate_record(self, batch: Batch, record: Record, now: int) -> None:
        if self.config.compact and record.key is None:
            raise InvalidRecordError("compacted topic cannot accept message without key", file=self.dir, position=batch.position, offset=record.offset)
        if self.config.message_timestamp_type is TimestampType.CREATE_TIME and record.timestamp != -1:
            diff = now - record.timestamp
            if (diff > 0 and diff > self.config.message_timestamp_before_max_ms) or (diff < 0 and -diff > self.config.message_timestamp_after_max_ms):
                raise InvalidRecordError(
                    f"timestamp {record.timestamp} of message with offset {record.offset} is out of range",
                    file=self.dir, position=batch.position, offset=record.offset,
                )
        elif batch.timestamp_type is TimestampType.LOG_APPEND_TIME:
            raise InvalidRecordError("invalid timestamp type in message: producers should not set LogAppendTime", file=self.dir, position=batch.position, offset=record.offset)

    def _validate_and_assign_offsets(self, batches: list[Batch], source: Codec, leader_epoch: int, origin: AppendOrigin) -> _Validated:
        now = self.clock()
        first = batches[0]
        target = self.config.target_codec(source)
        if (isinstance(first, RecordBatch) or source is not Codec.NONE) and len(batches) > 1:
            raise InvalidRecordError("compressed outer record has more than one batch", file=self.dir, position=batches[1].position)
        lat = self.config.message_timestamp_type is TimestampType.LOG_APPEND_TIME
        ts_type = self.config.message_timestamp_type
        offset = self.log_end_offset
        if source is Codec.NONE and target is Codec.NONE:
            if not all(isinstance(b, RecordBatch) for b in batches):
                return self._rebuild(batches, target, leader_epoch, origin, now)
            # assignOffsetsNonCompressed: in place
            assert isinstance(first, RecordBatch)
            self._validate_batch(first, first, origin)
            records = first.records()
            for r in records:
                self._validate_record(first, r, now)
            counter = offset + len(records)
            max_batch_ts = max((r.timestamp for r in records), default=-1)
            max_ts, shallow = (max_batch_ts, counter - 1) if max_batch_ts > -1 else (-1, -1)
            buf = bytearray(first.data)
            _set_header(buf, base_offset=counter - 1 - first.last_offset_delta, leader_epoch=leader_epoch)
            _set_max_timestamp(buf, ts_type, now if lat else max_batch_ts)
            if lat:
                max_ts, shallow = now, counter - 1
            return _Validated(bytes(buf), max_ts, shallow, now, False)
        # validateMessagesAndAssignOffsetsCompressed
        in_place = source is target and isinstance(first, RecordBatch)
        if source is Codec.NONE and isinstance(first, RecordBatch) and first.is_control:
            in_place = True
        max_ts = -1
        validated: list[Record] = []
        expected = 0
        for b in batches:
            self._validate_batch(first, b, origin)
            for r in b.records():
                self._validate_record(b, r, now)
                if b.magic > 0:
                    max_ts = max(max_ts, r.timestamp)
                    if r.offset != expected:
                        in_place = False
                expected += 1
                validated.append(r)
        if not in_place:
            return self._rebuild(batches, target, leader_epoch, origin, now, validated)
        assert isinstance(first, RecordBatch)
        last = offset + len(validated) - 1
        if lat:
            max_ts = now
        buf = bytearray(first.data)
        _set_header(buf, base_offset=last - first.last_offset_delta, leader_epoch=leader_epoch)
        _set_max_timestamp(buf, ts_type, max_ts)
        return _Validated(bytes(buf), max_ts, last, now, False)

    def _rebuild(
        self, batches: list[Batch], target: Codec, leader_epoch: int, origin: AppendOrigin, now: int, validated: list[Record] | None = None
    ) -> _Validated:
        """Write the records as one new magic 2 batch (LogValidator.buildRecordsAndAssignOffsets /
        convertAndAssignOffsetsNonCompressed). Compressed output is valid but may differ from Kafka's bytes."""
        first = batches[0]
        if validated is None:
            validated = []
            for b in batches:
                self._validate_batch(first, b, origin)
                for r in b.records():
                    self._validate_record(b, r, now)
                    validated.append(r)
        if not validated:
            raise InvalidRecordError("record batch has no records", file=self.dir, position=first.position)
        v2 = first if isinstance(first, RecordBatch) else None
        lat = self.config.message_timestamp_type is TimestampType.LOG_APPEND_TIME
        builder = RecordBatchBuilder(
            self.log_end_offset,
            compression=target,
            compression_level=self.config.target_level(target),
            timestamp_type=self.config.message_timestamp_type,
            log_append_time=now if lat else None,
            producer_id=v2.producer_id if v2 else -1,
            producer_epoch=v2.producer_epoch if v2 else -1,
            base_sequence=v2.base_sequence if v2 else -1,
            is_transactional=v2.is_transactional if v2 else False,
            partition_leader_epoch=leader_epoch,
        )
        offset = self.log_end_offset
        for r in validated:
            builder.append(r.timestamp, r.key, r.value, r.headers, offset=offset)
            offset += 1
        data = builder.build()
        max_ts = now if lat else builder.max_timestamp
        return _Validated(data, max_ts, offset - 1, now, True)

    def _analyze_and_validate_producer_state(
        self, meta: LogOffsetMetadata, batches: list[Batch], origin: AppendOrigin
    ) -> tuple[JavaLongHashMap[ProducerAppendInfo], list[CompletedTxn], BatchMetadata | None]:
        updated: JavaLongHashMap[ProducerAppendInfo] = JavaLongHashMap()
        completed: list[CompletedTxn] = []
        for batch in batches:
            if isinstance(batch, RecordBatch) and batch.producer_id >= 0:
                if origin is AppendOrigin.CLIENT:
                    entry = self.producer_state.last_entry(batch.producer_id)
                    dup = entry.find_duplicate_batch(batch.producer_epoch, batch.base_sequence, batch.last_sequence) if entry else None
                    if dup is not None:
                        return updated, completed, dup
                info = updated.get(batch.producer_id)
                if info is None:
                    info = updated[batch.producer_id] = self.producer_state.prepare_update(batch.producer_id, origin)
                try:
                    txn = info.append(batch)
                except KafkaLogError as e:
                    raise e.located(file=self.dir, offset=batch.base_offset) from None
                if txn is not None:
                    completed.append(txn)
        return updated, completed, None

    # -- roll / flush ----------------------------------------------------------------------------
    def _maybe_roll(self, messages_size: int, info: LogAppendInfo) -> Segment:
        segment = self.active_segment
        params = RollParams(self.config.max_segment_ms, self.config.segment_bytes, info.max_timestamp, info.last_offset, messages_size, self.clock())
        if segment.should_roll(params):
            roll_offset = info.first_offset if info.first_offset is not None else info.last_offset - _INT32_MAX
            return self.roll(roll_offset)
        return segment

    def roll(self, expected_next_offset: int | None = None) -> Segment:
        """Start a new active segment at max(``expected_next_offset``, log end offset) and take a producer snapshot (UnifiedLog.roll)."""
        self.check_open()
        self.check_writable("roll a segment")
        new_offset = max(expected_next_offset or 0, self.log_end_offset)
        active = self.active_segment
        if new_offset in self._s.segments:
            if active.base_offset == new_offset and active.size == 0:
                # R-ROLL-04 (KAFKA-6388: an index with no slots): the empty segment's files become
                # .deleted and go after file.delete.delay.ms, as LocalLog.createAndDeleteSegment does
                log.warning("rolling a new segment at %d while an empty active one exists there: replacing it", new_offset)
                from kafkalog.log.retention import schedule_segment_deletion

                self.remove_segment(new_offset)
                schedule_segment_deletion(self, active)
            else:
                raise KafkaLogError(f"trying to roll a new log segment with start offset {new_offset} while it already exists", file=self.dir, offset=new_offset)
        elif new_offset < active.base_offset:
            raise KafkaLogError(
                f"trying to roll a new log segment with start offset {new_offset} lower than start offset of the active segment {active.base_offset}",
                file=self.dir, offset=new_offset,
            )
        else:
            for suffix in (".log", ".index", ".timeindex", ".txnindex"):
                p = os.path.join(self.dir, segment_file_name(new_offset, suffix))
                if os.path.exists(p):
                    log.warning("newly rolled segment file %s already exists; deleting it first", p)
                    os.unlink(p)
            active.on_become_inactive_segment()
            if self.sync and self.recovery_point >= new_offset:
                active.flush()  # beyond Kafka: flush(new_offset) below skips it, yet its final time-index entry and trims are new
        segment = self._new_segment(new_offset)
        self.add_segment(segment)
        self._update_log_end_offset(self.log_end_offset)
        self.producer_state.update_map_end_offset(new_offset)
        snapshot = self.producer_state.take_snapshot(sync=False)
        if self.sync:  # Kafka schedules this flush right after the roll
            if snapshot is not None:
                with open(snapshot, "rb") as f:
                    os.fsync(f.fileno())
            self.flush(new_offset, force_active=False)
        return segment

    def flush(self, offset: int | None = None, *, force_active: bool = True) -> None:
        """fsync the segments holding offsets below ``offset`` (default: everything, the active segment
        included) and move the recovery point to ``offset`` (UnifiedLog.flush)."""
        self.check_open()
        self.check_writable("flush")
        offset = self.log_end_offset if offset is None else offset
        flush_offset = offset + 1 if force_active else offset
        if flush_offset > self.recovery_point:
            current = self.recovery_point
            to_flush = self.segments_in_range(current, flush_offset) if current <= flush_offset else []
            for s in to_flush:
                s.flush()
            if any(s.base_offset >= current for s in to_flush):
                fsync_dir(self.dir)
            if offset > self.recovery_point:
                self.recovery_point = offset

    # -- retention (retention.py) ------------------------------------------------------------------
    def delete_old_segments(self, now_ms: int | None = None, *, dry_run: bool = False) -> RetentionResult:
        """Apply retention.ms, retention.bytes and the log start offset as UnifiedLog.deleteOldSegments does."""
        from kafkalog.log.retention import delete_old_segments

        if not dry_run:
            self.check_writable("delete segments")
        return delete_old_segments(self, now_ms, dry_run=dry_run)

    def maybe_increment_log_start_offset(self, new_log_start_offset: int) -> bool:
        """Move the log start offset up (DeleteRecords); segments wholly below it go at the next retention run."""
        from kafkalog.log.retention import maybe_increment_log_start_offset

        self.check_writable("move the log start offset")
        return maybe_increment_log_start_offset(self, new_log_start_offset)

    def delete_pending_files(self, now_ms: int | None = None) -> list[str]:
        """Remove the ``.deleted`` files whose file.delete.delay.ms has passed; return their paths."""
        from kafkalog.log.retention import delete_pending_files

        self.check_writable("delete files")
        return delete_pending_files(self, now_ms)

    def remove_expired_producers(self, now_ms: int | None = None) -> None:
        """Forget producers idle for producer.id.expiration.ms (Kafka runs this every 10 minutes)."""
        self.producer_state.remove_expired_producers(self.clock() if now_ms is None else now_ms)

    def _update_high_watermark(self, hw: int) -> None:
        self.high_watermark = hw

    # -- reading ---------------------------------------------------------------------------------
    @property
    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest transaction not yet decided (or not yet below the high watermark)."""
        return self.producer_state.first_unstable_offset()

    @property
    def last_stable_offset(self) -> int:
        """The offset below which every transaction is decided (UnifiedLog.lastStableOffset)."""
        fu = self.first_unstable_offset
        return self.high_watermark if fu is None else min(fu, self.high_watermark)

    def convert_to_offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """An offset with its segment and byte position (LocalLog.convertToOffsetMetadataOrThrow)."""
        if offset == self.log_end_offset:
            return self._next_offset_metadata
        seg = self.floor_segment(offset)
        if offset < self.log_start_offset or offset > self.log_end_offset or seg is None:
            raise OffsetOutOfRangeError(f"offset {offset} is outside [{self.log_start_offset}, {self.log_end_offset}]", file=self.dir, offset=offset)
        while seg is not None:
            found = seg.translate_offset(offset)
            if found is not None:
                return LogOffsetMetadata(offset, seg.base_offset, found.position)
            seg = self.higher_segment(seg.base_offset)
        return self._next_offset_metadata

    def read(
        self, start_offset: int, max_bytes: int, *, isolation: FetchIsolation = FetchIsolation.LOG_END, min_one_message: bool = False
    ) -> FetchData:
        """Up to ``max_bytes`` of ``.log`` data from the batch holding ``start_offset`` (UnifiedLog.read / LocalLog.read).

        Under ``FetchIsolation.TXN_COMMITTED`` the data stops at the last stable offset and
        :attr:`FetchData.aborted_transactions` lists the aborted transactions it overlaps.
        """
        self.check_open()
        if start_offset < self.log_start_offset:
            raise OffsetOutOfRangeError(
                f"received request for offset {start_offset}, but the log starts at {self.log_start_offset}", file=self.dir, offset=start_offset
            )
        if isolation is FetchIsolation.LOG_END:
            max_meta = self._next_offset_metadata
        elif isolation is FetchIsolation.HIGH_WATERMARK:
            max_meta = self.convert_to_offset_metadata(self.high_watermark)
        else:
            max_meta = self.convert_to_offset_metadata(self.last_stable_offset)
        committed = isolation is FetchIsolation.TXN_COMMITTED
        end = self.log_end_offset
        seg = self.floor_segment(start_offset)
        if start_offset > end or seg is None:
            raise OffsetOutOfRangeError(f"received request for offset {start_offset}, but the log ends at {end}", file=self.dir, offset=start_offset)
        if start_offset == max_meta.message_offset:
            return FetchData(max_meta, aborted_transactions=[] if committed else None)
        if start_offset > max_meta.message_offset:
            return FetchData(self.convert_to_offset_metadata(start_offset), aborted_transactions=[] if committed else None)
        while seg is not None:
            if seg.base_offset < max_meta.segment_base_offset:
                max_position: int | None = seg.size
            elif seg.base_offset == max_meta.segment_base_offset and not max_meta.message_offset_only:
                max_position = max_meta.relative_position
            else:
                max_position = None
            if max_position is None:
                found = seg.translate_offset(start_offset)
                fetch = None if found is None else FetchData(LogOffsetMetadata(start_offset, seg.base_offset, found.position))
            else:
                fetch = seg.read(start_offset, max_bytes, max_position, min_one_message)
            if fetch is not None:
                if committed:
                    fetch.aborted_transactions = self._aborted_for_fetch(start_offset, seg, fetch)
                return fetch
            seg = self.higher_segment(seg.base_offset)
        return FetchData(self._next_offset_metadata)

    def _aborted_for_fetch(self, start_offset: int, segment: Segment, fetch: FetchData) -> list[AbortedTxn]:
        upper = segment.offset_index.fetch_upper_bound_offset(fetch.offset_metadata.relative_position, len(fetch.records))
        if upper is not None:
            upper_offset = upper[0]
        else:
            nxt = self.higher_segment(segment.base_offset)
            upper_offset = nxt.base_offset if nxt is not None else self.log_end_offset
        return self.collect_aborted_transactions(start_offset, upper_offset)

    def collect_aborted_transactions(
        self, start_offset: int, upper_bound_offset: int, *, min_last_offset: int | None = None
    ) -> list[AbortedTxn]:
        """Aborted transactions overlapping ``[start_offset, upper_bound_offset)`` from the ``.txnindex`` files,
        read from the segment holding ``start_offset`` on until an entry's last stable offset reaches the bound
        (SPEC R-TXN-05). ``min_last_offset`` replaces ``start_offset`` as the lowest last offset kept: the cleaner
        gives the log start offset, as UnifiedLog.collectAbortedTransactions does (SPEC R-CMP-09)."""
        out: list[AbortedTxn] = []
        seg = self.floor_segment(start_offset)
        lowest = start_offset if min_last_offset is None else min_last_offset
        while seg is not None:
            found, complete = seg.collect_aborted_txns(lowest, upper_bound_offset)
            out.extend(found)
            if complete:
                break
            seg = self.higher_segment(seg.base_offset)
        return out

    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: the first record whose timestamp is >= ``timestamp`` (None if there is none);
        -2 (earliest), -1 (latest), -3 (max timestamp) and -4 (earliest local) as Kafka answers them."""
        self.check_open()
        cache = self.leader_epoch_cache
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            first = cache.earliest_entry
            epoch = first.epoch if first is not None and first.start_offset <= self.log_start_offset else None
            return TimestampAndOffset(-1, self.log_start_offset, epoch)
        if timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(-1, self.log_end_offset, cache.latest_epoch)
        if timestamp == LATEST_TIERED_TIMESTAMP:
            return TimestampAndOffset(-1, -1, -1)
        if timestamp == MAX_TIMESTAMP:
            return self._max_timestamp_offset()
        target = next((s for s in self.segments if s.largest_timestamp >= timestamp), None)
        return None if target is None else target.find_offset_by_timestamp(timestamp, self.log_start_offset)

    def _max_timestamp_offset(self) -> TimestampAndOffset | None:
        best = max(self.segments, key=lambda s: s.max_timestamp_so_far)  # the first of equals, as Scala's maxBy
        ts, off = best.read_max_timestamp_and_offset_so_far()
        _o, position = best.offset_index.lookup(off)
        for batch in best.batches(position):
            if batch.max_timestamp == ts:
                if batch.magic == 0:
                    return None
                for r in batch.records():
                    if r.timestamp == ts:
                        epoch = batch.partition_leader_epoch if isinstance(batch, RecordBatch) else -1
                        return TimestampAndOffset(ts, r.offset, epoch if epoch >= 0 else None)
                return None
        return None

    def batches(self, start_offset: int | None = None) -> Iterator[Batch]:
        """Every batch from the one holding ``start_offset`` (default: the log start) to the end."""
        start = self.log_start_offset if start_offset is None else start_offset
        seg = self.floor_segment(start) or (self.segments[0] if self.segments else None)
        first = True
        while seg is not None:
            position = 0
            if first:
                found = seg.translate_offset(start)
                position = found.position if found is not None else seg.size
                first = False
            yield from seg.batches(position)
            seg = self.higher_segment(seg.base_offset)

    # -- closing ---------------------------------------------------------------------------------
    def check_open(self) -> None:
        """Raise ``ValueError`` if the log was closed: what changes or reads the log checks this first."""
        if self.closed:
            raise ValueError(f"log {self.dir} is closed")

    def close(self, *, flush: bool = True) -> None:
        """Flush (as Kafka's clean shutdown does), write the producer snapshot at the log end offset,
        trim the indexes and close the files (UnifiedLog.close). A read-only log only closes its files."""
        if self.closed:
            return
        if not self.writable:
            for seg in self.segments:
                seg.close_handlers()
            self.closed = True
            return
        self._maybe_flush_metadata_file()
        if flush:
            self.flush()
        self.producer_state.take_snapshot(sync=self.sync)
        for seg in self.segments:
            seg.close()
        self.closed = True

    def __enter__(self) -> Log:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Log(dir={self.dir!r}, segments={len(self._s.bases)}, logEndOffset={self.log_end_offset})"


# ------------------------------------------------------------------------------------- helpers
def _refuse_log_dir(directory: str) -> None:
    """Raise when ``directory`` holds no segment but partition directories: a broker's log dir given
    where one of its partitions was meant (read as a partition, it would be silently empty)."""
    names = os.listdir(directory)
    if any(n.endswith(".log") for n in names):
        return
    parts = sorted(n for n in names if parse_topic_partition(n) is not None and os.path.isdir(os.path.join(directory, n)))
    if parts:
        shown = ", ".join(parts[:3]) + (", ..." if len(parts) > 3 else "")
        raise KafkaLogError(f"is a log dir holding partition directories ({shown}), not a partition directory: open one of them", file=directory)


def _segments_in_range(segments: list[Segment], start: int, end: int) -> list[Segment]:
    if start == end:
        return []
    if end < start:
        raise ValueError(f"invalid segment range: {start} > {end}")
    bases = [s.base_offset for s in segments]
    i = bisect.bisect_right(bases, start) - 1
    lo = max(i, 0)
    return [s for s in segments[lo:] if s.base_offset < end]


def rebuild_producer_state(
    psm: ProducerStateManager,
    segments: list[Segment],
    log_start_offset: int,
    last_offset: int,
    reload_from_clean_shutdown: bool,
    now_ms: int,
    *,
    write: bool = True,
) -> None:
    """Bring ``psm`` to ``last_offset`` from its newest usable snapshot and the segments after it (UnifiedLog.rebuildProducerState);
    ``write=False`` takes no snapshot."""
    offsets_to_snapshot: list[int] = []
    if segments:
        if len(segments) > 1:
            offsets_to_snapshot.append(segments[-2].base_offset)
        offsets_to_snapshot.append(segments[-1].base_offset)
    offsets_to_snapshot.append(last_offset)
    if psm.latest_snapshot_offset() is None and reload_from_clean_shutdown:
        for off in offsets_to_snapshot:
            psm.update_map_end_offset(off)
            if write:
                psm.take_snapshot()
        return
    empty_before = psm.is_empty() and psm.map_end_offset >= last_offset
    psm.truncate_and_reload(log_start_offset, last_offset, now_ms)
    if last_offset > psm.map_end_offset and not empty_before:
        bases = [s.base_offset for s in segments]
        i = bisect.bisect_right(bases, last_offset) - 1
        seg_of_last = segments[i] if i >= 0 else None
        for seg in _segments_in_range(segments, psm.map_end_offset, last_offset):
            start = max(seg.base_offset, psm.map_end_offset, log_start_offset)
            psm.update_map_end_offset(start)
            if write and seg.base_offset in offsets_to_snapshot:
                psm.take_snapshot()
            max_position = seg.size
            if seg is seg_of_last:
                found = seg.translate_offset(last_offset)
                max_position = found.position if found is not None else seg.size
            fetch = seg.read(start, _INT32_MAX, max_position)
            if fetch is not None:
                psm.load_producers_from_batches(fetch.batches())
    psm.update_map_end_offset(last_offset)
    if write:
        psm.take_snapshot()


def checkpoint_log_dir(log_dir: str | os.PathLike[str], logs: Iterable[Log], *, sync: bool = True) -> None:
    """Update ``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint`` of a log dir for ``logs``,
    keeping the entries of partitions not given (LogManager.checkpointRecoveryOffsetsInDir /
    checkpointLogStartOffsetsInDir; a log start offset is written only when it is above the first segment's base)."""
    d = os.fspath(log_dir)
    rp_path = os.path.join(d, RECOVERY_POINT_CHECKPOINT)
    ls_path = os.path.join(d, LOG_START_OFFSET_CHECKPOINT)
    recovery = read_offset_checkpoint(rp_path) if os.path.exists(rp_path) else {}
    starts = read_offset_checkpoint(ls_path) if os.path.exists(ls_path) else {}
    for lg in logs:
        tp = lg.topic_partition
        if tp is None:
            raise ValueError(f"{lg.dir} is not named <topic>-<partition>")
        recovery[tp] = lg.recovery_point
        if lg.log_start_offset > lg.segments[0].base_offset:
            starts[tp] = lg.log_start_offset
        else:
            starts.pop(tp, None)
    write_offset_checkpoint(rp_path, recovery, sync=sync)
    write_offset_checkpoint(ls_path, starts, sync=sync)

