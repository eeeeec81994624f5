"""Kafka records as Arrow record batches, built from :mod:`kafkalog.fast.columnar` without a Python
object per record. The columns and types are those of Spark's Kafka source."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from kafkalog.fast.columnar import (
    CHUNK_BYTES,
    BatchColumns,
    ChunkBatches,
    ChunkColumns,
    gather,
    iter_chunks,
    iter_columns,
)
from kafkalog.format.primitives import java_utf8
from kafkalog.format.records.control import ControlType, control_type_of
from kafkalog.format.records.stream import Batch, LogReader, OnCorrupt, checked
from kafkalog.format.records.v2 import ATTR_CONTROL, ATTR_TRANSACTIONAL, RecordBatch
from kafkalog.format.txnindex import AbortedTxn


class PartitionLog(Protocol):
    """What :func:`to_arrow` reads of a :class:`kafkalog.log.unified.Log` (named here so that this module
    does not import the log layer)."""

    log_start_offset: int

    @property
    def last_stable_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def segments(self) -> list[Any]: ...

    @property
    def topic_partition(self) -> tuple[str, int] | None: ...

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]: ...

__all__ = [
    "BatchFields", "CommittedState", "KAFKA_SCHEMA", "KAFKA_VIEW_SCHEMA", "HEADERS_TYPE", "METADATA_SCHEMA", "PartitionLog", "columns_to_arrow", "constant_string",
    "numeric", "read_partition", "to_arrow",
]

HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
KAFKA_SCHEMA = pa.schema(
    [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
        pa.field("headers", HEADERS_TYPE),
    ]
)

#: :data:`KAFKA_SCHEMA` with key and value as Arrow binary views (``to_arrow(..., views=True)``).
KAFKA_VIEW_SCHEMA = KAFKA_SCHEMA.set(0, pa.field("key", pa.binary_view())).set(1, pa.field("value", pa.binary_view()))

Selection = tuple[BatchColumns | ChunkColumns, np.ndarray | None]


def _validity(lens: np.ndarray) -> pa.Buffer | None:
    valid = lens >= 0
    if valid.all():
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def numeric(a: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
    """A null-free Arrow array of ``arrow_type`` (an integer type or bool) holding ``a``, over its
    bytes when its dtype is already the type's. Used instead of ``pa.array``, which checks each
    numpy argument against pandas types and so imports pandas (0.4 s) in the first command that
    builds a batch."""
    if arrow_type == pa.bool_():
        data = np.packbits(np.asarray(a, np.bool_), bitorder="little")
    else:
        data = np.ascontiguousarray(a, arrow_type.to_pandas_dtype())
    return pa.Array.from_buffers(arrow_type, len(a), [None, pa.py_buffer(data)])


def constant_string(value: str, n: int) -> pa.Array:
    """A string array of ``n`` times ``value``, built from its buffers (a dictionary cast costs
    a hundred times more)."""
    raw = value.encode()
    if len(raw) * n >= 2**31:
        return pa.array([value] * n, pa.large_string())
    offsets = np.arange(0, (n + 1) * len(raw), len(raw), dtype=np.int32) if raw else np.zeros(n + 1, np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)])


def _binary(parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], arrow_type: pa.DataType) -> pa.Array:
    """One binary/string array from (buffer, starts, lens) parts, copying each span once."""
    n = sum(len(s) for _, s, _ in parts)
    lens = np.concatenate([ln for _, _, ln in parts]) if parts else np.empty(0, np.int64)
    total = int(lens[lens > 0].sum())
    offsets = np.zeros(n + 1, dtype=np.int32 if total < 2**31 else np.int64)
    data = np.empty(total, dtype=np.uint8)
    end = 0
    done = 0
    for buf, starts, ln in parts:
        view = offsets[done : done + len(starts) + 1]
        end = gather(buf, starts, ln, view, data, end)
        done += len(starts)
    if offsets.dtype == np.int64:
        arrow_type = pa.large_binary() if arrow_type == pa.binary() else pa.large_string()
    return pa.Array.from_buffers(arrow_type, n, [_validity(lens), pa.py_buffer(offsets), pa.py_buffer(data)])


def _java_strings(raw: pa.Array) -> pa.Array:
    """Binary header keys as strings decoded as Java decodes them (R-REC-09), without copying
    valid ones: all-ASCII bytes (the usual case) are taken as they are, other valid UTF-8 is
    checked by Arrow's cast, and an array holding ill-formed keys is decoded again key by key."""
    string_type = pa.large_string() if raw.type == pa.large_binary() else pa.string()
    validity, offsets, data = raw.buffers()
    if data is None or data.size == 0 or int(np.frombuffer(data, np.uint8).max()) < 0x80:
        return pa.Array.from_buffers(string_type, len(raw), [validity, offsets, data], offset=raw.offset)
    try:
        return raw.cast(string_type)
    except pa.ArrowInvalid:
        return pa.array([None if b is None else java_utf8(b) for b in raw.to_pylist()], string_type)


def _pool_copy(a: np.ndarray, dtype: type, scale: int = 1) -> np.ndarray:
    """``a * scale`` as ``dtype`` in memory from Arrow's pool."""
    out = np.frombuffer(pa.allocate_buffer(len(a) * np.dtype(dtype).itemsize), dtype)
    if scale == 1:
        np.copyto(out, a, casting="unsafe")
    else:
        np.multiply(a, scale, out=out)
    return out


def _copied(lens: np.ndarray, offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    """A binary array over the keys or values the chunk walk already copied out (no second copy)."""
    if len(data) < 2**31:
        return pa.Array.from_buffers(pa.binary(), len(lens), [_validity(lens), pa.py_buffer(_pool_copy(offsets, np.int32)), pa.py_buffer(data)])
    return pa.Array.from_buffers(pa.large_binary(), len(lens), [_validity(lens), pa.py_buffer(_pool_copy(offsets, np.int64)), pa.py_buffer(data)])


def _viewed(lens: np.ndarray, words: np.ndarray, data: np.ndarray) -> pa.Array:
    """A binary view array over the views the chunk walk wrote into the chunk's own bytes (no copy)."""
    return pa.Array.from_buffers(pa.binary_view(), len(lens), [_validity(lens), pa.py_buffer(words), pa.py_buffer(data)])


def columns_to_arrow(
    selections: Sequence[Selection],
    *,
    topic: str,
    partition: int,
    include_headers: bool = False,
    columns: Sequence[str] | None = None,
    views: bool = False,
) -> pa.RecordBatch:
    """Build one Arrow batch from the selected rows (``mask``; None = all) of several batches.
    ``views``: key and value as binary views (:data:`KAFKA_VIEW_SCHEMA`), over the chunk's own
    bytes when it has views (:func:`kafkalog.fast.columnar.iter_chunks`), else copied."""
    want = set(KAFKA_SCHEMA.names if columns is None else columns)
    if not include_headers:
        want.discard("headers")
    picked = []
    for cols, mask in selections:
        if mask is None:
            picked.append((cols, None))
        elif mask.any():
            picked.append((cols, np.flatnonzero(mask)))
    n = sum(len(c) if idx is None else len(idx) for c, idx in picked)

    def sel(a: np.ndarray, idx: np.ndarray | None) -> np.ndarray:
        return a if idx is None else a[idx]

    arrays: dict[str, pa.Array] = {}
    whole = picked[0][0] if len(picked) == 1 and picked[0][1] is None and isinstance(picked[0][0], ChunkColumns) else None
    for name, start, length, offsets, data, view in (
        ("key", "key_start", "key_len", "key_offsets", "key_data", "key_views"),
        ("value", "val_start", "val_len", "value_offsets", "value_data", "value_views"),
    ):
        if name not in want:
            continue
        if whole is not None and getattr(whole, view) is not None and views:
            arrays[name] = _viewed(getattr(whole, length), getattr(whole, view), whole.view_data)
            continue
        if whole is not None and getattr(whole, view) is None:
            arr = _copied(getattr(whole, length), getattr(whole, offsets), getattr(whole, data))
        else:
            arr = _binary([(c.buf, sel(getattr(c, start), i), sel(getattr(c, length), i)) for c, i in picked], pa.binary())
        arrays[name] = arr.cast(pa.binary_view()) if views else arr
    if "topic" in want:
        arrays["topic"] = constant_string(topic, n)
    if "partition" in want:
        arrays["partition"] = numeric(np.full(n, partition, np.int32), pa.int32())
    # a chunk's arrays are reused by the next chunk: its columns are copies (into Arrow's pool)
    if "offset" in want:
        if whole is not None:
            arrays["offset"] = numeric(_pool_copy(whole.offsets, np.int64), pa.int64())
        else:
            arrays["offset"] = numeric(np.concatenate([sel(c.offsets, i) for c, i in picked]) if picked else np.empty(0, np.int64), pa.int64())
    if "timestamp" in want:
        if whole is not None:
            us = _pool_copy(whole.timestamps, np.int64, 1000)
        else:
            us = np.concatenate([sel(c.timestamps, i) for c, i in picked]) * 1000 if picked else np.empty(0, np.int64)
        arrays["timestamp"] = numeric(us, pa.int64()).view(pa.timestamp("us", tz="UTC"))
    if "timestampType" in want:
        tt = [sel(c.timestamp_types, i) for c, i in picked]
        arrays["timestampType"] = numeric(np.concatenate(tt) if tt else np.empty(0, np.int32), pa.int32())
    if "headers" in want:
        arrays["headers"] = _headers(picked, n)
    schema = KAFKA_VIEW_SCHEMA if views else KAFKA_SCHEMA
    names = [f for f in schema.names if f in arrays]
    return pa.RecordBatch.from_arrays([arrays[f] for f in names], schema=pa.schema([schema.field(f) for f in names]))


def _headers(picked: list[Selection], n: int) -> pa.Array:
    counts_parts = []
    key_parts = []
    val_parts = []
    for c, idx in picked:
        counts = c.hdr_count if idx is None else c.hdr_count[idx]
        counts_parts.append(counts)
        if len(c.headers):
            if idx is None:
                h = c.headers
            else:
                # the header rows of the selected records: each record's run, concatenated
                first = np.cumsum(c.hdr_count) - c.hdr_count
                cnt = c.hdr_count[idx]
                h = c.headers[np.repeat(first[idx] - (np.cumsum(cnt) - cnt), cnt) + np.arange(int(cnt.sum()))]
            key_parts.append((c.buf, h[:, 0], h[:, 1]))
            val_parts.append((c.buf, h[:, 2], h[:, 3]))
    counts = np.concatenate(counts_parts) if counts_parts else np.empty(0, np.int64)
    list_offsets = np.zeros(n + 1, np.int32)
    np.cumsum(counts, out=list_offsets[1:])
    keys = _java_strings(_binary(key_parts, pa.binary()))
    vals = _binary(val_parts, pa.binary())
    struct = pa.StructArray.from_arrays([keys, vals], fields=list(HEADERS_TYPE.value_type))
    validity = counts > 0
    mask = None if validity.all() else pa.py_buffer(np.packbits(validity, bitorder="little"))
    return pa.Array.from_buffers(HEADERS_TYPE, n, [mask, pa.py_buffer(list_offsets)], children=[struct])


#: The opt-in batch metadata columns (``to_arrow(..., metadata=True)``), named as the Spark source
#: names them, with ``isControl`` added: each row carries its batch's header fields.
METADATA_SCHEMA = pa.schema(
    [
        pa.field("producerId", pa.int64()),
        pa.field("producerEpoch", pa.int16()),
        pa.field("sequence", pa.int32()),
        pa.field("isTransactional", pa.bool_()),
        pa.field("isControl", pa.bool_()),
        pa.field("leaderEpoch", pa.int32()),
        pa.field("segment", pa.string()),
        pa.field("position", pa.int64()),
    ]
)
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class BatchFields:
    """The header fields of a decoded piece's batches, one entry per batch (a chunk's, from the
    compiled framing, or a single batch's; magic 0/1: no flags and -1 for the v2-only fields).
    What the batch metadata columns and the read_committed choice are computed from, here and in
    the Spark source."""

    positions: np.ndarray
    counts: np.ndarray  # records of each batch, as decoded
    attributes: np.ndarray
    base_offsets: np.ndarray
    last_offsets: np.ndarray
    producer_ids: np.ndarray
    producer_epochs: np.ndarray
    base_sequences: np.ndarray
    leader_epochs: np.ndarray

    @classmethod
    def of(cls, piece: BatchColumns | ChunkColumns | ChunkBatches) -> BatchFields:
        """The fields of a chunk's batches (or of a records-less chunk's) or of one decoded batch."""
        b = piece.batches if isinstance(piece, ChunkColumns) else piece
        if isinstance(b, ChunkBatches):
            return cls(b.positions, b.counts, b.attributes, b.base_offsets, b.last_offsets, b.producer_ids, b.producer_epochs, b.base_sequences,
                       b.leader_epochs)
        assert isinstance(piece, BatchColumns)
        batch = piece.batch
        v2 = isinstance(batch, RecordBatch)

        def one(v: int) -> np.ndarray:
            return np.array([v], np.int64)

        return cls(
            one(batch.position), one(len(piece)), one(batch.attributes if v2 else 0), one(batch.base_offset), one(batch.last_offset),
            one(batch.producer_id if v2 else -1), one(batch.producer_epoch if v2 else -1), one(batch.base_sequence if v2 else -1),
            one(batch.partition_leader_epoch if v2 else -1),
        )

    @property
    def control(self) -> np.ndarray:
        """Whether each batch is a control batch."""
        return (self.attributes & ATTR_CONTROL) != 0

    @property
    def transactional(self) -> np.ndarray:
        """Whether each batch is transactional."""
        return (self.attributes & ATTR_TRANSACTIONAL) != 0

    def sequences(self, offsets: np.ndarray) -> np.ndarray:
        """Each record's sequence number, given every record's offset (the piece's rows in order):
        its batch's base sequence plus its offset delta, wrapped to 0 past 2**31-1 as Kafka wraps
        it (DefaultRecordBatch.incrementSequence); -1 for batches without one."""
        base = np.repeat(self.base_sequences, self.counts)
        seq = base + (offsets - np.repeat(self.base_offsets, self.counts))
        return np.where(base < 0, -1, np.where(seq > _INT32_MAX, seq - (_INT32_MAX + 1), seq))


def _transactions_of(batches: Iterable[Batch]) -> tuple[list[tuple[int, int]], int | None]:
    """The aborted transactions ((producer id, first offset) pairs) of a run of batches read as a
    partition holding only them, and its last stable offset (the first offset of the earliest
    transaction with no marker yet; None when every transaction is decided)."""
    open_txns: dict[int, int] = {}
    aborted: list[tuple[int, int]] = []
    for batch in batches:
        if not isinstance(batch, RecordBatch) or batch.producer_id < 0:
            continue
        if batch.is_control:
            first = open_txns.pop(batch.producer_id, None)
            records = batch.records() if first is not None else []
            if records and control_type_of(records[0].key)[0] is ControlType.ABORT:
                aborted.append((batch.producer_id, first))  # type: ignore[arg-type]
        elif batch.is_transactional:
            open_txns.setdefault(batch.producer_id, batch.base_offset)
    return aborted, min(open_txns.values(), default=None)


@dataclass(frozen=True)
class CommittedState:
    """Where a read_committed consumer's filter (R-ISO-04) stands between two batches of a
    partition: the aborted transactions whose first offset is at most ``reached`` have been taken
    off the list, and ``producers`` are those whose transactional batches it skips until their
    ABORT marker. What a read of a range of the partition's segments starts from and ends in, so
    that ranges read apart give the rows of one read (``export -j``)."""

    reached: int = -(1 << 63)  # nothing reached yet: the start of a read
    producers: frozenset[int] = frozenset()

    @classmethod
    def at(cls, aborted: Iterable[AbortedTxn], offset: int) -> CommittedState:
        """The state on reaching ``offset`` (no batch at or past it read) as the partition's
        ``.txnindex`` gives it: the producers of the aborted transactions begun below it whose ABORT
        marker is at or past it. A consumer fetching from ``offset`` holds it after its first
        batch (R-ISO-03 lists it the transactions whose marker is at or past ``offset``, R-ISO-04)."""
        return cls(offset - 1, frozenset(t.producer_id for t in aborted if t.first_offset < offset <= t.last_offset))

    def until(self, aborted: Iterable[AbortedTxn], offset: int) -> CommittedState:
        """This state carried to ``offset`` over batches that do not consult it (R-ISO-04: the next
        batch that does takes the transactions begun below ``offset`` off the list before deciding),
        comparable with :meth:`at`; itself when a batch at or past ``offset`` has been read."""
        if self.reached >= offset - 1:
            return self
        return CommittedState(offset - 1, self.producers | {t.producer_id for t in aborted if self.reached < t.first_offset < offset})


class _Committed:
    """A read_committed consumer's decision batch by batch (CompletedFetch.java @1eb7644, SPEC
    R-ISO-04; the same rule as :class:`kafkalog.log.isolation.ReadCommittedFilter`, over header fields):
    a producer's transactional batches are skipped from the first offset of one of its aborted
    transactions until its ABORT marker. ``state``: where a read of the offsets before left it."""

    def __init__(self, aborted: Iterable[tuple[int, int] | AbortedTxn], state: CommittedState | None = None) -> None:
        state = state or CommittedState()
        pending = [(a.first_offset, a.producer_id) if isinstance(a, AbortedTxn) else (a[1], a[0]) for a in aborted]
        pending = [t for t in pending if t[0] > state.reached]
        heapq.heapify(pending)
        self._pending = pending
        self._aborted: set[int] = set(state.producers)
        self._reached = state.reached

    @property
    def state(self) -> CommittedState:
        """Where the filter stands (:class:`CommittedState`)."""
        return CommittedState(self._reached, frozenset(self._aborted))

    def skips(self, producer_id: int, last_offset: int, transactional: bool, abort_marker: bool) -> bool:
        self._reached = max(self._reached, last_offset)
        while self._pending and self._pending[0][0] <= last_offset:
            self._aborted.add(heapq.heappop(self._pending)[1])
        if abort_marker:
            self._aborted.discard(producer_id)
            return False
        return transactional and producer_id in self._aborted


class _Selection:
    """Which rows a consumer receives: control records dropped unless asked for, and under
    read_committed the records of aborted transactions and those from the last stable offset on."""

    def __init__(
        self, *, include_control: bool, read_committed: bool, aborted: Iterable[tuple[int, int] | AbortedTxn] = (), lso: int | None = None,
        start: int | None = None, end: int | None = None, committed: CommittedState | None = None,
    ) -> None:
        self.include_control = include_control
        self.filter = _Committed(aborted, committed) if read_committed else None
        self.lso = lso if read_committed else None
        self.start = start
        self.end = end

    def mask(self, cols: BatchColumns | ChunkColumns, h: BatchFields) -> np.ndarray | None:
        """The rows kept (None: all of them)."""
        keep = np.ones(len(h.counts), bool)
        control = h.control
        if not self.include_control:
            keep &= ~control
        if self.filter is not None:
            txn = h.transactional
            firsts = np.cumsum(h.counts) - h.counts
            for i in np.flatnonzero((txn | control) & (h.producer_ids >= 0)).tolist():
                abort = bool(control[i]) and h.counts[i] > 0 and _is_abort_key(cols, int(firsts[i]))
                if self.filter.skips(int(h.producer_ids[i]), int(h.last_offsets[i]), bool(txn[i]), abort):
                    keep[i] = False
        rows = np.repeat(keep, h.counts)
        if self.lso is not None:
            rows &= cols.offsets < self.lso
        if self.start is not None:
            rows &= cols.offsets >= self.start
        if self.end is not None:
            rows &= cols.offsets < self.end
        return None if rows.all() else rows


def _is_abort_key(cols: BatchColumns | ChunkColumns, row: int) -> bool:
    """Whether record ``row`` (the first of a control batch) has an ABORT key (type 0)."""
    start, length = int(cols.key_start[row]), int(cols.key_len[row])
    if length < 4:
        return False
    key = bytes(cols.buf[start : start + length])
    return control_type_of(key)[0] is ControlType.ABORT


def _metadata_arrays(cols: BatchColumns | ChunkColumns, h: BatchFields, idx: np.ndarray | None, segment: str) -> dict[str, pa.Array]:
    """The :data:`METADATA_SCHEMA` columns of the selected rows."""
    def rows(per_batch: np.ndarray) -> np.ndarray:
        a = np.repeat(per_batch, h.counts)
        return a if idx is None else a[idx]

    seq = h.sequences(cols.offsets)
    n = len(seq) if idx is None else len(idx)
    return {
        "producerId": numeric(rows(h.producer_ids), pa.int64()),
        "producerEpoch": numeric(rows(h.producer_epochs), pa.int16()),
        "sequence": numeric(seq if idx is None else seq[idx], pa.int32()),
        "isTransactional": numeric(rows(h.transactional), pa.bool_()),
        "isControl": numeric(rows(h.control), pa.bool_()),
        "leaderEpoch": numeric(rows(h.leader_epochs), pa.int32()),
        "segment": constant_string(segment, n),
        "position": numeric(rows(h.positions), pa.int64()),
    }


def _pieces(
    reader: LogReader, *, max_rows: int, max_bytes: int, headers: bool, views: bool, verify_crc: bool, on_corrupt: OnCorrupt
) -> Iterator[BatchColumns | ChunkColumns]:
    return iter_chunks(reader, max_rows=max_rows, max_bytes=max_bytes, headers=headers, views=views, verify_crc=verify_crc,
                       on_corrupt=on_corrupt)


def to_arrow(
    source: LogReader | PartitionLog | Iterable[Batch],
    *,
    topic: str | None = None,
    partition: int | None = None,
    include_headers: bool = False,
    columns: Sequence[str] | None = None,
    max_rows: int = 32768,
    max_bytes: int = CHUNK_BYTES,
    views: bool = False,
    read_committed: bool = False,
    include_control: bool = False,
    metadata: bool = False,
    verify_crc: bool = True,
    on_corrupt: OnCorrupt = "fail",
) -> Iterator[pa.RecordBatch]:
    """Stream Kafka records as Arrow record batches of about ``max_rows`` rows, as a consumer
    receives them: control records (transaction markers) are left out unless ``include_control``.

    Every batch's CRC is checked before its records are read, as Kafka's consumer checks them
    (``check.crcs=true``, SPEC R-VAL-09): a corrupt batch raises
    :class:`~kafkalog.errors.CrcMismatchError` naming the file, byte position and offset (the rows
    before it have been yielded); ``on_corrupt="skip"`` logs a warning naming it and reads on after
    it (a callable is given the error instead); ``verify_crc=False`` does not check, for speed.

    ``read_committed`` leaves out, as a read_committed consumer does, the records of aborted
    transactions and every record from the last stable offset on (the first offset of a transaction
    not yet decided). For a :class:`~kafkalog.log.unified.Log` (open it read-only: ``Log.open(path)``) its
    segments are read from the log start offset, with the aborted transactions and last stable
    offset of the whole partition; a :class:`LogReader` or batches are read as a partition that holds
    only them (their own COMMIT/ABORT markers decide; a first pass reads the batch headers).

    ``metadata`` adds the batch columns of :data:`METADATA_SCHEMA` (producer id and epoch, the
    record's sequence, isTransactional, isControl, the partition leader epoch, the segment file and
    the batch's byte position in it), as the Spark source's ``includeMetadata`` does.

    Given a :class:`LogReader`, its bytes are decoded a chunk of batches at a time (at most
    ``max_rows`` records and about ``max_bytes`` bytes, the memory bound) by compiled passes, with
    no Python work per batch beyond one decompression call for compressed ones; given batch
    objects, each is decoded on its own.

    ``views=True`` gives key and value as Arrow binary views (:data:`KAFKA_VIEW_SCHEMA`) that point
    into each chunk's decompressed record areas (or the log bytes read for it) rather than copies
    of them: the fastest decode, for consumers that take views (polars, DuckDB, pyarrow compute;
    Spark 4 does not). Each batch then holds its chunk's bytes, record framing included.

    ``topic`` and ``partition`` label every row; for a Log they default to those its directory
    name gives (``orders-0``), otherwise to ``""`` and 0."""
    if hasattr(source, "collect_aborted_transactions"):  # a kafkalog.log.unified.Log
        named = source.topic_partition or ("", 0)
        aborted = source.collect_aborted_transactions(source.log_start_offset, source.log_end_offset) if read_committed else []
        lso = source.last_stable_offset

        def readers() -> Iterator[LogReader]:
            for seg in source.segments:
                if read_committed and seg.base_offset >= lso:
                    break
                if seg.size:
                    with LogReader(seg.log_path, end=seg.size) as reader:
                        yield reader

        yield from read_partition(
            readers(), topic=named[0] if topic is None else topic, partition=named[1] if partition is None else partition,
            start=source.log_start_offset, aborted=aborted, last_stable_offset=lso, read_committed=read_committed,
            include_headers=include_headers, columns=columns, max_rows=max_rows, max_bytes=max_bytes, views=views,
            include_control=include_control, metadata=metadata, verify_crc=verify_crc, on_corrupt=on_corrupt,
        )
        return
    opts = {"topic": topic or "", "partition": partition or 0, "include_headers": include_headers, "columns": columns, "views": views}
    if isinstance(source, LogReader):
        aborted_pairs: list[tuple[int, int]] = []
        lso = None
        if read_committed:
            aborted_pairs, lso = _transactions_of(source.batches())
        select = _Selection(include_control=include_control, read_committed=read_committed, aborted=aborted_pairs, lso=lso)
        pieces: Iterable[BatchColumns | ChunkColumns] = _pieces(source, max_rows=max_rows, max_bytes=max_bytes, headers=include_headers,
                                                                views=views, verify_crc=verify_crc, on_corrupt=on_corrupt)
        yield from _stream(pieces, select, max_rows, metadata, source.name or "", opts)
        return
    batches: Iterable[Batch] = checked(source, on_corrupt) if verify_crc else source
    aborted_pairs, lso = [], None
    if read_committed:
        batches = list(batches)
        aborted_pairs, lso = _transactions_of(batches)
    select = _Selection(include_control=include_control, read_committed=read_committed, aborted=aborted_pairs, lso=lso)
    yield from _stream(iter_columns(batches), select, max_rows, metadata, "", opts)


def read_partition(
    readers: Iterable[LogReader],
    *,
    topic: str,
    partition: int,
    start: int | None = None,
    end: int | None = None,
    aborted: Iterable[AbortedTxn | tuple[int, int]] = (),
    last_stable_offset: int | None = None,
    read_committed: bool = False,
    include_headers: bool = False,
    columns: Sequence[str] | None = None,
    max_rows: int = 32768,
    max_bytes: int = CHUNK_BYTES,
    views: bool = False,
    include_control: bool = False,
    metadata: bool = False,
    verify_crc: bool = True,
    on_corrupt: OnCorrupt = "fail",
    committed: CommittedState | None = None,
    on_committed: Callable[[CommittedState], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Arrow batches of one partition's records at offsets ``[start, end)``, read from ``readers``:
    the partition's segments in offset order, each a :class:`LogReader` already positioned (its
    ``start``/``end`` bytes) by the caller, who decides from the indexes what to read. Reading a
    reader stops at its first batch past ``end``, so a caller may give whole segments.

    ``aborted`` (the partition's aborted transactions: ``.txnindex`` entries, or (producer id,
    first offset) pairs) and ``last_stable_offset`` decide what ``read_committed`` leaves out, as
    for :func:`to_arrow` on a Log; the other options (the CRC check among them) are :func:`to_arrow`'s.
    ``committed``: the read_committed state to start from (where a read of the offsets before
    ``readers`` left it), else the start of a read; ``on_committed`` is given the state the read
    ends in, once every reader is read."""
    opts = {"topic": topic, "partition": partition, "include_headers": include_headers, "columns": columns, "views": views}
    select = _Selection(include_control=include_control, read_committed=read_committed, aborted=aborted, lso=last_stable_offset,
                        start=start, end=end, committed=committed)
    for reader in readers:
        pieces = _pieces(reader, max_rows=max_rows, max_bytes=max_bytes, headers=include_headers, views=views, verify_crc=verify_crc,
                         on_corrupt=on_corrupt)
        yield from _stream(_until(pieces, end), select, max_rows, metadata, reader.name or "", opts)
    if on_committed is not None and select.filter is not None:
        on_committed(select.filter.state)


def _until(pieces: Iterator[BatchColumns | ChunkColumns], end: int | None) -> Iterator[BatchColumns | ChunkColumns]:
    """The pieces up to the first one that reaches offset ``end`` (None: all of them)."""
    try:
        for piece in pieces:
            yield piece
            if end is not None and _last_offset(piece) >= end - 1:
                return
    finally:
        pieces.close()  # type: ignore[attr-defined]


def _last_offset(piece: BatchColumns | ChunkColumns) -> int:
    """The last offset of the last batch a piece holds."""
    if isinstance(piece, BatchColumns):
        return piece.batch.last_offset
    b = piece.batches
    return int(b.last_offsets[-1]) if b is not None and len(b) else -1


def _stream(
    pieces: Iterable[BatchColumns | ChunkColumns], select: _Selection, max_rows: int, metadata: bool, segment: str, opts: dict[str, Any]
) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the rows ``select`` keeps: a chunk on its own, single batches gathered up to ``max_rows``."""
    pending: list[tuple[Selection, BatchFields]] = []
    rows = 0

    def build(parts: list[tuple[Selection, BatchFields]]) -> pa.RecordBatch:
        rb = columns_to_arrow([p for p, _h in parts], **opts)
        if not metadata:
            return rb
        meta: dict[str, list[pa.Array]] = {f.name: [] for f in METADATA_SCHEMA}
        for (cols, mask), h in parts:
            if mask is not None and not mask.any():
                continue
            for name, arr in _metadata_arrays(cols, h, None if mask is None else np.flatnonzero(mask), segment).items():
                meta[name].append(arr)
        arrays = list(rb.columns) + [pa.concat_arrays(meta[f.name]) if meta[f.name] else pa.array([], f.type) for f in METADATA_SCHEMA]
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(list(rb.schema) + list(METADATA_SCHEMA)))

    for cols in pieces:
        h = BatchFields.of(cols)
        mask = select.mask(cols, h)
        if mask is not None and not mask.any():
            continue
        if isinstance(cols, ChunkColumns):
            if pending:  # keep record order: what came before the chunk goes first
                yield build(pending)
                pending, rows = [], 0
            yield build([((cols, mask), h)])
            continue
        pending.append(((cols, mask), h))
        rows += len(cols) if mask is None else int(mask.sum())
        if rows >= max_rows:
            yield build(pending)
            pending, rows = [], 0
    if pending:
        yield build(pending)
