"""Kafka records as Arrow record batches, built from :mod:`kafkalog.columnar` without a Python
object per record. The columns and types are those of Spark's Kafka source."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from .columnar import CHUNK_BYTES, BatchColumns, ChunkColumns, gather, iter_chunks, iter_columns
from .records.stream import Batch, LogReader

__all__ = ["KAFKA_SCHEMA", "KAFKA_VIEW_SCHEMA", "HEADERS_TYPE", "columns_to_arrow", "constant_string", "to_arrow"]

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
    bytes when it has views (:func:`kafkalog.columnar.iter_chunks`), else copied."""
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
        arrays["partition"] = pa.array(np.full(n, partition, np.int32))
    # a chunk's arrays are reused by the next chunk: its columns are copies (into Arrow's pool)
    if "offset" in want:
        if whole is not None:
            arrays["offset"] = pa.array(_pool_copy(whole.offsets, np.int64))
        else:
            arrays["offset"] = pa.array(np.concatenate([sel(c.offsets, i) for c, i in picked]) if picked else np.empty(0, np.int64))
    if "timestamp" in want:
        if whole is not None:
            us = _pool_copy(whole.timestamps, np.int64, 1000)
        else:
            us = np.concatenate([sel(c.timestamps, i) for c, i in picked]) * 1000 if picked else np.empty(0, np.int64)
        arrays["timestamp"] = pa.array(us, type=pa.int64()).view(pa.timestamp("us", tz="UTC"))
    if "timestampType" in want:
        tt = [sel(c.timestamp_types, i) for c, i in picked]
        arrays["timestampType"] = pa.array(np.concatenate(tt) if tt else np.empty(0, np.int32))
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
    keys = _binary(key_parts, pa.string())
    vals = _binary(val_parts, pa.binary())
    struct = pa.StructArray.from_arrays([keys, vals], fields=list(HEADERS_TYPE.value_type))
    validity = counts > 0
    mask = None if validity.all() else pa.py_buffer(np.packbits(validity, bitorder="little"))
    return pa.Array.from_buffers(HEADERS_TYPE, n, [mask, pa.py_buffer(list_offsets)], children=[struct])


def to_arrow(
    source: LogReader | Iterable[Batch],
    *,
    topic: str = "",
    partition: int = 0,
    include_headers: bool = False,
    columns: Sequence[str] | None = None,
    max_rows: int = 32768,
    max_bytes: int = CHUNK_BYTES,
    views: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Stream Kafka records as Arrow record batches of about ``max_rows`` rows (control records
    included; filter with :func:`columns_to_arrow` masks to drop them).

    Given a :class:`LogReader`, its bytes are decoded a chunk of batches at a time (at most
    ``max_rows`` records and about ``max_bytes`` bytes, the memory bound) by compiled passes, with
    no Python work per batch beyond one decompression call for compressed ones; given batch
    objects, each is decoded on its own.

    ``views=True`` gives key and value as Arrow binary views (:data:`KAFKA_VIEW_SCHEMA`) that point
    into each chunk's decompressed record areas (or the log bytes read for it) rather than copies
    of them: the fastest decode, for consumers that take views (polars, DuckDB, pyarrow compute;
    Spark 4 does not). Each batch then holds its chunk's bytes, record framing included."""
    if isinstance(source, LogReader):
        pieces: Iterable[BatchColumns | ChunkColumns] = iter_chunks(
            source, max_rows=max_rows, max_bytes=max_bytes, headers=include_headers, views=views
        )
    else:
        pieces = iter_columns(source)
    pending: list[Selection] = []
    rows = 0
    for cols in pieces:
        if isinstance(cols, ChunkColumns):
            if pending:  # keep record order: what came before the chunk goes first
                yield columns_to_arrow(pending, topic=topic, partition=partition, include_headers=include_headers, columns=columns, views=views)
                pending, rows = [], 0
            yield columns_to_arrow([(cols, None)], topic=topic, partition=partition, include_headers=include_headers, columns=columns, views=views)
            continue
        pending.append((cols, None))
        rows += len(cols)
        if rows >= max_rows:
            yield columns_to_arrow(pending, topic=topic, partition=partition, include_headers=include_headers, columns=columns, views=views)
            pending, rows = [], 0
    if pending:
        yield columns_to_arrow(pending, topic=topic, partition=partition, include_headers=include_headers, columns=columns, views=views)
