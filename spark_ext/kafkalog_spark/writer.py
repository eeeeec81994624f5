"""``df.write.format("kafkalog")``: append rows to partition directories as a Kafka leader would.

Columns, as Spark's Kafka sink takes them: ``value`` (binary or string, required), ``key``
(binary or string), ``topic`` (string; or the ``topic`` option, which wins), ``partition`` (int),
``timestamp`` (default: the time of writing) and ``headers``
(``array<struct<key:string,value:binary>>``); any other column (``offset``, ``timestampType``,
the metadata columns of a DataFrame read with ``format("kafkalog")``) is ignored, as Spark's Kafka
sink ignores columns it does not know, so a DataFrame read from one log dir writes to another. A
row without a partition goes where Kafka's
default partitioner sends it (:mod:`kafkalog.fast.partitioner`): a keyed row by the murmur2 hash of its
key modulo the topic's partition count, a keyless row to a sticky partition that changes after
``kafka.batch.size`` bytes. The partition count is the ``numPartitions`` option, else the number
of the topic's partition dirs present when the job starts (highest partition + 1), else 1 (the
broker's ``num.partitions`` default for a new topic). Each task groups its rows by partition and appends
them through :class:`kafkalog.log.unified.Log` (offsets, indexes, producer snapshots and leader epochs
written by Kafka's rules), holding an exclusive ``flock`` on the partition directory itself while
it appends, so that concurrent tasks append whole batches one after another and no lock file is
left beside Kafka's files.

Only local directories (Kafka's own layout) are written. The save modes are the Kafka sink's:
``append`` and the default (``errorifexists``, which appends too, see :func:`append_by_default`);
``overwrite`` and ``ignore`` are refused. As with Spark's Kafka sink, a failed job may leave the
rows some tasks already appended.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import BinaryType, IntegerType, StringType, StructType, TimestampType

from kafkalog.fast.partitioner import DEFAULT_BATCH_SIZE, StickyPartitioner, key_hashes
from kafkalog.format.compression import Codec
from kafkalog.format.records.v2 import RecordBatchBuilder
from kafkalog.log.gaps import PARTITION_DIR
from kafkalog.log.unified import Log, LogConfig, topic_name_problem

from .errors import LayoutError, SourceOptionError
from .layout import filesystem_for

__all__ = ["WRITTEN_COLUMNS", "AppendedRange", "KafkaLogCommitMessage", "KafkaLogWriter", "WriteOptions", "append_by_default"]

log = logging.getLogger(__name__)

_CODECS = {"none": Codec.NONE, "gzip": Codec.GZIP, "snappy": Codec.SNAPPY, "lz4": Codec.LZ4, "zstd": Codec.ZSTD}
#: Records buffered per partition before a task takes the partition's lock and appends them.
FLUSH_RECORDS = 50_000

Record = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


@dataclass(frozen=True)
class WriteOptions:
    """The writer's options, validated."""

    log_dir: str
    topic: str | None
    compression: Codec
    max_records_per_batch: int
    config: tuple[tuple[str, str], ...]
    num_partitions: int | None = None
    batch_size: int = DEFAULT_BATCH_SIZE

    @classmethod
    def parse(cls, options: dict[str, str]) -> WriteOptions:
        """From Spark's (lower-cased) option map: ``path``, ``topic``, ``compression`` (or
        ``kafka.compression.type``), ``maxRecordsPerBatch``, ``numPartitions``, ``kafka.batch.size``
        and ``config.<topic config>`` (e.g. ``config.segment.bytes``), which go to
        :meth:`LogConfig.from_properties`."""
        opts = {k.lower(): str(v) for k, v in options.items()}
        if not opts.get("path"):
            raise SourceOptionError("no path: use save(path) with the log dir to append to")
        fsref, (path,) = filesystem_for([opts["path"]], ())
        if fsref.protocol not in ("file", "local"):
            raise LayoutError("the writer appends to local directories only", file=opts["path"])
        codec_name = opts.get("compression", opts.get("kafka.compression.type", "none")).lower()
        if codec_name not in _CODECS:
            raise SourceOptionError(f"option compression must be one of {', '.join(_CODECS)}, got {codec_name!r}")
        per_batch = _positive(opts, "maxRecordsPerBatch", 1000)
        num_partitions = _positive(opts, "numPartitions", None)
        batch_size = _positive(opts, "kafka.batch.size", DEFAULT_BATCH_SIZE)
        config = tuple(sorted((k[len("config."):], v) for k, v in opts.items() if k.startswith("config.")))
        try:
            LogConfig.from_properties(dict(config))
        except ValueError as e:
            raise SourceOptionError(f"invalid topic config: {e}") from None
        topic = opts.get("topic")
        if topic is not None:
            _check_topic(topic)
        return cls(path, topic, _CODECS[codec_name], per_batch, config, num_partitions, batch_size)


def _check_topic(topic: str) -> None:
    """Refuse a topic name Kafka refuses (R-NAME-03), with Kafka's reason: its directory would be
    one no broker makes (``..`` would even name ``..-0`` beside the log dir)."""
    if (problem := topic_name_problem(topic)) is not None:
        raise SourceOptionError(f"cannot write topic {topic!r}: {problem}")


def _positive(opts: dict[str, str], name: str, default: int | None) -> int | None:
    """Option ``name`` (looked up lower-cased) as a positive integer, or ``default`` when absent."""
    raw = opts.get(name.lower())
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SourceOptionError(f"option {name} expects an integer, got {raw!r}") from None
    if value <= 0:
        raise SourceOptionError(f"option {name} must be positive, got {value}")
    return value


def existing_partition_counts(log_dir: str) -> dict[str, int]:
    """Each topic's partition count as seen in ``log_dir``: its highest ``<topic>-<n>`` dir + 1
    (``-delete``, ``-future`` and ``-stray`` dirs do not match)."""
    counts: dict[str, int] = {}
    try:
        names = os.listdir(log_dir)
    except FileNotFoundError:
        return counts
    for name in names:
        m = PARTITION_DIR.match(name)  # as the readers' discovery reads the name
        if m and os.path.isdir(os.path.join(log_dir, name)):
            counts[m["topic"]] = max(counts.get(m["topic"], 0), int(m["partition"]) + 1)
    return counts


@dataclass(frozen=True)
class AppendedRange:
    """Offsets ``first..last`` appended to one partition by one task."""

    topic: str
    partition: int
    first: int
    last: int


@dataclass
class KafkaLogCommitMessage(WriterCommitMessage):
    """What one task appended."""

    appended: list[AppendedRange] = field(default_factory=list)


#: The columns the writer takes, with the Spark types each may have (None: checked when read).
WRITTEN_COLUMNS: dict[str, tuple[type, ...] | None] = {
    "key": (BinaryType, StringType), "value": (BinaryType, StringType), "topic": (StringType,),
    "partition": (IntegerType,), "timestamp": (TimestampType,), "headers": None,
}


def _check_schema(schema: StructType, topic_option: str | None) -> list[str]:
    """The written columns present in ``schema``, their types checked; other columns are ignored."""
    names = []
    for f in schema.fields:
        if f.name not in WRITTEN_COLUMNS:
            continue
        types = WRITTEN_COLUMNS[f.name]
        if types is not None and not isinstance(f.dataType, types):
            raise SourceOptionError(f"column {f.name} cannot be {f.dataType.simpleString()}")
        names.append(f.name)
    if "value" not in names:
        raise SourceOptionError("a value column is required")
    if "topic" not in names and topic_option is None:
        raise SourceOptionError("give a topic column or the topic option")
    ignored = [f.name for f in schema.fields if f.name not in WRITTEN_COLUMNS]
    if ignored:
        log.info("kafkalog writer: ignoring columns %s (written: %s)", ", ".join(ignored), ", ".join(WRITTEN_COLUMNS))
    return names


def _bytes(v: object) -> bytes | None:
    return v.encode("utf-8") if isinstance(v, str) else v  # type: ignore[return-value]


class KafkaLogWriter(DataSourceArrowWriter):
    """Appends each task's rows to ``<log dir>/<topic>-<partition>``."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.opts = WriteOptions.parse(options)
        self.columns = _check_schema(schema, self.opts.topic)
        # taken once on the driver, so that every task partitions with the same counts
        self.partition_counts = {} if self.opts.num_partitions else existing_partition_counts(self.opts.log_dir)

    def _partition_count(self, topic: str) -> int:
        return self.opts.num_partitions or self.partition_counts.get(topic, 1)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaLogCommitMessage:
        """Buffer rows by partition and append them in batches of ``maxRecordsPerBatch``."""
        pending: dict[tuple[str, int], list[Record]] = {}
        done: list[AppendedRange] = []
        sticky: dict[str, StickyPartitioner] = {}
        for rb in iterator:
            cols = {name: rb.column(name).to_pylist() for name in self.columns}
            n = rb.num_rows
            topics = [self.opts.topic] * n if self.opts.topic is not None else cols["topic"]
            parts = cols.get("partition") or [None] * n
            hashes = key_hashes(rb.column("key")) if "key" in cols and None in parts else None
            now = time.time_ns() // 1_000_000
            if "timestamp" in cols:  # µs since the epoch, as Spark holds them; Kafka keeps ms
                micros = rb.column("timestamp").cast(pa.int64()).to_pylist()
                stamps = [now if t is None else t // 1000 for t in micros]
            else:
                stamps = [now] * n
            keys = cols.get("key") or [None] * n
            headers = cols.get("headers") or [None] * n
            for i, value in enumerate(cols["value"]):
                if topics[i] is None:
                    raise SourceOptionError(f"row {i} of a batch has a null topic")
                key, value = _bytes(keys[i]), _bytes(value)
                hs = [(h["key"], _bytes(h["value"])) for h in headers[i] or ()]
                part = parts[i]
                if part is None:  # Kafka's default partitioner
                    topic = topics[i]
                    if hashes is not None and hashes[i] >= 0:
                        part = int(hashes[i]) % self._partition_count(topic)
                    else:
                        if topic not in sticky:
                            sticky[topic] = StickyPartitioner(self._partition_count(topic), self.opts.batch_size)
                        size = len(value or b"") + sum(len(k) + len(v or b"") for k, v in hs)
                        part = sticky[topic].partition(max(1, size))
                tp = (topics[i], part)
                buf = pending.setdefault(tp, [])
                buf.append((stamps[i], key, value, hs))
                if len(buf) >= FLUSH_RECORDS:
                    done.append(self._append(tp, buf))
                    pending[tp] = []
        done.extend(self._append(tp, buf) for tp, buf in pending.items() if buf)
        return KafkaLogCommitMessage(done)

    def _append(self, tp: tuple[str, int], records: list[Record]) -> AppendedRange:
        topic, partition = tp
        _check_topic(topic)
        directory = os.path.join(self.opts.log_dir, f"{topic}-{partition}")
        os.makedirs(directory, exist_ok=True)
        step = self.opts.max_records_per_batch
        lock = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when closed
            with Log.open(directory, LogConfig.from_properties(dict(self.opts.config)), sync=False, writable=True) as lg:
                first = lg.log_end_offset
                for i in range(0, len(records), step):
                    builder = RecordBatchBuilder(0, compression=self.opts.compression)
                    for ts, key, value, hs in records[i : i + step]:
                        builder.append(ts, key, value, hs)
                    lg.append(builder.build())
                last = lg.log_end_offset - 1
        finally:
            os.close(lock)
        return AppendedRange(topic, partition, first, last)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Log what the job appended."""
        ranges = [r for m in messages if isinstance(m, KafkaLogCommitMessage) for r in m.appended]
        log.info("kafkalog writer: appended %d records in %d runs", sum(r.last - r.first + 1 for r in ranges), len(ranges))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Appends cannot be undone: say which ones stay."""
        ranges = [r for m in messages if isinstance(m, KafkaLogCommitMessage) for r in m.appended]
        for r in ranges:
            log.warning("kafkalog writer: job failed; offsets %d..%d of %s-%d stay appended", r.first, r.last, r.topic, r.partition)


def append_by_default() -> None:
    """Make ``df.write.format("kafkalog").save(path)`` (save mode ``errorifexists``, Spark's
    default) append, as Spark's Kafka sink does for that mode.

    Spark refuses any save mode but append and overwrite for a Python data source before the
    source is asked, so the classic ``DataFrameWriter.save`` is wrapped: for the ``kafkalog``
    format alone, ``errorifexists`` becomes ``append``; every other format and mode is untouched.
    Spark Connect's writer (``pyspark.sql.connect.readwriter``, loaded when a Connect session
    exists) gets the same wrapper (:func:`append_by_default_on_connect`). Idempotent; called by
    :func:`kafkalog_spark.register`.
    """
    from pyspark.sql.readwriter import DataFrameWriter

    connect = sys.modules.get("pyspark.sql.connect.readwriter")  # not imported here: it needs pandas and grpcio
    if connect is not None:
        append_by_default_on_connect(connect.DataFrameWriter)
    if getattr(DataFrameWriter.save, "_kafkalog_append_by_default", False):
        return
    save = DataFrameWriter.save

    @functools.wraps(save)
    def save_appending(self: DataFrameWriter, path: str | None = None, format: str | None = None, mode: str | None = None,  # noqa: A002 - pyspark's name
                       partitionBy: str | list[str] | None = None, **options: object) -> None:  # noqa: N803 - pyspark's name
        if format is not None:
            self.format(format)
        if mode is not None:
            self.mode(mode)
        jw = self._jwrite
        if str(jw.source()).lower() == "kafkalog" and str(jw.curmode().toString()) == "ErrorIfExists":
            self.mode("append")
        return save(self, path, None, None, partitionBy, **options)

    save_appending._kafkalog_append_by_default = True  # type: ignore[attr-defined]
    DataFrameWriter.save = save_appending  # type: ignore[method-assign]


#: the names Spark gives the default save mode (SaveMode.ErrorIfExists)
_ERROR_IF_EXISTS = frozenset({"error", "errorifexists", "default"})


def append_by_default_on_connect(writer: type) -> None:
    """Wrap Spark Connect's ``DataFrameWriter.save`` as :func:`append_by_default` wraps the classic
    one. A Connect writer keeps its format and mode in ``_write.source`` and ``_write.mode`` (None
    until set: the server then uses ``errorifexists``), and sends them when ``save`` runs, so for
    the ``kafkalog`` format an unset or ``errorifexists`` mode becomes ``append`` before that."""
    save = writer.save  # type: ignore[attr-defined]
    if getattr(save, "_kafkalog_append_by_default", False):
        return

    @functools.wraps(save)
    def save_appending(self: Any, path: str | None = None, format: str | None = None, mode: str | None = None,  # noqa: A002 - pyspark's name
                       partitionBy: str | list[str] | None = None, **options: object) -> None:  # noqa: N803 - pyspark's name
        if format is not None:
            self.format(format)
        if mode is not None:
            self.mode(mode)
        w = self._write
        if (w.source or "").lower() == "kafkalog" and (w.mode is None or str(w.mode).lower() in _ERROR_IF_EXISTS):
            self.mode("append")
        return save(self, path, None, None, partitionBy, **options)

    save_appending._kafkalog_append_by_default = True  # type: ignore[attr-defined]
    writer.save = save_appending  # type: ignore[attr-defined]
