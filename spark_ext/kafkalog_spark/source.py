"""The ``kafkalog`` Python data source: Kafka log files as Spark's Kafka source presents topics.

``spark.read.format("kafkalog").load(path)`` and ``spark.readStream.format("kafkalog")`` return
Spark's Kafka schema (``key, value, topic, partition, offset, timestamp, timestampType`` and with
``includeHeaders=true`` ``headers``), plus opt-in metadata columns (``includeMetadata=true``).
Planning runs on the driver (:mod:`.planning`), reading on executors (:mod:`.reader`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceWriter,
    Filter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .arrow import METADATA_COLUMNS, arrow_schema
from .errors import SourceOptionError
from .filters import RowFilter, push_filters
from .layout import discover, filesystem_for
from .options import SourceOptions, parse_options
from .planning import PartitionLog, SegmentSlice, group_replicas, report_data_loss
from .reader import ReadSettings, read_slice
from .segments import TailState
from .writer import KafkaLogWriter

__all__ = ["KafkaLogDataSource", "KafkaLogReader", "KafkaLogStreamReader", "source_schema"]

log = logging.getLogger(__name__)

_HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
#: Every column and its Spark type, in schema order.
SPARK_TYPES: dict[str, DataType] = {
    "key": BinaryType(),
    "value": BinaryType(),
    "topic": StringType(),
    "partition": IntegerType(),
    "offset": LongType(),
    "timestamp": TimestampType(),
    "timestampType": IntegerType(),
    "headers": _HEADERS,
    "producerId": LongType(),
    "producerEpoch": ShortType(),
    "sequence": IntegerType(),
    "isTransactional": BooleanType(),
    "leaderEpoch": IntegerType(),
    "segment": StringType(),
    "position": LongType(),
    "decoded": StringType(),
}
_KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")


def source_schema(include_headers: bool = False, include_metadata: bool = False, decode: bool = False) -> StructType:
    """Spark's Kafka source schema, with ``headers``, the metadata columns and ``decoded`` (the
    internal topics' keys and values as JSON) when asked for."""
    names = list(_KAFKA_COLUMNS)
    if include_headers:
        names.append("headers")
    if include_metadata:
        names.extend(METADATA_COLUMNS)
    if decode:
        names.append("decoded")
    return StructType([StructField(n, SPARK_TYPES[n]) for n in names])


def _columns(schema: StructType) -> list[str]:
    """The column names of a (possibly user-given) schema, checked against what the source produces."""
    names = []
    for f in schema.fields:
        expected = SPARK_TYPES.get(f.name)
        if expected is None:
            raise SourceOptionError(f"unknown column {f.name!r}: the source produces {', '.join(SPARK_TYPES)}")
        if f.dataType != expected:
            raise SourceOptionError(f"column {f.name} must be {expected.simpleString()}, not {f.dataType.simpleString()}")
        names.append(f.name)
    return names


class _Planner:
    """Planning shared by the batch and the streaming reader (driver side)."""

    def __init__(self, options: dict[str, str], schema: StructType, *, streaming: bool) -> None:
        self.opts: SourceOptions = parse_options(options, streaming=streaming)
        self.fsref, self.paths = filesystem_for(self.opts.paths, self.opts.storage_options)
        self.columns = _columns(schema)
        self.row_filter = RowFilter()

    def settings(self) -> ReadSettings:
        o = self.opts
        return ReadSettings(
            arrow_schema(self.columns), self.row_filter, o.read_committed, o.verify_crc, o.ignore_corrupt_files, o.fail_on_data_loss,
        )

    def partition_logs(self, tails: dict[str, TailState] | None = None, *, live: bool = False) -> dict[tuple[str, int], PartitionLog]:
        """The wanted partitions' logs; ``live`` (streaming) lists afresh and accepts an empty data dir."""
        fs = self.fsref.get()
        replicas = discover(fs, self.paths, refresh=live, allow_empty=live)
        groups = group_replicas(replicas, self.opts, self.row_filter)
        self._check_named_partitions(set(groups), [r.key for r in replicas])
        return {tp: PartitionLog(fs, reps, self.opts, tails) for tp, reps in sorted(groups.items())}

    def _check_named_partitions(self, wanted: set[tuple[str, int]], found: list[tuple[str, int]]) -> None:
        """Partitions named by assign or per-partition offsets must exist (else: data loss)."""
        o = self.opts
        named = set(o.assign or ())
        for spec in (o.starting, o.ending):
            named.update((t, p) for t, p, _ in spec.per_partition)
        present = set(found)
        for tp in sorted(named - present):
            if o.wants_partition(*tp) and self.row_filter.admits_partition(*tp):
                report_data_loss(f"partition {tp[0]}-{tp[1]} is named in the options but not found under the paths", None, o.fail_on_data_loss)


class KafkaLogReader(DataSourceReader):
    """Batch reader: one input partition per segment (or per ``maxBytesPerPartition`` of one)."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self._planner = _Planner(options, schema, streaming=False)

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:  # noqa: N802 - Spark's name
        """Keep the filters on topic, partition, offset and timestamp (see :mod:`.filters`); return the rest."""
        self._planner.row_filter, rejected = push_filters(filters)
        return rejected

    def partitions(self) -> Sequence[InputPartition]:
        """Resolve offsets per partition and cut the segments that hold them into slices."""
        p = self._planner
        rf = p.row_filter
        off_lo, off_hi = rf.offset.range()
        ts_lo = rf.timestamp_ms.range()[0]
        out: list[InputPartition] = []
        for plog in p.partition_logs().values():
            start = plog.resolve(p.opts.starting, is_start=True)
            end = plog.resolve(p.opts.ending, is_start=False)
            if p.opts.read_committed:
                lso = plog.latest()
                end = lso if end is None else min(end, lso)
            if off_lo is not None:
                start = max(start, off_lo)  # type: ignore[type-var]
            if off_hi is not None:
                end = off_hi + 1 if end is None else min(end, off_hi + 1)
            out.extend(plog.slices(p.fsref, start, end, ts_lo=ts_lo))  # type: ignore[arg-type]
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Stream one slice as Arrow batches (Spark sends a placeholder partition when there is none)."""
        return _read(partition, self._planner)


def _read(partition: InputPartition, planner: _Planner) -> Iterator[pa.RecordBatch]:
    if not isinstance(partition, SegmentSlice):
        return iter(())
    return read_slice(partition, planner.settings())


Offsets = dict[str, dict[str, int]]


def _to_json(offsets: dict[tuple[str, int], int]) -> Offsets:
    out: Offsets = {}
    for (t, p), o in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = o
    return out


def _from_json(offsets: Offsets | None) -> dict[tuple[str, int], int]:
    return {(t, int(p)): int(o) for t, parts in (offsets or {}).items() for p, o in parts.items()}


class KafkaLogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming reader over a live data dir: offsets are ``{"topic": {"partition": next offset}}``.

    Each poll lists the directories again (new segments and new partitions appear; a new
    partition starts at its earliest offset) and scans only the batch headers written since the
    previous poll. The end offset of a micro-batch is the log end offset (read_committed: the
    last stable offset), counted over whole batches only, so every record is read exactly once.
    """

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self._planner = _Planner(options, schema, streaming=True)
        self._tails: dict[str, TailState] = {}
        self._available_now: dict[tuple[str, int], int] | None = None

    def _logs(self) -> dict[tuple[str, int], PartitionLog]:
        return self._planner.partition_logs(self._tails, live=True)

    def initialOffset(self) -> Offsets:  # noqa: N802 - Spark's name
        """Where a new query starts (``startingOffsets``, default latest)."""
        start = {}
        for tp, plog in self._logs().items():
            start[tp] = plog.resolve(self._planner.opts.starting, is_start=True)
        return _to_json(start)  # type: ignore[arg-type]

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 - Spark's name
        """``maxOffsetsPerTrigger`` as a row limit, else everything available."""
        n = self._planner.opts.max_offsets_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 - Spark's name
        """Fix the end of an availableNow run at what is on disk now."""
        self._available_now = {tp: plog.latest() for tp, plog in self._logs().items()}

    def latestOffset(self, start: Offsets | None = None, limit: ReadLimit | None = None) -> Offsets:  # noqa: N802 - Spark's name
        """The end offset of the next micro-batch: each partition's latest offset, within ``limit``."""
        begin = _from_json(start)
        logs = self._logs()
        end = {}
        for tp, plog in logs.items():
            end[tp] = plog.latest()
            if self._available_now is not None:
                end[tp] = min(end[tp], self._available_now.get(tp, end[tp]))
        for tp in begin.keys() - end.keys():
            end[tp] = begin[tp]  # a partition that vanished keeps its offset; partitions() reports the loss
        if isinstance(limit, ReadMaxRows):
            end = _rate_limit(begin, end, {tp: plog.earliest for tp, plog in logs.items()}, limit.max_rows)
        return _to_json(end)

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        """Slices covering each partition's ``[start, end)``."""
        p = self._planner
        begin, stop = _from_json(start), _from_json(end)
        logs = self._logs()
        out: list[InputPartition] = []
        for tp, hi in sorted(stop.items()):
            plog = logs.get(tp)
            lo = begin.get(tp)
            if plog is None:
                if lo is not None and hi > lo:
                    report_data_loss(f"partition {tp[0]}-{tp[1]} disappeared with offsets {lo} to {hi - 1} unread", None, p.opts.fail_on_data_loss)
                continue
            if lo is None:
                lo = plog.earliest  # a partition that appeared since the last batch: from its start
            elif lo < plog.earliest:
                report_data_loss(f"offsets {lo} to {plog.earliest - 1} of {plog.name} were deleted before they were read", plog.dir, p.opts.fail_on_data_loss)
                lo = plog.earliest
            if hi < lo:
                report_data_loss(f"{plog.name} now ends at {hi}, before the offset {lo} already reached", plog.dir, p.opts.fail_on_data_loss)
                continue
            out.extend(plog.slices(p.fsref, lo, hi))
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Stream one slice as Arrow batches (Spark sends a placeholder partition when there is none)."""
        return _read(partition, self._planner)

    def commit(self, end: Offsets) -> None:
        """Nothing to release: files are opened per read."""


def _rate_limit(begin: dict, end: dict, earliest: dict, max_rows: int) -> dict:
    """Spread ``max_rows`` offsets over the partitions in proportion to their backlog (as Spark's Kafka source)."""
    lag = {tp: max(0, e - begin.get(tp, earliest.get(tp, 0))) for tp, e in end.items()}
    total = sum(lag.values())
    if total <= max_rows:
        return end
    out = {}
    for tp, e in end.items():
        prorate = max_rows * lag[tp] / total
        step = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(e, begin.get(tp, earliest.get(tp, 0)) + step)
    return out


class KafkaLogDataSource(DataSource):
    """``format("kafkalog")``: read Kafka partition directories (see :func:`kafkalog_spark.register`)."""

    @classmethod
    def name(cls) -> str:
        """The format name: ``spark.read.format("kafkalog")``."""
        return "kafkalog"

    def schema(self) -> StructType:
        """Spark's Kafka schema, plus ``headers``/metadata columns when their options are true."""
        opts = {k.lower(): str(v).strip().lower() for k, v in self.options.items()}
        return source_schema(
            opts.get("includeheaders") == "true", opts.get("includemetadata") == "true", opts.get("decodeinternaltopics") == "true"
        )

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader for ``schema`` (the default schema or one the user gave)."""
        return KafkaLogReader(dict(self.options), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 - Spark's name
        """The streaming reader for ``schema``."""
        return KafkaLogStreamReader(dict(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """The appending writer (``mode("append")`` only: logs are never overwritten)."""
        if overwrite:
            raise SourceOptionError("kafkalog logs are append-only: use mode('append')")
        return KafkaLogWriter(dict(self.options), schema)
