"""Decoded Kafka batches to the Arrow record batches the source yields (the one place rows are built).

The records come from kafkalog's columnar decoder: chunks of many batches
(:class:`~kafkalog.fast.columnar.ChunkColumns`, from :func:`~kafkalog.fast.columnar.iter_chunks`, whose
compiled walk also reads each batch's header fields) or single batches
(:class:`~kafkalog.fast.columnar.BatchColumns`, for magic 0/1 and what the chunk walk hands to the
per-batch path). :func:`pieces_to_arrow` picks the rows a read wants (offset and timestamp
bounds, no control records, no aborted transactions) with numpy masks over the per-batch fields,
and builds the Kafka columns with :func:`kafkalog.fast.arrow.columns_to_arrow`: no Python object is
made per record or per batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from kafkalog.fast.arrow import KAFKA_SCHEMA, BatchFields, columns_to_arrow, constant_string, numeric
from kafkalog.fast.columnar import BatchColumns, ChunkBatches, ChunkColumns, iter_columns
from kafkalog.format.records.control import ControlType, control_type_of
from kafkalog.format.records.stream import Batch
from kafkalog.format.records.v2 import NO_PRODUCER_ID, RecordBatch
from kafkalog.log.isolation import ReadCommittedFilter
from kafkalog_spark.filters import Bounds
from kafkalog_spark.schema import ARROW_TYPES, METADATA_COLUMNS, arrow_schema

__all__ = ["ARROW_TYPES", "METADATA_COLUMNS", "arrow_schema", "count_rows", "pieces_to_arrow", "records_to_arrow"]

ANY = Bounds()

Piece = ChunkColumns | BatchColumns


def aborted_batches(fields: BatchFields, committed: ReadCommittedFilter, abort_marker: Callable[[int], bool]) -> np.ndarray:
    """Which batches read_committed drops (Kafka's consumer algorithm, R-ISO-04), fed in order to
    ``committed``; ``abort_marker(i)`` says whether control batch ``i`` is an ABORT marker. Only
    transactional and control batches are looked at one by one."""
    out = np.zeros(len(fields.counts), np.bool_)
    txn, ctrl = fields.transactional, fields.control
    for i in np.flatnonzero((txn | ctrl) & (fields.producer_ids != NO_PRODUCER_ID)).tolist():
        out[i] = committed.skips_fields(
            int(fields.producer_ids[i]), int(fields.last_offsets[i]), bool(txn[i]), bool(ctrl[i]), lambda i=i: abort_marker(i)
        )
    return out


def _first_key_is_abort(piece: Piece, fields: BatchFields, i: int) -> bool:
    """Whether batch ``i`` of ``piece`` (a control batch) holds an ABORT marker as its first record."""
    if fields.counts[i] == 0:
        return False
    row = int(fields.counts[:i].sum())
    ks, kl = int(piece.key_start[row]), int(piece.key_len[row])
    key = None if kl < 0 else piece.buf[ks : ks + kl].tobytes()
    return control_type_of(key)[0] is ControlType.ABORT


def _decoded(picked: list[tuple[Piece, np.ndarray | None]], topic: str, n: int, kafka_version: str | None) -> pa.Array:
    """``decodeInternalTopics``: each record's key and value as Kafka ``kafka_version``'s decoders
    print them (default: the newest), one JSON string ``{"key":...,"value":...}`` (``{"error":...}``
    when undecodable); null for topics without a decoder."""
    from kafkalog.format.records.record import Record
    from kafkalog.internal import decoded_fields, decoder_for_topic, kafka_json

    decoder = decoder_for_topic(topic)
    if decoder is None:
        return pa.nulls(n, pa.string())
    out: list[str] = []
    for c, mask in picked:
        fields = BatchFields.of(c)
        positions = np.repeat(fields.positions, fields.counts)
        buf = c.buf
        rows = range(len(c)) if mask is None else np.flatnonzero(mask).tolist()
        for i in rows:
            ks, kl, vs, vl = int(c.key_start[i]), int(c.key_len[i]), int(c.val_start[i]), int(c.val_len[i])
            key = None if kl < 0 else buf[ks : ks + kl].tobytes()
            value = None if vl < 0 else buf[vs : vs + vl].tobytes()
            rec = Record(int(c.offsets[i]), int(c.timestamps[i]), key, value, ())
            d = decoded_fields(topic, rec, file=c.batch.file if isinstance(c, BatchColumns) else None, position=int(positions[i]),
                               release=kafka_version)
            if "decodeError" in d:
                out.append(kafka_json({"error": d["decodeError"]}))
            else:
                out.append(kafka_json({"key": d["decodedKey"], "value": d["decodedValue"]}))
    return pa.array(out, type=pa.string())


def _metadata(picked: list[tuple[Piece, np.ndarray | None, BatchFields]], name: str, segment: str, n: int) -> pa.Array:
    if name == "segment":
        return constant_string(segment, n)
    parts = []
    for c, mask, fields in picked:
        counts = fields.counts
        if name == "sequence":
            values = fields.sequences(c.offsets)
        else:
            per_batch = {
                "producerId": fields.producer_ids,
                "producerEpoch": fields.producer_epochs,
                "isTransactional": fields.transactional,
                "leaderEpoch": fields.leader_epochs,
                "position": fields.positions,
            }[name]
            values = np.repeat(per_batch, counts)
        parts.append(values if mask is None else values[mask])
    return numeric(np.concatenate(parts) if parts else np.empty(0, np.int64), ARROW_TYPES[name])


def pieces_to_arrow(
    pieces: Sequence[Piece],
    *,
    schema: pa.Schema,
    topic: str,
    partition: int,
    segment: str,
    lo: int,
    hi: int | None,
    offsets: Bounds = ANY,
    timestamps_ms: Bounds = ANY,
    committed: ReadCommittedFilter | None = None,
    kafka_version: str | None = None,
) -> pa.RecordBatch | None:
    """The records of decoded ``pieces`` (in log order) whose offset is in ``[lo, hi)`` and
    passes ``offsets``, and whose timestamp (ms, as Kafka reports it) passes ``timestamps_ms``,
    as one Arrow batch of ``schema`` (any non-empty subset and order of :data:`ARROW_TYPES`);
    None when no record qualifies. Control records are dropped, and with ``committed`` (fed every
    batch of the read in order) the batches of aborted transactions."""
    picked: list[tuple[Piece, np.ndarray | None, BatchFields]] = []
    n = 0
    for c in pieces:
        if not len(c):
            continue
        fields = BatchFields.of(c)
        drop = fields.control
        if committed is not None:
            drop = drop | aborted_batches(fields, committed, lambda i, c=c, f=fields: _first_key_is_abort(c, f, i))
        mask = c.offsets >= lo
        if hi is not None:
            mask &= c.offsets < hi
        if drop.any():
            mask &= np.repeat(~drop, fields.counts)
        if not offsets.unbounded:
            mask &= offsets.mask(c.offsets)
        if not timestamps_ms.unbounded:
            mask &= timestamps_ms.mask(c.timestamps)
        k = int(np.count_nonzero(mask))
        if k:
            picked.append((c, None if k == len(mask) else mask, fields))
            n += k
    if n == 0:
        return None
    names = schema.names
    arrays: dict[str, pa.Array] = {}
    kafka = [c for c in names if c in KAFKA_SCHEMA.names]
    if kafka:
        base = columns_to_arrow([(c, m) for c, m, _ in picked], topic=topic, partition=partition, include_headers="headers" in kafka, columns=kafka)
        arrays.update(zip(base.schema.names, base.columns, strict=True))
    for name in names:
        if name == "decoded":
            arrays[name] = _decoded([(c, m) for c, m, _ in picked], topic, n, kafka_version)
        elif name not in arrays:
            arrays[name] = _metadata(picked, name, segment, n)
    return pa.RecordBatch.from_arrays([arrays[c] for c in names], schema=schema)


def count_rows(
    piece: ChunkBatches | BatchColumns,
    batch: Callable[[int], RecordBatch],
    *,
    lo: int,
    hi: int | None,
    offsets: Bounds = ANY,
    timestamps_ms: Bounds = ANY,
    committed: ReadCommittedFilter | None = None,
) -> int:
    """How many records of ``piece`` a read with an empty schema returns (``count()``): a v2
    batch wholly inside the bounds counts as its ``recordsCount`` without being decoded; any
    other batch (``batch(i)`` gives it as an object) is decoded."""
    if isinstance(piece, BatchColumns):
        out = pieces_to_arrow([piece], schema=arrow_schema(["offset"]), topic="", partition=0, segment="", lo=lo, hi=hi,
                              offsets=offsets, timestamps_ms=timestamps_ms, committed=committed)
        return 0 if out is None else out.num_rows
    fields = BatchFields.of(piece)
    drop = fields.control
    if committed is not None:
        drop = drop | aborted_batches(fields, committed, lambda i: _abort_marker(batch(i)))
    whole = (fields.base_offsets >= lo) & (fields.counts >= 0) & (fields.counts <= fields.last_offsets - fields.base_offsets + 1)
    if hi is not None:
        whole &= fields.last_offsets < hi
    if not (offsets.unbounded and timestamps_ms.unbounded):
        whole[:] = False
    n = int(fields.counts[whole & ~drop].sum())
    for i in np.flatnonzero(~whole & ~drop).tolist():
        if hi is not None and fields.base_offsets[i] >= hi:
            continue
        decoded = next(iter_columns([batch(i)]))
        out = pieces_to_arrow([decoded], schema=arrow_schema(["offset"]), topic="", partition=0, segment="", lo=lo, hi=hi,
                              offsets=offsets, timestamps_ms=timestamps_ms)
        n += 0 if out is None else out.num_rows
    return n


def _abort_marker(batch: RecordBatch) -> bool:
    from kafkalog.log.isolation import is_abort_marker

    return is_abort_marker(batch)


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
    """:func:`pieces_to_arrow` over kafkalog batch objects (each decoded on its own): their
    records in ``[lo, hi)`` that pass the bounds, control records dropped, as one Arrow batch of
    ``schema``; None when none qualifies. An empty schema gives rows with no columns."""
    out = pieces_to_arrow(list(iter_columns(batches)), schema=schema if schema.names else arrow_schema(["offset"]), topic=topic,
                          partition=partition, segment=segment, lo=lo, hi=hi, offsets=offsets, timestamps_ms=timestamps_ms)
    if out is None or schema.names:
        return out
    return out.select([])
