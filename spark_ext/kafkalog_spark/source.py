"""The ``kafkalog`` Python data source: Kafka log files as Spark's Kafka source presents topics.

``spark.read.format("kafkalog").load(path)`` and ``spark.readStream.format("kafkalog")`` return
Spark's Kafka schema (``key, value, topic, partition, offset, timestamp, timestampType`` and with
``includeHeaders=true`` ``headers``), plus opt-in metadata columns (``includeMetadata=true``).
Planning runs on the driver (:mod:`.planning`), reading on executors (:mod:`.reader`).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

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

from kafkalog.format.tiered_aiven import Keyring, read_private_keys
from kafkalog.log.gaps import LogDirOffsets
from kafkalog.log.source import gc_paused
from kafkalog.tools.jobs import default_jobs
from kafkalog_spark.errors import SourceOptionError
from kafkalog_spark.filters import RowFilter, push_filters
from kafkalog_spark.layout import discover, filesystem_for
from kafkalog_spark.options import SourceOptions, _bool, parse_options
from kafkalog_spark.planning import (
    PartitionLog,
    SlicePack,
    SliceRow,
    batch_request,
    group_replicas,
    pack,
    report_data_loss,
    split_bytes,
)
from kafkalog_spark.processes import plan_in_processes
from kafkalog_spark.schema import METADATA_COLUMNS, arrow_schema
from kafkalog_spark.segments import TailState

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafkalog.dataset.registry import Registry
    from kafkalog.dataset.values import Decoding
    from kafkalog_spark.reader import ReadSettings

__all__ = ["KafkaLogDataSource", "KafkaLogReader", "KafkaLogStreamReader", "SessionDefaults", "session_defaults", "source_schema"]

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


#: The decoded key and value columns (options keyFormat, valueFormat) and the column each decodes.
DECODED_COLUMNS = {"keyDecoded": "key", "valueDecoded": "value"}


def _formats(options: dict[str, str]) -> dict[str, str]:
    """``{"key"|"value": format}`` from the options keyFormat and valueFormat (``bytes``: none)."""
    opts = {str(k).lower(): str(v).strip() for k, v in options.items()}
    return {r: opts[f"{r}format"] for r in ("key", "value") if opts.get(f"{r}format", "bytes") != "bytes"}


#: what :func:`_decoding` gives: the formats, the schema sources, onUndecodable, validate
DecodingOptions = tuple[dict[str, str], "Registry | None", str, bool]


def _decoding(options: dict[str, str]) -> DecodingOptions:
    """The formats, the schema sources (the paths' _schemas topic or schemasTopic, and the URL
    schemaRegistry), read on the driver, onUndecodable (error or null: Spark's rows stay aligned) and
    validate (JSON Schema values checked against their schema, as ``kafkalog cat --validate``)."""
    from kafkalog.dataset.registry import SCHEMAS_TOPIC, Registry
    from kafkalog.dataset.values import FORMATS, WIRE_FORMATS

    formats = _formats(options)
    opts = {str(k).lower(): str(v).strip() for k, v in options.items()}
    for role, fmt in formats.items():
        if fmt not in FORMATS:
            raise SourceOptionError(f"option {role}Format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    on_undecodable = opts.get("onundecodable", "error")
    if on_undecodable not in ("error", "null"):
        raise SourceOptionError(f"option onUndecodable must be error or null, got {on_undecodable!r}")
    registry = None
    if WIRE_FORMATS.intersection(formats.values()):
        registry = Registry.open(_schemas_records(options, opts.get("schemastopic", SCHEMAS_TOPIC)), url=opts.get("schemaregistry") or None)
    return formats, registry, on_undecodable, _bool(opts, "validate", False)


def _schemas_records(options: dict[str, str], topic: str) -> list[tuple[bytes | None, bytes | None, int]]:
    """The ``(key, value, offset)`` records of the schemas topic under the read's paths, read as this
    source reads the data (any fsspec URL with the ``fs.*`` options, CRCs checked, data loss an error),
    on the driver; none when the paths hold no such topic."""
    keep = {k: v for k, v in options.items() if str(k).lower() in ("path", "paths") or str(k).lower().startswith("fs.")}
    reader = KafkaLogReader({**keep, "subscribe": topic}, StructType([StructField(n, SPARK_TYPES[n]) for n in ("key", "value", "offset")]))
    out: list[tuple[bytes | None, bytes | None, int]] = []
    for part in reader.partitions():
        for b in reader.read(part):
            out.extend(zip(b.column("key").to_pylist(), b.column("value").to_pylist(), b.column("offset").to_pylist(), strict=True))
    return out


def decoded_types(options: dict[str, str], decoding: DecodingOptions | None = None) -> dict[str, DataType]:
    """The Spark types of the decoded columns: the Arrow types of :class:`kafkalog.dataset.values.Decoding`
    for the subscribed topics (one type per column: subscribe names the topics); ``decoding``: :func:`_decoding`
    of ``options`` when already made."""
    from pyspark.sql.pandas.types import from_arrow_type

    from kafkalog.dataset.values import Decoding

    formats, registry, _, _ = decoding if decoding is not None else _decoding(options)
    if not formats:
        return {}
    topics = parse_options(options).subscribe
    if not topics:
        raise SourceOptionError("options keyFormat/valueFormat need subscribe=TOPIC[,TOPIC...]: the decoded columns have one type")
    base = arrow_schema(list(formats))
    try:
        typed = Decoding(formats, registry).schema(base, list(topics))
    except ValueError as e:
        raise SourceOptionError(str(e)) from None
    return {col: from_arrow_type(_spark_arrow_type(typed.field(role).type)) for col, role in DECODED_COLUMNS.items() if role in formats}


def _columns(schema: StructType) -> list[str]:
    """The column names of a (possibly user-given) schema, checked against what the source produces."""
    names = []
    for f in schema.fields:
        if f.name in DECODED_COLUMNS:
            names.append(f.name)
            continue
        expected = SPARK_TYPES.get(f.name)
        if expected is None:
            raise SourceOptionError(f"unknown column {f.name!r}: the source produces {', '.join(SPARK_TYPES)}")
        if f.dataType != expected:
            raise SourceOptionError(f"column {f.name} must be {expected.simpleString()}, not {f.dataType.simpleString()}")
        names.append(f.name)
    return names


@dataclass(frozen=True)
class SessionDefaults:
    """The session settings input partitions are planned by, as Spark plans its file sources:
    ``spark.sql.files.maxPartitionBytes``, ``spark.sql.files.openCostInBytes`` and
    ``spark.sql.files.minPartitionNum`` (else the default parallelism). Planning runs in a Python
    worker that cannot see the session, so :func:`kafkalog_spark.register` reads them into the
    registered source; without that, Spark's defaults and the CPUs this process may run on
    (``os.sched_getaffinity``, as the CLI's ``-j`` default: a container's or ``taskset``'s limit)."""

    max_partition_bytes: int = 128 * 1024 * 1024
    open_cost_in_bytes: int = 4 * 1024 * 1024
    min_partitions: int = default_jobs()


_BYTE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40}


def _bytes(text: str) -> int:
    """A Spark byte size (``128MB``, ``4m``, ``134217728``) in bytes, as JavaUtils.byteStringAsBytes reads it."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    if m is None or m.group(2).lower() not in _BYTE_UNITS:
        raise SourceOptionError(f"not a byte size: {text!r}")
    return int(m.group(1)) * _BYTE_UNITS[m.group(2).lower()]


def session_defaults(spark: SparkSession) -> SessionDefaults:
    """The planning settings of ``spark``'s session (see :class:`SessionDefaults`)."""
    base = SessionDefaults()

    def conf(key: str) -> str | None:
        try:
            return spark.conf.get(key)
        except Exception:  # noqa: BLE001 - an unset conf without a default raises (its type differs by Spark version)
            return None

    max_bytes = conf("spark.sql.files.maxPartitionBytes")
    open_cost = conf("spark.sql.files.openCostInBytes")
    min_num = conf("spark.sql.files.minPartitionNum")
    if min_num:
        parallelism = int(min_num)
    else:
        try:
            parallelism = spark.sparkContext.defaultParallelism
        except Exception:  # noqa: BLE001 - Spark Connect sessions have no SparkContext
            parallelism = int(conf("spark.default.parallelism") or base.min_partitions)
    return SessionDefaults(
        _bytes(max_bytes) if max_bytes else base.max_partition_bytes, _bytes(open_cost) if open_cost else base.open_cost_in_bytes, parallelism
    )


def _keyring(pairs: tuple[tuple[str, str], ...]) -> Keyring | None:
    """The ``privateKeys`` files read on the driver (their text then travels with the read settings
    to the workers, which need not see the files); None without any."""
    if not pairs:
        return None
    try:
        return read_private_keys(dict(pairs))
    except OSError as e:
        raise SourceOptionError(f"option privateKeys: cannot read {e.filename}: {e.strerror or e}") from None


class _Planner:
    """Planning shared by the batch and the streaming reader (driver side)."""

    def __init__(self, options: dict[str, str], schema: StructType, *, streaming: bool, defaults: SessionDefaults | None = None,
                 decoding: DecodingOptions | None = None) -> None:
        self.opts: SourceOptions = parse_options(options, streaming=streaming)
        self.fsref, self.paths = filesystem_for(self.opts.paths, self.opts.storage_options)
        self.columns = _columns(schema)
        self.row_filter = RowFilter()
        d = defaults or SessionDefaults()
        o = self.opts
        self.max_bytes = o.max_bytes_per_partition if o.max_bytes_per_partition is not None else d.max_partition_bytes
        self.open_cost = o.open_cost_in_bytes if o.open_cost_in_bytes is not None else d.open_cost_in_bytes
        self.min_partitions = o.min_partitions if o.min_partitions is not None else d.min_partitions
        self.keys = _keyring(o.private_keys)
        if not any(c in DECODED_COLUMNS for c in self.columns):
            decoding = ({}, None, "error", False)
        self.formats, self.registry, self.on_undecodable, self.validate = decoding if decoding is not None else _decoding(options)

    def plan(self, requests: list[tuple[PartitionLog, int, int | None, int | None]]) -> list[InputPartition]:
        """Input partitions for (log, start, end, lowest timestamp) requests: the split size from
        the segments' bytes (see :func:`.planning.split_bytes`), segments cut to it, slices packed."""
        total = files = 0
        for plog, start, end, _ts in requests:
            b, n = plog.planned_bytes(start, end)
            total, files = total + b, files + n
        split = self.split(total, files)
        rows: list[SliceRow] = []
        for plog, start, end, ts_lo in requests:
            rows.extend(plog.slices(start, end, split=split, ts_lo=ts_lo))
        return list(pack(self.fsref, rows, split, self.open_cost))

    def split(self, total: int, files: int) -> int:
        """The split size for ``total`` bytes in ``files`` segments (:func:`.planning.split_bytes`)."""
        return split_bytes(total, files, self.max_bytes, self.open_cost, self.min_partitions)

    @property
    def least_split(self) -> int:
        """The smallest split size :meth:`split` can give, whatever the bytes: ``openCostInBytes``,
        or ``maxBytesPerPartition`` when that is smaller."""
        return min(self.max_bytes, self.open_cost)

    def settings(self) -> ReadSettings:
        from kafkalog_spark.reader import (
            ReadSettings,  # the decoder: imported where reading runs, not where planning does
        )

        o = self.opts
        read = [c for c in self.columns if c not in DECODED_COLUMNS]
        if self.formats:  # what the decoded columns are made from, and the offsets that name a record that does not decode
            read = list(dict.fromkeys([*read, *self.formats, "offset"]))
        return ReadSettings(
            arrow_schema(read), self.row_filter, o.read_committed, o.verify_crc, o.ignore_corrupt_files, o.fail_on_data_loss,
            self.keys, skip_corrupt=o.skip_corrupt, kafka_version=o.kafka_version,
        )

    def partition_logs(self, tails: dict[str, TailState] | None = None, *, live: bool = False) -> dict[tuple[str, int], PartitionLog]:
        """The wanted partitions' logs; ``live`` (streaming) lists afresh and accepts an empty data dir."""
        fs = self.fsref.get()
        replicas = discover(fs, self.paths, refresh=live, allow_empty=live, wants=self._wants, keys=self.keys)
        groups = group_replicas(replicas, self.opts, self.row_filter)
        self._check_named_partitions(set(groups), [r.key for r in replicas])
        log_dirs: dict[str, LogDirOffsets] = {}  # each log dir's checkpoints, read once for all its partitions
        return {tp: PartitionLog(fs, reps, self.opts, tails, log_dirs) for tp, reps in sorted(groups.items())}

    def _wants(self, topic: str, partition: int) -> bool:
        """Whether the subscription and the pushed filters take ``topic``-``partition``."""
        return self.opts.wants_partition(topic, partition) and self.row_filter.admits_partition(topic, partition)

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
    """Batch reader: input partitions of segments packed and cut as Spark's file sources plan files."""

    def __init__(self, options: dict[str, str], schema: StructType, defaults: SessionDefaults | None = None,
                 decoding: DecodingOptions | None = None) -> None:
        self._planner = _Planner(options, schema, streaming=False, defaults=defaults, decoding=decoding)

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:  # noqa: N802 - Spark's name
        """Keep the filters on topic, partition, offset and timestamp (see :mod:`.filters`); return the rest."""
        self._planner.row_filter, rejected = push_filters(filters)
        return rejected

    def partitions(self) -> Sequence[InputPartition]:
        """Resolve offsets per partition, cut the segments that hold them into slices, pack those."""
        with gc_paused():  # many partitions' objects, long-lived: no full collection between them
            return self._partitions()

    def _partitions(self) -> Sequence[InputPartition]:
        p = self._planner
        packs = plan_in_processes(p)  # many partition dirs on local disk: planned by worker processes
        if packs is not None:
            return packs
        return p.plan([batch_request(plog, p.opts, p.row_filter) for plog in p.partition_logs().values()])

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Stream one slice as Arrow batches (Spark sends a placeholder partition when there is none)."""
        return _read(partition, self._planner)


def _read(partition: InputPartition, planner: _Planner) -> Iterator[pa.RecordBatch]:
    if not isinstance(partition, SlicePack):
        return iter(())
    from kafkalog_spark.reader import coalesce, read_slice

    settings = planner.settings()
    if not planner.formats:
        return coalesce(b for sl in partition.slices for b in read_slice(sl, settings))
    from kafkalog.dataset.values import Decoding

    decoding = Decoding(planner.formats, planner.registry, on_undecodable=planner.on_undecodable, warn=log.warning, validate=planner.validate)
    return coalesce(b for sl in partition.slices for b in _with_decoded(read_slice(sl, settings), sl.topic, sl.partition, decoding, planner.columns))


def _spark_arrow_type(t: pa.DataType) -> pa.DataType:
    """``t`` as Spark takes it from a Python source, at any depth: timestamps in microseconds (finer
    ones truncated), and, as Spark has no unsigned integers, uint32 as int64 and uint64 as decimal(20, 0)."""
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz=t.tz)
    if pa.types.is_uint32(t):
        return pa.int64()
    if pa.types.is_uint64(t):
        return pa.decimal128(20, 0)
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _spark_arrow_type(f.type), nullable=f.nullable) for f in t])
    if pa.types.is_map(t):
        return pa.map_(_spark_arrow_type(t.key_type), _spark_arrow_type(t.item_type))
    if pa.types.is_list(t):
        return pa.list_(_spark_arrow_type(t.value_type))
    return t


def _with_decoded(batches: Iterator[pa.RecordBatch], topic: str, partition: int, decoding: Decoding, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """Batches with the keyDecoded/valueDecoded columns beside key and value, in ``columns``' order."""
    import pyarrow.compute as pc

    roles = [r for r in decoding.formats if f"{r}Decoded" in columns]
    base = arrow_schema([*roles, "offset"])
    typed = decoding.schema(base, [topic])
    # the Arrow types Spark takes for the decoded columns' Spark types (timestamps in microseconds)
    spark_types = {r: _spark_arrow_type(typed.field(r).type) for r in roles}
    for b in batches:
        decoded = next(decoding.batches([b.select(base.names)], topic, partition, typed))
        arrays = [pc.cast(decoded.column(DECODED_COLUMNS[c]), options=pc.CastOptions(spark_types[DECODED_COLUMNS[c]], allow_time_truncate=True))
                  if c in DECODED_COLUMNS else b.column(c) for c in columns]
        yield pa.RecordBatch.from_arrays(arrays, names=columns)


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

    def __init__(self, options: dict[str, str], schema: StructType, defaults: SessionDefaults | None = None) -> None:
        self._planner = _Planner(options, schema, streaming=True, defaults=defaults)
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
        """Slices covering each partition's ``[start, end)``, packed."""
        with gc_paused():  # many partitions' objects, long-lived: no full collection between them
            return self._partitions(start, end)

    def _partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        p = self._planner
        begin, stop = _from_json(start), _from_json(end)
        logs = self._logs()
        requests: list[tuple[PartitionLog, int, int | None, int | None]] = []
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
            requests.append((plog, lo, hi, None))
        return p.plan(requests)

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
    """``format("kafkalog")``: read Kafka partition directories (see :func:`kafkalog_spark.register`).

    ``session_defaults``: the planning settings read from the session at registration."""

    session_defaults: SessionDefaults | None = None

    @classmethod
    def name(cls) -> str:
        """The format name: ``spark.read.format("kafkalog")``."""
        return "kafkalog"

    def schema(self) -> StructType:
        """Spark's Kafka schema, plus ``headers``/metadata columns when their options are true, and
        ``keyDecoded``/``valueDecoded`` with keyFormat/valueFormat (docs/formats.md)."""
        opts = {k.lower(): str(v).strip().lower() for k, v in self.options.items()}
        schema = source_schema(
            opts.get("includeheaders") == "true", opts.get("includemetadata") == "true", opts.get("decodeinternaltopics") == "true"
        )
        if _formats(dict(self.options)):
            # the schema sources, kept for reader(): Spark hands this instance, pickled, to the process that plans the read
            self._decoding = _decoding(dict(self.options))
            for name, typ in decoded_types(dict(self.options), self._decoding).items():
                schema = schema.add(StructField(name, typ))
        return schema

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader for ``schema`` (the default schema or one the user gave)."""
        return KafkaLogReader(dict(self.options), schema, self.session_defaults, getattr(self, "_decoding", None))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 - Spark's name
        """The streaming reader for ``schema``."""
        return KafkaLogStreamReader(dict(self.options), schema, self.session_defaults)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """The appending writer (``mode("append")`` only: logs are never overwritten)."""
        from kafkalog_spark.writer import (
            KafkaLogWriter,  # imported where writing is asked for (it loads the compiled partitioner)
        )

        if overwrite:
            raise SourceOptionError("kafkalog logs are append-only: use mode('append')")
        return KafkaLogWriter(dict(self.options), schema)
