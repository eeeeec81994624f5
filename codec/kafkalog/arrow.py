"""Kafka records as Arrow record batches, built from :mod:`kafkalog.columnar` without a Python
object per record. The columns and types are those of Spark's Kafka source."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from .columnar import BatchColumns, gather, iter_columns
from .records.stream import Batch

__all__ = ["KAFKA_SCHEMA", "HEADERS_TYPE", "columns_to_arrow", "to_arrow"]

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

Selection = tuple[BatchColumns, np.ndarray | None]


def _validity(lens: np.ndarray) -> pa.Buffer | None:
    valid = lens >= 0
    if valid.all():
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


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


def columns_to_arrow(
    selections: Sequence[Selection],
    *,
    topic: str,
    partition: int,
    include_headers: bool = False,
    columns: Sequence[str] | None = None,
) -> pa.RecordBatch:
    """Build one Arrow batch from the selected rows (``mask``; None = all) of several batches."""
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
    if "key" in want:
        arrays["key"] = _binary([(c.buf, sel(c.key_start, i), sel(c.key_len, i)) for c, i in picked], pa.binary())
    if "value" in want:
        arrays["value"] = _binary([(c.buf, sel(c.val_start, i), sel(c.val_len, i)) for c, i in picked], pa.binary())
    if "topic" in want:
        arrays["topic"] = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([topic])).cast(pa.string())
    if "partition" in want:
        arrays["partition"] = pa.array(np.full(n, partition, np.int32))
    if "offset" in want:
        arrays["offset"] = pa.array(np.concatenate([sel(c.offsets, i) for c, i in picked]) if picked else np.empty(0, np.int64))
    if "timestamp" in want:
        ts = np.concatenate([sel(c.timestamps, i) for c, i in picked]) if picked else np.empty(0, np.int64)
        arrays["timestamp"] = pa.array(ts * 1000, type=pa.int64()).view(pa.timestamp("us", tz="UTC"))
    if "timestampType" in want:
        tt = [np.full(len(c) if i is None else len(i), c.timestamp_type_id, np.int32) for c, i in picked]
        arrays["timestampType"] = pa.array(np.concatenate(tt) if tt else np.empty(0, np.int32))
    if "headers" in want:
        arrays["headers"] = _headers(picked, n)
    names = [f for f in KAFKA_SCHEMA.names if f in arrays]
    return pa.RecordBatch.from_arrays([arrays[f] for f in names], schema=pa.schema([KAFKA_SCHEMA.field(f) for f in names]))


def _headers(picked: list[tuple[BatchColumns, np.ndarray | None]], n: int) -> pa.Array:
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
    keys = _binary(key_parts, pa.string())
    vals = _binary(val_parts, pa.binary())
    struct = pa.StructArray.from_arrays([keys, vals], fields=list(HEADERS_TYPE.value_type))
    validity = counts > 0
    mask = None if validity.all() else pa.py_buffer(np.packbits(validity, bitorder="little"))
    return pa.Array.from_buffers(HEADERS_TYPE, n, [mask, pa.py_buffer(list_offsets)], children=[struct])


def to_arrow(
    batches: Iterable[Batch],
    *,
    topic: str = "",
    partition: int = 0,
    include_headers: bool = False,
    columns: Sequence[str] | None = None,
    max_rows: int = 32768,
) -> Iterator[pa.RecordBatch]:
    """Stream Kafka batches as Arrow record batches of about ``max_rows`` rows (control records
    included; filter with :func:`columns_to_arrow` masks to drop them)."""
    pending: list[Selection] = []
    rows = 0
    for cols in iter_columns(batches):
        pending.append((cols, None))
        rows += len(cols)
        if rows >= max_rows:
            yield columns_to_arrow(pending, topic=topic, partition=partition, include_headers=include_headers, columns=columns)
            pending, rows = [], 0
    if pending:
        yield columns_to_arrow(pending, topic=topic, partition=partition, include_headers=include_headers, columns=columns)
