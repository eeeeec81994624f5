"""Kafka batches to the Arrow record batches the source yields (the one place rows are built).

:func:`records_to_arrow` is the seam for decoders: it takes kafkalog batch objects and the row
bounds, and returns one Arrow batch with exactly the requested schema. Today it decodes records
with :mod:`kafkalog.fast.columnar` (a compiled record walk when numba is installed) and builds the
Kafka columns with :func:`kafkalog.fast.arrow.columns_to_arrow`, so no Python object is made per
record; a different decoder can replace its body without touching planning or reading.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from kafkalog.fast.arrow import HEADERS_TYPE, KAFKA_SCHEMA, columns_to_arrow
from kafkalog.fast.columnar import BatchColumns, iter_columns
from kafkalog.format.records.stream import Batch
from kafkalog.format.records.v2 import RecordBatch

from .filters import Bounds

__all__ = ["ARROW_TYPES", "METADATA_COLUMNS", "arrow_schema", "records_to_arrow"]

#: Every column the source can produce, with its Arrow type (what Spark's types map to).
ARROW_TYPES: dict[str, pa.DataType] = {
    "key": pa.binary(),
    "value": pa.binary(),
    "topic": pa.string(),
    "partition": pa.int32(),
    "offset": pa.int64(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestampType": pa.int32(),
    "headers": HEADERS_TYPE,
    "producerId": pa.int64(),
    "producerEpoch": pa.int16(),
    "sequence": pa.int32(),
    "isTransactional": pa.bool_(),
    "leaderEpoch": pa.int32(),
    "segment": pa.string(),
    "position": pa.int64(),
    "decoded": pa.string(),
}
#: The opt-in columns (``includeMetadata=true``), in schema order.
METADATA_COLUMNS = ("producerId", "producerEpoch", "sequence", "isTransactional", "leaderEpoch", "segment", "position")
_INT32_MAX = 2**31 - 1
ANY = Bounds()


def arrow_schema(columns: Sequence[str]) -> pa.Schema:
    """The Arrow schema Spark expects for ``columns`` (all nullable, as Spark's schema declares them)."""
    return pa.schema([pa.field(c, ARROW_TYPES[c]) for c in columns])


def _decoded(picked: list[tuple[BatchColumns, np.ndarray | None]], topic: str, n: int) -> pa.Array:
    """``decodeInternalTopics``: each record's key and value as Kafka's decoders print them, one
    JSON string ``{"key":...,"value":...}`` (``{"error":...}`` when undecodable); null for topics
    without a decoder."""
    from kafkalog.format.records.record import Record
    from kafkalog.internal import decoded_fields, decoder_for_topic, kafka_json

    decoder = decoder_for_topic(topic)
    if decoder is None:
        return pa.nulls(n, pa.string())
    out: list[str] = []
    for c, mask in picked:
        raw = c.raw
        rows = range(len(c)) if mask is None else np.flatnonzero(mask).tolist()
        for i in rows:
            ks, kl, vs, vl = int(c.key_start[i]), int(c.key_len[i]), int(c.val_start[i]), int(c.val_len[i])
            rec = Record(int(c.offsets[i]), int(c.timestamps[i]), None if kl < 0 else raw[ks : ks + kl], None if vl < 0 else raw[vs : vs + vl], ())
            d = decoded_fields(topic, rec, file=c.batch.file, position=c.batch.position)
            if "decodeError" in d:
                out.append(kafka_json({"error": d["decodeError"]}))
            else:
                out.append(kafka_json({"key": d["decodedKey"], "value": d["decodedValue"]}))
    return pa.array(out, type=pa.string())


def _batch_meta(batch: Batch) -> tuple[int, int, int, bool, int]:
    """(producer id, epoch, base sequence, transactional, leader epoch) of a batch (-1s for magic 0/1)."""
    if isinstance(batch, RecordBatch):
        return batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.is_transactional, batch.partition_leader_epoch
    return -1, -1, -1, False, -1


def _metadata(picked: list[tuple[BatchColumns, np.ndarray | None]], name: str, segment: str, n: int) -> pa.Array:
    if name == "segment":
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([segment])).cast(pa.string())
    parts = []
    for cols, mask in picked:
        offsets = cols.offsets if mask is None else cols.offsets[mask]
        count = len(offsets)
        pid, epoch, base_seq, txn, leader_epoch = _batch_meta(cols.batch)
        if name == "sequence":
            if base_seq < 0:
                parts.append(np.full(count, -1, np.int64))
            else:
                seq = base_seq + (offsets - cols.batch.base_offset)
                parts.append(np.where(seq > _INT32_MAX, seq - (_INT32_MAX + 1), seq))  # Kafka wraps sequences to 0
        else:
            value = {"producerId": pid, "producerEpoch": epoch, "isTransactional": txn, "leaderEpoch": leader_epoch, "position": cols.batch.position}[name]
            parts.append(np.full(count, value))
    return pa.array(np.concatenate(parts), type=ARROW_TYPES[name])


def _count_only(
    batches: Sequence[Batch], *, topic: str, partition: int, segment: str, lo: int, hi: int | None, offsets: Bounds, timestamps_ms: Bounds,
) -> pa.RecordBatch | None:
    """A batch with no columns and one row per qualifying record (what ``count()`` needs when the
    schema is empty): a v2 batch wholly inside the bounds counts as its ``recordsCount`` without
    its records being decoded; any other batch is decoded."""
    n = 0
    rest: list[Batch] = []
    whole = offsets.unbounded and timestamps_ms.unbounded
    for b in batches:
        if (
            whole and isinstance(b, RecordBatch) and b.base_offset >= lo and (hi is None or b.last_offset < hi)
            and 0 <= b.count <= b.last_offset_delta + 1  # else decoding reports what is wrong
        ):
            n += b.count
        else:
            rest.append(b)
    if rest:
        decoded = records_to_arrow(
            rest, schema=arrow_schema(["offset"]), topic=topic, partition=partition, segment=segment,
            lo=lo, hi=hi, offsets=offsets, timestamps_ms=timestamps_ms,
        )
        n += 0 if decoded is None else decoded.num_rows
    if n == 0:
        return None
    return pa.RecordBatch.from_arrays([pa.nulls(n)], names=["rows"]).select([])


def records_to_arrow(
    batches: Sequence[Batch],
    *,
    schema: pa.Schema,
    topic: str,
    partition: int,
    segment: str,
    lo: int,
    hi: int | None,
    offsets: Bounds = ANY,
    timestamps_ms: Bounds = ANY,
) -> pa.RecordBatch | None:
    """The records of ``batches`` whose offset is in ``[lo, hi)`` and passes ``offsets``, and whose
    timestamp (ms, as Kafka reports it) passes ``timestamps_ms``, as one Arrow batch of ``schema``
    (any subset and order of :data:`ARROW_TYPES`); None when no record qualifies.

    Control batches must already be dropped. Decoding errors raise kafkalog's errors, located at
    the batch's file and byte position. An empty schema gives the row count only (:func:`_count_only`).
    """
    if not schema.names:
        return _count_only(batches, topic=topic, partition=partition, segment=segment, lo=lo, hi=hi, offsets=offsets, timestamps_ms=timestamps_ms)
    decoded = list(iter_columns(batches))
    if not decoded:
        return None
    lengths = [len(c) for c in decoded]
    off = np.concatenate([c.offsets for c in decoded])
    mask = off >= lo
    if hi is not None:
        mask &= off < hi
    for bounds, values in ((offsets, off), (timestamps_ms, None)):
        if bounds.unbounded:
            continue
        m = bounds.mask(np.concatenate([c.timestamps for c in decoded]) if values is None else values)
        mask &= m  # type: ignore[operator]
    n = int(mask.sum())
    if n == 0:
        return None
    picked: list[tuple[BatchColumns, np.ndarray | None]]
    if n == len(mask):
        picked = [(c, None) for c in decoded]
    else:
        parts = np.split(mask, np.cumsum(lengths)[:-1])
        picked = [(c, None if m.all() else m) for c, m in zip(decoded, parts, strict=True) if m.any()]
    names = schema.names
    arrays: dict[str, pa.Array] = {}
    kafka = [c for c in names if c in KAFKA_SCHEMA.names]
    if kafka:
        base = columns_to_arrow(picked, topic=topic, partition=partition, include_headers="headers" in kafka, columns=kafka)
        arrays.update(zip(base.schema.names, base.columns, strict=True))
    for name in names:
        if name == "decoded":
            arrays[name] = _decoded(picked, topic, n)
        elif name not in arrays:
            arrays[name] = _metadata(picked, name, segment, n)
    return pa.RecordBatch.from_arrays([arrays[c] for c in names], schema=schema)
